"""JIT policy and compilation of generated source, in one place (DESIGN.md 11).

No ``nnan``/``ninf`` fast-math: gradient checks and piecewise rules rely on IEEE
semantics.  ``error_model="numpy"`` makes ``1/0`` give ``inf`` (as NumPy does)
instead of raising, which if-converted code needs: both arms of a branch are
evaluated, and the untaken one may divide by zero.

Vectorised transcendentals: Numba from PyPI has no SVML, so ``exp``/``log``/
``sin``... in a loop are scalar libm calls and the loop cannot use SIMD.  On
x86-64 Linux, glibc's libmvec has SIMD versions of them (SSE and AVX2 variants,
at most 4 ulp from the correctly rounded result, as NumPy's own SIMD functions
are).  While *symdiff's* kernels compile, :func:`vector_math` marks their libm
calls with the vector variants libmvec has, as LLVM's own vector-library pass
would (the ``vector-function-abi-variant`` call-site attribute), and declares the
variants in the modules of loop kernels (vectorize loops, array kernels), so that
LLVM's loop vectoriser can call them.  This works on every LLVM llvmlite ships
(20 and 22 tested), unlike the ``-vector-library`` option, which LLVM 22 ignores.
The user's own Numba functions are not marked.  ``SYMDIFF_VECTOR_MATH=0`` turns
it off (scalar libm everywhere).  Straight-line kernels (no loops, no arrays)
have their calls marked but no variant declared: they call the libm functions
Python's ``math`` module calls, which the warm start relies on
(:mod:`symdiff.backend.warm`: on a cache hit their first calls run as plain
Python while Numba loads), and a vectorize loop that inlines them can still
vectorise their calls.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import linecache
import math
import os
import platform
import sys
import types
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from symdiff.backend import warm
from symdiff.ir.ops import OPS

#: Options for every CPU kernel.
NJIT_OPTIONS: dict[str, Any] = {
    "fastmath": False,
    "error_model": "numpy",
    "cache": False,
}


def vector_math_requested() -> bool:
    """Whether SIMD transcendentals are asked for (``SYMDIFF_VECTOR_MATH``,
    default on) on a platform that may have them (x86-64 Linux); imports
    nothing (the warm start keys its cache entries with it)."""
    if os.environ.get("SYMDIFF_VECTOR_MATH", "1").lower() in ("0", "false", "no"):
        return False
    return sys.platform == "linux" and platform.machine() in ("x86_64", "AMD64")


def vector_math_enabled() -> bool:
    """Whether symdiff's loops may call libmvec's SIMD transcendentals: asked for
    (:func:`vector_math_requested`), available (glibc's libmvec, loaded into the
    process for Numba's JIT), and not redundant (a Numba with Intel's SVML
    already vectorises them for every function)."""
    if not vector_math_requested():
        return False
    config = warm.import_numba().config

    if getattr(config, "USING_SVML", False):
        return False
    return bool(_libmvec_table())


#: glibc's x86-64 libmvec functions that LLVM's own LIBMVEC-X86 table maps, with
#: their number of arguments.
_LIBMVEC_FUNCTIONS = {"sin": 1, "cos": 1, "tan": 1, "exp": 1, "log": 1, "pow": 2}


@dataclass(frozen=True)
class _Variants:
    """The vector variants of one scalar callee (libm's name or LLVM's intrinsic)."""

    scalar_type: Any  # llvmlite.ir.FunctionType the call must have
    attribute: str  # the call-site attribute naming the variants
    vectors: tuple[tuple[str, Any], ...]  # symbol and function type of each variant


@functools.cache
def _libmvec_table() -> dict[str, _Variants]:
    """Scalar callee -> its libmvec variants; empty where libmvec is unusable.

    ``b`` variants are SSE4 (2 doubles / 4 floats), ``d`` AVX2 (4 doubles / 8
    floats, only where the host CPU has AVX2: Numba compiles for the host); a
    variant this glibc lacks (``_ZGVdN4v_tan`` before 2.35) is left out.
    """
    import llvmlite.binding as llvm
    from llvmlite import ir

    try:
        llvm.load_library_permanently("libmvec.so.1")
    except RuntimeError:
        return {}
    features = llvm.get_host_cpu_features()
    isas = [("b", 2)] + ([("d", 4)] if features.get("avx2", False) else [])
    table = {}
    for name, nargs in _LIBMVEC_FUNCTIONS.items():
        params = "v" * nargs
        for suffix, fty, bits, per_double in (
            ("", ir.DoubleType(), "f64", 1),
            ("f", ir.FloatType(), "f32", 2),
        ):
            mappings, vectors = [], []
            for isa, doubles in isas:
                width = doubles * per_double
                vname = f"_ZGV{isa}N{width}{params}_{name}{suffix}"
                if llvm.address_of_symbol(vname):
                    vty = ir.VectorType(fty, width)
                    vectors.append((vname, ir.FunctionType(vty, [vty] * nargs)))
                    mappings.append((width, vname))
            for scalar in (name + suffix, f"llvm.{name}.{bits}") if vectors else ():
                listed = ",".join(
                    f"_ZGV_LLVM_N{width}{params}_{scalar}({vname})"
                    for width, vname in mappings
                )
                table[scalar] = _Variants(
                    ir.FunctionType(fty, [fty] * nargs),
                    f'"vector-function-abi-variant"="{listed}"',
                    tuple(vectors),
                )
    return table


def _mark_vector_math(module: Any, declare: bool) -> None:
    """Mark the libm calls of one ``llvmlite.ir`` module with their libmvec
    variants (``vector-function-abi-variant``, what LLVM's InjectTLIMappings pass
    writes from a vector library); with ``declare``, also declare every variant
    and keep the declarations (``llvm.compiler.used``) until the loop vectoriser
    has run, including for calls that reach the module by inlining."""
    from llvmlite import ir

    table = _libmvec_table()
    if "llvm.compiler.used" in module.globals:  # never emitted by Numba's CPU target
        return
    for fn in module.functions:
        for block in fn.blocks:
            for instr in block.instructions:
                if not isinstance(instr, ir.CallInstr):
                    continue
                callee = instr.callee
                variants = table.get(getattr(callee, "name", ""))
                if (
                    variants is not None
                    and isinstance(callee, ir.Function)
                    and callee.function_type == variants.scalar_type
                    and variants.attribute not in instr.attributes
                ):
                    # CallInstrAttributes admits only a few enum attributes (its
                    # `add` checks them); the set is written verbatim after the
                    # arguments, so the string attribute goes in directly.
                    set.add(instr.attributes, variants.attribute)
    if not declare:
        return
    i8p = ir.IntType(8).as_pointer()
    refs = []
    for vname, fnty in {v: t for x in table.values() for v, t in x.vectors}.items():
        vfn = module.globals.get(vname) or ir.Function(module, fnty, vname)
        refs.append(vfn.bitcast(i8p))
    used = ir.GlobalVariable(module, ir.ArrayType(i8p, len(refs)), "llvm.compiler.used")
    used.linkage = "appending"
    used.section = "llvm.metadata"
    used.initializer = ir.Constant(used.value_type, refs)


#: While symdiff compiles, for the innermost kernel being compiled: the name of
#: its code library (Numba names it after the function) if it is a loop kernel
#: (its modules declare the variants), else None (calls are only marked).
_MODES: list[str | None] = []

#: The code libraries of the loops ``numba.prange`` outlines (target "parallel").
_PARFOR_LIBRARY = "__numba_parfor_gufunc"


@contextlib.contextmanager
def vector_math(loop_kernel: str | None) -> Iterator[None]:
    """Compile inside this block with libm calls vectorisable with libmvec (if
    :func:`vector_math_enabled`): the IR modules Numba generates meanwhile are
    marked (:func:`_mark_vector_math`), holding Numba's compiler lock so that no
    other thread's compilation is.  The variants are declared only in the
    modules of ``loop_kernel`` (a function's ``__qualname__``; None for a
    straight-line kernel) and of the loops it runs in parallel: Numba's own
    helpers compiled meanwhile are shared with the user's functions, which must
    not call libmvec.  Blocks nest: a kernel compiled while another one compiles
    (the scalar kernel inside a vectorize loop) has its own."""
    if not vector_math_enabled():
        yield
        return
    from numba.core.codegen import CPUCodeLibrary
    from numba.core.compiler_lock import global_compiler_lock

    with global_compiler_lock:
        outermost = not _MODES
        if outermost:
            add_ir_module = CPUCodeLibrary.__dict__["add_ir_module"]

            def marked(self: Any, ir_module: Any) -> Any:
                kernel = _MODES[-1]
                declare = kernel is not None and (
                    self.name == kernel or self.name.startswith(_PARFOR_LIBRARY)
                )
                _mark_vector_math(ir_module, declare)
                return add_ir_module(self, ir_module)

            CPUCodeLibrary.add_ir_module = marked
        _MODES.append(loop_kernel)
        try:
            yield
        finally:
            _MODES.pop()
            if outermost:
                CPUCodeLibrary.add_ir_module = add_ir_module


def _ieee(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        with np.errstate(all="ignore"):
            return fn(*map(np.float64, args))

    return call


def _elementwise(fn: Callable[[float], float]) -> Callable[..., Any]:
    """``fn`` of a number or element by element of an array, with the kernel's
    IEEE semantics; a number gives a NumPy float (np.vectorize alone gives a
    0-d array)."""
    vectorized = np.vectorize(fn, otypes=[float])

    def call(x: Any) -> Any:
        with np.errstate(all="ignore"):
            return vectorized(np.float64(x))[()]

    return call


#: Stand-in for ``math`` when generated code runs as plain Python: NumPy float64
#: semantics (``sqrt(-1)`` is NaN, not an exception), as in the Numba kernel.
IEEE_MATH = types.SimpleNamespace(
    inf=math.inf,
    nan=math.nan,
    floor=math.floor,
    ceil=math.ceil,
    erf=_elementwise(OPS["erf"].impl),  # type: ignore[arg-type]
    erfc=_elementwise(OPS["erfc"].impl),  # type: ignore[arg-type]
    # C's lgamma/tgamma answers (inf at the poles, NaN below them) where Python raises
    lgamma=_elementwise(OPS["lgamma"].impl),  # type: ignore[arg-type]
    gamma=_elementwise(OPS["gamma"].impl),  # type: ignore[arg-type]
    # inf on overflow, where Python raises; exact otherwise, as C's ldexp
    ldexp=lambda x, i: np.float64(OPS["ldexp"].impl(x, i)),  # type: ignore[misc]
    gcd=math.gcd,
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


class _KernelNumpy(types.ModuleType):
    """Stand-in for ``np`` when generated code runs as plain Python: NumPy,
    except where Numba's version of a function differs (``np.cbrt`` is libm's
    ``cbrt`` there, as Python's ``math.cbrt``; NumPy's own can differ in the
    last bit)."""

    def __init__(self) -> None:
        super().__init__("numpy")
        self.cbrt = _elementwise(OPS["cbrt"].impl)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)


KERNEL_NUMPY = _KernelNumpy()


def python_kernel(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run a generated function as plain Python with the kernel's IEEE semantics.

    Float arguments become ``numpy.float64`` so that ``1/0`` gives ``inf`` as in
    the Numba kernel (``error_model="numpy"``) instead of raising, and ints
    ``numpy.int64``: ``10 // 0`` is 0 there, as in Numba (an untaken branch's
    ``10 // k`` at ``k == 0``), and arithmetic wraps at 64 bits alike.
    """

    def run(*args: Any) -> Any:
        with np.errstate(all="ignore"):
            out = fn(*(_numpy_scalar(a) for a in args))
        return _python_scalars(out)

    return run


def _numpy_scalar(value: Any) -> Any:
    if isinstance(value, float):
        return np.float64(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return np.int64(value)
    return value


def _python_scalars(value: Any) -> Any:
    """NumPy scalars to Python ones, as the Numba kernel returns them."""
    if isinstance(value, tuple):
        return tuple(_python_scalars(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


class _NumpyFloats(ast.NodeTransformer):
    """``1.0`` as ``_f64(1.0)`` (``numpy.float64``) in generated code."""

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if type(node.value) is not float:
            return node
        call = ast.Call(ast.Name("_f64", ast.Load()), [node], [])
        return ast.copy_location(call, node)


def _ieee_float(value: Any) -> Any:
    return np.float64(value) if type(value) is float else value


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
    code: Any = source
    if ieee_math:
        # float literals as NumPy floats: an accumulator that starts at 0.0 and
        # stays there divides as the kernel's does (inf, not ZeroDivisionError)
        code = ast.fix_missing_locations(_NumpyFloats().visit(ast.parse(source)))
        namespace["_f64"] = np.float64
    exec(compile(code, filename, "exec"), namespace)
    if ieee_math:
        # float(n) of an int stays a NumPy float: 1.0 / float(0) is inf
        namespace["float"] = np.float64
        namespace["int"] = OPS["int"].impl  # NaN: no exception, as in Numba
        # max(count - 1.0, 0.0) may give the literal 0.0, a Python float that
        # a division by raises: NumPy floats divide as the kernel does
        namespace["max"] = lambda *a: _ieee_float(max(*a))
        namespace["min"] = lambda *a: _ieee_float(min(*a))
        if "math" in namespace:
            namespace["math"] = IEEE_MATH
        if namespace.get("np") is np:
            namespace["np"] = KERNEL_NUMPY
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
    vectorise) compiles with the libm calls marked but no vector variant
    declared (:func:`vector_math`), so that the kernel calls scalar libm alone,
    as Python's ``math`` module does.
    """
    from symdiff.backend import allocator

    numba = warm.import_numba()  # here: `import symdiff` must stay light

    if vector_library:  # a loop kernel: it allocates arrays on every call
        allocator.keep_freed_memory()
    options = dict(NJIT_OPTIONS, cache=cache, parallel=parallel)
    dispatcher = numba.njit(**options)(fn)
    with_vector_math = vector_math_enabled()  # loads libmvec before cached code too
    if not (with_vector_math or parallel):
        return dispatcher  # type: ignore[no-any-return]
    # Every new signature compiles through the dispatcher's `compile` (looked up
    # on the instance), whether called from Python or from another kernel being
    # compiled: each compile of this kernel happens under `vector_math`, and a
    # parallel kernel whose loops are all sequential (a recurrence) compiles
    # without Numba's warning that it found nothing to run in parallel.
    compile_signature = dispatcher.compile

    def compile_with_policy(sig: Any) -> Any:
        with warnings.catch_warnings():
            if parallel:
                warnings.filterwarnings(
                    "ignore",
                    message=r"(?s).*parallel=True.*no transformation",
                    category=numba.NumbaPerformanceWarning,
                )
            if not with_vector_math:
                return compile_signature(sig)
            with vector_math(fn.__qualname__ if vector_library else None):
                return compile_signature(sig)

    dispatcher.compile = compile_with_policy
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
        if loops and vector_math_enabled():  # its machine code calls libmvec
            options = dict(options, vector_math="libmvec")
        elif not loops and vector_math_requested():
            # its calls are marked for the vectorize loops that inline it (the
            # check imports nothing: a warm start must not import Numba)
            options = dict(options, vector_math="marked")
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

    warm.import_numba()  # before unpickling the index, which imports its parts
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
