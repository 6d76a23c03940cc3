"""The CUDA target: grid-stride kernels on ``numba-cuda``, imported lazily.

A CUDA kernel runs one scalar kernel per element, like the CPU loops of
:mod:`symdiff.vectorize`; its module text comes from the same generator
(:func:`symdiff.vectorize.loop_source`), with the scalar kernel written *inside*
the CUDA kernel as an inner function::

    def f_grad_cuda(x, y, x_bar, y_bar):
        def f_grad(x, y):
            ...                      # the scalar kernel's text, unchanged
            return t3, t4

        for i in range(cuda.grid(1), x_bar.shape[0], cuda.gridsize(1)):
            x_bar[i], y_bar[i] = f_grad(x[i], y[i])

Numba inlines the inner function.  A separate ``cuda.jit(device=True)`` function
would read the compute capability of the current GPU when the kernel is typed,
so the kernel could not be compiled to PTX on a machine without one; this way
:meth:`CudaLoop.ptx` compiles it anywhere numba-cuda and its NVVM are installed.

Arguments that are host (NumPy) arrays are copied to the device and the results
copied back; device arrays (numba-cuda's, or any object with
``__cuda_array_interface__``: CuPy, PyTorch) are used in place and the results
stay on the device.  With ``NUMBA_ENABLE_CUDASIM=1`` Numba's CUDA simulator runs
the same kernels in Python (slowly), which is how the tests run without a GPU.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import linecache
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from symdiff.backend.cuda_program import numpy_helpers
from symdiff.backend.jit import IEEE_MATH, synthetic_filename
from symdiff.errors import ArgumentError
from symdiff.ir.node import topological
from symdiff.ir.ops import OPS
from symdiff.kernel import Kernel

#: Threads per block.  Blocks: enough for every element, at most BLOCKS_PER_SM
#: per multiprocessor (the grid-stride loop covers the rest).
THREADS = 256
BLOCKS_PER_SM = 32
#: Compute capability of PTX when numba-cuda does not say.
DEFAULT_CC = (7, 5)
#: The simulator runs each thread as a Python thread: keep its grids small.
SIMULATOR_THREADS = 8
SIMULATOR_BLOCKS = 2

INSTALL_HINT = (
    "install numba-cuda (pip install 'symdiff[cuda]', or numba-cuda[cu12] / "
    "[cu13] to match your driver)"
)


class CudaUnavailableError(ArgumentError):
    """The CUDA target cannot run here: numba-cuda is missing or finds no GPU."""


def numba_cuda() -> Any:
    """``numba.cuda`` from numba-cuda, or a clear error."""
    from symdiff.backend.warm import import_numba

    import_numba()  # not beside the warm start's thread (see there)
    try:
        from numba import cuda
    except ImportError as exc:
        raise CudaUnavailableError(
            f"target='cuda' needs numba-cuda, which is not installed ({exc}); "
            f"{INSTALL_HINT}"
        ) from None
    _load_cuda_registries(cuda)
    return cuda


_registries_loaded = False


def _load_cuda_registries(cuda: Any) -> None:
    """Load numba-cuda's typing and lowering registries once, with NumPy
    aliases it still names where the installed NumPy removed them.

    numba-cuda (0.30 and earlier) registers an implementation for
    ``np.row_stack`` when it first compiles a kernel; NumPy 2.5 removed that
    alias of ``np.vstack``, so every CUDA compile failed with ``AttributeError:
    module 'numpy' has no attribute 'row_stack'``.  The first compile (a
    one-line device function, to PTX: no GPU needed) runs with the alias in
    place; it is removed again at once, so NumPy is left as it was.  Nothing is
    done in the simulator, which loads no registries, or where NumPy has the
    alias.
    """
    global _registries_loaded
    if _registries_loaded:
        return
    _registries_loaded = True
    if hasattr(np, "row_stack") or getattr(cuda.config, "ENABLE_CUDASIM", False):
        return
    np.row_stack = np.vstack  # type: ignore[attr-defined]
    try:
        cuda.compile_ptx(_identity, "(float64,)", device=True, cc=DEFAULT_CC)
    finally:
        del np.row_stack  # type: ignore[attr-defined]


def _identity(value: float) -> float:
    return value


def simulated() -> bool:
    """Whether ``numba.cuda`` is Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1,
    read when Numba is first imported)."""
    config = getattr(numba_cuda(), "config", None)
    return bool(getattr(config, "ENABLE_CUDASIM", False))


def _where(kernel: Kernel) -> str:
    """``f`` (file.py:line): the user's function a kernel comes from."""
    return f"`{kernel.traced.name}` ({kernel.traced.location})"


def check_scalar_kernel(kernel: Kernel) -> None:
    """Raise a clear error if ``kernel`` (of numbers: vectorize calls it per
    element) allocates arrays, which a CUDA thread cannot."""
    if any(n.shape for n in topological(kernel.outputs)):
        raise ArgumentError(
            f"{_where(kernel)} cannot run one element per CUDA thread: its kernel "
            "allocates arrays (a loop's tape, which a thread cannot allocate). Call "
            "the transform without vectorize (target='cuda' then runs it as an array "
            "program), use target='cpu' or 'parallel', or write the loop with a "
            "constant trip count of at most 8 (unrolled)"
        )


def inner_function(
    kernel: Kernel, alias: str, taken: set[str]
) -> tuple[list[str], list[str]]:
    """The scalar kernel as an inner function of a CUDA kernel: its imports and
    its lines, indented one level, ``def alias(...)``.  NumPy calls that
    numba-cuda cannot compile become inner helper functions (their names are
    added to ``taken``); anything else from NumPy is reported."""
    lines = kernel.source.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("def "))
    imports = [line for line in lines[:start] if line.startswith(("import ", "from "))]
    body = lines[start:]
    body[0] = re.sub(r"^def [A-Za-z0-9_]+\(", f"def {alias}(", body[0])
    text = "\n".join(body)
    taken |= {line.split()[-1] for line in imports}
    text, helpers, left = numpy_helpers(text, taken)
    if any("math." in line for line in helpers) and "import math" not in imports:
        imports.append("import math")
        taken.add("math")
    if left:
        raise ArgumentError(
            f"{_where(kernel)} cannot run on CUDA: its kernel calls "
            f"{', '.join(f'np.{f}' for f in left)}, which numba-cuda does not "
            "compile. Use target='cpu' or 'parallel'"
        )
    imports = [line for line in imports if line != "import numpy as np"]
    core = [f"    {line}" if line else "" for line in [*helpers, *text.splitlines()]]
    return sorted(imports), core


@dataclass
class CudaLoop:
    """One generated CUDA kernel: its text, the plain function, and (on first
    launch) the numba-cuda dispatcher."""

    name: str
    source: str
    python: Callable[..., Any]
    _dispatcher: Any = field(default=None, repr=False)

    @property
    def dispatcher(self) -> Any:
        if self._dispatcher is None:
            self._dispatcher = numba_cuda().jit(self.python)
        return self._dispatcher

    def ptx(self, signature: str, cc: tuple[int, int] | None = None) -> str:
        """The kernel compiled to PTX for ``signature`` (numba-cuda's type
        string, ``"(float64[::1], float64[::1])"``) and compute capability ``cc``
        (numba-cuda's default, ``NUMBA_CUDA_DEFAULT_PTX_CC``, if None: not the
        current GPU's, so that it is the same with or without one).  Needs no
        GPU; not available in the simulator."""
        return compile_ptx(self.python, signature, cc)

    def run(
        self,
        size: int,
        arrays: list[Any],
        out_dtypes: list[Any],
        given: list[Any] | None = None,
    ) -> list[Any]:
        """Run the kernel over ``size`` elements of ``arrays`` (on the device);
        returns the output device arrays: those ``given`` (flat, of
        ``out_dtypes``), new ones where it has None or is None."""
        cuda = numba_cuda()
        given = given or [None] * len(out_dtypes)
        with _gpu_errors():
            outs = [
                cuda.device_array(size, dtype=t) if g is None else g
                for g, t in zip(given, out_dtypes, strict=True)
            ]
            if size and outs:
                threads, blocks = _grid(size)
                self.dispatcher[blocks, threads](*arrays, *outs)
        return outs


def _grid(size: int) -> tuple[int, int]:
    if simulated():
        threads = min(SIMULATOR_THREADS, size)
        return threads, min(-(-size // threads), SIMULATOR_BLOCKS)
    return THREADS, min(-(-size // THREADS), BLOCKS_PER_SM * _multiprocessors())


@functools.cache
def _multiprocessors() -> int:
    device = numba_cuda().get_current_device()
    return int(device.MULTIPROCESSOR_COUNT)


@contextlib.contextmanager
def _gpu_errors() -> Iterator[None]:
    """A missing driver or GPU, met while copying or launching, as a
    :class:`CudaUnavailableError` (other errors go on as they are)."""
    try:
        yield
    except Exception as exc:
        if type(exc).__name__ in ("CudaSupportError", "CudaDriverError") or (
            "CUDA driver" in str(exc)
        ):
            raise CudaUnavailableError(
                f"target='cuda' found no usable GPU ({str(exc).strip()}). Use "
                "target='cpu' or 'parallel', or set NUMBA_ENABLE_CUDASIM=1 to run "
                "the kernels in Numba's CUDA simulator"
            ) from None
        raise


def load(source: str, name: str) -> Callable[..., Any]:
    """Execute a CUDA kernel's module; its text is registered with linecache.
    In the simulator, ``math`` gets IEEE semantics (``sqrt(-1)`` is NaN, as on
    the GPU, not a Python exception)."""
    filename = synthetic_filename(name, source)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"__name__": f"symdiff_generated_{name}"}
    numba_cuda()
    exec(compile(source, filename, "exec"), namespace)
    if simulated():
        namespace["int"] = OPS["int"].impl  # int(NaN): no Python exception
        if "math" in namespace:
            namespace["math"] = IEEE_MATH
    if "THREADS" in namespace:  # an array program (symdiff.backend.cuda_program)
        if simulated():
            namespace["THREADS"] = SIMULATOR_THREADS
            namespace["BLOCKS"] = SIMULATOR_BLOCKS
        for key, value in list(namespace.items()):
            if type(value).__name__ in _DISPATCHERS:
                namespace[key] = ProgramKernel(key, value)
    fn = namespace[name]
    assert callable(fn)
    return fn  # type: ignore[no-any-return]


_DISPATCHERS = ("CUDADispatcher", "FakeCUDAKernel")


class ProgramKernel:
    """A kernel of an array program: launched like numba-cuda's dispatcher
    (``kernel[blocks, threads](*args)``), it also keeps the argument types of
    its launches, for :meth:`ptx`."""

    def __init__(self, name: str, dispatcher: Any) -> None:
        self.name = name
        self.dispatcher = dispatcher
        self.signatures: dict[str, None] = {}  # in order of first launch

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        launch = self.dispatcher[grid]

        def run(*args: Any) -> Any:
            self.signatures.setdefault(arg_signature(args))
            return launch(*args)

        return run

    def ptx(self, signature: str, cc: tuple[int, int] | None = None) -> str:
        """The kernel compiled to PTX for ``signature`` (see :meth:`CudaLoop.ptx`)."""
        return compile_ptx(self.dispatcher.py_func, signature, cc)


def compile_ptx(
    kernel: Callable[..., Any], signature: str, cc: tuple[int, int] | None = None
) -> str:
    """The plain function of a CUDA kernel compiled to PTX (see
    :meth:`CudaLoop.ptx`)."""
    cuda = numba_cuda()
    if simulated():
        raise CudaUnavailableError(
            "PTX cannot be generated in Numba's CUDA simulator "
            "(NUMBA_ENABLE_CUDASIM=1): run without it"
        )
    if cc is None:
        cc = tuple(getattr(cuda.config, "CUDA_DEFAULT_PTX_CC", DEFAULT_CC))
    ptx, _ = cuda.compile_ptx(kernel, signature, cc=cc, fastmath=False)
    return str(ptx)


def program_ptx(host: Callable[..., Any], cc: tuple[int, int] | None = None) -> str:
    """PTX of every kernel of an array program, for the argument types it was
    launched with, each after a ``// name(signature)`` line."""
    kernels = [k for k in host.__globals__.values() if isinstance(k, ProgramKernel)]
    parts = [
        f"// {k.name}{sig}\n{k.ptx(sig, cc)}" for k in kernels for sig in k.signatures
    ]
    if not parts:
        raise ArgumentError(
            "the PTX of an array program is compiled for the argument types its "
            "kernels were launched with: call the function once first"
        )
    return "\n".join(parts)


#: NumPy dtype name -> numba-cuda's type name (the same for any other dtype).
_NUMBA_DTYPES = {"float64": "float64", "int64": "int64", "bool": "boolean"}


def arg_signature(args: tuple[Any, ...]) -> str:
    """numba-cuda's type string for kernel arguments: device arrays (C-contiguous
    or not) and numbers."""
    out = []
    for a in args:
        if is_device_array(a):
            name = np.dtype(a.dtype).name
            dtype = _NUMBA_DTYPES.get(name, name)
            ndim = len(a.shape)
            if a.is_c_contiguous():
                axes = [":"] * (ndim - 1) + ["::1"]
            else:
                axes = [":"] * ndim
            out.append(f"{dtype}[{', '.join(axes)}]")
        elif isinstance(a, (bool, np.bool_)):
            out.append("boolean")
        elif isinstance(a, (int, np.integer)):
            out.append("int64")
        else:
            out.append("float64")
    return "(" + ", ".join(out) + ("," if len(out) == 1 else "") + ")"


def host_call(host: Callable[..., Any], dtypes: list[str]) -> Callable[..., Any]:
    """Call the host function of an array program
    (:mod:`symdiff.backend.cuda_program`) with host or device arguments.

    Host arrays are copied to the device (C-contiguous) and the array results
    copied back; if any argument is a device array, the results stay on the
    device.  Floats become ``numpy.float64`` (IEEE division on the host, as in
    the kernels); NumPy scalar results become Python numbers.
    """
    names = list(inspect.signature(host).parameters)
    types = [np.dtype(np.bool_ if t == "bool" else t) for t in dtypes]

    def run(*args: Any) -> Any:
        on_device = any(is_device_array(a) for a in args)
        values = []
        with _gpu_errors():
            for name, a, t in zip(names, args, types, strict=True):
                if is_device_array(a):
                    a = device_view(a)
                    if a.size and not a.is_c_contiguous():
                        raise ArgumentError(
                            f"device array `{name}` is not C-contiguous; pass a "
                            "contiguous copy"
                        )
                    if np.dtype(a.dtype) != t:
                        raise ArgumentError(
                            f"device array `{name}` holds {np.dtype(a.dtype)}; the "
                            f"kernel reads {t} (convert it on the device)"
                        )
                elif isinstance(a, np.ndarray):
                    a = numba_cuda().to_device(np.ascontiguousarray(a, dtype=t))
                elif isinstance(a, float):
                    a = np.float64(a)
                values.append(a)
            with np.errstate(all="ignore"):
                out = host(*values)
            return _results(out, on_device)

    return run


def _results(value: Any, on_device: bool) -> Any:
    if isinstance(value, tuple):
        return tuple(_results(v, on_device) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    if not on_device and is_device_array(value):
        return value.copy_to_host()
    return value


# -- arguments ------------------------------------------------------------------------
def is_device_array(value: Any) -> bool:
    """A CUDA device array: numba-cuda's (or the simulator's), CuPy's, a CUDA
    PyTorch tensor... (checked without importing numba-cuda)."""
    return hasattr(value, "__cuda_array_interface__") or hasattr(value, "copy_to_host")


def to_device(array: np.ndarray) -> Any:
    """A host array copied to the device."""
    cuda = numba_cuda()
    with _gpu_errors():
        return cuda.to_device(array)


def device_view(value: Any) -> Any:
    """A device array as numba-cuda's own (CuPy arrays and PyTorch tensors are
    wrapped through ``__cuda_array_interface__``, not copied)."""
    if hasattr(value, "copy_to_host"):
        return value
    wrap = getattr(numba_cuda(), "as_cuda_array", None)
    if wrap is None:
        raise CudaUnavailableError(
            "Numba's CUDA simulator cannot use arrays of other libraries "
            "(__cuda_array_interface__); pass numba.cuda device arrays"
        )
    return wrap(value)


def flat_device_array(name: str, value: Any) -> Any:
    """A device array as the flat, C-contiguous view the kernel indexes."""
    if len(value.shape) != 1:
        if not value.is_c_contiguous():
            raise ArgumentError(
                f"device array `{name}` is not C-contiguous; pass a contiguous copy"
            )
        value = value.reshape(value.size)
    return value


def signature(dtypes: list[Any]) -> str:
    """numba-cuda's type string for 1-D C-contiguous arrays of these dtypes."""
    types = (_NUMBA_DTYPES[np.dtype(t).name] for t in dtypes)
    return "(" + ", ".join(f"{t}[::1]" for t in types) + ")"


__all__ = [
    "CudaLoop",
    "CudaUnavailableError",
    "ProgramKernel",
    "arg_signature",
    "check_scalar_kernel",
    "device_view",
    "flat_device_array",
    "host_call",
    "inner_function",
    "is_device_array",
    "load",
    "numba_cuda",
    "program_ptx",
    "signature",
    "simulated",
    "to_device",
]
