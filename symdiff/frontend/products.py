"""NumPy functions that are sums of products: ``np.tensordot``,
``np.convolve``/``np.correlate``, ``np.cov``/``np.corrcoef``.

Each is transposes and reshapes around a matrix product (``A.dot``: BLAS), or
sliding windows read by slices (or, in a loop, by a gather), multiplied and
summed, so their derivatives are those ops'.  :data:`FUNCTIONS` is merged into
:mod:`.more_numpy`'s table.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from symdiff.frontend.arrays import (
    Unsupported,
    _axis_list,
    _lift,
    _none,
    array,
    flag,
    length,
    refuse,
    require_nonempty,
    static_int,
)
from symdiff.frontend.values import Value
from symdiff.ir import arrays as A
from symdiff.ir import build as B
from symdiff.ir import loops as L
from symdiff.ir import shapes as S
from symdiff.ir.node import Node, constant
from symdiff.ir.shapes import Length

Builder = Callable[..., Value]

#: Kernels up to this long slide as one slice per element (fused element-wise
#: loops); longer ones, or of a length known only when the kernel runs, are a
#: loop over their elements that adds one window of the signal each.
_UNROLLED = 16


# -- tensordot ------------------------------------------------------------------------
def _tensordot_axes(axes: Value, ra: int, rb: int) -> tuple[list[int], list[int]]:
    """``axes`` as the summed axes of each operand: ``k`` (the last ``k`` of
    ``a`` with the first ``k`` of ``b``) or a pair of axes or tuples of them."""
    if isinstance(axes, tuple):
        if len(axes) != 2:
            raise Unsupported(
                "np.tensordot: `axes` must be an integer or a pair of sequences",
                "write axes=((1, 2), (0, 1))",
            )
        return (
            _axis_list(axes[0], ra, "np.tensordot"),
            _axis_list(axes[1], rb, "np.tensordot"),
        )
    k = static_int(axes, "np.tensordot's `axes`")
    if not 0 <= k <= min(ra, rb):
        raise Unsupported(
            f"np.tensordot: cannot sum over {k} axes of arrays of dimension "
            f"{ra} and {rb}",
            "sum over at most as many axes as the smaller array has",
        )
    return list(range(ra - k, ra)), list(range(k))


def _tensordot(a: Value, b: Value, axes: Value | None = None) -> Node:
    """``np.tensordot``: the summed axes of ``a`` moved last and ``b``'s first,
    each operand reshaped to a matrix (or a vector), one matrix product, the
    result reshaped to ``a``'s free axes then ``b``'s."""
    x, y = array(a, "`a`"), array(b, "`b`")
    ra, rb = len(x.shape), len(y.shape)
    summed_a, summed_b = _tensordot_axes(constant(2) if axes is None else axes, ra, rb)
    if len(summed_a) != len(summed_b) or len(set(summed_a)) != len(summed_a):
        raise Unsupported(
            "np.tensordot: shape-mismatch for sum", "name as many axes of each array"
        )
    for i, j in zip(summed_a, summed_b, strict=True):
        S.unify(x.shape[i], y.shape[j], "np.tensordot: shape-mismatch for sum")
    free_a = [i for i in range(ra) if i not in summed_a]
    free_b = [j for j in range(rb) if j not in summed_b]
    xt = A.transpose(x, (*free_a, *summed_a))
    yt = A.transpose(y, (*summed_b, *free_b))
    shape_a = tuple(x.shape[i] for i in free_a)
    shape_b = tuple(y.shape[j] for j in free_b)
    if not summed_a:  # an outer product: nothing is summed
        left = A.reshape(xt, (*shape_a, *(1,) * len(shape_b)))
        return B.mul(left, yt)
    k = S.product([x.shape[i] for i in summed_a])
    left = A.reshape(xt, (S.product(shape_a), k) if shape_a else (k,))
    right = A.reshape(yt, (k, S.product(shape_b)) if shape_b else (k,))
    return A.reshape(A.dot(left, right), (*shape_a, *shape_b))


# -- convolve, correlate ---------------------------------------------------------------
def _vector(value: Value, what: str, name: str) -> Node:
    node = array(value, what)
    if len(node.shape) != 1:
        raise Unsupported(
            f"{name}: {what} must be 1-D, not of dimension {len(node.shape)}",
            "pass 1-D arrays (np.ravel(x) flattens one)",
        )
    return B.to_float(node)


def _sliding(
    a: Node, v: Node, left: Length, right: Length, size: Length, name: str
) -> Node:
    """``out[i] = sum_j p[i + j] * v[j]`` for ``i < size``, ``p`` being ``a``
    with ``left`` zeros before it and ``right`` after."""
    pads = [A.full(B.ZERO, (w,)) if w != 0 else None for w in (left, right)]
    parts = [p for p in (pads[0], a, pads[1]) if p is not None]
    padded = A.concat(parts, 0)
    m = v.shape[0]
    if isinstance(m, int) and m <= _UNROLLED:
        terms = [
            B.mul(A.along(padded, 0, j, size), A.getitem(v, (("int", j),)))
            for j in range(m)
        ]
        total = terms[0]
        for term in terms[1:]:
            total = B.add(total, term)
        return total
    return _sliding_loop(padded, v, size, name)


def _sliding_loop(padded: Node, v: Node, size: Length, name: str) -> Node:
    """``sum_j v[j] * p[j:j + size]`` as a loop over ``j``: one window of the
    padded array read (a gather) and added per element of ``v``, so the
    forward pass holds one window at a time (its reverse mode tapes them:
    ``len(v)`` windows)."""
    j = L.var("j", (), "int64")
    total = L.var("total", (size,), "float64")
    ps = L.var("p", padded.shape, "float64")
    vs = L.var("v", v.shape, "float64")
    window = A.gather(ps, [B.add(A.arange(size), j)], [False], "a window")
    weight = A.take(vs, (("at", 0),), [j])
    new_total = B.add(total, B.mul(window, weight))
    body = L.Body(j, (total,), (ps, vs), (new_total,), label=name)
    node = L.loop(A.dim(v.shape[0]), (A.full(B.ZERO, (size,)),), (padded, v), body)
    return L.result(node, 0)


def _at_least(n: Length, m: Length, name: str, mode: str) -> bool:
    """Whether ``n >= m``: decided now when the difference is known, else
    assumed and checked when the kernel runs (NumPy swaps the arrays when the
    second is longer: a length that decides that is needed now)."""
    gap = S.sub(n, m)
    if isinstance(gap, int):
        return gap >= 0
    S.require_less(
        S.sub(m, 1),
        n,
        f"{name}: with mode={mode!r} and lengths known only when the kernel "
        "runs, symdiff needs the first array at least as long as the second",
    )
    return True


def _mode(value: Value | None, default: str, name: str) -> str:
    mode = default if _none(value) else getattr(value, "obj", None)
    if mode not in ("full", "same", "valid"):
        raise Unsupported(
            f"{name}: mode must be 'full', 'same' or 'valid'", "write mode='same'"
        )
    return str(mode)


def _correlation(a: Node, v: Node, mode: str, name: str) -> Node:
    """NumPy's correlation of ``a`` with ``v`` (``sum_j a[i + j] v[j]``) in
    ``mode``, for ``len(a) >= len(v)`` (``full`` for any lengths)."""
    n, m = a.shape[0], v.shape[0]
    if mode == "full":
        return _sliding(a, v, S.sub(m, 1), S.sub(m, 1), S.sub(S.add(n, m), 1), name)
    if mode == "valid":
        return _sliding(a, v, 0, 0, S.add(S.sub(n, m), 1), name)
    half = S.floordiv(m, 2)
    return _sliding(a, v, half, S.sub(S.sub(m, 1), half), n, name)


def _inputs(a: Value, v: Value, name: str) -> tuple[Node, Node]:
    x, y = _vector(a, "`a`", name), _vector(v, "`v`", name)
    require_nonempty(x.shape[0], f"{name}: a cannot be empty")
    require_nonempty(y.shape[0], f"{name}: v cannot be empty")
    return x, y


def _convolve(a: Value, v: Value, mode: Value | None = None) -> Node:
    """``np.convolve``: ``sum_j a[j] v[i - j]``, the correlation with ``v``
    reversed; the longer array goes first, as NumPy swaps them."""
    x, y = _inputs(a, v, "np.convolve")
    how = _mode(mode, "full", "np.convolve")
    if how != "full" and not _at_least(x.shape[0], y.shape[0], "np.convolve", how):
        x, y = y, x
    return _correlation(x, A.flip(y, (0,)), how, "np.convolve")


def _correlate(a: Value, v: Value, mode: Value | None = None) -> Node:
    """``np.correlate``: ``c[k] = sum_n a[n + k] v[n]``; with ``v`` the longer
    array, NumPy correlates the other way round and reverses the result."""
    x, y = _inputs(a, v, "np.correlate")
    how = _mode(mode, "valid", "np.correlate")
    if how != "full" and not _at_least(x.shape[0], y.shape[0], "np.correlate", how):
        return A.flip(_correlation(y, x, how, "np.correlate"), (0,))
    return _correlation(x, y, how, "np.correlate")


# -- cov, corrcoef --------------------------------------------------------------------
def _observations(value: Value, rowvar: bool, what: str) -> Node:
    """Variables as rows (NumPy's ``X``): a vector is one variable."""
    x = B.to_float(array(value, what))
    if len(x.shape) > 2:
        raise Unsupported(
            f"np.cov: {what} has more than 2 dimensions",
            "pass one variable per row (or column, with rowvar=False)",
        )
    x = _lift(x, 2)
    return A.transpose(x) if not rowvar and x.shape[0] != 1 else x


def _cov(
    m: Value,
    y: Value | None = None,
    rowvar: Value | None = None,
    bias: Value | None = None,
    ddof: Value | None = None,
    fweights: Value | None = None,
    aweights: Value | None = None,
    *,
    dtype: Value | None = None,
) -> Node:
    """``np.cov``: the rows of ``m`` (and of ``y``) centred, times their
    transpose, times ``1 / (N - ddof)``, as NumPy computes it (``ddof`` 1, or 0
    with ``bias``); squeezed (one variable gives a number)."""
    refuse("np.cov", fweights=fweights, aweights=aweights, dtype=dtype)
    by_rows = _none(rowvar) or flag(rowvar, "rowvar")
    x = _observations(m, by_rows, "`m`")
    if not _none(y):
        x = A.concat([x, _observations(y, by_rows, "`y`")], 0)
    if _none(ddof):
        ddof_: Length = 0 if flag(bias, "bias") else 1
    else:
        ddof_ = length(ddof, "`ddof`")  # type: ignore[arg-type]
    count = S.sub(x.shape[1], ddof_)
    if isinstance(count, int):
        fact: Node = constant(float(max(count, 0)))
    else:  # NumPy warns and divides by 0 where the count is not positive
        fact = B.to_float(B.apply("max", A.dim(count), constant(0)))
    centred = B.sub(x, A.mean(x, (1,), keepdims=True))
    c = B.mul(A.dot(centred, A.transpose(centred)), B.div(B.ONE, fact))
    return A.reshape(c, tuple(d for d in c.shape if d != 1))


def _corrcoef(
    x: Value,
    y: Value | None = None,
    rowvar: Value | None = None,
    bias: Value | None = None,
    ddof: Value | None = None,
    *,
    dtype: Value | None = None,
) -> Node:
    """``np.corrcoef``: the covariance over the outer product of the standard
    deviations, clipped to ``[-1, 1]`` as NumPy clips it (``bias`` and
    ``ddof`` have no effect, as in NumPy)."""
    c = _cov(x, y, rowvar, dtype=dtype)
    if not c.shape:
        return B.div(c, c)
    rows = A.iota(0, c.shape)
    on = B.apply("eq", rows, A.iota(1, c.shape))
    d = A.reduce("sum", B.select(on, c, B.ZERO), (1,))
    std = B.apply("sqrt", d)
    n = c.shape[0]
    c = B.div(B.div(c, A.reshape(std, (n, 1))), A.reshape(std, (1, n)))
    return B.apply("min", B.apply("max", c, constant(-1.0)), constant(1.0))


_NUMPY: dict[str, Builder] = {
    "tensordot": _tensordot,
    "convolve": _convolve,
    "correlate": _correlate,
    "cov": _cov,
    "corrcoef": _corrcoef,
}

FUNCTIONS: dict[int, tuple[str, Builder]] = {
    id(getattr(np, name)): (f"np.{name}", build) for name, build in _NUMPY.items()
}
