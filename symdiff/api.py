"""The public transforms, with JAX's signatures and return conventions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from symdiff.compiled import Compiled
from symdiff.errors import ArgumentError
from symdiff.transforms import Spec


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
    kind: str, fun: Callable[..., Any] | None, argnums: Any, has_aux: bool, target: str
) -> Any:
    spec = Spec(kind, _argnums(argnums), bool(has_aux))
    if fun is None:
        return lambda f: Compiled(f, spec, target)
    return Compiled(fun, spec, target)


def grad(
    fun: Callable[..., Any] | None = None,
    argnums: int | tuple[int, ...] = 0,
    has_aux: bool = False,
    *,
    target: str = "cpu",
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
    target : {"cpu", "python"}, default "cpu"
        ``"cpu"`` compiles with Numba; ``"python"`` runs the generated source as
        plain Python.

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
    return _transform("grad", fun, argnums, has_aux, target)


def value_and_grad(
    fun: Callable[..., Any] | None = None,
    argnums: int | tuple[int, ...] = 0,
    has_aux: bool = False,
    *,
    target: str = "cpu",
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
    return _transform("value_and_grad", fun, argnums, has_aux, target)


def jit(fun: Callable[..., Any] | None = None, *, target: str = "cpu") -> Any:
    """Compile the forward pass alone (the same specialisation as the gradients).

    Examples
    --------
    >>> import symdiff
    >>> symdiff.jit(lambda x, y: x * y + 1.0)(2.0, 3.0)
    7.0
    """
    return _transform("jit", fun, 0, False, target)
