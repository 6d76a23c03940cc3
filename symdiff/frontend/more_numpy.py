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

import math
import sys
from collections.abc import Callable

import numpy as np

from symdiff.frontend import arrays as AR
from symdiff.frontend.arrays import (
    Unsupported,
    _none,
    _zero_of,
    array,
    axes_arg,
    flag,
    static_int,
)
from symdiff.frontend.callables import _hypot, _isfinite, _isnan
from symdiff.frontend.values import Value
from symdiff.ir import arrays as A
from symdiff.ir import build as B
from symdiff.ir import linalg as LA
from symdiff.ir import shapes as S
from symdiff.ir.node import Node, constant

Builder = Callable[..., Value]


# -- helpers ---------------------------------------------------------------------
def _axis(value: Value, rank: int, name: str) -> int:
    """One constant axis, negative counting from the end, as NumPy checks it."""
    return AR._axis_list(value, rank, name)[0]


def _refuse(name: str, **options: Value | None) -> None:
    """Options symdiff does not take (``out=``, ``dtype=``...) must be left out."""
    for key, value in options.items():
        if not _none(value):
            raise Unsupported(f"{name}: `{key}` is not supported", f"leave `{key}` out")


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
    S.unify(n, 3, f"{name}: incompatible dimensions for cross product")
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
    """``np.sum``, with ``where=`` a mask: the sum of the selected elements."""
    _refuse("np.sum", dtype=dtype, out=out, initial=initial)
    x = array(a)
    axes = axes_arg(axis, len(x.shape))
    if not _none(where):
        x = B.select(_mask(where, x, "np.sum"), x, _zero_of(x.dtype))
    return A.reduce("sum", x, axes, flag(keepdims, "keepdims"))


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
    """``math.fsum``: the sum (rounded as each addition is, not exactly once)."""
    items = _items(iterable, "math.fsum")
    if isinstance(items, Node):
        return A.reduce("sum", B.to_float(items), (0,))
    total: Node = B.ZERO
    for item in items:
        total = B.add(total, B.to_float(item))
    return total


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
METHODS: dict[str, Builder] = {"sum": _sum, "mean": _mean}

FUNCTIONS: dict[int, tuple[str, Builder]] = {
    id(getattr(np, name)): (f"np.{name}", build)
    for name, build in _NUMPY.items()
    if hasattr(np, name)
}
FUNCTIONS[id(np.linalg.multi_dot)] = ("np.linalg.multi_dot", _multi_dot)
FUNCTIONS[id(np.linalg.matrix_power)] = ("np.linalg.matrix_power", _matrix_power)
FUNCTIONS[id(math.fsum)] = ("math.fsum", _fsum)
FUNCTIONS[id(math.prod)] = ("math.prod", _prod)
FUNCTIONS[id(math.dist)] = ("math.dist", _dist)
