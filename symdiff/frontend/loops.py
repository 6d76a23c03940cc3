"""Lowering loops: ``for`` and ``while`` become loop nodes (``ir/loops.py``).

A loop's body is lowered once, on placeholders: the iteration number, the loop's
state (every variable the body assigns that exists before the loop) and what it
reads from outside (captured).  ``if``/``else`` inside is if-converted as anywhere;
``break`` and ``continue`` record the state where they happen, under the condition
that reaches them, like ``return`` does at top level; the state at the end of an
iteration is the select over those records.

A variable whose dtype or shape grows in the body (``s = 0`` then ``s += x[i]``; a
scalar that becomes an array) is widened and the body lowered again.

Short loops over constants (at most :data:`UNROLL` iterations) and loops over
tuples are unrolled: the body is lowered once per item, which gives the optimiser
the most to work with and costs nothing in code size.  ``continue`` there records
the state as in a loop node, and each iteration ends in the select over its
records.  A short loop with a ``break`` of its own is a loop node of constant
count; its ``else`` block runs under a state variable that each ``break`` sets.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from symdiff.frontend import arrays as AR
from symdiff.frontend import bounds
from symdiff.frontend.expressions import TracedPartial, _as_maybe, _optional
from symdiff.frontend.masks import HINT, has_masked, refusal
from symdiff.frontend.statements import _local_names_of
from symdiff.frontend.values import (
    LIST_ARRAYS,
    Masked,
    Maybe,
    Static,
    Undefined,
    Value,
    as_list,
    is_namedtuple,
)
from symdiff.frontend.views import (
    AMBIGUOUS,
    View,
    bases_written,
    is_view_key,
    view_in,
)
from symdiff.ir import arrays as A
from symdiff.ir import build as B
from symdiff.ir import loops as L
from symdiff.ir import shapes as S
from symdiff.ir.node import DTYPES, Node, topological

if TYPE_CHECKING:
    from symdiff.frontend.lower import Frame

#: Loops over constant ranges of at most this many iterations are unrolled.
UNROLL = 8

#: At most this many copies of a body in nested unrolled loops: a constant range
#: is unrolled only while its trip count times those of the unrolled loops around
#: it and of the constant ranges inside it stays within this.  Of nested
#: ``range(8)`` the innermost one is unrolled and the others stay loop nodes: a
#: Hessian of three nested ``range(8)`` unrolled (512 copies) took 94 s to build.
UNROLL_NESTED = 16

#: How many times a body is lowered again to widen its state's dtypes and shapes.
_WIDEN = 4


@dataclass
class LoopContext:
    """Where ``break`` and ``continue`` leave an iteration: (condition, state)."""

    breaks: list[tuple[Node, dict[str, Value]]] = field(default_factory=list)
    continues: list[tuple[Node, dict[str, Value]]] = field(default_factory=list)
    #: the iteration number of a loop node's body (None in an unrolled loop)
    index: Node | None = None
    #: the variables that exist where an iteration starts (lists among them
    #: cannot grow where the iteration may not reach: ``StatementLowering``)
    outer: frozenset[str] = frozenset()


@dataclass
class Source:
    """What a ``for`` loop runs over: a trip count and the item of iteration k;
    ``items`` when it is a constant sequence (unrolled)."""

    count: Node
    #: item(k, capture): ``capture`` turns a value from outside into the body's
    #: input for it
    item: Callable[[Node, Callable[[Value], Value]], Value]
    items: list[Value] | None = None


def _row_target(stmt: ast.For) -> list[tuple[str, ast.expr]]:
    """The loop's names that are rows of arrays, with the arrays' expressions:
    ``row`` of ``for row in Y`` (``Y[1:]``, ``Y.T``, ``reversed(Y)``: any
    expression, a view or not), of ``for i, row in enumerate(Y)`` and each of
    ``for a, b in zip(Y, Z)``."""
    it, target = stmt.iter, stmt.target
    name = (
        it.func.id if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) else ""
    )
    if name == "enumerate" and len(it.args) == 1 and isinstance(target, ast.Tuple):
        if len(target.elts) == 2:
            return _row_target(ast.For(target=target.elts[1], iter=it.args[0]))  # type: ignore[call-arg, attr-defined]
        return []
    if name == "zip" and isinstance(target, ast.Tuple):
        if len(target.elts) != len(it.args):  # type: ignore[attr-defined]
            return []
        pairs = []
        for elt, arg in zip(target.elts, it.args, strict=True):  # type: ignore[attr-defined]
            pairs += _row_target(ast.For(target=elt, iter=arg))  # type: ignore[call-arg]
        return pairs
    if isinstance(target, ast.Name) and name in ("", "reversed"):
        return [(target.id, it)]  # not range(...)
    return []


def _target_leaves(body: list[ast.stmt], kinds: tuple[type, ...]) -> Iterator[ast.expr]:
    """The targets the statements of ``kinds`` in ``body`` assign, with tuples,
    lists and starred targets taken apart."""
    for stmt in body:
        for node in ast.walk(stmt):
            if not isinstance(node, kinds):
                continue
            targets: list[ast.expr] = (
                list(node.targets)
                if isinstance(node, (ast.Assign, ast.Delete))
                else [node.target]  # type: ignore[attr-defined]
            )
            while targets:
                t = targets.pop()
                if isinstance(t, (ast.Tuple, ast.List)):
                    targets.extend(t.elts)
                elif isinstance(t, ast.Starred):
                    targets.append(t.value)
                else:
                    yield t


def _rebound_in(body: list[ast.stmt]) -> set[str]:
    """The names ``body`` binds to new values (not in-place writes: ``x += v``
    and ``x[i] = v`` keep the array)."""
    kinds = (ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.Delete)
    return {t.id for t in _target_leaves(body, kinds) if isinstance(t, ast.Name)}


def _subscript_written(body: list[ast.stmt]) -> set[str]:
    """The names ``body`` writes an item of (``s[0] = v``, ``s[k] += v``)."""
    return {
        t.value.id
        for t in _target_leaves(body, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
    }


def _is_dict(value: Value) -> bool:
    return isinstance(value, Static) and isinstance(value.obj, dict)


def _leaves(value: Value) -> list[Node] | None:
    """The nodes of a (nested) tuple or dict of nodes (a dict's in the order of
    its keys), or None for anything else."""
    out: list[Node] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Node):
            out.append(v)
        elif isinstance(v, tuple):
            stack.extend(reversed(v))
        elif isinstance(v, Maybe):  # a variable None on some paths: flag, value
            out.extend((v.none, v.value))
        elif _is_dict(v):
            # (a string or another Python object in it stays what it is)
            items = [x for x in v.obj.values() if not _is_constant(x)]  # type: ignore[union-attr]
            stack.extend(reversed(items))
        else:
            return None
    return out


def _is_constant(value: Value) -> bool:
    """A Python object held in a dict (``{"mode": "sq"}``), not a value of the
    function: it is not part of a loop's state, and must stay the same."""
    return isinstance(value, Static) and not _is_dict(value)


def _aligned(value: Value, like: Value) -> Value | None:
    """``value`` with each dict's keys in the order of ``like``'s (the loop's
    state as it started), or None where a dict's keys differ."""
    if _is_dict(like):
        keys = list(like.obj)  # type: ignore[union-attr]
        if not _is_dict(value) or set(value.obj) != set(keys):  # type: ignore[union-attr]
            return None
        items = {}
        for k in keys:
            start, now = like.obj[k], value.obj[k]  # type: ignore[union-attr]
            if _is_constant(start):
                if not (_is_constant(now) and now.obj == start.obj):  # type: ignore[union-attr]
                    return None  # a Python object changed by the loop
                items[k] = start
                continue
            v = _aligned(now, start)
            if v is None:
                return None
            items[k] = v
        return Static(items)
    if isinstance(like, tuple) and isinstance(value, tuple) and len(like) == len(value):
        parts = [_aligned(v, w) for v, w in zip(value, like, strict=True)]
        return None if any(p is None for p in parts) else _same_tuple(like, parts)  # type: ignore[arg-type]
    return value


def _same_tuple(like: tuple, items: list[Value]) -> tuple:  # type: ignore[type-arg]
    """``items`` as a tuple of ``like``'s class: a namedtuple stays one (its
    fields are read by name)."""
    return type(like)(*items) if is_namedtuple(like) else tuple(items)


def _rebuild(shape_of: Value, leaves: list[Node]) -> Value:
    """``leaves`` arranged as ``shape_of`` (a node, or a nested tuple or dict)
    is."""
    it = iter(leaves)

    def build(v: Value) -> Value:
        if isinstance(v, tuple):
            return _same_tuple(v, [build(x) for x in v])
        if isinstance(v, Maybe):
            return Maybe(next(it), next(it))
        if _is_dict(v):
            return Static(
                {k: x if _is_constant(x) else build(x) for k, x in v.obj.items()}  # type: ignore[union-attr]
            )
        return next(it)

    # tuples nest as deep as the user wrote them: shallow recursion
    return build(shape_of)


def _count(start: Node, stop: Node, step: int) -> Node:
    """``len(range(start, stop, step))`` for a constant non-zero ``step``."""
    if step > 0:
        span = B.apply("sub", stop, start)
    else:
        span = B.apply("sub", start, stop)
    k = abs(step)
    if k != 1:
        span = B.apply("floordiv", B.add(span, B.constant(k - 1)), B.constant(k))
    return B.apply("max", span, B.constant(0))


def _literal_range(it: ast.expr) -> int | None:
    """The trip count of ``range(...)`` of integer literals, else None."""
    if not (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id == "range"
        and 1 <= len(it.args) <= 3
        and not it.keywords
    ):
        return None
    bounds = []
    for arg in it.args:
        negative = isinstance(arg, ast.UnaryOp) and isinstance(arg.op, ast.USub)
        value = arg.operand if isinstance(arg, ast.UnaryOp) and negative else arg
        if not (isinstance(value, ast.Constant) and type(value.value) is int):
            return None
        bounds.append(-value.value if negative else value.value)
    if len(bounds) == 3 and bounds[2] == 0:
        return None
    return len(range(*bounds))


def _unrolled_copies(body: list[ast.stmt]) -> int:
    """How many copies of its innermost statements the constant ranges nested in
    ``body`` would unroll into: the largest product of their trip counts along a
    nesting path (walked with a stack, not recursion)."""
    most = 1
    stack: list[tuple[ast.AST, int]] = [(stmt, 1) for stmt in body]
    while stack:
        node, copies = stack.pop()
        if isinstance(node, ast.For):
            trips = _literal_range(node.iter)
            if trips is not None and trips <= UNROLL:
                copies *= max(trips, 1)
        most = max(most, copies)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                stack.append((child, copies))
    return most


class LoopLowering:
    """Mixin: ``for``, ``while``, ``break``, ``continue``."""

    frame: Frame
    current: ast.AST | None
    hints: dict[Node, str]
    poison: Node
    diagnostics: list
    error: Callable[..., Node]
    expr: Callable[..., Value]
    block: Callable[..., None]
    assign: Callable[..., None]
    merge: Callable[..., Value]
    path_condition: Callable[[], Node]
    condition: Callable[..., Node]
    #: the trip counts of the unrolled loops being lowered, outermost first
    unrolled_trips: list[int]
    frames: list[Frame]
    appending_loop: Callable[..., bool]
    #: the loop bodies being lowered: (their frame's index, their capture)
    captures: list[tuple[int, Callable[..., Value]]]
    note_rows: Callable[..., None]
    _derive: Callable[..., Node]
    #: arrays of the loop's surroundings that its body wrote without assigning
    #: them (through a helper's argument), found by lowering it
    written_in_body: list[str]

    # -- for ------------------------------------------------------------------------
    def _stmt_For(self, stmt: ast.For) -> None:
        copies = _unrolled_copies(stmt.body)  # of the constant ranges inside
        for trips in self.unrolled_trips:  # times the unrolled loops around it
            copies *= max(trips, 1)
        source = self._source(stmt.iter, min(UNROLL, UNROLL_NESTED // copies))
        if source is not None and source.items is None:
            if self.appending_loop(stmt, source):  # ys.append(v) in a loop node
                return
        self.for_loop(stmt, source)

    def for_loop(
        self,
        stmt: ast.For,
        source: Source | None,
        private: frozenset[str] = frozenset(),
    ) -> None:
        """``stmt`` over ``source``; ``private``: names only the loop sees (the
        targets of a comprehension, ``comprehensions.py``), never its state."""
        if source is None:
            self._poison_loop(stmt)
            return
        if source.items is not None:
            self._unrolled(stmt, source.items)
            return
        target = stmt.target
        rows = _row_target(stmt)

        def bind(k: Node, capture: Callable[[Value], Value]) -> None:
            self.assign(target, source.item(k, capture))
            for row, array in rows:  # `for row in Y`: row k of Y, which it shares
                self.note_rows([row], array, [k])

        self._with_else(
            stmt,
            lambda flag: self._loop(
                stmt, source.count, True, bind, None, _hint(target), flag, private
            ),
        )

    def _unrolled(self, stmt: ast.For, items: list[Value]) -> None:
        if items and self._has_break(stmt.body):
            self._unrolled_with_break(stmt, items)
            return
        self.unrolled_trips.append(len(items))
        try:
            if self._has_jump(stmt.body, (ast.Continue,)):
                self._unrolled_with_continue(stmt, items)
                return
            for item in items:
                if self.frame.live is B.FALSE:
                    return
                self.assign(stmt.target, item)
                self.block(stmt.body)
        finally:
            self.unrolled_trips.pop()
        self.block(stmt.orelse)

    def _unrolled_with_continue(self, stmt: ast.For, items: list[Value]) -> None:
        """``continue`` in an unrolled loop, as in a loop node's body: it records
        the state where it happens, under the condition that reaches it, and ends
        the path; each iteration ends in the select over those records and the
        state at its end.  Every path that starts an iteration ends it."""
        frame = self.frame
        outer = frame.loop
        ctx = LoopContext()
        frame.loop = ctx
        try:
            for item in items:
                start = frame.live
                ctx.continues = []
                ctx.outer = frozenset(frame.env)
                self.assign(stmt.target, item)
                self.block(stmt.body)
                records = list(ctx.continues)
                if frame.live is not B.FALSE:
                    records.append((frame.live, frame.env))
                if not records:  # an error was reported (`return` in the loop)
                    frame.live = B.FALSE
                    return
                frame.env, frame.live = self._join(stmt, records), start
        finally:
            frame.loop = outer
        self.block(stmt.orelse)  # no `break`: it runs

    def _unrolled_with_break(self, stmt: ast.For, items: list[Value]) -> None:
        """``break`` in an unrolled loop: a loop node of constant count.  Unrolled,
        every iteration after one that may break would run under the condition
        that none did, and the state after the loop would be a select over each
        iteration's, whose adjoints grow as the square of the iterations."""
        self._with_else(
            stmt,
            lambda flag: self._loop(
                stmt,
                B.constant(len(items)),
                True,
                lambda k, capture: self._bind_item(stmt, capture(tuple(items)), k),
                None,
                "_",
                flag,
            ),
        )

    def _with_else(
        self, stmt: ast.For | ast.While, run: Callable[[str | None], None]
    ) -> None:
        """A loop (``run(flag)`` lowers it), then its ``else`` block: where the
        loop can ``break``, the block runs on the paths that did not, as an
        ``if`` on ``flag``, a loop state each ``break`` sets."""
        frame = self.frame
        flag = None
        if stmt.orelse and self._has_break(stmt.body):
            flag = "broke"
            while flag in frame.env or flag in frame.local_names:
                flag += "_"
        run(flag)
        broke = frame.env.pop(flag, None) if flag is not None else None
        if not isinstance(broke, Node):
            self.block(stmt.orelse)  # no `break`, or errors were reported
            return
        live0, env0 = frame.live, frame.env
        ran = B.logical_and(live0, B.logical_not(broke))
        frame.env, frame.live = dict(env0), ran
        self.block(stmt.orelse)
        left = B.logical_and(live0, broke)
        if frame.live is B.FALSE:
            frame.env, frame.live = env0, left
            return
        after = frame.live
        frame.env = self._join(stmt, [(broke, env0), (after, frame.env)])
        frame.live = live0 if after is ran else B.logical_or(left, after)

    def _join(
        self, stmt: ast.stmt, records: list[tuple[Node, dict[str, Value]]]
    ) -> dict[str, Value]:
        """The environment after paths that reach one point from ``records``:
        (condition, environment) with conditions of which at most one holds."""
        (_, last), earlier = records[-1], records[:-1]
        if not earlier:
            return last
        env: dict[str, Value] = {}
        names = dict.fromkeys(last)  # in a fixed order: the same code every run
        for _, rec in earlier:
            names.update(dict.fromkeys(rec))
        for name in names:
            value = last.get(name, Undefined(name, stmt.lineno))
            for live, rec in reversed(earlier):
                other = rec.get(name, Undefined(name, stmt.lineno))
                if other is value:
                    continue
                if not _mergeable(other, value):
                    # e.g. two different functions: usable after the loop on
                    # neither path
                    value = Undefined(name, stmt.lineno)
                    continue
                value = self.merge(stmt, live, other, value)
            if isinstance(value, Node) and value.op == "select":
                self.hints.setdefault(value, name)
            env[name] = value
        return env

    def _bind_item(self, stmt: ast.For, items: Value, k: Node) -> None:
        # item k of a short constant sequence of numbers
        assert isinstance(items, tuple)
        leaves = [_leaves(v) for v in items]
        if any(lv is None or len(lv) != 1 for lv in leaves):
            self.error(
                stmt.iter,
                "`break` in a loop over a tuple of non-numbers is not supported",
                "loop over `range(len(t))` and index the tuple",
            )
            self.assign(stmt.target, self.poison)
            return
        value = items[-1]
        for j in range(len(items) - 2, -1, -1):
            hit = B.apply("eq", k, B.constant(j))
            value = B.select(hit, items[j], value)  # type: ignore[arg-type]
        self.assign(stmt.target, value)

    def _source(self, it: ast.expr, unroll: int = UNROLL) -> Source | None:
        """What ``for ... in it`` iterates over; constant ranges of at most
        ``unroll`` items are unrolled."""
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name):
            name = it.func.id
            shadowed = name in self.frame.env or name in self.frame.local_names
            if name == "range" and not shadowed:
                return self._range(it, unroll)
            if name == "enumerate" and not shadowed:
                return self._enumerate(it, unroll)
            if name == "zip" and not shadowed:
                return self._zip(it, unroll)
            if name == "reversed" and not shadowed and len(it.args) == 1:
                return self._reversed(it, unroll)
        value = self.expr(it)
        if value is self.poison:
            return None
        if isinstance(value, Masked):
            self.error(it, refusal("a loop over").message, HINT)
            return None
        if isinstance(value, tuple):
            return Source(B.constant(len(value)), lambda k, c: self.poison, list(value))
        if isinstance(value, Node) and value.shape:
            x = value
            spec = A.row_spec(len(x.shape))
            return Source(
                A.dim(x.shape[0])
                if not isinstance(x.shape[0], int)
                else B.constant(x.shape[0]),
                lambda k, capture: A.take(capture(x), spec, (k,)),  # type: ignore[arg-type]
            )
        self.error(
            it,
            "a `for` loop must run over `range(...)`, an array, a tuple, "
            "`enumerate(...)`, `zip(...)` or `reversed(...)`",
            "loop over `range(len(x))` and index with `x[i]`",
        )
        return None

    def _range(self, it: ast.Call, unroll: int = UNROLL) -> Source | None:
        bounds = [self.expr(a) for a in it.args]
        if any(b is self.poison for b in bounds):
            return None
        if it.keywords or not 1 <= len(bounds) <= 3:
            self.error(
                it,
                "`range` takes 1 to 3 positional arguments",
                "write `range(stop)`, `range(start, stop)` or "
                "`range(start, stop, step)`",
            )
            return None
        ok = all(
            isinstance(b, Node) and not b.shape and b.dtype in ("int64", "bool")
            for b in bounds
        )
        if not ok:
            floats = [
                str(b.attrs[1])
                for b in bounds
                if isinstance(b, Node) and b.op == "param" and b.dtype == "float64"
            ]
            hint = "use int arguments, len(x), x.shape[k] or integer constants"
            powers = [
                b
                for b in bounds
                if isinstance(b, Node) and b.op == "pow" and b.args[1].dtype == "int64"
            ]
            if powers:
                hint = (
                    "`a ** b` of ints is a float unless `b` is a constant >= 0 "
                    "(Python gives a float for a negative `b`): write "
                    "int(a ** b), or 1 << k for 2 ** k"
                )
            if floats:
                hint += (
                    f" (`{floats[0]}` is a float here; an int argument listed in "
                    "argnums is differentiated as a real number: leave it out of "
                    "argnums)"
                )
            self.error(it, "`range` bounds must be integers", hint)
            return None
        nodes: list[Node] = bounds  # type: ignore[assignment]
        if len(nodes) == 1:
            start, stop, step = B.constant(0), nodes[0], B.constant(1)
        elif len(nodes) == 2:
            start, stop, step = nodes[0], nodes[1], B.constant(1)
        else:
            start, stop, step = nodes
        if step.op != "const" or step.value == 0:
            self.error(
                it.args[2] if len(it.args) > 2 else it,
                "a `range` step must be a non-zero integer constant",
                "write the step as a literal, like `range(0, n, 2)`",
            )
            return None
        k_step = int(step.value)
        if all(b.op == "const" for b in nodes):
            rng = range(*(int(b.value) for b in nodes))
            if len(rng) <= unroll:
                return Source(
                    B.constant(len(rng)),
                    lambda k, c: self.poison,
                    [B.constant(i) for i in rng],
                )
        count = _count(start, stop, k_step)

        def item(k: Node, capture: Callable[[Value], Value]) -> Node:
            first: Node = capture(start)  # type: ignore[assignment]
            return B.add(first, B.apply("mul", k, step) if k_step != 1 else k)

        return Source(count, item)

    def _reversed(self, it: ast.Call, unroll: int = UNROLL) -> Source | None:
        inner = self._source(it.args[0], unroll)
        if inner is None:
            return None
        if inner.items is not None:
            return Source(inner.count, inner.item, inner.items[::-1])
        count = inner.count

        def item(k: Node, capture: Callable[[Value], Value]) -> Value:
            last: Node = capture(count)  # type: ignore[assignment]
            return inner.item(
                B.apply("sub", B.apply("sub", last, B.constant(1)), k), capture
            )

        return Source(count, item)

    def _enumerate(self, it: ast.Call, unroll: int = UNROLL) -> Source | None:
        args = list(it.args)
        if len(args) == 1 and [k.arg for k in it.keywords] == ["start"]:
            args.append(it.keywords[0].value)  # enumerate(x, start=1)
        elif it.keywords:
            args = []
        if len(args) not in (1, 2):
            self.error(
                it,
                "`enumerate` takes an iterable and an optional start",
                "write `enumerate(x)`, `enumerate(x, 1)` or `enumerate(x, start=1)`",
            )
            return None
        inner = self._source(args[0], unroll)
        if inner is None:
            return None
        start: Value = B.constant(0)
        if len(args) == 2:
            start = self.expr(args[1])
            if not (
                isinstance(start, Node) and start.dtype == "int64" and not start.shape
            ):
                self.error(
                    args[1],
                    "the start of `enumerate` must be an integer",
                    "use an int constant or an int argument",
                )
                return None
        first: Node = start  # type: ignore[assignment]
        items = None
        if inner.items is not None:
            items = [
                (B.add(first, B.constant(j)), v) for j, v in enumerate(inner.items)
            ]

        def item(k: Node, capture: Callable[[Value], Value]) -> Value:
            return (B.add(capture(first), k), inner.item(k, capture))  # type: ignore[arg-type]

        return Source(inner.count, item, items)

    def _zip(self, it: ast.Call, unroll: int = UNROLL) -> Source | None:
        if not it.args or it.keywords:
            self.error(
                it,
                "`zip` takes one or more iterables",
                "write `zip(x, y)` with arrays, ranges or tuples",
            )
            return None
        parts = [self._source(a, unroll) for a in it.args]
        if any(p is None for p in parts):
            return None
        sources: list[Source] = parts  # type: ignore[assignment]
        if all(p.items is not None for p in sources):
            rows = list(zip(*(p.items for p in sources), strict=False))  # type: ignore[misc]
            return Source(
                B.constant(len(rows)),
                lambda k, c: self.poison,
                [tuple(r) for r in rows],
            )
        count = sources[0].count
        for p in sources[1:]:
            count = B.apply("min", count, p.count)

        def item(k: Node, capture: Callable[[Value], Value]) -> Value:
            return tuple(p.item(k, capture) for p in sources)

        return Source(count, item)

    # -- while ----------------------------------------------------------------------
    def _stmt_While(self, stmt: ast.While) -> None:
        self._with_else(
            stmt,
            lambda flag: self._loop(
                stmt, B.constant(-1), False, lambda k, c: None, stmt.test, "it", flag
            ),
        )

    # -- break / continue -------------------------------------------------------------
    def _stmt_Break(self, stmt: ast.Break) -> None:
        self._leave(stmt, "breaks")

    def _stmt_Continue(self, stmt: ast.Continue) -> None:
        self._leave(stmt, "continues")

    def _leave(self, stmt: ast.stmt, kind: str) -> None:
        # the innermost loop: a loop node's body, or an unrolled loop with
        # `continue` (`_unrolled_with_continue`)
        ctx: LoopContext | None = self.frame.loop
        assert ctx is not None, "Python rejects `break` outside a loop"
        getattr(ctx, kind).append((self.frame.live, dict(self.frame.env)))
        self.frame.live = B.FALSE

    @staticmethod
    def _has_break(body: list[ast.stmt]) -> bool:
        """A ``break`` of this loop (not of a loop nested in it)."""
        return LoopLowering._has_jump(body, (ast.Break,))

    @staticmethod
    def _has_jump(body: list[ast.stmt], kinds: tuple[type, ...]) -> bool:
        """A statement of ``kinds`` (``break``, ``continue``) of this loop, not of
        a loop nested in it."""
        stack: list[ast.AST] = list(body)
        while stack:
            node = stack.pop()
            if isinstance(node, kinds):
                return True
            if isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
                if isinstance(node, (ast.For, ast.While)):
                    stack.extend(node.orelse)
                continue
            stack.extend(ast.iter_child_nodes(node))
        return False

    def _poison_loop(self, stmt: ast.For | ast.While) -> None:
        for name in _local_names_of(stmt.body) | _local_names_of(
            [stmt.target] if isinstance(stmt, ast.For) else []
        ):  # type: ignore[list-item]
            self.frame.env.setdefault(name, self.poison)

    # -- the loop itself ------------------------------------------------------------
    def _loop(
        self,
        stmt: ast.For | ast.While,
        count: Node,
        bounded: bool,
        bind: Callable[[Node, Callable[[Value], Value]], None],
        test: ast.expr | None,
        index_hint: str,
        flag: str | None = None,
        private: frozenset[str] = frozenset(),
    ) -> None:
        """``flag``: a name for one more state variable, False until a ``break``;
        ``private``: names the loop assigns that no one reads after it."""
        frame = self.frame
        env0 = frame.env
        assigned = _local_names_of(stmt.body) - private
        # arrays written through the views of them (`for row in Y: row /= s`)
        through = bases_written([stmt], env0) - private
        assigned |= {name for name in through if name in env0}
        targets = _local_names_of([stmt.target]) if isinstance(stmt, ast.For) else set()  # type: ignore[list-item]
        targets -= private
        state_names = []
        maybe: dict[str, Maybe] = {}
        for name in sorted(assigned - targets):
            value = env0.get(name)
            if (
                isinstance(value, Static)
                and value.obj is None
                and name in _rebound_in(stmt.body)
            ):
                # `best = None` before a loop that assigns it: a flag (still
                # None?) and a number, carried together
                state_names.append(name)
                maybe[name] = Maybe(B.TRUE, B.ZERO)
                continue
            if value is None or isinstance(value, Undefined):
                continue
            if isinstance(value, Static) and not (_is_dict(value) and _leaves(value)):
                continue  # a dict of numbers and arrays is state, as a tuple is
            if has_masked(value):
                self.error(
                    stmt,
                    f"`{name}` holds a boolean-mask selection (`x[mask]`) that this "
                    "loop assigns: its length depends on the values",
                    HINT,
                )
                frame.env[name] = self.poison
                continue
            leaves = _leaves(value)
            if leaves is None or any(v is self.poison for v in leaves):
                continue
            state_names.append(name)
        init_values = {name: maybe.get(name) or env0[name] for name in state_names}
        # `s = [x, 0.0]` written item by item in the body (`s[0] = ...`): the list
        # of numbers is an array (as an item write makes it), from the start
        for name in _subscript_written(stmt.body) & set(state_names):
            value = init_values[name]
            if (
                isinstance(value, tuple)
                and value
                and all(isinstance(v, Node) for v in value)
                and len({v.shape for v in value}) == 1  # type: ignore[union-attr]
            ):
                init_values[name] = as_list(AR.array(value))
        # A variable the loop assigns (its own target too) and read after it
        # holds its last value, or after no iteration the value it had before
        # (`i = 10; for i in range(n): ...`): it is state too, starting from
        # that value, or from 0 when it had none (widened to its dtype and shape
        # by lowering the body again).
        later = _read_after(frame.source.tree, stmt) - private
        later -= _functions_defined(stmt.body)  # a value of the body only
        for name in sorted((assigned | targets) - set(state_names)):
            before = env0.get(name)
            if name in later and not isinstance(before, Static):
                leaves = None if isinstance(before, Undefined) else _leaves(before)
                usable = leaves is not None and all(
                    v is not self.poison for v in leaves
                )
                state_names.append(name)
                init_values[name] = before if usable else B.constant(0)
        if flag is not None:
            state_names.append(flag)
            init_values[flag] = B.FALSE
        init = [
            leaf for name in state_names for leaf in _leaves(init_values[name]) or []
        ]
        leaf_names = [
            name for name in state_names for _ in _leaves(init_values[name]) or []
        ]
        kinds = [(v.dtype, v.shape) for v in init]
        label = _label(stmt, frame)
        guard = self.path_condition()
        for _attempt in range(_WIDEN + 1):  # once more: arrays written in it
            reported = len(self.diagnostics)
            outcome = self._lower_body(
                stmt,
                env0,
                state_names,
                init_values,
                leaf_names,
                kinds,
                bind,
                test,
                index_hint,
                flag,
                guard,
                count if bounded else None,
            )
            if outcome is None:  # errors reported
                frame.env = env0
                self._poison_loop(stmt)
                return
            body_parts, outputs, captured_outer = outcome
            written = [n for n in self.written_in_body if n not in init_values]
            if written:
                # arrays written through a helper's argument or a view the body
                # made (`push(buf, i, v)`): state too, and the body lowered again
                for name in written:
                    state_names.append(name)
                    init_values[name] = env0[name]
                    init.append(env0[name])  # type: ignore[arg-type]
                    leaf_names.append(name)
                    kinds.append((env0[name].dtype, env0[name].shape))  # type: ignore[union-attr]
                del self.diagnostics[reported:]
                continue
            wider = [
                _widen(
                    k,
                    (out.dtype, out.shape),
                    f"`{name}` must keep its shape through the loop at line "
                    f"{stmt.lineno}",
                )
                for k, out, name in zip(kinds, outputs, leaf_names, strict=True)
            ]
            if any(w is None for w in wider):
                bad = next(i for i, w in enumerate(wider) if w is None)
                self.error(
                    stmt,
                    f"`{leaf_names[bad]}` changes shape inside the loop, from "
                    f"{S.format_shape(kinds[bad][1])} to "
                    f"{S.format_shape(outputs[bad].shape)}",
                    "a variable the loop updates must keep its shape; use a new name",
                )
                frame.env = env0
                self._poison_loop(stmt)
                return
            if wider == kinds:
                break
            del self.diagnostics[reported:]
            kinds = wider  # type: ignore[assignment]
        index, carried, captured_vars, test_node, stop = body_parts
        init = [_fit(v, dt, shape) for v, (dt, shape) in zip(init, kinds, strict=True)]
        body = L.Body(
            index,
            tuple(carried),
            tuple(captured_vars),
            tuple(outputs),
            test_node,
            stop,
            bounded,
            False,
            label,
        )
        if guard is not B.TRUE and not (count.op == "const" and count.value < 0):
            # in a branch not taken the loop runs no iteration: its body (and,
            # in reverse mode, its backward loop) never meets values it was not
            # written for (sqrt(-1) under `if x > 0`)
            count = B.select(guard, count, B.constant(0))
        node = L.loop(count, init, captured_outer, body)
        results = L.results(node)
        starts = [
            leaf for name in state_names for leaf in _leaves(init_values[name]) or []
        ]
        for r, name, start in zip(results, leaf_names, starts, strict=True):
            self.hints.setdefault(r, name)
            if start in LIST_ARRAYS:  # still a Python list after the loop
                as_list(r)
        frame.env = dict(env0)
        at = 0
        for name in state_names:
            n_leaves = len(_leaves(init_values[name]) or [])
            frame.env[name] = _rebuild(init_values[name], results[at : at + n_leaves])
            at += n_leaves
        # Names only the body uses are not read after the loop (those are state):
        # they leave with it, so no value of the body leaks outside.
        for name in (assigned | targets) - set(state_names):
            frame.env.pop(name, None)
        self._views_after_loop(stmt, set(state_names))

    def _views_after_loop(self, stmt: ast.For | ast.While, state: set[str]) -> None:
        """The views made before a loop, after it: one that the body rebinds, or
        whose array it rebinds, may or may not share it now; one whose array
        the body wrote into (not itself state) reads it again."""
        env = self.frame.env
        rebound = _rebound_in(stmt.body)
        for key in [k for k in env if is_view_key(k)]:
            name = key[: -len("\0view")]
            view = view_in(env, name)
            if view is None or view is AMBIGUOUS:
                continue
            if name in rebound or view.base in rebound:
                env[key] = Static(AMBIGUOUS)
            elif view.base in state and name not in state:
                base, old = env.get(view.base), env.get(name)
                if isinstance(base, Node) and isinstance(old, Node):
                    env[name] = self._derive(view, base, old)

    def _lower_body(
        self,
        stmt: ast.For | ast.While,
        env0: dict[str, Value],
        state_names: list[str],
        init_values: dict[str, Value],
        leaf_names: list[str],
        kinds: list[tuple[str, S.Shape]],
        bind: Callable[[Node, Callable[[Value], Value]], None],
        test: ast.expr | None,
        index_hint: str,
        flag: str | None = None,
        guard: Node = B.TRUE,
        trips: Node | None = None,
    ) -> tuple[tuple, list[Node], list[Node]] | None:
        """``guard``: the condition under which the loop runs at all; a ``while``
        loop tests it first (a loop in a branch not taken must not spin)."""
        frame = self.frame
        reported = len(self.diagnostics)
        index = L.var(index_hint, (), "int64")
        if trips is not None:
            bounds.note_index(index, trips)
        carried = [
            L.var(n, shape, dt)
            for n, (dt, shape) in zip(leaf_names, kinds, strict=True)
        ]
        starts = [
            leaf for name in state_names for leaf in _leaves(init_values[name]) or []
        ]
        for v, start in zip(carried, starts, strict=True):
            if start in LIST_ARRAYS:  # a Python list: a float written widens it
                as_list(v)
        captured: dict[Node, Node] = {}

        def capture(value: Value, name: str = "") -> Value:
            if isinstance(value, tuple):
                return _same_tuple(value, [capture(v, name) for v in value])
            if isinstance(value, Masked):  # x[mask] read in the body
                return Masked(capture(value.data, name), capture(value.mask))
            if isinstance(value, Static) and isinstance(value.obj, View):
                return Static(value.obj.map_nodes(capture))  # its index's nodes
            if isinstance(value, Static) and isinstance(value.obj, TracedPartial):
                return Static(value.obj.map_values(lambda v: capture(v, name)))
            if _is_dict(value):  # p["w"] read in the body: each value captured
                return Static({k: capture(v, name) for k, v in value.obj.items()})  # type: ignore[union-attr]
            name = (
                name or self.hints.get(value, "c") if isinstance(value, Node) else name
            )
            if (
                not isinstance(value, Node)
                or value.op in ("const", "dim")
                or value is self.poison
            ):
                return value
            if value not in captured:
                captured[value] = L.var(name, value.shape, value.dtype)
                if not value.shape and value.dtype == "int64":
                    bounds.note_capture(captured[value], value)
                AR.same_length(captured[value], value)
            return captured[value]

        env: dict[str, Value] = {}
        for name, value in env0.items():
            if name not in init_values:
                env[name] = capture(value, name)
        at = 0
        for name in state_names:
            n_leaves = len(_leaves(init_values[name]) or [])
            env[name] = _rebuild(init_values[name], carried[at : at + n_leaves])
            at += n_leaves
        for v, name in zip(carried, leaf_names, strict=True):
            self.hints.setdefault(v, name)
        before = dict(env)
        saved = (frame.env, frame.live, frame.returns, frame.loop)
        ctx = LoopContext(index=index, outer=frozenset(env))
        frame.env, frame.live, frame.returns = env, B.TRUE, []
        frame.loop = ctx
        test_node = None
        # a local function called in the body reads its defining frame's
        # variables through this capture too (Lowerer.inline_local)
        self.captures.append((len(self.frames) - 1, capture))
        try:
            if test is not None:
                t = self.condition(test, self.expr(test, test=True))
                if t.op == "const" and t.value:
                    t = None  # `while True`: only `break` ends it
                if guard is not B.TRUE:
                    g: Node = capture(guard)  # type: ignore[assignment]
                    t = g if t is None else B.logical_and(g, t)
                test_node = t
            bind(index, capture)
            self.block(stmt.body)
            end = (frame.live, frame.env)
        finally:
            frame.env, frame.live, frame.returns, frame.loop = saved
            self.captures.pop()
        if len(self.diagnostics) > reported:
            return None
        if flag is not None:
            ctx.breaks = [(live, {**rec, flag: B.TRUE}) for live, rec in ctx.breaks]
        records = [*ctx.breaks, *ctx.continues]
        if end[0] is not B.FALSE:
            records.append(end)
        stop = None
        for live, _ in ctx.breaks:
            stop = live if stop is None else B.logical_or(stop, live)
        self.written_in_body = [
            name
            for name, value in before.items()
            if name not in init_values
            and isinstance(value, Node)
            and value.shape
            and any(rec.get(name, value) is not value for _, rec in records)
        ]
        outputs: list[Node] = []
        owners: list[str] = []  # the variable each output is (a part of)
        if not records:  # every path breaks at once
            records = [(B.TRUE, ctx.breaks[0][1])] if ctx.breaks else [(B.TRUE, env)]
        for name in state_names:
            value = records[-1][1].get(name, env[name])
            for live, rec_env in reversed(records[:-1]):
                value = self.merge(stmt, live, rec_env.get(name, env[name]), value)
            if isinstance(value, Undefined):
                value = env[name]
            if isinstance(init_values[name], Maybe) and not isinstance(value, Maybe):
                if isinstance(value, (Node, Static)):
                    value = Maybe(*_as_maybe(value, env[name]))
            start = init_values[name]
            aligned = _aligned(value, start)
            leaves = None if aligned is None else _leaves(aligned)
            expected = len(_leaves(start) or [])
            if (
                _is_dict(start)
                and _is_dict(value)
                and aligned is None
                and set(start.obj) == set(value.obj)  # type: ignore[union-attr]
            ):
                self.error(
                    stmt,
                    f"a string or another Python value in dict `{name}` changes "
                    "inside the loop (the kernel is specialised to it)",
                    "keep such values the same through the loop, or pass them as "
                    "separate static arguments",
                )
                return None
            if _is_dict(start) and _is_dict(value) and aligned is None:
                before, after = (
                    ", ".join(map(repr, d.obj))  # type: ignore[union-attr]
                    for d in (start, value)
                )
                self.error(
                    stmt,
                    f"the keys of dict `{name}` change inside the loop (before it: "
                    f"{before}; after an iteration: {after})",
                    "give the dict every key it will have before the loop, "
                    "e.g. `d = {'a': x, 'b': 0.0}`",
                )
                return None
            if leaves is None or len(leaves) != expected:
                self.error(
                    stmt,
                    f"`{name}` changes from {expected} value(s) to something else "
                    "inside the loop",
                    "a variable the loop updates must keep its structure",
                )
                return None
            outputs.extend(leaves)
            owners.extend([name] * len(leaves))
        # an output that fits the state is stretched to it; lengths equal only
        # when the kernel runs (the state's x.shape[0], the output's 1) are
        # checked, at the loop
        here, self.current = self.current, stmt
        outputs = [
            _fit(o, dt, shape)
            if _widen(
                (dt, shape),
                (o.dtype, o.shape),
                f"`{name}` must keep its shape through the loop at line {stmt.lineno}",
            )
            == (dt, shape)
            else o
            for o, (dt, shape), name in zip(outputs, kinds, owners, strict=True)
        ]
        self.current = here
        roots = [*outputs, *(n for n in (test_node, stop) if n is not None)]
        used = set(topological(roots))
        outer = [o for o, v in captured.items() if v in used]
        captured_vars = [captured[o] for o in outer]
        for o, v in zip(outer, captured_vars, strict=True):
            self.hints.setdefault(v, self.hints.get(o, v.attrs[1]))
        return (index, carried, captured_vars, test_node, stop), outputs, outer


def _mergeable(a: Value, b: Value) -> bool:
    """Whether ``merge`` can select between ``a`` and ``b``."""
    if isinstance(a, Maybe) or isinstance(b, Maybe):
        return _optional(a) and _optional(b)
    if isinstance(a, Undefined) or isinstance(b, Undefined):
        return True
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(
            _mergeable(x, y) for x, y in zip(a, b, strict=True)
        )
    if isinstance(a, Static) and isinstance(b, Static):
        return a.obj is b.obj
    return isinstance(a, Node) and isinstance(b, Node)


def _read_after(tree: ast.AST, stmt: ast.stmt) -> set[str]:
    """Names read anywhere after ``stmt`` ends, in the function being lowered;
    also those read by a local function defined outside ``stmt``, which may be
    called after it."""
    end = getattr(stmt, "end_lineno", stmt.lineno) or stmt.lineno
    read: set[str] = set()
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, in_local = stack.pop()
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if line > end or (in_local and not stmt.lineno <= line <= end):
                read.add(node.id)
        local = in_local or (
            node is not tree and isinstance(node, (ast.FunctionDef, ast.Lambda))
        )
        stack.extend((child, local) for child in ast.iter_child_nodes(node))
    return read


def _functions_defined(body: list[ast.stmt]) -> set[str]:
    """The names ``body`` binds to local functions (``def``, ``h = lambda ...``):
    not loop state, which holds numbers and arrays."""
    names: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
            continue
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Lambda)
            and all(isinstance(t, ast.Name) for t in node.targets)
        ):
            names.update(t.id for t in node.targets)  # type: ignore[attr-defined]
        if isinstance(node, ast.stmt):
            stack.extend(
                c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)
            )
    return names


def _widen(
    kind: tuple[str, S.Shape], out: tuple[str, S.Shape], what: str | None = None
) -> tuple[str, S.Shape] | None:
    """The dtype and shape a loop variable needs to hold both ``kind`` and ``out``;
    lengths equal only when the kernel runs are checked then, with message
    ``what`` (None: not recorded, the caller asks whether they may agree)."""
    dt = max(kind[0], out[0], key=DTYPES.index)
    if dt == "bool" and kind[0] != out[0]:
        dt = "int64"
    a, b = kind[1], out[1]
    if a == b:
        return dt, a
    # a number may become an array, and an axis of length 1 may stretch; lengths
    # that are merely assumed equal (x.shape[0] against x.shape[0] + 1) may not,
    # nor may the state shrink (`y = np.sum(y)`: Python's y is a number after it)
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    shape: list[S.Length] = []
    for x, y in zip(a, b, strict=True):
        if x == y:
            shape.append(x)
        elif x == 1:
            shape.append(y)
        elif isinstance(S.sub(x, y), int):
            return None  # known to differ
        elif what is None:
            shape.append(x)
        else:  # equal when the kernel runs, or the kernel says where not
            shape.append(S.unify(x, y, what))
    return dt, tuple(shape)


def _fit(v: Node, dtype: str, shape: S.Shape) -> Node:
    if v.dtype != dtype:
        v = B.to_float(v) if dtype == "float64" else B.apply("add", v, B.constant(0))
    if v.shape != shape:
        v = B.broadcast_to(v, shape)
    return v


def _hint(target: ast.expr) -> str:
    return target.id if isinstance(target, ast.Name) else "k"


def _label(stmt: ast.For | ast.While, frame: Frame) -> str:
    if isinstance(stmt, ast.For):
        head = f"for {ast.unparse(stmt.target)} in {ast.unparse(stmt.iter)}"
    else:
        head = f"while {ast.unparse(stmt.test)}"
    source = frame.source
    return f"{head}  ({source.display_file}:{stmt.lineno})"
