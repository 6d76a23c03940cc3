"""Smart constructors of the array ops: reductions, products, layout, indexing.

Element-wise ops are the scalar ops of :mod:`symdiff.ir.build` applied to arrays
(their shapes broadcast).  The ops here move or combine elements; each has a
vector-Jacobian product in :mod:`symdiff.rules.arrays`.

Index specs (``getitem``/``scatter`` attrs) hold one entry per axis of the indexed
array, plus ``("new",)`` for each ``None``:

* ``("int", i)``: one position (``i`` a length, already non-negative);
* ``("slice", start, length, step)``: ``length`` positions from ``start``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from symdiff.ir import loops as L
from symdiff.ir import shapes as S
from symdiff.ir.build import (
    ONE,
    ZERO,
    apply,
    broadcast_to,
    div,
    mul,
    select,
    to_float,
    to_int,
)
from symdiff.ir.node import Node, constant, make
from symdiff.ir.shapes import Length, Shape

Spec = tuple[tuple[Any, ...], ...]


def dim(d: Length) -> Node:
    """A length as an int64 scalar node."""
    if isinstance(d, int):
        return constant(d)
    return make("dim", (), (d,), dtype="int64")


def iota(axis: int, shape: Shape) -> Node:
    """The index along ``axis`` at every position of ``shape`` (int64)."""
    return make("iota", (), (axis,), shape=shape, dtype="int64")


def full(value: Node, shape: Shape) -> Node:
    return broadcast_to(value, shape)


def normalise_axes(axes: int | Sequence[int] | None, rank: int) -> tuple[int, ...]:
    """Axes as sorted non-negative ints; ``None`` is every axis."""
    if axes is None:
        return tuple(range(rank))
    if isinstance(axes, int):
        axes = (axes,)
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise S.ShapeMismatch(
                f"axis {a} is out of bounds for an array of dimension {rank}",
                "axes count from 0 up to the dimension minus 1, or from -1 backwards",
            )
        out.append(a % rank)
    if len(set(out)) != len(out):
        raise S.ShapeMismatch("repeated axis", "name each axis once")
    return tuple(sorted(out))


def _kept(shape: Shape, axes: tuple[int, ...]) -> Shape:
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def keepdims_shape(shape: Shape, axes: tuple[int, ...]) -> Shape:
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def reduce(op: str, x: Node, axes: tuple[int, ...], keepdims: bool = False) -> Node:
    """``op`` (sum, prod, amax, amin) over ``axes`` (normalised)."""
    stretched = x.op == "broadcast" and not x.args[0].shape
    if op == "sum" and stretched and axes and x.dtype == "float64":
        # the sum of a stretched scalar is the scalar times the count
        count = S.product([x.shape[a] for a in axes])
        out = mul(to_float(dim(count)), x.args[0])
        shape = keepdims_shape(x.shape, axes) if keepdims else _kept(x.shape, axes)
        return broadcast_to(out, shape)
    if not axes:
        return x
    if op == "sum" and x.op == "select" and not x.args[0].shape:
        # the sum of an array chosen by one condition (an adjoint routed
        # through an `if`) is the choice between sums: the condition stays
        # outside, where reverse mode keeps it apart from a partial that is
        # infinite in the branch not taken (mu_bar / m at m == 0)
        c, a, b = x.args
        if is_zero_fill(b) or is_zero_fill(a):
            keep = a if is_zero_fill(b) else b
            total = _reduce(op, broadcast_to(keep, x.shape), axes, keepdims)
            zero = broadcast_to(
                constant(0.0 if x.dtype == "float64" else 0), total.shape
            )
            return select(c, total, zero) if keep is a else select(c, zero, total)
    return _reduce(op, x, axes, keepdims)


def _reduce(op: str, x: Node, axes: tuple[int, ...], keepdims: bool) -> Node:
    shape = _kept(x.shape, axes)
    node = make(op, (x,), (axes,), shape=shape, dtype=_reduce_dtype(op, x.dtype))
    return reshape(node, keepdims_shape(x.shape, axes)) if keepdims else node


def _reduce_dtype(op: str, dtype: str) -> str:
    if op in ("sum", "prod") and dtype == "bool":
        return "int64"
    return dtype


def mean(x: Node, axes: tuple[int, ...], keepdims: bool = False) -> Node:
    total = reduce("sum", x, axes, keepdims)
    count = S.product([x.shape[a] for a in axes])
    return div(total, to_float(dim(count)))


def reshape(x: Node, shape: Shape) -> Node:
    if x.shape == shape:
        return x
    if x.op == "reshape":
        x = x.args[0]
        if x.shape == shape:
            return x
    return make("reshape", (x,), shape=shape, dtype=x.dtype)


def transpose(x: Node, perm: tuple[int, ...] | None = None) -> Node:
    rank = len(x.shape)
    if perm is None:
        perm = tuple(reversed(range(rank)))
    if perm == tuple(range(rank)):
        return x
    if x.op == "transpose":
        inner = x.attrs[0]
        return transpose(x.args[0], tuple(inner[p] for p in perm))
    shape = tuple(x.shape[p] for p in perm)
    return make("transpose", (x,), (perm,), shape=shape, dtype=x.dtype)


def inverse(perm: tuple[int, ...]) -> tuple[int, ...]:
    out = [0] * len(perm)
    for i, p in enumerate(perm):
        out[p] = i
    return tuple(out)


def getitem(x: Node, spec: Spec) -> Node:
    shape: list[Length] = []
    for entry in spec:
        if entry[0] == "slice":
            shape.append(entry[2])
        elif entry[0] == "new":
            shape.append(1)
    axis = 0
    trivial = True
    for entry in spec:
        if entry[0] == "new":
            trivial = False
        elif entry[0] == "int" or entry[1:] != (0, x.shape[axis], 1):
            trivial = False
            axis += 1
        else:
            axis += 1
    if trivial:
        return x
    return make("getitem", (x,), (spec,), shape=tuple(shape), dtype=x.dtype)


def scatter(g: Node, spec: Spec, shape: Shape) -> Node:
    """Zeros of ``shape`` with ``g`` at the positions ``spec`` selects."""
    return make("scatter", (g,), (spec,), shape=shape, dtype=g.dtype)


def concat(xs: Sequence[Node], axis: int) -> Node:
    if len(xs) == 1:
        return xs[0]
    first = xs[0].shape
    shape = list(first)
    total: Length = 0
    for x in xs:
        if len(x.shape) != len(first):
            raise S.ShapeMismatch(
                "all the input arrays must have same number of dimensions"
            )
        for i, (a, b) in enumerate(zip(x.shape, first, strict=True)):
            if i != axis:
                shape[i] = S.unify(
                    b,
                    a,
                    "all the input array dimensions except for the concatenation "
                    f"axis must match exactly (axis {i})",
                )
        total = S.add(total, x.shape[axis])
    shape[axis] = total
    dtype = max((x.dtype for x in xs), key=("bool", "int64", "float64").index)
    xs = [to_float(x) if dtype == "float64" else x for x in xs]
    return make("concat", tuple(xs), (axis,), shape=tuple(shape), dtype=dtype)


def pack(items: Sequence[Node]) -> Node:
    """A 1-D array of scalars (``np.array([a, b, c])``)."""
    dtype = max((x.dtype for x in items), key=("bool", "int64", "float64").index)
    items = [to_float(x) if dtype == "float64" else x for x in items]
    return make("pack", tuple(items), shape=(len(items),), dtype=dtype)


def dot(a: Node, b: Node) -> Node:
    """``a @ b`` for 1-D and 2-D operands."""
    ra, rb = len(a.shape), len(b.shape)
    if ra == 0 or rb == 0:
        raise S.ShapeMismatch(
            "matmul: an operand is a scalar",
            "multiply by a number with `*`; on the command line, declare arrays "
            "with --arg X=f64[3,4]",
        )
    k_a = a.shape[-1]
    k_b = b.shape[0] if rb < 2 else b.shape[-2]
    S.unify(
        k_a,
        k_b,
        f"matmul: shapes {S.format_shape(a.shape)} and {S.format_shape(b.shape)} "
        f"not aligned: {S.format_dim(k_a)} (dim {ra - 1}) != "
        f"{S.format_dim(k_b)} (dim 0)",
    )
    if ra > 2 or rb > 2:
        # a stack of matrix products: multiply with broadcasting and sum over the
        # shared axis; the code generator fuses both into one loop nest
        if rb == 1:
            return reduce("sum", mul(a, b), (ra - 1,))
        if ra == 1:
            col = reshape(a, (a.shape[0], 1))
            return reduce("sum", mul(col, b), (rb - 2,))
        left = reshape(a, (*a.shape, 1))
        right = reshape(b, (*b.shape[:-2], 1, *b.shape[-2:]))
        prod = mul(left, right)
        return reduce("sum", prod, (len(prod.shape) - 2,))
    shape = a.shape[:-1] + b.shape[1:]
    dtype = "float64" if "float64" in (a.dtype, b.dtype) else "int64"
    return make("dot", (to_float(a), to_float(b)), shape=shape, dtype=dtype)


def outer(a: Node, b: Node) -> Node:
    """``np.outer`` of two 1-D arrays, element-wise (no product is summed)."""
    return mul(reshape(a, (a.shape[0], 1)), reshape(b, (1, b.shape[0])))


def unbroadcast(g: Node, shape: Shape) -> Node:
    """Sum ``g`` down to ``shape`` (the adjoint of NumPy's broadcasting)."""
    if g.shape == shape:
        return g
    extra = len(g.shape) - len(shape)
    if extra < 0:  # a partial that broadcast against the operand (length-1 axes)
        return broadcast_to(g, shape)
    axes = list(range(extra))
    for i, d in enumerate(shape):
        if d == 1 and g.shape[extra + i] != 1:
            axes.append(extra + i)
    out = reduce("sum", g, tuple(axes)) if axes else g
    if out.shape != shape:
        out = reshape(out, shape) if S.product(out.shape) == S.product(shape) else out
    if out.shape != shape:
        out = broadcast_to(out, shape)  # g was smaller: stretch (a constant partial)
    return out


def tri(x: Node, k: int, lower: bool) -> Node:
    """``np.tril``/``np.triu`` of the last two axes: a select, never a 0/1 mask."""
    shape = x.shape
    rows = iota(0, shape[-2:])
    cols = iota(1, shape[-2:])
    kk = constant(k)
    keep = (
        apply("le", cols, apply("add", rows, kk))
        if lower
        else apply("ge", cols, apply("add", rows, kk))
    )
    zero = ZERO if x.dtype == "float64" else constant(0)
    return select(keep, x, zero)


def eye(n: Length, m: Length, k: int = 0) -> Node:
    rows = iota(0, (n, m))
    cols = iota(1, (n, m))
    return select(apply("eq", cols, apply("add", rows, constant(k))), ONE, ZERO)


def arange(n: Length) -> Node:
    return iota(0, (n,))


# -- run-time indices (loops: ``x[i]``, ``out[i] = v``, ``acc[i, :] += v``) ----------
# A dynamic spec has one entry per axis of the array: ``("at", j)`` (the position is
# the ``j``-th index operand, an int64 scalar node; negative counts from the end, as
# in Python), ``("all",)`` (the whole axis) or ``("span", start, length)`` (a slice
# of step 1 with static bounds).  ``("at", j, "clamp")`` marks an index that only a
# branch's condition keeps in bounds: the code generator clamps it.


def row_spec(rank: int) -> Spec:
    """``x[k]`` (``x[k, :, ...]``) of an array of ``rank`` axes, ``k`` the first
    index operand: a row of a tape, an item of ``for row in X``."""
    return (("at", 0), *(("all",),) * (rank - 1))


def guarded(spec: Spec) -> Spec:
    """``spec`` with its run-time positions marked for clamping."""
    return tuple((e[0], e[1], "clamp") if e[0] == "at" else e for e in spec)


def region(x: Node, spec: Spec) -> Shape:
    """The shape that ``x[spec]`` selects."""
    out: list[Length] = []
    for d, e in zip(x.shape, spec, strict=True):
        if e[0] == "all":
            out.append(d)
        elif e[0] == "span":
            out.append(e[2])
    return tuple(out)


def take(x: Node, spec: Spec, index: Sequence[Node]) -> Node:
    """``x[i, :, j]``: the region of ``x`` at run-time positions ``index``.

    Of an array whose elements are all one number (a stretched scalar), that
    number; of a choice between two arrays by one condition (an adjoint routed
    through an ``if`` that wrote an element), the same choice between their
    regions: the condition stays outside, where reverse mode keeps an untaken
    branch's infinite partial from meeting its zero adjoint (0 * inf = NaN)."""
    if all(e[0] == "all" for e in spec):
        return x
    if x.op == "select" and not x.args[0].shape:
        c, a, b = x.args
        return select(
            c,
            _take(broadcast_to(a, x.shape), spec, index),
            _take(broadcast_to(b, x.shape), spec, index),
        )
    return _take(x, spec, index)


def _take(x: Node, spec: Spec, index: Sequence[Node]) -> Node:
    shape = region(x, spec)
    if x.op == "broadcast" and not x.args[0].shape:
        return broadcast_to(x.args[0], shape)
    return make("take", (x, *index), (spec,), shape=shape, dtype=x.dtype)


def index_update(
    x: Node, v: Node, spec: Spec, index: Sequence[Node], mode: str
) -> Node:
    """``x`` with ``x[spec] = v`` (``mode`` "set") or ``x[spec] += v`` ("add"),
    as a new value: the code generator writes in place when ``x`` is not needed
    afterwards."""
    shape = region(x, spec)
    if v.shape and v.shape != shape:
        v = broadcast_to(v, shape)
    if v.dtype != x.dtype and x.dtype == "float64":
        v = to_float(v)
    if mode == "add":
        sparse = _sparse(v)
        if sparse is not None:
            # adding a few elements (an adjoint of ``d[0], d[1], d[2]``): add them
            # one by one, no array of zeros in between
            out = x
            for value, inner, positions in sparse:
                joined = _join(spec, list(index), inner, positions)
                if joined is None:
                    break
                out = index_update(out, value, joined[0], joined[1], "add")
            else:
                return out
    return make(
        "index_update", (x, v, *index), (mode, spec), shape=x.shape, dtype=x.dtype
    )


def is_zero_fill(node: Node) -> bool:
    if node.op == "broadcast":
        node = node.args[0]
    return node.op == "const" and node.value == 0


def _sparse(v: Node) -> list[tuple[Node, Spec, list[Node]]] | None:
    """``v`` as ``[(value, spec, index), ...]`` when it is zeros with a few single
    elements added in: sums and negations of ``index_update`` chains of numbers on
    zeros and of scatters of numbers (the adjoint of ``d[0], d[1], d[2]``)."""
    out: list[tuple[Node, Spec, list[Node]]] = []
    stack: list[tuple[Node, bool]] = [(v, False)]
    while stack:
        node, minus = stack.pop()
        if len(out) > 8:
            return None
        if node.op == "add" and node.shape == v.shape:
            stack.extend((a, minus) for a in reversed(node.args))
        elif node.op == "neg":
            stack.append((node.args[0], not minus))
        elif node.op == "scatter" and all(e[0] == "int" for e in node.attrs[0]):
            if node.args[0].shape:
                return None
            value = node.args[0]
            spec = tuple(("at", k) for k in range(len(node.attrs[0])))
            index = [constant(e[1]) for e in node.attrs[0] if isinstance(e[1], int)]
            if len(index) != len(spec):
                return None
            out.append((_negate(value, minus), spec, index))
        elif (
            node.op == "index_update"
            and node.attrs[0] == "add"
            and not node.args[1].shape
        ):
            out.append(
                (_negate(node.args[1], minus), node.attrs[1], list(node.args[2:]))
            )
            stack.append((node.args[0], minus))
        elif not is_zero_fill(node):
            return None
    return out[::-1] if out else None


def _negate(value: Node, minus: bool) -> Node:
    from symdiff.ir.build import neg

    return neg(value) if minus else value


def _join(
    outer: Spec, outer_index: list[Node], inner: Spec, inner_index: list[Node]
) -> tuple[Spec, list[Node]] | None:
    """The spec of ``x[outer][inner]`` on ``x`` (None when a slice with bounds is
    in the way)."""
    spec: list[tuple[Any, ...]] = []
    index: list[Node] = []
    it = iter(inner)
    for entry in outer:
        if entry[0] == "at":
            spec.append(("at", len(index), *entry[2:]))
            index.append(outer_index[entry[1]])
            continue
        if entry[0] != "all":
            return None
        e = next(it)
        if e[0] == "at":
            spec.append(("at", len(index), *e[2:]))
            index.append(inner_index[e[1]])
        elif e[0] == "all":
            spec.append(e)
        else:
            return None
    return tuple(spec), index


def fold_index_add(a: Node, b: Node) -> Node | None:
    """``a + index_add(base, v)`` as ``index_add(a + base, v)``: an adjoint that
    adds ``x[i]``'s contributions into an accumulator stays one array updated in
    place (``x_bar[i] += g``), never a zeroed array per contribution."""
    from symdiff.ir.build import add

    for x, y in ((a, b), (b, a)):
        if not (
            y.op == "index_update"
            and y.attrs[0] == "add"
            and x.shape == y.shape
            and x.dtype == y.dtype
        ):
            continue
        chain = []
        while y.op == "index_update" and y.attrs[0] == "add":
            chain.append(y)
            y = y.args[0]
        acc = add(x, y)
        for u in reversed(chain):
            acc = make(
                "index_update",
                (acc, *u.args[1:]),
                u.attrs,
                shape=u.shape,
                dtype=u.dtype,
            )
        return acc
    return None


# -- compositions: NumPy functions built from the ops above ------------------------
# Each is layout ops, reductions and element-wise ops (or, for the running sums, a
# loop node), so their derivatives, fusion and code generation are those ops'.


def along(x: Node, axis: int, start: Length, size: Length, step: int = 1) -> Node:
    """``x[..., start:start + size * step:step, ...]``: a slice of ``axis`` alone
    (``start`` non-negative, ``size`` positions)."""
    spec = tuple(
        ("slice", start, size, step) if i == axis else ("slice", 0, d, 1)
        for i, d in enumerate(x.shape)
    )
    return getitem(x, spec)


def _clip_length(n: Length) -> Length:
    """A length known to be negative is 0 (an empty slice, as in NumPy)."""
    return max(n, 0) if isinstance(n, int) else n


def variance(
    x: Node, axes: tuple[int, ...], ddof: Length = 0, keepdims: bool = False
) -> Node:
    """``np.var``: the mean of squared deviations from the mean (two passes, as
    NumPy computes it: no cancellation of ``E[x**2] - E[x]**2``), over
    ``max(count - ddof, 0)``."""
    x = to_float(x)
    centred = apply("sub", x, mean(x, axes, keepdims=True))
    squares = reduce("sum", mul(centred, centred), axes, keepdims)
    count = S.sub(S.product([x.shape[a] for a in axes]), ddof)
    if isinstance(count, int):
        return div(squares, constant(float(max(count, 0))))
    divisor = dim(count)
    if ddof != 0:  # a known count is never negative; one less ddof may be
        divisor = apply("max", divisor, constant(0))
    return div(squares, to_float(divisor))


def difference(x: Node, axis: int) -> Node:
    """``np.diff`` once along ``axis``: ``x[1:] - x[:-1]`` (``!=`` for bools)."""
    size = _clip_length(S.sub(x.shape[axis], 1))
    later, earlier = along(x, axis, 1, size), along(x, axis, 0, size)
    return apply("ne" if x.dtype == "bool" else "sub", later, earlier)


def flip(x: Node, axes: tuple[int, ...]) -> Node:
    """``np.flip``: ``x[::-1]`` on each of ``axes``."""
    spec = tuple(
        ("slice", S.sub(d, 1), d, -1) if i in axes else ("slice", 0, d, 1)
        for i, d in enumerate(x.shape)
    )
    return getitem(x, spec)


def roll(x: Node, shift: Length, axis: int) -> Node:
    """``np.roll`` along ``axis``: the last ``shift % n`` positions, then the
    others (``shift`` a length: negative rolls back)."""
    n = x.shape[axis]
    k = S.mod(shift, n)
    if k == 0:
        return x
    rest = S.sub(n, k)
    return concat([along(x, axis, rest, k), along(x, axis, 0, rest)], axis)


def _zero_of(dtype: str) -> Node:
    return {"float64": ZERO, "int64": constant(0), "bool": constant(False)}[dtype]


def diagonal_matrix(v: Node, k: int = 0) -> Node:
    """``np.diag`` of a 1-D ``v``: a square matrix with ``v`` on diagonal ``k``
    and zeros elsewhere (a select: no product with a 0/1 mask)."""
    n = v.shape[0]
    size = S.add(n, abs(k))
    if k:
        padding = full(_zero_of(v.dtype), (abs(k),))
        v = concat([v, padding], 0)  # values in rows past n are never selected
    rows, cols = iota(0, (size, size)), iota(1, (size, size))
    on = apply("eq", cols, apply("add", rows, constant(k)))
    # row i holds v[i] at column i + k; for k < 0, column j holds v[j]
    values = reshape(v, (size, 1) if k >= 0 else (1, size))
    return select(on, values, _zero_of(v.dtype))


def _smaller(a: Length, b: Length) -> Length:
    """``min(a, b)`` for lengths not both 0, as a length: decided now when the
    difference is known, else ``a - (a - b) * [a >= b]`` with
    ``[a >= b] = 2a // (a + b)`` (0 or 1 for ``a >= 0``, ``b > 0``)."""
    gap = S.sub(a, b)
    if isinstance(gap, int):
        return b if gap > 0 else a
    at_least = S.floordiv(S.mul(2, a), S.add(a, b))
    return S.sub(a, S.mul(gap, at_least))


def diagonal(x: Node, k: int = 0, label: str = "np.diag") -> Node:
    """``np.diag`` of a 2-D ``x``: diagonal ``k`` (``x[i, i + k]``), read by a
    loop over its positions (as :func:`running`: the backward loop adds into
    those positions of ``x_bar`` alone, no pass over the whole matrix)."""
    n, m = x.shape
    rows = _clip_length(S.add(n, k) if k < 0 else n)
    cols = _clip_length(S.sub(m, k) if k > 0 else m)
    if rows == 0 or cols == 0:
        size: Length = 0
    else:
        if not isinstance(S.sub(rows, cols), int):
            # what ``_smaller`` needs, where NumPy would give an empty diagonal
            what = (
                f"np.diag: diagonal {k} lies outside the matrix of shape "
                f"{S.format_shape((n, m))}; symdiff takes diagonals of at least "
                "one element"
            )
            S.require_less(0, cols, what)
            S.require_less(0, rows, what)
        size = _smaller(rows, cols)
    i = L.var("i", (), "int64")
    out = L.var("d", (size,), x.dtype)
    xs = L.var("x", x.shape, x.dtype)
    shifted = apply("add", i, constant(abs(k)))
    at = [shifted, i] if k < 0 else [i, shifted]
    value = take(xs, (("at", 0), ("at", 1)), at)
    # added into zeros, not set: the adjoint of ``+=`` leaves ``d_bar`` as it is
    # (that of ``=`` zeroes ``d_bar[i]`` after reading it: a copy per iteration)
    new_out = index_update(out, value, (("at", 0),), [i], "add")
    body = L.Body(i, (out,), (xs,), (new_out,), label=label)
    node = L.loop(dim(size), (full(_zero_of(x.dtype), (size,)),), (x,), body)
    return L.result(node, 0)


def running(op: str, x: Node, axis: int, label: str = "") -> Node:
    """``np.cumsum`` (``op`` "add") or ``np.cumprod`` ("mul") along ``axis``: a
    loop over the axis that carries the running total and writes it into row
    ``k`` of the result, as the loop a person writes (derivatives, tapes and
    forward mode are the loop machinery's)."""
    x = to_int(x)  # NumPy sums bools as ints
    perm = (axis, *(a for a in range(len(x.shape)) if a != axis))
    rows = transpose(x, perm)
    spec = row_spec(len(rows.shape))
    k = L.var("k", (), "int64")
    total = L.var("total", rows.shape[1:], rows.dtype)
    out = L.var("out", rows.shape, rows.dtype)
    xs = L.var("x", rows.shape, rows.dtype)
    new_total = apply(op, total, take(xs, spec, [k]))
    new_out = index_update(out, new_total, spec, [k], "set")
    body = L.Body(k, (total, out), (xs,), (new_total, new_out), label=label)
    identity = constant(1 if op == "mul" else 0)
    if rows.dtype == "float64":
        identity = to_float(identity)
    init = (full(identity, rows.shape[1:]), full(_zero_of(rows.dtype), rows.shape))
    node = L.loop(dim(rows.shape[0]), init, (rows,), body)
    return transpose(L.result(node, 1), inverse(perm))


def _positions(
    shape: Shape, index: Sequence[Node], wrap: Sequence[bool], p: Node
) -> tuple[list[Node], list[Node], list[Node]]:
    """The positions in an array of ``shape`` that row ``p`` of index arrays
    ``index`` names (see :func:`gather`), the body inputs they read, and the
    values outside the loop those inputs stand for."""
    positions: list[Node] = []
    inputs: list[Node] = []
    outside: list[Node] = []
    for axis, (item, signed) in enumerate(zip(index, wrap, strict=True)):
        if item.op == "iota" and len(item.shape) == 1:
            positions.append(p)  # ``np.arange(n)``: the position itself
            continue
        v = L.var("idx" if item.shape else "j", item.shape, "int64")
        inputs.append(v)
        outside.append(item)
        at = take(v, (("at", 0),), [p]) if item.shape else v
        if signed:
            end = apply("add", at, dim(shape[axis]))
            at = select(apply("lt", at, constant(0)), end, at)
        positions.append(at)
    return positions, inputs, outside


def gather(
    x: Node, index: Sequence[Node], wrap: Sequence[bool], label: str = ""
) -> Node:
    """``x[i0, i1, ..., :, ...]`` at integer arrays (NumPy's advanced indexing):
    ``index`` holds one int64 entry per leading axis of ``x``, each a 1-D array
    of one length ``n`` or a number; row ``p`` of the result (shape ``(n,
    *x.shape[len(index):])``) is ``x[i0[p], i1[p], ...]``.  Where ``wrap`` says
    an entry may be negative, a negative position counts from the end of its
    axis, as in NumPy; positions are not bounds-checked here (the frontend
    checks index arrays passed as arguments when the kernel runs).

    A loop over the positions, as a person writes it: its reverse mode adds
    each row's adjoint into ``x_bar`` at that row's positions (a position given
    twice gets both), its forward mode gathers tangents the same way."""
    n = next(i.shape[0] for i in index if i.shape)
    rest = x.shape[len(index) :]
    p = L.var("p", (), "int64")
    out = L.var("out", (n, *rest), x.dtype)
    xs = L.var("x", x.shape, x.dtype)
    positions, inputs, outside = _positions(x.shape, index, wrap, p)
    spec = (*(("at", a) for a in range(len(index))), *(("all",),) * len(rest))
    value = take(xs, spec, positions)
    # added into zeros, not set: the adjoint of ``+=`` leaves ``out_bar`` as it is
    # (that of ``=`` zeroes ``out_bar[p]`` after reading it: a copy per iteration)
    mode = "set" if x.dtype == "bool" else "add"
    new_out = index_update(out, value, row_spec(1 + len(rest)), [p], mode)
    body = L.Body(p, (out,), (xs, *inputs), (new_out,), label=label)
    init = (full(_zero_of(x.dtype), (n, *rest)),)
    node = L.loop(dim(n), init, (x, *outside), body)
    return L.result(node, 0)


def scatter_rows(
    x: Node,
    rows: Node,
    index: Sequence[Node],
    wrap: Sequence[bool],
    label: str = "",
    mode: str = "set",
) -> Node:
    """``x`` with ``x[i0[p], i1[p], ...] = rows[p]`` for every ``p`` in order (the
    write of NumPy's advanced indexing: a position given twice keeps the last
    row).  ``index`` and ``wrap`` as for :func:`gather`.  A loop over the rows
    whose reverse mode hands each row the adjoint of the position it wrote last
    (a later write zeroes the adjoint of the earlier one).  ``mode="add"``: each
    row is added instead (``np.add.at``: a position given twice gets both)."""
    p = L.var("p", (), "int64")
    out = L.var("out", x.shape, x.dtype)
    vals = L.var("v", rows.shape, rows.dtype)
    positions, inputs, outside = _positions(x.shape, index, wrap, p)
    k = len(index)
    spec = (*(("at", a) for a in range(k)), *(("all",),) * (len(x.shape) - k))
    row = take(vals, row_spec(len(rows.shape)), [p])
    new_out = index_update(out, row, spec, positions, mode)
    body = L.Body(p, (out,), (vals, *inputs), (new_out,), label=label)
    node = L.loop(dim(rows.shape[0]), (x,), (rows, *outside), body)
    return L.result(node, 0)


# -- sorting --------------------------------------------------------------------------
def _rows_along(x: Node, axis: int) -> tuple[Node, tuple[int, ...]]:
    """``x`` with ``axis`` moved last and the other axes flattened: a matrix of
    rows, and the permutation that moved the axis."""
    rank = len(x.shape)
    perm = (*(a for a in range(rank) if a != axis), axis)
    moved = transpose(x, perm)
    return reshape(moved, (S.product(moved.shape[:-1]), x.shape[axis])), perm


def _from_rows(rows: Node, x: Node, perm: tuple[int, ...]) -> Node:
    """The inverse of :func:`_rows_along`: rows back into ``x``'s layout."""
    moved = reshape(rows, tuple(x.shape[p] for p in perm))
    return transpose(moved, inverse(perm))


def argsort(x: Node, axis: int, label: str = "np.argsort") -> Node:
    """``np.argsort(x, axis, kind="stable")``: along ``axis``, the positions that
    sort it, ties in their order, NaNs last (an int64 array, no derivative).

    One ``argsort`` op of a 1-D array; for more axes, a loop over the rows that
    sorts each one."""
    if len(x.shape) == 1:
        return make("argsort", (x,), shape=x.shape, dtype="int64")
    rows, perm = _rows_along(x, axis)
    m, n = rows.shape
    k = L.var("k", (), "int64")
    out = L.var("order", (m, n), "int64")
    xs = L.var("x", rows.shape, rows.dtype)
    row = take(xs, row_spec(2), [k])
    order = make("argsort", (row,), shape=(n,), dtype="int64")
    new_out = index_update(out, order, row_spec(2), [k], "set")
    body = L.Body(k, (out,), (xs,), (new_out,), label=label)
    node = L.loop(dim(m), (full(constant(0), (m, n)),), (rows,), body)
    return _from_rows(L.result(node, 0), x, perm)


def take_along(x: Node, order: Node, axis: int, label: str = "") -> Node:
    """``np.take_along_axis(x, order, axis)`` for ``order`` of ``x``'s shape
    whose entries are positions along ``axis`` (non-negative): a gather, so the
    adjoint adds each element's back at the position it came from."""
    if len(x.shape) == 1:
        return gather(x, [order], [False], label)
    rows, perm = _rows_along(x, axis)
    picked, _ = _rows_along(order, axis)
    m, n = rows.shape
    size = S.mul(m, n)
    which = reshape(iota(0, (m, n)), (size,))
    flat = gather(rows, [which, reshape(picked, (size,))], [False, False], label)
    return _from_rows(reshape(flat, (m, n)), x, perm)


def sort(x: Node, axis: int, label: str = "np.sort") -> Node:
    """``np.sort(x, axis)``: ``x`` gathered at :func:`argsort`'s positions (the
    values NumPy's sort gives; the derivative goes back to where each element
    came from, as JAX's does)."""
    return take_along(x, argsort(x, axis, label), axis, label)
