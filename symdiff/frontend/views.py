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
from typing import TYPE_CHECKING

from symdiff.frontend import arrays as AR
from symdiff.frontend.arrays import SliceValue
from symdiff.frontend.values import Static, Value
from symdiff.ir import arrays as A
from symdiff.ir import build as B
from symdiff.ir.node import Node

if TYPE_CHECKING:
    from symdiff.frontend.lower import Frame


@dataclass(frozen=True)
class View:
    """The array a name shares: ``base`` (a name of the same frame) as seen
    through ``kind``: "alias" (``b = a``), "index" (``Y[key]``, basic indexing),
    "transpose" (``Y.T``) or "reshape" (``Y.reshape(...)``, ``Y.ravel()``)."""

    base: str
    kind: str
    key: Value = None  # type: ignore[assignment]

    def derive(self, base: Node) -> Node:
        """The view of ``base`` (its new value)."""
        if self.kind == "index":
            return AR.index(base, self.key)
        if self.kind == "transpose":
            return A.transpose(base)
        return base  # an alias; a reshape is derived by the caller

    def map_nodes(self, fn: Callable[[Value], Value]) -> View:
        """This view with ``fn`` applied to the nodes of its key (a loop body
        captures them)."""
        if self.kind != "index":
            return self
        return View(self.base, self.kind, _map(self.key, fn))


#: A name that is a view on some paths only (an ``if`` made it in one branch).
AMBIGUOUS = View("", "ambiguous")
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


def view_of(expr: ast.expr, value: Value, env: dict[str, Value]) -> View | None:
    """The view an assignment ``name = expr`` makes, where ``expr`` reads an array
    of the frame by a name and ``value`` (its lowering) is an array."""
    if not (isinstance(value, Node) and value.shape):
        return None  # x[0] of a vector is a number: a copy
    if isinstance(expr, ast.Name) and _array(env, expr.id):
        return View(expr.id, "alias")
    if (
        isinstance(expr, ast.Attribute)
        and expr.attr == "T"
        and isinstance(expr.value, ast.Name)
        and _array(env, expr.value.id)
    ):
        return View(expr.value.id, "transpose")
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr in ("reshape", "ravel")
        and isinstance(expr.func.value, ast.Name)
        and _array(env, expr.func.value.id)
    ):
        return View(expr.func.value.id, "reshape")
    return None


def _array(env: dict[str, Value], name: str) -> bool:
    value = env.get(name)
    return isinstance(value, Node) and bool(value.shape)


def index_view(base: str, key: Value, value: Value) -> View | None:
    """The view ``base[key]`` is, when that is an array made by basic indexing."""
    if isinstance(value, Node) and value.shape and _basic(key):
        return View(base, "index", key)
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

    def note_view(self, name: str, expr: ast.expr, value: Value) -> None:
        """After ``name = expr``: record what ``name`` views, if anything."""
        env = self.frame.env
        view = view_of(expr, value, env)
        if (
            view is None
            and isinstance(expr, ast.Subscript)
            and isinstance(expr.value, ast.Name)
            and _array(env, expr.value.id)
        ):
            key = self.expr(expr.slice)  # again: pure, and the same nodes
            if isinstance(expr.slice, ast.List):
                key = (key,)
            view = index_view(expr.value.id, key, value)
        if view is not None and view.base != name:
            env[key_of(name)] = Static(view)

    def note_rows(self, names: list[str], base: str, index: list[Node]) -> None:
        """``a, b = Y`` or ``for row in Y``: ``names[j]`` is row ``index[j]``."""
        env = self.frame.env
        for name, k in zip(names, index, strict=True):
            value = env.get(name)
            if name != base and isinstance(value, Node) and value.shape:
                env[key_of(name)] = Static(View(base, "index", (k,)))

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
                    f"`{current}` shares its array with another on only some paths "
                    "(a view made in one branch of an `if`), so this write may or "
                    "may not change that array",
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
                    env[view.base] = self._write_back(view, base, value, where)
                    todo.append((view.base, current))
            for other, seen in views_of(env, current):
                old = env.get(other)
                if other != source and isinstance(old, Node):
                    env[other] = self._derive(seen, value, old)
                    todo.append((other, current))

    def _write_back(self, view: View, base: Node, value: Node, where: ast.AST) -> Node:
        """``base`` with ``value`` written where ``view`` shows it."""
        try:
            if view.kind == "index":
                return self.updated(base, view.key, value, "set")
            if view.kind == "transpose":
                return A.transpose(value)
            if view.kind == "reshape":
                return A.reshape(value, base.shape)
        except (AR.Unsupported, ValueError) as exc:
            return self.error(where, str(exc.args[0]), getattr(exc, "hint", ""))
        return value  # an alias

    def _derive(self, view: View, base: Node, old: Node) -> Node:
        if view.kind == "reshape":
            return A.reshape(base, old.shape)
        value = view.derive(base)
        if value.op == "take" and self.frame.live is not B.TRUE:
            # inside a branch both branches run: a run-time index is clamped
            value = A.take(value.args[0], A.guarded(value.attrs[0]), value.args[1:])
        return value
