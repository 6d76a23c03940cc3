"""Lowering statements: assignments, ``if`` (if-conversion), ``return``, unrolled
``for``, imports; and the statements symdiff rejects, with what to write instead.

A mixin of :class:`symdiff.frontend.lower.Lowerer`.  Statement blocks are lowered
recursively: their nesting is bounded by Python's own limit on indentation.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import importlib
import inspect
import logging
import os
import types
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from symdiff.errors import SymdiffWarning
from symdiff.frontend import arrays as AR
from symdiff.frontend import masks
from symdiff.frontend.expressions import _OP_SYMBOLS, BINOPS, python_value
from symdiff.frontend.masks import HINT, has_masked, refusal
from symdiff.frontend.returns import GENERATED
from symdiff.frontend.values import (
    _LIBRARY_DIRS,
    LIST_ARRAYS,
    LocalFunction,
    Masked,
    Raise,
    Static,
    Undefined,
    Value,
    as_list,
)
from symdiff.frontend.views import (
    AMBIGUOUS,
    after_if,
    forget,
    index_view,
    is_view_key,
)
from symdiff.ir import arrays as A
from symdiff.ir import build as B
from symdiff.ir import shapes as S
from symdiff.ir.node import Node, constant

if TYPE_CHECKING:
    from symdiff.errors import Diagnostic
    from symdiff.frontend.lower import Frame

# Statement kinds symdiff rejects, with what to write instead.
UNSUPPORTED_STATEMENTS: dict[type, tuple[str, str]] = {
    ast.Try: (
        "`try` blocks are not supported",
        "remove it: differentiated code must be plain arithmetic",
    ),
    ast.With: (
        "`with` blocks are not supported, except `np.errstate` and "
        "`warnings.catch_warnings`",
        "move it out of the function",
    ),
    ast.Raise: (
        "`raise` is not supported where it depends on values",
        "validate the arguments before calling the differentiated function",
    ),
    ast.Global: (
        "`global` declarations are not supported",
        "pass the value as an argument",
    ),
    ast.Nonlocal: (
        "`nonlocal` declarations are not supported: a local function cannot "
        "change a variable of the function around it",
        "return the new value from the local function and assign it in the "
        "enclosing one (`y = g(y)`)",
    ),
    ast.Delete: ("`del` is supported for names only", "remove it"),
    ast.ClassDef: ("a class definition is not supported", "define it at module level"),
    ast.AsyncFunctionDef: ("an `async def` is not supported", "use a plain `def`"),
    ast.AsyncFor: ("`async for` is not supported", "use a plain `for`"),
    ast.AsyncWith: ("`async with` is not supported", "remove it"),
    ast.Match: ("`match` statements are not supported", "use `if`/`elif`/`else`"),
}


#: Calls that change how Python reports warnings: a kernel raises none.
_WARNING_FILTERS = (
    warnings.simplefilter,
    warnings.filterwarnings,
    warnings.resetwarnings,
    np.seterr,
)
#: Context managers whose body is lowered as it is (they only quiet warnings).
_QUIET_MANAGERS = (np.errstate, warnings.catch_warnings)
_LOGGERS = (logging.Logger, logging.LoggerAdapter)
#: The warnings about skipped calls already given: file, line, message.
_WARNED: set[tuple[str, int, str]] = set()


def _masked_update(base: Node, key: Value, value: Masked, mode: AR.MaskMode) -> Node:
    """``y[mask] = f(x[mask])`` (``+=``, ``*=``...): ``value``'s data where
    ``mask`` holds, ``base`` elsewhere; the selection must use the same mask."""
    items = list(key) if isinstance(key, tuple) else [key]
    if not any(AR.is_array_index(i) for i in items):
        raise AR.Unsupported(
            "a boolean-mask selection (`x[mask]`) is assigned to positions other "
            "than the mask's: its length depends on the values",
            "assign it with the same mask (y[mask] = x[mask]), or write the whole "
            "array: y = np.where(mask, x, y)",
        )
    mask, before, _ = AR.mask_axes(base, items)
    if mask is not value.mask or before:
        raise AR.Unsupported(
            "element assignment with a boolean mask: the assigned selection uses "
            "another mask, so its elements do not pair up with the masked ones",
            "select both sides with one mask: y[m] = np.log(x[m])",
        )
    return AR.advanced_update(base, key, value.data, mode, aligned=True)


#: What to write instead of a list whose length is known only at run time.
LIST_HINT = "preallocate the array, `out = np.zeros(n)`, and assign `out[i] = v`"


def _local_names(tree: ast.FunctionDef | ast.Lambda) -> set[str]:
    body = tree.body if isinstance(tree, ast.FunctionDef) else [tree.body]
    return _local_names_of(body)


def _local_names_of(body: list[ast.stmt] | list[ast.expr]) -> set[str]:
    """The names ``body`` binds; not the targets of its comprehensions, which
    Python binds in the comprehension's own scope."""
    names: set[str] = set()
    for stmt in body:
        for node in _walk_scope(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                root = node.value
                while isinstance(root, ast.Subscript):
                    root = root.value  # `M[i][j] = v` writes M
                if isinstance(root, ast.Name):
                    names.add(root.id)  # `out[i] = v` rebinds `out`
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
    return names


def _walk_scope(root: ast.AST) -> list[ast.AST]:
    """``ast.walk`` without the targets of comprehensions and the bodies of local
    functions, which are scopes of their own (iteratively)."""
    out: list[ast.AST] = []
    stack = [root]
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, ast.comprehension):
            stack.extend((node.iter, *node.ifs))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            # its defaults and decorators are evaluated in the enclosing scope
            stack.extend(node.args.defaults)
            stack.extend(d for d in node.args.kw_defaults if d is not None)
            stack.extend(getattr(node, "decorator_list", []))
        else:
            stack.extend(ast.iter_child_nodes(node))
    return out


class StatementLowering:
    """Mixin: statements to IR, updating the current frame's environment."""

    frame: Frame
    hints: dict[Node, str]
    current: ast.AST | None
    poison: Node
    error: Callable[..., Node]
    expr: Callable[..., Value]
    scalar: Callable[..., Node]
    merge: Callable[..., Value]
    frames_reached: Callable[[], bool]
    statement_calls: set[ast.Call]
    local_function: Callable[..., Value]
    escaping: Callable[..., bool]
    diagnostic: Callable[..., Diagnostic]
    note_view: Callable[..., None]
    raises: list[Raise]
    frames: list[Frame]
    path_condition: Callable[[], Node]
    note_rows: Callable[..., None]
    wrote_in_place: Callable[..., None]

    def block(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            if self.frame.live is B.FALSE:
                return  # unreachable after a return on every path
            handler = getattr(self, "_stmt_" + type(stmt).__name__, None)
            if handler is None:
                what, hint = UNSUPPORTED_STATEMENTS.get(
                    type(stmt),
                    (f"`{type(stmt).__name__}` statements are not supported", ""),
                )
                self.error(stmt, what, hint)
                self._poison_names(stmt)
                continue
            handler(stmt)

    def _poison_names(self, stmt: ast.stmt) -> None:
        """Bind the names a rejected statement defines, so that later uses of them
        do not raise follow-on errors."""
        names = set(_local_names_of([stmt]))
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        for name in names:
            self.frame.env[name] = self.poison

    def assign(self, target: ast.expr, value: Value) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, Node) and value.op not in ("param", "const"):
                self.hints.setdefault(value, target.id)
            forget(self.frame, target.id)  # a new array: no longer a view
            self.frame.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)) and any(
            isinstance(e, ast.Starred) for e in target.elts
        ):
            self._assign_starred(target, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if value is self.poison:  # already reported
                value = (self.poison,) * len(target.elts)
            elif isinstance(value, Node) and value.shape:
                value = self._unpack_array(target, value, len(target.elts))
            elif not isinstance(value, tuple):
                self.error(
                    target,
                    "cannot unpack a single value",
                    "the right-hand side must be a tuple",
                )
                value = (self.poison,) * len(target.elts)
            elif len(value) != len(target.elts):
                self.error(
                    target,
                    f"cannot unpack {len(value)} values into {len(target.elts)} names",
                    "give one name per value, or `a, *rest = ...`",
                )
                value = (self.poison,) * len(target.elts)
            for elt, item in zip(target.elts, value, strict=True):
                self.assign(elt, item)
        elif isinstance(target, ast.Subscript) and _rooted(target):
            self.set_item(target, value, "set")
        else:
            what = {
                "Subscript": "element assignment",
                "Attribute": "assigning to an attribute",
                "Starred": "starred assignment",
            }.get(type(target).__name__, "this assignment target")
            self.error(
                target,
                f"{what} is not supported yet",
                "assign to a plain variable name",
            )

    def _assign_starred(self, target: ast.Tuple | ast.List, value: Value) -> None:
        """``first, *rest = t``: the starred name takes the items between, as a
        tuple (of a tuple, or of an array's rows when their count is known)."""
        elts = target.elts
        star = next(k for k, e in enumerate(elts) if isinstance(e, ast.Starred))
        after = len(elts) - star - 1
        items: tuple[Value, ...] | None = None
        if value is self.poison:
            items = (self.poison,) * (len(elts) - 1)
        elif isinstance(value, tuple):
            items = value
        elif (
            isinstance(value, Node) and value.shape and isinstance(value.shape[0], int)
        ):
            items = self._unpack_array(target, value, value.shape[0])
        if items is None or len(items) < len(elts) - 1:
            self.error(
                target,
                "cannot unpack this value into the names"
                if items is None
                else f"cannot unpack {len(items)} values into at least "
                f"{len(elts) - 1} names",
                "unpack a tuple, or an array whose length is known (index it: "
                "`first, rest = x[0], x[1:]`)",
            )
            for e in elts:
                self.assign(e.value if isinstance(e, ast.Starred) else e, self.poison)
            return
        for e, item in zip(elts[:star], items[:star], strict=True):
            self.assign(e, item)
        middle = items[star : len(items) - after]
        self.assign(elts[star].value, tuple(middle))  # type: ignore[attr-defined]
        for e, item in zip(elts[star + 1 :], items[len(items) - after :], strict=True):
            self.assign(e, item)

    def _unpack_array(
        self, target: ast.Tuple | ast.List, value: Node, count: int
    ) -> tuple[Value, ...]:
        """``a, b = x``: the rows of ``x`` along its first axis, whose length must
        be ``count`` (checked when the kernel runs if it is known only then)."""
        what = f"cannot unpack an array of length {{}} into {count} names"
        n = value.shape[0]
        outer, self.current = self.current, target  # the site of a run-time check
        try:
            if isinstance(n, int):
                if n != count:
                    raise S.ShapeMismatch(what.format(n))
            else:
                S.unify(n, count, what.format(f"`{S.format_dim(n)}`"))
        except S.ShapeMismatch as exc:
            self.error(
                target,
                str(exc),
                "unpack as many names as the array has rows, or index it: "
                "`a, b = x[0], x[1]`",
            )
            return (self.poison,) * count
        finally:
            self.current = outer
        spec = A.row_spec(len(value.shape))
        return tuple(A.take(value, spec, (B.constant(j),)) for j in range(count))

    def _stmt_Assign(self, stmt: ast.Assign) -> None:
        if self._views_assigned_in_turn(stmt):
            return
        value = self.expr(stmt.value)
        for target in stmt.targets:
            self.assign(target, value)
        (target, *_) = stmt.targets
        if len(stmt.targets) > 1 or value is self.poison:
            return
        if isinstance(target, ast.Name):
            self.note_view(target.id, stmt.value, value)
        elif isinstance(target, (ast.Tuple, ast.List)) and all(
            isinstance(e, ast.Name) for e in target.elts
        ):
            names = [e.id for e in target.elts]  # type: ignore[attr-defined]
            if isinstance(stmt.value, ast.Tuple) and len(stmt.value.elts) == len(names):
                # a, b = Y[0], Y[1]: each a view
                for name, expr in zip(names, stmt.value.elts, strict=True):
                    self.note_view(name, expr, self.frame.env.get(name))
            elif isinstance(value, Node) and len(value.shape) > 1:
                # a, b = Y: rows of Y, which they share
                rows = [B.constant(j) for j in range(len(names))]
                self.note_rows(names, stmt.value, rows)

    def _views_assigned_in_turn(self, stmt: ast.Assign) -> bool:
        """``Y[0], Y[1] = Y[1], Y[0]``: NumPy's right side holds views, and each
        is read when its target is assigned, after the targets before it:
        ``Y[1]`` gets the new ``Y[0]``, itself a copy of ``Y[1]`` (no swap).
        Lowered as NumPy runs it, with a warning (a swap is ``Y[[0, 1]] =
        Y[[1, 0]]``).  False (nothing done) for any other assignment."""
        (target, *more) = stmt.targets
        value = stmt.value
        if (
            more
            or not isinstance(target, (ast.Tuple, ast.List))
            or not isinstance(value, (ast.Tuple, ast.List))
            or len(target.elts) != len(value.elts)
            or not all(
                isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                for t in target.elts
            )
        ):
            return False
        written = [t.value.id for t in target.elts]  # type: ignore[attr-defined]
        late = [
            k
            for k, e in enumerate(value.elts)
            if (view := self.view_chain(e)) is not None
            and view is not AMBIGUOUS
            and view.base in written[:k]
            # (a Python list's items are its own objects, not views)
            and self.frame.env.get(view.base) not in LIST_ARRAYS
        ]
        if not late:
            return False
        values = [self.expr(e) for e in value.elts]  # Python evaluates them first
        # (an element of a vector, `x[0], x[1] = x[1], x[0]`, is a number: a copy)
        late = [k for k in late if isinstance(values[k], Node) and values[k].shape]  # type: ignore[union-attr]
        if not late:
            for t, v in zip(target.elts, values, strict=True):
                self.assign(t, v)
            return True
        for k, (t, v) in enumerate(zip(target.elts, values, strict=True)):
            if k in late:
                v = self.expr(value.elts[k])  # the view, read now
            self.assign(t, v)
        filename, line = self.frame.source.filename, stmt.lineno
        written_as = (
            f"{', '.join(map(ast.unparse, target.elts))} = "
            f"{', '.join(map(ast.unparse, value.elts))}"
        )
        message = (
            f"`{written_as}` assigns NumPy views one after the other: "
            f"`{ast.unparse(value.elts[late[0]])}` is read after the assignments "
            "before it, as NumPy does (this does not swap); to swap, write the "
            "right side as copies or with an index array "
            "(`Y[[0, 1]] = Y[[1, 0]]`)"
        )
        if (filename, line, message) not in _WARNED:
            _WARNED.add((filename, line, message))
            warnings.warn_explicit(message, SymdiffWarning, filename, line)
        return True

    def _stmt_AnnAssign(self, stmt: ast.AnnAssign) -> None:
        if stmt.value is not None:
            self.assign(stmt.target, self.expr(stmt.value))

    def set_item(
        self,
        target: ast.Subscript,
        value: Value,
        mode: AR.MaskMode,
    ) -> None:
        """``x[key] = value`` (or ``+=``): ``x`` is rebound to the updated array
        (and the arrays that share it, :mod:`symdiff.frontend.views`, see it)."""
        if isinstance(target.value, ast.Subscript):
            self._set_chained(target, value, mode)
            return
        name = target.value.id  # type: ignore[attr-defined]
        base = self.expr(target.value)
        key = self.expr(target.slice)
        if base is self.poison or key is self.poison or value is self.poison:
            return
        if isinstance(target.slice, ast.List):
            key = (key,)  # out[[0, 2]] = v: a list of positions, not out[0, 2]
        if isinstance(base, Static) and isinstance(base.obj, dict):
            self._set_dict_item(target, name, base.obj, key, value, mode)
            return
        if (
            isinstance(base, tuple)
            and base
            and all(isinstance(b, Node) for b in base)
            and len({b.shape for b in base}) == 1  # type: ignore[union-attr]
        ):
            # f = [0.0, x, 1.0]; f[i] = v: a list of numbers (of rows of one
            # length: T = [[0.0] * 3 for _ in range(2)]) is an array
            base = as_list(AR.array(base))
        if not (isinstance(base, Node) and base.shape):
            self.error(
                target,
                "element assignment needs an array",
                "create it first, e.g. `out = np.zeros(n)`",
            )
            return
        if not isinstance(value, (Node, Masked)):
            self.error(
                target,
                "the assigned value must be a number or an array",
                "assign one element at a time, e.g. `out[i] = a` and `out[j] = b`",
            )
            return
        listed = base in LIST_ARRAYS
        if listed and base.dtype != "float64" and _float_value(value):
            # dp = [0] * (n + 1); dp[i] = 0.5 * x: Python's list holds the float
            base = as_list(B.to_float(base))
        elif base.dtype != "float64" and isinstance(value, Node):
            # a NumPy int array truncates what is stored (no derivative)
            value = AR.stored(value, base.dtype)
        outer, self.current = self.current, target  # the checks' line
        try:
            updated = self.updated(base, key, value, mode)
        except (AR.Unsupported, S.ShapeMismatch) as exc:
            self.error(target, exc.args[0], getattr(exc, "hint", ""))
            return
        finally:
            self.current = outer
        if listed:
            as_list(updated)
        self.hints.setdefault(updated, name)
        self.frame.env[name] = updated
        self.wrote_in_place(name, target)

    def _set_dict_item(
        self,
        target: ast.Subscript,
        name: str,
        mapping: dict[Any, Value],
        key: Value,
        value: Value,
        mode: AR.MaskMode,
    ) -> None:
        """``d["acc"] = v`` (or ``+=``) of a dict made in the function: ``d`` is
        rebound to a new mapping (dicts are values here, as arrays are)."""
        known = key.obj if isinstance(key, Static) else None
        if isinstance(key, Node) and key.op == "const" and not key.shape:
            known = key.value
        if not isinstance(known, (str, int, float, bool, tuple)):
            self.error(
                target,
                "a dict key must be known while tracing (a constant, a static "
                "argument, an unrolled loop's index)",
                "use string or integer constants as keys",
            )
            return
        if mode != "set":
            old = mapping.get(known)
            if not (isinstance(old, Node) and isinstance(value, Node)):
                self.error(target, f"`{name}[{known!r}]` has no number to update")
                return
            value = B.add(old, value) if mode == "add" else mode(old, value)  # type: ignore[operator]
        self.frame.env[name] = Static({**mapping, known: value})

    def updated(
        self, base: Node, key: Value, value: Node | Masked, mode: AR.MaskMode
    ) -> Node:
        """``base`` after ``base[key] = value`` (``mode``: "set", "add" or an
        operation); raises ``Unsupported`` or ``ShapeMismatch``."""
        items = list(key) if isinstance(key, tuple) else [key]
        block = masks.window_write(base, items, value, mode)
        if block is not None:  # x[i:] *= 0.9: a slice of run-time length
            return self._basic_update(base, block[0], block[1], "set")
        if isinstance(value, Masked):
            # y[mask] = np.log(x[mask]): the selection's data where the mask holds
            return _masked_update(base, key, value, mode)
        key = AR.windows(key)  # out[i:i + 3] = v: at the window's positions
        key = AR.stepped_positions(base, key)  # y[::2] = v: at its positions
        items = list(key) if isinstance(key, tuple) else [key]
        if any(AR.is_array_index(i) for i in items):
            return AR.advanced_update(base, key, value, mode)
        return self._basic_update(base, key, value, mode)  # type: ignore[arg-type]

    def _set_chained(
        self, target: ast.Subscript, value: Value, mode: AR.MaskMode
    ) -> None:
        """``M[i][j] = v``: ``M[i]`` is a view of ``M`` (basic indexing), so the
        write reaches ``M``, as ``M[i, j] = v`` would."""
        inner = target.value
        assert isinstance(inner, ast.Subscript)
        root = inner
        while isinstance(root, ast.Subscript):
            root = root.value  # type: ignore[assignment]
        part = self.expr(inner)
        key = self.expr(target.slice)
        if any(v is self.poison for v in (part, key, value)):
            return
        outer_key = self.expr(inner.slice)
        if isinstance(inner.slice, ast.List):
            outer_key = (outer_key,)  # M[[0, 2]]: positions, a copy in NumPy
        if not (
            isinstance(root, ast.Name)
            and isinstance(part, Node)
            and part.shape
            and isinstance(value, (Node, Masked))
            and index_view(root.id, outer_key, part) is not None
        ):
            self.error(
                target,
                "element assignment into an indexed array is supported where the "
                "index makes a view (integers and slices)",
                "index once: `M[i, j] = v`",
            )
            return
        if isinstance(target.slice, ast.List):
            key = (key,)
        whole = self.frame.env.get(root.id)
        if (
            whole in LIST_ARRAYS
            and whole.dtype != "float64"  # type: ignore[union-attr]
            and _float_value(value)
        ):
            # L = [[0] * 3 for _ in ...]; L[i][j] = 0.5: lists of floats now
            self.frame.env[root.id] = as_list(B.to_float(whole))  # type: ignore[arg-type]
            part = self.expr(inner)
            assert isinstance(part, Node)
        elif part.dtype != "float64" and isinstance(value, Node):
            value = AR.stored(value, part.dtype)
        outer, self.current = self.current, target
        try:
            part = self.updated(part, key, value, mode)
        except (AR.Unsupported, S.ShapeMismatch) as exc:
            self.error(target, exc.args[0], getattr(exc, "hint", ""))
            return
        finally:
            self.current = outer
        self.set_item(inner, part, "set")

    def _basic_update(self, base: Node, key: Value, value: Node, mode: str) -> Node:
        """``base`` with ``base[key] = value`` for integers (run-time ones too)
        and slices; in a branch, its run-time positions are clamped."""
        spec, index = AR.dynamic_spec(base, key, "element assignment")
        region = A.region(base, spec)
        if value.shape and value.shape != region:
            S.broadcast([region, value.shape], lambda: "in element assignment")
        if self.frame.live is not B.TRUE:
            spec = A.guarded(spec)  # both branches run: see _expr_Subscript
        return A.index_update(base, value, spec, index, mode)

    def _stmt_AugAssign(self, stmt: ast.AugAssign) -> None:
        target = stmt.target
        if (
            isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Name)
            and isinstance(stmt.op, ast.Add)
        ):
            self.set_item(target, self.expr(stmt.value), "add")
            return
        if (
            isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Name)
            and type(stmt.op) in BINOPS
            and self._is_masked(target)
        ):
            # y[mask] *= v: reading y[mask] alone would be refused (its length
            # depends on the values); the update keeps y's shape
            self.set_item(target, self.expr(stmt.value), BINOPS[type(stmt.op)])
            return
        as_load = ast.copy_location(
            ast.BinOp(left=_as_load(stmt.target), op=stmt.op, right=stmt.value), stmt
        )
        ast.fix_missing_locations(as_load)
        before = self.frame.env.get(target.id) if isinstance(target, ast.Name) else None
        value = self.expr(as_load)
        if (
            isinstance(target, ast.Name)
            and isinstance(before, Node)
            and before.shape
            and isinstance(value, Node)
        ):
            # `row /= s` of an array writes into it: what shares it sees the change
            if value.shape != before.shape:
                self.error(
                    stmt,
                    f"`{target.id}` {_OP_SYMBOLS.get(type(stmt.op), '')}= ... "
                    "writes into the array in place, so it cannot change its shape "
                    f"from {S.format_shape(before.shape)} to "
                    f"{S.format_shape(value.shape)}",
                    f"write `{target.id} = {target.id} "
                    f"{_OP_SYMBOLS.get(type(stmt.op), '+')} ...` for a new array",
                )
                return
            self.hints.setdefault(value, target.id)
            self.frame.env[target.id] = value
            self.wrote_in_place(target.id, stmt)
            return
        self.assign(stmt.target, value)

    def _is_masked(self, target: ast.Subscript) -> bool:
        """Whether ``target`` is ``y[mask]`` (a boolean array among its indices)."""
        key = self.expr(target.slice)
        items = key if isinstance(key, tuple) else (key,)
        return any(isinstance(i, Node) and i.shape and i.dtype == "bool" for i in items)

    def _stmt_FunctionDef(self, stmt: ast.FunctionDef) -> None:
        """A local function: inlined at each call (``Lowerer.inline_local``)."""
        if stmt.decorator_list:
            self.error(
                stmt.decorator_list[0],
                "a decorator on a local function is not supported",
                "remove it, or define the function at module level",
            )
            self.frame.env[stmt.name] = self.poison
            return
        defaults = [self.expr(d) for d in stmt.args.defaults]
        self.frame.env[stmt.name] = self.local_function(stmt, stmt.name, defaults)

    def _stmt_Nonlocal(self, stmt: ast.Nonlocal) -> None:
        self._declaration(stmt)

    def _stmt_Global(self, stmt: ast.Global) -> None:
        self._declaration(stmt)

    def _declaration(self, stmt: ast.Nonlocal | ast.Global) -> None:
        what, hint = UNSUPPORTED_STATEMENTS[type(stmt)]
        self.error(stmt, what, hint)
        for name in stmt.names:  # no follow-on errors where they are used
            self.frame.env[name] = self.poison

    def _stmt_Return(self, stmt: ast.Return) -> None:
        in_loop = self.frame.loop is not None
        if stmt.value is None or in_loop:
            # returns in loops were rewritten into a break (frontend/returns.py),
            # unless one of the loop's returns has no value
            self.error(
                stmt,
                "`return` without a value"
                if stmt.value is None
                else "a loop whose other `return` has no value cannot return one",
                "return the function's result from every `return`",
            )
            value: Value = self.poison
        else:
            value = self.expr(stmt.value)
            if self.escaping(stmt.value, value, "returned"):
                value = self.poison
            elif self.frame is self.frames[0] and has_masked(value):
                message = refusal("returning").message
                value = self.error(stmt.value, message, HINT)
        self.frame.returns.append((self.frame.live, value))
        self.frame.live = B.FALSE

    def _stmt_Expr(self, stmt: ast.Expr) -> None:
        value = stmt.value
        if isinstance(value, ast.Constant):
            return  # a docstring or a bare constant: no effect
        if isinstance(value, (ast.Yield, ast.YieldFrom, ast.Await)):
            self.expr(value)  # reports the construct itself
            return
        if isinstance(value, ast.Call) and self._list_method(stmt, value):
            return
        if isinstance(value, ast.Call) and self.inplace_call(stmt, value):
            return  # np.add.at(K, idx, v), a.fill(0.0): the array after the write
        if isinstance(value, ast.Call) and self._user_function(value.func):
            self.statement_calls.add(value)
            self.expr(value)  # `check(mode)`: it may raise; its value is unused
            return
        if isinstance(value, ast.Call) and self._skipped_call(stmt, value):
            return
        if isinstance(value, ast.Call):
            name = ast.unparse(value.func)
            self.error(
                stmt,
                f"a call of `{name}` as a statement is not supported: what it "
                "changes is not known",
                "assign what it computes (`a = f(a)`, `a[i] = v`); np.add.at, "
                "np.copyto, np.fill_diagonal, a.fill and a.sort are supported",
            )
            return
        self.error(
            stmt,
            "an expression statement has no effect on the result",
            "assign its value to a variable, or remove it",
        )

    def _skipped_call(self, stmt: ast.Expr, call: ast.Call) -> bool:
        """``print(...)``, ``warnings.warn(...)``, ``log.info(...)``: output a
        kernel does not produce, skipped with a warning naming the line (as JAX
        prints once, while tracing, where symdiff reads the source instead);
        ``warnings.simplefilter(...)`` and the like: skipped silently, since a
        kernel raises no warnings to filter."""
        obj = self._static_object(call.func)
        if obj is None:
            return False
        if obj in _WARNING_FILTERS:
            return True
        if not (
            obj is builtins.print
            or obj is warnings.warn
            or getattr(obj, "__module__", None) == "logging"
            or isinstance(getattr(obj, "__self__", None), _LOGGERS)
        ):
            return False
        filename, line = self.frame.source.filename, stmt.lineno
        if os.path.realpath(filename).startswith(_LIBRARY_DIRS):
            return True  # a library's own (its function is refused, or inlined)
        message = (
            f"`{ast.unparse(call.func)}(...)` is skipped in the kernel of "
            f"`{self.frame.source.name}`, which has no side effects; call the "
            "Python function itself to see its output"
        )
        if (filename, line, message) not in _WARNED:  # once, however many kernels
            _WARNED.add((filename, line, message))
            warnings.warn_explicit(message, SymdiffWarning, filename, line)
        return True

    def _static_object(self, node: ast.expr) -> object | None:
        """What ``node`` (a name, or attributes of one) names, where that is a
        module-level object or a builtin, not a value of the function; None
        otherwise.  Nothing is reported."""
        attrs: list[str] = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        frame = self.frame
        value = frame.env.get(node.id)
        if value is not None:
            if not isinstance(value, Static):
                return None
            obj = value.obj
        elif node.id in frame.local_names:
            return None
        else:
            fn = frame.source.fn
            code = fn.__code__
            if node.id in code.co_freevars:
                return None
            missing = object()
            obj = fn.__globals__.get(node.id, getattr(builtins, node.id, missing))
            if obj is missing:
                return None
        for attr in reversed(attrs):
            if not isinstance(obj, (types.ModuleType, type, np.ufunc, *_LOGGERS)):
                return None
            obj = getattr(obj, attr, None)
        return obj

    def _stmt_With(self, stmt: ast.With) -> None:
        """``with np.errstate(...)`` or ``warnings.catch_warnings()``: the body
        as it is (a kernel sets no floating-point flags and raises no warnings);
        any other context manager is reported."""
        for item in stmt.items:
            call = item.context_expr
            func = call.func if isinstance(call, ast.Call) else None
            manager = None if func is None else self._static_object(func)
            if manager not in _QUIET_MANAGERS or item.optional_vars is not None:
                what, hint = UNSUPPORTED_STATEMENTS[ast.With]
                self.error(stmt, what, hint)
                self._poison_names(stmt)
                return
        self.block(stmt.body)

    def _stmt_Delete(self, stmt: ast.Delete) -> None:
        """``del tmp``: nothing to free in a kernel (the graph holds values, not
        variables), so only names are accepted."""
        if not all(isinstance(t, ast.Name) for t in stmt.targets):
            what, hint = UNSUPPORTED_STATEMENTS[ast.Delete]
            self.error(stmt, what, hint)
            return
        for t in stmt.targets:
            forget(self.frame, t.id)  # type: ignore[attr-defined]

    def _user_function(self, func: ast.expr) -> bool:
        """Whether ``func`` names one of the user's own Python functions (a
        helper or a local function), called as a statement."""
        if not isinstance(func, ast.Name):
            return False
        value = self.frame.env.get(func.id)
        if isinstance(value, Static) and isinstance(value.obj, LocalFunction):
            return True
        if value is not None or func.id in self.frame.local_names:
            return False
        fn = self.frame.source.fn.__globals__.get(func.id)
        return inspect.isfunction(fn) and not fn.__module__.startswith(
            ("numpy", "scipy", "math", "symdiff")
        )

    def _list_method(self, stmt: ast.Expr, call: ast.Call) -> bool:
        """``ys.append(v)`` (or ``ys.extend(t)`` of a tuple) on a list, which is a
        tuple of values: ``ys`` is rebound to the longer tuple, where its length
        stays known (straight-line code, unrolled loops).  False for a call of
        anything but a list's method."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
            return False
        name, method = func.value.id, func.attr
        frame = self.frame
        items = frame.env.get(name)
        if items is self.poison:
            return True  # already reported
        if (
            method in ("append", "extend")
            and isinstance(items, Node)
            and items in LIST_ARRAYS
            and len(items.shape) >= 1
            and isinstance(items.shape[0], int)
        ):
            # a list written item by item (an array since, `L[1] = v`): its
            # items again, to grow
            items = tuple(AR.index(items, constant(k)) for k in range(items.shape[0]))
        if not isinstance(items, tuple):
            return False
        where = f"`{name}.{method}`"
        if method not in ("append", "extend"):
            self.error(stmt, f"{where} is not supported", LIST_HINT)
            frame.env[name] = self.poison
            return True
        loop = frame.loop
        if loop is not None and name in loop.outer:
            if loop.index is not None or loop.continues or loop.breaks:
                self.error(
                    stmt,
                    f"appending to `{name}` in this loop gives a list whose length "
                    "is known only at run time",
                    LIST_HINT,
                )
                frame.env[name] = self.poison
                return True
        # (under a run-time condition: the branches must end with lists of one
        # length, which the `if` checks where they join)
        if len(call.args) != 1 or call.keywords:
            self.error(
                stmt,
                f"{where} takes one argument",
                "`ys.append(v)` with one value; `ys.extend((a, b))` for several",
            )
            frame.env[name] = self.poison  # no follow-on errors where it is used
            return True
        value = self.expr(call.args[0])
        if method == "append":
            frame.env[name] = (*items, value)
        elif isinstance(value, tuple):
            frame.env[name] = (*items, *value)
        elif value is not self.poison:
            self.error(
                call.args[0],
                f"{where} of an array gives a list whose length is not known when "
                "compiling",
                "append the items one by one, or join arrays with np.concatenate",
            )
            frame.env[name] = self.poison
        return True

    def _stmt_Pass(self, stmt: ast.Pass) -> None:
        pass

    def _stmt_Assert(self, stmt: ast.Assert) -> None:
        pass  # checks on values are not part of the derivative

    def _stmt_Import(self, stmt: ast.Import) -> None:
        for alias in stmt.names:
            name = alias.name if alias.asname else alias.name.split(".")[0]
            module = self._import(stmt, alias.name)
            if module is not None:
                target = importlib.import_module(name) if not alias.asname else module
                self.frame.env[alias.asname or name] = Static(target)

    def _stmt_ImportFrom(self, stmt: ast.ImportFrom) -> None:
        module = self._import(stmt, stmt.module or "")
        for alias in stmt.names:
            if module is None or not hasattr(module, alias.name):
                self.error(stmt, f"cannot import `{alias.name}` from `{stmt.module}`")
                continue
            self.frame.env[alias.asname or alias.name] = python_value(
                getattr(module, alias.name)
            )

    def _import(self, stmt: ast.stmt, name: str) -> types.ModuleType | None:
        try:
            return importlib.import_module(name)
        except ImportError:
            self.error(stmt, f"cannot import `{name}`")
            return None

    def _stmt_Raise(self, stmt: ast.Raise) -> None:
        """A ``raise`` that runs whatever the numbers are (``mode`` is not one of
        the known strings): the user's exception is raised now, as the function
        itself raises it.  Any other ``raise`` depends on values: refused."""
        reached = self.frames_reached()
        if reached and stmt.exc is not None:
            exc = self._static_exception(stmt.exc)
            if exc is not None:
                with contextlib.suppress(AttributeError):  # (a class with slots)
                    exc.symdiff_raised_by_function = True  # type: ignore[attr-defined]
                raise exc
        in_loop = any(f.loop is not None for f in self.frames)
        if not reached and not in_loop and stmt.exc is not None:
            # `if sigma <= 0: raise ValueError(...)`: the kernel raises it there
            exception, message = self._runtime_exception(stmt.exc)
            self.raises.append(Raise(self.path_condition(), exception, message))
            self.frame.live = B.FALSE  # the path ends here, as at a `return`
            return
        what, hint = UNSUPPORTED_STATEMENTS[ast.Raise]
        if reached:
            what = "this `raise` runs for these arguments, whatever their values"
            hint = "the function raises here when Python runs it too"
        elif in_loop:
            what = "`raise` inside a loop is not supported"
            hint = (
                "set a flag in the loop and raise after it (`if failed: raise ...`), "
                "or use `for ... else: raise ...`"
            )
        self.error(stmt, what, hint)

    def _runtime_exception(self, expr: ast.expr) -> tuple[str, str]:
        """The builtin exception class a ``raise`` of values makes, and its
        message: the exception's own where it reads only Python objects, else
        its constant text with each ``{...}`` as written (a kernel's message is
        a constant).  A class of the user's is raised as its builtin base, its
        name leading the message."""
        exc = self._static_exception(expr)
        if exc is not None:
            cls, message = type(exc), str(exc)
        else:
            call = expr if isinstance(expr, ast.Call) else None
            found = self._static_object(call.func if call else expr)
            cls = found if isinstance(found, type) else RuntimeError
            message = _message_text(call.args[0]) if call and call.args else ""
        if not issubclass(cls, BaseException):
            cls = RuntimeError
        base = next(
            c
            for c in cls.__mro__
            if c.__module__ == "builtins" and hasattr(builtins, c.__name__)
        )
        if base is not cls:
            message = f"{cls.__name__}: {message}" if message else cls.__name__
        return base.__name__, message

    def _static_exception(self, expr: ast.expr) -> BaseException | None:
        """The exception ``expr`` makes, when it reads only Python objects
        (strings, globals, static arguments); else None."""
        fn = self.frame.source.fn
        scope: dict[str, object] = {}
        for node in ast.walk(expr):
            if isinstance(node, ast.Name) and node.id in self.frame.env:
                value = self.frame.env[node.id]
                if not isinstance(value, Static):
                    return None  # reads a number: known only when the kernel runs
                scope[node.id] = value.obj
        try:
            code = compile(ast.Expression(expr), "<raise>", "eval")
            exc = eval(code, dict(fn.__globals__), scope)
        except Exception:
            return None
        if isinstance(exc, type) and issubclass(exc, BaseException):
            exc = exc()
        return exc if isinstance(exc, BaseException) else None

    def _stmt_If(self, stmt: ast.If) -> None:
        frame = self.frame
        cond = self.condition(stmt.test, self.expr(stmt.test, test=True))
        if cond is self.poison:  # still look at both branches for other problems
            self.block(stmt.body)
            self.block(stmt.orelse)
            return
        if cond.op == "const":  # decided at compile time: lower one branch only
            self.block(stmt.body if cond.value else stmt.orelse)
            return
        env0, live0 = dict(frame.env), frame.live
        frame.branches.append(env0)
        try:
            frame.live = B.logical_and(live0, cond)
            self.block(stmt.body)
            env_then, live_then = frame.env, frame.live
            frame.env = dict(env0)
            frame.live = B.logical_and(live0, B.logical_not(cond))
            self.block(stmt.orelse)
            env_else, live_else = frame.env, frame.live
        finally:
            frame.branches.pop()
        if live_then is B.FALSE:
            return  # the state after the `if` is the else branch's
        if live_else is B.FALSE:
            frame.env, frame.live = env_then, live_then
            return
        frame.env = {}
        for name in env_then.keys() | env_else.keys():
            if is_view_key(name):  # what a name views, after the `if`
                frame.env[name] = after_if(env_then.get(name), env_else.get(name))
                continue
            a = env_then.get(name, Undefined(name, stmt.lineno))
            b = env_else.get(name, Undefined(name, stmt.lineno))
            made = name in GENERATED.get(id(frame.source.tree), ())
            merged = a if a is b else self.merge(stmt, cond, a, b, "" if made else name)
            if isinstance(merged, Node) and merged.op == "select":
                self.hints.setdefault(merged, name)  # `q` after the `if`, too
            frame.env[name] = merged
        untouched = live_then is B.logical_and(
            live0, cond
        ) and live_else is B.logical_and(live0, B.logical_not(cond))
        frame.live = live0 if untouched else B.logical_or(live_then, live_else)


def _message_text(node: ast.expr) -> str:
    """An exception's message as written: a string, or an f-string with its
    ``{...}`` parts shown as in the source (their values are not known while
    tracing)."""
    if isinstance(node, ast.Constant):
        return str(node.value)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            else:
                parts.append("{" + ast.unparse(value.value) + "}")  # type: ignore[attr-defined]
        return "".join(parts)
    return ast.unparse(node)


def _rooted(target: ast.Subscript) -> bool:
    """``x[k]`` or ``M[i][j]``: subscripts of a name."""
    root: ast.expr = target
    while isinstance(root, ast.Subscript):
        root = root.value
    return isinstance(root, ast.Name)


def _float_value(value: Value) -> bool:
    node = value.data if isinstance(value, Masked) else value
    return isinstance(node, Node) and node.dtype == "float64"


def _as_load(target: ast.expr) -> ast.expr:
    if isinstance(target, ast.Name):
        return ast.copy_location(ast.Name(id=target.id, ctx=ast.Load()), target)
    return target
