"""Lowering comprehensions and generator expressions by rewriting them into loops.

A comprehension is rewritten into the statements it stands for, which the loop
machinery (``loops.py``) lowers as it lowers the user's own ``for`` loops::

    sum(x[i] ** 2 for i in range(n) if i % 2 == 0)

    total = 0                      # a fresh name, popped afterwards
    for i in range(n):             # Clause: a `for` over the clause's source
        if i % 2 == 0:             # Filter
            total = total + x[i] ** 2   # Emit

``Clause``, ``Filter`` and ``Emit`` are statements of this module: they decide,
per consumer, what an item does:

* ``sum(...)`` adds it to an accumulator (a loop node's state over a run-time
  range; unrolled over a short constant one);
* ``max(...)`` / ``min(...)`` fold the items when the iteration is static, else
  they run a loop whose accumulator starts at -inf / +inf;
* ``tuple(...)`` and a list comprehension over a static iteration are tuples of
  the items (Python tuples of nodes, as a tuple literal);
* a list comprehension over a run-time range (one ``for`` clause) is an array,
  allocated from the trip count and filled row by row in the loop.

Each consumer tries its strategies in order (:data:`_PLANS`); a strategy that
cannot work (a run-time range where a tuple is needed) raises :class:`Retry`
and the next one is tried from the same environment.  The targets of a
comprehension are private to it, as in Python: they never become loop state,
and the names they shadow are restored afterwards.
"""

from __future__ import annotations

import ast
import builtins
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from symdiff.frontend import arrays as AR
from symdiff.frontend import more_numpy as MN
from symdiff.frontend.arrays import Unsupported
from symdiff.frontend.loops import UNROLL, LoopContext, Source, _widen
from symdiff.frontend.statements import LIST_HINT, _local_names_of
from symdiff.frontend.values import Static, Value, as_list
from symdiff.ir import arrays as A
from symdiff.ir import build as B
from symdiff.ir import shapes as S
from symdiff.ir.node import Node, topological
from symdiff.ir.shapes import ShapeMismatch

if TYPE_CHECKING:
    from symdiff.frontend.lower import Frame

#: Constant ranges of at most this many items per ``for`` clause are unrolled into
#: a tuple for ``tuple(...)`` and for list comprehensions whose items are not
#: numbers or arrays (pairs, say).
STATIC_ITEMS = 64

#: At most this many items in an unrolled comprehension.
MAX_ITEMS = 1024

# (mode, unroll, primary): the strategies of each consumer, in order; when all
# fail, the error of the primary one is reported
_PLANS: dict[str, tuple[tuple[str, int, bool], ...]] = {
    "sum": (("sum", UNROLL, True),),
    "max": (("values", UNROLL, False), ("max", UNROLL, True)),
    "min": (("values", UNROLL, False), ("min", UNROLL, True)),
    "tuple": (("values", STATIC_ITEMS, True),),
    "list": (
        ("values", UNROLL, False),
        ("array", 0, True),
        ("values", STATIC_ITEMS, False),
    ),
}

# names of the accumulators, as the generated code shows them
_STEMS = {"sum": "total", "max": "largest", "min": "smallest", "array": "items"}

_RUN_TIME_FILTER = (
    "a comprehension filter that depends on run-time values gives a list of "
    "unknown length",
    "choose the item instead (`[v if cond else 0.0 for ...]`), or add the "
    "items up with sum(... if cond), which may filter at run time",
)


@dataclass(frozen=True)
class Deferred:
    """A generator expression passed to a call: lowered by its consumer."""

    node: ast.GeneratorExp


class Retry(Exception):
    """A strategy that cannot lower this comprehension, and why (for the user)."""

    def __init__(self, node: ast.AST, message: str, hint: str) -> None:
        super().__init__(message)
        self.node, self.message, self.hint = node, message, hint


@dataclass
class Comprehension:
    """One comprehension being lowered with one strategy."""

    node: ast.ListComp | ast.GeneratorExp
    mode: str  # "values", "sum", "max", "min" or "array"
    unroll: int
    loop: LoopContext | None  # the frame's loop where the comprehension starts
    private: frozenset[str]
    acc: str = ""  # the accumulator's name in the environment
    values: list[Value] = field(default_factory=list)
    kind: tuple[str, S.Shape] = ("float64", ())  # an array's items
    retry: tuple[str, S.Shape] | None = None  # the items' kind, when not `kind`
    seen: tuple[str, S.Shape] | None = None  # the items' kinds so far, widened
    emitted: int = 0
    failed: bool = False  # an error was reported (a bad range)


class Clause(ast.stmt):
    """``for target in iter`` of a comprehension, around ``body``."""

    _fields = ("target", "iter", "body")
    target: ast.expr
    iter: ast.expr
    body: list[ast.stmt]
    comp: Comprehension


class Filter(ast.stmt):
    """``if test`` of a comprehension, around ``body``."""

    _fields = ("test", "body")
    test: ast.expr
    body: list[ast.stmt]
    comp: Comprehension


class Emit(ast.stmt):
    """One item of a comprehension, ``value``; ``target`` names the accumulator
    it updates (so that a loop takes the accumulator as state)."""

    _fields = ("target", "value")
    target: ast.Name | None
    value: ast.expr
    comp: Comprehension


def _synthetic(
    cls: type[ast.stmt], where: ast.AST, comp: Comprehension, **fields: object
) -> ast.stmt:
    stmt = cls()
    for name, value in fields.items():
        setattr(stmt, name, value)
    stmt.comp = comp  # type: ignore[attr-defined]
    return ast.copy_location(stmt, where)


def _targets(node: ast.ListComp | ast.GeneratorExp) -> frozenset[str]:
    return frozenset(_local_names_of([g.target for g in node.generators]))


def _length(count: Node) -> S.Length:
    """A trip count as the length of an array: ``len(x) - 1`` for
    ``range(len(x) - 1)`` (whose count is ``max(len(x) - 1, 0)``), a length that
    other arrays' shapes can match; the count itself where an int argument takes
    part (``range(k)``: ``k`` may be negative, in a branch not taken too, where
    NumPy would refuse to allocate)."""
    if count.op == "const":
        return max(0, int(count.value))
    if count.op == "max" and count.args[1].op == "const" and count.args[1].value == 0:
        span = count.args[0]
        if not any(n.op == "param" for n in topological([span])):
            try:
                return AR.length(span)
            except Unsupported:
                pass
    return S.atom("node", count)


def _zero(dtype: str) -> Node:
    return B.constant({"float64": 0.0, "int64": 0, "bool": False}[dtype])


class ComprehensionLowering:
    """Mixin of :class:`symdiff.frontend.lower.Lowerer`: comprehensions and
    generator expressions."""

    frame: Frame
    current: ast.AST | None
    diagnostics: list
    poison: Node
    generator_args: set[int]
    error: Callable[..., Node]
    expr: Callable[..., Value]
    block: Callable[..., None]
    _build: Callable[..., Value]
    scalar: Callable[..., Node]
    condition: Callable[..., Node]
    for_loop: Callable[..., None]
    _source: Callable[..., Source | None]
    _stmt_If: Callable[..., None]
    _poison_loop: Callable[..., None]
    _has_jump: Callable[..., bool]

    # -- expressions --------------------------------------------------------------
    def _expr_GeneratorExp(
        self, node: ast.GeneratorExp, values: list[Value], test: bool
    ) -> Value:
        if id(node) in self.generator_args:  # an argument: its call lowers it
            self.generator_args.discard(id(node))
            return Static(Deferred(node))
        return self.error(
            node,
            "a generator expression is supported only as the argument of "
            "sum(), max(), min(), tuple() or list()",
            "write a list comprehension `[...]` for a list of values",
        )

    def _expr_ListComp(
        self, node: ast.ListComp, values: list[Value], test: bool
    ) -> Value:
        value = self.comprehension(node, "list")
        if isinstance(value, Node) and value.shape:  # over a run-time range
            as_list(value)  # a list: a float written into ints makes floats
        return value

    def iterable_call(
        self, node: ast.Call, name: str, obj: object, args: list[Value], kw: dict
    ) -> Value | None:
        """A call that consumes a generator expression (``sum(... for ...)``), or
        ``tuple``/``list``/``max``/``min`` of one tuple or array; None for any
        other call."""
        items = [*args, *kw.values()]
        gens = [v.obj for v in items if isinstance(v, Static)]
        gens = [g for g in gens if isinstance(g, Deferred)]
        if not gens:
            return self._of_iterable(node, name, obj, args, kw)
        gen = gens[0].node
        if obj is builtins.sum and args and isinstance(args[0], Static):
            start = kw.pop("start", None) if len(args) == 1 else args[1]
            if len(args) > 2 or kw or isinstance(start, (Static, tuple)):
                return self.error(
                    node,
                    "`sum` takes a generator and an optional start number",
                    "write `sum(... for ...)` or `sum((... for ...), start)`",
                )
            return self.comprehension(gen, "sum", start)  # type: ignore[arg-type]
        if obj in (builtins.max, builtins.min, builtins.tuple, builtins.list):
            if len(args) != 1 or kw:
                return self.error(
                    node,
                    f"`{name}` of a generator takes no other arguments here",
                    "for max/min with `key=` or `default=`, write the loop out",
                )
            consumer = "list" if obj is builtins.list else obj.__name__  # type: ignore[attr-defined]
            return self.comprehension(gen, consumer)
        consumed = MN.GENERATOR_CONSUMERS.get(id(obj))
        if consumed is not None and len(args) == 1 and not kw:
            # math.fsum / math.prod / any / all of a generator: of its items
            if obj in (builtins.any, builtins.all) and not self._static_length(gen):
                return self._any_or_all(node, gen, obj is builtins.any)
            if not self._static_length(gen):
                return self.error(
                    node,
                    f"`{name}` of a generator over a run-time range: it needs the "
                    "items at once",
                    "write sum(...) for a sum (rounded at each addition), or make an "
                    "array and reduce it: np.prod(np.array([... for ...]))",
                )
            items = self.comprehension(gen, "tuple")
            if items is self.poison:
                return items
            return self._build(node, name, consumed[1], [items], {})
        hint = "write the generator as a list comprehension `[... for ...]`"
        if name in ("np.sum", "numpy.sum"):
            hint = "use Python's sum(... for ...), or np.sum of an array"
        return self.error(
            gen,
            f"a generator expression cannot be passed to `{name}`: it is supported "
            "as the argument of sum(), max(), min(), tuple(), list(), any(), "
            "all(), math.fsum() or math.prod()",
            hint,
        )

    def _static_length(self, gen: ast.GeneratorExp) -> bool:
        """Whether the generator's items can be listed while tracing (constant
        ranges and tuples, no run-time filter), judged from its sources."""
        for comp in gen.generators:
            it = comp.iter
            if isinstance(it, (ast.Tuple, ast.List)):
                continue
            if (
                isinstance(it, ast.Call)
                and isinstance(it.func, ast.Name)
                and it.func.id == "range"
                and all(self._constant(a) for a in it.args)
            ):
                continue
            return False
        return True

    def _constant(self, expr: ast.expr) -> bool:
        """Whether ``expr`` is known while tracing (a constant node)."""
        value = self.expr(expr)
        return isinstance(value, Node) and value.op == "const"

    def _any_or_all(self, node: ast.Call, gen: ast.GeneratorExp, is_any: bool) -> Value:
        """``any(...)``/``all(...)`` of a generator over a run-time range: a count
        of the items that pass (``any``) or fail (``all``), compared with 0."""
        hit = ast.IfExp(
            test=gen.elt,
            body=ast.Constant(1 if is_any else 0),
            orelse=ast.Constant(0 if is_any else 1),
        )
        counting = ast.GeneratorExp(elt=hit, generators=gen.generators)
        ast.copy_location(counting, gen)
        ast.fix_missing_locations(counting)
        count = self.comprehension(counting, "sum", B.constant(0))
        if not isinstance(count, Node):
            return count
        return B.apply("gt" if is_any else "eq", count, B.constant(0))

    def _of_iterable(
        self, node: ast.Call, name: str, obj: object, args: list[Value], kw: dict
    ) -> Value | None:
        """``tuple(t)``, ``list(t)`` of a tuple; ``max(t)``, ``min(t)`` of a tuple
        of numbers or of a 1-D array (a list comprehension's value)."""
        if len(args) != 1 or kw:
            return None
        (arg,) = args
        if obj in (builtins.tuple, builtins.list) and isinstance(arg, tuple):
            return arg
        if obj not in (builtins.max, builtins.min):
            return None
        op = obj.__name__  # type: ignore[attr-defined]
        if isinstance(arg, Node) and len(arg.shape) == 1:
            return A.reduce("amax" if op == "max" else "amin", arg, (0,))
        if isinstance(arg, tuple):
            return self._fold(node, op, list(arg))
        return None

    def _fold(self, node: ast.AST, op: str, items: list[Value]) -> Value:
        """``max(a, b, c)`` of the items of a tuple, as the builtin folds them."""
        if not items:
            return self.error(
                node,
                f"`{op}()` of an empty sequence",
                "Python raises ValueError here; give it at least one item",
            )
        nodes = [self.scalar(node, v, f"an item of `{op}()`") for v in items]
        if any(n is self.poison for n in nodes):
            return self.poison
        if any(n.shape for n in nodes):
            return self.error(
                node,
                f"`{op}` of arrays is not defined element-wise",
                f"use np.{op}imum(a, b) element-wise, or np.{op}(x)",
            )
        result = nodes[0]
        for n in nodes[1:]:
            result = B.apply(op, result, n)
        return result

    # -- the rewrite ----------------------------------------------------------------
    def comprehension(
        self,
        node: ast.ListComp | ast.GeneratorExp,
        consumer: str,
        start: Node | None = None,
    ) -> Value:
        """Lower ``node`` for ``consumer`` ("sum", "max", "min", "tuple", "list")."""
        if any(g.is_async for g in node.generators):
            return self.error(
                node, "an `async` comprehension is not supported", "use a plain `for`"
            )
        frame = self.frame
        env0, reported = dict(frame.env), len(self.diagnostics)
        failure: Retry | None = None
        for mode, unroll, primary in _PLANS[consumer]:
            try:
                value = self._lower(node, mode, unroll, start)
            except Retry as why:
                frame.env = dict(env0)
                del self.diagnostics[reported:]
                if primary or failure is None:
                    failure = why
                continue
            if mode == "values" and consumer in ("max", "min"):
                return self._fold(node, consumer, list(value))  # type: ignore[arg-type]
            return value
        assert failure is not None
        return self.error(failure.node, failure.message, failure.hint)

    def _lower(
        self,
        node: ast.ListComp | ast.GeneratorExp,
        mode: str,
        unroll: int,
        start: Node | None,
    ) -> Value:
        frame = self.frame
        if mode == "array" and len(node.generators) > 1:
            raise Retry(
                node,
                "a list comprehension with several `for` clauses over a run-time "
                "range is not supported",
                "nest the comprehensions (`[[... for j in ...] for i in ...]` is "
                "a 2-D array), or add the items up with sum(...)",
            )
        comp = Comprehension(node, mode, unroll, frame.loop, _targets(node))
        saved = {name: frame.env.get(name) for name in comp.private}
        if mode != "values":
            comp.acc = self._fresh(node, _STEMS[mode])
        body = self._rewrite(node, comp)
        env0, reported = dict(frame.env), len(self.diagnostics)
        for _attempt in range(3):  # array items of another kind: lower again
            if mode == "sum":
                frame.env[comp.acc] = B.constant(0) if start is None else start
            elif mode in ("max", "min"):
                frame.env[comp.acc] = B.constant(
                    -math.inf if mode == "max" else math.inf
                )
            self.block(body)
            if comp.retry is None:
                break
            frame.env = dict(env0)
            del self.diagnostics[reported:]
            comp.kind, comp.retry, comp.emitted = comp.retry, None, 0
        value: Value = tuple(comp.values)
        if comp.failed:
            frame.env.pop(comp.acc, None)
            value = self.poison
        elif comp.acc:
            value = frame.env.pop(comp.acc, self.poison)
            if mode == "array" and not comp.emitted:  # a filter that is always false
                value = A.full(_zero(comp.kind[0]), (0, *comp.kind[1]))
        for name, before in saved.items():  # the targets are the comprehension's
            if before is None:
                frame.env.pop(name, None)
            else:
                frame.env[name] = before
        return value

    def _rewrite(
        self, node: ast.ListComp | ast.GeneratorExp, comp: Comprehension
    ) -> list[ast.stmt]:
        """The statements ``node`` stands for: clauses around filters around one
        item."""
        target = None
        if comp.acc:
            target = ast.copy_location(ast.Name(id=comp.acc, ctx=ast.Store()), node)
        body: list[ast.stmt] = [
            _synthetic(Emit, node.elt, comp, target=target, value=node.elt)
        ]
        for gen in reversed(node.generators):
            for test in reversed(gen.ifs):
                body = [_synthetic(Filter, test, comp, test=test, body=body)]
            body = [
                _synthetic(
                    Clause, node, comp, target=gen.target, iter=gen.iter, body=body
                )
            ]
        return body

    def _fresh(self, node: ast.AST, stem: str) -> str:
        """A name for an accumulator that no variable of the function has."""
        frame = self.frame
        taken = frame.env.keys() | frame.local_names
        taken |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        name = stem
        while name in taken:
            name += "_"
        return name

    # -- lists grown in a loop node ---------------------------------------------------
    def appending_loop(self, stmt: ast.For, source: Source) -> bool:
        """A loop node whose body appends to lists that are empty before it, one
        item per iteration: each list is an array of the trip count, row ``k``
        set by iteration ``k``, as a list comprehension over a run-time range is
        (its ``Emit`` does the row, widening the array's kind as it needs).
        False, doing nothing, when the loop appends to no list from before it."""
        frame = self.frame
        found = [
            (name, call, where)
            for name, call, where in _appends(stmt.body)
            if isinstance(frame.env.get(name), tuple)
        ]
        if not found:
            return False
        problem = self._append_problem(stmt, found)
        if problem is not None:
            self.error(*problem, LIST_HINT)
            self._poison_loop(stmt)
            for name, _, _ in found:
                frame.env[name] = self.poison
            return True
        comps: list[Comprehension] = []
        body = list(stmt.body)
        for name, append, _ in found:
            comp = Comprehension(stmt, "array", 0, frame.loop, frozenset())  # type: ignore[arg-type]
            comp.acc = name  # the body reads it nowhere else (_append_problem)
            target = ast.copy_location(ast.Name(id=name, ctx=ast.Store()), append)
            emit = _synthetic(
                Emit, append, comp, target=target, value=append.value.args[0]
            )
            body[body.index(append)] = emit
            comps.append(comp)
        loop = ast.copy_location(
            ast.For(target=stmt.target, iter=stmt.iter, body=body, orelse=stmt.orelse),
            stmt,
        )
        length = _length(source.count)
        env0, reported = dict(frame.env), len(self.diagnostics)
        for _attempt in range(3):  # items of another kind: allocate, lower again
            for comp in comps:
                dtype, shape = comp.kind
                frame.env[comp.acc] = A.full(_zero(dtype), (length, *shape))
            try:
                self.for_loop(loop, source)
            except Retry:  # an item that is not a number or an array
                frame.env = dict(env0)
                del self.diagnostics[reported:]
                (name, append, _), *_ = found
                self.error(
                    append,
                    f"the items appended to `{name}` in a loop of run-time length "
                    "must be numbers or arrays",
                    "append to one list per part, or " + LIST_HINT,
                )
                self._poison_loop(stmt)
                for name, _, _ in found:
                    frame.env[name] = self.poison
                return True
            if all(comp.retry is None for comp in comps):
                break
            frame.env = dict(env0)
            del self.diagnostics[reported:]
            for comp in comps:
                if comp.retry is not None:
                    comp.kind, comp.retry, comp.emitted = comp.retry, None, 0
        return True

    def _append_problem(
        self, stmt: ast.For, found: list[tuple[str, ast.Expr, str]]
    ) -> tuple[ast.AST, str] | None:
        """Why the lists ``stmt`` appends to cannot be arrays of its trip count:
        (where, message), or None."""
        frame = self.frame
        seen: set[str] = set()
        appends = {id(call.value.func.value) for _, call, _ in found}  # type: ignore[attr-defined]
        for name, call, where in found:
            if where:
                what = "under a condition" if where == "if" else "in an inner loop"
                return call, (
                    f"appending to `{name}` {what} in a loop of run-time "
                    "length gives a list of unknown length"
                )
            if name in seen:
                return call, (
                    f"`{name}` is appended to more than once per iteration of a "
                    "loop of run-time length"
                )
            seen.add(name)
            if frame.env[name]:
                return call, (
                    f"`{name}` must be empty before a loop of run-time length "
                    "appends to it"
                )
            if any(name in env for env in frame.branches):
                return call, (
                    f"appending to `{name}` under a condition known only at run "
                    "time gives a list of unknown length"
                )
            loop = frame.loop
            if loop is not None and loop.index is not None and name in loop.outer:
                return call, (
                    f"appending to `{name}` in nested loops of run-time length "
                    "gives a list of unknown length"
                )
            for node in ast.walk(ast.Module(body=stmt.body, type_ignores=[])):
                if (
                    isinstance(node, ast.Name)
                    and node.id == name
                    and id(node) not in appends
                ):
                    return node, (
                        f"`{name}` is used inside the loop that appends to it, "
                        "where its length is known only at run time"
                    )
        if self._has_jump(stmt.body, (ast.Break, ast.Continue)):
            return stmt, (
                f"a loop of run-time length that appends to `{found[0][0]}` "
                "cannot `break` or `continue`"
            )
        return None

    # -- its statements -----------------------------------------------------------
    def _stmt_Clause(self, stmt: Clause) -> None:
        comp = stmt.comp
        source = self._source(stmt.iter, comp.unroll)
        if source is None:
            comp.failed = True
        if source is not None and source.items is None and comp.mode == "values":
            raise Retry(
                stmt.iter,
                f"{_consumer(comp.node)} needs a length known when compiling; "
                "this `for` runs over a run-time range",
                "build an array with a list comprehension `[... for ...]`, or "
                f"iterate over a constant range (at most {STATIC_ITEMS} items)",
            )
        if source is not None and comp.mode == "array":
            length = (
                len(source.items) if source.items is not None else _length(source.count)
            )
            dtype, shape = comp.kind
            self.frame.env[comp.acc] = A.full(_zero(dtype), (length, *shape))
        loop = ast.For(target=stmt.target, iter=stmt.iter, body=stmt.body, orelse=[])
        self.for_loop(ast.copy_location(loop, stmt), source, comp.private)

    def _stmt_Filter(self, stmt: Filter) -> None:
        comp = stmt.comp
        if comp.mode in ("sum", "max", "min"):  # if-converted, as any `if`
            branch = ast.If(test=stmt.test, body=stmt.body, orelse=[])
            self._stmt_If(ast.copy_location(branch, stmt))
            return
        cond = self.condition(stmt.test, self.expr(stmt.test, test=True))
        if cond is self.poison:
            return
        if cond.op != "const":
            raise Retry(stmt.test, *_RUN_TIME_FILTER)
        if cond.value:
            self.block(stmt.body)

    def _stmt_Emit(self, stmt: Emit) -> None:
        comp = stmt.comp
        value = self.expr(stmt.value)
        if comp.mode == "values":
            comp.values.append(value)
            if len(comp.values) > MAX_ITEMS:
                raise Retry(
                    comp.node,
                    f"a comprehension of more than {MAX_ITEMS} items is not unrolled",
                    "build an array with one `for` clause over a range, or add "
                    "the items up with sum(...)",
                )
            return
        if value is self.poison:
            return
        here, self.current = self.current, stmt.value
        try:
            self._emit(stmt, comp, value)
        except (Unsupported, ShapeMismatch) as exc:
            self.error(stmt.value, getattr(exc, "message", str(exc)), exc.hint)
        finally:
            self.current = here

    def _emit(self, stmt: Emit, comp: Comprehension, value: Value) -> None:
        env = self.frame.env
        acc = env[comp.acc]
        assert isinstance(acc, Node)
        what = {"sum": "a term of `sum()`", "array": "an item of a list"}.get(
            comp.mode, f"an item of `{comp.mode}()`"
        )
        if comp.mode == "array" and not isinstance(value, Node):
            raise Retry(
                stmt.value,
                "the items of a list comprehension over a run-time range must be "
                "numbers or arrays",
                "build one list per part, or iterate over a constant range "
                f"(at most {STATIC_ITEMS} items), which gives a tuple",
            )
        item = self.scalar(stmt.value, value, what)
        if item is self.poison:
            return
        if comp.mode == "sum":
            env[comp.acc] = B.add(acc, item)
        elif comp.mode in ("max", "min"):
            if item.shape:
                self.error(
                    stmt.value,
                    f"`{comp.mode}` of arrays is not defined element-wise",
                    f"use np.{comp.mode}imum(a, b) element-wise, or np.{comp.mode}(x)",
                )
                return
            env[comp.acc] = B.apply(comp.mode, acc, item)
        else:
            kind = (item.dtype, item.shape)
            # every kind seen, over the attempts too: items that alternate (`s = 0`
            # then `s = s + x` widened by the loop) settle on the wider one
            seen = kind if comp.seen is None else _widen(comp.seen, kind) or kind
            comp.seen = seen
            if seen != comp.kind:
                comp.retry = seen  # allocate for this kind and lower again
                return
            if kind != seen:  # a narrower item (an int among floats): widen it
                item = B.to_float(item) if seen[0] == "float64" else B.to_int(item)
                item = B.broadcast_to(item, seen[1])
            loop = self.frame.loop
            if loop is comp.loop or loop is None or loop.index is None:
                k = B.constant(comp.emitted)  # an unrolled clause
            else:
                k = loop.index
            spec = A.row_spec(len(acc.shape))
            env[comp.acc] = A.index_update(acc, item, spec, (k,), "set")
        comp.emitted += 1


def _is_append(stmt: ast.stmt) -> bool:
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "append"
        and isinstance(call.func.value, ast.Name)
    )


def _appends(body: list[ast.stmt]) -> list[tuple[str, ast.Expr, str]]:
    """The ``name.append(v)`` statements of ``body`` and of the blocks nested in
    it (not in local functions), in source order, each with where it is: ""
    (a statement of ``body``), "if" or "loop" (inside one)."""
    found: list[tuple[str, ast.Expr, str]] = []
    stack: list[tuple[ast.stmt, str]] = [(s, "") for s in reversed(body)]
    while stack:
        stmt, where = stack.pop()
        if _is_append(stmt):
            name = stmt.value.func.value.id  # type: ignore[attr-defined]
            found.append((name, stmt, where))  # type: ignore[arg-type]
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        inner = where or ("loop" if isinstance(stmt, (ast.For, ast.While)) else "if")
        blocks = [getattr(stmt, f, []) for f in ("body", "orelse", "finalbody")]
        children = [c for block in blocks for c in block if isinstance(c, ast.stmt)]
        stack.extend((c, inner) for c in reversed(children))
    return found


def _consumer(node: ast.ListComp | ast.GeneratorExp) -> str:
    return "a list comprehension" if isinstance(node, ast.ListComp) else "`tuple(...)`"
