"""What a loop's range says about the integers of its body.

A window ``x[i:i + 3]`` in a loop reads three elements at positions that start
at the loop's index; it is an exact gather only where ``0 <= i`` and
``i + 3 <= len(x)`` on every iteration.  Elsewhere NumPy gives a shorter slice
(``x[-2:0]`` is empty, ``x[4:7]`` of six elements has two), so such a window is
read as a slice of run-time length instead (masks.window).  This module proves
those inequalities from what the loops record while they are lowered: the trip
count of each index (:func:`note_index`) and the outer value of each number a
body captured (:func:`note_capture`).  A proof is a bound on a linear form over
integers: exact substitutions (a captured value by its outer value, a length by
its polynomial) and upper bounds (an index by its trip count less one), made
with a work list, never recursion.
"""

from __future__ import annotations

import weakref
from fractions import Fraction

from symdiff.ir.node import Node

#: a loop body's index -> the loop's trip count (a node outside the body)
_TRIPS: weakref.WeakKeyDictionary[Node, Node] = weakref.WeakKeyDictionary()
#: a number a loop body captured -> its value outside the body
_OUTER: weakref.WeakKeyDictionary[Node, Node] = weakref.WeakKeyDictionary()

_STEPS = 256  # substitutions tried before a proof is given up

Key = object  # a leaf Node, or a monomial of a symbolic length


def note_index(index: Node, trips: Node) -> None:
    """``index`` runs over ``0 .. trips - 1`` (a ``for`` loop's body)."""
    _TRIPS[index] = trips


def note_capture(inner: Node, outer: Node) -> None:
    """``inner``, an input of a loop body, is ``outer`` of the code around it."""
    _OUTER[inner] = outer


def inside(start: Node, stop: Node, size: Node) -> bool:
    """Whether ``0 <= start`` and ``stop <= size`` are proven for every iteration
    of the loops around them (``x[i:i + 3]`` in ``range(len(x) - 2)``)."""
    low = _largest({start: Fraction(-1)}, Fraction(0))
    high = _largest({stop: Fraction(1), size: Fraction(-1)}, Fraction(0))
    return low is not None and low <= 0 and high is not None and high <= 0


def _largest(terms: dict[Key, Fraction], offset: Fraction) -> Fraction | None:
    """An upper bound of ``sum(c * key) + offset`` over the values its keys may
    take, or None where some key is unbounded."""
    terms = dict(terms)
    for _ in range(_STEPS):
        key = next((k for k, c in terms.items() if c and isinstance(k, Node)), None)
        if key is None:
            break
        c = terms.pop(key)
        found = _expand(key, c)
        if found is None:
            return None
        more, shift = found
        offset += shift
        for k, v in more.items():
            terms[k] = terms.get(k, Fraction(0)) + v
    else:
        return None
    for key, c in terms.items():
        # what remains: monomials of lengths; a product of axis lengths is >= 0,
        # so it bounds the form only with a negative coefficient
        if c and (c > 0 or not _non_negative(key)):
            return None
    return offset


def _expand(node: Node, c: Fraction) -> tuple[dict[Key, Fraction], Fraction] | None:
    """``c * node`` as a linear form that bounds it from above (exact where it
    can be), or None where nothing is known of ``node``."""
    op = node.op
    if op == "const" and node.dtype in ("int64", "bool"):
        return {}, c * int(node.value)
    if op == "add":
        return {node.args[0]: c, node.args[1]: c}, Fraction(0)
    if op == "sub":
        return {node.args[0]: c, node.args[1]: -c}, Fraction(0)
    if op == "neg":
        return {node.args[0]: -c}, Fraction(0)
    if op == "mul":
        a, b = node.args
        if b.op == "const" and b.dtype == "int64":
            a, b = b, a
        if a.op == "const" and a.dtype == "int64":
            return {b: c * int(a.value)}, Fraction(0)
        return None
    if op == "dim":
        return _length(node.attrs[0], c)
    if node in _OUTER:
        return {_OUTER[node]: c}, Fraction(0)
    if node in _TRIPS:
        if c < 0:
            return {}, Fraction(0)  # an index is >= 0
        return _trips_less_one(_TRIPS[node], c)
    return None


def _trips_less_one(trips: Node, c: Fraction) -> tuple[dict[Key, Fraction], Fraction]:
    """``c * (trips - 1)`` bounded above, ``c > 0``, inside the body: the loop
    runs, so ``max(span, 0)`` is ``span`` and ``(a + k - 1) // k <= a / k + 1``."""
    if trips.op == "max" and trips.args[1].op == "const" and trips.args[1].value == 0:
        trips = trips.args[0]
    if (
        trips.op == "floordiv"
        and trips.args[1].op == "const"
        and trips.args[1].dtype == "int64"
        and int(trips.args[1].value) > 0
    ):
        k = int(trips.args[1].value)
        return {trips.args[0]: c / k}, -c
    return {trips: c}, -c


def _length(d: object, c: Fraction) -> tuple[dict[Key, Fraction], Fraction] | None:
    if isinstance(d, int):
        return {}, c * d
    terms: dict[Key, Fraction] = {}
    offset = Fraction(0)
    for monomial, coeff in d.terms:  # type: ignore[attr-defined]
        if not monomial:
            offset += c * coeff
        else:
            terms[monomial] = c * coeff
    return terms, offset


def _non_negative(monomial: Key) -> bool:
    """Whether a monomial of a length is >= 0: a product of axis lengths."""
    return isinstance(monomial, tuple) and all(
        isinstance(a, tuple) and a and a[0] == "shape" for a in monomial
    )
