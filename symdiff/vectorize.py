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

Static arguments are not batched: a string or None (``mode="sq"``, given or a
default), a function, the object of a bound method, as the transform of a
``functools.partial`` or a bound method binds them.  The kernel is specialised to
them, as in a call of the transform, and the loop passes its placeholder (0) in
their place.

The loop's source is deterministic, registered with :mod:`linecache` like the
kernels' (tracebacks and ``inspect`` show it) and readable as ``.source``.  Loops
are cached per kernel, target, set of one-element arguments and set of static
ones.
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
from symdiff.frontend.values import STATIC, Bound, is_namedtuple, static_kind
from symdiff.kernel import Kernel
from symdiff.opt.schedule import RESERVED
from symdiff.transforms import leaves, rebuild

#: Targets of :func:`vectorize`.
TARGETS = ("cpu", "parallel", "cuda")

# The generated loops: per id(kernel), per (target, which arguments are broadcast
# from one element, parameter names, which are static).  A kernel's entry goes
# when the kernel is garbage-collected (the loops hold its Numba dispatcher, not
# the kernel).
_LOOPS: dict[
    int,
    dict[
        tuple[str, tuple[bool, ...], tuple[str, ...], tuple[bool, ...]],
        _Loop | CudaLoop,
    ],
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
        ``hessian``, also of a bound method or a ``functools.partial``, whose
        bound arguments are constants) or a plain function of scalars, which is
        compiled with :func:`symdiff.jit`.  Omit it to use ``vectorize(...)`` as
        a decorator.
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
        give Dask arrays, computed chunk by chunk.  Static arguments (a string,
        None: ``mode="sq"``) are passed as they are, not as arrays, and the
        kernel is specialised to them.  ``.source`` shows the generated loop.
        ``out=`` (as a ufunc takes it, unless the function has a parameter of
        that name): an array, or a tuple of one per output (in the order of the
        flattened result), of the broadcast shape (or a larger one the
        arguments broadcast to); the results are written into it and it is
        returned.  NumPy arrays are cast under the 'same_kind' rule; device
        arrays (``target="cuda"``) must have the output's dtype and are written
        in place by the kernel, so a call allocates nothing.

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
    fun = _bound_parts(fun)[0]
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
            rebuilt = Compiled(fun._fun, fun._spec, "cpu")
            rebuilt.fixed_kinds = dict(fun.fixed_kinds)  # a bound `self`
            return rebuilt
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


def _bound_parts(fun: Any) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """The transform behind the transform of a bound method, a callable object or
    a ``functools.partial`` (:class:`symdiff.api.BoundCompiled`), and the
    arguments it binds; anything else as it is, binding none."""
    from symdiff.api import BoundCompiled

    if isinstance(fun, BoundCompiled):
        return fun._compiled, fun._args, fun._kwargs
    return fun, (), {}


def _static_kind(value: Any) -> str | None:
    """The kind of a static argument (a string, None, a function, a bound
    object: :func:`symdiff.frontend.values.static_kind`), which the loop does not
    batch; None for data, arrays of any library included."""
    if (
        isinstance(value, np.ndarray)
        or hasattr(value, "__array__")
        or hasattr(value, "__dask_graph__")
        or is_device_array(value)
    ):
        return None
    return static_kind(value)


def _is_static(kind: str) -> bool:
    """A kind of :class:`Vectorized`'s plans that is a static argument's (not a
    NumPy dtype kind)."""
    return kind.startswith(STATIC)


class Vectorized:
    """A scalar transform applied elementwise to arrays (see :func:`vectorize`)."""

    def __init__(self, fun: Any, target: str | None = None):
        target = target or _target_of(fun)
        if isinstance(fun, Vectorized):
            fun = fun.transform
        inner, self._bound_args, self._bound_kwargs = _bound_parts(fun)
        self._compiled = _as_compiled(inner, target)
        #: the transform of a bound method or a partial as given (it pickles)
        self._bound: Any = None if inner is fun else fun
        self._target = target
        self._last: _Plan | None = None
        self._tree: Any = None  # the dicts of the last call's kernel's outputs
        self._name = _name(self._compiled)
        self._params = list(self._compiled._signature.parameters)
        self._plans: dict[tuple[tuple[str, ...], tuple[bool, ...]], _Plan] = {}
        functools.update_wrapper(self, self._compiled, updated=())

    @property
    def target(self) -> str:
        return self._target

    @property
    def transform(self) -> Any:
        """The scalar transform called per element (as given, for that of a
        bound method or a ``functools.partial``)."""
        return self._compiled if self._bound is None else self._bound

    # -- calling --------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        compiled = self._compiled
        # `out=`, as a ufunc takes it, unless the function has a parameter `out`
        out = kwargs.pop("out", None) if "out" not in self._params else None
        if self._bound_args or self._bound_kwargs:
            args = (*self._bound_args, *args)
            kwargs = {**self._bound_kwargs, **kwargs}
        if kwargs or len(args) != compiled._nparams:
            args = compiled._bind(args, kwargs)
        result = self._run(args, out)
        tree = self._tree
        if tree is None:
            return result
        # the dicts the function returns (jit's result, grad's aux), as the
        # transform gives them
        return compiled._restructuring(lambda: result, tree)()

    def _run(self, args: tuple[Any, ...], out: Any = None) -> Any:
        """The call with every argument, in the order of the parameters: the
        static ones as they are, the others batched; the results written into
        ``out`` (an array, or a sequence of one per output) when it is given."""
        static = tuple(_static_kind(a) for a in args)
        if any(hasattr(a, "__dask_graph__") for a in args):
            if out is not None:
                raise ArgumentError(
                    f"out= cannot be given to `{self._name}` with Dask arrays: Dask "
                    "makes its own result arrays (store them with dask.array.store)"
                )
            return self._dask(args, static)
        batched = [k for k, kind in enumerate(static) if kind is None]
        names = [self._params[k] for k in batched]
        given = [args[k] for k in batched]
        on_device = [self._target == "cuda" and is_device_array(a) for a in given]
        if any(on_device):
            from symdiff.backend.cuda import device_view

            given = [
                device_view(a) if d else a
                for a, d in zip(given, on_device, strict=True)
            ]
        arrays = [
            a if d else _as_array(self._name, n, a)
            for n, a, d in zip(names, given, on_device, strict=True)
        ]
        shape = arrays[0].shape if arrays else ()
        if any(a.shape != shape for a in arrays):
            shape = _broadcast_shape(self._name, names, arrays)
        given_outs = None
        if out is not None:
            given_outs = _out_arrays(self._name, out)
            shape = _out_shape(self._name, given_outs, shape)
        size = math.prod(shape)
        one = [a.size == 1 and size != 1 for a in arrays]
        kinds = [kind or "" for kind in static]
        scalar = [False] * len(args)
        for k, a, s in zip(batched, arrays, one, strict=True):
            kinds[k], scalar[k] = np.dtype(a.dtype).kind, s
        plan = self._plan(tuple(kinds), tuple(scalar), args)
        kernel, loop, in_types, out_types = plan
        self._last = plan
        self._tree = kernel.traced.output_tree
        if given_outs is not None and len(given_outs) != len(out_types):
            raise ArgumentError(
                f"out= of `{self._name}` has {len(given_outs)} array(s); its result "
                f"has {len(out_types)} (give a tuple of one array per output, in "
                "the order of the flattened result)"
            )
        if isinstance(loop, _Loop):
            flat = [
                _flat(a, shape, t, s)
                for a, t, s in zip(arrays, in_types, one, strict=True)
            ]
            if given_outs is None:
                outs: list[Any] = [np.empty(size, t) for t in out_types]
            else:
                outs = [
                    _host_out(self._name, o, t, size, flat)
                    for o, t in zip(given_outs, out_types, strict=True)
                ]
            if size and outs:
                try:
                    loop.compiled(*flat, *outs)
                except SystemError:
                    # a `raise` of the user's in a thread of a prange loop reaches
                    # Python as a SystemError: the loop again, in this thread,
                    # raises the user's exception itself
                    loop.python(*flat, *outs)
                    raise
        else:
            outs = self._cuda(
                plan, names, arrays, on_device, tuple(one), shape, given_outs
            )
        if given_outs is not None:
            # the results are the arrays given, as a ufunc's with out=
            _copy_back(given_outs, outs, shape)
            shaped = given_outs
        elif any(on_device) and shape:
            # (numba-cuda's reshape makes a new array object even to the same
            # shape: a few microseconds a call, skipped for flat outputs)
            shaped = [o if o.shape == shape else o.reshape(shape) for o in outs]
        else:
            shaped = [_host(o).reshape(shape)[()] for o in outs]
        if not isinstance(kernel.returns, tuple):
            return shaped[0]
        results = iter(shaped)
        return rebuild(kernel.returns, lambda _: next(results))

    def _cuda(
        self,
        plan: _Plan,
        names: list[str],
        arrays: list[Any],
        on_device: list[bool],
        scalar: tuple[bool, ...],
        shape: tuple[int, ...],
        given_outs: list[Any] | None = None,
    ) -> list[Any]:
        """Run the CUDA kernel on the batched arguments (``names``): host arrays
        are copied in, device arrays checked and used in place; the outputs are
        device arrays (those of ``given_outs`` that are device arrays, written in
        place; new ones for the others)."""
        from symdiff.backend import cuda

        _, loop, in_types, out_types = plan
        assert isinstance(loop, CudaLoop)
        flat = []
        given = zip(names, arrays, in_types, on_device, scalar, strict=True)
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
        size = math.prod(shape)
        if given_outs is None:
            return loop.run(size, flat, out_types)
        outs = [
            _device_out(self._name, o, t, shape, flat) if is_device_array(o) else None
            for o, t in zip(given_outs, out_types, strict=True)
        ]
        return loop.run(size, flat, out_types, outs)

    def _dask(self, args: tuple[Any, ...], static: tuple[str | None, ...]) -> Any:
        """Dask arrays in: the batched function applied chunk by chunk
        (``dask.array.apply_gufunc`` with an elementwise signature, so Dask
        broadcasts and aligns the chunks), Dask arrays out.  Static arguments
        stay out of Dask's hands: each chunk's call gets them as they are."""
        import dask.array as da

        # the kernel for the arguments' dtypes, checked as in a NumPy call
        kinds = tuple(
            kind or _as_array(self._name, name, np.empty(0, _dtype(a))).dtype.kind
            for name, a, kind in zip(self._params, args, static, strict=True)
        )
        kernel, _, _, out_types = self._plan(kinds, (False,) * len(args), args)
        self._tree = kernel.traced.output_tree
        batched = [k for k, kind in enumerate(static) if kind is None]

        def flat_outputs(*chunks: Any) -> Any:
            full = list(args)
            for k, chunk in zip(batched, chunks, strict=True):
                full[k] = chunk
            out = leaves(self._run(tuple(full)))
            return out[0] if len(out) == 1 else tuple(out)

        # Dask's loop dimensions must be chunked alike: broadcast_arrays
        # broadcasts the array arguments and unifies their chunks.
        positions = [k for k in batched if np.ndim(args[k])]
        shaped = da.broadcast_arrays(*(args[k] for k in positions))
        given = [
            shaped[positions.index(k)] if k in positions else args[k] for k in batched
        ]
        ins = ",".join("()" for _ in given)
        outs = ",".join("()" for _ in out_types)
        results = da.apply_gufunc(
            flat_outputs,
            f"{ins}->{outs}",
            *given,
            output_dtypes=out_types if len(out_types) > 1 else out_types[0],
            vectorize=False,
        )
        if not isinstance(kernel.returns, tuple):
            return results
        it = iter((results,) if len(out_types) == 1 else results)
        return rebuild(kernel.returns, lambda _: next(it))

    def _plan(
        self, kinds: tuple[str, ...], scalar: tuple[bool, ...], args: tuple[Any, ...]
    ) -> _Plan:
        """The kernel, loop, argument and output dtypes for arrays of these kinds
        (NumPy's dtype kinds; a static argument's kind where ``args`` has one)
        (checking them, e.g. that no bool is differentiated); made once.  The
        argument dtypes are those of the batched arguments."""
        plan = self._plans.get((kinds, scalar))
        if plan is not None:
            return plan
        static = tuple(_is_static(k) for k in kinds)
        samples = tuple(
            (Bound(a) if is_namedtuple(a) else a) if s else _SAMPLES[k]
            for a, k, s in zip(args, kinds, static, strict=True)
        )  # (a namedtuple batched by no loop: the kernel's constant, not a pytree)
        dtypes, _ = self._compiled._dtypes(samples)
        kernel = self._compiled._kernel(dtypes)
        loop = _loop(kernel, self._target, self._params, scalar, static)
        in_types, out_types = io_dtypes(kernel)
        batched = [t for t, s in zip(in_types, static, strict=True) if not s]
        plan = kernel, loop, batched, out_types
        self._plans[kinds, scalar] = plan
        return plan

    # -- inspection -----------------------------------------------------------------
    def _current(self) -> _Plan:
        if self._last is None:
            chars = {"float64": "f", "int64": "i", "bool": "b"}
            dtypes = self._compiled._annotated_dtypes()
            known = self._known()
            args = tuple(known.get(k) for k in range(len(dtypes)))
            kinds = tuple(
                chars.get(d) or _static_kind(a) or "f"
                for d, a in zip(dtypes, args, strict=True)
            )
            scalar = (False,) * len(dtypes)
            self._last = self._plan(kinds, scalar, args)
        return self._last

    def _known(self) -> dict[int, Any]:
        """The arguments known before a call, by position: those the transform
        binds, and the defaults."""
        bound = self._compiled._signature.bind_partial(
            *self._bound_args, **self._bound_kwargs
        )
        bound.apply_defaults()
        return {self._params.index(n): v for n, v in bound.arguments.items()}

    @property
    def source(self) -> str:
        """The generated loop: the last one called, else the one for arrays of
        the same shape, float64 but where a parameter is annotated ``int`` or
        ``bool`` (and static arguments at their defaults)."""
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
        return (Vectorized, (self.transform, self._target))

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
    if kind in "US":
        raise ArgumentError(
            f"argument `{name}` of `{fname}` is an array of strings ({array.dtype}); "
            "a string is a static argument, which configures the function (the "
            "kernel is specialised to it): pass one string, and call once per "
            "string"
        )
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


def _out_arrays(fname: str, out: Any) -> list[Any]:
    """``out=`` as a list of arrays (host or device), checked to be arrays."""
    given = list(out) if isinstance(out, (tuple, list)) else [out]
    for k, o in enumerate(given):
        if not (isinstance(o, np.ndarray) or is_device_array(o)):
            which = f"out[{k}]" if isinstance(out, (tuple, list)) else "out"
            raise ArgumentError(
                f"{which} of `{fname}` is a `{type(o).__name__}`, not an array: "
                "give a NumPy array (or a device array on target='cuda') of the "
                "result's shape, or a tuple of them, one per output"
            )
    return given


def _out_shape(fname: str, outs: list[Any], shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of the call with ``out=``: the output arrays', to which the
    arguments' broadcast ``shape`` must broadcast (as NumPy's ufuncs do)."""
    target = tuple(outs[0].shape)
    if any(tuple(o.shape) != target for o in outs):
        shapes = ", ".join(str(tuple(o.shape)) for o in outs)
        raise ArgumentError(
            f"the arrays of out= of `{fname}` have different shapes ({shapes}); "
            "each output has the broadcast shape of the arguments"
        )
    try:
        fits = np.broadcast_shapes(shape, target) == target
    except ValueError:
        fits = False
    if not fits:
        raise ArgumentError(
            f"out= of `{fname}` has shape {target}, but the arguments broadcast "
            f"to {shape}: give arrays of shape {shape}"
        )
    return target


def _host_out(
    fname: str, out: Any, dtype: type, size: int, inputs: list[np.ndarray]
) -> np.ndarray:
    """The flat array a CPU loop writes an output into: ``out`` itself (a flat
    view) where it is C-contiguous, of the output's dtype and overlaps no input
    but as the very same elements, else a new array, copied into ``out`` after
    the loop (:func:`_copy_back`)."""
    if not isinstance(out, np.ndarray):
        raise ArgumentError(
            f"out= of `{fname}` holds a device array; target='cpu' and "
            "'parallel' write NumPy arrays (use target='cuda' for device arrays)"
        )
    _check_writable(fname, out, dtype)
    if out.dtype == dtype and out.flags.c_contiguous:
        view = out.reshape(-1)
        if not any(_partial_overlap(view, a) for a in inputs):
            return view
    return np.empty(size, dtype)


def _partial_overlap(out: np.ndarray, arg: np.ndarray) -> bool:
    """Whether the loop could read an element of ``arg`` after writing ``out``
    over it: they share memory, but not as the same elements in the same order
    (which each iteration reads before it writes)."""
    if not np.may_share_memory(out, arg):
        return False
    same = (
        _start(out) == _start(arg)
        and out.strides == arg.strides
        and out.shape == arg.shape
        and out.dtype == arg.dtype
    )
    return not same


def _check_writable(fname: str, out: np.ndarray, dtype: type) -> None:
    if not out.flags.writeable:
        raise ArgumentError(f"out= of `{fname}` is a read-only array")
    if not np.can_cast(dtype, out.dtype, casting="same_kind"):
        raise ArgumentError(
            f"out= of `{fname}` has dtype {out.dtype}, which the result "
            f"({np.dtype(dtype)}) cannot be cast to under NumPy's 'same_kind' rule"
        )


def _device_out(
    fname: str, out: Any, dtype: type, shape: tuple[int, ...], inputs: list[Any]
) -> Any:
    """A device array of ``out=`` as the flat array the CUDA kernel writes
    (in place: of the output's dtype, C-contiguous, overlapping no input but
    as the very same elements)."""
    from symdiff.backend.cuda import device_view, flat_device_array

    view = device_view(out)
    if np.dtype(view.dtype) != np.dtype(dtype):
        raise ArgumentError(
            f"device array out= of `{fname}` has dtype {view.dtype}; the result is "
            f"{np.dtype(dtype)} (device arrays are written in place, not cast)"
        )
    if view.size > 1 and not view.is_c_contiguous():
        raise ArgumentError(
            f"device array out= of `{fname}` is not C-contiguous; give a "
            "contiguous array (the kernel writes it in place)"
        )
    flat = flat_device_array("out", view)
    start, stop = _device_span(flat)
    for a in inputs:
        a_start, a_stop = _device_span(a)
        overlap = start < a_stop and a_start < stop
        same = (a_start, a_stop, a.dtype, a.shape) == (
            start,
            stop,
            flat.dtype,
            flat.shape,
        ) and (a.size <= 1 or a.is_c_contiguous())
        if overlap and not same:
            raise ArgumentError(
                f"device array out= of `{fname}` overlaps an argument without "
                "being the same elements: give a separate array"
            )
    return flat


def _device_span(array: Any) -> tuple[int, int]:
    """The device addresses ``[start, stop)`` a device array's elements lie in
    (strided ones too: the span from the lowest to the highest)."""
    interface = getattr(array, "__cuda_array_interface__", None)
    if interface is None:  # the simulator's device arrays hold NumPy arrays
        interface = array.__array_interface__
    start = int(interface["data"][0])
    itemsize = np.dtype(array.dtype).itemsize
    if not array.size:
        return start, start
    strides = getattr(array, "strides", None) or ()
    if len(strides) != len(array.shape):  # C-contiguous
        return start, start + int(array.size) * itemsize
    reach = [(int(d) - 1) * int(s) for d, s in zip(array.shape, strides, strict=True)]
    low = start + sum(r for r in reach if r < 0)
    return low, start + sum(r for r in reach if r > 0) + itemsize


def _copy_back(given: list[Any], outs: list[Any], shape: tuple[int, ...]) -> None:
    """Copy the results the loop wrote elsewhere into the ``out=`` arrays."""
    for o, r in zip(given, outs, strict=True):
        if is_device_array(o):
            continue  # written in place (_device_out)
        if isinstance(r, np.ndarray) and _start(r) == _start(o) and r.dtype == o.dtype:
            continue  # a flat view of `o` (_host_out): written in place
        np.copyto(o, _host(r).reshape(shape), casting="same_kind")


def _start(array: np.ndarray) -> int:
    return int(array.__array_interface__["data"][0])


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
    kernel: Kernel,
    target: str,
    params: list[str],
    scalar: tuple[bool, ...],
    static: tuple[bool, ...] | None = None,
) -> _Loop | CudaLoop:
    static = static or (False,) * len(params)
    loops = _LOOPS.get(id(kernel))
    if loops is None:
        loops = _LOOPS[id(kernel)] = {}
        weakref.finalize(kernel, _LOOPS.pop, id(kernel), None)
    key = (target, scalar, tuple(params), static)
    loop = loops.get(key)
    if loop is None:
        if target == "cuda":
            from symdiff.backend import cuda

            cuda.check_scalar_kernel(kernel)
            name, source = loop_source(kernel, target, params, scalar, static)
            loop = cuda.CudaLoop(name, source, cuda.load(source, name))
        else:
            if kernel.device:
                raise ArgumentError(
                    f"vectorize(target={target!r}) of a target='cuda' transform of "
                    f"`{kernel.traced.name}`, whose kernel is a CUDA array program "
                    "(its gradient tapes a loop): make the transform with "
                    f"target={target!r}"
                )
            name, source = loop_source(kernel, target, params, scalar, static)
            warm.import_numba()  # the loop module imports it
            python = _load(source, name, kernel)
            loop = _Loop(
                name, source, python, njit(python, parallel=_threads(kernel, target))
            )
        loops[key] = loop
    return loop


def _raises(kernel: Kernel) -> bool:
    """Whether the kernel raises for some values (a `raise` of the user's)."""
    return any(
        not (r.cond.op == "const" and not r.cond.value) for r in kernel.traced.raises
    )


def _threads(kernel: Kernel, target: str) -> bool:
    """Whether the loop runs on threads: ``"parallel"``, unless the kernel raises
    (an exception in one of Numba's worker threads is lost, and the outputs of
    its elements are never written), which then runs on one."""
    return target == "parallel" and not _raises(kernel)


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
    kernel: Kernel,
    target: str,
    params: list[str],
    scalar: tuple[bool, ...],
    static: tuple[bool, ...] | None = None,
) -> tuple[str, str]:
    """The name and module text of the loop calling ``kernel`` per element
    (for ``"cuda"``: a grid-stride CUDA kernel with ``kernel`` as an inner
    function, see :mod:`symdiff.backend.cuda`).  The loop takes no array for a
    ``static`` parameter: the kernel was specialised to its value, and takes a
    placeholder, 0, in its place."""
    static = static or (False,) * len(params)
    alias = kernel_alias(kernel)
    taken = set(_RESERVED) | {alias}
    core_imports: list[str] = []
    core: list[str] = []
    if target == "cuda":
        from symdiff.backend.cuda import inner_function

        core_imports, core = inner_function(kernel, alias, taken)

    def fresh(base: str, fallback: str) -> str:
        name = base if base.isidentifier() else fallback
        if target == "parallel" and (name.endswith("_") or "__" in name):
            # Numba's parallel lowering renames variables with underscores and
            # can make `a_` and `a__` one name (an internal error): avoid them
            name = fallback
        stem, n = name, 1
        while name in taken:
            if target == "parallel":
                n += 1
                name = f"{stem}{n}"
            else:
                name += "_"
        taken.add(name)
        return name

    i = fresh("i", "i")
    args = [
        "0" if s else fresh(p, f"a{k}")
        for k, (p, s) in enumerate(zip(params, static, strict=True))
    ]
    arrays = [a for a, s in zip(args, static, strict=True) if not s]
    outs = [
        fresh(f"{o}_out" if o in taken else o, f"out{k}")
        for k, o in enumerate(kernel.output_names)
    ]
    name = fresh(f"{kernel.name}_{target}", f"f_{target}")
    hoisted = {
        a: fresh(f"{a}0", "a0")
        for a, one, st in zip(args, scalar, static, strict=True)
        if one and not st
    }

    counter = iter(outs)
    targets = _unpacked(rebuild(kernel.returns, lambda _: f"{next(counter)}[{i}]"))
    call_args = ", ".join(
        a if s else hoisted.get(a, f"{a}[{i}]")
        for a, s in zip(args, static, strict=True)
    )
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
    if target == "parallel" and _raises(kernel):
        header.append(
            f"# on one thread: `{kernel.name}` raises for some values, and an "
            "exception in a worker thread would be lost"
        )
    if hoisted:
        header.append(
            f"# broadcast from one element: {', '.join(f'`{a}`' for a in hoisted)}"
        )
    fixed = [p for p, s in zip(params, static, strict=True) if s]
    if fixed:
        header.append(
            "# static (the kernel is specialised to it; 0 is passed in its place): "
            + ", ".join(f"`{p}`" for p in fixed)
        )
    lines = [*header]
    if target == "parallel":
        lines.append("import numba")
    if target == "cuda":
        lines += [*core_imports, "from numba import cuda"]
    lines += ["", "", f"def {name}({', '.join(arrays + outs)}):"]
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
