"""A straight-line kernel as plain Python that returns what its Numba machine code
returns, bit for bit (the warm start's first calls, :mod:`symdiff.backend.warm`).

Most of a scalar kernel already means the same in Python and in Numba (with
``fastmath`` off): ``+ - * /`` and comparisons are the same IEEE operations, and
every ``math`` function of the printer's table calls the same libm function (Numba
through an LLVM intrinsic or an external call, CPython's ``math`` directly).  Where
the two differ, the source is rewritten to Numba's semantics or refused:

* ``x ** n`` with an integer literal ``n``: Numba multiplies (square and multiply,
  unrolled), CPython calls ``pow``; rewritten to Numba's products.  Any other
  exponent: refused (LLVM turns ``pow(x, 2.0)`` into ``x * x``, ``pow(2.0, x)``
  into ``exp2(x)``).
* ``min``/``max``: Numba converts both operands to their common type first;
  ``np.sign``/``np.floor``/``np.ceil`` and ``np.maximum``/``np.minimum``/
  ``np.fmax``/``np.fmin``: replaced by their Numba definitions with Python floats;
  ``np.cbrt``: libm's ``cbrt`` in Numba, Python's ``math.cbrt`` (refused before
  Python 3.11, which has only NumPy's own).
* Integer literals stay integers: where one meets a float, Python converts it to
  float64 as Numba does (``select`` arms and ``min``/``max`` operands are made
  floats explicitly).  Arithmetic between literals alone (Numba's int64 wraps
  around, Python's ints do not) and literals beyond 2**53 are refused.
* ``//``, ``%`` (NaN handling differs), ``math.hypot`` (CPython has its own):
  refused.
* What Python reports as an error (``1 / 0``, ``math.log(0)``, ``math.exp(1000)``)
  Numba returns as an IEEE value (``error_model="numpy"``): the caller lets the
  Numba kernel answer those calls.

The results are converted to the Python type of each output's IR dtype, as Numba
returns them.  NaN payloads aside, tests/test_warm_start.py checks the equality
against the Numba kernel on the corpus.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from symdiff.ir.ops import OPS

#: ``math`` functions whose CPython and Numba versions call the same libm function.
MATH_FUNCTIONS = frozenset(
    "exp expm1 log log1p log2 log10 sqrt sin cos tan asin acos atan sinh cosh tanh "
    "asinh acosh atanh erf erfc atan2 copysign ldexp gcd".split()
)
MATH_CONSTANTS = frozenset({"inf", "nan"})

#: The largest integer literal kept: every int up to it converts to float exactly.
MAX_EXACT_INT = 2**53
#: Numba unrolls ``x ** n`` up to this ``|n|`` and calls ``pow`` beyond.
MAX_UNROLLED_POWER = 0x10000

_PREFIX = "_symdiff_"

_ALLOWED = (
    ast.Module,
    ast.Import,
    ast.alias,
    ast.FunctionDef,
    ast.arguments,
    ast.arg,
    ast.Assign,
    ast.Return,
    ast.Name,
    ast.Load,
    ast.Store,
    ast.Constant,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.Call,
    ast.Attribute,
    ast.Tuple,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.Pow,
    ast.USub,
    ast.Not,
    ast.And,
    ast.Or,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
    ast.Eq,
    ast.NotEq,
)


class Unsupported(Exception):
    """The source uses something whose plain-Python meaning may differ."""


def int_power(x: float, n: int) -> float:
    """``x ** n`` as Numba computes it for a literal ``n`` (numba/cpython/numbers.py,
    ``static_power_impl``): square and multiply, then ``1 / r`` for ``n < 0``."""
    if type(x) is not float:
        raise Unsupported("an integer power of a non-float")
    result, square, k = 1.0, x, abs(n)
    while k:
        if k & 1:
            result = result * square
        k >>= 1
        if k:
            square = square * square
    return 1.0 / result if n < 0 else result


def _common_float(a: Any, b: Any) -> tuple[float, float]:
    """Both operands in Numba's common type, which is float64 if either is."""
    if type(a) is not float and type(b) is not float:
        raise Unsupported("min/max of two non-floats")
    return float(a), float(b)


def minimum(a: Any, b: Any) -> float:
    """Numba's ``min(a, b)``: ``b if b < a else a``, after conversion."""
    x, y = _common_float(a, b)
    return y if y < x else x


def maximum(a: Any, b: Any) -> float:
    """Numba's ``max(a, b)``: ``b if b > a else a``, after conversion."""
    x, y = _common_float(a, b)
    return y if y > x else x


def _converted(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], float]:
    """``fn`` (the op table's reference for ``np.maximum`` and kin: a NaN operand
    and a tie as Numba's ``np_real_maximum_impl``) of both operands converted to
    float64 first, as Numba does."""

    def call(a: Any, b: Any) -> float:
        return fn(*_common_float(a, b))  # type: ignore[no-any-return]

    return call


np_maximum = _converted(OPS["maximum"].impl)  # type: ignore[arg-type]
np_minimum = _converted(OPS["minimum"].impl)  # type: ignore[arg-type]
np_fmax = _converted(OPS["fmax"].impl)  # type: ignore[arg-type]
np_fmin = _converted(OPS["fmin"].impl)  # type: ignore[arg-type]


def sign(x: float) -> float:
    """Numba's ``np.sign`` of a float: 1, -1, or ``x`` itself (zeros, NaN)."""
    return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else float(x))


def cbrt(x: float) -> float:
    """Numba's ``np.cbrt``: libm's ``cbrt``, which is Python's ``math.cbrt``
    (NumPy's own can differ in the last bit; Python 3.10 has no other)."""
    exact = getattr(math, "cbrt", None)
    if exact is None:
        raise Unsupported("libm's cbrt")
    return exact(x)  # type: ignore[no-any-return]


def floor(x: float) -> float:
    return float(np.floor(x))


def ceil(x: float) -> float:
    return float(np.ceil(x))


#: The calls replaced by their Numba definitions: builtins by name, NumPy's by
#: attribute of ``np`` (each is the helper ``_symdiff_<name>`` or
#: ``_symdiff_np_<attr>`` of the rewritten module).
_REPLACED_CALLS: dict[str, Callable[..., Any]] = {"min": minimum, "max": maximum}
_NUMPY_CALLS: dict[str, Callable[..., Any]] = {
    "sign": sign,
    "cbrt": cbrt,
    "floor": floor,
    "ceil": ceil,
    "maximum": np_maximum,
    "minimum": np_minimum,
    "fmax": np_fmax,
    "fmin": np_fmin,
}
_BUILTIN_CALLS = frozenset({"abs", "float"})
_MODULES = {"math": None, "numpy": "np"}


def _int_literal(node: ast.expr) -> int | None:
    """The value of ``3`` or ``-3`` as printed, else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_literal(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _helper(name: str) -> ast.Name:
    return ast.Name(_PREFIX + name, ast.Load())


class _Rewrite(ast.NodeTransformer):
    """The kernel's module with Numba's semantics; raises :class:`Unsupported`."""

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if not isinstance(node, _ALLOWED):
            raise Unsupported(type(node).__name__)
        return super().generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id.startswith(_PREFIX):
            raise Unsupported(f"the name {node.id}")
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        value = node.value
        if type(value) in (float, bool) or (
            type(value) is int and abs(value) <= MAX_EXACT_INT
        ):
            return node
        raise Unsupported(f"the constant {value!r}")

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            raise Unsupported("an assignment to something else than a name")
        return self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> ast.AST:
        if any(
            a.name not in _MODULES or a.asname != _MODULES[a.name] for a in node.names
        ):
            raise Unsupported(f"the import {ast.unparse(node)}")
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        left, right = _int_literal(node.left), _int_literal(node.right)
        if left is not None and right is not None:
            raise Unsupported("integer-only arithmetic")
        if not isinstance(node.op, ast.Pow):
            return self.generic_visit(node)
        if right is None or abs(right) > MAX_UNROLLED_POWER:
            raise Unsupported("a power whose exponent is not an integer literal")
        call = ast.Call(
            _helper("int_power"), [self.visit(node.left), ast.Constant(right)], []
        )
        return ast.copy_location(call, node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        # Only reached outside calls: math.inf, math.nan.
        if (
            isinstance(node.value, ast.Name)
            and node.value.id == "math"
            and node.attr in MATH_CONSTANTS
        ):
            return node
        raise Unsupported(f"the attribute {ast.unparse(node)}")

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if node.keywords:
            raise Unsupported("keyword arguments")
        func = node.func
        args = [self.visit(a) for a in node.args]
        if isinstance(func, ast.Name) and func.id in _REPLACED_CALLS:
            func = _helper(func.id)
        elif isinstance(func, ast.Name) and func.id in _BUILTIN_CALLS:
            pass
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            module, attr = func.value.id, func.attr
            if module == "np" and attr in _NUMPY_CALLS:
                func = _helper("np_" + attr)
            elif not (module == "math" and attr in MATH_FUNCTIONS):
                raise Unsupported(f"the call {ast.unparse(func)}")
        else:
            raise Unsupported(f"the call {ast.unparse(func)}")
        return ast.copy_location(ast.Call(func, args, []), node)


_HELPERS: dict[str, Callable[..., Any]] = {
    _PREFIX + "int_power": int_power,
    **{_PREFIX + name: fn for name, fn in _REPLACED_CALLS.items()},
    **{_PREFIX + "np_" + attr: fn for attr, fn in _NUMPY_CALLS.items()},
}


def exact_python(
    source: str, name: str, types: Any = None
) -> Callable[..., Any] | None:
    """Function ``name`` of the generated module ``source`` as plain Python with
    the Numba kernel's results, for float arguments; None if the source uses
    anything whose meaning could differ (see the module docstring).

    ``types``: the Python type of each output (a type, or a nested tuple of them),
    as Numba returns the kernel's output dtypes; the results are converted to them
    (:func:`conform`).  The function raises where Numba would return an IEEE
    special value (or :class:`Unsupported` for an operand type it does not
    reproduce): its caller then calls the Numba kernel.
    """
    try:
        tree = _Rewrite().visit(ast.parse(source))
    except Unsupported:
        return None
    ast.fix_missing_locations(tree)
    namespace: dict[str, Any] = {"__name__": f"symdiff_exact_{name}", **_HELPERS}
    exec(compile(tree, f"<symdiff exact python: {name}>", "exec"), namespace)
    fn = namespace.get(name)
    if not callable(fn):
        return None
    if types is None:
        return fn  # type: ignore[no-any-return]

    def exact(*args: float) -> Any:
        return conform(fn(*args), types)

    return exact


def conform(value: Any, types: Any) -> Any:
    """``value`` with each leaf converted to the Python type at the same place in
    ``types`` (a type, or a nested tuple of them): what Numba returns for the
    kernel's output dtypes."""
    if isinstance(types, tuple):
        if not isinstance(value, tuple) or len(value) != len(types):
            raise Unsupported("an output structure that differs from the plan")
        return tuple(conform(v, t) for v, t in zip(value, types, strict=True))
    return types(value)


__all__ = ["MATH_FUNCTIONS", "Unsupported", "conform", "exact_python", "int_power"]
