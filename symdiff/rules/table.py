"""The derivative table: the local partials of every op, declared once.

The contract (as in Tangent's rule docstring): a rule sees the op's inputs and its
own output node, nothing else, and returns one partial derivative per input, built
from IR nodes with the smart constructors; ``None`` is the symbolic zero (no
derivative flows, as through comparisons, or it is zero almost everywhere, as for
``floor``).  Reverse mode multiplies each partial by the output's adjoint
(``x_bar += out_bar * partial``); forward mode multiplies it by the input's tangent
and sums (``out_dot = sum(partial * x_dot)``).  Rules never touch code generation.

Rules reuse the output node where the math allows (``exp' = exp``,
``tanh' = 1 - tanh**2``, ``sqrt' = 0.5 / sqrt``), so the backward pass shares the
forward pass's values instead of recomputing them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from symdiff.ir.build import (
    ONE,
    ZERO,
    add,
    apply,
    div,
    logical_and,
    logical_or,
    mul,
    neg,
    pow_,
    select,
    sub,
)
from symdiff.ir.node import Node, constant
from symdiff.ir.special import digamma

Partial = Node | None
Rule = Callable[..., tuple[Partial, ...]]

_TWO_OVER_SQRT_PI = constant(2.0 / math.sqrt(math.pi))
_LN2 = constant(math.log(2.0))
_LN10 = constant(math.log(10.0))


def _sq(x: Node) -> Node:
    return mul(x, x)


def _erf_partial(a: Node) -> Node:
    return mul(_TWO_OVER_SQRT_PI, apply("exp", neg(_sq(a))))


def _pow_partials(a: Node, b: Node, out: Node) -> tuple[Partial, Partial]:
    d_base = mul(b, pow_(a, sub(b, constant(1))))
    if b.op == "const":
        return d_base, None
    # a ** 0 is 1 everywhere: its slope is 0, also at a == 0 (not 0 * inf); only
    # there, so that the slope keeps its derivative in b (d2/da db = 1/a at b == 0)
    at_zero = logical_and(apply("eq", b, constant(0)), apply("eq", a, ZERO))
    d_base = select(at_zero, ZERO, d_base)
    # d/db a**b = a**b log(a); at a == 0 the limit is 0 (for b > 0), not 0 * -inf.
    d_exp = select(apply("eq", a, ZERO), ZERO, mul(out, apply("log", a)))
    return d_base, d_exp


def _hypot_partials(a: Node, b: Node, out: Node) -> tuple[Partial, Partial]:
    return div(a, out), div(b, out)


def _atan2_partials(y: Node, x: Node, out: Node) -> tuple[Partial, Partial]:
    r2 = add(_sq(x), _sq(y))
    return div(x, r2), neg(div(y, r2))


def _select_partials(c: Node, a: Node, b: Node, out: Node) -> tuple[Partial, ...]:
    # A select routes the adjoint (never a 0/1 mask times it): see ir/build.py.
    return None, select(c, ONE, ZERO), select(c, ZERO, ONE)


def _no_derivative(*args: Node) -> tuple[Partial, ...]:
    return (None,) * (len(args) - 1)


def _extreme(compare: str, nan_wins: bool) -> Rule:
    """The partials of ``np.maximum``/``np.minimum`` (``nan_wins``: a NaN operand
    is the result) and ``np.fmax``/``np.fmin`` (a NaN operand is passed over):
    the derivative goes to the operand returned, ``a`` on a tie."""

    def rule(a: Node, b: Node, out: Node) -> tuple[Partial, ...]:
        nan = a if nan_wins else b  # a NaN here returns `a`
        first = logical_or(apply(compare, a, b), apply("ne", nan, nan))
        return select(first, ONE, ZERO), select(first, ZERO, ONE)

    return rule


# fmt: off
PARTIALS: dict[str, Rule] = {
    "float":    lambda a, out: (ONE,),
    "int":      _no_derivative,
    "stop_gradient": lambda a, out: (None,),
    # The user's rule, linearised at cotangent 1 when the call was lowered.
    "custom":   lambda *a: (*a[-1].attrs[0], None),
    "add":      lambda a, b, out: (ONE, ONE),
    "sub":      lambda a, b, out: (ONE, constant(-1.0)),
    "mul":      lambda a, b, out: (b, a),
    "div":      lambda a, b, out: (div(ONE, b), neg(div(out, b))),
    "floordiv": _no_derivative,
    "mod":      lambda a, b, out: (ONE, neg(apply("floordiv", a, b))),
    "pow":      _pow_partials,
    "neg":      lambda a, out: (constant(-1.0),),
    "abs":      lambda a, out: (apply("sign", a),),
    "sign":     _no_derivative,
    "floor":    _no_derivative,
    "ceil":     _no_derivative,
    # builtin max/min: `b if b > a else a`; the derivative follows the operand
    "max":      lambda a, b, out: (select(apply("gt", b, a), ZERO, ONE),
                                   select(apply("gt", b, a), ONE, ZERO)),
    "min":      lambda a, b, out: (select(apply("lt", b, a), ZERO, ONE),
                                   select(apply("lt", b, a), ONE, ZERO)),
    "maximum":  _extreme("ge", nan_wins=True),
    "minimum":  _extreme("le", nan_wins=True),
    "fmax":     _extreme("ge", nan_wins=False),
    "fmin":     _extreme("le", nan_wins=False),
    "copysign": lambda a, b, out: (mul(apply("sign", a), apply("copysign", ONE, b)),
                                   None),
    "exp":      lambda a, out: (out,),
    "expm1":    lambda a, out: (add(out, ONE),),
    "log":      lambda a, out: (div(ONE, a),),
    "log1p":    lambda a, out: (div(ONE, add(ONE, a)),),
    "log2":     lambda a, out: (div(ONE, mul(_LN2, a)),),
    "log10":    lambda a, out: (div(ONE, mul(_LN10, a)),),
    "sqrt":     lambda a, out: (div(constant(0.5), out),),
    "sin":      lambda a, out: (apply("cos", a),),
    "cos":      lambda a, out: (neg(apply("sin", a)),),
    "tan":      lambda a, out: (add(ONE, _sq(out)),),
    "asin":     lambda a, out: (div(ONE, apply("sqrt", sub(ONE, _sq(a)))),),
    "acos":     lambda a, out: (neg(div(ONE, apply("sqrt", sub(ONE, _sq(a))))),),
    "atan":     lambda a, out: (div(ONE, add(ONE, _sq(a))),),
    "sinh":     lambda a, out: (apply("cosh", a),),
    "cosh":     lambda a, out: (apply("sinh", a),),
    "tanh":     lambda a, out: (sub(ONE, _sq(out)),),
    "asinh":    lambda a, out: (div(ONE, apply("sqrt", add(_sq(a), ONE))),),
    "acosh":    lambda a, out: (div(ONE, apply("sqrt", sub(_sq(a), ONE))),),
    "atanh":    lambda a, out: (div(ONE, sub(ONE, _sq(a))),),
    "erf":      lambda a, out: (_erf_partial(a),),
    "erfc":     lambda a, out: (neg(_erf_partial(a)),),
    "atan2":    _atan2_partials,
    "hypot":    _hypot_partials,
    "lgamma":   lambda a, out: (digamma(a),),
    "gamma":    lambda a, out: (mul(out, digamma(a)),),
    # d/da log(e^a + e^b) = e^(a - out): at most 1, no overflow
    "logaddexp": lambda a, b, out: (apply("exp", sub(a, out)),
                                    apply("exp", sub(b, out))),
    # cbrt' = 1 / (3 cbrt(x)**2): the output reused, infinite at 0
    "cbrt":     lambda a, out: (div(ONE, mul(constant(3.0), _sq(out))),),
    # d/da a * 2**i = 2**i, exactly; i is an int
    "ldexp":    lambda a, i, out: (apply("ldexp", ONE, i), None),
    "gcd":      _no_derivative,
    "bitand":   _no_derivative,
    "bitor":    _no_derivative,
    "bitxor":   _no_derivative,
    "lshift":   _no_derivative,
    "rshift":   _no_derivative,
    "invert":   _no_derivative,
    # s' = s(x) s(-x): finite where exp(-x) overflows, and unlike s (1 - s) no
    # cancellation for large x (seed 001 section 14)
    "sigmoid":  lambda a, out: (mul(out, apply("sigmoid", neg(a))),),
    "softplus": lambda a, out: (apply("sigmoid", a),),
    "lt":       _no_derivative,
    "le":       _no_derivative,
    "gt":       _no_derivative,
    "ge":       _no_derivative,
    "eq":       _no_derivative,
    "ne":       _no_derivative,
    "and":      _no_derivative,
    "or":       _no_derivative,
    "not":      _no_derivative,
    "select":   _select_partials,
}
# fmt: on


def partials(node: Node) -> tuple[Partial, ...]:
    """The local partials of ``node`` with respect to each of its arguments."""
    rule = PARTIALS.get(node.op)
    if rule is None:
        raise NotImplementedError(f"no derivative rule for op {node.op!r}")
    return rule(*node.args, node)
