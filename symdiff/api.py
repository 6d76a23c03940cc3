"""The public transforms, with JAX's signatures and return conventions."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from symdiff.compiled import OMITTED, Compiled
from symdiff.errors import ArgumentError
from symdiff.frontend.source import ShippedSource, portable_source, restore_source
from symdiff.frontend.values import Bound, static_kind
from symdiff.transforms import MODES, Spec, leaves

# Compiled transforms behind the immediate-mode calls (jvp, vjp, hvp), per function.
_CACHE: weakref.WeakKeyDictionary[
    Any, dict[tuple[Spec, str], tuple[Compiled, tuple[Any, ...]]]
] = weakref.WeakKeyDictionary()


def _cached(fun: Callable[..., Any], spec: Spec, target: str) -> Any:
    try:
        per_function = _CACHE.setdefault(fun, {})
    except TypeError:  # not weak-referenceable: no cache
        return _compile(fun, spec, target)
    world = _world(fun)
    entry = per_function.get((spec, target))
    if entry is None or not _same(entry[1], world):
        # (a global, a closure's value or an object's attribute it reads was
        # rebound since: each call is a transform of the function as it is now)
        entry = per_function[spec, target] = (_compile(fun, spec, target), world)
    return entry[0]


def _world(fun: Any) -> tuple[Any, ...]:
    """The objects a transform of ``fun`` read when it was built, as far as a
    cheap look finds them: the globals its code and its helpers' code name, the
    values of their closures, the attributes of a bound object.  A kernel of
    jvp/vjp/hvp is reused while each is the same object."""
    inner, args, _ = _unbind(unwrap_decorated(fun))
    out: list[Any] = []
    for a in args:
        if isinstance(a, Bound):
            out.extend(getattr(a.obj, "__dict__", {}).values())
    stack = [inner]
    seen: set[int] = set()
    while stack:
        f = stack.pop()
        code = getattr(f, "__code__", None)
        if id(f) in seen or not isinstance(code, types.CodeType):
            continue
        seen.add(id(f))
        names: set[str] = set()
        codes = [code]
        while codes:  # the function's code and that of what it defines
            c = codes.pop()
            names.update(c.co_names)
            codes.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        scope = getattr(f, "__globals__", {})
        values = [scope[n] for n in sorted(names) if n in scope]
        for cell in getattr(f, "__closure__", None) or ():
            with contextlib.suppress(ValueError):  # an empty cell
                values.append(cell.cell_contents)
        out.extend(values)
        stack.extend(v for v in values if isinstance(v, types.FunctionType))
    return tuple(out)


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def unwrap_decorated(fun: Any) -> Any:
    """The Python function under ``@numba.njit`` (its ``py_func``) or
    ``@functools.lru_cache`` (``__wrapped__``): symdiff reads its source, as it
    does for helpers under them."""
    py_func = getattr(fun, "py_func", None)
    if type(fun).__module__.startswith("numba") and isinstance(
        py_func, types.FunctionType
    ):
        return py_func
    wrapped = getattr(fun, "__wrapped__", None)
    if hasattr(fun, "cache_info") and isinstance(wrapped, types.FunctionType):
        return wrapped
    return fun


def _unbind(fun: Any) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    """The Python function behind ``fun`` and the arguments bound to it: a
    ``functools.partial``'s, the object of a bound method (``model.energy``) or
    of a callable object (its class's ``__call__``), passed as a constant."""
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = {}
    fun = unwrap_decorated(fun)
    if isinstance(fun, functools.partial):
        args, kwargs, fun = fun.args, dict(fun.keywords), fun.func
    if isinstance(fun, types.MethodType) and isinstance(
        fun.__func__, types.FunctionType
    ):
        return fun.__func__, (Bound(fun.__self__), *args), kwargs
    call = next(  # `__call__` as a class of the user's defines or inherits it
        (vars(c)["__call__"] for c in type(fun).__mro__ if "__call__" in vars(c)),
        None,
    )
    if (
        isinstance(call, types.FunctionType)
        and not isinstance(fun, (types.FunctionType, type))
        and not type(fun).__module__.startswith(("symdiff", "numba"))
    ):
        return call, (Bound(fun), *args), kwargs
    return fun, args, kwargs


def _compile(fun: Any, spec: Spec, target: str) -> Any:
    """``Compiled`` for a function; for a bound method, a callable object or a
    ``functools.partial``, the transform of its function with the bound
    arguments first (``argnums`` counts the arguments of the call)."""
    fun = unwrap_decorated(fun)  # @numba.njit, @functools.lru_cache
    inner, args, kwargs = _unbind(fun)
    if inner is fun:
        return Compiled(fun, spec, target)
    k = len(args)
    argnums = spec.argnums
    if spec.kind != "jit":
        params = inspect.signature(inner).parameters.values()
        n = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
        n -= k
        if not all(-n <= a < n for a in spec.wrt):
            name = getattr(fun, "__name__", None) or getattr(inner, "__name__", "f")
            raise ArgumentError(
                f"argnums {argnums!r} is out of range for `{name}`, whose calls "
                f"take {n} argument{'s' * (n != 1)} besides the {k} bound to it"
            )
    if isinstance(argnums, int):
        argnums = argnums + k if argnums >= 0 else argnums
    else:
        argnums = tuple(a + k if a >= 0 else a for a in argnums)
    compiled = Compiled(inner, dataclasses.replace(spec, argnums=argnums), target)
    return BoundCompiled(compiled, args, kwargs, fun, spec)


class BoundCompiled:
    """The transform of a bound method, a callable object or a
    ``functools.partial``: the compiled function of the Python function behind
    it, called with the bound arguments first.  An object bound as ``self`` is a
    constant of the kernel: its attributes are read when the kernel is built, as
    globals are (a kernel per object).  ``spec`` is the transform as asked for
    (``argnums`` counting the arguments of the call), with ``original`` what it
    was asked of: a pickle carries the two."""

    def __init__(
        self,
        compiled: Compiled,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        original: Any,
        spec: Spec,
    ):
        self._compiled = compiled
        self._args = args
        self._kwargs = kwargs
        self._original = original
        self._given = spec
        compiled.fixed_kinds = {
            i: kind for i, a in enumerate(args) if (kind := static_kind(a))
        }
        self.__name__ = getattr(original, "__name__", compiled.__name__)
        self.__doc__ = getattr(original, "__doc__", None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._compiled(*self._args, *args, **{**self._kwargs, **kwargs})

    def call_extended(self, primals: tuple[Any, ...], extras: tuple[Any, ...]) -> Any:
        full = self._compiled._bind((*self._args, *primals), self._kwargs)
        return self._compiled.call_extended(full, extras)

    def tape_bytes(self, *args: Any, **kwargs: Any) -> int:
        full = self._compiled._bind((*self._args, *args), {**self._kwargs, **kwargs})
        return self._compiled.tape_bytes(*full)

    def __getattr__(self, name: str) -> Any:  # .source, .lower(), ...
        if name == "_compiled":  # not set: an instance made without __init__
            raise AttributeError(name)
        return getattr(self._compiled, name)

    def __repr__(self) -> str:
        return f"<bound {self._compiled!r}>"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as the bound method, callable object or ``functools.partial``
        and the options, as a :class:`Compiled` is (the object and the partial's
        arguments pickle as Python pickles them), with the source of a function
        of ``__main__``: kernels are built again where it is unpickled."""
        shipped = portable_source(self._compiled._fun)
        target = self._compiled._target
        return (_unpickle_bound, (self._original, self._given, target, shipped))


def _unpickle_bound(
    original: Any, spec: Spec, target: str, shipped: ShippedSource | None
) -> Any:
    """A transform of a bound method, callable object or partial, pickled by
    value: the function behind it gets its shipped source back first."""
    restore_source(_unbind(original)[0], shipped)
    return _compile(original, spec, target)


def _given_args(fun: Callable[..., Any], count: int) -> tuple[int, ...]:
    """The positions of the ``count`` primals a jvp, vjp or hvp call gives: the
    parameters after them keep their defaults and get no tangent (as in JAX,
    which calls ``fun(*primals)``).  More primals than parameters are left to
    the call's binding to report."""
    try:
        n = len(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        raise ArgumentError(
            f"expected a function, got a `{type(fun).__name__}`"
        ) from None
    return tuple(range(min(count, n)))


def _with_tangents(
    kind: str, fun: Callable[..., Any], primals: Any, tangents: Any, target: str
) -> Any:
    """Run a kernel that takes one tangent per primal (jvp, hvp)."""
    primals = _sequence(primals, "primals")
    tangents = _sequence(tangents, "tangents")
    if len(primals) != len(tangents):
        raise ArgumentError(
            f"{kind} got {len(primals)} primals but {len(tangents)} tangents"
        )
    for i, (p, t) in enumerate(zip(primals, tangents, strict=True)):
        _same_shape(t, np.shape(p), f"tangent {i}", f"primal {i}")
    compiled = _cached(fun, Spec(kind, _given_args(fun, len(primals))), target)
    return compiled.call_extended(primals, tangents)


def _same_shape(value: Any, shape: tuple[int, ...], what: str, like: str) -> None:
    if np.shape(value) != shape:
        raise ArgumentError(
            f"{what} has shape {np.shape(value)}, but {like} has shape {shape}"
        )


def _sequence(value: Any, what: str) -> tuple[Any, ...]:
    if not isinstance(value, (tuple, list)):
        raise ArgumentError(
            f"{what} must be a tuple or list with one entry per argument, "
            f"got a `{type(value).__name__}`"
        )
    return tuple(value)


def _argnums(argnums: Any) -> int | tuple[int, ...]:
    if isinstance(argnums, bool) or not isinstance(argnums, (int, tuple, list)):
        raise ArgumentError(
            f"argnums must be an int or a tuple of ints, got {argnums!r}"
        )
    if isinstance(argnums, int):
        return argnums
    if not argnums or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in argnums
    ):
        raise ArgumentError(
            f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}"
        )
    return tuple(argnums)


def _transform(
    kind: str,
    fun: Callable[..., Any],
    argnums: Any,
    has_aux: bool,
    target: str,
    checkpoint: int | None = None,
) -> Any:
    bad = isinstance(checkpoint, bool) or not isinstance(checkpoint, int)
    if checkpoint is not None and (bad or checkpoint < 1):
        raise ArgumentError(
            f"checkpoint must be a positive int (iterations between saved loop "
            f"states), got {checkpoint!r}"
        )
    spec = Spec(kind, _argnums(argnums), bool(has_aux), checkpoint=checkpoint)
    return _compile_or_decorate(fun, spec, target)


def _compile_or_decorate(fun: Any, spec: Spec, target: str) -> Any:
    """The transform of ``fun``; with no function given, a decorator."""
    if fun is OMITTED:
        return lambda f: _compile(f, spec, target)
    return _compile(fun, spec, target)


def grad(
    fun: Callable[..., Any] = OMITTED,
    argnums: int | tuple[int, ...] = 0,
    has_aux: bool = False,
    *,
    target: str = "cpu",
    checkpoint: int | None = None,
) -> Any:
    """Gradient of a scalar function, as a compiled function.

    Parameters
    ----------
    fun : callable, optional
        A Python function of scalars returning one number (or ``(number, aux)``
        with ``has_aux``).  Omit it to use ``grad(...)`` as a decorator.
    argnums : int or tuple of int, default 0
        Which positional arguments to differentiate with respect to.
    has_aux : bool, default False
        ``fun`` returns ``(value, aux)``; ``aux`` is passed through.
    target : {"cpu", "parallel", "cuda", "python"}, default "cpu"
        ``"cpu"`` compiles with Numba; ``"parallel"`` also runs the outer loops
        of array kernels on threads; ``"cuda"`` runs the kernel on the GPU
        (numba-cuda; functions of numbers: batch them with
        :func:`symdiff.vectorize`); ``"python"`` runs the generated source as
        plain Python.  Every transform takes the same ``target``.
    checkpoint : int, optional
        For loops: keep the loop's state every ``checkpoint`` iterations instead
        of a tape row per iteration, and recompute each segment's tape during the
        backward pass (one more forward pass; tape memory ``n / checkpoint``
        states plus one segment).  ``None`` tapes every iteration.

    Returns
    -------
    Compiled
        Calling it returns the gradient: a float for an int ``argnums``, a tuple
        of floats for a tuple; ``(gradient, aux)`` with ``has_aux``.

    Examples
    --------
    >>> import math, symdiff
    >>> @symdiff.grad(argnums=(0, 1))
    ... def f(x, y):
    ...     return x * math.sin(y)
    >>> f(2.0, 0.0)
    (0.0, 2.0)
    """
    return _transform("grad", fun, argnums, has_aux, target, checkpoint)


def value_and_grad(
    fun: Callable[..., Any] = OMITTED,
    argnums: int | tuple[int, ...] = 0,
    has_aux: bool = False,
    *,
    target: str = "cpu",
    checkpoint: int | None = None,
) -> Any:
    """Value and gradient of a scalar function, from one fused kernel.

    Parameters are those of :func:`grad`.

    Returns
    -------
    Compiled
        Calling it returns ``(value, gradient)``, or ``((value, aux), gradient)``
        with ``has_aux``.

    Examples
    --------
    >>> import symdiff
    >>> symdiff.value_and_grad(lambda x: x ** 3)(2.0)
    (8.0, 12.0)
    """
    return _transform("value_and_grad", fun, argnums, has_aux, target, checkpoint)


def jvp(
    fun: Callable[..., Any],
    primals: tuple[Any, ...],
    tangents: tuple[Any, ...],
    *,
    target: str = "cpu",
) -> tuple[Any, Any]:
    """Forward mode: the output and its directional derivative.

    Parameters
    ----------
    fun : callable
        The function; it is called as ``fun(*primals)``.
    primals, tangents : tuple
        Argument values and the direction, one tangent per primal.  Parameters
        after the primals given keep their defaults, with a zero tangent.  An
        int primal is a real number, as for :func:`grad`: its tangent counts
        wherever it takes part in arithmetic (a bool's is ignored).
    target : {"cpu", "parallel", "cuda", "python"}, default "cpu"
        As for :func:`grad`.

    Returns
    -------
    tuple
        ``(output, output_tangent)``; the tangent has the output's structure.

    Examples
    --------
    >>> import symdiff
    >>> symdiff.jvp(lambda x, y: x * y, (2.0, 3.0), (1.0, 0.0))
    (6.0, 3.0)
    """
    return _with_tangents("jvp", fun, primals, tangents, target)


def vjp(
    fun: Callable[..., Any], *primals: Any, target: str = "cpu"
) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """Reverse mode: the output and a function pulling cotangents back.

    Parameters
    ----------
    fun : callable
        The function; it is called as ``fun(*primals)``, and parameters after
        the primals given keep their defaults.
    *primals
        Argument values.
    target : {"cpu", "parallel", "cuda", "python"}, default "cpu"
        As for :func:`grad`.

    Returns
    -------
    tuple
        ``(output, vjp_fun)``; ``vjp_fun(cotangent)`` (the output's structure)
        returns a tuple with one cotangent per primal given.

    Examples
    --------
    >>> import symdiff
    >>> out, pullback = symdiff.vjp(lambda x, y: (x * y, x + y), 2.0, 3.0)
    >>> out, pullback((1.0, 0.0))
    ((6.0, 5.0), (3.0, 2.0))
    """
    argnums = _given_args(fun, len(primals))
    out = _cached(fun, Spec("jit"), target)(*primals)
    backward = _cached(fun, Spec("vjp", argnums), target)
    structure = out

    def vjp_fun(cotangent: Any) -> tuple[Any, ...]:
        flat = leaves(cotangent)
        expected = leaves(structure)
        if len(flat) != len(expected):
            raise ArgumentError(
                f"the cotangent must have the output's structure ({len(expected)} "
                f"number(s)); got {len(flat)}"
            )
        for i, (c, o) in enumerate(zip(flat, expected, strict=True)):
            _same_shape(c, np.shape(o), f"cotangent {i}", f"output {i}")
        return backward.call_extended(primals, tuple(flat))  # type: ignore[no-any-return]

    return out, vjp_fun


def jacobian(
    fun: Callable[..., Any] = OMITTED,
    argnums: int | tuple[int, ...] = 0,
    mode: str = "auto",
    *,
    target: str = "cpu",
) -> Any:
    """The Jacobian, built by forward or reverse sweeps chosen by shape.

    Parameters
    ----------
    fun : callable, optional
        A function returning a number or a tuple of numbers.
    argnums : int or tuple of int
        The inputs.
    mode : {"auto", "forward", "reverse"}
        ``"auto"`` uses forward mode when there are fewer inputs than outputs
        (one sweep per input), reverse mode otherwise (one sweep per output);
        ``.mode`` on the result says which.

    Returns
    -------
    Compiled
        Calling it returns ``J[i][j] = d out_i / d arg_j`` in the output's structure
        (outer) and ``argnums``' structure (inner), as ``jax.jacobian`` does.

    Examples
    --------
    >>> import symdiff
    >>> symdiff.jacobian(lambda x, y: (x * y, x + y), argnums=(0, 1))(2.0, 3.0)
    ((3.0, 2.0), (1.0, 1.0))
    """
    if mode not in MODES:
        raise ArgumentError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    spec = Spec("jacobian", _argnums(argnums), False, mode)
    return _compile_or_decorate(fun, spec, target)


def hessian(
    fun: Callable[..., Any] = OMITTED,
    argnums: int | tuple[int, ...] = 0,
    *,
    target: str = "cpu",
) -> Any:
    """The Hessian of a scalar function, forward-over-reverse.

    The gradient graph is built once (reverse mode), then differentiated by one
    forward sweep per input; all sweeps share subexpressions.

    Examples
    --------
    >>> import symdiff
    >>> symdiff.hessian(lambda x, y: x * x * y, argnums=(0, 1))(2.0, 3.0)
    ((6.0, 4.0), (4.0, 0.0))
    """
    return _transform("hessian", fun, argnums, False, target)


def hvp(
    fun: Callable[..., Any],
    primals: tuple[Any, ...],
    tangents: tuple[Any, ...],
    *,
    target: str = "cpu",
) -> tuple[Any, ...]:
    """Hessian-vector product, without forming the Hessian.

    One forward sweep over the gradient graph: ``H @ v`` for ``v = tangents``.

    Parameters
    ----------
    fun : callable
        A scalar function; it is called as ``fun(*primals)``.
    primals, tangents : tuple
        The point and the vector, one tangent per primal.  Parameters after the
        primals given keep their defaults and are not differentiated; an int
        primal is a real number, as for :func:`hessian`.
    target : {"cpu", "parallel", "cuda", "python"}, default "cpu"
        As for :func:`grad`.

    Returns
    -------
    tuple
        ``H @ v``: one entry per primal, shaped like it.

    Examples
    --------
    >>> import symdiff
    >>> symdiff.hvp(lambda x, y: x * x * y, (2.0, 3.0), (1.0, 0.0))
    (6.0, 4.0)
    """
    return _with_tangents("hvp", fun, primals, tangents, target)


def jit(fun: Callable[..., Any] = OMITTED, *, target: str = "cpu") -> Any:
    """Compile the forward pass alone (the same specialisation as the gradients).

    Examples
    --------
    >>> import symdiff
    >>> symdiff.jit(lambda x, y: x * y + 1.0)(2.0, 3.0)
    7.0
    """
    return _transform("jit", fun, 0, False, target)
