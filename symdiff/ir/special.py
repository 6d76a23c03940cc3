"""Special functions built from other ops: the digamma function.

``lgamma' = digamma`` and ``gamma' = gamma * digamma``, but neither ``math`` nor
Numba (CPU or CUDA) has a digamma.  It is built here from ops every target prints:
the recurrence ``psi(z) = psi(z + 8) - sum(1 / (z + k), k < 8)`` moves the argument
to ``y >= 8.5``, where the asymptotic series

    psi(y) = log(y) - 1/(2y) - 1/(12y^2) + 1/(120y^4) - ... - 1/(12y^14)

is accurate to about 1e-16 (its next term is below 6e-16 there); arguments below
0.5 go through the reflection ``psi(x) = psi(1 - x) - pi / tan(pi x)``, with
``tan``'s argument reduced exactly to ``x``'s distance to its nearest integer
(``tan`` has period ``pi``).

Being ordinary IR, it has derivatives of every order: the Hessian of ``lgamma``
(the trigamma function) is the derivative of this series, accurate to the same
order.
"""

from __future__ import annotations

import math

from symdiff.ir.build import ONE, add, apply, div, logical_and, mul, neg, select, sub
from symdiff.ir.node import Node, constant

#: The recurrence's shift: the series is used at ``y >= SHIFT + 0.5``.
SHIFT = 8

#: The series' coefficients ``B_2n / (2n)`` of ``y^-2n``, n = 1..7, innermost last.
_SERIES = (
    1.0 / 12.0,
    -1.0 / 120.0,
    1.0 / 252.0,
    -1.0 / 240.0,
    1.0 / 132.0,
    -691.0 / 32760.0,
    1.0 / 12.0,
)


def _psi_large(z: Node) -> Node:
    """``psi(z)`` for ``z >= 0.5``: the recurrence to ``z + SHIFT``, then the series."""
    shifted = constant(0.0)
    for k in range(SHIFT):
        shifted = add(shifted, div(ONE, add(z, constant(float(k))) if k else z))
    y = add(z, constant(float(SHIFT)))
    w = div(ONE, mul(y, y))
    series = constant(_SERIES[-1])
    for coefficient in reversed(_SERIES[:-1]):
        series = add(constant(coefficient), mul(w, series))
    series = mul(w, series)
    return sub(sub(apply("log", y), add(div(constant(0.5), y), series)), shifted)


def digamma(x: Node) -> Node:
    """The digamma function ``psi(x) = d/dx log|Gamma(x)|`` as IR (element-wise)."""
    reflect = apply("lt", x, constant(0.5))
    z = select(reflect, sub(ONE, x), x)
    psi = _psi_large(z)
    # x's distance to its nearest integer, exactly: x itself below 0.5 in size
    # (x - floor(x) would round there: -1e-17 + 1 is 1.0), else both subtractions
    # are exact (Sterbenz); pi * r is then accurate also next to a pole
    fraction = sub(x, apply("floor", x))
    above = select(apply("gt", fraction, constant(0.5)), ONE, constant(0.0))
    far = sub(fraction, above)
    r = select(apply("lt", apply("abs", x), constant(0.5)), x, far)
    # pi * cot(pi * r) as cos / sin, whose derivatives stay accurate where tan is
    # huge (r = 0.5: a negative half-integer)
    angle = mul(constant(math.pi), r)
    cot = div(mul(constant(math.pi), apply("cos", angle)), apply("sin", angle))
    # the poles, as SciPy: -inf at 0.0, inf at -0.0, NaN at -1, -2, ...
    pole = logical_and(apply("le", x, constant(0.0)), apply("eq", r, constant(0.0)))
    at_pole = select(
        apply("eq", x, constant(0.0)),
        apply("copysign", constant(math.inf), neg(x)),
        constant(math.nan),
    )
    return select(reflect, select(pole, at_pole, sub(psi, cot)), psi)
