"""NumPy functions that rearrange or extend arrays: ``np.swapaxes``,
``np.moveaxis``, ``np.meshgrid``, ``np.pad``, and ``x.item()``.

Each is transposes, reshapes, broadcasts, joins and gathers of the IR, so their
derivatives, forward mode and code generation are those ops'.  :data:`FUNCTIONS`
and :data:`METHODS` are merged into :mod:`.more_numpy`'s tables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from symdiff.frontend.arrays import (
    SliceValue,
    Unsupported,
    _axis_list,
    _cast,
    _flat,
    _none,
    array,
    flag,
    index,
    length,
    refuse,
    require_nonempty,
)
from symdiff.frontend.values import Static, Value
from symdiff.ir import arrays as A
from symdiff.ir import build as B
from symdiff.ir import shapes as S
from symdiff.ir.node import Node, constant
from symdiff.ir.shapes import Length

Builder = Callable[..., Value]


# -- axes ----------------------------------------------------------------------------
def _swapaxes(a: Value, axis1: Value, axis2: Value) -> Node:
    """``np.swapaxes`` (and ``x.swapaxes``): a transpose of two axes."""
    x = array(a)
    i, j = _axis_list((axis1, axis2), len(x.shape), "np.swapaxes")
    perm = list(range(len(x.shape)))
    perm[i], perm[j] = perm[j], perm[i]
    return A.transpose(x, tuple(perm))


def _axes(value: Value, rank: int, what: str) -> list[int]:
    """``source``/``destination`` of ``np.moveaxis``: one axis or a tuple."""
    axes = _axis_list(value, rank, "np.moveaxis")
    if len(set(axes)) != len(axes):
        raise Unsupported(
            f"np.moveaxis: repeated axis in `{what}` argument", "name each axis once"
        )
    return axes


def _moveaxis(a: Value, source: Value, destination: Value) -> Node:
    """``np.moveaxis``: the axes ``source`` moved to ``destination``, the
    others in their order (NumPy's permutation)."""
    x = array(a)
    rank = len(x.shape)
    src = _axes(source, rank, "source")
    dst = _axes(destination, rank, "destination")
    if len(src) != len(dst):
        raise Unsupported(
            "np.moveaxis: `source` and `destination` arguments must have the "
            "same number of elements",
            "give one destination per axis moved",
        )
    order = [k for k in range(rank) if k not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return A.transpose(x, tuple(order))


# -- meshgrid -------------------------------------------------------------------------
def _meshgrid(
    *xi: Value,
    copy: Value | None = None,
    sparse: Value | None = None,
    indexing: Value | None = None,
) -> tuple[Node, ...]:
    """``np.meshgrid``: each input flattened along its own axis (the first two
    swapped for ``indexing="xy"``), broadcast to the grid unless ``sparse``."""
    how = "xy" if _none(indexing) else getattr(indexing, "obj", None)
    if how not in ("xy", "ij"):
        raise Unsupported(
            "np.meshgrid: Valid values for `indexing` are 'xy' and 'ij'.",
            "write indexing='xy' or indexing='ij'",
        )
    rank = len(xi)
    ones = (1,) * rank
    out = []
    for i, x in enumerate(xi):
        flat = _flat(array(x, f"input {i + 1} of np.meshgrid"))
        at = 1 - i if how == "xy" and rank > 1 and i < 2 else i
        out.append(A.reshape(flat, (*ones[:at], flat.shape[0], *ones[at + 1 :])))
    if flag(sparse, "sparse"):
        return tuple(out)
    shape = S.broadcast([o.shape for o in out])
    return tuple(B.broadcast_to(o, shape) for o in out)


# -- pad ------------------------------------------------------------------------------
_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


def _pairs(value: Value, rank: int, what: str) -> list[tuple[Any, Any]]:
    """A ``pad_width``-like argument as one ``(before, after)`` pair per axis,
    NumPy's broadcast: a number, ``(n,)``, ``(before, after)``, ``((b, a),)``
    or one pair per axis.  The leaves stay values (checked by the caller)."""
    try:
        grid = np.array(value, dtype=object)
    except ValueError:
        grid = None
    if grid is None or any(isinstance(v, Static) for v in grid.flat):
        raise Unsupported(
            f"np.pad: `{what}` must be numbers, pairs or one pair per axis",
            "write pad widths as ints: 2, (1, 2) or ((1, 2), (0, 3))",
        )
    if grid.size == 1:
        leaf = grid.ravel()[0]
        return [(leaf, leaf)] * rank
    if grid.size == 2 and grid.shape != (2, 1):
        first, second = grid.ravel()
        return [(first, second)] * rank
    try:
        pairs = np.broadcast_to(grid, (rank, 2))
    except ValueError:
        raise Unsupported(
            f"np.pad: `{what}` of shape {grid.shape} does not broadcast to "
            f"({rank}, 2): one (before, after) pair per axis",
            "give one pair per axis: ((1, 2), (0, 3))",
        ) from None
    return [(p[0], p[1]) for p in pairs]


def _width(value: Any) -> Length:
    """A pad width: a constant, or a length from shapes and int arguments
    (``np.pad(x, (0, 8 - len(x)))``, checked not negative when the kernel runs)."""
    what = "np.pad: index can't contain negative values"
    k = length(value, "a pad width")
    if isinstance(k, int) and k < 0:
        raise Unsupported(what, "pad by 0 or more")
    if not isinstance(k, int):
        S.require_less(-1, k, what)
    return k


def _pad(
    array_: Value,
    pad_width: Value,
    mode: Value | None = None,
    *,
    constant_values: Value | None = None,
    reflect_type: Value | None = None,
    stat_length: Value | None = None,
    end_values: Value | None = None,
) -> Node:
    """``np.pad`` with widths in NumPy's forms (ints, or lengths from shapes
    and int arguments: ``np.pad(x, (0, 8 - len(x)))``); modes ``"constant"``
    (``constant_values``: numbers, which may be computed and differentiated),
    ``"edge"``, ``"reflect"``, ``"symmetric"`` and ``"wrap"`` (any widths,
    also past the array's length, as NumPy repeats them).  Axis by axis, as
    NumPy pads: a corner takes the value the last axis gives it."""
    refuse("np.pad", stat_length=stat_length, end_values=end_values)
    how = "constant" if _none(mode) else getattr(mode, "obj", None)
    if how not in _MODES:
        raise Unsupported(
            f"np.pad: mode {how!r} is not supported",
            "use 'constant', 'edge', 'reflect', 'symmetric' or 'wrap'",
        )
    if not (_none(reflect_type) or getattr(reflect_type, "obj", None) == "even"):
        raise Unsupported(
            "np.pad: only reflect_type='even' is supported", "leave it out"
        )
    x = array(array_)
    rank = len(x.shape)
    widths = [(_width(b), _width(c)) for b, c in _pairs(pad_width, rank, "pad_width")]
    if how == "constant":
        fill = constant(0) if _none(constant_values) else constant_values
        values = _pairs(fill, rank, "constant_values")
    for axis, (before, after) in enumerate(widths):
        if before == 0 and after == 0:
            continue
        if how == "constant":
            b, c = (_cast(array(v, "a constant value"), x.dtype) for v in values[axis])
            x = _join(x, axis, _filled(x, axis, before, b), _filled(x, axis, after, c))
            continue
        n = x.shape[axis]
        require_nonempty(
            n,
            f"np.pad: can't extend empty axis {axis} using modes other than "
            "'constant' or 'empty'",
            "pad an empty axis with mode='constant'",
        )
        if how == "edge":
            first = A.along(x, axis, 0, 1)
            last = A.along(x, axis, S.sub(n, 1), 1)
            x = _join(
                x, axis, _stretch(first, axis, before), _stretch(last, axis, after)
            )
        else:
            x = _periodic(x, axis, before, after, how)
    return x


def _filled(x: Node, axis: int, width: Length, value: Node) -> Node | None:
    shape = tuple(width if i == axis else d for i, d in enumerate(x.shape))
    return A.full(value, shape) if width != 0 else None


def _stretch(edge: Node, axis: int, width: Length) -> Node | None:
    shape = tuple(width if i == axis else d for i, d in enumerate(edge.shape))
    return B.broadcast_to(edge, shape) if width != 0 else None


def _join(x: Node, axis: int, before: Node | None, after: Node | None) -> Node:
    parts = [p for p in (before, x, after) if p is not None]
    return A.concat(parts, axis)


def _periodic(x: Node, axis: int, before: Length, after: Length, how: str) -> Node:
    """``"reflect"``, ``"symmetric"`` or ``"wrap"`` along ``axis``: position
    ``p`` (from ``-before``) reads the array at ``p`` folded into its period,
    ``2 (n - 1)``, ``2 n`` or ``n`` (what NumPy's repeated padding gives)."""
    n = x.shape[axis]
    total = S.add(S.add(n, before), after)
    if n == 1:  # every mode repeats the one element (NumPy's reflect too)
        shape = tuple(total if i == axis else d for i, d in enumerate(x.shape))
        return B.broadcast_to(x, shape)
    if isinstance(total, int) and isinstance(n, int) and isinstance(before, int):
        positions = [_fold(p, n, how) for p in range(-before, total - before)]
        at = A.reshape(A.pack([constant(p) for p in positions]), (total,))
    else:
        p = B.sub(A.arange(total), A.dim(before))
        size = A.dim(n)
        period = {
            "reflect": A.dim(S.mul(2, S.sub(n, 1))),
            "symmetric": A.dim(S.mul(2, n)),
            "wrap": size,
        }[how]
        q = B.apply("mod", p, period)
        at = q
        if how != "wrap":
            last = period if how == "reflect" else B.sub(period, constant(1))
            at = B.select(B.apply("lt", q, size), q, B.sub(last, q))
    every = Static(SliceValue(None, None, None))
    return index(x, (*(every,) * axis, at))


def _fold(p: int, n: int, how: str) -> int:
    period = {"reflect": 2 * (n - 1), "symmetric": 2 * n, "wrap": n}[how]
    q = p % period
    if how == "wrap" or q < n:
        return q
    return period - q if how == "reflect" else period - 1 - q


# -- item -----------------------------------------------------------------------------
def _item(x: Node, *args: Value) -> Node:
    """``x.item()``: the one element of an array of size 1, as a number
    (checked when the kernel runs for a size known only then);
    ``x.item(k)``: element ``k`` of the flattened array; ``x.item(i, j)``."""
    if len(args) > 1:
        return index(x, tuple(args))
    if args:
        (k,) = args
        if isinstance(k, tuple):
            return index(x, k)
        return index(_flat(x), k)
    size = S.product(x.shape)
    S.unify(size, 1, "can only convert an array of size 1 to a Python scalar")
    return A.getitem(x, tuple(("int", 0) for _ in x.shape))


_NUMPY: dict[str, Builder] = {
    "swapaxes": _swapaxes,
    "moveaxis": _moveaxis,
    "meshgrid": _meshgrid,
    "pad": _pad,
}

FUNCTIONS: dict[int, tuple[str, Builder]] = {
    id(getattr(np, name)): (f"np.{name}", build) for name, build in _NUMPY.items()
}

METHODS: dict[str, Builder] = {"swapaxes": _swapaxes, "item": _item}
