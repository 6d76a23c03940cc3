"""The op table: every op the IR knows, declared once.

Each row gives the op's arity, its kind (used for op counts and scheduling), how its
result dtype follows from its operands, and a reference implementation with NumPy
float64 semantics (used for constant folding and by the reference interpreter).
Derivatives live in :mod:`symdiff.rules`, print templates in
:mod:`symdiff.backend.printer`, SymPy translations in :mod:`symdiff.symbolic`; a test
checks that those tables cover exactly the ops declared here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from symdiff.ir.node import DTYPES

# Op kinds.  ``arith`` and ``transcendental`` are what op counts measure.
LEAF = "leaf"
ARITH = "arith"
TRANSCENDENTAL = "transcendental"
COMPARE = "compare"
LOGIC = "logic"
SELECT = "select"
CAST = "cast"
PASS = "passthrough"  # the value of its last operand; only the derivative differs
REDUCE = "reduce"  # sum/max/min/prod over axes
LINALG = "linalg"  # matrix products, np.linalg
LAYOUT = "layout"  # broadcast, transpose, reshape, indexing: moves elements around
CONTROL = "control"  # loops (ir/loops.py): a body subgraph run a number of times

# Result-dtype rules.
FLOAT = "float"  # always float64
PROMOTE = "promote"  # widest of the operands (bool < int64 < float64)
BOOL = "bool"
SELECT_DT = "select"  # widest of the two value operands
INT = "int"  # always int64
SAME = "same"  # widest of the operands, bool stays bool


@dataclass(frozen=True)
class OpSpec:
    name: str
    arity: int
    kind: str
    dtype_rule: str
    impl: Callable[..., Any] | None
    #: (arithmetic, transcendental) operations the printed form performs, when it
    #: is more than one op of its kind (see :data:`COSTS`).
    cost: tuple[int, int] | None = None


def _floordiv(a: Any, b: Any) -> Any:
    return np.floor_divide(a, b)


def _mod(a: Any, b: Any) -> Any:
    return np.mod(a, b)


def _pow(a: Any, b: Any) -> Any:
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)) and b >= 0:
        return int(a) ** int(b)
    return np.power(np.float64(a), np.float64(b))


def _sign(a: Any) -> Any:
    return np.sign(np.float64(a))


def _extreme(larger: bool, nan_wins: bool) -> Callable[[Any, Any], Any]:
    """``np.maximum``/``np.minimum`` (``nan_wins``: a NaN operand is the result) or
    ``np.fmax``/``np.fmin`` (a NaN operand is passed over); ``a`` on a tie."""

    def pick(a: Any, b: Any) -> Any:
        if a != a or b != b:
            nan = a if a != a else b
            return nan if nan_wins else (b if nan is a else a)
        return a if (a >= b if larger else a <= b) else b

    return pick


_maximum, _minimum = _extreme(True, True), _extreme(False, True)
_fmax, _fmin = _extreme(True, False), _extreme(False, False)


def _erf(a: Any) -> float:
    return math.erf(a) if not math.isnan(a) else math.nan


def _erfc(a: Any) -> float:
    return math.erfc(a) if not math.isnan(a) else math.nan


def _lgamma(a: Any) -> float:
    """``math.lgamma`` with C's IEEE answers where Python raises: ``inf`` at the
    poles (0, -1, -2, ...) and on overflow."""
    try:
        return math.lgamma(a)
    except (ValueError, OverflowError):
        return math.inf


def _gamma(a: Any) -> float:
    """``math.gamma`` with C's ``tgamma`` answers where Python raises: ``±inf``
    at ``±0``, NaN at the negative integers and ``-inf``, ``inf`` on overflow."""
    try:
        return math.gamma(a)
    except (ValueError, OverflowError):
        if a == 0:
            return math.copysign(math.inf, a)
        if a < 0:
            return math.nan
        return math.inf


def _int(a: Any) -> int:
    """``int(x)``: toward zero, as Python; NaN and infinities give what Numba's
    conversion gives (the x86 "integer indefinite" value), not an exception."""
    if isinstance(a, (bool, int, np.integer)):
        return int(a)
    if not math.isfinite(a) or not -(2.0**63) <= a < 2.0**63:
        return -(2**63)
    return int(a)


def _wrap(value: int) -> int:
    """A Python int as the int64 it is in the kernel (two's complement)."""
    return (int(value) + 2**63) % 2**64 - 2**63


def _cbrt(a: Any) -> float:
    """libm's ``cbrt``, which Numba's ``np.cbrt`` calls (NumPy's own can differ
    in the last bit); Python before 3.11 has only NumPy's."""
    cbrt = getattr(math, "cbrt", None)
    return cbrt(float(a)) if cbrt is not None else float(np.cbrt(_F(a)))


def _ldexp(a: Any, i: Any) -> float:
    """``math.ldexp`` with C's answers (``inf`` on overflow) where Python raises."""
    # beyond +-2200 every finite nonzero a overflows or underflows alike
    return float(np.ldexp(_F(a), max(min(int(i), 2200), -2200)))


def _shift(left: bool) -> Callable[[Any, Any], int]:
    """``a << b`` / ``a >> b`` of int64s, for counts the frontend keeps within
    0..63 (it handles larger ones): wrapped as the kernel's int64."""

    def shift(a: Any, b: Any) -> int:
        return _wrap(int(a) << int(b) if left else int(a) >> int(b))

    return shift


def _select(c: Any, a: Any, b: Any) -> Any:
    return a if c else b


def _sigmoid(a: Any) -> Any:
    a = np.float64(a)
    if a >= 0:
        return 1.0 / (1.0 + np.exp(-a))
    e = np.exp(a)
    return e / (1.0 + e)


def _softplus(a: Any) -> Any:
    a = np.float64(a)
    return max(a, 0.0) + np.log1p(np.exp(-abs(a)))


_F = np.float64

# fmt: off
_ROWS: list[tuple[str, int, str, str, Callable[..., Any] | None]] = [
    # name       arity kind            dtype     reference implementation
    ("param",    0, LEAF,           FLOAT,     None),
    ("const",    0, LEAF,           FLOAT,     None),
    ("float",    1, CAST,           FLOAT,     lambda a: float(a)),
    ("int",      1, CAST,           INT,       _int),
    ("stop_gradient", 1, PASS,      PROMOTE,   lambda a: a),
    # custom(inputs..., value): a user-ruled function; partials held in attrs
    ("custom",  -1, PASS,           SELECT_DT, lambda *a: a[-1]),
    ("add",      2, ARITH,          PROMOTE,   lambda a, b: a + b),
    ("sub",      2, ARITH,          PROMOTE,   lambda a, b: a - b),
    ("mul",      2, ARITH,          PROMOTE,   lambda a, b: a * b),
    ("div",      2, ARITH,          FLOAT,     lambda a, b: np.divide(_F(a), _F(b))),
    ("floordiv", 2, ARITH,          PROMOTE,   _floordiv),
    ("mod",      2, ARITH,          PROMOTE,   _mod),
    ("pow",      2, ARITH,          PROMOTE,   _pow),
    ("neg",      1, ARITH,          PROMOTE,   lambda a: -a),
    ("abs",      1, ARITH,          PROMOTE,   lambda a: abs(a)),
    ("sign",     1, ARITH,          FLOAT,     _sign),
    ("floor",    1, ARITH,          FLOAT,     lambda a: np.floor(_F(a))),
    ("ceil",     1, ARITH,          FLOAT,     lambda a: np.ceil(_F(a))),
    ("max",      2, ARITH,          PROMOTE,   lambda a, b: b if b > a else a),
    ("min",      2, ARITH,          PROMOTE,   lambda a, b: b if b < a else a),
    # NumPy's element-wise forms: NaN-propagating (maximum) and NaN-ignoring (fmax)
    ("maximum",  2, ARITH,          PROMOTE,   _maximum),
    ("minimum",  2, ARITH,          PROMOTE,   _minimum),
    ("fmax",     2, ARITH,          PROMOTE,   _fmax),
    ("fmin",     2, ARITH,          PROMOTE,   _fmin),
    ("copysign", 2, ARITH,          FLOAT,     lambda a, b: np.copysign(_F(a), _F(b))),
    ("exp",      1, TRANSCENDENTAL, FLOAT,     lambda a: np.exp(_F(a))),
    ("expm1",    1, TRANSCENDENTAL, FLOAT,     lambda a: np.expm1(_F(a))),
    ("log",      1, TRANSCENDENTAL, FLOAT,     lambda a: np.log(_F(a))),
    ("log1p",    1, TRANSCENDENTAL, FLOAT,     lambda a: np.log1p(_F(a))),
    ("log2",     1, TRANSCENDENTAL, FLOAT,     lambda a: np.log2(_F(a))),
    ("log10",    1, TRANSCENDENTAL, FLOAT,     lambda a: np.log10(_F(a))),
    ("sqrt",     1, TRANSCENDENTAL, FLOAT,     lambda a: np.sqrt(_F(a))),
    ("sin",      1, TRANSCENDENTAL, FLOAT,     lambda a: np.sin(_F(a))),
    ("cos",      1, TRANSCENDENTAL, FLOAT,     lambda a: np.cos(_F(a))),
    ("tan",      1, TRANSCENDENTAL, FLOAT,     lambda a: np.tan(_F(a))),
    ("asin",     1, TRANSCENDENTAL, FLOAT,     lambda a: np.arcsin(_F(a))),
    ("acos",     1, TRANSCENDENTAL, FLOAT,     lambda a: np.arccos(_F(a))),
    ("atan",     1, TRANSCENDENTAL, FLOAT,     lambda a: np.arctan(_F(a))),
    ("sinh",     1, TRANSCENDENTAL, FLOAT,     lambda a: np.sinh(_F(a))),
    ("cosh",     1, TRANSCENDENTAL, FLOAT,     lambda a: np.cosh(_F(a))),
    ("tanh",     1, TRANSCENDENTAL, FLOAT,     lambda a: np.tanh(_F(a))),
    ("asinh",    1, TRANSCENDENTAL, FLOAT,     lambda a: np.arcsinh(_F(a))),
    ("acosh",    1, TRANSCENDENTAL, FLOAT,     lambda a: np.arccosh(_F(a))),
    ("atanh",    1, TRANSCENDENTAL, FLOAT,     lambda a: np.arctanh(_F(a))),
    ("erf",      1, TRANSCENDENTAL, FLOAT,     _erf),
    ("erfc",     1, TRANSCENDENTAL, FLOAT,     _erfc),
    ("atan2",    2, TRANSCENDENTAL, FLOAT,     lambda a, b: np.arctan2(_F(a), _F(b))),
    ("hypot",    2, TRANSCENDENTAL, FLOAT,     lambda a, b: np.hypot(_F(a), _F(b))),
    ("lgamma",   1, TRANSCENDENTAL, FLOAT,     _lgamma),
    ("gamma",    1, TRANSCENDENTAL, FLOAT,     _gamma),
    ("logaddexp", 2, TRANSCENDENTAL, FLOAT,    lambda a, b: np.logaddexp(_F(a), _F(b))),
    ("cbrt",     1, TRANSCENDENTAL, FLOAT,     _cbrt),
    ("ldexp",    2, ARITH,          FLOAT,     _ldexp),  # a * 2**i, i an int
    # integers only (the frontend refuses floats); no derivative
    ("gcd",      2, ARITH,          INT,       lambda a, b: _wrap(math.gcd(a, b))),
    ("bitand",   2, ARITH,          INT,       lambda a, b: int(a) & int(b)),
    ("bitor",    2, ARITH,          INT,       lambda a, b: int(a) | int(b)),
    ("bitxor",   2, ARITH,          INT,       lambda a, b: int(a) ^ int(b)),
    ("lshift",   2, ARITH,          INT,       _shift(left=True)),
    ("rshift",   2, ARITH,          INT,       _shift(left=False)),
    ("invert",   1, ARITH,          INT,       lambda a: ~int(a)),
    # Recognised from the user's spelling (ir/build.py), printed in stable forms.
    ("sigmoid",  1, TRANSCENDENTAL, FLOAT,     _sigmoid),
    ("softplus", 1, TRANSCENDENTAL, FLOAT,     _softplus),
    ("lt",       2, COMPARE,        BOOL,      lambda a, b: bool(a < b)),
    ("le",       2, COMPARE,        BOOL,      lambda a, b: bool(a <= b)),
    ("gt",       2, COMPARE,        BOOL,      lambda a, b: bool(a > b)),
    ("ge",       2, COMPARE,        BOOL,      lambda a, b: bool(a >= b)),
    ("eq",       2, COMPARE,        BOOL,      lambda a, b: bool(a == b)),
    ("ne",       2, COMPARE,        BOOL,      lambda a, b: bool(a != b)),
    ("and",      2, LOGIC,          BOOL,      lambda a, b: bool(a and b)),
    ("or",       2, LOGIC,          BOOL,      lambda a, b: bool(a or b)),
    ("not",      1, LOGIC,          BOOL,      lambda a: not a),
    ("select",   3, SELECT,         SELECT_DT, _select),
    # -- arrays (ir/arrays.py); attrs hold the static part (axes, shapes, indices)
    ("dim",      0, LEAF,           INT,       None),   # a length, (Length,)
    ("iota",     0, LEAF,           INT,       None),   # index along axis, (axis,)
    ("broadcast", 1, LAYOUT,        SAME,      None),   # to node.shape
    ("transpose", 1, LAYOUT,        SAME,      None),   # (perm,)
    ("reshape",  1, LAYOUT,         SAME,      None),   # to node.shape
    ("getitem",  1, LAYOUT,         SAME,      None),   # (index spec,)
    ("scatter",  1, LAYOUT,         SAME,      None),   # zeros, region = arg
    ("concat",  -1, LAYOUT,         SAME,      None),   # (axis,)
    ("pack",    -1, LAYOUT,         SAME,      None),   # scalars -> 1-D
    ("sum",      1, REDUCE,         PROMOTE,   None),   # (axes,)
    ("prod",     1, REDUCE,         PROMOTE,   None),   # (axes,)
    ("amax",     1, REDUCE,         SAME,      None),   # (axes,)
    ("amin",     1, REDUCE,         SAME,      None),   # (axes,)
    ("dot",      2, LINALG,         PROMOTE,   None),   # 1-D/2-D matmul
    # np.linalg of one square matrix (ir/linalg.py); slogdet's attrs: (result,)
    ("solve",    2, LINALG,         FLOAT,     None),   # a^-1 b, b 1-D or 2-D
    ("inv",      1, LINALG,         FLOAT,     None),
    ("det",      1, LINALG,         FLOAT,     None),
    ("slogdet",  1, LINALG,         FLOAT,     None),   # (0,): sign, (1,): log|det|
    ("cholesky", 1, LINALG,         FLOAT,     None),   # lower factor
    # x[i, :] with run-time integer indices: (array, *indices), attrs (spec,)
    ("take",    -1, LAYOUT,         SAME,      None),
    # x with x[i, :] set to / increased by v: (array, v, *indices), (mode, spec)
    ("index_update", -1, LAYOUT,    SAME,      None),
    # the positions that sort a 1-D array, ties in order (a stable sort); no
    # derivative: np.sort is a gather at them
    ("argsort",  1, LAYOUT,         INT,       None),
    # -- loops (ir/loops.py)
    ("var",      0, LEAF,           FLOAT,     None),   # a loop body's input
    ("loop",    -1, CONTROL,        FLOAT,     None),   # (count, *init, *captured)
    ("item",     1, CONTROL,        FLOAT,     None),   # one result of a loop, (k,)
]
# fmt: on

#: Ops printed as more than one operation: (arithmetic, transcendental) counts.
COSTS: dict[str, tuple[int, int]] = {
    "sigmoid": (3, 1),  # 1 / (1 + exp(-x))
    "softplus": (4, 2),  # max(x, 0) + log1p(exp(-abs(x)))
    "logaddexp": (4, 2),  # max(a, b) + log1p(exp(-abs(a - b)))
}

#: Ops whose printed form uses an operand more than once: the scheduler gives
#: their operands names, so that nothing is computed twice.
REPEATS_OPERANDS = frozenset({"softplus"})

OPS: dict[str, OpSpec] = {row[0]: OpSpec(*row, cost=COSTS.get(row[0])) for row in _ROWS}

#: Ops whose value does not depend on its operands' values continuously: no
#: derivative flows through them (comparisons, logic) or it is zero (floor, ceil...).
BOOL_OPS = frozenset(n for n, s in OPS.items() if s.dtype_rule == BOOL)

#: Ops that act on whole arrays (not element by element): their derivatives are
#: vector-Jacobian products (rules/arrays.py), never Jacobians.
ARRAY_OPS = frozenset(
    n for n, s in OPS.items() if s.kind in (REDUCE, LINALG, LAYOUT, CONTROL)
) | {"dim", "iota"}

#: Loop ops: differentiated as a whole by :mod:`symdiff.ad.loops`, not by a table.
CONTROL_OPS = frozenset(n for n, s in OPS.items() if s.kind == CONTROL)


def result_dtype(op: str, arg_dtypes: list[str]) -> str:
    """The dtype of ``op`` applied to operands of ``arg_dtypes``."""
    rule = OPS[op].dtype_rule
    if rule == FLOAT:
        return "float64"
    if rule == BOOL:
        return "bool"
    if rule == INT:
        return "int64"
    if rule == SAME:
        return max(arg_dtypes, key=DTYPES.index) if arg_dtypes else "float64"
    if rule == SELECT_DT:
        arg_dtypes = arg_dtypes[1:] if op == "select" else arg_dtypes[-1:]
    widest = max(arg_dtypes, key=DTYPES.index)
    if widest == "bool" and rule == PROMOTE:
        return "int64"  # True + True == 2, as in Python
    if op == "pow" and widest == "int64":
        return "int64"
    return widest


def evaluate(op: str, values: list[Any]) -> Any:
    """Apply the reference implementation, NumPy float64 semantics, no warnings."""
    impl = OPS[op].impl
    if impl is None:
        raise TypeError(f"op {op!r} has no reference implementation")
    with np.errstate(all="ignore"):
        return impl(*values)
