"""``symdiff.vectorize``: a scalar transform as a batched, NumPy-style function.

The scalar kernel (one per argument-dtype signature, as :class:`~symdiff.Compiled`
builds them) is called once per element from a generated Numba loop::

    def f_grad_cpu(x, y, x_bar, y_bar):
        for i in range(x_bar.shape[0]):
            x_bar[i], y_bar[i] = f_grad(x[i], y[i])

``target="parallel"`` writes ``numba.prange`` instead of ``range`` and compiles with
``parallel=True``.  Broadcasting happens in Python before the loop: an argument with
the broadcast shape is passed flat (without a copy when it is C-contiguous and of the
kernel's dtype), a one-element argument is read once before the loop, and any other
one is expanded to the broadcast shape.  Each scalar output gets its own
preallocated array; the results come back in the kernel's nested structure,
reshaped to the broadcast shape.

The loop's source is deterministic, registered with :mod:`linecache` like the
kernels' (tracebacks and ``inspect`` show it) and readable as ``.source``.  Loops
are cached per kernel, target and set of one-element arguments.
"""

from __future__ import annotations

import functools
import linecache
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from symdiff import __version__
from symdiff.backend import warm
from symdiff.backend.cuda import CudaLoop, is_device_array
from symdiff.backend.jit import njit, synthetic_filename
from symdiff.compiled import OMITTED, Compiled, io_dtypes, reject_symdiff_function
from symdiff.custom import is_module_global
from symdiff.errors import ArgumentError
from symdiff.kernel import Kernel
from symdiff.opt.schedule import RESERVED
from symdiff.transforms import leaves, rebuild

#: Targets of :func:`vectorize`.
TARGETS = ("cpu", "parallel", "cuda")

# The generated loops: per id(kernel), per (target, which arguments are broadcast
# from one element, parameter names).  A kernel's entry goes when the kernel is
# garbage-collected (the loops hold its Numba dispatcher, not the kernel).
_LOOPS: dict[
    int, dict[tuple[str, tuple[bool, ...], tuple[str, ...]], _Loop | CudaLoop]
] = {}

# NumPy dtype kind -> a sample scalar, from which Compiled picks the kernel dtype.
_SAMPLES: dict[str, Any] = {
    "b": np.bool_(False),
    "i": np.int64(0),
    "u": np.int64(0),
    "f": np.float64(0.0),
}


def vectorize(fun: Any = OMITTED, *, target: str | None = None) -> Any:
    """Turn a scalar transform into a batched, NumPy-style function.

    Parameters
    ----------
    fun : Compiled or callable, optional
        A transform (``symdiff.grad``, ``value_and_grad``, ``jit``, ``jacobian``,
        ``hessian``) or a plain function of scalars, which is compiled with
        :func:`symdiff.jit`.  Omit it to use ``vectorize(...)`` as a decorator.
    target : {"cpu", "parallel", "cuda"}, optional
        ``"cpu"``: one thread; ``"parallel"``: a ``numba.prange`` loop over
        Numba's threads (``NUMBA_NUM_THREADS``); ``"cuda"``: a grid-stride CUDA
        kernel (needs numba-cuda; host arrays are copied to the GPU and back,
        device arrays are used in place and the results stay on the device).
        By default the transform's own target (``grad(f, target="parallel")``),
        else ``"cpu"``.

    Returns
    -------
    Vectorized
        Called with arrays (or scalars) of broadcastable shapes, it returns the
        transform's result structure with an array of the broadcast shape at
        each leaf (NumPy scalars for 0-d inputs, as ufuncs do).  Dask arrays
        give Dask arrays, computed chunk by chunk.  ``.source`` shows the
        generated loop.

    Examples
    --------
    >>> import numpy as np, symdiff
    >>> def f(x, y):
    ...     return x * x * y
    >>> gx, gy = symdiff.vectorize(symdiff.grad(f, argnums=(0, 1)))(
    ...     np.array([1.0, 2.0]), 3.0)
    >>> gx, gy
    (array([ 6., 12.]), array([1., 4.]))
    """
    if target is not None and target not in TARGETS:
        raise ArgumentError(
            f"unknown target {target!r} for symdiff.vectorize: choose 'cpu', "
            "'parallel' or 'cuda'"
        )
    if fun is OMITTED:
        return lambda f: Vectorized(f, target)
    return Vectorized(fun, target)


def _target_of(fun: Any) -> str:
    """The default target: the transform's own, else ``"cpu"``."""
    if isinstance(fun, Vectorized):
        return fun._target
    target = getattr(fun, "_target", "cpu") if isinstance(fun, Compiled) else "cpu"
    return target if target in TARGETS else "cpu"


def _as_compiled(fun: Any, target: str) -> Compiled:
    if isinstance(fun, Vectorized):
        return fun._compiled
    if isinstance(fun, Compiled):
        if fun._spec.kind in ("jvp", "vjp", "hvp"):
            raise ArgumentError(
                f"cannot vectorize the {fun._spec.kind} of `{_name(fun)}`"
            )
        if target != "cuda" and fun._target != "cpu":
            # The loop calls a Numba kernel: rebuild the transform for the CPU.
            return Compiled(fun._fun, fun._spec, "cpu")
        return fun
    if not callable(fun):
        raise ArgumentError(
            "symdiff.vectorize expects a function or a symdiff transform, got "
            + ("None" if fun is None else f"a `{type(fun).__name__}`")
            + "\n  help: symdiff.vectorize(symdiff.grad(f)), or decorate a function "
            "with @symdiff.vectorize or @symdiff.vectorize(target=...)"
        )
    reject_symdiff_function(fun, "vectorize")
    from symdiff.api import jit

    compiled: Compiled = jit(fun)
    return compiled


def _name(fun: Any) -> str:
    return str(getattr(fun, "__name__", "f"))


class Vectorized:
    """A scalar transform applied elementwise to arrays (see :func:`vectorize`)."""

    def __init__(self, fun: Any, target: str | None = None):
        target = target or _target_of(fun)
        self._compiled = _as_compiled(fun, target)
        self._target = target
        self._last: _Plan | None = None
        self._name = _name(self._compiled)
        self._params = list(self._compiled._signature.parameters)
        self._plans: dict[tuple[tuple[str, ...], tuple[bool, ...]], _Plan] = {}
        functools.update_wrapper(self, self._compiled, updated=())

    @property
    def target(self) -> str:
        return self._target

    @property
    def transform(self) -> Compiled:
        """The scalar transform called per element."""
        return self._compiled

    # -- calling --------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        compiled = self._compiled
        if kwargs or len(args) != compiled._nparams:
            args = compiled._bind(args, kwargs)
        if any(hasattr(a, "__dask_graph__") for a in args):
            return self._dask(args)
        on_device = [self._target == "cuda" and is_device_array(a) for a in args]
        if any(on_device):
            from symdiff.backend.cuda import device_view

            args = tuple(
                device_view(a) if d else a for a, d in zip(args, on_device, strict=True)
            )
        arrays = [
            a if d else _as_array(self._name, n, a)
            for n, a, d in zip(self._params, args, on_device, strict=True)
        ]
        shape = arrays[0].shape if arrays else ()
        if any(a.shape != shape for a in arrays):
            shape = _broadcast_shape(self._name, self._params, arrays)
        size = math.prod(shape)
        kinds = tuple(np.dtype(a.dtype).kind for a in arrays)
        scalar = tuple(a.size == 1 and size != 1 for a in arrays)
        plan = self._plan(kinds, scalar)
        kernel, loop, in_types, out_types = plan
        self._last = plan
        if isinstance(loop, _Loop):
            flat = [
                _flat(a, shape, t, s)
                for a, t, s in zip(arrays, in_types, scalar, strict=True)
            ]
            outs: list[Any] = [np.empty(size, t) for t in out_types]
            if size and outs:
                loop.compiled(*flat, *outs)
        else:
            outs = self._cuda(plan, arrays, on_device, scalar, shape)
        if any(on_device) and shape:
            shaped = [o.reshape(shape) for o in outs]
        else:
            shaped = [_host(o).reshape(shape)[()] for o in outs]
        if not isinstance(kernel.returns, tuple):
            return shaped[0]
        results = iter(shaped)
        return rebuild(kernel.returns, lambda _: next(results))

    def _cuda(
        self,
        plan: _Plan,
        arrays: list[Any],
        on_device: list[bool],
        scalar: tuple[bool, ...],
        shape: tuple[int, ...],
    ) -> list[Any]:
        """Run the CUDA kernel: host arrays are copied in, device arrays checked
        and used in place; the outputs are device arrays."""
        from symdiff.backend import cuda

        _, loop, in_types, out_types = plan
        assert isinstance(loop, CudaLoop)
        flat = []
        given = zip(self._params, arrays, in_types, on_device, scalar, strict=True)
        for name, a, t, d, one in given:
            if not d:
                flat.append(cuda.to_device(_flat(a, shape, t, one)))
                continue
            if np.dtype(a.dtype) != np.dtype(t) or (a.shape != shape and not one):
                one_ok = " (or one element)" if math.prod(shape) != 1 else ""
                want = f"shape {shape}{one_ok}"
                raise ArgumentError(
                    f"device array `{name}` of `{self._name}` has dtype {a.dtype} "
                    f"and shape {a.shape}; the kernel takes {np.dtype(t)} arrays of "
                    f"the broadcast {want}: device arrays are used in place, not "
                    "converted or broadcast (host arrays are)"
                )
            flat.append(cuda.flat_device_array(name, a))
        return loop.run(math.prod(shape), flat, out_types)

    def _dask(self, args: tuple[Any, ...]) -> Any:
        """Dask arrays in: the batched function applied chunk by chunk
        (``dask.array.apply_gufunc`` with an elementwise signature, so Dask
        broadcasts and aligns the chunks), Dask arrays out."""
        import dask.array as da

        # the kernel for the arguments' dtypes, checked as in a NumPy call
        kinds = tuple(
            _as_array(self._name, name, np.empty(0, _dtype(a))).dtype.kind
            for name, a in zip(self._params, args, strict=True)
        )
        kernel, _, _, out_types = self._plan(kinds, (False,) * len(args))

        def flat_outputs(*chunks: Any) -> Any:
            out = leaves(self(*chunks))
            return out[0] if len(out) == 1 else tuple(out)

        # Dask's loop dimensions must be chunked alike: broadcast_arrays
        # broadcasts the array arguments and unifies their chunks.
        positions = [k for k, a in enumerate(args) if np.ndim(a)]
        shaped = da.broadcast_arrays(*(args[k] for k in positions))
        args = tuple(
            shaped[positions.index(k)] if k in positions else a
            for k, a in enumerate(args)
        )
        ins = ",".join("()" for _ in args)
        outs = ",".join("()" for _ in out_types)
        results = da.apply_gufunc(
            flat_outputs,
            f"{ins}->{outs}",
            *args,
            output_dtypes=out_types if len(out_types) > 1 else out_types[0],
            vectorize=False,
        )
        if not isinstance(kernel.returns, tuple):
            return results
        it = iter((results,) if len(out_types) == 1 else results)
        return rebuild(kernel.returns, lambda _: next(it))

    def _plan(self, kinds: tuple[str, ...], scalar: tuple[bool, ...]) -> _Plan:
        """The kernel, loop, argument and output dtypes for arrays of these kinds
        (checking them, e.g. that no bool is differentiated); made once."""
        plan = self._plans.get((kinds, scalar))
        if plan is not None:
            return plan
        dtypes, _ = self._compiled._dtypes(tuple(_SAMPLES[k] for k in kinds))
        kernel = self._compiled._kernel(dtypes)
        loop = _loop(kernel, self._target, self._params, scalar)
        plan = kernel, loop, *io_dtypes(kernel)
        self._plans[kinds, scalar] = plan
        return plan

    # -- inspection -----------------------------------------------------------------
    def _current(self) -> _Plan:
        if self._last is None:
            kinds = {"float64": "f", "int64": "i", "bool": "b"}
            dtypes = self._compiled._annotated_dtypes()
            scalar = (False,) * len(dtypes)
            self._last = self._plan(tuple(kinds[d] for d in dtypes), scalar)
        return self._last

    @property
    def source(self) -> str:
        """The generated loop: the last one called, else the one for arrays of
        the same shape, float64 but where a parameter is annotated ``int`` or
        ``bool``."""
        return self._current()[1].source

    @property
    def python(self) -> Callable[..., Any]:
        """The generated loop as plain Python (it still calls the Numba kernel)."""
        return self._current()[1].python

    @property
    def kernel(self) -> Kernel:
        """The scalar kernel the loop calls."""
        return self._current()[0]

    def ptx(self, cc: tuple[int, int] | None = None) -> str:
        """The CUDA kernel (``target="cuda"``) compiled to PTX for compute
        capability ``cc`` (numba-cuda's default if None), for the last argument
        types called, else float64 arrays.  Needs numba-cuda, not a GPU."""
        if self._target != "cuda":
            raise ArgumentError(
                f"PTX is generated for target='cuda'; this is target={self._target!r}"
            )
        from symdiff.backend import cuda

        _, loop, in_types, out_types = self._current()
        assert isinstance(loop, CudaLoop)
        return loop.ptx(cuda.signature([*in_types, *out_types]), cc)

    def __reduce__(self) -> str | tuple[Any, ...]:
        """Pickled by reference when it is its module's global (decorated),
        else as its transform and target (loops are built again)."""
        if is_module_global(self):
            return str(self.__qualname__)
        return (Vectorized, (self._compiled, self._target))

    def __repr__(self) -> str:
        return f"<symdiff vectorize(target={self._target!r}) of {self._compiled!r}>"


#: A plan: the kernel, its loop, the argument and the output dtypes.
_Plan = tuple[Kernel, "_Loop | CudaLoop", list[type], list[type]]


# -- arguments ----------------------------------------------------------------------
def _as_array(fname: str, name: str, value: Any) -> np.ndarray:
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise ArgumentError(
            f"argument `{name}` of `{fname}` is not an array of numbers: {exc}"
        ) from None
    kind = array.dtype.kind
    if kind not in _SAMPLES:
        what = "complex numbers" if kind == "c" else f"dtype {array.dtype}"
        raise ArgumentError(
            f"argument `{name}` of `{fname}` has {what}; vectorize takes numbers "
            "or arrays of bool, int or float"
        )
    if kind == "u" and array.dtype.itemsize == 8:
        array = array.astype(np.float64)  # as NumPy promotes uint64 with int64
    return array


def _broadcast_shape(
    fname: str, names: list[str], arrays: list[np.ndarray]
) -> tuple[int, ...]:
    try:
        return np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        shapes = ", ".join(
            f"`{n}` has shape {a.shape}" for n, a in zip(names, arrays, strict=True)
        )
        raise ArgumentError(
            f"the arguments of `{fname}` cannot be broadcast together: {shapes}"
        ) from None


def _flat(
    array: np.ndarray, shape: tuple[int, ...], dtype: type, scalar: bool
) -> np.ndarray:
    """The argument as a C-contiguous 1-D array of the kernel's dtype: one element
    for a broadcast scalar, else one per element of the broadcast shape."""
    if scalar:
        return array.reshape(1).astype(dtype, copy=False)
    if array.shape != shape:
        array = np.broadcast_to(array, shape)
    return np.ascontiguousarray(array, dtype=dtype).reshape(-1)


def _dtype(value: Any) -> np.dtype[Any]:
    """An argument's dtype, as NumPy would make it an array."""
    return np.dtype(value.dtype) if hasattr(value, "dtype") else np.asarray(value).dtype


def _host(value: Any) -> np.ndarray:
    return value.copy_to_host() if hasattr(value, "copy_to_host") else value


# -- the generated loop -------------------------------------------------------------
@dataclass
class _Loop:
    name: str
    source: str
    python: Callable[..., Any]
    compiled: Any


def _loop(
    kernel: Kernel, target: str, params: list[str], scalar: tuple[bool, ...]
) -> _Loop | CudaLoop:
    loops = _LOOPS.get(id(kernel))
    if loops is None:
        loops = _LOOPS[id(kernel)] = {}
        weakref.finalize(kernel, _LOOPS.pop, id(kernel), None)
    key = (target, scalar, tuple(params))
    loop = loops.get(key)
    if loop is None:
        if target == "cuda":
            from symdiff.backend import cuda

            cuda.check_scalar_kernel(kernel)
            name, source = loop_source(kernel, target, params, scalar)
            loop = cuda.CudaLoop(name, source, cuda.load(source, name))
        else:
            if kernel.device:
                raise ArgumentError(
                    f"vectorize(target={target!r}) of a target='cuda' transform of "
                    f"`{kernel.traced.name}`, whose kernel is a CUDA array program "
                    "(its gradient tapes a loop): make the transform with "
                    f"target={target!r}"
                )
            name, source = loop_source(kernel, target, params, scalar)
            warm.import_numba()  # the loop module imports it
            python = _load(source, name, kernel)
            loop = _Loop(
                name, source, python, njit(python, parallel=target == "parallel")
            )
        loops[key] = loop
    return loop


def cuda_loop(kernel: Kernel, params: list[str]) -> CudaLoop:
    """The CUDA kernel running ``kernel`` once per element of its arrays."""
    loop = _loop(kernel, "cuda", params, (False,) * len(params))
    assert isinstance(loop, CudaLoop)
    return loop


#: Names the generated loop module reads besides its own: the kernels' reserved
#: names and the modules the loop imports.  Parameters and the kernel are renamed
#: around them.
_RESERVED = RESERVED | {"numba", "cuda"}


def kernel_alias(kernel: Kernel) -> str:
    """The name the loop calls ``kernel`` by: its own, unless that would hide a
    builtin or a module the loop uses (a function named ``range``)."""
    name = kernel.name
    return f"{name}_kernel" if name in _RESERVED else name


def loop_source(
    kernel: Kernel, target: str, params: list[str], scalar: tuple[bool, ...]
) -> tuple[str, str]:
    """The name and module text of the loop calling ``kernel`` per element
    (for ``"cuda"``: a grid-stride CUDA kernel with ``kernel`` as an inner
    function, see :mod:`symdiff.backend.cuda`)."""
    alias = kernel_alias(kernel)
    taken = set(_RESERVED) | {alias}
    core_imports: list[str] = []
    core: list[str] = []
    if target == "cuda":
        from symdiff.backend.cuda import inner_function

        core_imports, core = inner_function(kernel, alias, taken)

    def fresh(base: str, fallback: str) -> str:
        name = base if base.isidentifier() else fallback
        while name in taken:
            name += "_"
        taken.add(name)
        return name

    i = fresh("i", "i")
    args = [fresh(p, f"a{k}") for k, p in enumerate(params)]
    outs = [
        fresh(f"{o}_out" if o in taken else o, f"out{k}")
        for k, o in enumerate(kernel.output_names)
    ]
    name = fresh(f"{kernel.name}_{target}", f"f_{target}")
    hoisted = {a: fresh(f"{a}0", "a0") for a, s in zip(args, scalar, strict=True) if s}

    counter = iter(outs)
    targets = _unpacked(rebuild(kernel.returns, lambda _: f"{next(counter)}[{i}]"))
    call_args = ", ".join(hoisted.get(a, f"{a}[{i}]") for a in args)
    length = f"{outs[0]}.shape[0]" if outs else "0"
    loop_range = {
        "cpu": f"range({length})",
        "parallel": f"numba.prange({length})",
        "cuda": f"range(cuda.grid(1), {length}, cuda.gridsize(1))",
    }[target]
    what = "CUDA kernel" if target == "cuda" else f"vectorize(target='{target}')"
    header = [
        f"# generated by symdiff {__version__}: {what} of `{kernel.name}`",
        f"# one call of `{kernel.name}` per element; the output arrays are "
        "preallocated",
    ]
    if target == "cuda":
        header.append(
            "# a grid-stride loop: thread k computes elements k, k + gridsize, ..."
        )
    if hoisted:
        header.append(
            f"# broadcast from one element: {', '.join(f'`{a}`' for a in hoisted)}"
        )
    lines = [*header]
    if target == "parallel":
        lines.append("import numba")
    if target == "cuda":
        lines += [*core_imports, "from numba import cuda"]
    lines += ["", "", f"def {name}({', '.join(args + outs)}):"]
    if core:
        lines += [*core, ""]
    lines += [f"    {h} = {a}[0]" for a, h in hoisted.items()]
    lines.append(f"    for {i} in {loop_range}:")
    lines.append(f"        {targets} = {alias}({call_args})")
    return name, "\n".join(lines) + "\n"


def _unpacked(value: Any) -> str:
    """Assignment targets for a nested tuple of target strings."""
    if isinstance(value, tuple):
        inner = ", ".join(
            f"({_unpacked(v)})" if isinstance(v, tuple) else _unpacked(v) for v in value
        )
        return inner + "," if len(value) == 1 else inner
    return str(value)


def _load(source: str, name: str, kernel: Kernel) -> Callable[..., Any]:
    """Execute the loop's module with the kernel's dispatcher as a global."""
    filename = synthetic_filename(name, source)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {
        "__name__": f"symdiff_generated_{name}",
        kernel_alias(kernel): kernel.compiled,
    }
    exec(compile(source, filename, "exec"), namespace)
    fn = namespace[name]
    assert callable(fn)
    return fn  # type: ignore[no-any-return]


__all__ = ["TARGETS", "Vectorized", "loop_source", "vectorize"]
