"""User-supplied derivatives: ``custom_vjp`` and ``stop_gradient``.

A rule is ordinary Python that symdiff also parses, so it works in forward and reverse
mode and inside compiled kernels (seed 000's forward/backward pairs, as in
``torch.autograd.Function``).
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from symdiff.errors import ArgumentError


def stop_gradient(x: Any) -> Any:
    """The value of ``x``, through which no derivative flows.

    Examples
    --------
    >>> import symdiff
    >>> symdiff.grad(lambda x: x * symdiff.stop_gradient(x))(3.0)
    3.0
    """
    return x


@dataclass(frozen=True)
class CustomRule:
    """A ``custom_vjp`` call's ``bwd`` rule that is not linear in its cotangent,
    kept whole in the call's IR node (its second attribute): reverse mode
    replaces ``g`` by the adjoint that reaches the call.

    Attributes
    ----------
    g : Node
        The cotangent variable (an IR ``var``) the rule was lowered at.
    cotangents : tuple of Node or None
        One graph of ``g`` (and of the residuals) per input; None for none.
    name : str
        The custom function's name.
    why : Diagnostic
        What forward mode raises: the rule has no partials to multiply tangents by.
    """

    g: Any
    cotangents: tuple[Any, ...]
    name: str
    why: Any


class custom_vjp:
    """Mark a function whose reverse-mode rule the user supplies.

    Use as a decorator, then register the rule pair with :meth:`defvjp`::

        @symdiff.custom_vjp
        def clip_gradient(x):
            return x

        def clip_fwd(x):
            return x, ()                  # (output, residuals for the backward)

        def clip_bwd(residuals, g):
            return (max(min(g, 1.0), -1.0),)   # one cotangent per input

        clip_gradient.defvjp(clip_fwd, clip_bwd)

    ``fwd`` returns ``(output, residuals)``; ``bwd(residuals, g)`` returns a tuple
    with one cotangent per input (``None`` for none).  Both are parsed like any other
    function, so the rule is compiled into the kernels.  Reverse mode evaluates
    ``bwd`` at the cotangent that reaches the call (above, ``grad`` of
    ``10 * clip_gradient(x)`` is 1.0, as in JAX).  When ``bwd`` is linear in ``g``
    (a true derivative rule), its value at ``g = 1`` gives the local partials,
    which forward mode (``jvp``, ``hessian``) uses too; a rule that is not linear
    in ``g``, as this one, is for reverse mode only, and forward mode reports it.
    """

    def __init__(self, fun: Callable[..., Any]):
        if not inspect.isfunction(fun):
            raise ArgumentError(
                f"custom_vjp expects a Python function, got {_describe(fun)}\n"
                "  help: decorate the function's `def`: `@symdiff.custom_vjp` above "
                "it, or call symdiff.custom_vjp(f) with the function itself"
            )
        self.fun = fun
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None
        functools.update_wrapper(self, fun)

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> None:
        """Register the forward and backward rules.

        Parameters
        ----------
        fwd : function
            Takes the custom function's arguments and returns
            ``(output, residuals)``.
        bwd : function
            Takes ``(residuals, g)`` and returns a tuple with one cotangent per
            input (``None`` for none).

        Raises
        ------
        ArgumentError
            When ``fwd`` or ``bwd`` is not a Python function (a ``def`` or a
            lambda: symdiff reads its source).
        """
        bad = [
            f"{what} is {_describe(rule)}"
            for what, rule in (("fwd", fwd), ("bwd", bwd))
            if not inspect.isfunction(rule)
        ]
        if bad:
            name = self.__name__
            raise ArgumentError(
                f"`{name}.defvjp(fwd, bwd)` expects two Python functions, but "
                f"{' and '.join(bad)}\n  help: pass the rules themselves, "
                f"`{name}.defvjp({name}_fwd, {name}_bwd)`: fwd takes `{name}`'s "
                "arguments and returns `(output, residuals)`, bwd takes "
                "`(residuals, g)` and returns one cotangent per input"
            )
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fun(*args, **kwargs)

    def __reduce__(self) -> str | tuple[Any, ...]:
        """Pickled by reference when it is its module's global (decorated)."""
        if is_module_global(self):
            return str(self.__qualname__)
        state = {"fwd": self.fwd, "bwd": self.bwd}
        return (custom_vjp, (self.fun,), state)


def _describe(obj: Any) -> str:
    """``obj`` in an error message: a function's kind and name, else its type."""
    name = getattr(obj, "__name__", None)
    if callable(obj) and isinstance(name, str):
        return f"`{name}`, a `{type(obj).__name__}`"
    return f"a `{type(obj).__name__}`"


def is_module_global(obj: Any) -> bool:
    """Whether ``obj`` is what its module's global of its qualified name holds
    (a decorated function): then it pickles by reference, like a function."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    value: Any = module
    for part in str(getattr(obj, "__qualname__", "")).split("."):
        value = getattr(value, part, None)
    return value is obj
