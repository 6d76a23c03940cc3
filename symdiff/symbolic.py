"""The bridge to SymPy: IR nodes as SymPy expressions (for people and for tests)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sympy

from symdiff.ir.node import Node, topological


def _num(value: Any) -> sympy.Expr:
    if isinstance(value, bool):
        return sympy.true if value else sympy.false
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return sympy.Integer(int(value))
    if value == 0.5:
        return sympy.Rational(1, 2)
    return sympy.Float(value)


def _copysign(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    return sympy.Abs(a) * sympy.sign(b)


# fmt: off
#: op -> SymPy builder.
SYMPY: dict[str, Callable[..., Any]] = {
    "float":    lambda a: a,
    "stop_gradient": lambda a: a,
    "custom":   lambda *a: a[-1],
    "add":      lambda a, b: a + b,
    "sub":      lambda a, b: a - b,
    "mul":      lambda a, b: a * b,
    "div":      lambda a, b: a / b,
    "floordiv": lambda a, b: sympy.floor(a / b),
    "mod":      lambda a, b: a - b * sympy.floor(a / b),
    "pow":      lambda a, b: a ** b,
    "neg":      lambda a: -a,
    "abs":      sympy.Abs,
    "sign":     sympy.sign,
    "floor":    sympy.floor,
    "ceil":     sympy.ceiling,
    "max":      sympy.Max,
    "min":      sympy.Min,
    "copysign": _copysign,
    "exp":      sympy.exp,
    "expm1":    lambda a: sympy.exp(a) - 1,
    "log":      sympy.log,
    "log1p":    lambda a: sympy.log(1 + a),
    "log2":     lambda a: sympy.log(a, 2),
    "log10":    lambda a: sympy.log(a, 10),
    "sqrt":     sympy.sqrt,
    "sin":      sympy.sin,
    "cos":      sympy.cos,
    "tan":      sympy.tan,
    "asin":     sympy.asin,
    "acos":     sympy.acos,
    "atan":     sympy.atan,
    "sinh":     sympy.sinh,
    "cosh":     sympy.cosh,
    "tanh":     sympy.tanh,
    "asinh":    sympy.asinh,
    "acosh":    sympy.acosh,
    "atanh":    sympy.atanh,
    "erf":      sympy.erf,
    "erfc":     sympy.erfc,
    "atan2":    sympy.atan2,
    "hypot":    lambda a, b: sympy.sqrt(a**2 + b**2),
    "lt":       sympy.Lt,
    "le":       sympy.Le,
    "gt":       sympy.Gt,
    "ge":       sympy.Ge,
    "eq":       sympy.Eq,
    "ne":       sympy.Ne,
    "and":      sympy.And,
    "or":       sympy.Or,
    "not":      sympy.Not,
    "select":   lambda c, a, b: sympy.Piecewise((a, c), (b, True)),
}
# fmt: on


def symbol(node: Node) -> sympy.Symbol:
    """The SymPy symbol of a ``param`` node (real-valued)."""
    return sympy.Symbol(node.attrs[1], real=True)


def to_sympy(value: Any) -> Any:
    """Translate a node, or a (nested) tuple/list of nodes, to SymPy.

    The walk is iterative.  Shared subexpressions become repeated subtrees, so a
    deep DAG can give a large expression: this is for display and testing.
    """
    roots: list[Node] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Node):
            roots.append(item)
        elif isinstance(item, (tuple, list)):
            stack.extend(item)
    memo: dict[Node, Any] = {}
    for node in topological(roots):
        if node.op == "const":
            memo[node] = _num(node.value)
        elif node.op == "param":
            memo[node] = symbol(node)
        else:
            memo[node] = SYMPY[node.op](*(memo[a] for a in node.args))

    def rebuild(item: Any) -> Any:
        if isinstance(item, Node):
            return memo[item]
        return type(item)(rebuild(v) for v in item)

    return rebuild(value)
