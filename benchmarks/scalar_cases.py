"""Workloads symdiff runs today: functions of scalars.

1. ``latency``: one gradient call from Python on a tiny function (seed 004's chain
   and the scalar 2-layer ReLU network); target: symdiff <= 2x hand-written Numba.
2. ``nested``: ``y <- sin(y) * y + cos(x)`` composed ``depth`` times, the classic
   expression-swell test; symdiff's build time should grow linearly with depth.
3. ``from_sympy``: a 50-term SymPy expression of 4 symbols, gradient kernel vs
   ``sympy.lambdify(sympy.diff(...))``.

Each function is written once against a namespace of elementary functions
(``m.sin``, ``m.relu``...) and instantiated per framework; symdiff and Numba get a
plain ``math`` version, as a user would write it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from harness import Case, Context, Row, Skip, namespace

# -- the functions -------------------------------------------------------------------


def seed004(m: Any, u: Any) -> Any:
    return m.exp(m.sin(u**2) * m.log(u**2))


def z_math(u):
    return math.exp(math.sin(u**2) * math.log(u**2))


def z_grad_by_hand(u):
    v = u * u
    w = math.sin(v)
    x = math.log(v)
    z = math.exp(w * x)
    return (z * x * math.cos(v) + z * w / v) * 2.0 * u


def relu_loss(m: Any, w1, b1, w2, b2, w3, b3, x, y):
    h1 = m.relu(w1 * x + b1)
    h2 = m.relu(w2 * h1 + b2)
    f = w3 * h2 + b3
    return 0.5 * (f - y) ** 2


def relu_loss_math(w1, b1, w2, b2, w3, b3, x, y):
    a1 = w1 * x + b1
    h1 = max(a1, 0.0)
    a2 = w2 * h1 + b2
    h2 = max(a2, 0.0)
    f = w3 * h2 + b3
    return 0.5 * (f - y) ** 2


def relu_grad_by_hand(w1, b1, w2, b2, w3, b3, x, y):
    a1 = w1 * x + b1
    h1 = max(a1, 0.0)
    a2 = w2 * h1 + b2
    h2 = max(a2, 0.0)
    f = w3 * h2 + b3
    df = f - y
    da2 = df * w3 if a2 > 0.0 else 0.0
    da1 = da2 * w2 if a1 > 0.0 else 0.0
    return da1 * x, da1, da2 * h1, da2, df * h2, df


RELU_ARGS = (0.5, 0.1, -1.2, 0.9, 2.0, -0.4, 0.5, 1.0)  # w1 b1 w2 b2 w3 b3 x y
RELU_WRT = (0, 1, 2, 3, 4, 5)


def nested(m: Any, x: Any, depth: int) -> Any:
    y = x
    for _ in range(depth):
        y = m.sin(y) * y + m.cos(x)
    return y


def nested_math(depth: int) -> Callable[[float], float]:
    def f(x):
        y = x
        for _ in range(depth):
            y = math.sin(y) * y + math.cos(x)
        return y

    f.__name__ = f"nested{depth}"
    return f


def nested_by_hand(depth: int) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """Forward and reverse sweep with a tape of the intermediate ``y``."""

    def grad(x):
        tape = np.empty(depth)
        y = x
        c = math.cos(x)
        for k in range(depth):
            tape[k] = y
            y = math.sin(y) * y + c
        y_bar = 1.0
        c_bar = 0.0
        for k in range(depth - 1, -1, -1):
            yk = tape[k]
            c_bar += y_bar
            y_bar = y_bar * (math.cos(yk) * yk + math.sin(yk))
        return y_bar - c_bar * math.sin(x)

    def fwd(x):
        y = x
        c = math.cos(x)
        for _ in range(depth):
            y = math.sin(y) * y + c
        return y

    return grad, fwd


# -- one implementation per tool, for a function of scalars --------------------------


def _symdiff_make(ctx: Context, fn, argnums, holder: dict[str, Any]):
    sd = ctx.modules["symdiff"]

    def make():
        g = sd.grad(fn, argnums=argnums)
        f = sd.jit(fn)
        # trace, differentiate, schedule, print now; Numba compiles on first call
        holder.update(g=g, f=f, kernel=g.kernel)
        return g, f

    return make


def symdiff_info(row: Row, g: Any, f: Any) -> None:
    """Op counts (gradient kernel / forward kernel) and the build-time breakdown."""
    gt, ft = g.op_counts["total"], f.op_counts["total"]
    row.ops = f"{gt}/{ft}={gt / ft:.2g}x" if ft else f"{gt}/0"
    timings = g.kernel.timings
    row.extra.update(
        {
            "op_counts_grad": dict(g.op_counts),
            "op_counts_fwd": dict(f.op_counts),
            "build_timings": dict(timings),
            "compile_s": (row.first_s or 0.0),
        }
    )
    parts = ", ".join(f"{k} {v * 1e3:.3g} ms" for k, v in timings.items())
    row.note = f"build: {parts}" + (f"; {row.note}" if row.note else "")


def symdiff_rows(
    ctx: Context, fn, argnums, args, kernel_row: bool = True, hand=None
) -> list[Row]:
    """symdiff's row (and its kernel-only and cached variants); with ``hand``, a
    gradient function that Numba compiles, also the paired ratios against it."""
    holder: dict[str, Any] = {}
    row = ctx.measure("symdiff", _symdiff_make(ctx, fn, argnums, holder), args)
    g, f = holder["g"], holder["f"]
    symdiff_info(row, g, f)
    if hand is not None:
        paired_with(ctx, row, g, hand, args)
    rows = [row]
    if hasattr(ctx.modules["symdiff"], "cache"):
        rows.append(symdiff_cached_row(ctx, fn, argnums, args))
    if kernel_row:
        raw = Row("symdiff (kernel)", note="the Numba dispatcher, called directly")
        raw.grad_s = ctx.steady(g.kernel.compiled, args)
        raw.extra["grad_min_s"] = ctx.last_min
        raw.fwd_s = ctx.steady(f.kernel.compiled, args)
        rows.append(raw)
    return rows


def paired_with(ctx: Context, row: Row, g: Any, hand: Any, args) -> None:
    """symdiff and its bare kernel against a Numba baseline, in interleaved rounds."""
    if not ctx.has("numba"):
        return
    if not hasattr(hand, "py_func"):
        hand = ctx.modules["numba"].njit(hand)
    ratios = ctx.paired([g, g.kernel.compiled, hand], args)
    row.extra["paired_vs_numba"] = ratios[:2]


def symdiff_cached_row(ctx: Context, fn, argnums, args) -> Row:
    """A second ``grad`` of the same function: the kernel comes from symdiff's
    on-disk cache (module + Numba machine code), as it would in a new process."""
    sd = ctx.modules["symdiff"]
    t0 = time.perf_counter()
    g = sd.grad(fn, argnums=argnums)
    g.kernel.source  # noqa: B018 (build now)
    setup = time.perf_counter() - t0
    t0 = time.perf_counter()
    g(*args)
    first = time.perf_counter() - t0
    note = "a new grad() of the same function: kernel from the disk cache"
    return Row("symdiff (cached)", setup_s=setup, first_s=first, note=note)


def numba_row(ctx: Context, grad, fwd, args, note="hand-written @njit") -> Row:
    nb = ctx.modules["numba"]
    return ctx.measure("numba", lambda: (nb.njit(grad), nb.njit(fwd)), args, note)


def jax_row(ctx: Context, generic, argnums, args) -> Row:
    jax = ctx.modules["jax"]
    m = namespace(ctx, "jax")

    def f(*a):
        return generic(m, *a)

    def make():
        g = jax.jit(jax.grad(f, argnums=argnums))
        fw = jax.jit(f)
        return (
            lambda *a: jax.block_until_ready(g(*a)),
            lambda *a: jax.block_until_ready(fw(*a)),
        )

    return ctx.measure("jax", make, args, "jax.jit(jax.grad(f)), Python floats in")


def torch_row(ctx: Context, generic, wrt, args) -> Row:
    torch = ctx.modules["torch"]
    m = namespace(ctx, "torch")
    wrt = set(wrt)

    def grad(*a):
        ts = [
            torch.tensor(v, dtype=torch.float64, requires_grad=True) if i in wrt else v
            for i, v in enumerate(a)
        ]
        out = generic(m, *ts)
        return torch.autograd.grad(out, [t for i, t in enumerate(ts) if i in wrt])

    def fwd(*a):
        with torch.no_grad():
            return generic(m, *(torch.tensor(v, dtype=torch.float64) for v in a))

    return ctx.measure(
        "torch", lambda: (grad, fwd), args, "eager autograd, tensors made per call"
    )


def autograd_row(ctx: Context, generic, argnums, args) -> Row:
    ag = ctx.modules["autograd"]
    m = namespace(ctx, "autograd")

    def f(*a):
        return generic(m, *a)

    return ctx.measure("autograd", lambda: (ag.grad(f, argnums), f), args)


def pytensor_row(ctx: Context, generic, nargs, wrt, args) -> Row:
    pytensor = ctx.modules["pytensor"]
    pt = __import__("pytensor.tensor").tensor
    m = namespace(ctx, "pytensor")

    def make():
        xs = [pt.dscalar(f"a{i}") for i in range(nargs)]
        out = generic(m, *xs)
        grads = pytensor.grad(out, [xs[i] for i in wrt])
        return pytensor.function(xs, grads), pytensor.function(xs, out)

    return ctx.measure("pytensor", make, args, pytensor_note(pytensor))


def pytensor_note(pytensor: Any) -> str:
    mode = pytensor.compile.mode.get_default_mode()
    return f"pytensor.function, {type(mode.linker).__name__}"


def heaviside(x: float, h0: float = 0.5) -> float:
    return 1.0 if x > 0 else (h0 if x == 0 else 0.0)


SYMPY_MODULES = [{"Heaviside": heaviside}, "math"]


def sympy_rows(
    ctx: Context, expr, symbols, wrt, args, modules=None, diff_s=None, grads=None
) -> list[Row]:
    """``lambdify(diff(expr))`` with and without ``cse``; setup includes the diff."""
    sp = ctx.modules["sympy"]
    modules = modules or SYMPY_MODULES
    if grads is None:
        t0 = time.perf_counter()
        grads = [sp.diff(expr, symbols[i]) for i in wrt]
        diff_s = time.perf_counter() - t0
    rows = []
    for cse in (False, True):

        def make(cse: bool = cse):
            g = sp.lambdify(symbols, grads, modules=modules, cse=cse)
            f = sp.lambdify(symbols, expr, modules=modules, cse=cse)
            return g, f

        row = ctx.measure("sympy", make, args)
        row.tool = "sympy lambdify" + (" cse" if cse else "")
        row.setup_s = (row.setup_s or 0.0) + (diff_s or 0.0)
        row.note = f"setup = sympy.diff {diff_s:.3g} s + lambdify"
        row.extra["diff_s"] = diff_s
        rows.append(row)
    return rows


# -- 1. latency ----------------------------------------------------------------------


def latency_cases() -> list[Case]:
    def sympy_seed(ctx: Context) -> list[Row]:
        sp = ctx.modules["sympy"]
        u = sp.Symbol("u")
        return sympy_rows(ctx, seed004(namespace(ctx, "sympy"), u), [u], [0], (1.5,))

    def sympy_relu(ctx: Context) -> list[Row]:
        sp = ctx.modules["sympy"]
        syms = sp.symbols("w1 b1 w2 b2 w3 b3 x y")
        expr = relu_loss(namespace(ctx, "sympy"), *syms)
        return sympy_rows(ctx, expr, syms, RELU_WRT, RELU_ARGS)

    seed = Case(
        "latency",
        "seed004 z(u)",
        {
            "symdiff": lambda ctx: symdiff_rows(
                ctx, z_math, 0, (1.5,), hand=z_grad_by_hand
            ),
            "numba": lambda ctx: numba_row(ctx, z_grad_by_hand, z_math, (1.5,)),
            "jax": lambda ctx: jax_row(ctx, seed004, 0, (1.5,)),
            "torch": lambda ctx: torch_row(ctx, seed004, (0,), (1.5,)),
            "autograd": lambda ctx: autograd_row(ctx, seed004, 0, (1.5,)),
            "sympy": sympy_seed,
            "pytensor": lambda ctx: pytensor_row(ctx, seed004, 1, (0,), (1.5,)),
        },
        reference=lambda: z_grad_by_hand(1.5),
    )
    relu = Case(
        "latency",
        "relu net, 6 grads",
        {
            "symdiff": lambda ctx: symdiff_rows(
                ctx, relu_loss_math, RELU_WRT, RELU_ARGS, hand=relu_grad_by_hand
            ),
            "numba": lambda ctx: numba_row(
                ctx, relu_grad_by_hand, relu_loss_math, RELU_ARGS
            ),
            "jax": lambda ctx: jax_row(ctx, relu_loss, RELU_WRT, RELU_ARGS),
            "torch": lambda ctx: torch_row(ctx, relu_loss, RELU_WRT, RELU_ARGS),
            "autograd": lambda ctx: autograd_row(ctx, relu_loss, RELU_WRT, RELU_ARGS),
            "sympy": sympy_relu,
            "pytensor": lambda ctx: pytensor_row(
                ctx, relu_loss, 8, RELU_WRT, RELU_ARGS
            ),
        },
        reference=lambda: relu_grad_by_hand(*RELU_ARGS),
    )
    return [seed, relu]


# -- 2. nested compositions ----------------------------------------------------------

#: Rough growth of ``sympy.diff`` time per 5 levels of nesting (measured: 0.1 s at
#: depth 5, 0.7 s at 10, 37 s at 15 on the reference machine).
SYMPY_GROWTH_PER_5 = 30.0


def sympy_nested(ctx: Context, depth: int, state: dict[str, Any]) -> list[Row]:
    sp = ctx.modules["sympy"]
    cap = 5.0 if ctx.quick else 60.0
    last = state.get("diff")
    if last is not None:
        predicted = last[1] * SYMPY_GROWTH_PER_5 ** ((depth - last[0]) / 5)
        if predicted > cap:
            raise Skip(
                f"expression swell: sympy.diff took {last[1]:.3g} s at depth "
                f"{last[0]}; predicted {predicted:.2g} s here (cap {cap:g} s)"
            )
    from sympy.core.cache import clear_cache

    clear_cache()
    x = sp.Symbol("x")
    expr = nested(namespace(ctx, "sympy"), x, depth)
    t0 = time.perf_counter()
    grads = [sp.diff(expr, x)]
    diff_s = time.perf_counter() - t0
    state["diff"] = (depth, diff_s)
    if diff_s > cap / 4:  # lambdify's printing is as slow as the diff, or worse
        row = Row("sympy diff", setup_s=diff_s, note="lambdify skipped: too large")
        row.status = "skipped"
        row.extra["diff_s"] = diff_s
        return [row]
    return sympy_rows(ctx, expr, [x], [0], (0.3,), diff_s=diff_s, grads=grads)


def nested_cases(depths: tuple[int, ...]) -> list[Case]:
    cases = []
    state: dict[str, Any] = {}
    for depth in depths:
        fn = nested_math(depth)

        def generic(m: Any, x: Any, depth: int = depth) -> Any:
            return nested(m, x, depth)

        grad, fwd = nested_by_hand(depth)
        tools = {
            "symdiff": lambda ctx, fn=fn: symdiff_rows(ctx, fn, 0, (0.3,), False),
            "numba": lambda ctx, g=grad, f=fwd: numba_row(
                ctx, g, f, (0.3,), "hand-written @njit, loop + tape"
            ),
            "jax": lambda ctx, g=generic: jax_row(ctx, g, 0, (0.3,)),
            "torch": lambda ctx, g=generic: torch_row(ctx, g, (0,), (0.3,)),
            "autograd": lambda ctx, g=generic: autograd_row(ctx, g, 0, (0.3,)),
            "sympy": lambda ctx, d=depth: sympy_nested(ctx, d, state),
            "pytensor": lambda ctx, g=generic: pytensor_row(ctx, g, 1, (0,), (0.3,)),
        }
        ref = nested_by_hand(depth)[0]
        cases.append(
            Case("nested", f"depth {depth}", tools, reference=lambda r=ref: r(0.3))
        )
    return cases


# -- 3. from_sympy -------------------------------------------------------------------

FROM_SYMPY_ARGS = (0.3, -0.7, 1.1, 0.5)


def fifty_terms(sp: Any) -> tuple[Any, tuple[Any, ...]]:
    """50 terms ``c_i * g_i(a_i . (x, y, z, w)) * v_i**(i % 3)``, g_i cycling through
    sin, cos, exp, tanh, log(1 + s^2), sqrt(1 + s^2), atan; fixed coefficients."""
    syms = sp.symbols("x y z w")
    rng = np.random.default_rng(50)
    outer = (
        sp.sin,
        sp.cos,
        sp.exp,
        sp.tanh,
        lambda s: sp.log(1 + s**2),
        lambda s: sp.sqrt(1 + s**2),
        sp.atan,
    )
    expr = sp.Integer(0)
    for i in range(50):
        a = [sp.Float(round(float(v), 3)) for v in rng.uniform(-1, 1, 4)]
        inner = sum((ai * s for ai, s in zip(a, syms, strict=True)), sp.Integer(0))
        c = sp.Float(round(float(rng.uniform(0.5, 2.0)), 3))
        expr += c * outer[i % 7](inner) * syms[i % 4] ** (i % 3)
    return expr, syms


def from_sympy_case() -> Case:
    def symdiff_impl(ctx: Context) -> list[Row]:
        sd, sp = ctx.modules["symdiff"], ctx.modules.get("sympy")
        if sp is None:
            raise Skip("needs sympy")
        expr, syms = fifty_terms(sp)
        holder: dict[str, Any] = {}

        def make():
            c = sd.from_sympy(expr, syms)
            holder.update(c=c, kernel=c.grad.kernel)
            return c.grad, c

        row = ctx.measure("symdiff", make, FROM_SYMPY_ARGS)
        c = holder["c"]
        symdiff_info(row, c.grad, c)
        grads = [sp.diff(expr, s) for s in syms]
        lambdified = sp.lambdify(syms, grads, modules="math", cse=True)
        paired_with(ctx, row, c.grad, lambdified, FROM_SYMPY_ARGS)
        raw = Row("symdiff (kernel)", note="the Numba dispatcher, called directly")
        raw.grad_s = ctx.steady(c.grad.kernel.compiled, FROM_SYMPY_ARGS)
        raw.extra["grad_min_s"] = ctx.last_min
        raw.fwd_s = ctx.steady(c.kernel.compiled, FROM_SYMPY_ARGS)
        return [row, raw]

    def sympy_impl(ctx: Context) -> list[Row]:
        expr, syms = fifty_terms(ctx.modules["sympy"])
        return sympy_rows(ctx, expr, syms, range(4), FROM_SYMPY_ARGS)

    def numba_impl(ctx: Context) -> Row:
        sp, nb = ctx.modules["sympy"], ctx.modules["numba"]
        if sp is None:
            raise Skip("needs sympy")
        expr, syms = fifty_terms(sp)

        def make():
            grads = [sp.diff(expr, s) for s in syms]
            g = sp.lambdify(syms, grads, modules="math", cse=True)
            f = sp.lambdify(syms, expr, modules="math", cse=True)
            return nb.njit(g), nb.njit(f)

        note = "numba.njit(lambdify(diff, cse=True)); setup includes the diff"
        return ctx.measure("numba", make, FROM_SYMPY_ARGS, note)

    def jax_impl(ctx: Context) -> Row:
        sp, jax = ctx.modules["sympy"], ctx.modules["jax"]
        if sp is None:
            raise Skip("needs sympy")
        expr, syms = fifty_terms(sp)

        def make():
            f = jax.jit(sp.lambdify(syms, expr, modules="jax"))
            g = jax.jit(jax.grad(sp.lambdify(syms, expr, modules="jax"), (0, 1, 2, 3)))
            return (
                lambda *a: jax.block_until_ready(g(*a)),
                lambda *a: jax.block_until_ready(f(*a)),
            )

        return ctx.measure(
            "jax", make, FROM_SYMPY_ARGS, "jax.grad of lambdify(modules='jax')"
        )

    def reference() -> Any:
        import sympy as sp

        expr, syms = fifty_terms(sp)
        at = dict(zip(syms, FROM_SYMPY_ARGS, strict=True))
        return [float(sp.diff(expr, s).evalf(30, subs=at)) for s in syms]

    return Case(
        "from_sympy",
        "50 terms, 4 symbols",
        {
            "symdiff": symdiff_impl,
            "numba": numba_impl,
            "jax": jax_impl,
            "sympy": sympy_impl,
        },
        reference=reference,
    )
