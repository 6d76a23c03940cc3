"""NumPy functions of order and position: ``np.argmax``/``argmin``,
``np.sort``/``argsort``, ``np.interp``, ``np.isclose``/``allclose``.

Positions are int64 arrays and comparisons bools: no derivative flows through
them, but values read *at* them do (``x[np.argmax(x)]``, ``np.sort(x)``, the
segment ``np.interp`` picks), through the gathers that read them.  Only the
sort is an op of its own (``argsort``, :func:`symdiff.ir.arrays.argsort`); the
rest is reductions, comparisons and selects.  :data:`FUNCTIONS` and
:data:`METHODS` are merged into :mod:`.more_numpy`'s tables.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from symdiff.frontend.arrays import (
    SliceValue,
    Unsupported,
    _axis_list,
    _flat,
    _none,
    array,
    flag,
    index,
    refuse,
    require_nonempty,
)
from symdiff.frontend.callables import _isfinite, _isnan
from symdiff.frontend.values import Static, Value
from symdiff.ir import arrays as A
from symdiff.ir import build as B
from symdiff.ir import shapes as S
from symdiff.ir.node import Node, constant

Builder = Callable[..., Value]


# -- argmax, argmin ------------------------------------------------------------------
def _first_extreme(op: str, x: Node, axis: int, keepdims: bool) -> Node:
    """The first position along ``axis`` where ``x`` attains its maximum
    (``op`` "amax") or minimum: the smallest index among the hits, a NaN
    counting as the extreme (NumPy's argmax of ``[1, nan]`` is 1)."""
    n = x.shape[axis]
    require_nonempty(
        n,
        f"attempt to get {'argmax' if op == 'amax' else 'argmin'} of an empty sequence",
        "give the array at least one element along the axis",
    )
    top = A.reduce(op, x, (axis,), keepdims=True)
    hit = B.apply("eq", x, top)
    if x.dtype == "float64":
        hit = B.logical_or(hit, _isnan(x))
    positions = B.select(hit, A.iota(axis, x.shape), A.dim(n))
    return A.reduce("amin", positions, (axis,), keepdims)


def _arg_extreme(op: str, name: str) -> Builder:
    """``np.argmax``/``np.argmin`` (and the methods): along ``axis``, or of the
    flattened array without one; ``keepdims`` as NumPy's."""

    def build(
        a: Value,
        axis: Value | None = None,
        out: Value | None = None,
        *,
        keepdims: Value | None = None,
    ) -> Node:
        refuse(name, out=out)
        x = array(a)
        keep = flag(keepdims, "keepdims")
        if not x.shape:
            return constant(0)
        if _none(axis):
            first = _first_extreme(op, _flat(x), 0, False)
            return A.reshape(first, (1,) * len(x.shape)) if keep else first
        ax = _axis_list(axis, len(x.shape), name)[0]
        return _first_extreme(op, x, ax, keep)

    return build


# -- sort, argsort -------------------------------------------------------------------
_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


def _sort_axis(
    a: Value, axis: Value | None, kind: Value | None, order: Value | None, name: str
) -> tuple[Node, int]:
    """The array and the axis to sort along (the flattened array for ``None``)."""
    refuse(name, order=order)
    if not (_none(kind) or (isinstance(kind, Static) and kind.obj in _KINDS)):
        raise Unsupported(
            f"{name}: `kind` must be 'quicksort', 'mergesort', 'heapsort' or 'stable'",
            "leave kind out",
        )
    x = array(a)
    if isinstance(axis, Static) and axis.obj is None:
        x = _flat(x)
    if not x.shape:
        raise Unsupported(
            f"{name}: axis -1 is out of bounds for array of dimension 0",
            "sort an array of at least one dimension",
        )
    ax = -1 if axis is None or _none(axis) else axis
    return x, _axis_list(ax, len(x.shape), name)[0]


def _sorting(op: Callable[[Node, int], Node], name: str) -> Builder:
    """``np.sort`` (``op`` A.sort: ascending, NaNs last; each sorted element's
    adjoint goes back to where it came from) and ``np.argsort`` (A.argsort: the
    positions that sort, equal elements in their order, NumPy's
    ``kind="stable"``), along ``axis``: the last by default, the flattened array
    for ``axis=None``.  The methods are the same builders (``x`` first)."""

    def build(
        a: Value,
        axis: Value | None = None,  # the last axis; `axis=None` flattens
        kind: Value | None = None,
        order: Value | None = None,
        *,
        stable: Value | None = None,
    ) -> Node:
        x, ax = _sort_axis(a, axis, kind, order, name)
        return op(x, ax)

    return build


# -- interp ----------------------------------------------------------------------------
def _interp(
    x: Value,
    xp: Value,
    fp: Value,
    left: Value | None = None,
    right: Value | None = None,
    period: Value | None = None,
) -> Node:
    """``np.interp``: piecewise-linear interpolation of the points ``(xp, fp)``
    (``xp`` increasing) at ``x``, NumPy's values branch for branch: the
    segment ``j`` with ``xp[j] <= x < xp[j + 1]`` (found by counting the
    ``xp`` not above ``x``: an ``x.size * len(xp)`` comparison), ``fp[j]``
    where ``x`` is a knot, ``left``/``right`` (``fp``'s ends) outside, NaN at
    NaN.  The derivative is the segment's slope in ``x`` (0 at a knot, where
    NumPy's value is ``fp[j]`` itself), and flows to ``xp``, ``fp``, ``left``
    and ``right`` too."""
    refuse("np.interp", period=period)
    points = B.to_float(array(x, "`x`"))
    knots = B.to_float(array(xp, "`xp`"))
    values = B.to_float(array(fp, "`fp`"))
    if len(knots.shape) != 1 or len(values.shape) != 1:
        raise Unsupported(
            "np.interp: `xp` and `fp` must be 1-D sequences",
            "pass the knots and their values as 1-D arrays",
        )
    n = S.unify(
        knots.shape[0],
        values.shape[0],
        "np.interp: fp and xp are not of the same length",
    )
    require_nonempty(n, "np.interp: array of sample points is empty")
    first, last = _at(values, 0), _at(values, S.sub(n, 1))
    lo = first if _none(left) else B.to_float(array(left, "`left`"))
    hi = last if _none(right) else B.to_float(array(right, "`right`"))
    flat = _flat(points) if points.shape else A.reshape(points, (1,))
    if n == 1:
        inside = B.broadcast_to(first, flat.shape)
    else:
        inside = _segments(flat, knots, values, n)
    value = B.select(B.apply("eq", flat, _at(knots, S.sub(n, 1))), last, inside)
    value = B.select(B.apply("gt", flat, _at(knots, S.sub(n, 1))), hi, value)
    value = B.select(B.apply("lt", flat, _at(knots, 0)), lo, value)
    value = B.select(_isnan(flat), flat, value)
    return A.reshape(value, points.shape)


def _at(x: Node, k: S.Length) -> Node:
    """``x[k]`` of a 1-D array, ``k`` a non-negative length."""
    return A.getitem(x, (("int", k),))


def _segments(flat: Node, knots: Node, values: Node, n: S.Length) -> Node:
    """NumPy's interpolation inside the knots (``xp[0] <= x < xp[-1]``), at
    each of the points ``flat``."""
    m = flat.shape[0]
    below = B.apply("le", knots, A.reshape(flat, (m, 1)))
    count = A.reduce("sum", B.to_int(below), (1,))
    # clipped into 0 .. n - 2: the points outside are replaced afterwards
    j = B.apply(
        "min",
        B.apply("max", B.sub(count, constant(1)), constant(0)),
        A.dim(S.sub(n, 2)),
    )
    j1 = B.add(j, constant(1))
    x0, x1 = (A.gather(knots, [k], [False], "np.interp") for k in (j, j1))
    y0, y1 = (A.gather(values, [k], [False], "np.interp") for k in (j, j1))
    slope = B.div(B.sub(y1, y0), B.sub(x1, x0))
    value = B.add(B.mul(slope, B.sub(flat, x0)), y0)
    # NaN one way (an infinite slope times 0): NumPy tries from the other end
    again = B.add(B.mul(slope, B.sub(flat, x1)), y1)
    level = B.logical_and(_isnan(again), B.apply("eq", y0, y1))
    again = B.select(level, y0, again)
    value = B.select(_isnan(value), again, value)
    return B.select(B.apply("eq", x0, flat), y0, value)


# -- isclose, allclose -----------------------------------------------------------------
def _isclose(
    a: Value,
    b: Value,
    rtol: Value | None = None,
    atol: Value | None = None,
    equal_nan: Value | None = None,
) -> Node:
    """``np.isclose``: ``|a - b| <= atol + rtol * |b|`` where ``b`` is finite,
    or ``a == b`` (infinities of one sign); NaNs equal with ``equal_nan``."""
    x, y = B.to_float(array(a, "`a`")), B.to_float(array(b, "`b`"))
    r = constant(1e-05) if _none(rtol) else B.to_float(array(rtol, "`rtol`"))
    t = constant(1e-08) if _none(atol) else B.to_float(array(atol, "`atol`"))
    near = B.apply(
        "le",
        B.apply("abs", B.sub(x, y)),
        B.add(t, B.mul(r, B.apply("abs", y))),
    )
    result = B.logical_or(B.logical_and(near, _isfinite(y)), B.apply("eq", x, y))
    if flag(equal_nan, "equal_nan"):
        result = B.logical_or(result, B.logical_and(_isnan(x), _isnan(y)))
    return result


def _allclose(
    a: Value,
    b: Value,
    rtol: Value | None = None,
    atol: Value | None = None,
    equal_nan: Value | None = None,
) -> Node:
    """``np.allclose``: whether :func:`_isclose` holds everywhere (a bool)."""
    close = _isclose(a, b, rtol, atol, equal_nan)
    if not close.shape:
        return close
    axes = tuple(range(len(close.shape)))
    misses = A.reduce("sum", B.to_int(B.logical_not(close)), axes)
    return B.apply("eq", misses, constant(0))


# -- median, quantile, percentile -----------------------------------------------------
def _order_statistic(
    a: Value, axis: Value | None, keepdims: Value | None, name: str
) -> tuple[Node, int, Node]:
    """``a`` sorted along ``axis`` (the flattened array for None), the axis, and
    its length as an int node; NumPy's NaN result where a NaN is present."""
    if flag(keepdims, "keepdims"):
        raise Unsupported(f"{name}: `keepdims` is not supported", "leave it out")
    x = array(a)
    if _none(axis):
        x = _flat(x)
    if not x.shape:
        x = A.reshape(x, (1,))
    ax = 0 if _none(axis) else _axis_list(axis, len(x.shape), name)[0]
    n = x.shape[ax]
    require_nonempty(n, f"{name} of an empty array", "give it at least one element")
    return A.sort(B.to_float(x), ax, name), ax, A.dim(n)


def _element(sorted_: Node, ax: int, k: Node) -> Node:
    full = Static(SliceValue(None, None, None))
    return index(sorted_, (*(full,) * ax, k))


def _with_nan(x_sorted: Node, ax: int, value: Node) -> Node:
    """NaN where the sorted data ends in NaN (NaNs sort last), as NumPy gives."""
    last = B.sub(A.dim(x_sorted.shape[ax]), constant(1))
    tail = _element(x_sorted, ax, last)
    return B.select(_isnan(tail), tail, value)


def _median(
    a: Value,
    axis: Value | None = None,
    out: Value | None = None,
    overwrite_input: Value | None = None,
    keepdims: Value | None = None,
) -> Node:
    """``np.median``: the mean of the two middle elements of the sorted data
    (one for an odd length); its slope goes to them, half each."""
    refuse("np.median", out=out)
    s, ax, n = _order_statistic(a, axis, keepdims, "np.median")
    lo = B.apply("floordiv", B.sub(n, constant(1)), constant(2))
    hi = B.apply("floordiv", n, constant(2))
    middle = B.mul(constant(0.5), B.add(_element(s, ax, lo), _element(s, ax, hi)))
    return _with_nan(s, ax, middle)


def _quantile_of(
    a: Value, q: Value, axis: Value | None, keepdims: Value | None, name: str
) -> Node:
    """The ``q``-quantile (``0 <= q <= 1``) by NumPy's default, linear
    interpolation between the sorted elements at ``q * (n - 1)``."""
    qn = array(q, "`q`")
    if qn.shape:
        raise Unsupported(
            f"{name}: `q` must be one number here",
            "call it once per quantile: [np.quantile(x, q) for q in (0.1, 0.9)]",
        )
    s, ax, n = _order_statistic(a, axis, keepdims, name)
    last = B.sub(n, constant(1))
    h = B.mul(B.to_float(qn), B.to_float(last))
    lo = B.apply(
        "max", B.apply("min", B.truncate(B.apply("floor", h)), last), constant(0)
    )
    hi = B.apply("min", B.add(lo, constant(1)), last)
    frac = B.sub(h, B.to_float(lo))
    below, above = _element(s, ax, lo), _element(s, ax, hi)
    return _with_nan(s, ax, B.add(below, B.mul(frac, B.sub(above, below))))


def _quantile_builder(percent: bool) -> Builder:
    """``np.quantile`` (``percent``: ``np.percentile``, of ``q / 100``) with the
    default method ("linear")."""
    name = "np.percentile" if percent else "np.quantile"

    def build(
        a: Value,
        q: Value,
        axis: Value | None = None,
        out: Value | None = None,
        overwrite_input: Value | None = None,
        method: Value | None = None,
        keepdims: Value | None = None,
    ) -> Node:
        refuse(name, out=out)
        _linear_only(method, name)
        if percent:
            q = B.div(B.to_float(array(q, "`q`")), constant(100.0))
        return _quantile_of(a, q, axis, keepdims, name)

    return build


def _linear_only(method: Value | None, name: str) -> None:
    if not (_none(method) or (isinstance(method, Static) and method.obj == "linear")):
        raise Unsupported(
            f"{name}: only method='linear' (the default) is supported", "leave it out"
        )


_NUMPY: dict[str, Builder] = {
    "median": _median,
    "quantile": _quantile_builder(False),
    "percentile": _quantile_builder(True),
    "argmax": _arg_extreme("amax", "np.argmax"),
    "argmin": _arg_extreme("amin", "np.argmin"),
    "sort": _sorting(A.sort, "np.sort"),
    "argsort": _sorting(A.argsort, "np.argsort"),
    "interp": _interp,
    "isclose": _isclose,
    "allclose": _allclose,
}

FUNCTIONS: dict[int, tuple[str, Builder]] = {
    id(getattr(np, name)): (f"np.{name}", build) for name, build in _NUMPY.items()
}

#: ``x.argmax()``, ``x.argmin()``, ``x.argsort()`` (``x.sort()`` sorts in place
#: and returns None: it is not one of them).
METHODS: dict[str, Builder] = {
    "argmax": _arg_extreme("amax", ".argmax()"),
    "argmin": _arg_extreme("amin", ".argmin()"),
    "argsort": _sorting(A.argsort, ".argsort()"),
}
