"""Workload 4, the RK4 damped pendulum: a loop, which symdiff compiles as a loop.

``theta'' = -(g/l) sin(theta) - c theta'``, RK4 with ``dt = 0.01``; the gradient of
the final angle for ``theta0, omega0, g/l, c``.  symdiff differentiates the plain
Python ``for`` loop of `rk4_for_symdiff` (issue 4): its gradient kernel runs the
loop forward writing a tape, then a reversed loop, so the kernel is the same size
whatever the trip count.  JAX uses ``lax.scan``, PyTensor ``scan``, torch and
autograd a Python loop, Numba a hand-written reverse sweep over the stored
trajectory (`rk4_by_hand`).

The 1000-step case (`rk4_case` with ``scaling``) also has symdiff-only rows at
other trip counts, each checked against the hand-written gradient at that count:

* ``symdiff, 10^2 steps`` and ``10^4 steps``: build time, Numba compile time and
  kernel size (source lines, graph nodes) do not depend on the trip count; at 10^4
  steps the gradient/forward time ratio (target <= 3);
* ``symdiff, 10^6 steps`` with and without ``checkpoint=1000``: the tape
  (``tape_bytes``, and the peak memory of a call) and the gradient time.  With
  checkpointing the tape is at most ``ceil(n/K)`` saved states plus one ``K``-step
  segment's tape.

Their ``symdiff/tool`` column is the 1000-step gradient's time over theirs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from array_tools import QUICK_PYTENSOR, baselines, hand_row, peak_traced_bytes
from harness import Case, Context, Row, Skip, namespace
from report import fmt_time
from scalar_cases import symdiff_info

#: Trip counts of the symdiff-only rows of the 1000-step case.
SCALING_STEPS = (10**2, 10**4)
LONG_STEPS = 10**6
LONG_CHECKPOINT = 1000  # sqrt(10^6): 10^3 saved states, 10^3-step segments
GRAD_OVER_FWD_TARGET = 3.0  # at 10^4 steps
VS_NUMBA_TARGET = 1.5  # symdiff / hand-written Numba at 10^3 steps


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


# -- symdiff ---------------------------------------------------------------------------
def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a and b else a or b


def _bytes(n: float) -> str:
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def _steps_name(steps: int) -> str:
    k = round(math.log10(steps))
    return f"10^{k}" if 10**k == steps else str(steps)


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


_HAND: dict[int, tuple[Any, Any]] = {}


def hand_numba(steps: int) -> tuple[Any, Any]:
    """The hand-written gradient and forward at ``steps`` under ``numba.njit``
    (Numba is a dependency of symdiff); compiled on first use, once per trip count
    (it is a closure constant).  The reference of the symdiff-only rows."""
    if steps not in _HAND:
        import numba

        grad, fwd = rk4_by_hand(steps, numba.njit(rk4_step_math))
        _HAND[steps] = (numba.njit(grad), numba.njit(fwd))
    return _HAND[steps]


def graph_size(kernel: Any) -> tuple[int, int] | None:
    """Nodes of a kernel's graph, every loop body counted once, and its arithmetic
    + transcendental ops (``op_counts`` counts a loop body once: ops per
    iteration); None if symdiff's internals moved."""
    try:
        from symdiff.ir.loops import body_of
        from symdiff.ir.node import topological

        count = 0
        stack = [list(kernel.outputs)]
        while stack:
            for n in topological(stack.pop()):
                count += 1
                if n.op == "loop":
                    stack.append(body_of(n).roots())
        return count, kernel.op_counts["total"]
    except Exception:
        return None


def loop_info(row: Row, g: Any, f: Any) -> None:
    """`symdiff_info` (build breakdown), then the kernel's size, ops per loop
    iteration (gradient/forward), tape bytes and the Numba compile time alone."""
    symdiff_info(row, g, f)
    kernel = g.kernel
    lines = len(kernel.source.splitlines())
    tape = g.tape_bytes(*PENDULUM)
    compile_s = (row.first_s or 0.0) - (row.grad_s or 0.0)
    row.extra.update(
        kernel_lines=lines,
        kernel_top_nodes=len(kernel.schedule.nodes),
        tape_bytes=tape,
        compile_s=compile_s,
        setup_fwd_build_s=float(sum(f.kernel.timings.values())),
    )
    size, fsize = graph_size(kernel), graph_size(f.kernel)
    shape = f"kernel {lines} lines"
    if size is not None and fsize is not None:
        row.extra.update(kernel_nodes=size[0], ops_per_iteration=[size[1], fsize[1]])
        if fsize[1]:
            row.ops = f"{size[1]}/{fsize[1]}={size[1] / fsize[1]:.2g}x"
        shape += f", {size[0]} nodes ({len(kernel.schedule.nodes)} outside loops)"
    row.note = _join(
        row.note,
        f"{shape}; tape {_bytes(tape)}; Numba compile {compile_s:.2g} s",
    )


def _make(sd: Any, fn: Any, holder: dict[str, Any], checkpoint: int | None = None):
    def make():
        g = sd.grad(fn, argnums=(0, 1, 2, 3), checkpoint=checkpoint)
        f = sd.jit(fn)
        # trace, differentiate, schedule, print now; Numba compiles on first call
        holder.update(g=g, f=f, kernel=g.kernel)
        return g, f

    return make


def rk4_symdiff(ctx: Context, steps: int, scaling: bool) -> list[Row]:
    """symdiff's row (the loop, ``grad`` and ``jit``), its bare kernel, the ratio
    to the hand-written Numba gradient in interleaved rounds; with ``scaling``
    the symdiff-only rows at other trip counts."""
    sd = ctx.modules["symdiff"]
    holder: dict[str, Any] = {}
    row = ctx.measure(
        "symdiff",
        _make(sd, rk4_for_symdiff(steps), holder),
        PENDULUM,
        "Python for loop",
    )
    g, f = holder["g"], holder["f"]
    loop_info(row, g, f)
    if ctx.has("numba"):
        ratios = ctx.paired([g, g.kernel.compiled, hand_numba(steps)[0]], PENDULUM)
        row.extra["paired_vs_numba"] = ratios[:2]
        text = (
            f"vs hand-written Numba, interleaved rounds: {ratios[0]:.2f}x, "
            f"kernel alone {ratios[1]:.2f}x"
        )
        if scaling:
            ok = ratios[0] <= VS_NUMBA_TARGET
            text += f" (target <= {VS_NUMBA_TARGET:g}x: {_verdict(ok)})"
        row.note = _join(row.note, text)
    raw = Row("symdiff (kernel)", note="the Numba dispatcher, called directly")
    raw.grad_s = ctx.steady(g.kernel.compiled, PENDULUM)
    raw.extra["grad_min_s"] = ctx.last_min
    raw.fwd_s = ctx.steady(f.kernel.compiled, PENDULUM)
    rows = [row, raw]
    if scaling:
        case_reference = rk4_by_hand(steps)[0](*PENDULUM)
        try:
            rows += scaling_rows(ctx)
        finally:
            ctx.set_reference(case_reference)
    return rows


def _name(steps: int, checkpoint: int | None) -> str:
    name = f"symdiff, {_steps_name(steps)} steps"
    return name if checkpoint is None else f"{name}, checkpoint={checkpoint}"


def rk4_symdiff_at(
    ctx: Context, steps: int, checkpoint: int | None = None
) -> tuple[Row, Any]:
    """symdiff at another trip count (and checkpointing), checked against the
    hand-written gradient at that count, whose time the note also gives; the row
    and the gradient.  A failure is an ``error:`` row, as in `harness.run_case`,
    so that the other rows stay."""
    sd = ctx.modules["symdiff"]
    name = _name(steps, checkpoint)
    try:
        hand = hand_numba(steps)[0]
        ctx.set_reference(hand(*PENDULUM))
        holder: dict[str, Any] = {}
        fn = rk4_for_symdiff(steps)
        row = ctx.measure(name, _make(sd, fn, holder, checkpoint), PENDULUM)
        loop_info(row, holder["g"], holder["f"])
    except Exception as exc:
        message = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
        return Row(name, note=f"error: {message}", status="error"), None
    row.extra.update(steps=steps, checkpoint=checkpoint)
    if steps not in _HAND_S:
        _HAND_S[steps] = ctx.steady(hand, PENDULUM)
    hand_s = row.extra["hand_numba_s"] = _HAND_S[steps]
    row.note = _join(
        row.note,
        f"hand-written Numba at this trip count {fmt_time(hand_s)} "
        f"(symdiff/Numba {(row.grad_s or 0.0) / hand_s:.2f}x, separate medians)",
    )
    return row, holder["g"]


_HAND_S: dict[int, float] = {}  # the hand-written gradient's time, per trip count


def scaling_rows(ctx: Context) -> list[Row]:
    """Trip-count independence (10^2, 10^4 steps), grad/fwd at 10^4, and the tape
    at 10^6 steps with and without checkpointing."""
    rows = []
    for steps in SCALING_STEPS:
        row, _ = rk4_symdiff_at(ctx, steps)
        if steps == max(SCALING_STEPS) and row.grad_over_fwd is not None:
            ok = row.grad_over_fwd <= GRAD_OVER_FWD_TARGET
            row.note = _join(
                row.note,
                f"grad/fwd {row.grad_over_fwd:.2f}x (target <= "
                f"{GRAD_OVER_FWD_TARGET:g}x: {_verdict(ok)})",
            )
        rows.append(row)
    plain, g_plain = rk4_symdiff_at(ctx, LONG_STEPS)
    ckpt, g_ckpt = rk4_symdiff_at(ctx, LONG_STEPS, LONG_CHECKPOINT)
    for row, g in ((plain, g_plain), (ckpt, g_ckpt)):
        if g is not None:
            # what one call allocates: its tapes (tracemalloc sees Numba's)
            peak = peak_traced_bytes(g, PENDULUM)
            row.extra["peak_bytes"] = peak
            row.note = _join(row.note, f"peak memory of one call {_bytes(peak)}")
    if g_plain is not None and g_ckpt is not None:
        n, k = LONG_STEPS, LONG_CHECKPOINT
        per_step = plain.extra["tape_bytes"] / n  # the tape of one iteration
        state = 2 * 8  # the loop state: theta, omega
        bound = -(-n // k) * state + k * per_step
        ckpt.extra["tape_bound_bytes"] = bound
        ok = ckpt.extra["tape_bytes"] <= bound
        ckpt.note = _join(
            ckpt.note,
            f"tape bound ceil(n/K) states + one K-step segment = {-(-n // k)} x "
            f"{state} B + {k} x {per_step:.3g} B = {_bytes(bound)} "
            f"({'within' if ok else 'OVER'}); "
            f"{plain.extra['tape_bytes'] / ckpt.extra['tape_bytes']:.0f}x less tape, "
            f"grad {(ckpt.grad_s or 0.0) / (plain.grad_s or 1.0):.2f}x the time "
            "without checkpoints",
        )
    return [*rows, plain, ckpt]


def rk4_case(steps: int, full_only: bool = False, scaling: bool | None = None) -> Case:
    """All tools at ``steps``; ``scaling`` (default: at 1000 steps) adds symdiff's
    rows at 10^2, 10^4 and 10^6 steps (`scaling_rows`)."""
    if scaling is None:
        scaling = steps == 1000

    def numba_impl(ctx: Context) -> Row:
        nb = ctx.modules["numba"]
        grad, fwd = rk4_by_hand(steps, nb.njit(rk4_step_math))
        return hand_row(ctx, "numba", grad, fwd, PENDULUM, "hand-written reverse")

    tools = {
        "symdiff": lambda ctx: rk4_symdiff(ctx, steps, scaling),
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
