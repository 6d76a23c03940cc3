"""Boolean-mask selections, ``x[mask]``: element-wise arithmetic, reductions and
``y[mask] = ...``.

NumPy's ``x[mask]`` is a 1-D array of the selected elements, so its length
depends on the values.  symdiff keeps the whole array and the mask instead
(:class:`Masked`): element-wise operations apply to every element and keep the
mask; a reduction takes the selected elements only (through a select, so the
others reach neither the result nor its derivative: an ``np.log(x[x > 0])``
has no NaN from the rest); ``y[mask] = expr`` writes where the mask holds.
What needs the selected elements' positions (indexing the selection, returning
it, a loop over it, a product of two selections) is reported, with what to
write instead.
"""

from __future__ import annotations

import ast
import builtins
import math
import types
from collections.abc import Callable

import numpy as np

from symdiff.frontend import arrays as AR
from symdiff.frontend import bounds
from symdiff.frontend import more_numpy as MN
from symdiff.frontend.arrays import SliceValue, Unsupported, axes_arg, flag
from symdiff.frontend.values import LocalFunction, Masked, MaskedMethod, Static, Value
from symdiff.ir import arrays as A
from symdiff.ir import build as B
from symdiff.ir import shapes as S
from symdiff.ir.node import Node, constant

#: What to write instead, for any use of a selection that is not supported.
HINT = (
    "keep the shape and let the mask pick: np.where(mask, x, 0.0), or reduce "
    "the selection (np.sum(x[mask]), x[mask].mean())"
)


def has_masked(value: Value | Masked) -> bool:
    """Whether ``value`` is a selection or a tuple holding one."""
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Masked) or (
            isinstance(item, Static) and isinstance(item.obj, MaskedMethod)
        ):
            return True
        if isinstance(item, tuple):
            stack.extend(item)
    return False


def refusal(what: str) -> Unsupported:
    """``what`` (``"returning"``, ``"`np.sort` of"``) a selection: reported."""
    return Unsupported(
        f"{what} a boolean-mask selection (`x[mask]`) is not supported: its "
        "length depends on the values",
        HINT,
    )


def _mask_where(sel: Masked) -> Node:
    """The mask as a bool array that broadcasts against ``sel.data``."""
    extra = len(sel.data.shape) - sel.covered
    return A.reshape(B.truth(sel.mask), (*sel.mask.shape, *(1,) * extra))


def _same_mask(selections: list[Masked]) -> Node:
    mask = selections[0].mask
    if any(s.mask is not mask for s in selections[1:]):
        first = selections[0]
        if first.window is not None and all(
            _pair(first.window, s.window) for s in selections[1:]
        ):
            # x[:i] and y[:i]: slices of one length, from arrays whose lengths
            # symdiff pairs position by position (checked when the kernel runs)
            for s in selections[1:]:
                S.unify(
                    first.data.shape[0],
                    s.data.shape[0],
                    "slices with a run-time length are combined here; symdiff "
                    "needs the arrays they are taken from to have one length",
                )
            return mask
        raise Unsupported(
            "two boolean-mask selections with different masks are combined: "
            "their elements do not pair up",
            "select with one mask: m = (x > 0) & (y > 0); then x[m] and y[m]",
        )
    return mask


def _operand(value: Value | Masked, sel: Masked, what: str) -> Value:
    """``value`` where it meets the selection ``sel`` element-wise: a selection
    is its data; a number stays; an array must not have an axis along the
    selected elements (NumPy would pair it with them by position)."""
    if isinstance(value, Masked):
        return value.data
    if isinstance(value, Node):
        trailing = sel.rank - 1
        rank = len(value.shape)
        if rank <= trailing:
            return value
        if rank == sel.rank and value.shape[0] == 1:
            return A.reshape(value, value.shape[1:])
        raise Unsupported(
            f"{what}: an array is combined with a boolean-mask selection "
            "(`x[mask]`), whose elements it does not pair up with",
            "select it with the same mask (y[mask]), or keep the whole arrays: "
            "np.where(mask, x + y, 0.0)",
        )
    if has_masked(value):
        raise refusal("a tuple holding")
    return value


def _wrap(
    result: Value, mask: Node, window: tuple[Node, Node, Node | None] | None = None
) -> Value:
    """An element-wise result: the selection of ``result`` by ``mask``."""
    if not (isinstance(result, Node) and len(result.shape) >= len(mask.shape)):
        raise refusal("this use of")
    for d, m in zip(result.shape, mask.shape, strict=False):
        S.unify(d, m, "boolean index did not match the indexed array")
    return Masked(result, mask, window)


def select(x: Node, items: list[Value]) -> Masked | None:
    """``x[mask]``, ``X[mask, 0]``, ``X[mask, 1:]``: the selection, or None where
    no index is a boolean array.  The mask comes first (``X[:, mask]`` is
    reported); what follows it indexes each selected element."""
    flags = [
        isinstance(i, Node)
        and bool(i.shape)
        and i.dtype == "bool"
        and AR.constant_mask(i) is None  # x[[True, False, True]]: positions
        for i in items
    ]
    if not any(flags):
        return None
    if not flags[0] or any(flags[1:]):
        raise Unsupported(
            "a boolean mask is supported as the first index only (`x[mask]`, "
            "`X[mask, 0]`)",
            "transpose first, or combine the conditions into one mask: "
            "X.T[mask], x[(x > 0) & (y > 0)]",
        )
    mask = items[0]
    assert isinstance(mask, Node)
    data = x
    rest = items[1:]
    if rest:
        full = Static(SliceValue(None, None, None))
        data = AR.index(x, (*(full,) * len(mask.shape), *rest))
    mask, _, _ = AR.mask_axes(data, [mask], "indexing")
    return Masked(data, mask)


def _pair(a: object, b: object) -> bool:
    """Whether two slices of run-time length have one length as written: the
    same length (``x[:n - lag]``, ``x[lag:]``), or the same start and stop
    (``U[i, i + 1:]``, ``x[i + 1:]``, to the ends of arrays of one length)."""
    if not (isinstance(a, tuple) and isinstance(b, tuple)):
        return False
    return a[0] is b[0] or (a[1] is b[1] and a[2] is b[2])


def _run_time_slice(
    x: Node, items: list[Value], what: str
) -> tuple[int, SliceValue] | None:
    """The one slice of ``x[items]`` whose length is known only when the kernel
    runs (or a window not proven inside ``x``), and its position; None where no
    slice is such.  ``what`` begins the messages (``"a write to "``)."""
    found = [
        k
        for k, item in enumerate(items)
        if isinstance(item, Static)
        and isinstance(item.obj, SliceValue)
        and (_run_time(item.obj) or _past_ends(x, items, k))
    ]
    if not found:
        return None
    if len(found) > 1:
        raise Unsupported(
            f"{what}two slices whose lengths are known only when the kernel runs",
            "slice (or write) one axis at a time in a loop (`A[i, :i]`), or use "
            "np.where with a mask of the whole array",
        )
    k = found[0]
    sl = items[k].obj
    assert isinstance(sl, SliceValue)
    if not AR._none(sl.step) and AR.static_int(sl.step, "a slice step") != 1:
        raise Unsupported(
            f"{what}a slice with a run-time length and a step",
            "take every element (`x[:i]`) and select the others with a mask",
        )
    return k, sl


def window(x: Node, items: list[Value]) -> Masked | None:
    """``x[:i]``, ``L[i, :i]``, ``x[lag:]``, ``X[a:b]``: a slice whose bounds are
    known only when the kernel runs (a loop's index), so its length is too, as
    a selection of the whole axis (its elements shifted to the front, the mask
    marking the first ``length``).  None where no slice has such bounds."""
    found = _run_time_slice(x, items, "")
    if found is None:
        return None
    k, sl = found
    before = items[:k]
    if any(
        not (isinstance(i, Node) and not i.shape and i.dtype == "int64") for i in before
    ):
        raise Unsupported(
            "a slice with a run-time length must give the first axis of the "
            "result: integers only before it (`L[i, :i]`, `x[:i]`)",
            "index the other axes first, or transpose: `X.T[:i]`",
        )
    full = Static(SliceValue(None, None, None))
    data = AR.index(x, (*before, full, *items[k + 1 :]))
    n = data.shape[0]
    size = A.dim(n)
    start = _bound(sl.start, B.constant(0), size)
    stop = _bound(sl.stop, size, size)
    length = B.apply("max", B.sub(stop, start), B.constant(0))
    # slices of one length as written (`L[i, :i]`, `y[:i]`; `x[:n - lag]`,
    # `x[lag:]`) pair up: their bounds lie in the arrays, as run-time indices
    # must (unchecked)
    raw_start = B.constant(0) if AR._none(sl.start) else sl.start
    raw_stop = None if AR._none(sl.stop) else sl.stop
    written = (B.sub(raw_stop or size, raw_start), raw_start, raw_stop)  # type: ignore[arg-type]
    positions = A.iota(0, (n,))
    mask = B.apply("lt", positions, length)
    if not (start.op == "const" and start.value == 0):
        # the window's elements moved to the front: data[j] = x[start + j]
        last = B.apply("max", B.sub(size, B.constant(1)), B.constant(0))
        index = B.apply("min", B.add(positions, start), last)
        data = AR.index(data, index)
    return Masked(data, mask, written)


def _run_time(sl: SliceValue) -> bool:
    """Whether a bound of ``sl`` is an int known only when the kernel runs (not
    a length: ``len(x) - 1``, an int argument), and its length is not fixed
    (``x[i:i + 3]`` is a window of 3: arrays.windows)."""
    if not AR._none(sl.step) and AR.static_int(sl.step, "a slice step") < 0:
        return False  # x[i + 3:i:-1]: a window's own message
    try:
        if AR._window(sl, 0) is not None:
            return False
    except Unsupported:
        pass  # a run-time start and a run-time length
    for bound in (sl.start, sl.stop):
        if isinstance(bound, Node) and not bound.shape and bound.dtype == "int64":
            try:
                AR.length(bound)
            except Unsupported:
                return True
    return False


def window_write(
    x: Node, items: list[Value], value: Value | Masked, mode: AR.MaskMode
) -> tuple[tuple[Value, ...], Node] | None:
    """``x[i:] *= 0.9``, ``A[i, k + 1:] -= f * A[k, k + 1:]``, ``out[i - 1:i + 1]
    += v``: a write to a slice whose bounds are known only when the kernel runs
    (or a window not proven inside ``x``), as NumPy makes it.  Returns the key
    of the block it writes in (the whole axis at the slice) and the block after
    the write: a select over the axis between the new values, realigned to the
    slice's start, and the old ones.  None where no slice is such."""
    found = _run_time_slice(x, items, "a write to ")
    if found is None:
        return None
    k, sl = found
    before, after = items[:k], items[k + 1 :]
    if any(
        not (isinstance(i, Node) and not i.shape and i.dtype == "int64") for i in before
    ) or not all(
        AR._is_static(i) or (isinstance(i, Node) and not i.shape and i.dtype == "int64")
        for i in after
    ):
        raise Unsupported(
            "a write to a slice with a run-time length must have integers only "
            "before it and integers or constant slices after it (`A[i, k:] = v`, "
            "`A[k + 1:, k] /= p`)",
            "index the other axes first, or write the whole array with np.where "
            "and a mask",
        )
    full = Static(SliceValue(None, None, None))
    key = (*before, full, *after)
    block = AR.index(x, key)
    n = block.shape[0]
    size = A.dim(n)
    start = _bound(sl.start, B.constant(0), size)
    stop = _bound(sl.stop, size, size)
    positions = A.iota(0, (n,))
    inside = B.logical_and(
        B.apply("ge", positions, start), B.apply("lt", positions, stop)
    )
    spread = _realigned(value, block, positions, start)
    return key, AR._mask_select(block, inside, len(block.shape) - 1, spread, mode)


def _realigned(
    value: Value | Masked, block: Node, positions: Node, start: Node
) -> Node:
    """The value written to ``block[start:stop]``, as an array of ``block``'s
    shape: its element ``j`` along the first axis moved to ``start + j``."""
    if isinstance(value, Masked):
        if value.window is None:
            raise Unsupported(
                "a boolean-mask selection (`x[mask]`) is written to a slice: its "
                "length depends on the values",
                "write the whole array: y = np.where(mask, x, y)",
            )
        data = value.data
        if len(data.shape) != len(block.shape):
            raise Unsupported(
                "a slice of run-time length is written with a value of another "
                "dimension",
                "write a number, or a slice of the same dimension",
            )
    else:
        data = AR.array(value, "the assigned value")
        if len(data.shape) > len(block.shape):
            raise Unsupported(
                f"could not broadcast a value of shape {S.format_shape(data.shape)} "
                f"into a slice of an array of dimension {len(block.shape)}",
                "write a number, or an array of the slice's shape",
            )
    if len(data.shape) == len(block.shape) and data.shape[0] != 1:
        # element j of the value goes to start + j
        zero = B.constant(0)
        last = B.apply("max", B.sub(A.dim(data.shape[0]), B.constant(1)), zero)
        at = B.apply("min", B.apply("max", B.sub(positions, start), zero), last)
        data = AR.index(data, at)
    if S.broadcast([block.shape, data.shape], lambda: "in element assignment") != (
        block.shape
    ):
        raise Unsupported(
            f"could not broadcast a value of shape {S.format_shape(data.shape)} "
            f"into a slice of an array of shape {S.format_shape(block.shape)}",
            "write a number, or an array of the slice's shape",
        )
    return data


def _past_ends(x: Node, items: list[Value], k: int) -> bool:
    """Whether item ``k``, a window of fixed length (``x[i - 2:i]``), is not
    proven to lie inside ``x`` on every iteration of the loops around it
    (bounds.py): where it may not, NumPy's slice is shorter there, and it is
    read as a slice of run-time length."""
    sl = items[k].obj  # type: ignore[union-attr]
    try:
        if AR._window(sl, k) is None:
            return False
    except Unsupported:
        return False
    if any(isinstance(i, Static) and i.obj in (None, Ellipsis) for i in items[:k]):
        return False  # the axis is not item k's: judged no further
    if k >= len(x.shape):
        return False
    return not bounds.inside(sl.start, sl.stop, A.dim(x.shape[k]))


def _bound(value: Value | None, default: Node, size: Node) -> Node:
    """A slice bound as Python takes it: from the end when negative, clipped to
    ``0 .. size``."""
    if AR._none(value):
        return default
    assert isinstance(value, Node)
    zero = B.constant(0)
    from_end = B.apply("max", B.add(value, size), zero)
    return B.select(B.apply("lt", value, zero), from_end, B.apply("min", value, size))


# -- expressions that meet a selection ------------------------------------------------
Handler = Callable[[ast.expr, list[Value], bool], Value]


def combine(
    node: ast.expr,
    values: list[Value | Masked],
    test: bool,
    handlers: dict[str, Handler],
) -> Value | Masked:
    """Lower ``node`` whose operands ``values`` include a selection: element-wise
    operations through ``handlers`` (the lowerer's own, by node kind) on the
    selections' data, reductions here.  Raises :class:`Unsupported` otherwise."""
    sels = [v for v in values if isinstance(v, Masked)]
    try:
        return _combine(node, values, sels, test, handlers)
    except Unsupported as exc:
        if sels and all(s.window is not None for s in sels):
            raise as_slices(exc) from None
        raise


def as_slices(exc: Unsupported) -> Unsupported:
    """A refusal about selections, said of slices of run-time length (``A[k:,
    k]``, ``x[:i]``): their length depends on a loop's index, not on values."""
    message = exc.args[0]
    if "boolean-mask selection" not in message and "boolean mask" not in message:
        return exc
    message = (
        message.replace("boolean-mask selections", "slices of run-time length")
        .replace("a boolean-mask selection (`x[mask]`)", "a slice of run-time length")
        .replace("boolean-mask selection", "slice of run-time length")
        .replace("its length depends on the values", "its length depends on the loop")
        .replace("with different masks", "whose lengths are not known to be equal")
    )
    return Unsupported(
        message,
        "element-wise arithmetic, reductions (np.sum, np.max, ...) and dot "
        "products of such slices work; else loop over the elements, or keep the "
        "whole axis and mask it: np.where(np.arange(n) >= k, x, 0.0)",
    )


def _combine(
    node: ast.expr,
    values: list[Value | Masked],
    sels: list[Masked],
    test: bool,
    handlers: dict[str, Handler],
) -> Value | Masked:
    if isinstance(node, ast.Attribute):
        return _attribute(sels[0], node.attr)
    if isinstance(node, ast.Subscript):
        return _subselect(values)
    if isinstance(node, ast.Call):
        return _call(node, values, test, handlers["Call"])
    if not sels or not isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare)):
        raise refusal(_WHAT.get(type(node), "this use of"))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        raise refusal("`not` of")
    mask = _same_mask(sels)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return _dot(values, "`@` of")
    operands = [_operand(v, sels[0], "in this expression") for v in values]
    result = handlers[type(node).__name__](node, operands, test)
    return _wrap(result, mask, sels[0].window)


_WHAT = {
    ast.Subscript: "indexing",
    ast.IfExp: "a conditional expression choosing",
    ast.BoolOp: "`and`/`or` of",
    ast.Starred: "unpacking",
}


def _subselect(values: list[Value]) -> Masked:
    """``v[v > 1]`` of a selection ``v = x[x > 0]``: the elements both masks
    select."""
    base, index = values
    if not (
        isinstance(base, Masked)
        and isinstance(index, Masked)
        and index.data.dtype == "bool"
        and index.data.shape == base.mask.shape
    ):
        raise refusal("indexing")
    _same_mask([base, index])
    return Masked(base.data, B.logical_and(B.truth(base.mask), index.data))


def _dot(values: list[Value], what: str) -> Node | Masked:
    """``x[m] @ y[m]``, ``np.dot(x[m], y[m])``: the sum of the selected products
    (two vectors selected by one mask); ``X[m] @ w``: each selected row's."""
    a, b = values[-2:]
    if (
        isinstance(a, Masked)
        and isinstance(b, Node)
        and a.rank == 2
        and len(a.data.shape) == 2
        and len(b.shape) in (1, 2)
    ):
        # the selected rows times a matrix or vector: row by row
        return Masked(A.dot(a.data, b), a.mask, a.window)
    if not (
        isinstance(a, Masked)
        and isinstance(b, Masked)
        and a.rank == b.rank == 1
        and len(values) in (2, 3)
    ):
        raise refusal(what)
    _same_mask([a, b])
    where = _mask_where(a)
    product = B.mul(B.to_float(a.data), B.to_float(b.data))
    axes = tuple(range(a.covered))
    return A.reduce("sum", B.select(where, product, B.ZERO), axes)


def _attribute(sel: Masked, name: str) -> Value | Masked:
    if name in _REDUCTIONS:
        return Static(MaskedMethod(sel, name))
    if name == "size":
        return _count(sel, None)
    if name == "shape":
        return (_count(sel, 0), *(A.dim(d) for d in sel.data.shape[sel.covered :]))
    if name == "ndim":
        return constant(sel.rank)
    raise refusal(f"`.{name}` of")


def _call(
    node: ast.Call, values: list[Value | Masked], test: bool, call: Handler
) -> Value | Masked:
    callee, rest = values[0], values[1:]
    if not isinstance(callee, Static):
        raise refusal("calling")
    obj = callee.obj
    n = len(node.args)
    args, kwargs = (
        rest[:n],
        dict(zip((k.arg for k in node.keywords), rest[n:], strict=True)),
    )
    if None in kwargs:
        raise refusal("`**` unpacking with")
    if _users_own(obj):  # a helper: inlined, its body meets the selection
        return call(node, values, test)
    if obj in (np.dot, np.inner, np.vdot, np.matmul) and not kwargs:
        return _dot(values, f"`{ast.unparse(node.func)}` of")
    if (
        obj in (np.argmax, np.argmin)
        and len(args) == 1
        and not kwargs
        and isinstance(args[0], Masked)
        and args[0].window is not None
        and len(args[0].data.shape) == 1
    ):
        return _arg_extreme(args[0], obj is np.argmax)
    if isinstance(obj, MaskedMethod):
        return _reduce(obj.name, obj.selection, args, kwargs)  # type: ignore[arg-type]
    name = _FUNCTIONS.get(obj)  # type: ignore[call-overload]
    if name is not None:
        if not args or not isinstance(args[0], Masked):
            raise refusal(f"`{ast.unparse(node.func)}` with")
        return _reduce(name, args[0], args[1:], kwargs)  # type: ignore[arg-type]
    name = _BUILTINS.get(obj)  # type: ignore[call-overload]
    if name is not None and len(args) == 1 and not kwargs:
        # Python's sum/max/min iterate over the selection's first axis
        (sel,) = args
        if isinstance(sel, Masked):
            return _reduce(name, sel, [constant(0)], {})
    if obj is builtins.len and len(args) == 1 and not kwargs:
        (sel,) = args
        if isinstance(sel, Masked):
            return _count(sel, 0)
    if isinstance(obj, np.ufunc) or obj in _ELEMENTWISE:
        sels = [v for v in rest if isinstance(v, Masked)]
        mask = _same_mask(sels)
        what = f"in `{ast.unparse(node.func)}`"
        operands = [_operand(v, sels[0], what) for v in rest]
        return _wrap(call(node, [callee, *operands], test), mask, sels[0].window)
    raise refusal(f"`{ast.unparse(node.func)}` of")


def _arg_extreme(sel: Masked, largest: bool) -> Node:
    """``np.argmax(np.abs(A[k:, k]))`` (partial pivoting): the first position of
    the slice's extreme, counted from its start (a NaN is the extreme, as in
    NumPy).  An empty slice gives 0, where NumPy raises."""
    data, inside = sel.data, B.truth(sel.mask)
    far = constant(-math.inf if largest else math.inf)
    top = A.reduce("amax" if largest else "amin", B.select(inside, data, far), (0,))
    hit = B.logical_or(B.apply("eq", data, top), B.apply("ne", data, data))
    positions = A.iota(0, data.shape)
    last = A.dim(data.shape[0])
    first = B.select(B.logical_and(inside, hit), positions, last)
    found = A.reduce("amin", first, (0,))
    return B.select(B.apply("lt", found, last), found, constant(0))


def _users_own(obj: object) -> bool:
    """A function the lowering inlines: the user's helper or local function."""
    if isinstance(obj, types.MethodType):
        obj = obj.__func__
    if isinstance(obj, LocalFunction):
        return True
    module = getattr(obj, "__module__", None) or ""
    return isinstance(obj, types.FunctionType) and not module.startswith(
        ("numpy", "scipy", "math", "symdiff")
    )


#: Element-wise functions that are not ufuncs (``np.abs`` and the rest are).
_ELEMENTWISE: tuple[object, ...] = (
    np.where,
    np.clip,
    builtins.abs,
    builtins.float,
    np.nan_to_num,
)


# -- reductions ------------------------------------------------------------------------
def _count(sel: Masked, axis: int | None) -> Node:
    """How many elements the selection has (``axis`` 0: along its first axis, an
    int; None: all of them, ``.size``)."""
    selected = A.reduce("sum", B.to_int(B.truth(sel.mask)), tuple(range(sel.covered)))
    if axis == 0:
        return selected
    rest = S.product(sel.data.shape[sel.covered :])
    return B.mul(selected, A.dim(rest)) if rest != 1 else selected


def _reduce(
    name: str, sel: Masked, args: list[Value], kwargs: dict[str, Value]
) -> Value | Masked:
    """``np.sum(x[mask])``, ``x[mask].mean(axis=0)``...: over the selected
    elements only."""
    options = dict(zip(_POSITIONAL[name], args, strict=False))
    if len(args) > len(_POSITIONAL[name]) or set(options) & set(kwargs):
        raise Unsupported(f"bad call of `{name}` of a boolean-mask selection")
    options.update(kwargs)
    unknown = set(options) - {"axis", "keepdims", "ddof", "ord"}
    if unknown:
        raise Unsupported(
            f"`{name}` of a boolean-mask selection: `{sorted(unknown)[0]}` is not "
            "supported",
            "leave it out",
        )
    if flag(options.get("keepdims"), "keepdims"):
        raise Unsupported(
            f"`{name}` of a boolean-mask selection: `keepdims` is not supported",
            "leave it out: the selection's first axis has no length to keep",
        )
    if name == "norm" and not MN._none(options.get("ord")):
        raise Unsupported(
            "np.linalg.norm of a boolean-mask selection: only the 2-norm",
            "leave `ord` out, or write the norm out: np.sum(np.abs(x[mask]))",
        )
    axes = axes_arg(options.get("axis"), sel.rank)
    data_axes = tuple(
        a
        for k in axes
        for a in (range(sel.covered) if k == 0 else [k - 1 + sel.covered])
    )
    if 0 not in axes:  # along the other axes: one result per selected element
        reduced = _whole(name, sel.data, data_axes, options)
        return Masked(reduced, sel.mask, sel.window)
    x = sel.data if sel.data.dtype != "bool" else B.to_int(sel.data)
    where = _mask_where(sel)
    if name in _FILLS:
        fill = _FILLS[name](x.dtype)
        return A.reduce(_OPS.get(name, name), B.select(where, x, fill), data_axes)
    count = B.to_float(
        A.reduce("sum", B.to_int(B.broadcast_to(where, x.shape)), data_axes)
    )
    x = B.to_float(x)
    total = A.reduce("sum", B.select(where, x, B.ZERO), data_axes)
    if name == "mean":
        return B.div(total, count)
    if name == "norm":
        return B.apply(
            "sqrt", A.reduce("sum", B.select(where, B.mul(x, x), B.ZERO), data_axes)
        )
    # var and std: squared deviations from the selection's mean, two passes
    centred = B.sub(x, B.div(_keep(total, data_axes, x), _keep(count, data_axes, x)))
    squares = A.reduce(
        "sum", B.select(where, B.mul(centred, centred), B.ZERO), data_axes
    )
    ddof = options.get("ddof")
    if not MN._none(ddof):
        if not isinstance(ddof, Node) or ddof.shape:
            raise Unsupported("`ddof` must be a number")
        count = B.apply("max", B.sub(count, B.to_float(ddof)), B.ZERO)
    var = B.div(squares, count)
    return var if name == "var" else B.apply("sqrt", var)


def _keep(reduced: Node, axes: tuple[int, ...], like: Node) -> Node:
    """A reduction over ``axes`` given back its axes, of length 1."""
    return A.reshape(reduced, A.keepdims_shape(like.shape, axes))


def _whole(
    name: str, x: Node, axes: tuple[int, ...], options: dict[str, Value]
) -> Node:
    """A reduction over axes the mask does not cover: of every element."""
    if name in ("sum", "prod", "max", "min"):
        return A.reduce(_OPS.get(name, name), x, axes)
    if name == "mean":
        return A.mean(x, axes)
    if name == "norm":
        return B.apply("sqrt", A.reduce("sum", B.mul(x, x), axes))
    ddof = options.get("ddof")
    var = A.variance(x, axes, 0 if MN._none(ddof) else _int(ddof))
    return var if name == "var" else B.apply("sqrt", var)


def _int(value: Value) -> int:
    if isinstance(value, Node) and value.op == "const" and value.dtype == "int64":
        return int(value.value)
    raise Unsupported("`ddof` must be a constant int here", "write it as a number")


def _extreme(sign: float) -> Callable[[str], Node]:
    def fill(dtype: str) -> Node:
        if dtype == "int64":
            info = np.iinfo(np.int64)
            return constant(int(info.min if sign < 0 else info.max))
        return constant(sign * math.inf)

    return fill


#: Reductions that fill the unselected elements with their identity.  An empty
#: selection gives that identity: -inf for max, where NumPy raises.
_FILLS: dict[str, Callable[[str], Node]] = {
    "sum": lambda dtype: constant(0) if dtype == "int64" else B.ZERO,
    "prod": lambda dtype: constant(1) if dtype == "int64" else B.ONE,
    "max": _extreme(-1.0),
    "min": _extreme(1.0),
}
_OPS = {"max": "amax", "min": "amin"}
#: The reductions, as methods and their positional parameters (NumPy's order).
_REDUCTIONS = ("sum", "mean", "max", "min", "prod", "var", "std")
_POSITIONAL: dict[str, tuple[str, ...]] = {
    "sum": ("axis",),
    "mean": ("axis",),
    "max": ("axis",),
    "min": ("axis",),
    "prod": ("axis",),
    "var": ("axis",),
    "std": ("axis",),
    "norm": ("ord", "axis"),
}
_FUNCTIONS: dict[object, str] = {
    np.sum: "sum",
    np.mean: "mean",
    np.max: "max",
    np.amax: "max",
    np.min: "min",
    np.amin: "min",
    np.prod: "prod",
    np.var: "var",
    np.std: "std",
    np.linalg.norm: "norm",
}
_BUILTINS: dict[object, str] = {
    builtins.sum: "sum",
    builtins.max: "max",
    builtins.min: "min",
}
