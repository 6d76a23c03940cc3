"""Views: names that share an array with another name.

In NumPy ``row = Y[i]``, ``v = y[1:3]``, ``T = Y.T``, ``r = Y.reshape(-1)``,
``b = a``, ``for row in Y`` and ``a, b = Y`` give arrays that share memory with
``Y``: a write into one (``row /= s``, ``v[0] = 1.0``, ``v += w``) changes the
other.  symdiff's arrays are values, so the lowering keeps, beside each such
name, where its array came from (a :class:`View`, in the environment under
:func:`key_of` the name): an in-place write into a view is written back into its
base (``Y[i] = row``), and one into a base is read again by its views (``row =
Y[i]``).  A name that is rebound (``row = row / s``) is a new array, no longer a
view; a view made on only some paths through an ``if`` is reported when it is
written into.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from symdiff.frontend import arrays as AR
from symdiff.frontend.arrays import SliceValue
from symdiff.frontend.values import Static, Value
from symdiff.ir import arrays as A
from symdiff.ir import build as B
from symdiff.ir.node import Node

if TYPE_CHECKING:
    from symdiff.frontend.lower import Frame


#: One step from an array to a view of it: ("index", key) for basic indexing,
#: ("transpose", perm or None), ("reshape", the view's shape).
Step = tuple[str, Any]


@dataclass(frozen=True)
class View:
    """The array a name shares: ``base`` (a name of the same frame) as seen
    through ``steps``, applied in order: ``Y[1:].T`` is an index, then a
    transpose; no step for ``b = a``."""

    base: str
    steps: tuple[Step, ...] = ()

    def derive(self, base: Node) -> Node:
        """The view of ``base`` (its new value)."""
        for step in self.steps:
            base = _apply(step, base)
        return base

    def map_nodes(self, fn: Callable[[Value], Value]) -> View:
        """This view with ``fn`` applied to the nodes of its keys (a loop body
        captures them)."""
        steps = tuple(
            (kind, _map(data, fn)) if kind == "index" else (kind, data)
            for kind, data in self.steps
        )
        return View(self.base, steps)


def _apply(step: Step, array: Node) -> Node:
    kind, data = step
    if kind == "index":
        return AR.index(array, data)
    if kind == "transpose":
        return A.transpose(array, data)
    return A.reshape(array, data)


#: A name that is a view on some paths only (an ``if`` made it in one branch).
AMBIGUOUS = View("", (("ambiguous", None),))
_SUFFIX = "\0view"


def key_of(name: str) -> str:
    """Where the environment keeps what ``name`` is a view of."""
    return name + _SUFFIX


def is_view_key(key: str) -> bool:
    return key.endswith(_SUFFIX)


def view_in(env: dict[str, Value], name: str) -> View | None:
    """What ``name`` is a view of in ``env`` (:data:`AMBIGUOUS` for a view on
    some paths), or None."""
    record = env.get(key_of(name))
    if record is None:
        return None
    if isinstance(record, Static) and isinstance(record.obj, View):
        return record.obj
    return AMBIGUOUS  # Undefined: made in one branch of an `if`


def after_if(a: Value | None, b: Value | None) -> Value | None:
    """The record of a name after an ``if`` whose branches left ``a`` and ``b``."""
    if a is None and b is None:
        return None
    if isinstance(a, Static) and isinstance(b, Static) and a.obj == b.obj:
        return a
    return Static(AMBIGUOUS)


def _map(value: Value, fn: Callable[[Value], Value]) -> Value:
    if isinstance(value, tuple):
        return tuple(_map(v, fn) for v in value)
    if isinstance(value, Static) and isinstance(value.obj, SliceValue):
        s = value.obj
        parts = [None if p is None else _map(p, fn) for p in (s.start, s.stop, s.step)]
        return Static(SliceValue(*parts))
    if isinstance(value, Node):
        return fn(value)
    return value


def _basic(key: Value) -> bool:
    """Whether indexing with ``key`` makes a view (ints, slices, None and ``...``:
    no index arrays, no masks)."""
    items = key if isinstance(key, tuple) else (key,)
    return not any(AR.is_array_index(i) for i in items)


def _array(env: dict[str, Value], name: str) -> bool:
    value = env.get(name)
    return isinstance(value, Node) and bool(value.shape)


def index_view(base: str, key: Value, value: Value) -> View | None:
    """The view ``base[key]`` is, when that is an array made by basic indexing."""
    if isinstance(value, Node) and value.shape and _basic(key):
        return View(base, (("index", key),))
    return None


def forget(frame: Frame, name: str) -> None:
    """``name`` is rebound to a new array: it is no longer a view, and its old
    views see an array no name of the frame reaches now."""
    env = frame.env
    env.pop(key_of(name), None)
    for key in [k for k in env if is_view_key(k)]:
        record = env[key]
        if isinstance(record, Static) and getattr(record.obj, "base", None) == name:
            del env[key]


def views_of(env: dict[str, Value], base: str) -> list[tuple[str, View]]:
    """The names that view ``base``, in a fixed order."""
    out = []
    for key in sorted(k for k in env if is_view_key(k)):
        record = env[key]
        if isinstance(record, Static) and isinstance(record.obj, View):
            if record.obj.base == base:
                out.append((key[: -len(_SUFFIX)], record.obj))
    return out


def bases_written(body: list[ast.stmt], env: dict[str, Value]) -> set[str]:
    """The arrays a loop body writes into through views: ``Y`` of ``for row in
    Y: row /= s`` or of ``r = Y[i]; r[0] = v``, and the bases of views made
    before the loop that the body writes into.  Such a base is the loop's state,
    though no statement assigns it (a superset: a base that turns out not to be
    written is carried unchanged)."""
    made: dict[str, set[str]] = {}  # view name -> the names it may view

    def note(view: ast.expr, base: ast.expr) -> None:
        root = base
        while isinstance(root, (ast.Subscript, ast.Attribute)):
            root = root.value
        if isinstance(root, ast.Call) and isinstance(root.func, ast.Attribute):
            root = root.func.value
        if isinstance(root, ast.Call) and isinstance(root.func, ast.Name):
            for arg in root.args:  # enumerate(Y), zip(Y, Z)
                note(view, arg)
            return
        if isinstance(root, ast.Name):
            targets = view.elts if isinstance(view, (ast.Tuple, ast.List)) else [view]
            for t in targets:
                if isinstance(t, ast.Name):
                    made.setdefault(t.id, set()).add(root.id)
                elif isinstance(t, (ast.Tuple, ast.List)):
                    note(t, root)

    written: set[str] = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.For, ast.comprehension)):
                note(node.target, node.iter)
                continue
            if isinstance(node, ast.Assign):
                if len(node.targets) == 1:
                    note(node.targets[0], node.value)
                targets = node.targets
            elif isinstance(node, ast.AugAssign):
                targets = [node.target]
                if isinstance(node.target, ast.Name):  # `row /= s`: in place
                    written.add(node.target.id)
            else:
                continue
            for t in targets:
                if not isinstance(t, ast.Subscript):
                    continue
                while isinstance(t, ast.Subscript):  # `M[i][j] = v` writes M
                    t = t.value
                if isinstance(t, ast.Name):
                    written.add(t.id)
    for name in list(env):
        if is_view_key(name):
            view = view_in(env, name[: -len(_SUFFIX)])
            if view is not None and view.base:
                made.setdefault(name[: -len(_SUFFIX)], set()).add(view.base)
    bases: set[str] = set()
    todo = [w for w in written if w in made]
    while todo:
        for base in made.get(todo.pop(), ()):
            if base not in bases:
                bases.add(base)
                todo.append(base)
    return bases


class ViewLowering:
    """Mixin: the names that view an array, kept in step with it."""

    frame: Frame
    poison: Node
    error: Callable[..., Node]
    expr: Callable[..., Value]
    updated: Callable[..., Node]
    _static_object: Callable[[ast.expr], object]

    def view_chain(self, expr: ast.expr) -> View | None:
        """The view ``expr`` is of an array of the frame (``Y[1:].T``,
        ``np.reshape(Y, -1)``, ``np.asarray(Y)``, ``Y``), :data:`AMBIGUOUS` for
        ``a if c else b`` of views, or None (a new array)."""
        env = self.frame.env
        parts: list[tuple[str, Any, ast.expr]] = []  # (kind, data, the view's AST)
        node = expr
        while not isinstance(node, ast.Name):
            outer = node
            if isinstance(node, ast.IfExp):
                arms = (self.view_chain(node.body), self.view_chain(node.orelse))
                return AMBIGUOUS if any(a is not None for a in arms) else None
            if isinstance(node, ast.Subscript):
                key = self.expr(node.slice)  # again: pure, and the same nodes
                if isinstance(node.slice, ast.List):
                    key = (key,)
                if not _basic(key):
                    return None  # an index array: a copy
                parts.append(("index", key, outer))
                node = node.value
            elif isinstance(node, ast.Attribute) and node.attr == "T":
                parts.append(("transpose", None, outer))
                node = node.value
            elif isinstance(node, ast.Call):
                step = self._view_call(node)
                if step is None:
                    return None
                kind, data, source = step
                if kind != "alias":
                    parts.append((kind, data, outer))
                node = source
            else:
                return None
        if not _array(env, node.id):
            return None
        steps: list[Step] = []
        current = env[node.id]
        contiguous = True  # a name's array is C-contiguous
        for kind, data, outer in reversed(parts):
            if kind == "reshape":  # the view's own shape
                value = self.expr(outer)
                if not isinstance(value, Node):
                    return None
                data = value.shape
                if not contiguous and data != current.shape:  # type: ignore[union-attr]
                    # NumPy copies a flattened non-contiguous array (`Y.T.ravel()`,
                    # `Y[:, :2].reshape(-1)`); other shapes may be views or not
                    flat = len(data) == 1 and len(current.shape) > 1  # type: ignore[union-attr]
                    return None if flat else AMBIGUOUS
            else:
                contiguous = contiguous and _keeps_contiguous(
                    kind,
                    data,
                    current.shape,  # type: ignore[union-attr]
                )
            steps.append((kind, data))
            current = _apply((kind, data), current)  # type: ignore[arg-type]
        return View(node.id, tuple(steps))

    def _view_call(self, call: ast.Call) -> tuple[str, Any, ast.expr] | None:
        """A call that makes a view of its array: (step kind, data, the array's
        expression), or None."""
        func = call.func
        obj = self._static_object(func)  # np.reshape, or None for a method
        if isinstance(func, ast.Attribute) and obj is None and not call.keywords:
            method, source = func.attr, func.value
            if method in ("reshape", "ravel", "squeeze"):
                return "reshape", None, source
            if method == "view" and not call.args:
                return "alias", None, source
            if method == "swapaxes":
                perm = self._swapped(source, call.args)
                return ("transpose", perm, source) if perm else None
            if method == "transpose":
                perm = _constant_ints(call.args, self.expr)
                if call.args and len(call.args) == 1 and perm is None:
                    perm = _constant_ints(call.args[0], self.expr)
                if call.args and perm is None:
                    return None
                return "transpose", tuple(perm) if perm else None, source
        if obj is None or not call.args:
            return None
        source = call.args[0]
        if obj is reversed and len(call.args) == 1:
            backwards = Static(SliceValue(None, None, B.constant(-1)))
            return "index", backwards, source
        if obj in (
            np.reshape,
            np.ravel,
            np.squeeze,
            np.expand_dims,
            np.atleast_1d,
            np.atleast_2d,
            np.atleast_3d,
        ):
            return "reshape", None, source
        if obj is np.flip:
            array = self.expr(source)
            axis = call.args[1] if len(call.args) > 1 else None
            for k in call.keywords:
                axis = k.value if k.arg == "axis" else axis
            if not isinstance(array, Node):
                return None
            rank = len(array.shape)
            axes = (
                list(range(rank)) if axis is None else _constant_ints(axis, self.expr)
            )
            if axes is None:
                return None
            flipped = {a % rank for a in axes} if rank else set()
            backwards = Static(SliceValue(None, None, B.constant(-1)))
            full = Static(SliceValue(None, None, None))
            key = tuple(backwards if a in flipped else full for a in range(rank))
            return "index", key, source
        if obj in (np.asarray, np.asanyarray) and len(call.args) == 1:
            return ("alias", None, source) if not call.keywords else None
        if obj is np.swapaxes and not call.keywords:
            perm = self._swapped(source, call.args[1:])
            return ("transpose", perm, source) if perm else None
        if obj is np.moveaxis and not call.keywords and len(call.args) == 3:
            perm = self._moved(source, call.args[1], call.args[2])
            return ("transpose", perm, source) if perm else None
        if obj is np.transpose and not call.keywords:
            if len(call.args) == 1:
                return "transpose", None, source
            perm = _constant_ints(call.args[1], self.expr)
            return ("transpose", tuple(perm), source) if perm else None
        return None

    def _rank(self, source: ast.expr) -> int | None:
        array = self.expr(source)
        return len(array.shape) if isinstance(array, Node) else None

    def _swapped(
        self, source: ast.expr, args: list[ast.expr]
    ) -> tuple[int, ...] | None:
        """The axes ``source.swapaxes(a, b)`` puts in order, or None."""
        rank = self._rank(source)
        pair = _constant_ints(args, self.expr) if len(args) == 2 else None
        if rank is None or pair is None or not all(-rank <= a < rank for a in pair):
            return None
        perm = list(range(rank))
        a, b = (p % rank for p in pair)
        perm[a], perm[b] = perm[b], perm[a]
        return tuple(perm)

    def _moved(
        self, source: ast.expr, start: ast.expr, end: ast.expr
    ) -> tuple[int, ...] | None:
        """The axes ``np.moveaxis(source, start, end)`` puts in order, or None."""
        rank = self._rank(source)
        moved, to = _constant_ints(start, self.expr), _constant_ints(end, self.expr)
        if rank is None or moved is None or to is None or len(moved) != len(to):
            return None
        if not all(-rank <= a < rank for a in (*moved, *to)):
            return None
        moved, to = [a % rank for a in moved], [a % rank for a in to]
        order = [a for a in range(rank) if a not in moved]
        for dest, axis in sorted(zip(to, moved, strict=True)):
            order.insert(dest, axis)
        return tuple(order)

    def note_view(self, name: str, expr: ast.expr, value: Value) -> None:
        """After ``name = expr``: record what ``name`` views, if anything."""
        if not (isinstance(value, Node) and value.shape):
            return  # x[0] of a vector is a number: a copy
        view = self.view_chain(expr)
        if view is not None and view.base != name:
            self.frame.env[key_of(name)] = Static(view)

    def note_rows(self, names: list[str], rows_of: ast.expr, index: list[Node]) -> None:
        """``a, b = Y`` or ``for row in Y[1:]``: ``names[j]`` is row ``index[j]``
        of the view ``rows_of`` is."""
        env = self.frame.env
        view = self.view_chain(rows_of)
        if view is None:
            return
        for name, k in zip(names, index, strict=True):
            value = env.get(name)
            if view is not AMBIGUOUS and name == view.base:
                continue
            if isinstance(value, Node) and value.shape:
                row = (
                    view
                    if view is AMBIGUOUS
                    else View(view.base, (*view.steps, ("index", (k,))))
                )
                env[key_of(name)] = Static(row)
                base = env.get(row.base)
                if row is not AMBIGUOUS and isinstance(base, Node):
                    # the row as the array is now (a loop may have written it:
                    # `for a, b in zip(Y, Y[::-1])` reads what `a += b` wrote)
                    env[name] = self._derive(row, base, value)

    def wrote_in_place(self, name: str, where: ast.AST) -> None:
        """``name``'s array was written into (its new value is bound): write it
        back into the array it views, and read the views of each array changed
        again."""
        env = self.frame.env
        todo: list[tuple[str, str | None]] = [(name, None)]
        done: set[str] = set()
        while todo:
            current, source = todo.pop()
            if current in done:
                continue
            done.add(current)
            view = view_in(env, current)
            if view is AMBIGUOUS:
                self.error(
                    where,
                    f"`{current}` may or may not share its array with another here "
                    "(it is a view on some paths through an `if` or a loop only), so "
                    "this write may or may not change that array",
                    f"make a copy where it is made (`{current} = ... .copy()`), or "
                    "write into the original array",
                )
                continue
            value = env.get(current)
            if not isinstance(value, Node):
                continue
            if view is not None and view.base != source:
                base = env.get(view.base)
                if isinstance(base, Node) and base.shape:
                    env[view.base] = self.write_back(view, base, value, where)
                    todo.append((view.base, current))
            for other, seen in views_of(env, current):
                old = env.get(other)
                if other != source and isinstance(old, Node):
                    env[other] = self._derive(seen, value, old)
                    todo.append((other, current))

    def write_back(self, view: View, base: Node, value: Node, where: ast.AST) -> Node:
        """``base`` with ``value`` written where ``view`` shows it: each step
        undone, from the view back to ``base``."""
        if not view.steps:
            return value  # b = a: the same array
        stages = [base]
        for step in view.steps[:-1]:
            stages.append(_apply(step, stages[-1]))
        try:
            for (kind, data), array in zip(
                reversed(view.steps), reversed(stages), strict=True
            ):
                if kind == "index":
                    items = list(data) if isinstance(data, tuple) else [data]
                    kept = [
                        i
                        for i in items
                        if not (isinstance(i, Static) and i.obj is None)
                    ]
                    if len(kept) < len(items):
                        # `r = y[None, :]`: the new axes (length 1) dropped again
                        data = tuple(kept)
                        value = A.reshape(value, AR.index(array, data).shape)
                    value = self.updated(array, data, value, "set")
                elif kind == "transpose":
                    value = A.transpose(value, A.inverse(data) if data else None)
                else:
                    value = A.reshape(value, array.shape)
        except (AR.Unsupported, ValueError) as exc:
            return self.error(where, str(exc.args[0]), getattr(exc, "hint", ""))
        return value

    def _derive(self, view: View, base: Node, old: Node) -> Node:
        value = view.derive(base)
        if value.op == "take" and self.frame.live is not B.TRUE:
            # inside a branch both branches run: a run-time index is clamped
            value = A.take(value.args[0], A.guarded(value.attrs[0]), value.args[1:])
        return value


def _keeps_contiguous(kind: str, data: Any, shape: tuple[Any, ...]) -> bool:
    """Whether a step keeps a C-contiguous array C-contiguous: a transpose that
    moves no axis of a length other than 1; basic indexing that selects one
    block (single elements of the leading axes, then a slice of step 1, then
    whole axes; axes of length 1 aside)."""
    if kind == "transpose":
        # contiguous while the axes longer than 1 keep their order
        perm = data if data is not None else tuple(reversed(range(len(shape))))
        long = [a for a in perm if shape[a] != 1]
        return long == sorted(long)
    if kind != "index":
        return True
    items = list(data) if isinstance(data, tuple) else [data]
    if any(isinstance(i, Static) and i.obj is Ellipsis for i in items):
        return False  # (rare in a view that is reshaped: not followed)
    axis_items = [i for i in items if not (isinstance(i, Static) and i.obj is None)]
    sliced = False  # a slice met: every later axis must be whole
    for axis, item in enumerate(axis_items):
        if axis < len(shape) and shape[axis] == 1:
            continue
        is_slice = isinstance(item, Static) and isinstance(item.obj, SliceValue)
        whole = is_slice and all(
            p is None
            for p in (item.obj.start, item.obj.stop, item.obj.step)  # type: ignore[union-attr]
        )
        if sliced and not whole:
            return False
        if is_slice:
            step = item.obj.step  # type: ignore[union-attr]
            if step is not None and not (
                isinstance(step, Node) and step.op == "const" and step.value == 1
            ):
                return False
            sliced = True
    return True


def _constant_ints(
    node: ast.expr | list[ast.expr], lower: Callable[[ast.expr], Value]
) -> list[int] | None:
    """The constant ints ``node`` (an expression, or several) gives, or None."""
    nodes = node if isinstance(node, list) else [node]
    out: list[int] = []
    for n in nodes:
        value = lower(n)
        items = value if isinstance(value, tuple) else (value,)
        for v in items:
            if not (isinstance(v, Node) and v.op == "const" and v.dtype == "int64"):
                return None
            out.append(int(v.value))
    return out
