"""NumPy in the user's code: array functions, methods, attributes and indexing.

Each ``np.*`` function symdiff understands maps to a builder that takes the lowered
positional and keyword arguments and returns IR from :mod:`symdiff.ir.arrays`
(element-wise functions such as ``np.exp`` are in :mod:`.callables`: they work on
arrays as they are).  A builder raises :class:`Unsupported` with a message and a
hint for arguments it cannot take; the lowerer turns that into a diagnostic at the
call.  Shapes are symbolic (:mod:`symdiff.ir.shapes`), so a size the code computes
(``np.zeros(len(x) - 1)``) stays a formula in the generated kernel.
"""

from __future__ import annotations

import builtins
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from symdiff.frontend.values import Static, Value
from symdiff.ir import arrays as A
from symdiff.ir import build as B
from symdiff.ir import shapes as S
from symdiff.ir.node import Node, constant
from symdiff.ir.shapes import Length, Shape


class Unsupported(Exception):
    """An argument a NumPy builder cannot take: ``(message, hint)``."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.message = message
        self.hint = hint


@dataclass(frozen=True)
class SliceValue:
    """A ``start:stop:step`` met in a subscript (each a value or None)."""

    start: Value | None
    stop: Value | None
    step: Value | None


@dataclass(frozen=True)
class BoundMethod:
    """``x.sum`` before it is called."""

    array: Node
    name: str


# -- conversions -----------------------------------------------------------------------
#: Loop variables that carry an int computed from arguments, shapes and
#: constants into a loop body (``k``, ``len(w) - 1``), with that length: a slice
#: or an array there may be sized by them (``x[i:i + k]``, ``np.zeros(k)``).
_VAR_LENGTHS: weakref.WeakKeyDictionary[Node, Length] = weakref.WeakKeyDictionary()


def same_length(var: Node, value: Node) -> None:
    """Record that loop variable ``var`` holds ``value``, when that is a length
    known from the arguments (see :func:`length`)."""
    if value.shape or value.dtype != "int64":
        return
    try:
        _VAR_LENGTHS[var] = length(value)
    except Unsupported:
        pass


#: While a transform inlined into a caller is traced: its int parameters'
#: lengths in the caller's terms (None for an int known only when the kernel
#: runs, a loop's index), by parameter index
PARAM_LENGTHS: list[dict[int, Length | None]] = []


def _param_length(node: Node, what: str) -> Length:
    index = node.attrs[0]
    if not PARAM_LENGTHS or index not in PARAM_LENGTHS[-1]:
        return S.atom("value", index)
    found = PARAM_LENGTHS[-1][index]
    if found is None:
        raise Unsupported(
            f"{what} is an int argument of a symdiff transform called here, known "
            "only when the kernel runs (a loop's index, a value)",
            "pass an int argument, len(x) or a constant to the transform",
        )
    return found


def length(value: Value, what: str = "a size") -> Length:
    """A value that must be a length: an int constant, a shape, an int argument."""
    if isinstance(value, Node) and value.dtype in ("int64", "bool") and not value.shape:
        stack: list[tuple[Node, bool]] = [(value, False)]
        results: dict[Node, Length] = {}
        while stack:
            node, ready = stack.pop()
            if node in results:
                continue
            if node.op == "const":
                results[node] = int(node.value)
            elif node.op == "dim":
                results[node] = node.attrs[0]
            elif node.op == "param":
                results[node] = _param_length(node, what)
            elif node in _VAR_LENGTHS:  # a length carried into a loop body
                results[node] = _VAR_LENGTHS[node]
            elif node.op == "floordiv" and not ready:
                stack.append((node, True))
                stack.extend((a, False) for a in node.args)
            elif node.op in ("add", "sub", "mul", "neg") and not ready:
                stack.append((node, True))
                stack.extend((a, False) for a in node.args)
            elif ready:
                vals = [results.get(a, 0) for a in node.args]
                if node.op == "add":
                    results[node] = S.add(*vals)
                elif node.op == "sub":
                    results[node] = S.sub(*vals)
                elif node.op == "mul":
                    results[node] = S.mul(*vals)
                elif node.op == "floordiv":
                    divisor = results[node.args[1]]
                    if isinstance(divisor, int) and divisor <= 0:
                        raise Unsupported(
                            f"{what}: divide by a positive integer",
                            "write `n // 2`, or `d // h` with `h` an int argument",
                        )
                    results[node] = S.floordiv(results[node.args[0]], divisor)
                else:
                    results[node] = S.neg(vals[0])
            else:
                raise Unsupported(
                    f"{what} must be computed from integer constants, shapes "
                    "(`len(x)`, `x.shape[0]`) and integer arguments",
                    "sizes must be known when the kernel starts, not from array "
                    "values or a loop's index; in a loop, read `x[:i]` (a slice "
                    "of run-time length can be read and reduced) or use a mask: "
                    "np.where(np.arange(n) < i, x, 0.0)",
                )
        return results[value]
    raise Unsupported(
        f"{what} must be an integer", "use an int constant, len(x) or x.shape[k]"
    )


def shape_arg(value: Value, what: str = "a shape") -> Shape:
    if isinstance(value, tuple):
        return tuple(length(v, what) for v in value)
    return (length(value, what),)


def static_int(value: Value, what: str) -> int:
    if isinstance(value, Node) and value.op == "const" and value.dtype == "int64":
        return int(value.value)
    if isinstance(value, Node) and value.op == "const" and value.dtype == "bool":
        return int(value.value)
    raise Unsupported(
        f"{what} must be a constant integer",
        "write the number itself (axis=0) or a module-level constant",
    )


def axes_arg(value: Value | None, rank: int) -> tuple[int, ...]:
    if value is None or (isinstance(value, Static) and value.obj is None):
        return tuple(range(rank))
    if isinstance(value, tuple):
        axes: Any = tuple(static_int(v, "`axis`") for v in value)
    else:
        axes = static_int(value, "`axis`")
    try:
        return A.normalise_axes(axes, rank)
    except S.ShapeMismatch as exc:
        raise Unsupported(str(exc), exc.hint) from None


def flag(value: Value | None, what: str) -> bool:
    if value is None:
        return False
    if isinstance(value, Node) and value.op == "const":
        return bool(value.value)
    raise Unsupported(
        f"`{what}` must be a constant True or False", "write True or False"
    )


def array(value: Value, what: str = "the argument") -> Node:
    """A value as an array node (tuples/lists of numbers become 1-D/2-D arrays)."""
    if isinstance(value, Node):
        return value
    if isinstance(value, tuple):
        if not value:
            raise Unsupported(
                "an empty array has no derivative",
                "give the array at least one element",
            )
        items = [array(v, what) for v in value]
        if all(not i.shape for i in items):
            return A.pack(items)
        return A.concat([A.reshape(i, (1, *i.shape)) for i in items], 0)
    if isinstance(value, Static) and isinstance(value.obj, np.ndarray):
        return constant_array(value.obj)
    kind = type(value.obj).__name__ if isinstance(value, Static) else "value"
    raise Unsupported(
        f"{what} is a `{kind}`, where an array or a number is needed",
        "pass arrays as arguments, or build them with np.array([...])",
    )


def constant_array(obj: np.ndarray) -> Node:
    """A NumPy array from the user's globals, as a constant (packed elements)."""
    if obj.size > 4096:
        raise Unsupported(
            f"a global array of {obj.size} elements cannot be embedded in the kernel",
            "pass it as an argument",
        )
    if obj.dtype.kind not in "biuf":
        raise Unsupported(
            f"a global array of dtype {obj.dtype} is not supported",
            "pass it as an argument (floats, ints or bools)",
        )
    flat = [constant(v.item()) for v in obj.ravel()]
    if obj.ndim == 0:
        return flat[0]
    return A.reshape(A.pack(flat), tuple(int(d) for d in obj.shape))


# -- the functions ---------------------------------------------------------------------
Builder = Callable[..., Value]


def _reduction(op: str) -> Builder:
    def build(
        x: Value, axis: Value | None = None, keepdims: Value | None = None
    ) -> Node:
        node = array(x)
        axes = axes_arg(axis, len(node.shape))
        return A.reduce(op, node, axes, flag(keepdims, "keepdims"))

    return build


def refuse(name: str, **options: Value | None) -> None:
    """Options symdiff does not take (``out=``, ``dtype=``...) must be left out."""
    for key, value in options.items():
        if not _none(value):
            raise Unsupported(f"{name}: `{key}` is not supported", f"leave `{key}` out")


def require_nonempty(n: Length, what: str, hint: str = "") -> None:
    """An axis that must have an element, as NumPy requires of it: checked now
    for a known length, else when the kernel runs (a ``ShapeError``, where
    NumPy raises ``ValueError``)."""
    if isinstance(n, int):
        if n < 1:
            raise Unsupported(what, hint)
        return
    S.require_less(0, n, what)


def _extreme(op: str) -> Builder:
    """``np.max``/``np.min`` (and ``amax``/``amin``, the methods): NumPy's
    arguments in its order.  An empty axis has no maximum: NumPy raises, and so
    does the kernel, unless ``initial`` gives the value to start from (then the
    result is ``np.maximum(initial, ...)``, NaN-propagating as NumPy's)."""
    ufunc = "maximum" if op == "amax" else "minimum"
    name = f"np.{'max' if op == 'amax' else 'min'}"

    def build(
        a: Value,
        axis: Value | None = None,
        out: Value | None = None,
        keepdims: Value | None = None,
        initial: Value | None = None,
        where: Value | None = None,
    ) -> Node:
        refuse(name, out=out)
        node = array(a)
        axes = axes_arg(axis, len(node.shape))
        keep = flag(keepdims, "keepdims")
        if not _none(initial):
            start = array(initial, "`initial`")
            if start.shape:
                raise Unsupported(
                    f"{name}: `initial` must be a number", "give one number"
                )
            if not _none(where):  # the elements left out count as `initial`
                mask = B.truth(array(where, "`where`"))
                shape = S.broadcast([node.shape, mask.shape], lambda: "`where`")
                if shape != node.shape:
                    raise Unsupported(
                        f"{name}: `where` does not broadcast to the array's shape",
                        "give a mask of the array's shape, or one that broadcasts",
                    )
                node = B.select(B.broadcast_to(mask, shape), node, start)
            return B.apply(ufunc, A.reduce(op, node, axes, keep), start)
        if not _none(where):
            raise Unsupported(
                f"{name}: reduction operation '{ufunc}' does not have an "
                "identity, so to use a where mask one has to specify 'initial'",
                f"give the value of an empty selection: {name}(x, where=mask, "
                f"initial={'-' if op == 'amax' else ''}np.inf)",
            )
        result = A.reduce(op, node, axes, keep)
        for ax in axes:
            require_nonempty(
                node.shape[ax],
                f"zero-size array to reduction operation {ufunc} which has no identity",
                f"give a value for empty arrays: {name}(x, initial=...)",
            )
        return result

    return build


def _norm(
    x: Value,
    ord: Value | None = None,
    axis: Value | None = None,
    keepdims: Value | None = None,
) -> Node:
    """``np.linalg.norm``: the 2-norm of vectors and the Frobenius norm (the
    default); vector orders ``1``, ``inf``, ``-inf``, ``0`` and any number
    ``p``; matrix orders ``1``, ``-1``, ``inf``, ``-inf`` and ``"fro"``."""
    node = array(x)
    keep = flag(keepdims, "keepdims")
    axes = axes_arg(axis, len(node.shape))
    if _none(ord) or (isinstance(ord, Static) and ord.obj == "fro"):
        if isinstance(ord, Static) and len(axes) != 2:
            raise Unsupported(
                "np.linalg.norm: ord='fro' is a matrix norm",
                "give a 2-D array or axis=(0, 1)",
            )
        return B.apply("sqrt", A.reduce("sum", B.mul(node, node), axes, keep))
    if not (isinstance(ord, Node) and ord.op == "const" and not ord.shape):
        raise Unsupported(
            "np.linalg.norm: `ord` must be a number, np.inf, -np.inf or 'fro'",
            "the nuclear norm is not supported: compute it from np.linalg.svd",
        )
    p = float(ord.value)
    size = B.apply("abs", node)
    if len(axes) == 1 or (_none(axis) and len(node.shape) == 1):
        if p == math.inf:
            return A.reduce("amax", size, axes, keep)
        if p == -math.inf:
            return A.reduce("amin", size, axes, keep)
        if p == 0:
            nonzero = B.to_float(B.apply("ne", node, B.ZERO))
            return A.reduce("sum", nonzero, axes, keep)
        if p == 1:
            return A.reduce("sum", size, axes, keep)
        if p == 2:
            return B.apply("sqrt", A.reduce("sum", B.mul(node, node), axes, keep))
        powered = A.reduce("sum", B.apply("pow", size, constant(p)), axes, keep)
        return B.apply("pow", powered, constant(1.0 / p))
    if len(axes) != 2:
        raise Unsupported(
            "np.linalg.norm: a norm of an order over more than two axes",
            "give axis= one axis (a vector norm) or two (a matrix norm)",
        )
    if p in (1, -1, math.inf, -math.inf):
        # ord 1: the largest column sum of |x|; inf: the largest row sum (the
        # axes in the order given: axis=(1, 0) swaps rows and columns)
        rows, cols = axes
        if isinstance(axis, tuple) and len(axis) == 2:
            rows, cols = (static_int(a, "an axis") % len(node.shape) for a in axis)
        summed, other = (rows, cols) if abs(p) == 1 else (cols, rows)
        sums = A.reduce("sum", size, (summed,), True)
        extreme = A.reduce("amax" if p > 0 else "amin", sums, (other,), True)
        return (
            extreme
            if keep
            else A.reshape(
                extreme, tuple(d for a, d in enumerate(extreme.shape) if a not in axes)
            )
        )
    if abs(p) == 2:
        raise Unsupported(
            "np.linalg.norm: the spectral norm (ord=2 of a matrix) is not supported",
            "leave ord out for the Frobenius norm, or take the 2-norm of a vector",
        )
    raise Unsupported(
        f"np.linalg.norm: the matrix norm of order {ord.value!r} is not supported",
        "leave ord out for the Frobenius norm; ord=1 and ord=np.inf are supported",
    )


def _matmul(a: Value, b: Value) -> Node:
    return A.dot(array(a), array(b))


def _np_dot(a: Value, b: Value) -> Node:
    x, y = array(a), array(b)
    if not x.shape or not y.shape:
        return B.mul(x, y)
    if min(len(x.shape), len(y.shape)) >= 2 and max(len(x.shape), len(y.shape)) > 2:
        # np.dot of stacks pairs every matrix of one with every one of the other
        raise Unsupported(
            "np.dot of arrays with more than 2 axes is not supported (it is not "
            "a product of stacked matrices)",
            "for stacks of matrices use `a @ b` (np.matmul)",
        )
    return A.dot(x, y)


def _outer(a: Value, b: Value) -> Node:
    x, y = array(a), array(b)
    return A.outer(_flat(x), _flat(y))


def _flat(x: Node) -> Node:
    return A.reshape(x, (S.product(x.shape),))


def _inner(a: Value, b: Value) -> Node:
    x, y = array(a), array(b)
    if not x.shape or not y.shape:
        return B.mul(x, y)
    if len(x.shape) == 1 and len(y.shape) == 1:
        return A.dot(x, y)
    if len(y.shape) == 1:
        return A.dot(x, y)
    return A.dot(x, A.transpose(y))


def _vdot(a: Value, b: Value) -> Node:
    return A.dot(_flat(array(a)), _flat(array(b)))


def _trace(x: Value) -> Node:
    node = array(x)
    if len(node.shape) != 2:
        raise Unsupported(
            "np.trace: only 2-D arrays are supported",
            "for a stack of matrices: np.sum(A * np.eye(n), axis=(-2, -1))",
        )
    n, m = node.shape
    mask = B.apply("eq", A.iota(0, (n, m)), A.iota(1, (n, m)))
    return A.reduce("sum", B.select(mask, node, B.ZERO), (0, 1))


def _transpose(x: Value, axes: Value | None = None) -> Node:
    node = array(x)
    if axes is None or (isinstance(axes, Static) and axes.obj is None):
        return A.transpose(node)
    if not isinstance(axes, tuple):
        raise Unsupported(
            "`axes` must be a tuple of integers", "write np.transpose(x, (1, 0, 2))"
        )
    rank = len(node.shape)
    perm = tuple(static_int(a, "an axis") % max(rank, 1) for a in axes)
    if len(perm) != rank or sorted(perm) != list(range(rank)):
        raise Unsupported(
            "`axes` must be a permutation of the array's axes",
            "name every axis once: np.transpose(x, (1, 0, 2))",
        )
    return A.transpose(node, perm)


def reshape(node: Node, shape: Shape | tuple[Value, ...]) -> Node:
    dims: list[Length | None] = []
    for d in shape:
        if isinstance(d, Node) and d.op == "const" and d.value == -1:
            dims.append(None)
        else:
            dims.append(length(d, "a new shape") if isinstance(d, Node) else d)  # type: ignore[arg-type]
    total = S.product(node.shape)
    unknown = [i for i, d in enumerate(dims) if d is None or d == -1]
    if len(unknown) > 1:
        raise Unsupported(
            "can only specify one unknown dimension", "give every length but one"
        )
    if unknown:
        known = S.product([d for d in dims if d is not None and d != -1])
        rest = _divide(total, known)
        if rest is None:
            rest = S.floordiv(total, known)  # exact: checked when the kernel runs
        dims[unknown[0]] = rest
    new: Shape = tuple(d for d in dims if d is not None)
    S.unify(
        total,
        S.product(new),
        f"cannot reshape array of shape {S.format_shape(node.shape)} into shape "
        f"{S.format_shape(new)}",
    )
    return A.reshape(node, new)


def _divide(total: Length, known: Length) -> Length | None:
    """``total / known`` when it is exact (products of the same lengths)."""
    if isinstance(total, int) and isinstance(known, int):
        return total // known if known and total % known == 0 else None
    if known == 1:
        return total
    if isinstance(known, int):
        return None
    # a product divided by some of its own factors
    if isinstance(total, S.Dim) and len(total.terms) == 1 and len(known.terms) == 1:
        (mt, ct), (mk, ck) = total.terms[0], known.terms[0]
        rest = list(mt)
        for atom_ in mk:
            if atom_ not in rest:
                return None
            rest.remove(atom_)
        if ct % ck:
            return None
        out: Length = ct // ck
        for atom_ in rest:
            out = S.mul(out, S.Dim({(atom_,): 1}))
        return out
    return None


def _np_reshape(x: Value, newshape: Value) -> Node:
    node = array(x)
    shape = newshape if isinstance(newshape, tuple) else (newshape,)
    return reshape(node, shape)  # type: ignore[arg-type]


def _ravel(x: Value) -> Node:
    return _flat(array(x))


def _tri(lower: bool) -> Builder:
    def build(x: Value, k: Value | None = None) -> Node:
        node = array(x)
        if len(node.shape) < 2:
            raise Unsupported(
                "np.tril/np.triu need an array of at least 2 dimensions",
                "build the matrix first (np.outer, reshape)",
            )
        return A.tri(node, 0 if k is None else static_int(k, "`k`"), lower)

    return build


def _sequence(value: Value, what: str) -> list[Node]:
    if not isinstance(value, tuple):
        raise Unsupported(
            f"{what} takes a tuple or list of arrays",
            f"put the arrays in a tuple: {what}((a, b))",
        )
    return [array(v) for v in value]


def _concatenate(arrays: Value, axis: Value | None = None) -> Node:
    items = _sequence(arrays, "np.concatenate")
    if any(not i.shape for i in items):
        raise Unsupported(
            "np.concatenate: zero-dimensional arrays cannot be joined",
            "join numbers with np.array([a, b])",
        )
    rank = len(items[0].shape)
    ax = 0 if axis is None else static_int(axis, "`axis`")
    if not -rank <= ax < rank:
        raise Unsupported(
            f"axis {ax} is out of bounds for arrays of dimension {rank}",
            "axes count from 0 up to the dimension minus 1, or from -1 backwards",
        )
    return A.concat(items, ax % rank)


def _stack(arrays: Value, axis: Value | None = None) -> Node:
    items = _sequence(arrays, "np.stack")
    shape = items[0].shape
    ax = 0 if axis is None else static_int(axis, "`axis`")
    if not -len(shape) - 1 <= ax <= len(shape):
        raise Unsupported(
            f"axis {ax} is out of bounds for the result of dimension {len(shape) + 1}",
            "axes count from 0 up to the dimension minus 1, or from -1 backwards",
        )
    ax %= len(shape) + 1
    if all(not i.shape for i in items):
        return A.pack(items)
    expanded = [A.reshape(i, (*i.shape[:ax], 1, *i.shape[ax:])) for i in items]
    return A.concat(expanded, ax)


def _at_least(rank: int, name: str) -> Builder:
    """``np.atleast_1d/2d/3d``: one array, or a tuple of them for several."""

    def build(*arys: Value) -> Value:
        if not arys:
            raise Unsupported(
                f"{name} needs at least one array",
                f"pass one or more arrays: {name}(x)",
            )
        out = tuple(_lift(array(a), rank) for a in arys)
        return out[0] if len(out) == 1 else out

    return build


def _lift(x: Node, rank: int) -> Node:
    """NumPy's ``atleast_{rank}d`` of one array: a number is ``(1,) * rank``; a
    vector ``(n,)`` is ``(1, n)`` at rank 2 and ``(1, n, 1)`` at rank 3; a
    matrix ``(m, n)`` is ``(m, n, 1)`` at rank 3."""
    shape = x.shape
    if len(shape) >= rank:
        return x
    if not shape:
        return A.reshape(x, (1,) * rank)
    if len(shape) == 1:
        return A.reshape(x, (1, shape[0], 1) if rank == 3 else (1, shape[0]))
    return A.reshape(x, (*shape, 1))


def _joined(name: str, rank: int, axis: Callable[[list[Node]], int]) -> Builder:
    """``np.hstack``/``vstack``/``dstack``/``column_stack``: the arrays lifted to
    at least ``rank`` dimensions (``column_stack``: rank ``-2``, vectors become
    columns), joined along ``axis(lifted)``."""

    def build(tup: Value) -> Node:
        items = _sequence(tup, name)
        if rank == -2:
            lifted = [i if len(i.shape) >= 2 else _column(i) for i in items]
        else:
            lifted = [_lift(i, rank) for i in items]
        ax = axis(lifted)
        ranks = {len(i.shape) for i in lifted}
        if len(ranks) > 1 or ax >= min(ranks):
            raise Unsupported(
                f"{name}: all the input arrays must have same number of dimensions",
                "reshape the arrays to one number of dimensions first",
            )
        return A.concat(lifted, ax)

    return build


def _column(x: Node) -> Node:
    """A number or a vector as a column (``column_stack``'s 2-D form)."""
    return A.reshape(x, (x.shape[0] if x.shape else 1, 1))


def _copies(x: Node, counts: list[Length], inner: bool) -> Node:
    """Each axis of ``x`` repeated ``counts[i]`` times: whole (``np.tile``,
    ``inner`` False: the axis of copies goes before the axis) or element by
    element (``np.repeat``, after it).  A broadcast and a reshape: nothing is
    gathered, and the adjoint sums the copies."""
    spread: list[Length] = []
    for d, k in zip(x.shape, counts, strict=True):
        spread += [d, k] if inner else [k, d]
    ones = [d if j % 2 == (0 if inner else 1) else 1 for j, d in enumerate(spread)]
    stretched = B.broadcast_to(A.reshape(x, tuple(ones)), tuple(spread))
    return A.reshape(
        stretched, tuple(S.mul(d, k) for d, k in zip(x.shape, counts, strict=True))
    )


def _count(value: Value, what: str) -> Length:
    k = length(value, what)
    if isinstance(k, int) and k < 0:
        raise Unsupported(
            f"{what}: negative dimensions are not allowed", "repeat 0 or more times"
        )
    return k


def _tile(A_: Value, reps: Value) -> Node:
    """``np.tile``: ``reps`` copies along each axis; the shorter of the array's
    shape and ``reps`` is padded with 1s in front, as in NumPy."""
    node = array(A_)
    counts = [
        _count(r, "np.tile's `reps`")
        for r in (reps if isinstance(reps, tuple) else (reps,))
    ]
    rank = max(len(node.shape), len(counts))
    node = A.reshape(node, (1,) * (rank - len(node.shape)) + node.shape)
    pad: list[Length] = [1] * (rank - len(counts))
    return _copies(node, pad + counts, inner=False)


def _repeat(a: Value, repeats: Value, axis: Value | None = None) -> Node:
    """``np.repeat``: each element ``repeats`` times along ``axis`` (of the
    flattened array without one); ``repeats`` one count, or one per element
    (constants: the positions are known, the result is a gather of them)."""
    node = array(a)
    if _none(axis):
        node, ax = _flat(node), 0
    else:
        ax = _axis_list(axis, len(node.shape), "np.repeat")[0]  # type: ignore[arg-type]
    if isinstance(repeats, Node) and len(repeats.shape) == 1:
        known = _constant_positions(repeats)  # a global array of counts
        if repeats.dtype != "float64" and len(known) == repeats.shape[0]:
            repeats = tuple(constant(v) for v in known)
    if isinstance(repeats, Node) and repeats.shape:
        raise Unsupported(
            "np.repeat: counts computed when the kernel runs are not supported "
            "(the result's length would depend on them)",
            "give the counts as constants: np.repeat(x, [2, 0, 1])",
        )
    if isinstance(repeats, tuple) and len(repeats) != 1:
        counts = [static_int(r, "np.repeat's per-element `repeats`") for r in repeats]
        n = node.shape[ax]
        S.unify(
            n,
            len(counts),
            f"np.repeat: operands could not be broadcast together with shape "
            f"({S.format_dim(n)},) ({len(counts)},)",
        )
        if any(c < 0 for c in counts):
            raise Unsupported(
                "np.repeat: negative dimensions are not allowed",
                "repeat each element 0 or more times",
            )
        positions = [i for i, c in enumerate(counts) for _ in range(c)]
        if not positions:
            shape = tuple(0 if i == ax else d for i, d in enumerate(node.shape))
            return A.full(_zero_of(node.dtype), shape)
        return _take(node, constant_array(np.array(positions)), constant(ax))
    if isinstance(repeats, tuple):
        repeats = repeats[0]
    k = _count(repeats, "np.repeat's `repeats`")
    return _copies(node, [k if i == ax else 1 for i in range(len(node.shape))], True)


# -- np.einsum -------------------------------------------------------------------------
def _einsum(
    subscripts: Value,
    *operands: Value,
    out: Value | None = None,
    dtype: Value | None = None,
    optimize: Value | None = None,
) -> Node:
    """``np.einsum`` with explicit subscripts (``"ij,jk->ik"``, ``"ii->"``) or an
    implicit output (``"ij,jk"``: the letters met once, in alphabetical order).

    Built from the array ops: a letter repeated in one operand takes its
    diagonal (a select), a letter in one operand alone that the output lacks
    is summed there, and the operands are multiplied pairwise, left to right:
    the letters two share and nothing later needs are contracted by a matrix
    product (``A.dot``), so ``"ij,jk->ik"`` is one matmul, not an ``n**3``
    product summed."""
    if not (isinstance(subscripts, Static) and isinstance(subscripts.obj, str)):
        raise Unsupported(
            "np.einsum: the subscripts must be a string constant",
            "write them out: np.einsum('ij,jk->ik', a, b)",
        )
    if not _none(out) or _dtype(dtype, "float64") != "float64":
        raise Unsupported(
            "np.einsum: `out` and a non-float `dtype` are not supported",
            "leave them out",
        )
    inputs, output = _einsum_parse(subscripts.obj, len(operands))
    nodes = [array(o, "an einsum operand") for o in operands]
    sizes: dict[str, Length] = {}
    for term, node in zip(inputs, nodes, strict=True):
        if len(term) != len(node.shape):
            raise Unsupported(
                f"np.einsum: operand of dimension {len(node.shape)} has "
                f"{len(term)} subscripts ('{term}')",
                "give one letter per axis",
            )
        for letter, d in zip(term, node.shape, strict=True):
            sizes[letter] = S.unify(
                sizes.get(letter, d),
                d,
                f"np.einsum: size of label '{letter}' does not match between operands",
            )
    terms = [_einsum_diagonal(n, t) for n, t in zip(nodes, inputs, strict=True)]
    node, term = terms[0]
    for k in range(1, len(terms)):
        later = set(output).union(*(t for _, t in terms[k + 1 :]))
        node, term = _einsum_pair(node, term, *terms[k], later)
    node, term = _einsum_keep(node, term, set(output))
    return A.transpose(node, tuple(term.index(c) for c in output))


def _einsum_parse(spec: str, count: int) -> tuple[list[str], str]:
    text = spec.replace(" ", "")
    if "." in text:
        raise Unsupported(
            "np.einsum: ellipsis ('...') is not supported",
            "name every axis with a letter: np.einsum('bij,bjk->bik', a, b)",
        )
    left, arrow, output = text.partition("->")
    inputs = left.split(",")
    if len(inputs) != count:
        raise Unsupported(
            f"np.einsum: {len(inputs)} operand subscripts for {count} operands",
            "give one comma-separated term per operand",
        )
    letters = left.replace(",", "")
    if not all(c.isalpha() and c.isascii() for c in letters + output):
        raise Unsupported(
            f"np.einsum: invalid subscript in '{spec}'",
            "subscripts are letters a-z and A-Z, ',' and '->'",
        )
    if not arrow:
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    for c in output:
        if output.count(c) > 1:
            raise Unsupported(
                f"np.einsum: output subscript '{c}' appears more than once",
                "name each output axis once",
            )
        if c not in letters:
            raise Unsupported(
                f"np.einsum: output subscript '{c}' does not appear in the inputs",
                "every output letter must name an axis of an operand",
            )
    return inputs, output


def _einsum_diagonal(x: Node, term: str) -> tuple[Node, str]:
    """A letter repeated in one operand (``"ii"``) reads the diagonal: the
    entries where the positions agree, the others selected away and summed."""
    while len(set(term)) < len(term):
        c = next(c for c in term if term.count(c) > 1)
        a, b = term.index(c), term.index(c, term.index(c) + 1)
        same = B.apply("eq", A.iota(a, x.shape), A.iota(b, x.shape))
        x = A.reduce("sum", B.select(same, x, _zero_of(x.dtype)), (b,))
        term = term[:b] + term[b + 1 :]
    return x, term


def _einsum_keep(x: Node, term: str, keep: set[str]) -> tuple[Node, str]:
    """Sum the axes of letters nothing later needs."""
    axes = tuple(i for i, c in enumerate(term) if c not in keep)
    if not axes:
        return x, term
    return A.reduce("sum", x, axes), "".join(c for c in term if c in keep)


def _einsum_pair(
    x: Node, xt: str, y: Node, yt: str, later: set[str]
) -> tuple[Node, str]:
    """The product of two operands, keeping the letters in ``later``: shared
    letters kept are batch axes, shared ones not kept are contracted by a
    matrix product (a broadcast product when there are none)."""
    x, xt = _einsum_keep(x, xt, later | set(yt))
    y, yt = _einsum_keep(y, yt, later | set(xt))
    batch = [c for c in xt if c in yt and c in later]
    inner = [c for c in xt if c in yt and c not in later]
    left = [c for c in xt if c not in yt]
    right = [c for c in yt if c not in xt]
    x = A.transpose(x, tuple(xt.index(c) for c in (*batch, *left, *inner)))
    y = A.transpose(y, tuple(yt.index(c) for c in (*batch, *inner, *right)))
    nb, nl, ni = len(batch), len(left), len(inner)
    out = "".join((*batch, *left, *right))
    if not inner:
        # an outer product on the free axes: x (b, l, 1...), y (b, 1..., r)
        xs = A.reshape(x, (*x.shape, *(1,) * len(right)))
        ys = A.reshape(y, (*y.shape[:nb], *(1,) * nl, *y.shape[nb:]))
        return B.mul(xs, ys), out
    bs, ls, ks = x.shape[:nb], x.shape[nb : nb + nl], x.shape[nb + nl :]
    rs = y.shape[nb + ni :]
    k = S.product(ks)
    # matrices (or vectors where a side has no free axes) of the product
    xm = A.reshape(x, (*bs, S.product(ls), k) if left else (*bs, k))
    ym = A.reshape(y, (*bs, k, S.product(rs)) if right else (*bs, k))
    if nb and not (left and right):
        xm = A.reshape(xm, (*bs, 1, k)) if not left else xm
        ym = A.reshape(ym, (*bs, k, 1)) if not right else ym
    product = A.dot(xm, ym)
    return A.reshape(product, (*bs, *ls, *rs)), out


def _zero_of(dtype: str) -> Node:
    return {"float64": B.ZERO, "int64": constant(0), "bool": constant(False)}[dtype]


def _filled(value: float) -> Builder:
    def build(shape: Value, dtype: Value | None = None) -> Node:
        return A.full(_fill_value(value, dtype), shape_arg(shape))

    return build


def _fill_value(value: float | Node, dtype: Value | None) -> Node:
    node = value if isinstance(value, Node) else constant(float(value))
    if dtype is not None:
        obj = dtype.obj if isinstance(dtype, Static) else None
        if obj in (int, np.int64, np.int32):
            return constant(int(node.value)) if node.op == "const" else node
        if obj not in (float, np.float64):
            raise Unsupported(
                "`dtype` must be float or int",
                "leave dtype out: symdiff computes in float64",
            )
    return node


def _full(shape: Value, fill_value: Value, dtype: Value | None = None) -> Node:
    """``np.full``: of ``dtype``, by default the fill value's (NumPy's
    ``np.full(3, 0)`` is an int array, whose items a float write truncates)."""
    fill = array(fill_value)
    kind = _dtype(dtype, fill.dtype)
    return A.full(_cast(fill, kind) if fill.dtype != kind else fill, shape_arg(shape))


def _dtype(value: Value | None, default: str) -> str:
    """A ``dtype=`` argument as symdiff's dtype (float64, int64 or bool)."""
    if value is None or (isinstance(value, Static) and value.obj is None):
        return default
    kind = ""
    if isinstance(value, Static):
        obj: Any = value.obj  # float, np.int64, "float32"... or anything else
        try:
            kind = np.dtype(obj).kind
        except TypeError:
            pass
    if kind in ("f", "i", "u", "b"):
        return {"f": "float64", "i": "int64", "u": "int64", "b": "bool"}[kind]
    raise Unsupported(
        "`dtype` must be float, int or bool",
        "leave dtype out: symdiff computes in float64",
    )


def _cast(node: Node, dtype: str) -> Node:
    """A fill value as ``dtype``, as NumPy stores it into an array of it."""
    if node.dtype == dtype:
        return node
    if dtype == "float64":
        return B.to_float(node)
    if dtype == "bool":
        return B.truth(node)
    if node.dtype == "bool":
        return B.to_int(node)
    if node.op == "const":
        return constant(int(node.value))
    raise Unsupported(
        "a fill value computed in floating point cannot fill an integer array",
        "give the array a float dtype: dtype=float",
    )


def stored(value: Node, dtype: str) -> Node:
    """``value`` as an array of ``dtype`` stores it: a float toward zero into
    ints (slope 0), its truth into bools, an int or bool as a float."""
    if value.dtype == dtype:
        return value
    if dtype == "bool":
        return B.truth(value)
    if dtype == "float64":
        return B.to_float(value)
    return B.truncate(value) if value.dtype == "float64" else B.to_int(value)


def _like(value: float | None) -> Builder:
    """``np.zeros_like`` (``value`` 0), ``np.ones_like`` (1), ``np.empty_like``
    (0: its contents are unspecified, zeros are one choice) and, for ``None``,
    ``np.full_like``: the argument's shape and, unless ``dtype`` says otherwise,
    its dtype (an int or bool array gives one of ints or bools, as in NumPy)."""

    def fill(
        a: Value,
        fill_value: Value,
        dtype: Value | None = None,
        order: Value | None = None,
        subok: Value | None = None,
        shape: Value | None = None,
    ) -> Node:
        node = array(a)
        target = _dtype(dtype, node.dtype)
        dims = node.shape if _none(shape) else shape_arg(shape)  # type: ignore[arg-type]
        value = _cast(array(fill_value, "the fill value"), target)
        if S.broadcast([value.shape, dims]) != dims:
            raise Unsupported(
                f"could not broadcast the fill value of shape "
                f"{S.format_shape(value.shape)} into shape {S.format_shape(dims)}",
                "fill with a number, or an array that broadcasts to the shape",
            )
        return A.full(value, dims)

    if value is None:
        return fill

    def build(
        a: Value,
        dtype: Value | None = None,
        order: Value | None = None,
        subok: Value | None = None,
        shape: Value | None = None,
    ) -> Node:
        return fill(a, constant(value), dtype, order, subok, shape)

    return build


def _number(value: Value | None) -> float | int | None:
    """A constant number (None for anything else)."""
    if isinstance(value, Node) and value.op == "const" and value.dtype != "bool":
        return value.value  # type: ignore[no-any-return]
    return None


def _arange(
    start: Value,
    stop: Value | None = None,
    step: Value | None = None,
    dtype: Value | None = None,
) -> Node:
    if stop is None or _none(stop):
        start, stop = constant(0), start
    bounds: tuple[Value, Value, Value] = (
        start,
        stop,
        constant(1) if step is None or _none(step) else step,
    )
    floating = any(isinstance(v, Node) and v.dtype == "float64" for v in bounds)
    want = _dtype(dtype, "float64" if floating else "int64")
    if want == "bool" or (floating and want != "float64"):
        raise Unsupported(
            "np.arange: `dtype` must be float (or int for integer bounds)",
            "leave dtype out, or convert the bounds",
        )
    first, last, k = (_number(v) for v in bounds)
    if first is not None and last is not None and k is not None:
        return _arange_constant(first, last, k, want)
    out = _arange_lengths(*bounds) if not floating else _arange_float(*bounds)
    return B.to_float(out) if want == "float64" else out


def _arange_constant(
    start: float | int, stop: float | int, step: float | int, dtype: str
) -> Node:
    """``np.arange`` of constants: NumPy's count and values."""
    if step == 0:
        raise Unsupported("np.arange: the step cannot be zero", "use a nonzero step")
    if dtype == "int64":
        count = len(range(int(start), int(stop), int(step)))
        idx = A.iota(0, (count,))
        return B.add(B.mul(constant(int(step)), idx), constant(int(start)))
    return _arange_values(start, step, max(math.ceil((stop - start) / step), 0))


def _arange_values(start: float | int, step: float | int, count: Length) -> Node:
    """``start + i * delta`` for ``i < count``, ``delta = (start + step) -
    start``: the float values NumPy's arange fills in, bit for bit."""
    first = float(start)
    delta = (first + float(step)) - first
    idx = B.to_float(A.iota(0, (count,)))
    return B.add(B.mul(constant(delta), idx), constant(first))


def _arange_lengths(start: Value, stop: Value, step: Value) -> Node:
    """``np.arange`` of integer bounds from shapes and arguments."""
    first = length(start, "np.arange's bound")
    last = length(stop, "np.arange's bound")
    k = static_int(step, "np.arange's step")
    if k <= 0:
        raise Unsupported(
            "np.arange: only positive constant steps are supported",
            "reverse with [::-1], or scale: k * np.arange(n)",
        )
    idx = A.iota(0, (S.cdiv(S.sub(last, first), k),))
    if k != 1:
        idx = B.mul(constant(k), idx)
    return B.add(idx, A.dim(first)) if first != 0 else idx


def _arange_float(start: Value, stop: Value, step: Value) -> Node:
    """``np.arange`` with a float constant among bounds from shapes: its count is
    known for a constant start, an integer stop and a positive whole step
    (``np.arange(0.5, len(x))``: ``ceil(n - 0.5)`` is ``n``)."""
    first, k = _number(start), _number(step)
    whole = k is not None and k > 0 and float(k).is_integer()
    if (
        first is None
        or k is None
        or not whole
        or getattr(stop, "dtype", "") == "float64"
    ):
        raise Unsupported(
            "np.arange with float arguments needs a constant start, an integer "
            "stop (a constant, len(x), x.shape[k], an int argument) and a "
            "positive whole step, unless every argument is a constant",
            "np.arange(n) * h + a computes the same values",
        )
    count = S.cdiv(S.sub(length(stop, "np.arange's bound"), math.floor(first)), int(k))
    return _arange_values(first, k, count)


def _linspace(
    start: Value,
    stop: Value,
    num: Value | None = None,
    endpoint: Value | None = None,
    retstep: Value | None = None,
    dtype: Value | None = None,
    axis: Value | None = None,
) -> Value:
    """``np.linspace``, as NumPy computes it: ``start + i * step`` with ``step =
    (stop - start) / div`` (``div`` is ``num - 1``, or ``num`` without the
    endpoint), the last value ``stop`` itself; with ``div`` 0 (one value and
    the endpoint), ``start + i * (stop - start)``.  ``start`` and ``stop`` may be
    computed (differentiable) numbers or arrays (values then run along axis 0)."""
    if _dtype(dtype, "float64") != "float64":
        raise Unsupported(
            "np.linspace: `dtype` must be float",
            "convert afterwards: np.floor(np.linspace(a, b, n))",
        )
    if not _none(axis) and static_int(axis, "`axis`") != 0:  # type: ignore[arg-type]
        raise Unsupported(
            "np.linspace: only axis=0 is supported",
            "transpose afterwards: .T or np.transpose",
        )
    first = B.to_float(array(start, "`start`"))
    last = B.to_float(array(stop, "`stop`"))
    n = 50 if _none(num) else length(num, "np.linspace's `num`")  # type: ignore[arg-type]
    if isinstance(n, int) and n < 0:
        raise Unsupported(
            f"Number of samples, {n}, must be non-negative.", "use num >= 0"
        )
    ends = endpoint is None or flag(endpoint, "endpoint")
    delta = B.sub(last, first)
    rest = S.broadcast([first.shape, last.shape], lambda: "np.linspace's bounds")
    i = A.iota(0, (n, *(1,) * len(rest)))
    d = S.sub(n, 1) if ends else n
    div = A.dim(d)
    step = B.div(delta, B.to_float(div))
    y = B.to_float(i)
    if isinstance(d, int):
        # no values use the step when div is 0 (NumPy's step is NaN then)
        y = B.mul(y, step) if d > 0 else B.mul(y, delta)
        if d <= 0:
            step = constant(math.nan)
    else:
        some = B.apply("gt", div, constant(0))
        y = B.select(some, B.mul(y, step), B.mul(y, delta))
        step = B.select(some, step, constant(math.nan))
    y = B.add(y, first)
    if ends and not (isinstance(d, int) and d <= 0):
        at_end = B.apply("eq", i, div)
        if not isinstance(d, int):  # one value (div 0): it is `start`
            at_end = B.logical_and(at_end, B.apply("gt", i, constant(0)))
        y = B.select(at_end, last, y)
    y = B.broadcast_to(y, (n, *rest))
    return (y, step) if flag(retstep, "retstep") else y


def _logspace(
    start: Value,
    stop: Value,
    num: Value | None = None,
    endpoint: Value | None = None,
    base: Value | None = None,
    dtype: Value | None = None,
    axis: Value | None = None,
) -> Node:
    """``np.logspace``: ``base ** np.linspace(start, stop, num, endpoint)``."""
    y = _linspace(start, stop, num, endpoint, None, dtype, axis)
    b = constant(10.0) if _none(base) else B.to_float(array(base, "`base`"))  # type: ignore[arg-type]
    return B.pow_(b, y)  # type: ignore[arg-type]


def _eye(
    n: Value, m: Value | None = None, k: Value | None = None, dtype: Value | None = None
) -> Node:
    rows = length(n, "np.eye's size")
    cols = rows if m is None or (isinstance(m, Static) and m.obj is None) else length(m)
    eye = A.eye(rows, cols, 0 if k is None else static_int(k, "`k`"))
    return stored(eye, _dtype(dtype, "float64"))  # ~np.eye(n, dtype=bool)


def _np_array(value: Value, dtype: Value | None = None) -> Node:
    node = array(value)
    if (
        dtype is not None
        and isinstance(dtype, Static)
        and dtype.obj
        in (
            float,
            np.float64,
        )
    ):
        node = B.to_float(node)
    return node


def _astype(
    x: Value,
    dtype: Value,
    order: Value | None = None,
    casting: Value | None = None,
    copy: Value | None = None,
) -> Node:
    """``x.astype(float)``, ``(int)``, ``(bool)``: symdiff's dtypes are float64,
    int64 and bool; a narrower float would round the values, so it is refused."""
    node = array(x)
    obj: Any = dtype.obj if isinstance(dtype, Static) else None
    want = _dtype(dtype, "float64")
    try:
        narrow = np.dtype(obj).kind == "f" and np.dtype(obj).itemsize < 8
    except TypeError:
        narrow = False
    if narrow:
        raise Unsupported(
            f".astype: {np.dtype(obj).name} is not supported (it rounds the "
            "values): symdiff computes in float64",
            "use .astype(np.float64), or leave the array as it is",
        )
    if want == "float64":
        return B.to_float(node)
    if want == "bool":
        return B.truth(node)
    return B.truncate(node)  # toward zero, as NumPy casts


def _float64(x: Value | None = None) -> Node:
    """``np.float64(x)``: a number or an array as float64."""
    return constant(0.0) if x is None else B.to_float(array(x))


def _float32(x: Value | None = None) -> Node:
    """``np.float32(c)`` of a constant: the float32 nearest ``c``, as a float64
    (symdiff computes in float64; a run-time value is refused)."""
    if x is None:
        return constant(0.0)
    if isinstance(x, Node) and x.op == "const" and not x.shape:
        return constant(float(np.float32(x.value)))
    raise Unsupported(
        "np.float32 of a value known only when the kernel runs is not supported: "
        "symdiff computes in float64",
        "leave the value as float64, or pass float32 data (it is computed in float64)",
    )


def _trunc(x: Node) -> Node:
    """Toward zero: ``ceil`` below zero, ``floor`` elsewhere (``-0.5`` gives
    ``-0.0``, as ``np.trunc``).  Not ``B.truncate`` (``int(x)``): ``np.trunc`` stays
    a float, keeps the sign of zero and does not overflow past ``2**63``."""
    if x.dtype != "float64":
        return x
    return B.select(B.apply("lt", x, B.ZERO), B.apply("ceil", x), B.apply("floor", x))


def _rint(x: Node) -> Node:
    """To the nearest integer, ties to even (``np.rint``).  From ``floor(x)``
    and the fraction ``x - floor(x)``, which is exact; never ``floor(x + 0.5)``,
    whose sum rounds (``0.49999999999999994 + 0.5`` is ``1.0``).  The sign is
    ``x``'s, so ``-0.3`` gives ``-0.0``; the slope is 0 (floor has none)."""
    if x.dtype != "float64":
        return x
    below = B.apply("floor", x)
    frac = B.sub(x, below)
    odd = B.apply("ne", B.apply("mod", below, constant(2.0)), B.ZERO)
    up = B.logical_or(
        B.apply("gt", frac, constant(0.5)),
        B.logical_and(B.apply("eq", frac, constant(0.5)), odd),
    )
    return B.apply("copysign", B.add(below, B.select(up, B.ONE, B.ZERO)), x)


def _round(a: Value, decimals: Value | None = None, out: Value | None = None) -> Node:
    """``np.round``/``np.around``: NumPy scales by ``10**decimals``, rounds half
    to even and scales back (so ``np.round(2.675, 2)`` is ``2.67``, as NumPy)."""
    if not _none(out):
        raise Unsupported("np.round: `out` is not supported", "use the returned array")
    node = array(a)
    k = 0 if _none(decimals) else static_int(decimals, "`decimals`")  # type: ignore[arg-type]
    if node.dtype != "float64":
        if k >= 0:
            return node
        raise Unsupported(
            "np.round of integers with negative decimals is not supported",
            "round a float array: np.round(x * 1.0, -1)",
        )
    if k == 0:
        return _rint(node)
    scale = constant(10.0 ** abs(k))
    if k > 0:
        return B.div(_rint(B.mul(node, scale)), scale)
    return B.mul(_rint(B.div(node, scale)), scale)


def _fmod(a: Value, b: Value) -> Node:
    """``np.fmod``: the remainder with the sign of the dividend, C's ``fmod``.
    As ``copysign(|a| mod |b|, a)``: with both operands positive, Python's
    ``%`` is ``fmod`` exactly; ``a - b * trunc(a / b)`` would round ``a / b``."""
    x, y = array(a), array(b)
    if x.dtype != "float64" and y.dtype != "float64":
        raise Unsupported(
            "np.fmod of integers is not supported",
            "use floats: np.fmod(a * 1.0, b)",
        )
    magnitude = B.apply("mod", B.apply("abs", x), B.apply("abs", y))
    return B.apply("copysign", magnitude, x)


def _mod(a: Value, b: Value) -> Node:
    """``np.mod``/``np.remainder``: the sign of the divisor, Python's ``%``."""
    return B.apply("mod", array(a), array(b))


def _nan_to_num(
    x: Value,
    copy: Value | None = None,
    nan: Value | None = None,
    posinf: Value | None = None,
    neginf: Value | None = None,
) -> Node:
    """``np.nan_to_num``: NaN -> ``nan`` (0.0), inf -> ``posinf`` (the largest
    float), -inf -> ``neginf`` (the most negative); slope 1 elsewhere, 0 at the
    replaced elements."""
    node = array(x)
    if node.dtype != "float64":
        return node
    big = np.finfo(np.float64).max

    def number(v: Value | None, default: float, what: str) -> Node:
        if _none(v):
            return constant(default)
        n = array(v, what)
        if n.shape:
            raise Unsupported(f"np.nan_to_num: `{what}` must be a number")
        return B.to_float(n)

    inf = constant(math.inf)
    out = B.select(B.apply("ne", node, node), number(nan, 0.0, "nan"), node)
    out = B.select(B.apply("eq", node, inf), number(posinf, big, "posinf"), out)
    low = number(neginf, -big, "neginf")
    return B.select(B.apply("eq", node, B.neg(inf)), low, out)


def _where(cond: Value, a: Value | None = None, b: Value | None = None) -> Node:
    if a is None or b is None:
        raise Unsupported(
            "np.where with one argument is not supported",
            "it returns indices, which have no derivative; use np.where(c, a, b)",
        )
    return B.select(B.truth(array(cond)), array(a), array(b))


def _clip(
    x: Value,
    lo: Value | None = None,
    hi: Value | None = None,
    *,
    a_min: Value | None = None,
    a_max: Value | None = None,
    min: Value | None = None,
    max: Value | None = None,
) -> Node:
    lo = next((v for v in (lo, a_min, min) if v is not None), Static(None))
    hi = next((v for v in (hi, a_max, max) if v is not None), Static(None))
    node = array(x)
    if not (isinstance(lo, Static) and lo.obj is None):
        node = B.apply("max", node, array(lo))
    if not (isinstance(hi, Static) and hi.obj is None):
        node = B.apply("min", node, array(hi))
    return node


def _expand_dims(x: Value, axis: Value) -> Node:
    """``np.expand_dims``: an axis of length 1 at each position ``axis`` names
    (one, or a tuple of positions in the result, as NumPy counts them)."""
    node = array(x)
    rank = len(node.shape) + (len(axis) if isinstance(axis, tuple) else 1)
    try:
        new = axes_arg(axis, rank) if isinstance(axis, tuple) else None
    except Unsupported as exc:
        raise Unsupported(f"np.expand_dims: {exc.message}", exc.hint) from None
    if new is None:
        ax = static_int(axis, "`axis`")
        if not -rank <= ax < rank:
            raise Unsupported(
                f"np.expand_dims: axis {ax} is out of bounds for an array of "
                f"dimension {rank}",
                "axes count from 0 up to the dimension minus 1, or from -1 backwards",
            )
        new = (ax % rank,)
    rest = iter(node.shape)
    return A.reshape(node, tuple(1 if a in new else next(rest) for a in range(rank)))


def _squeeze(x: Value, axis: Value | None = None) -> Node:
    node = array(x)
    if axis is None:
        return A.reshape(node, tuple(d for d in node.shape if d != 1))
    axes = axes_arg(axis, len(node.shape))
    for a in axes:
        if node.shape[a] != 1:
            raise Unsupported(
                "cannot select an axis to squeeze out which has size not equal to one",
                "squeeze only axes of length 1",
            )
    return A.reshape(node, tuple(d for i, d in enumerate(node.shape) if i not in axes))


def _logical(op: str) -> Builder:
    def build(x: Value, axis: Value | None = None) -> Node:
        node = B.truth(array(x))
        axes = axes_arg(axis, len(node.shape))
        total = A.reduce("sum", B.to_int(node), axes)
        if op == "any":
            return B.apply("gt", total, constant(0))
        count = S.product([node.shape[a] for a in axes])
        return B.apply("eq", total, A.dim(count))

    return build


def _logical_binary(combine: Callable[[Node, Node], Node]) -> Builder:
    def build(a: Value, b: Value) -> Node:
        return combine(B.truth(array(a)), B.truth(array(b)))

    return build


# -- spread, differences, rearrangements, running totals -------------------------------
def _float_only(dtype: Value | None, out: Value | None, name: str) -> None:
    if _dtype(dtype, "float64") != "float64":
        raise Unsupported(
            f"{name}: `dtype` must be float", "leave dtype out: it computes in float64"
        )
    if not _none(out):
        raise Unsupported(f"{name}: `out` is not supported", "use the returned array")


def _var(
    a: Value,
    axis: Value | None = None,
    dtype: Value | None = None,
    out: Value | None = None,
    ddof: Value | None = None,
    keepdims: Value | None = None,
) -> Node:
    node = array(a)
    _float_only(dtype, out, "np.var")
    axes = axes_arg(axis, len(node.shape))
    ddof_ = 0 if _none(ddof) else length(ddof, "`ddof`")  # type: ignore[arg-type]
    return A.variance(node, axes, ddof_, flag(keepdims, "keepdims"))


def _std(
    a: Value,
    axis: Value | None = None,
    dtype: Value | None = None,
    out: Value | None = None,
    ddof: Value | None = None,
    keepdims: Value | None = None,
) -> Node:
    # sqrt of the variance, as NumPy and JAX compute it: where the variance is 0
    # (a constant slice, one element), the derivative is NaN, as JAX's is
    return B.apply("sqrt", _var(a, axis, dtype, out, ddof, keepdims))


def _axis_list(value: Value | int, rank: int, what: str) -> list[int]:
    """One axis or a tuple of them, each normalised (repeats kept)."""
    items = value if isinstance(value, tuple) else (value,)
    out = []
    for v in items:
        ax = v if isinstance(v, int) else static_int(v, "`axis`")
        if not -rank <= ax < rank:
            raise Unsupported(
                f"{what}: axis {ax} is out of bounds for an array of dimension {rank}",
                "axes count from 0 up to the dimension minus 1, or from -1 backwards",
            )
        out.append(ax % rank)
    return out


def _diff(
    a: Value,
    n: Value | None = None,
    axis: Value | None = None,
    prepend: Value | None = None,
    append: Value | None = None,
) -> Node:
    node = array(a)
    if not node.shape:
        raise Unsupported(
            "np.diff needs an array of at least one dimension",
            "differences of numbers: write b - a",
        )
    times = 1 if n is None else static_int(n, "np.diff's `n`")
    if times < 0:
        raise Unsupported(
            f"np.diff: order must be non-negative but got {times}", "use n >= 0"
        )
    if times == 0:
        return node
    (ax,) = _axis_list(-1 if axis is None else axis, len(node.shape), "np.diff")
    pieces = []
    for value, before in ((prepend, True), (append, False)):
        if value is None or _none(value):
            continue
        edge = array(value, "`prepend`" if before else "`append`")
        if not edge.shape:  # a number stands for a slice of length 1
            edge = A.full(
                edge, tuple(1 if i == ax else d for i, d in enumerate(node.shape))
            )
        pieces.append((before, edge))
    if pieces:
        node = A.concat(
            [e for b, e in pieces if b] + [node] + [e for b, e in pieces if not b], ax
        )
    for _ in range(times):
        node = A.difference(node, ax)
    return node


def _flip(m: Value, axis: Value | None = None) -> Node:
    node = array(m)
    return A.flip(node, axes_arg(axis, len(node.shape)))


def _flip_axis(axis: int, name: str) -> Builder:
    def build(m: Value) -> Node:
        node = array(m)
        if len(node.shape) <= axis:
            raise Unsupported(
                f"{name}: the array must have at least {axis + 1} dimension"
                + ("s" if axis else ""),
                "np.flip(x, axis) flips any axis",
            )
        return A.flip(node, (axis,))

    return build


def _roll(a: Value, shift: Value, axis: Value | None = None) -> Node:
    node = array(a)
    shifts = shift if isinstance(shift, tuple) else (shift,)
    amounts = [length(s, "np.roll's shift") for s in shifts]
    if axis is None or _none(axis):
        if len(amounts) != 1:
            raise Unsupported(
                "np.roll: one shift without `axis`", "name the axes: axis=(0, 1)"
            )
        flat = A.roll(_flat(node), amounts[0], 0)  # NumPy rolls the flattened array
        return A.reshape(flat, node.shape)
    axes = _axis_list(axis, len(node.shape), "np.roll")
    if len(amounts) == 1:
        amounts *= len(axes)
    elif len(axes) == 1:
        axes *= len(amounts)
    if len(axes) != len(amounts):
        raise Unsupported(
            "np.roll: `shift` and `axis` must have the same length",
            "one shift per axis: np.roll(x, (1, -1), axis=(0, 1))",
        )
    for ax, k in zip(axes, amounts, strict=True):
        node = A.roll(node, k, ax)  # the same axis twice rolls by the sum
    return node


def _diag(v: Value, k: Value | None = None) -> Node:
    node = array(v)
    offset = 0 if k is None else static_int(k, "np.diag's `k`")
    if len(node.shape) == 1:
        return A.diagonal_matrix(node, offset)
    if len(node.shape) == 2:
        return A.diagonal(node, offset)
    raise Unsupported(
        "np.diag: the input must be 1-D (a diagonal) or 2-D (a matrix)",
        "for a stack of matrices: np.sum(A * np.eye(n), axis=-1)",
    )


def _running(op: str, name: str) -> Builder:
    def build(
        a: Value,
        axis: Value | None = None,
        dtype: Value | None = None,
        out: Value | None = None,
    ) -> Node:
        node = array(a)
        if not _none(dtype) or not _none(out):
            raise Unsupported(
                f"{name}: `dtype` and `out` are not supported",
                "leave them out: it computes in the array's dtype",
            )
        if axis is None or _none(axis):
            node, ax = _flat(node), 0  # NumPy runs over the flattened array
        else:
            ax = _axis_list(axis, len(node.shape), name)[0]
        return A.running(op, node, ax, name)

    return build


def _take(
    a: Value, indices: Value, axis: Value | None = None, out: Value | None = None
) -> Node:
    """``np.take``: ``a[..., indices]`` along ``axis`` (of the flattened array
    without one), NumPy's advanced indexing."""
    if not _none(out):
        raise Unsupported("np.take: `out` is not supported", "leave it out")
    node = array(a)
    if axis is None or _none(axis):
        node, ax = _flat(node), 0
    else:
        ax = _axis_list(axis, len(node.shape), "np.take")[0]
    if not is_array_index(indices):
        indices = array(indices, "np.take's `indices`")
    key = (*(Static(SliceValue(None, None, None)),) * ax, indices)
    return index(node, key)


def _builtin_sum(iterable: Value, start: Value | None = None) -> Node:
    """Python's ``sum``: of an array, its rows added (``np.sum(x, axis=0)``); of
    a tuple or list, its items added to ``start``."""
    total = constant(0) if start is None else array(start, "`start`")
    if isinstance(iterable, Node) and iterable.shape:
        return B.add(total, A.reduce("sum", iterable, (0,)))
    if isinstance(iterable, tuple) and all(isinstance(v, Node) for v in iterable):
        for item in iterable:
            total = B.add(total, item)  # type: ignore[arg-type]
        return total
    what = "a number" if isinstance(iterable, Node) else "this value"
    raise Unsupported(
        f"`sum` of {what} is not supported: it adds the items of an array, "
        "a tuple or a list",
        "use np.sum(x) to add every element of an array",
    )


def _np_copy(value: Value, order: Value | None = None) -> Node:
    """``np.copy(x)``: a new array (arrays are values here; no view is made)."""
    return array(value)


def _np_shape(value: Value) -> Value:
    node = array(value)
    return tuple(A.dim(d) for d in node.shape)


def _np_ndim(value: Value) -> Node:
    return constant(len(array(value).shape))


def _np_size(value: Value, axis: Value | None = None) -> Node:
    node = array(value)
    if _none(axis):
        return A.dim(S.product(node.shape))
    k = static_int(axis, "the axis of np.size")  # type: ignore[arg-type]
    if not -len(node.shape) <= k < len(node.shape):
        raise Unsupported(
            f"axis {k} is out of bounds for an array of dimension {len(node.shape)}"
        )
    return A.dim(node.shape[k])


_NUMPY: dict[str, Builder] = {
    "copy": _np_copy,
    "shape": _np_shape,
    "ndim": _np_ndim,
    "size": _np_size,
    "logical_and": _logical_binary(B.logical_and),
    "logical_or": _logical_binary(B.logical_or),
    "logical_not": lambda a: B.logical_not(B.truth(array(a))),
    "prod": _reduction("prod"),
    "max": _extreme("amax"),
    "amax": _extreme("amax"),
    "min": _extreme("amin"),
    "amin": _extreme("amin"),
    "dot": _np_dot,
    "matmul": _matmul,
    "outer": _outer,
    "inner": _inner,
    "vdot": _vdot,
    "trace": _trace,
    "transpose": _transpose,
    "reshape": _np_reshape,
    "ravel": _ravel,
    "tril": _tri(True),
    "triu": _tri(False),
    "concatenate": _concatenate,
    "stack": _stack,
    "hstack": _joined("np.hstack", 1, lambda xs: 0 if len(xs[0].shape) == 1 else 1),
    "vstack": _joined("np.vstack", 2, lambda xs: 0),
    "row_stack": _joined("np.row_stack", 2, lambda xs: 0),
    "dstack": _joined("np.dstack", 3, lambda xs: 2),
    "column_stack": _joined("np.column_stack", -2, lambda xs: 1),
    "atleast_1d": _at_least(1, "np.atleast_1d"),
    "atleast_2d": _at_least(2, "np.atleast_2d"),
    "atleast_3d": _at_least(3, "np.atleast_3d"),
    "zeros": _filled(0.0),
    "empty": _filled(0.0),  # its values are never read before they are written
    "ones": _filled(1.0),
    "full": _full,
    "var": _var,
    "std": _std,
    "diff": _diff,
    "flip": _flip,
    "fliplr": _flip_axis(1, "np.fliplr"),
    "flipud": _flip_axis(0, "np.flipud"),
    "roll": _roll,
    "diag": _diag,
    "take": _take,
    "cumsum": _running("add", "np.cumsum"),
    "cumprod": _running("mul", "np.cumprod"),
    "zeros_like": _like(0.0),
    "ones_like": _like(1.0),
    "empty_like": _like(0.0),
    "full_like": _like(None),
    "arange": _arange,
    "linspace": _linspace,
    "einsum": _einsum,
    "tile": _tile,
    "repeat": _repeat,
    "float64": _float64,
    "float32": _float32,
    "round": _round,
    "around": _round,
    "rint": lambda x: _rint(array(x)),
    "trunc": lambda x: _trunc(array(x)),
    "fix": lambda x: _trunc(array(x)),
    "mod": _mod,
    "remainder": _mod,
    "fmod": _fmod,
    "logspace": _logspace,
    "eye": _eye,
    "array": _np_array,
    "asarray": _np_array,
    "where": _where,
    "clip": _clip,
    "expand_dims": _expand_dims,
    "squeeze": _squeeze,
    "any": _logical("any"),
    "all": _logical("all"),
    "nan_to_num": _nan_to_num,
}

FUNCTIONS: dict[int, tuple[str, Builder]] = {
    id(getattr(np, name)): (f"np.{name}", build)
    for name, build in _NUMPY.items()
    if hasattr(np, name)
}
FUNCTIONS[id(np.linalg.norm)] = ("np.linalg.norm", _norm)
FUNCTIONS[id(builtins.sum)] = ("sum", _builtin_sum)


# -- methods and attributes ------------------------------------------------------------
def _method_reshape(x: Node, *shape: Value) -> Node:
    if len(shape) == 1 and isinstance(shape[0], tuple):
        return reshape(x, shape[0])  # type: ignore[arg-type]
    return reshape(x, shape)  # type: ignore[arg-type]


def _method_transpose(x: Node, *axes: Value) -> Node:
    if not axes:
        return A.transpose(x)
    return _transpose(x, axes[0] if len(axes) == 1 else tuple(axes))


#: Array methods built here (``.sum()`` and ``.mean()``, with ``where=``, are in
#: :mod:`symdiff.frontend.more_numpy`).
METHODS: dict[str, Builder] = {
    "prod": _reduction("prod"),
    "max": _extreme("amax"),
    "min": _extreme("amin"),
    "var": _var,
    "std": _std,
    "cumsum": _running("add", ".cumsum()"),
    "cumprod": _running("mul", ".cumprod()"),
    "dot": _np_dot,
    "reshape": _method_reshape,
    "ravel": _ravel,
    "flatten": _ravel,
    "transpose": _method_transpose,
    "copy": lambda x: x,
    "astype": _astype,
    "repeat": _repeat,
    "round": _round,
    "take": _take,
    "any": _logical("any"),
    "all": _logical("all"),
    "clip": _clip,
}


def attribute(x: Node, name: str) -> Value:
    """``x.shape``, ``x.T``, ``x.ndim``, ``x.size``; KeyError if unknown."""
    if name == "shape":
        return tuple(A.dim(d) for d in x.shape)
    if name == "T":
        return A.transpose(x)
    if name == "ndim":
        return constant(len(x.shape))
    if name == "size":
        return A.dim(S.product(x.shape))
    raise KeyError(name)


# -- indexing --------------------------------------------------------------------------
def _is_static(item: Value) -> bool:
    """Whether an integer index is known from shapes and arguments alone."""
    if not isinstance(item, Node) or item.shape or item.dtype != "int64":
        return True
    try:
        length(item)
    except Unsupported:
        return False
    return True


def _expand(x: Node, items: list[Value]) -> list[Value]:
    """Index items with ``...`` expanded and missing trailing axes filled with ``:``."""
    full = Static(SliceValue(None, None, None))
    n_real = sum(
        1 for i in items if not (isinstance(i, Static) and i.obj in (None, Ellipsis))
    )
    out: list[Value] = []
    for i in items:
        if isinstance(i, Static) and i.obj is Ellipsis:
            out.extend([full] * (len(x.shape) - n_real))
        else:
            out.append(i)
    while len(out) < len(x.shape):
        out.append(full)
    return out


def dynamic_spec(x: Node, key: Value, what: str = "indexing") -> tuple[Any, list[Node]]:
    """The spec and index operands of ``x[key]`` with run-time integer positions
    (``x[i]``, ``X[i, :]``, ``acc[i, 1:3]``); slices need constant bounds."""
    items = _expand(x, list(key) if isinstance(key, tuple) else [key])
    if len(items) > len(x.shape):
        raise Unsupported(
            f"too many indices for an array of dimension {len(x.shape)}",
            "give at most one index per axis",
        )
    spec: list[tuple[Any, ...]] = []
    index: list[Node] = []
    for axis, item in enumerate(items):
        if (
            isinstance(item, Node)
            and not item.shape
            and item.dtype in ("int64", "bool")
        ):
            spec.append(("at", len(index)))
            index.append(item)
            continue
        if isinstance(item, Static) and isinstance(item.obj, SliceValue):
            sl = item.obj
            if _none(sl.start) and _none(sl.stop) and _none(sl.step):
                spec.append(("all",))
                continue
            entry = _slice(sl, x.shape[axis], axis)
            if entry[3] != 1:
                raise Unsupported(
                    f"{what} with a run-time index and a stepped slice is not "
                    "supported",
                    "use a slice with step 1, or a loop over the positions",
                )
            spec.append(("span", entry[1], entry[2]))
            continue
        raise Unsupported(
            f"{what}: with a run-time index, the other indices must be integers "
            "or slices",
            "drop `None` here and reshape the result instead",
        )
    return tuple(spec), index


def is_array_index(item: Value) -> bool:
    return isinstance(item, tuple) or (isinstance(item, Node) and bool(item.shape))


def _linear(node: Node) -> tuple[dict[Node, int], int]:
    """``node`` as ``sum(c * leaf) + k`` over ``+``, ``-`` and products by int
    constants (the leaves: everything else), walked with a stack."""
    terms: dict[Node, int] = {}
    offset = 0
    stack = [(node, 1)]
    while stack:
        n, c = stack.pop()
        if n.op == "const" and n.dtype in ("int64", "bool"):
            offset += c * int(n.value)
        elif n.op == "add":
            stack += [(n.args[0], c), (n.args[1], c)]
        elif n.op == "sub":
            stack += [(n.args[0], c), (n.args[1], -c)]
        elif n.op == "neg":
            stack.append((n.args[0], -c))
        elif n.op == "mul" and n.args[0].op == "const" and n.args[0].dtype == "int64":
            stack.append((n.args[1], c * int(n.args[0].value)))
        elif n.op == "mul" and n.args[1].op == "const" and n.args[1].dtype == "int64":
            stack.append((n.args[0], c * int(n.args[1].value)))
        else:
            terms[n] = terms.get(n, 0) + c
    return {n: c for n, c in terms.items() if c}, offset


def _window(sl: SliceValue, axis: int) -> Node | None:
    """The positions ``start + step * arange(size)`` of a slice whose start is
    known only when the kernel runs (a loop variable) but whose length follows
    from constants and shapes (``x[i:i + 3]``, ``x[i:i + len(w)]``); None for
    any other slice."""
    start, stop = sl.start, sl.stop
    if not (
        isinstance(start, Node)
        and isinstance(stop, Node)
        and not start.shape
        and not stop.shape
        and start.dtype == stop.dtype == "int64"
    ):
        return None
    if _is_static(start) and _is_static(stop):
        return None  # a slice of constants and shapes
    step = 1 if _none(sl.step) else static_int(sl.step, "a slice step")  # type: ignore[arg-type]
    if step <= 0:
        raise Unsupported(
            "a slice with a run-time start needs a positive step",
            "loop over the positions and index with `x[i]`",
        )
    low, low_k = _linear(start)
    high, high_k = _linear(stop)
    for n, c in low.items():
        high[n] = high.get(n, 0) - c
    width: Node = B.constant(high_k - low_k)
    for n, c in high.items():
        if c:
            width = B.add(width, B.mul(B.constant(c), n))
    try:
        span = length(width, "a slice")
    except Unsupported:
        raise Unsupported(
            f"the length of a slice on axis {axis} must follow from constants and "
            "shapes (a window `x[i:i + 3]` may start at a run-time index)",
            "give the slice a fixed length: x[i:i + n] with n from constants, "
            "len(x) or int arguments",
        ) from None
    size = S.cdiv(span, step)
    if isinstance(size, int) and size < 0:
        size = 0  # x[i:i - 1]: empty, as in NumPy
    offsets = A.arange(size)
    if step != 1:
        offsets = B.mul(B.constant(step), offsets)
    return B.add(start, offsets)


def windows(key: Value) -> Value:
    """``key`` with each window slice (:func:`_window`) replaced by its positions,
    an index array shaped to its own axis, so that several adjacent windows
    (``x[i:i + 3, j:j + 3]``) read a block, as slices do; ``key`` itself when it
    has none."""
    items = list(key) if isinstance(key, tuple) else [key]
    found: dict[int, Node] = {}
    for k, item in enumerate(items):
        if isinstance(item, Static) and isinstance(item.obj, SliceValue):
            positions = _window(item.obj, k)
            if positions is not None:
                found[k] = positions
    if not found:
        return key
    picked = [
        k
        for k, item in enumerate(items)
        if k in found or (isinstance(item, Node) and not item.shape)
    ]
    if any(is_array_index(i) for i in items) or picked != list(
        range(picked[0], picked[-1] + 1)
    ):
        raise Unsupported(
            "a slice with a run-time start goes with `:`, constant slices and "
            "integers next to it, not with index arrays or integers across a `:`",
            "take the window first, then index it: w = x[i:i + 3]; w[idx]",
        )
    order = sorted(found)
    for j, k in enumerate(order):
        shape = [1] * len(order)
        shape[j] = found[k].shape[0]
        items[k] = A.reshape(found[k], tuple(shape)) if len(order) > 1 else found[k]
    return tuple(items) if isinstance(key, tuple) else items[0]


def index(x: Node, key: Value) -> Node:
    """``x[key]`` for integers, slices, ``None`` and ``...`` (basic indexing), and
    for integer arrays and lists (advanced indexing, :func:`_advanced_index`);
    a window ``x[i:i + 3]`` is read as the index array of its positions."""
    key = windows(key)
    items = list(key) if isinstance(key, tuple) else [key]
    if any(is_array_index(i) for i in items):
        return _advanced_index(x, items)
    if not all(_is_static(i) for i in items):
        spec, positions = dynamic_spec(x, key)
        return A.take(x, spec, positions)
    n_real = sum(
        1 for i in items if not (isinstance(i, Static) and i.obj in (None, Ellipsis))
    )
    if n_real > len(x.shape):
        raise Unsupported(
            f"too many indices for an array of dimension {len(x.shape)}",
            "give at most one index per axis",
        )
    ellipsis = [
        k for k, i in enumerate(items) if isinstance(i, Static) and i.obj is Ellipsis
    ]
    if len(ellipsis) > 1:
        raise Unsupported(
            "an index can only have a single ellipsis ('...')", "keep one `...`"
        )
    if ellipsis:
        k = ellipsis[0]
        fill = [Static(SliceValue(None, None, None))] * (len(x.shape) - n_real)
        items = items[:k] + fill + items[k + 1 :]  # type: ignore[operator]
    while sum(1 for i in items if not (isinstance(i, Static) and i.obj is None)) < len(
        x.shape
    ):
        items.append(Static(SliceValue(None, None, None)))
    spec: list[tuple[Any, ...]] = []
    axis = 0
    for item in items:
        if isinstance(item, Static) and item.obj is None:
            spec.append(("new",))
            continue
        n = x.shape[axis]
        if isinstance(item, Static) and isinstance(item.obj, SliceValue):
            spec.append(_slice(item.obj, n, axis))
        elif isinstance(item, Node) and not item.shape and item.dtype == "int64":
            spec.append(("int", _position(item, n, axis)))
        elif isinstance(item, Node) and not item.shape and item.dtype == "float64":
            raise Unsupported(
                "array indices must be integers, and this one is a float",
                "use an int (`int(i)` truncates); an int argument listed in argnums "
                "is differentiated as a real number: leave it out of argnums",
            )
        else:
            raise Unsupported(
                "array indices must be integers, slices, None or `...`",
                "compute integer indices from constants and shapes",
            )
        axis += 1
    return A.getitem(x, tuple(spec))


@dataclass(frozen=True)
class _Advanced:
    """How ``x[key]`` with index arrays reads ``x``: ``x`` transposed by ``perm``
    (the indexed axes first), read at ``index`` (flattened to one length, or
    numbers; ``wrap`` where an entry may be negative), giving rows of shape
    ``(*shape, *rest)``, then transposed by ``place``."""

    perm: tuple[int, ...]
    index: list[Node]
    wrap: list[bool]
    shape: Shape
    place: tuple[int, ...]


def _plan_advanced(x: Node, items: list[Value], what: str) -> _Advanced:
    """NumPy's advanced indexing by integer arrays (and lists) on some axes, with
    integers and ``:`` on the others.  The index arrays broadcast together; their
    shape replaces the indexed axes, in place when those axes are adjacent, else
    in front (NumPy's rule)."""
    if any(isinstance(i, Static) and i.obj is None for i in items):
        raise Unsupported(
            f"{what}: `None` together with an index array is not supported",
            "index first, then add the axis: np.expand_dims(x[idx], 0)",
        )
    items = _expand(x, items)
    if len(items) > len(x.shape):
        raise Unsupported(
            f"too many indices for an array of dimension {len(x.shape)}",
            "give at most one index per axis",
        )
    picked: dict[int, Node] = {}
    for axis, item in enumerate(items):
        if isinstance(item, Static):
            sl = item.obj
            if not (
                isinstance(sl, SliceValue)
                and _none(sl.start)
                and _none(sl.stop)
                and _none(sl.step)
            ):
                raise Unsupported(
                    f"{what}: with an index array, the other indices must be "
                    "integers or `:`",
                    "slice first, then index the result: y = x[:, 1:]; y[idx]",
                )
            continue
        node = array(item, "an index")
        if node.dtype == "bool" and constant_mask(node) is not None:
            node = _mask_positions(node, x.shape[axis], axis)
        if node.dtype == "bool":
            raise Unsupported(
                f"{what} with a boolean mask is not supported: the result's "
                "length would depend on the values",
                "keep the shape and zero the rest: np.where(mask, x, 0.0) "
                "(np.sum(np.where(mask, x, 0.0)) sums the selected elements)",
            )
        if node.dtype != "int64":
            raise Unsupported(
                "arrays used as indices must be of integer type",
                "pass the positions as an int array (np.array([0, 2])), or "
                "compute them with np.arange",
            )
        n = x.shape[axis]
        for value in _constant_positions(node):
            if isinstance(n, int) and not -n <= value < n:
                raise Unsupported(
                    f"index {value} is out of bounds for axis {axis} with size {n}",
                    "index within the axis: 0 to its length minus 1, or from -1",
                )
        if node.op == "param" and node.shape:
            # an index array passed in: its extremes are checked when the kernel
            # runs, as NumPy checks every position (the loop reads unchecked)
            outside = (
                f"an index in `{S.format_dim(S.atom('value', node.attrs[0]))}` is "
                f"out of bounds for axis {axis} with size {S.format_dim(n)}"
            )
            S.require_less(S.atom("amax", node.attrs[0]), n, outside)
            S.require_less(S.sub(S.neg(n), 1), S.atom("amin", node.attrs[0]), outside)
        picked[axis] = node
    axes = sorted(picked)
    rest = [a for a in range(len(x.shape)) if a not in picked]
    shape = S.broadcast([picked[a].shape for a in axes], lambda: "the index arrays")
    size = S.product(shape)
    index, wrap = [], []
    for a in axes:
        node = picked[a]
        if node.shape:
            node = A.reshape(B.broadcast_to(node, shape), (size,))
        index.append(node)
        wrap.append(not _non_negative(node))
    place = tuple(range(len(shape) + len(rest)))
    if axes == list(range(axes[0], axes[-1] + 1)) and axes[0] > 0:
        # adjacent indexed axes: their result axes stay where they were
        b = list(range(len(shape)))
        after = list(range(len(shape), len(place)))
        place = (*after[: axes[0]], *b, *after[axes[0] :])
    return _Advanced((*axes, *rest), index, wrap, shape, place)


def _advanced_index(x: Node, items: list[Value]) -> Node:
    """``x[idx]``, ``P[np.arange(n), labels]``, ``X[:, [0, 2]]``: the rows of
    :func:`symdiff.ir.arrays.gather`, shaped as NumPy shapes them."""
    full = Static(SliceValue(None, None, None))
    if not any(isinstance(i, Static) and i.obj is None for i in items):
        items = _expand(x, items)
        if len(items) <= len(x.shape) and any(
            isinstance(i, Static) and i != full for i in items
        ):
            # the slices first, every axis kept (``X[1:, idx]``)
            x = index(x, tuple(i if isinstance(i, Static) else full for i in items))
            items = [full if isinstance(i, Static) else i for i in items]
    plan = _plan_advanced(x, items, "indexing")
    source = A.transpose(x, plan.perm)
    rows = A.gather(source, plan.index, plan.wrap, "advanced indexing")
    rows = A.reshape(rows, (*plan.shape, *source.shape[len(plan.index) :]))
    return A.transpose(rows, plan.place)


#: How an element assignment combines: "set" (``=``), "add" (``+=``), or for a
#: boolean mask, the operation of another augmented assignment (``*=``).
MaskMode = str | Callable[[Node, Node], Node]


def advanced_update(
    x: Node, key: Value, value: Node, mode: MaskMode, aligned: bool = False
) -> Node:
    """``x[idx] = v`` and ``x[idx] += v`` with index arrays, as NumPy does them:
    a position given twice keeps the last value written, and ``+=`` reads every
    position before writing (``x[idx] = x[idx] + v``: a repeated position adds
    ``v`` once; ``np.add.at`` would add it each time)."""
    items = list(key) if isinstance(key, tuple) else [key]
    if not aligned:  # y[[True, False, True]] = v: the positions it selects
        items = [
            _mask_positions(n, x.shape[k], k)
            if is_array_index(i)
            and (n := array(i, "an index")).dtype == "bool"
            and constant_mask(n) is not None
            and k < len(x.shape)
            else i
            for k, i in enumerate(items)
        ]
        key = tuple(items) if isinstance(key, tuple) else items[0]
    if any(is_array_index(i) and array(i, "an index").dtype == "bool" for i in items):
        return mask_update(x, items, value, mode, aligned)
    plan = _plan_advanced(x, items, "element assignment")
    source = A.transpose(x, plan.perm)
    k = len(plan.index)
    result = tuple(
        (*plan.shape, *source.shape[k:])[a] for a in plan.place
    )  # the shape of x[key]
    if value.shape != result:
        S.broadcast([result, value.shape], lambda: "in element assignment")
        if not broadcasts_to(value.shape, result):
            raise Unsupported(
                f"could not broadcast the value of shape "
                f"{S.format_shape(value.shape)} into the indexed elements, of "
                f"shape {S.format_shape(result)}",
                "assign a value of the indexed elements' shape, or a number",
            )
        value = B.broadcast_to(value, result)
    rows = A.transpose(value, A.inverse(plan.place))
    rows = A.reshape(rows, (S.product(plan.shape), *source.shape[k:]))
    if mode == "add":
        rows = B.add(A.gather(source, plan.index, plan.wrap, "advanced indexing"), rows)
    updated = A.scatter_rows(source, rows, plan.index, plan.wrap, "element assignment")
    return A.transpose(updated, A.inverse(plan.perm))


def broadcasts_to(shape: S.Shape, target: S.Shape) -> bool:
    """Whether an array of ``shape`` broadcasts to ``target`` without stretching
    it (lengths of both that differ are assumed equal, as S.broadcast records)."""
    if len(shape) > len(target):
        return all(d == 1 for d in shape[: len(shape) - len(target)]) and (
            broadcasts_to(shape[len(shape) - len(target) :], target)
        )
    return all(
        not (t == 1 and d != 1)
        for d, t in zip(reversed(shape), reversed(target), strict=False)
    )


def add_at(x: Node, items: list[Value], value: Node, what: str) -> Node:
    """``np.add.at(x, key, value)`` with index arrays: ``value`` broadcast to
    ``x[key]`` and added at each position as often as it is given."""
    if any(is_array_index(i) and array(i, "an index").dtype == "bool" for i in items):
        raise Unsupported(
            f"`{what}` with a boolean mask is not supported",
            "a mask gives each position once: write `x[mask] += v`",
        )
    plan = _plan_advanced(x, items, what)
    source = A.transpose(x, plan.perm)
    k = len(plan.index)
    result = tuple((*plan.shape, *source.shape[k:])[a] for a in plan.place)
    if value.shape != result:
        S.broadcast([result, value.shape], lambda: f"in {what}")
        if not broadcasts_to(value.shape, result):
            raise Unsupported(
                f"{what}: could not broadcast the values of shape "
                f"{S.format_shape(value.shape)} to the indexed elements, of shape "
                f"{S.format_shape(result)}",
                "give one value per position, or a number",
            )
        value = B.broadcast_to(value, result)
    rows = A.transpose(value, A.inverse(plan.place))
    rows = A.reshape(rows, (S.product(plan.shape), *source.shape[k:]))
    updated = A.scatter_rows(source, rows, plan.index, plan.wrap, what, mode="add")
    return A.transpose(updated, A.inverse(plan.perm))


def mask_update(
    x: Node,
    items: list[Value],
    value: Node,
    mode: MaskMode,
    aligned: bool = False,
) -> Node:
    """``x[mask] = v`` (``mode`` "set"), ``x[mask] += v`` ("add") or, for another
    augmented assignment, ``mode`` the operation (``x[mask] *= v``): a select
    between the new and the old values, so the array keeps its shape.

    ``mask`` covers some axes of ``x`` (``:`` or ``...`` on the others).  NumPy
    broadcasts ``v`` to ``x[mask]``, whose masked axes are one axis of a length
    known only from the values: ``v`` must have length 1 (or none) there, and
    then the select is exactly NumPy's update.  ``aligned``: the value is an
    array read at the same mask (``x[mask] = v[mask]``), so ``v`` itself is
    taken where the mask holds."""
    mask, before, after = mask_axes(x, items)
    k = len(mask.shape)
    if aligned:
        return _mask_select(x, mask, after, _aligned(x, value, mask, before), mode)
    # v broadcast to x[mask] (one axis for the masked ones), then back to x's axes
    width = before + 1 + after
    if len(value.shape) > width:
        raise Unsupported(
            f"could not broadcast the value of shape {S.format_shape(value.shape)} "
            f"into the masked elements (an array of {width} dimension"
            f"{'s' if width > 1 else ''})",
            "assign a number, or an array of the shape of the unmasked axes",
        )
    padded = (1,) * (width - len(value.shape)) + value.shape
    if padded[before] != 1:
        raise Unsupported(
            "element assignment with a boolean mask: a value with one entry per "
            "selected element depends on how many elements the mask selects",
            "assign a number, or write the whole array: x = np.where(mask, values, x)",
        )
    spread = A.reshape(value, (*padded[:before], *(1,) * k, *padded[before + 1 :]))
    if S.broadcast([x.shape, spread.shape], lambda: "in element assignment") != x.shape:
        raise Unsupported(
            f"could not broadcast the value of shape {S.format_shape(value.shape)} "
            f"into the masked elements of an array of shape {S.format_shape(x.shape)}",
            "assign a number, or an array of the shape of the unmasked axes",
        )
    return _mask_select(x, mask, after, spread, mode)


def _aligned(x: Node, value: Node, mask: Node, before: int) -> Node:
    """``v`` of ``x[mask] = v[mask]``: of ``x``'s dimension, the mask's shape on
    the masked axes, broadcasting to ``x``'s shape on the others."""
    if len(value.shape) != len(x.shape):
        raise Unsupported(
            "element assignment with a boolean mask: `x[mask] = v[mask]` needs "
            "`v` of the dimension of `x`",
            "write the whole array: x = np.where(mask, v, x)",
        )
    for j, d in enumerate(mask.shape):
        S.unify(
            value.shape[before + j],
            d,
            f"boolean index did not match indexed array along axis {before + j}",
        )
    if S.broadcast([x.shape, value.shape], lambda: "in element assignment") != x.shape:
        raise Unsupported(
            f"could not broadcast the masked elements of an array of shape "
            f"{S.format_shape(value.shape)} into those of shape "
            f"{S.format_shape(x.shape)}",
            "write the whole array: x = np.where(mask, v, x)",
        )
    return value


def _mask_select(
    x: Node,
    mask: Node,
    after: int,
    spread: Node,
    mode: MaskMode,
) -> Node:
    """``x`` with ``spread`` (or ``x`` combined with it, by ``mode``) where the
    mask holds."""
    if mode == "add":
        spread = B.add(x, spread)
    elif callable(mode):
        spread = mode(x, spread)
    if spread.dtype != x.dtype:
        spread = _cast(spread, x.dtype)
    where = A.reshape(B.truth(mask), (*mask.shape, *(1,) * after))
    return B.select(where, spread, x)


def mask_axes(
    x: Node, items: list[Value], what: str = "element assignment"
) -> tuple[Node, int, int]:
    """The mask of ``x[..., mask, ...]`` and how many axes of ``x`` come before
    and after the ones it covers (its shape is checked against theirs)."""
    full = SliceValue(None, None, None)
    masks = [k for k, i in enumerate(items) if is_array_index(i)]
    if len(masks) != 1 or any(
        not (isinstance(i, Static) and (i.obj == full or i.obj is Ellipsis))
        for k, i in enumerate(items)
        if k != masks[0]
    ):
        raise Unsupported(
            f"{what} with a boolean mask: the other indices must be `:` or `...`",
            "combine the conditions into one mask of the array's shape: "
            "x[(x > 0) & (np.arange(n) < 3)] = 0.0",
        )
    mask = array(items[masks[0]], "a mask")
    rank, k = len(x.shape), len(mask.shape)
    dots = [
        j for j, i in enumerate(items) if isinstance(i, Static) and i.obj is Ellipsis
    ]
    named = len(items) - len(dots) - 1 + k  # the axes the index names
    if named > rank or len(dots) > 1:
        raise Unsupported(
            f"too many indices for an array of dimension {rank}"
            if named > rank
            else "an index can only have a single ellipsis ('...')",
            "give at most one index per axis",
        )
    before = masks[0]
    if dots and dots[0] < masks[0]:
        before += rank - named - 1  # `...` stands for the axes no index names
    after = rank - before - k
    for j, d in enumerate(mask.shape):
        S.unify(
            x.shape[before + j],
            d,
            f"boolean index did not match indexed array along axis {before + j}; "
            f"size of axis is {S.format_dim(x.shape[before + j])} but size of "
            f"corresponding boolean axis is {S.format_dim(d)}",
        )
    return mask, before, after


def _constant_positions(node: Node) -> list[int]:
    """The positions of a constant index array (a list or a global array), or
    none for one computed at run time."""
    while node.op == "reshape":
        node = node.args[0]
    if node.op == "const":
        return [int(node.value)]
    if node.op == "pack" and all(a.op == "const" for a in node.args):
        return [int(a.value) for a in node.args]
    return []


def constant_mask(node: Node) -> list[bool] | None:
    """The values of a one-dimensional boolean index known while tracing
    (``x[[True, False, True]]``, a global mask), else None."""
    if node.dtype != "bool" or len(node.shape) != 1:
        return None
    inner = node
    while inner.op == "reshape":
        inner = inner.args[0]
    if inner.op == "const":
        return [bool(inner.value)]
    if inner.op == "pack" and all(a.op == "const" for a in inner.args):
        return [bool(a.value) for a in inner.args]
    return None


def _mask_positions(node: Node, n: Length, axis: int) -> Node:
    """The positions a constant boolean index selects, as NumPy's
    ``np.flatnonzero``; its length must be the axis's."""
    flags = constant_mask(node)
    assert flags is not None
    message = (
        f"boolean index did not match indexed array along axis {axis}; size of "
        f"axis is {S.format_dim(n)} but size of corresponding boolean axis is "
        f"{len(flags)}"
    )
    if isinstance(n, int) and n != len(flags):
        raise Unsupported(message, "give the mask one entry per element")
    S.unify(n, len(flags), message)
    positions = [k for k, f in enumerate(flags) if f]
    if not positions:
        return A.arange(0)  # nothing selected: an empty index
    return A.pack([constant(k) for k in positions])


def _non_negative(node: Node) -> bool:
    """Whether an index array is known to hold no negative values (``np.arange``,
    constants, shapes): no wrap-around test is generated for it."""
    stack = [node]
    seen = 0
    while stack:
        n = stack.pop()
        seen += 1
        if seen > 64:
            return False
        if n.op in ("iota", "dim", "argsort"):
            continue
        if n.op == "const":
            if n.value < 0:
                return False
            continue
        if n.op in ("pack", "reshape", "broadcast", "transpose", "add", "mul"):
            stack.extend(n.args)
            continue
        if n.op in ("amin", "amax", "getitem", "take"):
            stack.append(n.args[0])  # elements of non-negative positions
            continue
        if n.op == "select":
            stack.extend(n.args[1:])  # both values, whatever the condition
            continue
        return False
    return True


def _position(item: Node, n: Length, axis: int) -> Length:
    i = length(item, "an index")
    what = (
        f"index {S.format_dim(i)} is out of bounds for axis {axis} with size "
        f"{S.format_dim(n)}"
    )
    if isinstance(i, int) and isinstance(n, int):
        if not -n <= i < n:
            raise Unsupported(
                what, "index within the axis: 0 to its length minus 1, or from -1"
            )
        return n + i if i < 0 else i
    if isinstance(i, int) and i < 0:
        S.require_less(-1, S.add(n, i), what)  # checked when the kernel runs
        return S.add(n, i)
    if not isinstance(i, int) and any(
        a[0] == "value" or c < 0 for m, c in i.terms if m for a in m
    ):
        # from an integer argument (``x[j]``, ``x[-k]``) or a shape subtracted
        # (``x[-len(x)]``): negative counts from the end, as in NumPy.  The
        # position (modulo the length) is in the array whatever ``i`` is, so
        # the check holds only where the code runs: ``if i < len(x): x[i]``
        # (both branches are computed; the one not taken reads some element)
        S.require_less(-1, S.add(n, i), what, conditional=True)
        S.require_less(i, n, what, conditional=True)
        # ... but an empty array has no element to read: checked on every path
        S.require_less(
            0,
            n,
            f"{what}: the array is empty, and a branch that is not taken is "
            "computed too (both branches are), which would read it",
        )
        return S.mod(i, n)
    S.require_less(-1, i, what)
    S.require_less(i, n, what)
    return i


def stepped_positions(x: Node, key: Value) -> Value:
    """``key`` with each slice of a step other than 1 (``y[::2]``, ``Y[::-1]``)
    as the int array of its positions, so that an element assignment through
    it is an advanced one (``y[::2] = v``); ``key`` itself when it has none."""
    items = list(key) if isinstance(key, tuple) else [key]
    if not any(
        isinstance(i, Static)
        and isinstance(i.obj, SliceValue)
        and not _none(i.obj.step)
        and static_int(i.obj.step, "a slice step") != 1  # type: ignore[arg-type]
        for i in items
    ):
        return key
    expanded = _expand(x, items)
    out: list[Value] = []
    for axis, item in enumerate(expanded):
        if (
            isinstance(item, Static)
            and isinstance(item.obj, SliceValue)
            and not _none(item.obj.step)
        ):
            _, start, size, step = _slice(item.obj, x.shape[axis], axis)
            if step != 1:
                offsets = A.arange(size)
                first = (
                    A.dim(start) if not isinstance(start, int) else B.constant(start)
                )
                item = B.add(first, B.mul(B.constant(step), offsets))
        out.append(item)
    return tuple(out)


def _slice(sl: SliceValue, n: Length, axis: int) -> tuple[Any, ...]:
    step = 1 if _none(sl.step) else static_int(sl.step, "a slice step")  # type: ignore[arg-type]
    if step == 0:
        raise Unsupported(
            "slice step cannot be zero", "use a positive or negative step"
        )

    def bound(v: Value | None, default: Length) -> Length:
        if _none(v):
            return default
        d = length(v, "a slice bound")  # type: ignore[arg-type]
        given = S.format_dim(d)
        if isinstance(d, int) and d < 0:
            d = S.add(n, d)
        if isinstance(d, int) and isinstance(n, int):
            # NumPy clips bounds to the array
            return max(-1 if step < 0 else 0, min(d, n - (1 if step < 0 else 0)))
        if given in ("0", "1", "-1"):
            return d  # in the array unless it is empty (then the slice is too)
        if _negative_form(d):
            # x[-k:], c[:-k], x[-(k + 1):]: from the end, as NumPy counts a
            # negative bound; at k == 0 NumPy's bound is 0 (the whole axis for
            # x[-k:]), which the kernel reports rather than guess
            S.require_less(
                d,
                0,
                f"slice bound {given} counts from the end of axis {axis} and must "
                f"be negative: at 0, write the slice without it",
                conditional=True,  # at 0 the region is still in the array
            )
            d = S.add(n, d)
        # A length known only when the kernel runs: the bound must lie in the
        # array (NumPy would clip it; the kernel checks instead of clipping).
        what = (
            f"slice bound {given} is outside axis {axis} of length "
            f"{S.format_dim(n)}; symdiff needs slice bounds within the array"
        )
        S.require_less(-1, d, what)
        S.require_less(d, S.add(n, 1), what)
        return d

    if step > 0:
        start = bound(sl.start, 0)
        stop = bound(sl.stop, n)
        size = S.cdiv(S.sub(stop, start), step)
    else:
        start = bound(sl.start, S.sub(n, 1))
        stop = bound(sl.stop, -1)
        size = S.cdiv(S.sub(start, stop), -step)
    if isinstance(size, int) and size < 0:
        size = 0  # an empty slice, as in NumPy
    return ("slice", start, size, step)


def _negative_form(d: Length) -> bool:
    """``-k``, ``-k - 1``, ``-2 * k``: a length of arguments written negated
    (every term with an argument subtracted, no positive constant)."""
    if isinstance(d, int):
        return False
    named = [c for m, c in d.terms if m]
    constant = sum(c for m, c in d.terms if not m)
    return bool(named) and all(c < 0 for c in named) and constant <= 0


def constant_slice(sl: SliceValue) -> slice | None:
    """``sl`` as a Python slice when its bounds are int constants (or left
    out), else None (``COEFFS[1:]`` of a tuple)."""
    bounds: list[int | None] = []
    for b in (sl.start, sl.stop, sl.step):
        if _none(b):
            bounds.append(None)
        elif isinstance(b, Node) and b.op == "const" and b.dtype == "int64":
            bounds.append(int(b.value))
        else:
            return None
    return slice(*bounds)


def _none(v: Value | None) -> bool:
    return v is None or (isinstance(v, Static) and v.obj is None)
