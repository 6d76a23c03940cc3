"""Which Python callables the frontend understands, and the IR each one builds.

Calls are resolved to live objects (``math.exp``, ``numpy.exp``, the builtin ``max``)
before they are looked up here, so ``from math import exp as e`` and
``import numpy as xp`` work like the plain spellings.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from symdiff.custom import stop_gradient
from symdiff.frontend.arrays import Unsupported, length
from symdiff.ir import shapes as S
from symdiff.ir.build import (
    ONE,
    ZERO,
    add,
    apply,
    div,
    logical_and,
    logical_not,
    logical_or,
    mul,
    neg,
    pow_,
    select,
    sub,
    to_float,
    to_int,
    truncate,
)
from symdiff.ir.node import Node, constant
from symdiff.ir.special import digamma


@dataclass(frozen=True)
class Builtin:
    """A callable symdiff can translate: its arity range and its IR builder."""

    name: str
    min_args: int
    max_args: int | None
    build: Callable[..., Node]


def _op(op: str) -> Callable[..., Node]:
    return lambda *args: apply(op, *args)


def _fold(op: str) -> Callable[..., Node]:
    """``max(a, b, c)`` as ``max(max(a, b), c)``."""

    def build(*args: Node) -> Node:
        result = args[0]
        for arg in args[1:]:
            result = apply(op, result, arg)
        return result

    return build


_UNARY_OPS = {
    "exp": ("exp",),
    "expm1": ("expm1",),
    "log": ("log",),
    "log1p": ("log1p",),
    "log2": ("log2",),
    "log10": ("log10",),
    "sqrt": ("sqrt",),
    "sin": ("sin",),
    "cos": ("cos",),
    "tan": ("tan",),
    "asin": ("asin", "arcsin"),
    "acos": ("acos", "arccos"),
    "atan": ("atan", "arctan"),
    "sinh": ("sinh",),
    "cosh": ("cosh",),
    "tanh": ("tanh",),
    "asinh": ("asinh", "arcsinh"),
    "acosh": ("acosh", "arccosh"),
    "atanh": ("atanh", "arctanh"),
    "erf": ("erf",),
    "erfc": ("erfc",),
    "floor": ("floor",),
    "ceil": ("ceil",),
    "sign": ("sign",),
    "abs": ("fabs", "absolute", "abs"),
    "lgamma": ("lgamma",),
    "gamma": ("gamma",),
    "neg": ("negative",),
}

_BINARY_OPS = {
    "atan2": ("atan2", "arctan2"),
    "hypot": ("hypot",),
    "copysign": ("copysign",),
    "pow": ("pow", "power"),
    "maximum": ("maximum",),
    "minimum": ("minimum",),
    "fmax": ("fmax",),
    "fmin": ("fmin",),
    "logaddexp": ("logaddexp",),
    # NumPy's ufuncs of the operators: np.add(a, b) is a + b
    "add": ("add",),
    "sub": ("subtract",),
    "mul": ("multiply",),
    "div": ("divide", "true_divide"),
    "floordiv": ("floor_divide",),
}


def _to_whole(op: str, x: Node) -> Node:
    """``math.floor``/``math.ceil``: an int (int64, as Numba's)."""
    if x.dtype != "float64":
        return truncate(x)
    return truncate(apply(op, x))


def _log_base(x: Node, base: Node | None = None) -> Node:
    if base is None:
        return apply("log", x)
    return div(apply("log", x), apply("log", base))


def _x_times(x: Node, y: Node, log_y: Node) -> Node:
    """``x * log(y)`` as ``scipy.special.xlogy`` defines it: 0 where ``x == 0``
    and ``y`` is not NaN, also where ``log(y)`` is infinite or NaN (``y <= 0``,
    ``y = inf``); the slope in ``x`` is ``log(y)`` where that is finite."""
    zero = logical_and(
        logical_and(apply("eq", x, ZERO), apply("eq", y, y)),
        logical_not(_isfinite(log_y)),
    )
    return mul(x, select(zero, ZERO, log_y))


def _isnan(x: Node) -> Node:
    return apply("ne", x, x)


def _isinf(x: Node) -> Node:
    return apply("eq", apply("abs", x), constant(math.inf))


def _isfinite(x: Node) -> Node:
    return apply("lt", apply("abs", x), constant(math.inf))


def _hypot(*args: Node) -> Node:
    """``math.hypot`` of any number of coordinates, folded pairwise (no overflow
    of the squares): 0 of none, ``abs`` of one."""
    if len(args) < 2:
        return apply("abs", to_float(args[0])) if args else ZERO
    result = args[0]
    for arg in args[1:]:
        result = apply("hypot", result, arg)
    return result


def _logaddexp2(a: Node, b: Node) -> Node:
    """``log2(2**a + 2**b)`` as ``logaddexp(a ln 2, b ln 2) / ln 2``."""
    ln2 = constant(math.log(2.0))
    return div(apply("logaddexp", mul(a, ln2), mul(b, ln2)), ln2)


def _whole(k: Node, name: str, what: str = "its argument") -> int | None:
    """``k``'s value where it is a constant; Unsupported where it is no integer
    (Python raises TypeError for a float)."""
    if k.shape or k.dtype not in ("int64", "bool"):
        raise Unsupported(
            f"`{name}` takes integers: {what} is "
            + ("an array" if k.shape else "a float"),
            "pass an int (an int argument, len(x), a loop index)",
        )
    if k.op != "const":
        _not_negative(k, name, what)
        return None
    if k.value < 0:
        raise Unsupported(f"`{name}` of a negative number: Python raises ValueError")
    return int(k.value)


def _not_negative(k: Node, name: str, what: str) -> None:
    """Where ``k`` is computed from int arguments and shapes, check when the
    kernel runs that it is not negative, as Python raises ValueError then."""
    try:
        n = length(k)
    except Unsupported:
        return  # from values: gamma's NaN stands for Python's error
    S.require_less(
        -1, n, f"`{name}` of a negative number: {what} must be 0 or more", True
    )


def _exact(value: int) -> Node:
    """A Python int as a constant: an int64 where it fits, else the float64 it
    turns into in arithmetic (inf past the largest one)."""
    if value < 2**63:
        return constant(value)
    return constant(float(value) if value.bit_length() <= 1024 else math.inf)


def _factorial(k: Node) -> Node:
    """``math.factorial``: exact for a constant; for an int known when the kernel
    runs, ``gamma(k + 1)`` rounded to the nearest integer (exact up to 18!, past
    which an ulp is more than 1; Numba's gamma is a few ulps off), a float."""
    n = _whole(k, "math.factorial")
    if n is not None:
        return _exact(math.factorial(n)) if n <= 170 else constant(math.inf)
    return apply("floor", add(apply("gamma", add(to_float(k), ONE)), constant(0.5)))


def _comb(n: Node, k: Node) -> Node:
    """``math.comb``: exact for constants; ``exp(lgamma...)`` rounded for ints known
    when the kernel runs (exact while below about 1e13), 0 where ``k > n``."""
    a = _whole(n, "math.comb", "`n`")
    b = _whole(k, "math.comb", "`k`")
    if a is not None and b is not None:
        return _exact(math.comb(a, b))

    def lgamma1(v: Node) -> Node:
        return apply("lgamma", add(to_float(v), ONE))

    log = sub(sub(lgamma1(n), lgamma1(k)), lgamma1(sub(n, k)))
    value = apply("floor", add(apply("exp", log), constant(0.5)))
    inside = logical_and(apply("ge", k, constant(0)), apply("le", k, n))
    return select(inside, value, ZERO)


def _fmod(a: Node, b: Node) -> Node:
    """``math.fmod``: C's ``fmod``, the sign of ``a``, as ``copysign(|a| % |b|,
    a)`` (``%`` of positive floats is ``fmod`` exactly); slopes 1 and
    ``-trunc(a / b)``."""
    x, y = to_float(a), to_float(b)
    return apply("copysign", apply("mod", apply("abs", x), apply("abs", y)), x)


def _remainder(a: Node, b: Node) -> Node:
    """``math.remainder``: ``a - n * b`` with ``n`` the integer nearest ``a / b``
    (ties to even), exact; CPython's ``m_remainder`` step by step.  NaN where
    Python raises (``b == 0``, ``a`` infinite); ``a`` where ``b`` is infinite."""
    x, y = to_float(a), to_float(b)
    ax, ay = apply("abs", x), apply("abs", y)
    m = apply("mod", ax, ay)  # fmod of positive numbers
    c = sub(ay, m)
    half = apply("mod", mul(constant(0.5), sub(ax, m)), ay)
    tie = sub(m, mul(constant(2.0), half))
    r = select(apply("lt", m, c), m, select(apply("gt", m, c), neg(c), tie))
    return mul(apply("copysign", ONE, x), r)


def _integer(k: Node, name: str) -> Node:
    """``k`` as an int64 (a bool is 0 or 1); Unsupported for a float, for which
    Python raises TypeError."""
    if k.dtype == "float64":
        raise Unsupported(
            f"`{name}` takes integers, not floats (Python raises TypeError)",
            "pass an int (an int argument, len(x), int(x), a loop index)",
        )
    return truncate(k)


def _ldexp(x: Node, i: Node) -> Node:
    """``math.ldexp``: ``x * 2**i`` rounded once; ``i`` an int, kept within
    +-2200 (past which every finite ``x`` overflows or underflows) for C's
    ``int`` parameter."""
    k = _integer(i, "math.ldexp's exponent")
    if k.op != "const":
        k = apply("max", apply("min", k, constant(2200)), constant(-2200))
    elif abs(k.value) > 2200:
        k = constant(2200 if k.value > 0 else -2200)
    return apply("ldexp", to_float(x), k)


def _gcd(*args: Node) -> Node:
    """``math.gcd`` of any number of ints (0 of none), Python's: never negative."""
    nodes = [_integer(a, "math.gcd") for a in args]
    if not nodes:
        return constant(0)
    result = apply("abs", nodes[0])
    for node in nodes[1:]:
        result = apply("gcd", result, node)
    return result


def _lcm(*args: Node) -> Node:
    """``math.lcm`` of any number of ints (1 of none): ``|a // gcd(a, b) * b|``,
    0 where an operand is 0."""
    nodes = [_integer(a, "math.lcm") for a in args]
    if not nodes:
        return constant(1)
    result = apply("abs", nodes[0])
    for node in nodes[1:]:
        g = apply("gcd", result, node)
        multiple = apply("abs", mul(apply("floordiv", result, g), node))
        result = select(apply("eq", g, constant(0)), constant(0), multiple)
    return result


def _perm(n: Node, k: Node | None = None) -> Node:
    """``math.perm``: exact for constants; ``n! / (n - k)!`` from ``lgamma``,
    rounded to an int, for ints known when the kernel runs (exact while below
    about 1e13, as ``math.comb``), 0 where ``k > n``; ``math.factorial(n)``
    without ``k``."""
    if k is None:
        return _factorial(n)
    a = _whole(n, "math.perm", "`n`")
    b = _whole(k, "math.perm", "`k`")
    if a is not None and b is not None:
        return _exact(math.perm(a, b))

    def lgamma1(v: Node) -> Node:
        return apply("lgamma", add(to_float(v), ONE))

    log = sub(lgamma1(n), lgamma1(sub(n, k)))
    value = truncate(apply("floor", add(apply("exp", log), constant(0.5))))
    inside = logical_and(apply("ge", k, constant(0)), apply("le", k, n))
    return select(inside, value, constant(0))


_SYMBOLS = {
    "bitand": "&",
    "bitor": "|",
    "bitxor": "^",
    "lshift": "<<",
    "rshift": ">>",
    "invert": "~",
}


def _int_operand(x: Node, op: str) -> Node:
    if x.dtype == "float64":
        raise Unsupported(
            f"operator `{_SYMBOLS[op]}` takes integers (Python raises TypeError "
            "for a float)",
            "convert first: int(x), or use math.floor/round",
        )
    return to_int(x)


def bitwise(op: str) -> Callable[[Node, Node], Node]:
    """The builder of ``a & b``, ``a | b``, ``a ^ b``, ``a << b`` or ``a >> b``
    (``op``: bitand, bitor, bitxor, lshift, rshift) of ints, int64 as in the
    kernel; of two bools ``&``, ``|``, ``^`` stay logical, as in Python."""

    def build(a: Node, b: Node) -> Node:
        if a.dtype == b.dtype == "bool" and op in ("bitand", "bitor", "bitxor"):
            logic = {"bitand": logical_and, "bitor": logical_or}.get(op)
            return logic(a, b) if logic else apply("ne", a, b)
        x, y = _int_operand(a, op), _int_operand(b, op)
        if op in ("lshift", "rshift"):
            return _shift(op, x, y)
        return apply(op, x, y)

    return build


def _shift(op: str, x: Node, n: Node) -> Node:
    """``x << n`` / ``x >> n`` for any count: the machine shift is undefined
    from 64 on, where Python's ``<<`` gives 0 once wrapped to int64 and its
    ``>>`` gives 0 or -1 (a shift by 63).  A negative count raises in Python."""
    if n.op == "const":
        if n.value < 0:
            raise Unsupported("negative shift count (Python raises ValueError)")
        if n.value < 64:
            return apply(op, x, n)
        return apply("rshift", x, constant(63)) if op == "rshift" else constant(0)
    within = apply("min", apply("max", n, constant(0)), constant(63))
    if op == "rshift":
        return apply("rshift", x, within)
    return select(apply("gt", n, constant(63)), constant(0), apply(op, x, within))


def invert(x: Node) -> Node:
    """``~x`` of an int: ``-x - 1``."""
    return apply("invert", _int_operand(x, "invert"))


def _table() -> dict[int, Builtin]:
    table: dict[int, Builtin] = {}

    def add(obj: object, entry: Builtin) -> None:
        if obj is not None:
            table[id(obj)] = entry

    for op, names in _UNARY_OPS.items():
        for module in (math, np):
            for name in names:
                obj = getattr(module, name, None)
                if callable(obj):
                    add(obj, Builtin(f"{module.__name__}.{name}", 1, 1, _op(op)))
    for op, names in _BINARY_OPS.items():
        for module in (math, np):
            for name in names:
                obj = getattr(module, name, None)
                if callable(obj):
                    build = pow_ if op == "pow" else _op(op)
                    add(obj, Builtin(f"{module.__name__}.{name}", 2, 2, build))
    add(math.log, Builtin("math.log", 1, 2, _log_base))
    add(np.square, Builtin("numpy.square", 1, 1, lambda x: mul(x, x)))
    add(np.positive, Builtin("numpy.positive", 1, 1, lambda x: x))
    add(np.reciprocal, Builtin("numpy.reciprocal", 1, 1, lambda x: div(ONE, x)))

    def exp2(x: Node) -> Node:
        return pow_(constant(2.0), x)

    add(np.exp2, Builtin("numpy.exp2", 1, 1, exp2))
    for module in (math, np):
        for name, test in (
            ("isnan", _isnan),
            ("isinf", _isinf),
            ("isfinite", _isfinite),
        ):
            add(getattr(module, name), Builtin(f"{module.__name__}.{name}", 1, 1, test))
    add(np.logaddexp2, Builtin("numpy.logaddexp2", 2, 2, _logaddexp2))
    add(math.hypot, Builtin("math.hypot", 0, None, _hypot))  # any number, not 2
    add(getattr(math, "exp2", None), Builtin("math.exp2", 1, 1, exp2))
    rad = constant(math.pi / 180.0)
    deg = constant(180.0 / math.pi)
    for name, factor in (
        ("radians", rad),
        ("deg2rad", rad),
        ("degrees", deg),
        ("rad2deg", deg),
    ):
        for module in (math, np):
            obj = getattr(module, name, None)
            if callable(obj):
                add(
                    obj,
                    Builtin(
                        f"{module.__name__}.{name}", 1, 1, lambda x, f=factor: mul(f, x)
                    ),
                )
    # math.floor and math.ceil return ints, as in Python (np.floor a float):
    # T[math.floor(x / h)], range(math.ceil(x)) (slope 0 either way)
    for name in ("floor", "ceil"):
        add(
            getattr(math, name),
            Builtin(f"math.{name}", 1, 1, lambda x, op=name: _to_whole(op, x)),
        )
    add(builtins.abs, Builtin("abs", 1, 1, _op("abs")))
    add(builtins.max, Builtin("max", 2, None, _fold("max")))
    add(builtins.min, Builtin("min", 2, None, _fold("min")))
    add(builtins.pow, Builtin("pow", 2, 2, pow_))
    add(builtins.float, Builtin("float", 1, 1, to_float))
    add(builtins.int, Builtin("int", 1, 1, truncate))
    add(math.trunc, Builtin("math.trunc", 1, 1, truncate))
    add(math.factorial, Builtin("math.factorial", 1, 1, _factorial))
    add(math.comb, Builtin("math.comb", 2, 2, _comb))
    add(math.perm, Builtin("math.perm", 1, 2, _perm))
    add(math.gcd, Builtin("math.gcd", 0, None, _gcd))
    add(getattr(math, "lcm", None), Builtin("math.lcm", 0, None, _lcm))
    add(math.fmod, Builtin("math.fmod", 2, 2, _fmod))
    add(math.remainder, Builtin("math.remainder", 2, 2, _remainder))
    add(math.ldexp, Builtin("math.ldexp", 2, 2, _ldexp))
    add(getattr(math, "cbrt", None), Builtin("math.cbrt", 1, 1, _op("cbrt")))
    add(np.cbrt, Builtin("numpy.cbrt", 1, 1, _op("cbrt")))
    add(stop_gradient, Builtin("symdiff.stop_gradient", 1, 1, _op("stop_gradient")))
    return table


_TABLE = _table()


def lookup(obj: object) -> Builtin | None:
    """The :class:`Builtin` for a live callable, or None if symdiff lacks it."""
    entry = _TABLE.get(id(obj))
    if entry is None:
        special = _scipy_special(obj)
        if special is not None:
            return special
    return entry


_LARGE = 1e3  # from here on betaln uses Stirling's series, exact to rounding there


def _omega(x: Node) -> Node:
    """Stirling's correction ``lgamma(x) - ((x - 1/2) log x - x + log(2 pi) / 2)``
    for ``x >= 1e3``: ``1/(12x) - 1/(360x^3) + 1/(1260x^5)`` (the next term is
    below 1e-24)."""
    inv = div(ONE, x)
    inv2 = mul(inv, inv)
    series = sub(
        constant(1 / 12),
        mul(inv2, sub(constant(1 / 360), mul(inv2, constant(1 / 1260)))),
    )
    return mul(inv, series)


def _betaln(a: Node, b: Node) -> Node:
    """``scipy.special.betaln``: ``lgamma(a) + lgamma(b) - lgamma(a + b)`` for
    moderate arguments; where the larger one, ``big``, passes 1e3 the difference
    ``lgamma(big) - lgamma(a + b)`` would cancel, so Stirling's series gives it
    as ``-(big - 1/2) log1p(small/big) - small log(a + b) + small`` (and, where
    ``small`` passes 1e3 too, ``lgamma(small)`` by the same series)."""
    swap = apply("lt", a, b)  # not max/min: at a == b each keeps its slope
    big = select(swap, b, a)
    small = select(swap, a, b)
    total = add(a, b)
    direct = sub(add(apply("lgamma", a), apply("lgamma", b)), apply("lgamma", total))
    ratio = apply("log1p", div(small, big))
    difference = add(
        sub(neg(mul(sub(big, constant(0.5)), ratio)), mul(small, apply("log", total))),
        add(small, sub(_omega(big), _omega(total))),
    )
    half_log_2pi = constant(0.5 * math.log(2 * math.pi))
    stirling_small = add(
        add(
            sub(mul(sub(small, constant(0.5)), apply("log", small)), small),
            half_log_2pi,
        ),
        _omega(small),
    )
    lgamma_small = select(
        apply("ge", small, constant(_LARGE)), stirling_small, apply("lgamma", small)
    )
    far = add(lgamma_small, difference)
    return select(apply("ge", big, constant(_LARGE)), far, direct)


#: ``scipy.special`` functions: name -> (arity, builder).
_SCIPY_SPECIAL: dict[str, tuple[int, Callable[..., Node]]] = {
    "erf": (1, _op("erf")),
    "erfc": (1, _op("erfc")),
    "expit": (1, lambda x: div(ONE, add(ONE, apply("exp", neg(x))))),
    "log_expit": (1, lambda x: neg(apply("softplus", neg(x)))),
    "logit": (1, lambda x: apply("log", div(x, sub(ONE, x)))),
    "gammaln": (1, _op("lgamma")),
    "gamma": (1, _op("gamma")),
    "digamma": (1, digamma),
    "psi": (1, digamma),
    "betaln": (2, lambda a, b: _betaln(to_float(a), to_float(b))),
    "xlogy": (2, lambda x, y: _x_times(x, y, apply("log", y))),
    "xlog1py": (2, lambda x, y: _x_times(x, y, apply("log1p", y))),
}


def _scipy_special(obj: object) -> Builtin | None:
    # scipy is optional: only consulted when the user's code already imported it.
    import sys

    module = sys.modules.get("scipy.special")
    if module is None:
        return None
    for name, (arity, build) in _SCIPY_SPECIAL.items():
        if getattr(module, name, None) is obj:
            return Builtin(f"scipy.special.{name}", arity, arity, build)
    return None
