"""JIT policy and compilation of generated source, in one place (DESIGN.md 11).

No ``nnan``/``ninf`` fast-math: gradient checks and piecewise rules rely on IEEE
semantics.  ``error_model="numpy"`` makes ``1/0`` give ``inf`` (as NumPy does)
instead of raising, which if-converted code needs: both arms of a branch are
evaluated, and the untaken one may divide by zero.

Vectorised transcendentals: Numba from PyPI has no SVML, so ``exp``/``log``/
``sin``... in a loop are scalar libm calls and the loop cannot use SIMD.  On
x86-64 Linux, glibc's libmvec has SIMD versions of them (AVX2/AVX-512/SSE
variants, at most 4 ulp from the correctly rounded result, as NumPy's own SIMD
functions are); :func:`vector_math` tells LLVM's loop vectoriser to use it while
*symdiff's* kernels compile, and only then (the user's own Numba functions are
not affected).  ``SYMDIFF_VECTOR_MATH=0`` turns it off (scalar libm everywhere).
It takes effect with LLVM up to 20 (Numba 0.65); newer llvmlite ignores the
setting, and symdiff then compiles with scalar libm as Numba does.  Straight-line
kernels (no loops, no arrays) compile without it: there is nothing to vectorise,
and they call the libm functions Python's ``math`` module calls, which the warm
start relies on (:mod:`symdiff.backend.warm`: on a cache hit their first calls run
as plain Python while Numba loads).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import linecache
import math
import os
import platform
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from symdiff.backend import warm

#: Options for every CPU kernel.
NJIT_OPTIONS: dict[str, Any] = {
    "fastmath": False,
    "error_model": "numpy",
    "cache": False,
}


#: The newest LLVM (llvmlite's) whose loop vectoriser is known to honour
#: ``-vector-library`` set this way: LLVM 20 (llvmlite 0.47, Numba 0.65).  With
#: LLVM 22 (llvmlite 0.50, Numba 0.68) the option is accepted but has no effect.
MAX_LLVM_FOR_VECTOR_MATH = 20


def vector_math_enabled() -> bool:
    """Whether symdiff's loops may call libmvec's SIMD transcendentals: asked for
    (``SYMDIFF_VECTOR_MATH``, default on), available (x86-64 Linux with glibc's
    libmvec, loaded into the process for Numba's JIT), and not redundant (a
    Numba with Intel's SVML already vectorises them for every function)."""
    if os.environ.get("SYMDIFF_VECTOR_MATH", "1").lower() in ("0", "false", "no"):
        return False
    from numba import config

    if getattr(config, "USING_SVML", False):
        return False
    return _libmvec_usable()


@functools.cache
def _libmvec_usable() -> bool:
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return False
    import llvmlite.binding as llvm

    if llvm.llvm_version_info[0] > MAX_LLVM_FOR_VECTOR_MATH:
        return False
    try:
        llvm.load_library_permanently("libmvec.so.1")
    except RuntimeError:
        return False
    return True


@contextlib.contextmanager
def vector_math() -> Iterator[None]:
    """Compile inside this block with LLVM's vector library set to libmvec (if
    :func:`vector_math_enabled`), holding Numba's compiler lock so that no other
    thread's compilation sees the setting."""
    if not vector_math_enabled():
        yield
        return
    import llvmlite.binding as llvm
    from numba.core.compiler_lock import global_compiler_lock

    with global_compiler_lock:
        llvm.set_option("symdiff", "-vector-library=LIBMVEC-X86")
        try:
            yield
        finally:
            llvm.set_option("symdiff", "-vector-library=none")


def _ieee(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        with np.errstate(all="ignore"):
            return fn(*map(np.float64, args))

    return call


#: Stand-in for ``math`` when generated code runs as plain Python: NumPy float64
#: semantics (``sqrt(-1)`` is NaN, not an exception), as in the Numba kernel.
IEEE_MATH = types.SimpleNamespace(
    inf=math.inf,
    nan=math.nan,
    floor=math.floor,
    ceil=math.ceil,
    erf=_ieee(np.vectorize(math.erf, otypes=[float])),
    erfc=_ieee(np.vectorize(math.erfc, otypes=[float])),
    **{
        name: _ieee(getattr(np, np_name))
        for name, np_name in {
            "exp": "exp",
            "expm1": "expm1",
            "log": "log",
            "log1p": "log1p",
            "log2": "log2",
            "log10": "log10",
            "sqrt": "sqrt",
            "sin": "sin",
            "cos": "cos",
            "tan": "tan",
            "asin": "arcsin",
            "acos": "arccos",
            "atan": "arctan",
            "sinh": "sinh",
            "cosh": "cosh",
            "tanh": "tanh",
            "asinh": "arcsinh",
            "acosh": "arccosh",
            "atanh": "arctanh",
            "atan2": "arctan2",
            "hypot": "hypot",
            "copysign": "copysign",
        }.items()
    },
)


def python_kernel(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run a generated function as plain Python with the kernel's IEEE semantics.

    Float arguments become ``numpy.float64`` so that ``1/0`` gives ``inf`` as in
    the Numba kernel (``error_model="numpy"``) instead of raising.
    """

    def run(*args: Any) -> Any:
        with np.errstate(all="ignore"):
            out = fn(*(np.float64(a) if isinstance(a, float) else a for a in args))
        return _python_scalars(out)

    return run


def _python_scalars(value: Any) -> Any:
    """NumPy scalars to Python ones, as the Numba kernel returns them."""
    if isinstance(value, tuple):
        return tuple(_python_scalars(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def synthetic_filename(name: str, source: str) -> str:
    digest = hashlib.sha1(source.encode()).hexdigest()[:10]
    return f"<symdiff:{name}:{digest}>"


def load_source(source: str, name: str, ieee_math: bool = False) -> Callable[..., Any]:
    """Execute generated module ``source`` and return its function ``name``.

    The source is registered in :mod:`linecache` under a synthetic file name, so
    ``inspect.getsource``, tracebacks and Numba's messages show the generated line.
    """
    filename = synthetic_filename(name, source)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"__name__": f"symdiff_generated_{name}"}
    exec(compile(source, filename, "exec"), namespace)
    if ieee_math and "math" in namespace:
        namespace["math"] = IEEE_MATH
    fn = namespace[name]
    assert callable(fn)
    return fn  # type: ignore[no-any-return]


def njit(
    fn: Callable[..., Any],
    cache: bool = False,
    parallel: bool = False,
    vector_library: bool = True,
) -> Callable[..., Any]:
    """Wrap ``fn`` with Numba under symdiff's JIT policy (compiled on first call).

    ``cache=True`` keeps the machine code on disk beside ``fn``'s module;
    ``parallel=True`` (target ``"parallel"``) runs its ``numba.prange`` loops on
    threads; ``vector_library=False`` (straight-line kernels: there is no loop to
    vectorise) compiles outside :func:`vector_math`, so that the kernel calls
    scalar libm alone, as Python's ``math`` module does.
    """
    import numba  # imported here: `import symdiff` must stay light

    options = dict(NJIT_OPTIONS, cache=cache, parallel=parallel)
    dispatcher = numba.njit(**options)(fn)
    if not vector_library:
        return dispatcher  # type: ignore[no-any-return]
    vector_math_enabled()  # libmvec loaded before cached machine code that calls it
    # Numba's dispatcher compiles a new signature through `_compile_for_args`
    # (looked up on the instance): every compile of this kernel, whatever the
    # argument layouts, happens under `vector_math`.
    compile_for_args = dispatcher._compile_for_args

    def compile_with_vector_math(*args: Any, **kwargs: Any) -> Any:
        with vector_math():
            return compile_for_args(*args, **kwargs)

    dispatcher._compile_for_args = compile_with_vector_math
    return dispatcher  # type: ignore[no-any-return]


def compile_kernel(
    source: str,
    name: str,
    parallel: bool = False,
    loops: bool = True,
    warm_types: Any = None,
) -> tuple[Callable[..., Any], Any]:
    """The plain function and its Numba dispatcher, through the disk cache when
    it is enabled (see :mod:`symdiff.cache`).

    ``loops=False``: straight-line code, compiled without the vector library (see
    :func:`njit`).  ``warm_types``: for a straight-line kernel of floats, the
    Python type of each output; on a cache hit the second item is then a
    :class:`~symdiff.backend.warm.WarmStart` (its first calls run as plain Python
    while Numba loads) if the source has an exact plain-Python version.
    """
    from symdiff import cache

    if cache.enabled():
        options = dict(NJIT_OPTIONS, parallel=True) if parallel else NJIT_OPTIONS
        if loops and vector_math_enabled():
            options = dict(options, vector_math="libmvec")
        try:
            path = cache.cached_module_path(source, name, options)
        except OSError:
            pass  # an unwritable cache folder: compile in memory
        else:
            python = cache.load_function(path, name)
            if (
                warm_types is not None
                and not parallel
                and warm.enabled()
                and cache.has_machine_code(path, name)
            ):
                from symdiff.backend.exact import exact_python

                exact = exact_python(source, name, warm_types)
                if exact is not None:
                    load = functools.partial(_load_warm, python, path)
                    return python, warm.WarmStart(exact, load)
            return python, _load_cached(python, path, parallel, loops)
    python = load_source(source, name)
    return python, njit(python, parallel=parallel, vector_library=loops)


def _load_cached(
    python: Callable[..., Any], path: Any, parallel: bool, loops: bool
) -> Any:
    from symdiff import cache

    cache.discard_unreadable_machine_code(path)
    return njit(python, cache=True, parallel=parallel, vector_library=loops)


def _load_warm(python: Callable[..., Any], path: Any) -> Any:
    """A warm start's dispatcher (on the background thread), its machine code for
    float arguments loaded now rather than at its first call."""
    dispatcher = _load_cached(python, path, parallel=False, loops=False)
    from numba import float64

    try:
        dispatcher.compile((float64,) * python.__code__.co_argcount)
    except Exception:  # the first call compiles again and reports the error
        pass
    return dispatcher
