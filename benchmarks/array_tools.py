"""One implementation per tool for a function of arrays (workload 4).

``generic(m, c, *params)`` returns a scalar, or with ``batched`` an array of
independent values (the gradient is then the elementwise derivative); ``m`` is the
tool's namespace of elementary functions (`harness.namespace`) and ``c`` holds the
constants, converted to the tool's array type.  symdiff reads source, so it gets
NumPy code (`symdiff_array_row`): the generic function with ``m = numpy`` where
it can inline it, else a NumPy twin or an example's function.
"""

from __future__ import annotations

import gc
import importlib.util
import sys
import time
import tracemalloc
import types
from pathlib import Path
from typing import Any

import numpy as np
from harness import Context, Row, Skip, namespace
from scalar_cases import pytensor_note, symdiff_info

NEEDS_ARRAYS = "cannot run yet (needs arrays: issue 3)"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


# -- converting constants and parameters to each tool's arrays -----------------------
def convert(ctx: Context, tool: str, value: Any) -> Any:
    if not isinstance(value, np.ndarray):
        return value
    if tool == "jax":
        return ctx.modules["jax"].numpy.asarray(value)
    if tool == "torch":
        return ctx.modules["torch"].from_numpy(value)
    if tool == "pytensor" and value.dtype.kind == "f":
        return __import__("pytensor.tensor").tensor.as_tensor_variable(value)
    return value


def constants(ctx: Context, tool: str, consts: dict[str, Any]) -> Any:
    return types.SimpleNamespace(
        **{k: convert(ctx, tool, v) for k, v in consts.items()}
    )


# -- one implementation per tool, for a function of arrays ---------------------------
# ``generic(m, c, *params)`` returns a scalar, or with ``batched`` an array of
# independent values (the gradient is then the elementwise derivative).


def jax_row(ctx: Context, generic, consts, params, batched=False) -> Row:
    jax = ctx.modules["jax"]
    m, c = namespace(ctx, "jax"), constants(ctx, "jax", consts)
    args = tuple(convert(ctx, "jax", p) for p in params)

    def f(*p):
        return generic(m, c, *p)

    def make():
        if batched:
            g, fw = jax.jit(jax.vmap(jax.grad(f))), jax.jit(jax.vmap(f))
        else:
            g = jax.jit(jax.grad(f, argnums=tuple(range(len(params)))))
            fw = jax.jit(f)
        return (
            lambda *a: jax.block_until_ready(g(*a)),
            lambda *a: jax.block_until_ready(fw(*a)),
        )

    note = "jax.jit(jax.vmap(jax.grad(f)))" if batched else "jax.jit(jax.grad(f))"
    return ctx.measure("jax", make, args, note)


def torch_row(ctx: Context, generic, consts, params, batched=False) -> Row:
    torch = ctx.modules["torch"]
    m, c = namespace(ctx, "torch"), constants(ctx, "torch", consts)
    args = tuple(
        convert(ctx, "torch", p)
        if isinstance(p, np.ndarray)
        else torch.tensor(p, dtype=torch.float64)
        for p in params
    )

    def grad(*ps):
        leaves = [p.detach().requires_grad_() for p in ps]
        out = generic(m, c, *leaves)
        return torch.autograd.grad(out.sum() if batched else out, leaves)

    def fwd(*ps):
        with torch.no_grad():
            return generic(m, c, *ps)

    return ctx.measure("torch", lambda: (grad, fwd), args, "eager autograd")


def autograd_row(ctx: Context, generic, consts, params, batched=False) -> Row:
    ag = ctx.modules["autograd"]
    m, c = namespace(ctx, "autograd"), constants(ctx, "autograd", consts)

    def f(*p):
        return generic(m, c, *p)

    def make():
        if batched:
            return ag.elementwise_grad(f), f
        return ag.grad(f, tuple(range(len(params)))), f

    return ctx.measure("autograd", make, tuple(params))


QUICK_PYTENSOR = (
    "not run with --quick: compiling an array graph with PyTensor's Numba backend "
    "takes 15-60 s here"
)


def pytensor_row(ctx: Context, generic, consts, params, batched=False) -> Row:
    if ctx.quick:
        raise Skip(QUICK_PYTENSOR)
    pytensor = ctx.modules["pytensor"]
    pt = __import__("pytensor.tensor").tensor
    m, c = namespace(ctx, "pytensor"), constants(ctx, "pytensor", consts)

    def make():
        xs = [
            pt.tensor(f"p{i}", dtype="float64", shape=(None,) * np.ndim(p))
            for i, p in enumerate(params)
        ]
        out = generic(m, c, *xs)
        grads = pytensor.grad(out.sum() if batched else out, xs)
        return pytensor.function(xs, grads), pytensor.function(xs, out)

    return ctx.measure("pytensor", make, tuple(params), pytensor_note(pytensor))


def hand_row(ctx: Context, tool, grad, fwd, params, note="hand-written") -> Row:
    if tool == "numba":
        nb = ctx.modules["numba"]
        return ctx.measure(
            "numba", lambda: (nb.njit(grad), nb.njit(fwd)), params, note + " @njit"
        )
    return ctx.measure(tool, lambda: (grad, fwd), params, note + " NumPy")


def baselines(generic, consts, params, batched=False) -> dict[str, Any]:
    """jax, torch, autograd and PyTensor rows for one case."""

    def bind(row_fn):
        return lambda ctx: row_fn(ctx, generic, consts, params, batched)

    return {
        "jax": bind(jax_row),
        "torch": bind(torch_row),
        "autograd": bind(autograd_row),
        "pytensor": bind(pytensor_row),
    }


# -- symdiff on a function of arrays --------------------------------------------------
def symdiff_array_row(
    ctx: Context,
    fn,
    argnums,
    args,
    note: str = "",
    memory: bool = False,
    paired: dict[str, Any] | None = None,
) -> Row:
    """symdiff's row: ``grad(fn, argnums)`` and ``jit(fn)`` on NumPy arrays.

    A kernel is built for the argument types on the first call, so the build
    (trace + differentiate + print) is in the first call; it is taken out of it
    and shown as ``setup``, and ``first call`` is the Numba compile plus one run.
    The note also gives the compile time of both kernels alone (first call minus
    build minus one steady call).  While symdiff cannot run ``fn`` (a
    SymdiffError: its array support is issue 3), the row says so with the first
    line of the error; any other exception is an ``error:`` row (a bug).

    ``paired``: name -> a callable of no arguments (another tool's gradient on
    the same data); each is timed in rounds interleaved with symdiff's
    (``Context.paired``) and ``extra["paired"]`` holds symdiff/that ratio."""
    sd = ctx.modules["symdiff"]
    try:
        g, f = sd.grad(fn, argnums=argnums), sd.jit(fn)
        t0 = time.perf_counter()
        out = g(*args)
        first_grad = time.perf_counter() - t0
        t0 = time.perf_counter()
        f(*args)
        first_fwd = time.perf_counter() - t0
    except sd.SymdiffError as exc:
        return Row(
            "symdiff", note=f"{NEEDS_ARRAYS}: {first_line(exc)}", status="cannot-run"
        )
    build_grad, build_fwd = _build_s(g), _build_s(f)
    row = Row("symdiff", setup_s=build_grad, first_s=first_grad - build_grad)
    row.grad_s = ctx.steady(g, args)
    row.extra["grad_min_s"] = ctx.last_min
    row.fwd_s = ctx.steady(f, args)
    compile_grad = first_grad - build_grad - row.grad_s
    compile_fwd = first_fwd - build_fwd - row.fwd_s
    try:
        symdiff_info(row, g, f)  # op counts; the note becomes "build: ..."
        build_note = f"{row.note} (in the first call)"
    except Exception as exc:  # op counts of array kernels: not essential
        build_note = f"op counts unavailable ({first_line(exc)})"
    row.extra.update(
        compile_s=compile_grad,
        compile_fwd_s=compile_fwd,
        setup_fwd_s=build_fwd,
        first_fwd_s=first_fwd - build_fwd,
    )
    compile_note = f"Numba compile: grad {compile_grad:.2g} s, jit {compile_fwd:.2g} s"
    cached = [name for name, c in (("grad", g), ("jit", f)) if _from_disk_cache(c)]
    if cached:
        row.extra["from_disk_cache"] = cached
        compile_note += (
            f" ({' and '.join(cached)} machine code from symdiff's disk cache: an "
            "earlier case built the same kernel)"
        )
    row.note = _join(_join(build_note, compile_note), note)
    if memory:
        add_peak_memory(row, g, args)
    if paired:
        ratios = {}
        for name, other in paired.items():
            ratios[name] = ctx.paired([lambda: g(*args), other], ())[0]
        row.extra["paired"] = ratios
    ctx.check(row, out)
    return row


def _build_s(compiled: Any) -> float:
    """symdiff's build time (trace, differentiate, print) of the last kernel."""
    try:
        return float(sum(compiled.kernel.timings.values()))
    except Exception:  # an API in flux: report the whole first call instead
        return 0.0


def _from_disk_cache(compiled: Any) -> bool:
    """Whether Numba loaded the kernel's machine code from the disk cache."""
    try:
        return sum(compiled.kernel.compiled.stats.cache_hits.values()) > 0
    except Exception:  # not a Numba dispatcher, or Numba's stats changed
        return False


def first_line(exc: BaseException) -> str:
    """The error's first line; for a TranslationError (whose first line only
    counts the problems) also where and what the first problem is."""
    line = (f"{type(exc).__name__}: {exc}".splitlines() or [""])[0]
    diagnostics = getattr(exc, "diagnostics", None)
    if diagnostics:
        d = diagnostics[0]
        line += f" ({Path(d.filename).name}:{d.line}: {d.message})"
    return line[:240]


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a and b else a or b


# -- peak memory ----------------------------------------------------------------------
def peak_traced_bytes(fn, args) -> int:
    """Peak of the memory allocated during one call of ``fn(*args)`` (after a
    first call), as ``tracemalloc`` sees it: NumPy's array data and Numba's
    (NRT allocates through ``PyMem_RawMalloc``), the returned result included;
    not other libraries' own allocators (XLA, torch)."""
    fn(*args)
    gc.collect()
    tracemalloc.start()
    try:
        out = fn(*args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del out
    return peak


def add_peak_memory(row: Row, fn, args) -> None:
    """Peak memory of one gradient call, relative to the input arrays' size."""
    size = sum(a.nbytes for a in args if isinstance(a, np.ndarray))
    peak = peak_traced_bytes(fn, args)
    row.extra.update(peak_bytes=peak, peak_over_input=peak / size)
    row.note = _join(
        row.note,
        f"peak memory of one grad call {peak / size:.2g}x the input "
        f"({peak / 1e6:.3g} MB / {size / 1e6:.3g} MB; tracemalloc: NumPy and "
        "Numba allocations, the result included)",
    )


def with_peak_memory(impl, fn_of_ctx, args):
    """A tool's implementation, its row extended with `add_peak_memory` of the
    gradient ``fn_of_ctx(ctx)``."""

    def run(ctx: Context) -> Row:
        row = impl(ctx)
        add_peak_memory(row, fn_of_ctx(ctx), args)
        return row

    return run


# -- the examples' functions ----------------------------------------------------------
def example_module(name: str) -> types.ModuleType:
    """``examples/<name>.py`` as a module (examples/ is not a package)."""
    module_name = f"symdiff_example_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    sys.path.insert(0, str(EXAMPLES))  # the examples import their _support module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    finally:
        sys.path.remove(str(EXAMPLES))
    return module
