"""More NumPy, SciPy and ``math`` functions, composed from the existing IR.

``np.cross``, ``np.polyval``, ``np.trapezoid``, ``np.linalg.multi_dot``,
``np.linalg.matrix_power``, ``np.kron``, the NaN-ignoring reductions
(``np.nansum``/``nanmean``/``nanmax``/``nanmin``), ``np.sum``/``np.mean`` with
``where=``, ``np.average``; ``scipy.special.logsumexp``/``softmax``/``log_softmax``
(looked up when called, and only if the user's code imported ``scipy.special``:
:func:`scipy_function`); ``math.fsum``/``math.prod``/``math.dist``.

Each is element-wise ops, layout ops and reductions, so derivatives, forward
mode, Hessians and every target are those ops'.  :data:`FUNCTIONS` is keyed like
:data:`symdiff.frontend.arrays.FUNCTIONS`; the lowering looks a callable up in
both (``np.sum``/``np.mean``, with ``where=``, are here).
"""

from __future__ import annotations

import builtins
import math
import sys
from collections.abc import Callable

import numpy as np

from symdiff.frontend import arrays as AR
from symdiff.frontend import layout, ordering, products
from symdiff.frontend.arrays import (
    Unsupported,
    _none,
    _zero_of,
    array,
    axes_arg,
    flag,
    static_int,
)
from symdiff.frontend.arrays import refuse as _refuse  # one message for every builder
from symdiff.frontend.callables import _hypot, _isfinite, _isnan
from symdiff.frontend.values import Value
from symdiff.ir import arrays as A
from symdiff.ir import build as B
from symdiff.ir import linalg as LA
from symdiff.ir import shapes as S
from symdiff.ir.node import Node, constant, make

Builder = Callable[..., Value]


# -- helpers ---------------------------------------------------------------------
def _axis(value: Value, rank: int, name: str) -> int:
    """One constant axis, negative counting from the end, as NumPy checks it."""
    return AR._axis_list(value, rank, name)[0]


def _at(x: Node, axis: int, k: int) -> Node:
    """``x[..., k, ...]``: position ``k`` of ``axis`` (the axis dropped)."""
    spec = tuple(
        ("int", k) if i == axis else ("slice", 0, d, 1) for i, d in enumerate(x.shape)
    )
    return A.getitem(x, spec)


def _moveaxis(x: Node, source: int, dest: int) -> Node:
    order = [a for a in range(len(x.shape)) if a != source]
    order.insert(dest, source)
    return A.transpose(x, tuple(order))


def _mask(where: Value, x: Node, name: str) -> Node:
    """``where=``: a boolean mask that broadcasts to ``x``'s shape."""
    mask = B.truth(array(where, "`where`"))
    shape = S.broadcast([x.shape, mask.shape], lambda: f"`where` of {name}")
    if shape != x.shape:
        raise S.ShapeMismatch(
            f"{name}: `where` of shape {S.format_shape(mask.shape)} does not "
            f"broadcast to the array's shape {S.format_shape(x.shape)}",
            "give a mask of the array's shape, or one that broadcasts to it",
        )
    return B.broadcast_to(mask, x.shape)


def _count(mask: Node, axes: tuple[int, ...], keepdims: bool) -> Node:
    """How many ``True`` along ``axes``, as a float."""
    return B.to_float(A.reduce("sum", B.to_int(mask), axes, keepdims))


# -- vectors and polynomials -------------------------------------------------------
def _components(x: Node, name: str) -> list[Node | None]:
    """The components of vectors along the last axis: 3, or 2 and a missing z."""
    last = len(x.shape) - 1
    n = x.shape[last]
    if n == 2:
        return [_at(x, last, 0), _at(x, last, 1), None]
    if isinstance(n, int) and n != 3:
        raise S.ShapeMismatch(
            f"{name}: incompatible dimensions for cross product (dimension must be "
            "2 or 3)",
            "give vectors of 3 components along the axis",
        )
    S.unify(
        n,
        3,
        f"{name}: incompatible dimensions for cross product: vectors whose length "
        "is known only when the kernel runs are taken as 3-vectors; for 2-vectors "
        "write np.cross(a[:2], b[:2]), a length symdiff knows",
    )
    return [_at(x, last, k) for k in range(3)]


def _times(a: Node | None, b: Node | None) -> Node | None:
    return None if a is None or b is None else B.mul(a, b)


def _minus(a: Node | None, b: Node | None) -> Node:
    if b is None:
        assert a is not None
        return a
    return B.neg(b) if a is None else B.sub(a, b)


def _cross(
    a: Value,
    b: Value,
    axisa: Value | None = None,
    axisb: Value | None = None,
    axisc: Value | None = None,
    axis: Value | None = None,
) -> Node:
    """``np.cross``: of 3-vectors (a symbolic length is checked to be 3 when the
    kernel runs) or 2-vectors (a length known to be 2: the z component)."""
    x, y = array(a, "`a`"), array(b, "`b`")
    if not _none(axis):
        axisa = axisb = axisc = axis
    for node in (x, y):
        if not node.shape:
            raise S.ShapeMismatch(
                "np.cross: incompatible dimensions for cross product (dimension "
                "must be 2 or 3)",
                "give vectors of 3 components",
            )
    if not _none(axisa):
        x = _moveaxis(x, _axis(axisa, len(x.shape), "np.cross"), len(x.shape) - 1)
    if not _none(axisb):
        y = _moveaxis(y, _axis(axisb, len(y.shape), "np.cross"), len(y.shape) - 1)
    a0, a1, a2 = _components(x, "np.cross")
    b0, b1, b2 = _components(y, "np.cross")
    z = _minus(_times(a0, b1), _times(a1, b0))
    if a2 is None and b2 is None:
        return z
    parts = [
        _minus(_times(a1, b2), _times(a2, b1)),
        _minus(_times(a2, b0), _times(a0, b2)),
        z,
    ]
    shape = S.broadcast([p.shape for p in parts])
    result = A.concat(
        [A.reshape(B.broadcast_to(p, shape), (*shape, 1)) for p in parts], len(shape)
    )
    if not _none(axisc):
        result = _moveaxis(result, len(shape), _axis(axisc, len(shape) + 1, "np.cross"))
    return result


def _polyval(p: Value, x: Value) -> Node:
    """``np.polyval``: Horner's rule, as NumPy computes it, for coefficients of a
    known count; ``sum(p * x**k)`` for a count known when the kernel runs."""
    coeffs, points = array(p, "`p`"), array(x, "`x`")
    if len(coeffs.shape) != 1:
        raise Unsupported(
            "np.polyval: the coefficients `p` must be a 1-D array",
            "pass the coefficients, highest power first, as a 1-D array",
        )
    n = coeffs.shape[0]
    if isinstance(n, int):
        if n == 0:
            return B.broadcast_to(_zero_of(points.dtype), points.shape)
        y = B.broadcast_to(_at(coeffs, 0, 0), points.shape)
        for k in range(1, n):
            y = B.add(B.mul(y, points), _at(coeffs, 0, k))
        return y
    powers = B.sub(A.dim(S.sub(n, 1)), A.arange(n))
    column = A.reshape(points, (*points.shape, 1))
    terms = B.mul(coeffs, B.pow_(column, powers))
    return A.reduce("sum", terms, (len(points.shape),))


def _trapezoid(
    y: Value, x: Value | None = None, dx: Value | None = None, axis: Value | None = None
) -> Node:
    """``np.trapezoid``: ``sum(d * (y[1:] + y[:-1]) / 2)`` along ``axis``."""
    ys = array(y, "`y`")
    rank = len(ys.shape)
    if not rank:
        raise S.ShapeMismatch(
            "np.trapezoid: `y` must be an array, not a number",
            "pass the sampled values as a 1-D array or more",
        )
    ax = rank - 1 if _none(axis) else _axis(axis, rank, "np.trapezoid")
    if not _none(x):
        xs = array(x, "`x`")
        if len(xs.shape) == 1:
            d = A.difference(xs, 0)
            d = A.reshape(d, tuple(d.shape[0] if i == ax else 1 for i in range(rank)))
        else:
            d = A.difference(xs, ax)
    else:
        d = constant(1.0) if _none(dx) else array(dx, "`dx`")
    size = S.sub(ys.shape[ax], 1)
    size = max(size, 0) if isinstance(size, int) else size
    pairs = B.add(A.along(ys, ax, 1, size), A.along(ys, ax, 0, size))
    return A.reduce("sum", B.div(B.mul(d, pairs), constant(2.0)), (ax,))


def _kron(a: Value, b: Value) -> Node:
    """``np.kron``: ``a[i, j] * b`` blocks, as products of interleaved axes."""
    x, y = array(a, "`a`"), array(b, "`b`")
    rank = max(len(x.shape), len(y.shape))
    xs = (1,) * (rank - len(x.shape)) + x.shape
    ys = (1,) * (rank - len(y.shape)) + y.shape
    left = A.reshape(x, tuple(d for i in xs for d in (i, 1)))
    right = A.reshape(y, tuple(d for j in ys for d in (1, j)))
    return A.reshape(
        B.mul(left, right), tuple(S.mul(i, j) for i, j in zip(xs, ys, strict=True))
    )


# -- linear algebra ------------------------------------------------------------------
def _multi_dot(arrays: Value, *, out: Value | None = None) -> Node:
    """``np.linalg.multi_dot``: a 1-D first (last) array is a row (column); the
    products run from the end that is a vector, else from the left."""
    _refuse("np.linalg.multi_dot", out=out)
    if not isinstance(arrays, tuple):
        raise Unsupported(
            "np.linalg.multi_dot takes a tuple or list of arrays",
            "put the arrays in a list: np.linalg.multi_dot([A, B, C])",
        )
    items = [array(v) for v in arrays]
    if len(items) < 2:
        raise Unsupported(
            "np.linalg.multi_dot: expecting at least two arrays",
            "pass a list of two or more arrays, or use `@` for one product",
        )
    for i, item in enumerate(items):
        edge = i in (0, len(items) - 1)
        if len(item.shape) != 2 and not (edge and len(item.shape) == 1):
            raise S.ShapeMismatch(
                f"np.linalg.multi_dot: {len(item.shape)}-dimensional array given. "
                "Array must be two-dimensional",
                "only the first and the last array may be 1-D",
            )
    if len(items[-1].shape) == 1:
        result = items[-1]
        for item in reversed(items[:-1]):
            result = A.dot(item, result)
        return result
    result = items[0]
    for item in items[1:]:
        result = A.dot(result, item)
    return result


def _matrix_power(a: Value, n: Value) -> Node:
    """``np.linalg.matrix_power`` for a constant ``n``: NumPy's repeated
    squaring (``n < 0`` powers the inverse of a 2-D matrix)."""
    x = array(a, "`a`")
    k = static_int(n, "np.linalg.matrix_power's `n`")
    if len(x.shape) < 2:
        raise S.ShapeMismatch(
            f"np.linalg.matrix_power: {len(x.shape)}-dimensional array given. "
            "Array must be at least two-dimensional",
            "pass a square matrix, or a stack of them",
        )
    size = S.unify(
        x.shape[-2],
        x.shape[-1],
        "np.linalg.matrix_power: Last 2 dimensions of the array must be square",
    )
    if k == 0:
        eye = A.eye(size, size)
        return B.broadcast_to(B.to_int(eye) if x.dtype == "int64" else eye, x.shape)
    if k < 0:
        if len(x.shape) != 2:
            raise Unsupported(
                "np.linalg.matrix_power: a negative power of a stack of matrices "
                "is not supported",
                "power each matrix, or use a constant n >= 0",
            )
        x, k = LA.inv(x), -k
    if k <= 3:
        result = x
        for _ in range(k - 1):
            result = A.dot(result, x)
        return result
    z: Node | None = None
    power: Node | None = None
    while k > 0:
        z = x if z is None else A.dot(z, z)
        k, bit = divmod(k, 2)
        if bit:
            power = z if power is None else A.dot(power, z)
    assert power is not None
    return power


# -- NaN-ignoring reductions, masks, weights -------------------------------------------
def _sum(
    a: Value,
    axis: Value | None = None,
    dtype: Value | None = None,
    out: Value | None = None,
    keepdims: Value | None = None,
    initial: Value | None = None,
    where: Value | None = None,
) -> Node:
    """``np.sum``, with ``where=`` a mask: the sum of the selected elements;
    ``initial`` added to it."""
    _refuse("np.sum", dtype=dtype, out=out)
    x = array(a)
    axes = axes_arg(axis, len(x.shape))
    if not _none(where):
        x = B.select(_mask(where, x, "np.sum"), x, _zero_of(x.dtype))
    total = A.reduce("sum", x, axes, flag(keepdims, "keepdims"))
    if _none(initial):
        return total
    start = array(initial, "`initial`")
    if start.shape:
        raise Unsupported("np.sum: `initial` must be a number", "give one number")
    return B.add(total, start)


def _mean(
    a: Value,
    axis: Value | None = None,
    dtype: Value | None = None,
    out: Value | None = None,
    keepdims: Value | None = None,
    *,
    where: Value | None = None,
) -> Node:
    """``np.mean``, with ``where=``: over the selected elements alone."""
    _refuse("np.mean", dtype=dtype, out=out)
    x = array(a)
    axes = axes_arg(axis, len(x.shape))
    keep = flag(keepdims, "keepdims")
    if _none(where):
        return A.mean(x, axes, keep)
    mask = _mask(where, x, "np.mean")
    total = A.reduce("sum", B.select(mask, x, _zero_of(x.dtype)), axes, keep)
    return B.div(total, _count(mask, axes, keep))


def _nan_sum(
    a: Value,
    axis: Value | None = None,
    dtype: Value | None = None,
    out: Value | None = None,
    keepdims: Value | None = None,
    initial: Value | None = None,
    where: Value | None = None,
) -> Node:
    """``np.nansum``: NaNs count as zero."""
    _refuse("np.nansum", dtype=dtype, out=out, initial=initial)
    x = array(a)
    kept = B.logical_not(_isnan(x))
    if not _none(where):
        kept = B.logical_and(kept, _mask(where, x, "np.nansum"))
    x = B.select(kept, x, _zero_of(x.dtype))
    return A.reduce("sum", x, axes_arg(axis, len(x.shape)), flag(keepdims, "keepdims"))


def _nan_mean(
    a: Value,
    axis: Value | None = None,
    dtype: Value | None = None,
    out: Value | None = None,
    keepdims: Value | None = None,
    *,
    where: Value | None = None,
) -> Node:
    """``np.nanmean``: the mean of the non-NaN elements (NaN where there are none)."""
    _refuse("np.nanmean", dtype=dtype, out=out)
    x = B.to_float(array(a))
    kept = B.logical_not(_isnan(x))
    if not _none(where):
        kept = B.logical_and(kept, _mask(where, x, "np.nanmean"))
    axes, keep = axes_arg(axis, len(x.shape)), flag(keepdims, "keepdims")
    total = A.reduce("sum", B.select(kept, x, B.ZERO), axes, keep)
    return B.div(total, _count(kept, axes, keep))


def _nan_extreme(op: str, name: str) -> Builder:
    """``np.nanmax``/``np.nanmin``: NaNs lose; an all-NaN slice gives NaN."""
    loser = constant(-math.inf if op == "amax" else math.inf)

    def build(
        a: Value,
        axis: Value | None = None,
        out: Value | None = None,
        keepdims: Value | None = None,
        initial: Value | None = None,
        where: Value | None = None,
    ) -> Node:
        _refuse(name, out=out, initial=initial, where=where)
        x = array(a)
        axes, keep = axes_arg(axis, len(x.shape)), flag(keepdims, "keepdims")
        if x.dtype != "float64":
            return A.reduce(op, x, axes, keep)  # integers have no NaN
        nan = _isnan(x)
        extreme = A.reduce(op, B.select(nan, loser, x), axes, keep)
        count = A.reduce("sum", B.to_int(B.logical_not(nan)), axes, keep)
        none = B.apply("eq", count, constant(0))
        return B.select(none, constant(math.nan), extreme)

    return build


def _average(
    a: Value,
    axis: Value | None = None,
    weights: Value | None = None,
    returned: Value | None = None,
    *,
    keepdims: Value | None = None,
) -> Value:
    """``np.average``: ``sum(a * w) / sum(w)`` along ``axis``; 1-D weights go
    along the one axis named; ``returned=True`` adds the sum of the weights."""
    x = B.to_float(array(a))
    axes, keep = axes_arg(axis, len(x.shape)), flag(keepdims, "keepdims")
    if _none(weights):
        avg = A.mean(x, axes, keep)
        scale = B.to_float(A.dim(S.product([x.shape[i] for i in axes])))
    else:
        w = B.to_float(array(weights, "`weights`"))
        if w.shape != x.shape and len(w.shape) != len(x.shape):
            if _none(axis) or isinstance(axis, tuple):
                raise Unsupported(
                    "np.average: axis must be specified when shapes of a and "
                    "weights differ",
                    "name the one axis the 1-D weights go along: axis=-1",
                )
            if len(w.shape) != 1:
                raise S.ShapeMismatch(
                    "np.average: 1D weights expected when shapes "
                    "of a and weights differ",
                    "pass 1-D weights along `axis`, or weights of the array's shape",
                )
            (ax,) = axes
            S.unify(
                w.shape[0],
                x.shape[ax],
                "np.average: length of weights not compatible with specified axis",
            )
            w = A.reshape(
                w, tuple(w.shape[0] if i == ax else 1 for i in range(len(x.shape)))
            )
        scale = A.reduce("sum", w, axes, keep)
        avg = B.div(A.reduce("sum", B.mul(x, w), axes, keep), scale)
    if not flag(returned, "returned"):
        return avg
    return avg, B.broadcast_to(scale, avg.shape)


# -- math: sums, products and distances of tuples ---------------------------------
def _items(value: Value, name: str) -> list[Node] | Node:
    """The numbers of a tuple, or a 1-D array (its elements, by a reduction)."""
    if isinstance(value, tuple) and all(
        isinstance(v, Node) and not v.shape for v in value
    ):
        return list(value)  # type: ignore[arg-type]
    if isinstance(value, Node) and len(value.shape) == 1:
        return value
    raise Unsupported(
        f"`{name}` takes a tuple or list of numbers, or a 1-D array",
        f"write {name}((a, b, c))",
    )


def _fsum(iterable: Value) -> Node:
    """``math.fsum``: the exact sum, rounded once (Python's, bit for bit), of a
    tuple; of a 1-D array, the sum rounded as each addition is."""
    items = _items(iterable, "math.fsum")
    if isinstance(items, Node):
        return A.reduce("sum", B.to_float(items), (0,))
    terms = [B.to_float(item) for item in items]
    consts = [t.value for t in terms if t.op == "const"]
    values = [t for t in terms if t.op != "const"]
    if not values:
        return constant(_python_fsum(consts))
    plain = terms[0]
    for term in terms[1:]:
        plain = B.add(plain, term)
    if not all(map(math.isfinite, consts)):
        return plain  # an infinity or a NaN decides, as in Python
    expansion = [constant(p) for p in _partials(consts)]
    if len(expansion) + len(values) <= 2:
        # at most one addition, which IEEE rounds correctly already
        parts = [*values, *expansion]
        total = parts[0] if len(parts) == 1 else B.add(parts[0], parts[1])
    else:
        for value in values:
            expansion = _grow(expansion, value)
        total = B.select(_isfinite(expansion[-1]), _rounded(expansion), plain)
    # Python's fsum of zeros is +0.0, whatever their signs
    total = B.select(B.apply("eq", total, B.ZERO), B.ZERO, total)
    # the slope is 1 for each term; none flows through the exact arithmetic
    partials = (B.ONE,) * len(values)
    return make("custom", (*values, total), (partials, None), dtype="float64")


def _python_fsum(values: list[float]) -> float:
    """``math.fsum`` of constants, with the IEEE value where Python raises."""
    try:
        return math.fsum(values)
    except (OverflowError, ValueError):  # inf + -inf, or an intermediate overflow
        return float(np.sum(np.array(values, dtype=np.float64)))


def _partials(values: list[float]) -> list[float]:
    """CPython's ``fsum`` partials of finite constants: non-overlapping, by
    increasing magnitude, their sum exactly the sum of ``values``."""
    partials: list[float] = []
    for x in values:
        kept = []
        for y in partials:
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo != 0.0:
                kept.append(lo)
            x = hi
        partials = kept + ([x] if x != 0.0 else [])
    return partials


def _two_sum(a: Node, b: Node) -> tuple[Node, Node]:
    """Knuth's two-sum: ``s = a + b`` rounded and its exact error ``e``
    (``a + b == s + e`` exactly, barring overflow), without branches."""
    s = B.add(a, b)
    b_virtual = B.sub(s, a)
    a_virtual = B.sub(s, b_virtual)
    return s, B.add(B.sub(a, a_virtual), B.sub(b, b_virtual))


def _grow(expansion: list[Node], x: Node) -> list[Node]:
    """Shewchuk's grow-expansion: ``expansion`` (non-overlapping, by increasing
    magnitude, zeros anywhere) plus ``x``, exactly, as such an expansion."""
    grown = []
    for component in expansion:
        x, error = _two_sum(x, component)
        grown.append(error)
    return [*grown, x]


def _rounded(expansion: list[Node]) -> Node:
    """The expansion's sum rounded once, as CPython's ``fsum`` rounds its
    partials: added from the top while exact; where a rounding error ``lo``
    first appears and is half an ulp, the components below it (their sign is
    that of the largest nonzero one) break the tie.  Zero components pass
    through; selects stand for CPython's loop exits."""
    below = [B.ZERO]  # below[j]: the largest nonzero component under j
    for component in expansion[:-1]:
        nonzero = B.apply("ne", component, B.ZERO)
        below.append(B.select(nonzero, component, below[-1]))
    hi, lo, nxt = expansion[-1], B.ZERO, B.ZERO
    for j in range(len(expansion) - 2, -1, -1):
        y = expansion[j]
        total = B.add(hi, y)
        error = B.sub(y, B.sub(total, hi))
        done = B.apply("ne", lo, B.ZERO)  # lo is 0 until the first rounding
        hi = B.select(done, hi, total)
        lo, nxt = B.select(done, lo, error), B.select(done, nxt, below[j])
    same_sign = B.logical_or(
        B.logical_and(B.apply("lt", lo, B.ZERO), B.apply("lt", nxt, B.ZERO)),
        B.logical_and(B.apply("gt", lo, B.ZERO), B.apply("gt", nxt, B.ZERO)),
    )
    twice = B.mul(constant(2.0), lo)
    away = B.add(hi, twice)
    half_ulp = B.apply("eq", twice, B.sub(away, hi))
    return B.select(B.logical_and(same_sign, half_ulp), away, hi)


def _prod(iterable: Value, *, start: Value | None = None) -> Node:
    """``math.prod``: the product of the items, times ``start``."""
    items = _items(iterable, "math.prod")
    first = constant(1) if _none(start) else array(start, "`start`")
    if isinstance(items, Node):
        return B.mul(first, A.reduce("prod", items, (0,)))
    total = first
    for item in items:
        total = B.mul(total, item)
    return total


def _dist(p: Value, q: Value) -> Node:
    """``math.dist``: the Euclidean distance of two points of equal dimension."""
    a, b = _items(p, "math.dist"), _items(q, "math.dist")
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            raise Unsupported(
                "math.dist: both points must have the same number of dimensions",
                "give both points the same number of coordinates",
            )
        return _hypot(*(B.to_float(B.sub(x, y)) for x, y in zip(a, b, strict=True)))
    left = a if isinstance(a, Node) else array(tuple(a))
    right = b if isinstance(b, Node) else array(tuple(b))
    diff = B.to_float(B.sub(left, right))
    return B.apply("sqrt", A.reduce("sum", B.mul(diff, diff), (0,)))


# -- Python's numbers: round, divmod, isclose, any, all ------------------------------
def _number(value: Value, name: str, what: str = "its argument") -> Node:
    if isinstance(value, Node):
        return value
    raise Unsupported(f"`{name}`: {what} must be a number", f"pass a number to {name}")


def _python_round(number: Value, ndigits: Value | None = None) -> Node:
    """``round``: of a float, an int (ties to even) without ``ndigits``, else
    the float Python's correctly rounded decimal rounding gives (``ndigits`` a
    constant); of an int, an int; of an array, ``np.round``.  Slope 0."""
    x = _number(number, "round", "the number")
    if x.shape:
        return AR._round(x, ndigits)  # ndarray.__round__
    if _none(ndigits):
        return B.truncate(AR._rint(x)) if x.dtype == "float64" else B.to_int(x)
    if not (isinstance(ndigits, Node) and ndigits.op == "const" and not ndigits.shape):
        raise Unsupported(
            "round's `ndigits` must be a constant integer",
            "write the number of digits itself: round(x, 2)",
        )
    n = int(ndigits.value)
    if x.dtype != "float64":
        return _round_int(B.to_int(x), n)
    return B.apply("stop_gradient", _round_float(x, n))


def _round_int(k: Node, n: int) -> Node:
    """``round(k, n)`` of an int: ``k`` for ``n >= 0``, else the nearest
    multiple of ``10**-n``, ties to the even multiple."""
    if n >= 0:
        return k
    if n < -18:
        raise Unsupported(
            "round of an int to more than 18 digits left of the point is not "
            "supported (it is 0 or beyond int64)",
            "round a float: round(k * 1.0, n)",
        )
    scale = constant(10 ** (-n))
    q = B.apply("floordiv", k, scale)
    twice = B.mul(constant(2), B.apply("mod", k, scale))
    odd = B.apply("eq", B.apply("mod", q, constant(2)), constant(1))
    up = B.logical_or(
        B.apply("gt", twice, scale),
        B.logical_and(B.apply("eq", twice, scale), odd),
    )
    return B.mul(B.add(q, B.select(up, constant(1), constant(0))), scale)


def _round_float(x: Node, n: int) -> Node:
    """``round(x, n)`` as CPython computes it: the exact decimal value of ``x``
    rounded half to even at ``n`` digits, read back correctly rounded.

    With ``s = 10**|n|`` exact (``|n| <= 22``), ``x * s`` (or ``x / s``) is
    split exactly into a rounded part ``p`` and its error (two-product);
    rounding ``p`` to an integer is exact unless ``p`` is a tie, where the
    error's sign decides; ``k / s`` (``k * s``) then rounds once, as reading
    the digits back does.  Past ``|p| = 2**53``, ``x`` has no digit to drop."""
    if n > 323:  # CPython's limits: x itself, or a zero of its sign
        return x
    if n < -308:
        return B.select(_isfinite(x), B.mul(constant(0.0), x), x)
    if abs(n) > 22:
        raise Unsupported(
            "round(x, ndigits) is supported for ndigits from -22 to 22 (where "
            "10**ndigits is exact), or beyond 323 and below -308",
            "round to at most 22 digits either side of the point",
        )
    scale = 10.0 ** abs(n)
    if n >= 0:
        p, error = _two_product(x, scale)
        up, down = B.apply("gt", error, B.ZERO), B.apply("lt", error, B.ZERO)
    else:
        p = B.div(x, constant(scale))
        product, error = _two_product(p, scale)
        rest = B.sub(x, product)  # exact: product is within an ulp or two of x
        up, down = B.apply("gt", rest, error), B.apply("lt", rest, error)
    k = _nearest(p, up, down)
    value = B.div(k, constant(scale)) if n >= 0 else B.mul(k, constant(scale))
    small = B.apply("lt", B.apply("abs", p), constant(2.0**53))
    return B.select(small, B.apply("copysign", value, x), x)


def _nearest(p: Node, up: Node, down: Node) -> Node:
    """The integer nearest ``p + t`` for a tiny ``t`` of which ``up``/``down``
    say the sign: ``rint(p)``, except at a tie (``p`` a half-integer, exact
    below ``2**52``), which ``t`` breaks."""
    half = B.apply("eq", B.sub(p, B.apply("floor", p)), constant(0.5))
    upper = B.add(p, constant(0.5))
    lower = B.sub(p, constant(0.5))
    nearest = B.select(B.logical_and(half, down), lower, AR._rint(p))
    return B.select(B.logical_and(half, up), upper, nearest)


def _two_product(a: Node, c: float) -> tuple[Node, Node]:
    """Dekker's two-product of ``a`` and a constant: ``a * c`` rounded and its
    exact error, from Veltkamp's splits (exact unless they overflow, beyond
    ``|a|`` about 1e300, or underflow)."""
    a_hi, a_lo = _split(a)
    c_hi, c_lo = _split_constant(c)
    p = B.mul(constant(c), a)
    error = B.sub(B.mul(constant(c_hi), a_hi), p)
    if c_lo:
        error = B.add(error, B.mul(constant(c_lo), a_hi))
    error = B.add(error, B.mul(constant(c_hi), a_lo))
    if c_lo:
        error = B.add(error, B.mul(constant(c_lo), a_lo))
    return p, error


_SPLITTER = 134217729.0  # 2**27 + 1: 53-bit significands split into 26 + 26 bits


def _split(a: Node) -> tuple[Node, Node]:
    c = B.mul(constant(_SPLITTER), a)
    high = B.sub(c, B.sub(c, a))
    return high, B.sub(a, high)


def _split_constant(a: float) -> tuple[float, float]:
    c = _SPLITTER * a
    high = c - (c - a)
    return high, a - high


def _divmod(a: Value, b: Value) -> tuple[Node, Node]:
    """``divmod``: ``(a // b, a % b)``, Python's floored division (ints stay
    ints; ``%`` has the sign of ``b``)."""
    x = _number(a, "divmod", "the dividend")
    y = _number(b, "divmod", "the divisor")
    return B.apply("floordiv", x, y), B.apply("mod", x, y)


def _isclose(
    a: Value, b: Value, *, rel_tol: Value | None = None, abs_tol: Value | None = None
) -> Node:
    """``math.isclose``: CPython's test, ``a == b``, or both finite and
    ``|a - b|`` within ``rel_tol`` of either or within ``abs_tol``."""
    x = B.to_float(_number(a, "math.isclose", "`a`"))
    y = B.to_float(_number(b, "math.isclose", "`b`"))
    rel = constant(1e-09) if _none(rel_tol) else _number(rel_tol, "math.isclose")
    tol = constant(0.0) if _none(abs_tol) else _number(abs_tol, "math.isclose")
    for t in (rel, tol):
        if t.op == "const" and t.value < 0:
            raise Unsupported(
                "math.isclose: tolerances must be non-negative (Python raises "
                "ValueError)",
                "give rel_tol and abs_tol of 0 or more",
            )
    diff = B.apply("abs", B.sub(y, x))
    near = B.logical_or(
        B.logical_or(
            B.apply("le", diff, B.apply("abs", B.mul(rel, y))),
            B.apply("le", diff, B.apply("abs", B.mul(rel, x))),
        ),
        B.apply("le", diff, tol),
    )
    finite = B.logical_and(_isfinite(x), _isfinite(y))
    return B.logical_or(B.apply("eq", x, y), B.logical_and(finite, near))


def _truth_fold(name: str) -> Builder:
    """``any``/``all`` of a tuple of numbers or of a 1-D array: whether any
    (every) item is nonzero (NaN counts as true, as in Python)."""
    is_any = name == "any"

    def build(iterable: Value) -> Node:
        items = _items(iterable, name)
        if isinstance(items, Node):
            kept = B.truth(items) if is_any else B.logical_not(B.truth(items))
            count = A.reduce("sum", B.to_int(kept), (0,))
            return B.apply("gt" if is_any else "eq", count, constant(0))
        combine = B.logical_or if is_any else B.logical_and
        result = B.FALSE if is_any else B.TRUE
        for item in items:
            result = combine(result, B.truth(item))
        return result

    return build


# -- scipy.special of arrays ---------------------------------------------------------
def _shift(x: Node, axes: tuple[int, ...], finite: bool = True) -> Node:
    """The largest element along ``axes`` (kept), held constant: the shift that
    keeps ``exp`` from overflowing.  ``finite``: 0 where the largest is not
    finite (SciPy's logsumexp and log_softmax; its softmax shifts by it as is)."""
    top = A.reduce("amax", x, axes, keepdims=True)
    if finite:
        top = B.select(_isfinite(top), top, B.ZERO)
    return B.apply("stop_gradient", top)


def _logsumexp(
    a: Value,
    axis: Value | None = None,
    b: Value | None = None,
    keepdims: Value | None = None,
    return_sign: Value | None = None,
) -> Value:
    """``scipy.special.logsumexp``: ``log(sum(b * exp(a - m))) + m``, ``m`` the
    maximum held by ``stop_gradient``: the derivative is the softmax exactly."""
    x = B.to_float(array(a, "`a`"))
    weights = None if _none(b) else array(b, "`b`")
    if weights is not None:
        shape = S.broadcast([x.shape, weights.shape], lambda: "logsumexp's `a`, `b`")
        x = B.broadcast_to(x, shape)
    axes, keep = axes_arg(axis, len(x.shape)), flag(keepdims, "keepdims")
    if weights is None:
        m = _shift(x, axes)
    else:  # terms with b == 0 are left out, as -inf (SciPy's)
        zero = B.apply("eq", weights, _zero_of(weights.dtype))
        x = B.select(zero, constant(-math.inf), x)
        m = _shift(x, axes)
    terms = B.apply("exp", B.sub(x, m))
    if weights is not None:
        terms = B.mul(weights, terms)
    total = A.reduce("sum", terms, axes, keep)
    m = m if keep else A.reshape(m, total.shape)
    if not flag(return_sign, "return_sign"):
        return B.add(B.log(total), m)
    return B.add(B.log(B.apply("abs", total)), m), B.apply("sign", total)


def _softmax(x: Value, axis: Value | None = None) -> Node:
    """``scipy.special.softmax``: ``exp(x - m) / sum(exp(x - m))``."""
    node = B.to_float(array(x, "`x`"))
    axes = axes_arg(axis, len(node.shape))
    shifted = B.apply("exp", B.sub(node, _shift(node, axes, finite=False)))
    return B.div(shifted, A.reduce("sum", shifted, axes, keepdims=True))


def _log_softmax(x: Value, axis: Value | None = None) -> Node:
    """``scipy.special.log_softmax``: ``x - m - log(sum(exp(x - m)))``."""
    node = B.to_float(array(x, "`x`"))
    axes = axes_arg(axis, len(node.shape))
    shifted = B.sub(node, _shift(node, axes))
    total = A.reduce("sum", B.apply("exp", shifted), axes, keepdims=True)
    return B.sub(shifted, B.log(total))


_SCIPY_SPECIAL: dict[str, Builder] = {
    "logsumexp": _logsumexp,
    "softmax": _softmax,
    "log_softmax": _log_softmax,
}


def scipy_function(obj: object) -> tuple[str, Builder] | None:
    """The builder of an array function of ``scipy.special``, looked up only if
    the user's code imported it (symdiff never imports SciPy itself)."""
    module = sys.modules.get("scipy.special")
    if module is None:
        return None
    for name, build in _SCIPY_SPECIAL.items():
        if getattr(module, name, None) is obj:
            return f"scipy.special.{name}", build
    return None


_NUMPY: dict[str, Builder] = {
    "cross": _cross,
    "polyval": _polyval,
    "trapezoid": _trapezoid,
    "trapz": _trapezoid,
    "kron": _kron,
    "nansum": _nan_sum,
    "nanmean": _nan_mean,
    "nanmax": _nan_extreme("amax", "np.nanmax"),
    "nanmin": _nan_extreme("amin", "np.nanmin"),
    "sum": _sum,
    "mean": _mean,
    "average": _average,
}

#: ``x.sum(...)`` and ``x.mean(...)``: NumPy's methods take the functions' arguments.
METHODS: dict[str, Builder] = {
    "sum": _sum,
    "mean": _mean,
    **ordering.METHODS,  # argmax, argmin, argsort
    **layout.METHODS,  # swapaxes, item
}

FUNCTIONS: dict[int, tuple[str, Builder]] = {
    id(getattr(np, name)): (f"np.{name}", build)
    for name, build in _NUMPY.items()
    if hasattr(np, name)
}
for _table in (ordering.FUNCTIONS, layout.FUNCTIONS, products.FUNCTIONS):
    FUNCTIONS.update(_table)
FUNCTIONS[id(np.linalg.multi_dot)] = ("np.linalg.multi_dot", _multi_dot)
FUNCTIONS[id(np.linalg.matrix_power)] = ("np.linalg.matrix_power", _matrix_power)
FUNCTIONS[id(math.fsum)] = ("math.fsum", _fsum)
FUNCTIONS[id(math.prod)] = ("math.prod", _prod)
FUNCTIONS[id(math.dist)] = ("math.dist", _dist)
FUNCTIONS[id(math.isclose)] = ("math.isclose", _isclose)
FUNCTIONS[id(builtins.round)] = ("round", _python_round)
FUNCTIONS[id(builtins.divmod)] = ("divmod", _divmod)
FUNCTIONS[id(builtins.any)] = ("any", _truth_fold("any"))
FUNCTIONS[id(builtins.all)] = ("all", _truth_fold("all"))

#: Functions of a tuple that may take a generator expression over a constant
#: range instead (``math.fsum(x[i] for i in range(4))``), unrolled into a tuple
#: by the comprehension lowering.
GENERATOR_CONSUMERS: dict[int, tuple[str, Builder]] = {
    key: FUNCTIONS[key] for key in map(id, (math.fsum, math.prod, any, all))
}
