"""Workload 4, the RK4 damped pendulum: a loop symdiff can only unroll (issue 4).

``theta'' = -(g/l) sin(theta) - c theta'``, RK4 with ``dt = 0.01``; the gradient of
the final angle for ``theta0, omega0, g/l, c``.  JAX uses ``lax.scan``, PyTensor
``scan``, torch and autograd a Python loop, Numba a hand-written reverse sweep over
the stored trajectory.  symdiff runs the short versions (10, 25 steps) unrolled.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from array_tools import QUICK_PYTENSOR, baselines, hand_row
from harness import Case, Context, Row, Skip, namespace
from scalar_cases import symdiff_info

NEEDS_LOOPS = "cannot run yet (loops: issue 4)"


# -- RK4, damped pendulum ------------------------------------------------------------
DT = 0.01
PENDULUM = (1.0, 0.0, 9.81, 0.1)  # theta0, omega0, g/l, damping


def rk4_step(m, th, om, gl, c):
    k1t, k1o = om, -gl * m.sin(th) - c * om
    t2, o2 = th + 0.5 * DT * k1t, om + 0.5 * DT * k1o
    k2t, k2o = o2, -gl * m.sin(t2) - c * o2
    t3, o3 = th + 0.5 * DT * k2t, om + 0.5 * DT * k2o
    k3t, k3o = o3, -gl * m.sin(t3) - c * o3
    t4, o4 = th + DT * k3t, om + DT * k3o
    k4t, k4o = o4, -gl * m.sin(t4) - c * o4
    th = th + DT / 6.0 * (k1t + 2.0 * k2t + 2.0 * k3t + k4t)
    om = om + DT / 6.0 * (k1o + 2.0 * k2o + 2.0 * k3o + k4o)
    return th, om


def rk4_step_math(th, om, gl, c):
    k1t = om
    k1o = -gl * math.sin(th) - c * om
    t2 = th + 0.5 * DT * k1t
    o2 = om + 0.5 * DT * k1o
    k2t = o2
    k2o = -gl * math.sin(t2) - c * o2
    t3 = th + 0.5 * DT * k2t
    o3 = om + 0.5 * DT * k2o
    k3t = o3
    k3o = -gl * math.sin(t3) - c * o3
    t4 = th + DT * k3t
    o4 = om + DT * k3o
    k4t = o4
    k4o = -gl * math.sin(t4) - c * o4
    th = th + DT / 6.0 * (k1t + 2.0 * k2t + 2.0 * k3t + k4t)
    om = om + DT / 6.0 * (k1o + 2.0 * k2o + 2.0 * k3o + k4o)
    return th, om


def rk4_for_symdiff(steps: int) -> Any:
    def pendulum(th, om, gl, c):
        for _ in range(steps):
            th, om = rk4_step_math(th, om, gl, c)
        return th

    return pendulum


def rk4_by_hand(steps: int, step: Any = rk4_step_math) -> tuple[Any, Any]:
    """Forward sweep storing the state, reverse sweep recomputing the stages.
    ``step`` is `rk4_step_math`, or its ``numba.njit`` for the Numba version."""
    h = DT

    def grad(th, om, gl, c):
        ts, os = np.empty(steps), np.empty(steps)
        for i in range(steps):
            ts[i], os[i] = th, om
            th, om = step(th, om, gl, c)
        tb, ob, glb, cb = 1.0, 0.0, 0.0, 0.0
        for i in range(steps - 1, -1, -1):
            t, o = ts[i], os[i]
            k1o = -gl * math.sin(t) - c * o
            t2, o2 = t + 0.5 * h * o, o + 0.5 * h * k1o
            k2o = -gl * math.sin(t2) - c * o2
            t3, o3 = t + 0.5 * h * o2, o + 0.5 * h * k2o
            k3o = -gl * math.sin(t3) - c * o3
            t4, o4 = t + h * o3, o + h * k3o
            k1tb, k1ob = h / 6.0 * tb, h / 6.0 * ob
            k2tb, k2ob = h / 3.0 * tb, h / 3.0 * ob
            k3tb, k3ob = h / 3.0 * tb, h / 3.0 * ob
            k4tb, k4ob = h / 6.0 * tb, h / 6.0 * ob
            # k4 = f(t4, o4), with f(t, o) = (o, -gl sin t - c o)
            t4b, o4b = -gl * math.cos(t4) * k4ob, k4tb - c * k4ob
            glb -= math.sin(t4) * k4ob
            cb -= o4 * k4ob
            tb, ob = tb + t4b, ob + o4b
            k3tb, k3ob = k3tb + h * t4b, k3ob + h * o4b
            t3b, o3b = -gl * math.cos(t3) * k3ob, k3tb - c * k3ob
            glb -= math.sin(t3) * k3ob
            cb -= o3 * k3ob
            tb, ob = tb + t3b, ob + o3b
            k2tb, k2ob = k2tb + 0.5 * h * t3b, k2ob + 0.5 * h * o3b
            t2b, o2b = -gl * math.cos(t2) * k2ob, k2tb - c * k2ob
            glb -= math.sin(t2) * k2ob
            cb -= o2 * k2ob
            tb, ob = tb + t2b, ob + o2b
            k1tb, k1ob = k1tb + 0.5 * h * t2b, k1ob + 0.5 * h * o2b
            glb -= math.sin(t) * k1ob
            cb -= o * k1ob
            tb, ob = tb - gl * math.cos(t) * k1ob, ob + k1tb - c * k1ob
        return tb, ob, glb, cb

    def fwd(th, om, gl, c):
        for _ in range(steps):
            th, om = step(th, om, gl, c)
        return th

    return grad, fwd


def rk4_generic(steps: int) -> Any:
    def f(m, c, th, om, gl, damping):
        for _ in range(steps):
            th, om = rk4_step(m, th, om, gl, damping)
        return th

    return f


def rk4_jax_row(ctx: Context, steps: int) -> Row:
    jax = ctx.modules["jax"]
    m = namespace(ctx, "jax")

    def f(th, om, gl, c):
        def body(state, _):
            return rk4_step(m, state[0], state[1], gl, c), None

        (th, _), _ = jax.lax.scan(body, (th, om), None, length=steps)
        return th

    def make():
        g, fw = jax.jit(jax.grad(f, argnums=(0, 1, 2, 3))), jax.jit(f)
        return (
            lambda *a: jax.block_until_ready(g(*a)),
            lambda *a: jax.block_until_ready(fw(*a)),
        )

    return ctx.measure("jax", make, PENDULUM, "jax.lax.scan, jit(grad)")


def rk4_pytensor_row(ctx: Context, steps: int) -> Row:
    if ctx.quick:
        raise Skip(QUICK_PYTENSOR)
    pytensor = ctx.modules["pytensor"]
    pt = __import__("pytensor.tensor").tensor
    m = namespace(ctx, "pytensor")

    def make():
        xs = [pt.dscalar(n) for n in ("th", "om", "gl", "c")]
        result = pytensor.scan(
            lambda th, om, gl, c: list(rk4_step(m, th, om, gl, c)),
            outputs_info=[xs[0], xs[1]],
            non_sequences=[xs[2], xs[3]],
            n_steps=steps,
            return_updates=False,
        )
        out = result[0][-1]
        grads = pytensor.grad(out, xs)
        return pytensor.function(xs, grads), pytensor.function(xs, out)

    return ctx.measure("pytensor", make, PENDULUM, "pytensor.scan")


def rk4_symdiff(ctx: Context, steps: int, unrolled_ok: bool) -> list[Row]:
    sd = ctx.modules["symdiff"]
    fn = rk4_for_symdiff(steps)
    if unrolled_ok:
        holder: dict[str, Any] = {}

        def make():
            g, f = sd.grad(fn, argnums=(0, 1, 2, 3)), sd.jit(fn)
            holder.update(g=g, f=f, kernel=g.kernel)  # built now, compiled lazily
            return g, f

        row = ctx.measure("symdiff", make, PENDULUM, "loop unrolled")
        symdiff_info(row, holder["g"], holder["f"])
        return [row]
    row = Row("symdiff", note=NEEDS_LOOPS, status="cannot-run")
    if not ctx.quick:  # how far the unrolled build gets, without Numba
        g = sd.grad(fn, argnums=(0, 1, 2, 3))
        t0 = time.perf_counter()
        kernel = g.kernel
        row.setup_s = time.perf_counter() - t0
        lines = kernel.source.count("\n")
        row.note += (
            f": unrolled, symdiff builds a {lines}-line kernel "
            f"({g.op_counts['total']} ops) in the setup time shown; Numba "
            "compile time grows superlinearly (see the 10/25-step rows), "
            "so it is not attempted"
        )
        row.extra["op_counts_grad"] = dict(g.op_counts)
    return [row]


def rk4_case(steps: int, full_only: bool = False) -> Case:
    unrolled_ok = steps <= 25

    def numba_impl(ctx: Context) -> Row:
        nb = ctx.modules["numba"]
        grad, fwd = rk4_by_hand(steps, nb.njit(rk4_step_math))
        return hand_row(ctx, "numba", grad, fwd, PENDULUM, "hand-written reverse")

    tools = {
        "symdiff": lambda ctx: rk4_symdiff(ctx, steps, unrolled_ok),
        "numba": numba_impl,
        "jax": lambda ctx: rk4_jax_row(ctx, steps),
        **{
            k: v
            for k, v in baselines(rk4_generic(steps), {}, PENDULUM).items()
            if k in ("torch", "autograd")
        },
        "pytensor": lambda ctx: rk4_pytensor_row(ctx, steps),
    }
    return Case(
        "arrays",
        f"RK4 pendulum {steps} steps",
        tools,
        lambda: rk4_by_hand(steps)[0](*PENDULUM),
        full_only=full_only,
    )
