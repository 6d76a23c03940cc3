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

from collections.abc import Callable, Sequence
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
                results[node] = S.atom("value", node.attrs[0])
            elif node.op == "floordiv" and node.args[1].op == "const" and not ready:
                stack.append((node, True))
                stack.append((node.args[0], False))
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
                    divisor = int(node.args[1].value)
                    if divisor <= 0:
                        raise Unsupported(
                            f"{what}: divide by a positive constant",
                            "write `n // 2` with a positive integer constant",
                        )
                    results[node] = S.floordiv(results[node.args[0]], divisor)
                else:
                    results[node] = S.neg(vals[0])
            else:
                raise Unsupported(
                    f"{what} must be computed from integer constants, shapes "
                    "(`len(x)`, `x.shape[0]`) and integer arguments",
                    "sizes cannot depend on array values",
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


def _mean(x: Value, axis: Value | None = None, keepdims: Value | None = None) -> Node:
    node = array(x)
    return A.mean(node, axes_arg(axis, len(node.shape)), flag(keepdims, "keepdims"))


def _norm(
    x: Value,
    ord: Value | None = None,
    axis: Value | None = None,
    keepdims: Value | None = None,
) -> Node:
    node = array(x)
    if ord is not None and not (isinstance(ord, Static) and ord.obj is None):
        if not (isinstance(ord, Node) and ord.op == "const" and ord.value == 2):
            if not (isinstance(ord, Static) and ord.obj == "fro"):
                raise Unsupported(
                    "np.linalg.norm: only the 2-norm and the Frobenius norm are "
                    "supported",
                    "write other norms out: `np.sum(np.abs(x))` for ord=1",
                )
    axes = axes_arg(axis, len(node.shape))
    squares = A.reduce("sum", B.mul(node, node), axes, flag(keepdims, "keepdims"))
    return B.apply("sqrt", squares)


def _matmul(a: Value, b: Value) -> Node:
    return A.dot(array(a), array(b))


def _np_dot(a: Value, b: Value) -> Node:
    x, y = array(a), array(b)
    if not x.shape or not y.shape:
        return B.mul(x, y)
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
    perm = tuple(static_int(a, "an axis") % len(node.shape) for a in axes)
    if sorted(perm) != list(range(len(node.shape))):
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
    return A.full(B.to_float(array(fill_value)), shape_arg(shape))


def _like(value: float) -> Builder:
    def build(x: Value, dtype: Value | None = None) -> Node:
        node = array(x)
        return A.full(_fill_value(value, dtype), node.shape)

    return build


def _arange(
    start: Value,
    stop: Value | None = None,
    step: Value | None = None,
    dtype: Value | None = None,
) -> Node:
    if stop is None:
        first: Length = 0
        last = length(start, "np.arange's bound")
    else:
        first, last = (
            length(start, "np.arange's bound"),
            length(stop, "np.arange's bound"),
        )
    k = 1 if step is None else static_int(step, "np.arange's step")
    if k <= 0:
        raise Unsupported(
            "np.arange: only positive constant steps are supported",
            "reverse with [::-1], or scale: k * np.arange(n)",
        )
    n = S.cdiv(S.sub(last, first), k)
    idx = A.iota(0, (n,))
    if k != 1:
        idx = B.mul(constant(k), idx)
    out = B.add(idx, A.dim(first)) if first != 0 else idx
    if (
        dtype is not None
        and isinstance(dtype, Static)
        and dtype.obj in (float, np.float64)
    ):
        out = B.to_float(out)
    return out


def _eye(n: Value, m: Value | None = None, k: Value | None = None) -> Node:
    rows = length(n, "np.eye's size")
    cols = rows if m is None or (isinstance(m, Static) and m.obj is None) else length(m)
    return A.eye(rows, cols, 0 if k is None else static_int(k, "`k`"))


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


def _where(cond: Value, a: Value | None = None, b: Value | None = None) -> Node:
    if a is None or b is None:
        raise Unsupported(
            "np.where with one argument is not supported",
            "it returns indices, which have no derivative; use np.where(c, a, b)",
        )
    return B.select(B.truth(array(cond)), array(a), array(b))


def _clip(x: Value, lo: Value, hi: Value) -> Node:
    node = array(x)
    if not (isinstance(lo, Static) and lo.obj is None):
        node = B.apply("max", node, array(lo))
    if not (isinstance(hi, Static) and hi.obj is None):
        node = B.apply("min", node, array(hi))
    return node


def _expand_dims(x: Value, axis: Value) -> Node:
    node = array(x)
    ax = static_int(axis, "`axis`") % (len(node.shape) + 1)
    return A.reshape(node, (*node.shape[:ax], 1, *node.shape[ax:]))


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
        total = A.reduce("sum", B.select(node, constant(1), constant(0)), axes)
        if op == "any":
            return B.apply("gt", total, constant(0))
        count = S.product([node.shape[a] for a in axes])
        return B.apply("eq", total, A.dim(count))

    return build


def _logical_binary(combine: Callable[[Node, Node], Node]) -> Builder:
    def build(a: Value, b: Value) -> Node:
        return combine(B.truth(array(a)), B.truth(array(b)))

    return build


_NUMPY: dict[str, Builder] = {
    "logical_and": _logical_binary(B.logical_and),
    "logical_or": _logical_binary(B.logical_or),
    "logical_not": lambda a: B.logical_not(B.truth(array(a))),
    "sum": _reduction("sum"),
    "prod": _reduction("prod"),
    "max": _reduction("amax"),
    "amax": _reduction("amax"),
    "min": _reduction("amin"),
    "amin": _reduction("amin"),
    "mean": _mean,
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
    "zeros": _filled(0.0),
    "ones": _filled(1.0),
    "full": _full,
    "zeros_like": _like(0.0),
    "ones_like": _like(1.0),
    "arange": _arange,
    "eye": _eye,
    "array": _np_array,
    "asarray": _np_array,
    "where": _where,
    "clip": _clip,
    "expand_dims": _expand_dims,
    "squeeze": _squeeze,
    "any": _logical("any"),
    "all": _logical("all"),
}

FUNCTIONS: dict[int, tuple[str, Builder]] = {
    id(getattr(np, name)): (f"np.{name}", build)
    for name, build in _NUMPY.items()
    if hasattr(np, name)
}
FUNCTIONS[id(np.linalg.norm)] = ("np.linalg.norm", _norm)


# -- methods and attributes ------------------------------------------------------------
def _method_reshape(x: Node, *shape: Value) -> Node:
    if len(shape) == 1 and isinstance(shape[0], tuple):
        return reshape(x, shape[0])  # type: ignore[arg-type]
    return reshape(x, shape)  # type: ignore[arg-type]


def _method_transpose(x: Node, *axes: Value) -> Node:
    if not axes:
        return A.transpose(x)
    return _transpose(x, axes[0] if len(axes) == 1 else tuple(axes))


METHODS: dict[str, Builder] = {
    "sum": _reduction("sum"),
    "prod": _reduction("prod"),
    "max": _reduction("amax"),
    "min": _reduction("amin"),
    "mean": _mean,
    "dot": _np_dot,
    "reshape": _method_reshape,
    "ravel": _ravel,
    "flatten": _ravel,
    "transpose": _method_transpose,
    "copy": lambda x: x,
    "any": _logical("any"),
    "all": _logical("all"),
}


def attribute(x: Node, name: str) -> Value:
    """``x.shape``, ``x.T``... or a :class:`BoundMethod`; KeyError if unknown."""
    if name == "shape":
        return tuple(A.dim(d) for d in x.shape)
    if name == "T":
        return A.transpose(x)
    if name == "ndim":
        return constant(len(x.shape))
    if name == "size":
        return A.dim(S.product(x.shape))
    if name in METHODS:
        return Static(BoundMethod(x, name))
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


def index(x: Node, key: Value) -> Node:
    """``x[key]`` for integers, slices, ``None`` and ``...`` (basic indexing)."""
    items = list(key) if isinstance(key, tuple) else [key]
    if not all(_is_static(i) for i in items):
        spec, positions = dynamic_spec(x, key)
        return A.take(x, spec, positions)
    if any((isinstance(i, Node) and i.shape) or isinstance(i, tuple) for i in items):
        raise Unsupported(
            "indexing with an array or a list (fancy indexing) is not supported",
            "use slices, or np.where for masks",
        )
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
        else:
            raise Unsupported(
                "array indices must be integers, slices, None or `...`",
                "compute integer indices from constants and shapes",
            )
        axis += 1
    return A.getitem(x, tuple(spec))


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
    if not isinstance(i, int) and any(a[0] == "value" for m, _ in i.terms for a in m):
        # from an integer argument (``x[j]``, ``x[-k]``): negative counts from the
        # end, as in NumPy
        S.require_less(-1, S.add(n, i), what)
        S.require_less(i, n, what)
        return S.mod(i, n)
    S.require_less(-1, i, what)
    S.require_less(i, n, what)
    return i


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


def _none(v: Value | None) -> bool:
    return v is None or (isinstance(v, Static) and v.obj is None)


def call_method(
    method: BoundMethod, args: Sequence[Value], kwargs: dict[str, Value]
) -> Value:
    return METHODS[method.name](method.array, *args, **kwargs)
