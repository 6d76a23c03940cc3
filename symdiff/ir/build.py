"""Smart constructors: the only way passes build nodes.

They fold constants (NumPy float64 semantics) and apply identities that hold for every
IEEE value (``x + 0 -> x``, ``x * 1 -> x``, ``--x -> x``).  ``x * 0`` is *not* folded:
``inf * 0`` is NaN, and gradient checks rely on IEEE results.

Selects get special care.  Piecewise code is if-converted into ``select(c, a, b)``;
reverse mode then sends ``select(c, g, 0)`` into the taken branch only.  Multiplying
that by a local partial that is infinite in the *untaken* branch (``sqrt`` at 0) would
give ``0 * inf = NaN``; pushing the product inside the select instead
(``select(c, g * p, 0)``) keeps the untaken branch an exact zero.  That is why these
constructors distribute ``mul``/``div``/``neg``/``add`` over selects with a zero arm.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from symdiff.ir.node import Node, constant, is_one, is_zero, make
from symdiff.ir.ops import BOOL_OPS, evaluate, result_dtype
from symdiff.ir.shapes import Shape, broadcast


def shape_of(op: str, args: tuple[Node, ...]) -> Shape:
    """The broadcast shape of an element-wise op's operands."""
    shapes = [a.shape for a in args if a.shape]
    if not shapes:
        return ()
    if len(shapes) == 1:
        return shapes[0]
    return broadcast(shapes, lambda: f"in `{op}`")


TRUE = constant(True)
FALSE = constant(False)
ZERO = constant(0.0)
ONE = constant(1.0)


def _to_python(value: Any, dtype: str) -> Any:
    if dtype == "bool":
        return bool(value)
    if dtype == "int64":
        return int(value)
    return float(value)


def apply(op: str, *args: Node) -> Node:
    """Build ``op(*args)`` with folding and identities; the generic entry point."""
    special = _SPECIAL.get(op)
    if special is not None:
        return special(*args)
    return _plain(op, *args)


def _stretched(fn: Callable[[Node, Node], Node]) -> Callable[[Node, Node], Node]:
    """``broadcast(c) op s`` for scalars ``c`` and ``s`` is ``broadcast(c op s)``:
    the op folds on the scalars (an adjoint seed ``1`` times a constant partial)."""

    def build(a: Node, b: Node) -> Node:
        for x, y, first in ((a, b, True), (b, a, False)):
            if x.op == "broadcast" and not x.args[0].shape and not y.shape:
                inner = fn(x.args[0], y) if first else fn(y, x.args[0])
                return broadcast_to(inner, x.shape)
        return fn(a, b)

    build.__name__ = fn.__name__
    build.__doc__ = fn.__doc__
    return build


def _unstretch(a: Node, b: Node) -> tuple[Node, Node]:
    """Drop an explicit ``broadcast`` of an operand when the op's own
    broadcasting gives the same shape: ``broadcast(c) * x`` is ``c * x``, so
    constants stay constants and the identities above apply."""
    if a.op == "broadcast" and a.shape == b.shape:
        a = a.args[0]
    elif b.op == "broadcast" and b.shape == a.shape:
        b = b.args[0]
    return a, b


#: Ops where a bool operand counts as the int 0 or 1 (``True + True == 2``).
_INT_ARITHMETIC = frozenset(
    {"add", "sub", "mul", "floordiv", "mod", "pow", "neg", "abs"}
)


def _plain(op: str, *args: Node) -> Node:
    dtype = result_dtype(op, [a.dtype for a in args])
    if args and all(a.op == "const" for a in args):
        value = evaluate(op, [a.value for a in args])
        return constant(_to_python(value, dtype))
    if dtype == "int64" and op in _INT_ARITHMETIC:
        # Python's (and Numba's) bools are ints in arithmetic, NumPy's are not:
        # np.True_ + np.True_ is True, np.True_ - np.True_ raises.  Cast them, so
        # that target="python" (NumPy scalars) computes what the kernel does.
        args = tuple(to_int(a) for a in args)
    return make(op, args, shape=shape_of(op, args), dtype=dtype)


def _zero_like(dtype: str) -> Node:
    return constant(0) if dtype == "int64" else ZERO


def _zero_arm(node: Node) -> tuple[Node, Node, bool] | None:
    """For ``select(c, x, 0)`` return ``(c, x, True)``; for ``select(c, 0, x)``
    return ``(c, x, False)``; otherwise None."""
    if node.op != "select":
        return None
    c, a, b = node.args
    if is_zero(b):
        return c, a, True
    if is_zero(a):
        return c, b, False
    return None


def _rearm(cond: Node, value: Node, taken: bool) -> Node:
    zero = _zero_like(value.dtype)
    return select(cond, value, zero) if taken else select(cond, zero, value)


@_stretched
def add(a: Node, b: Node) -> Node:
    a, b = _unstretch(a, b)
    dtype = result_dtype("add", [a.dtype, b.dtype])
    if is_zero(b) and a.dtype == dtype:
        return a
    if is_zero(a) and b.dtype == dtype:
        return b
    if a.op == "select" and b.op == "select" and a.args[0] is b.args[0]:
        # Two selects on one condition: add the arms (one select, and exact zeros
        # in untaken arms stay exact).
        return select(a.args[0], add(a.args[1], b.args[1]), add(a.args[2], b.args[2]))
    if b.op == "neg":
        return sub(a, b.args[0])
    if a.shape and b.shape and "index_update" in (a.op, b.op):
        from symdiff.ir.arrays import fold_index_add

        folded = fold_index_add(a, b)
        if folded is not None:
            return folded
    return _plain("add", a, b)


@_stretched
def sub(a: Node, b: Node) -> Node:
    a, b = _unstretch(a, b)
    dtype = result_dtype("sub", [a.dtype, b.dtype])
    if is_zero(b) and a.dtype == dtype:
        return a
    if is_zero(a) and b.dtype == dtype and b.op != "const":
        return neg(b)
    if b.op == "neg":
        return add(a, b.args[0])
    return _plain("sub", a, b)


@_stretched
def mul(a: Node, b: Node) -> Node:
    a, b = _unstretch(a, b)
    dtype = result_dtype("mul", [a.dtype, b.dtype])
    if is_one(b) and a.dtype == dtype:
        return a
    if is_one(a) and b.dtype == dtype:
        return b
    if b.op == "const" and a.op != "const":
        a, b = b, a  # constants first (``2 * x``): one canonical form for CSE
    if a.op == "const" and a.value == -1 and b.dtype == dtype:
        return neg(b)
    if (
        a.op == "const"
        and b.op == "mul"
        and b.args[0].op == "const"
        and (dtype == "int64" or _scales_exactly(a) or _scales_exactly(b.args[0]))
    ):
        return mul(_plain("mul", a, b.args[0]), b.args[1])  # 0.5 * (2 * x) -> x
    for x, y in ((a, b), (b, a)):
        arm = _zero_arm(x)
        if arm:
            return _rearm(arm[0], mul(arm[1], y), arm[2])
    if a.op == "neg":
        return neg(mul(a.args[0], b))
    if b.op == "neg":
        return neg(mul(a, b.args[0]))
    if b.op == "div" and is_one(b.args[0]):
        return div(a, b.args[1])
    if a.op == "div" and is_one(a.args[0]):
        return div(b, a.args[1])
    return _plain("mul", a, b)


def _scales_exactly(c: Node) -> bool:
    """Whether ``c * (d * x)`` is ``(c * d) * x`` in floating point for every
    constant ``d``: ``c`` a power of two (bar overflow and underflow).
    ``100.0 * (0.1 * x)`` is not ``10.0 * x``, nor ``3 * (0.1 * x)``; products
    of ints wrap alike in any order (the caller's other case)."""
    value = float(c.value)
    return math.isfinite(value) and value != 0 and math.frexp(abs(value))[0] == 0.5


def _one_plus_exp(node: Node) -> Node | None:
    """For ``1 + exp(y)`` (either order) return ``y``."""
    if node.op != "add":
        return None
    a, b = node.args
    if is_one(a) and b.op == "exp":
        return b.args[0]
    if is_one(b) and a.op == "exp":
        return a.args[0]
    return None


@_stretched
def div(a: Node, b: Node) -> Node:
    a, b = _unstretch(a, b)
    if is_one(b) and a.dtype == "float64":
        return a
    # The logistic written by hand, 1/(1 + exp(-x)) or exp(x)/(1 + exp(x)), becomes
    # the sigmoid op: same value, but its derivative s*(1-s) stays finite where
    # exp(-x) overflows (the chain rule through the spelling gives 0 * inf).
    y = _one_plus_exp(b)
    if y is not None:
        if is_one(a):
            return apply("sigmoid", neg(y))
        if a.op == "exp" and a.args[0] is y:
            return apply("sigmoid", y)
    arm = _zero_arm(a)
    if arm:
        return _rearm(arm[0], div(arm[1], b), arm[2])
    if a.op == "neg":
        return neg(div(a.args[0], b))
    return _plain("div", a, b)


def neg(a: Node) -> Node:
    if a.op == "neg":
        return a.args[0]
    arm = _zero_arm(a)
    if arm:
        return _rearm(arm[0], neg(arm[1]), arm[2])
    return _plain("neg", a)


@_stretched
def pow_(a: Node, b: Node) -> Node:
    a, b = _unstretch(a, b)
    a, b = to_int(a), to_int(b)  # True ** -1 is 1.0: a bool is an int here
    if b.op == "const":
        if b.value == 1 and a.dtype == result_dtype("pow", [a.dtype, b.dtype]):
            return a
        if b.value == 0:
            return constant(1) if a.dtype == "int64" == b.dtype else ONE
    if a.dtype == "int64" == b.dtype and not (b.op == "const" and b.value >= 0):
        # int ** int is an int only for a non-negative exponent; Python would
        # return a float otherwise, so compute in floating point.
        a = apply("float", a)
    return _plain("pow", a, b)


def log(a: Node) -> Node:
    # log(1 + exp(x)) -> softplus(x), evaluated as max(x, 0) + log1p(exp(-|x|)),
    # which neither overflows for large x nor loses the tail for very negative x.
    y = _one_plus_exp(a)
    if y is not None:
        return apply("softplus", y)
    return _plain("log", a)


def log1p(a: Node) -> Node:
    if a.op == "exp":
        return apply("softplus", a.args[0])
    return _plain("log1p", a)


def to_int(a: Node) -> Node:
    """A bool as the int 0 or 1 (NumPy's sums of bools); other dtypes as they are."""
    if a.dtype != "bool":
        return a
    return select(a, constant(1), constant(0))


def truncate(a: Node) -> Node:
    """``int(a)``: a float toward zero (slope 0); a bool as 0 or 1."""
    if a.dtype == "int64":
        return a
    if a.dtype == "bool":
        return to_int(a)
    return _plain("int", a)


def to_float(a: Node) -> Node:
    if a.dtype == "float64":
        return a
    if a.dtype == "bool":  # Numba has no float(bool)
        return select(a, ONE, ZERO)
    return _plain("float", a)


def select(c: Node, a: Node, b: Node) -> Node:
    """``a if c else b``, evaluated without branching on the graph level."""
    if c.op == "const":
        chosen = a if c.value else b
        dtype = result_dtype("select", [c.dtype, a.dtype, b.dtype])
        return _cast_like(chosen, dtype)
    if a is b:
        return broadcast_to(a, shape_of("where", (c, a, b)))
    if c.op == "not":
        return select(c.args[0], b, a)
    dtype = result_dtype("select", [c.dtype, a.dtype, b.dtype])
    a, b = _cast_like(a, dtype), _cast_like(b, dtype)
    # select(c, select(c, x, y), z) -> select(c, x, z): the inner test is decided.
    if a.op == "select" and a.args[0] is c:
        a = a.args[1]
    if b.op == "select" and b.args[0] is c:
        b = b.args[2]
    if a is b:
        return a
    return make("select", (c, a, b), shape=shape_of("where", (c, a, b)), dtype=dtype)


def broadcast_to(x: Node, shape: Shape) -> Node:
    """``x`` stretched to ``shape`` (a no-op when it has that shape)."""
    if x.shape == shape:
        return x
    while x.op in ("broadcast", "reshape") and not x.args[0].shape:
        x = x.args[0]  # a scalar, however it was stretched
    if x.op == "broadcast":
        x = x.args[0]
    if x.shape == shape:
        return x
    return make("broadcast", (x,), shape=shape, dtype=x.dtype)


def _cast_like(node: Node, dtype: str) -> Node:
    if node.dtype == dtype or dtype != "float64":
        return node
    return to_float(node)


def logical_and(a: Node, b: Node) -> Node:
    for x, y in ((a, b), (b, a)):
        if x.op == "const":
            return y if x.value else FALSE
    if a is b:
        return a
    return make("and", (a, b), shape=shape_of("and", (a, b)), dtype="bool")


def logical_or(a: Node, b: Node) -> Node:
    for x, y in ((a, b), (b, a)):
        if x.op == "const":
            return TRUE if x.value else y
    if a is b:
        return a
    return make("or", (a, b), shape=shape_of("or", (a, b)), dtype="bool")


def logical_not(a: Node) -> Node:
    if a.op == "const":
        return constant(not a.value)
    if a.op == "not":
        return a.args[0]
    return make("not", (a,), shape=a.shape, dtype="bool")


def truth(a: Node) -> Node:
    """A value used as a condition: ``bool(a)``."""
    if a.dtype == "bool" or a.op in BOOL_OPS:
        return a
    return _plain("ne", a, _zero_like(a.dtype))


_SPECIAL: dict[str, Callable[..., Node]] = {
    "add": add,
    "sub": sub,
    "mul": mul,
    "div": div,
    "neg": neg,
    "pow": pow_,
    "float": to_float,
    "log": log,
    "log1p": log1p,
    "select": select,
    "and": logical_and,
    "or": logical_or,
    "not": logical_not,
}
