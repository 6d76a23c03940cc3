"""Lowering a Python function to the IR: frames, helper calls, the entry point.

Expressions are in ``expressions.py``, statements in ``statements.py``.

The environment is in SSA form: each assignment rebinds a name to a node.  ``if``
statements whose test is not a compile-time constant are *if-converted*: both
branches are lowered and every variable they change is merged with a ``select``.
Early ``return`` works by path predicates: a ``return`` records ``(live, value)``,
where ``live`` is the condition under which control reaches it, and the function's
result is the chain of selects over those records.  Derivatives stay branch-correct
because reverse mode routes adjoints through the selects (see ``ir/build.py``).

Nesting is bounded by Python's own limits (100 indentation levels, no recursion in
the user's call graph, which is reported), so statement blocks and inlined calls are
lowered recursively; expressions, which can be arbitrarily long, are not.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import inspect
import os
import re
import sys
import sysconfig
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from symdiff.custom import CustomRule, custom_vjp
from symdiff.errors import (
    Diagnostic,
    SourceUnavailableError,
    SymdiffError,
    TranslationError,
)
from symdiff.frontend import arrays as AR
from symdiff.frontend.comprehensions import ComprehensionLowering
from symdiff.frontend.expressions import ExpressionLowering, python_value
from symdiff.frontend.inplace import InPlaceLowering
from symdiff.frontend.loops import LoopContext, LoopLowering
from symdiff.frontend.source import FunctionSource, function_source, signature
from symdiff.frontend.statements import StatementLowering, _local_names, _walk_scope
from symdiff.frontend.values import (
    NAMEDTUPLE,
    STATIC,
    TREE,
    LocalFunction,
    Masked,
    Maybe,
    Raise,
    Static,
    Undefined,
    Value,
    is_namedtuple,
    namedtuple_kind,
    static_value,
    tree_structure,
)
from symdiff.frontend.views import AMBIGUOUS, View, ViewLowering, key_of
from symdiff.ir import build as B
from symdiff.ir import loops as L
from symdiff.ir import shapes as S
from symdiff.ir.node import Node, is_zero, make, topological


@dataclass
class Frame:
    """One function being lowered: the top-level one or an inlined helper."""

    source: FunctionSource
    env: dict[str, Value]
    local_names: set[str]
    call_site: str = ""
    live: Node = B.TRUE
    returns: list[tuple[Node, Value]] = field(default_factory=list)
    running: bool = True  # False for a frame that only holds parameters
    loop: LoopContext | None = None  # the loop body being lowered, if any
    discarded: bool = False  # called as a statement: returns nothing needed
    # the environments where the run-time `if`s being lowered start (a list
    # from before one cannot grow in it: StatementLowering)
    branches: list[dict[str, Value]] = field(default_factory=list)


@dataclass(frozen=True)
class LocalSource(FunctionSource):
    """The source of a local function: the tree of its ``def`` or ``lambda``, in
    the file of the function that defines it (whose globals it reads)."""

    local_name: str = ""

    @property
    def name(self) -> str:
        return self.local_name


@dataclass(frozen=True)
class _Default:
    """A parameter's default in a local function's signature: item ``index`` of
    the tuple of default values."""

    index: int


@dataclass(frozen=True)
class Traced:
    """A function lowered to the IR for one argument signature.

    Attributes
    ----------
    name : str
        The function's name.
    params : tuple of Node
        One ``param`` node per positional argument.
    output : Value
        A node, or a (nested) tuple of nodes.
    hints : dict
        User variable names for nodes, used by the printer and the listing.
    location : str
        ``file:line`` of the definition.
    checks : tuple of Check
        Lengths that must agree, checked when the kernel starts.
    raises : tuple of Raise
        The function's ``raise`` statements that depend on values: the kernel
        raises where their condition holds.
    """

    name: str
    params: tuple[Node, ...]
    output: Value
    hints: dict[Node, str]
    location: str
    checks: tuple[S.Check, ...] = ()
    raises: tuple[Raise, ...] = ()
    #: where the function returns dicts (``return loss, {"acc": acc}``): the
    #: structure to give the kernel's tuples (:func:`restructure`); None if none
    output_tree: Any = None


def param_node(index: int, name: str, dtype: str, shape: S.Shape = ()) -> Node:
    return make("param", (), (index, name), shape=shape, dtype=dtype)


def parse_kind(
    kind: str, index: int, same: dict[S.Atom, S.Dim] | None = None
) -> tuple[str, S.Shape]:
    """``"float64"`` or ``"float64[:,1]"`` (an array; ``1`` marks a length-1 axis)
    as a dtype and a symbolic shape for parameter ``index``; ``same`` maps axes
    known to equal another parameter's to that one.  A static argument
    (:data:`~symdiff.frontend.values.STATIC`) has an int placeholder: the kernel
    takes 0 in its place."""
    if kind.startswith(STATIC):
        return "int64", ()
    if "[" not in kind:
        return kind, ()
    dtype, _, rest = kind.partition("[")
    axes = [a.strip() for a in rest.rstrip("]").split(",") if a.strip()]
    same = same or {}
    shape = tuple(
        1 if a == "1" else same.get(("shape", index, k), S.atom("shape", index, k))
        for k, a in enumerate(axes)
    )
    return dtype, shape


#: A comparison and its negation.
_FLIPPED = {"lt": "ge", "ge": "lt", "le": "gt", "gt": "le", "eq": "ne", "ne": "eq"}


def tree_value(
    kind: str, name: str, start: int, same: dict[S.Atom, S.Dim] | None = None
) -> tuple[Value, list[Node]]:
    """A tuple, list or dict argument (:data:`~symdiff.frontend.values.TREE`): its
    value in the function (tuples of the leaves; a dict as a constant mapping to
    them) and one parameter per leaf, numbered from ``start`` and named by its
    path (``params_W``, ``layers_0_b``)."""
    leaves: list[Node] = []

    def build(structure: Any, path: str) -> Value:
        # nesting is the user's own container's, not a graph
        if isinstance(structure, str):
            i = start + len(leaves)
            leaves.append(param_node(i, path, *parse_kind(structure, i, same)))
            return leaves[-1]
        container, items = structure
        values = {k: build(sub, f"{path}_{_key_name(k)}") for k, sub in items}
        if container == "dict":
            return Static(values)
        if container.startswith(NAMEDTUPLE):  # p.a reads a field, p[0] an item
            return static_value(container)(*values.values())  # type: ignore[operator,no-any-return]
        return tuple(values.values())

    value = build(tree_structure(kind), name)
    return value, leaves


def _key_name(key: object) -> str:
    return re.sub(r"\W", "_", str(key))


def equal_axes(checks: tuple[S.Check, ...]) -> dict[S.Atom, S.Dim]:
    """From assumed equalities between parameter axes, map each axis to the first
    of its class (``W.shape[0]`` -> ``X.shape[1]``), so that a second trace names
    equal lengths alike."""
    parent: dict[S.Atom, S.Atom] = {}

    def find(a: S.Atom) -> S.Atom:
        while parent.get(a, a) != a:
            a = parent[a]
        return a

    for check in checks:
        sides = [check.left, check.right]
        if check.kind != "eq" or not all(
            isinstance(d, S.Dim)
            and len(d.terms) == 1
            and d.terms[0][1] == 1
            and len(d.terms[0][0]) == 1
            and d.terms[0][0][0][0] == "shape"
            for d in sides
        ):
            continue
        a, b = (find(d.terms[0][0][0]) for d in sides)  # type: ignore[union-attr]
        if a != b:
            first, second = sorted((a, b))
            parent[second] = first
    return {a: S.Dim({(find(a),): 1}) for a in parent}


class Lowerer(
    InPlaceLowering,
    ExpressionLowering,
    ComprehensionLowering,
    LoopLowering,
    StatementLowering,
    ViewLowering,
):
    """Lowers one top-level function (and the helpers it calls) to a ``Traced``."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []
        self.hints: dict[Node, str] = {}
        self.frames: list[Frame] = []
        self.in_fwd: set[int] = set()
        self.poison = make("param", (), (-1, "<error>"))
        self.current: ast.AST | None = None
        # ids of the expression nodes Python may not evaluate (ExpressionLowering)
        self.conditional: set[int] = set()
        # the trip counts of the unrolled loops being lowered (LoopLowering)
        self.unrolled_trips: list[int] = []
        # ids of the generator expressions passed to a call, which lowers them
        # (ComprehensionLowering)
        self.generator_args: set[int] = set()
        # the loop bodies being lowered, innermost last: (the index of their
        # frame, the function that takes a value from outside into the body)
        self.captures: list[tuple[int, Callable[..., Value]]] = []
        # a number for each local function's defaults (their variable's name)
        self.local_count = 0
        # calls of the user's functions made as statements (`check(mode)`)
        self.statement_calls: set[ast.Call] = set()
        # `raise` statements that depend on values (StatementLowering)
        self.raises: list[Raise] = []
        # arrays a loop body wrote without assigning them (LoopLowering)
        self.written_in_body: list[str] = []

    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    def path_condition(self) -> Node:
        """The condition under which the statement being lowered runs: the live
        conditions of this frame and of the helpers' call sites around it, out
        to the innermost loop body (whose values are the loop's own)."""
        path = B.TRUE
        for f in reversed(self.frames):
            path = B.logical_and(f.live, path)
            if f.loop is not None:
                break
        return path

    def _path_lengths(self) -> tuple[tuple[str, S.Length, S.Length], ...] | None:
        """:meth:`path_condition` as lengths compared (``k > 0``), or None
        where it tests anything else (values)."""
        out: list[tuple[str, S.Length, S.Length]] = []
        stack = [self.path_condition()]
        while stack:
            c = stack.pop()
            if c is B.TRUE:
                continue
            if c.op == "and":
                stack.extend(c.args)
                continue
            negate = c.op == "not"
            if negate:
                c = c.args[0]
            if c.op not in _FLIPPED:
                return None
            try:
                a, b = (AR.length(x) for x in c.args)
            except AR.Unsupported:
                return None
            out.append((_FLIPPED[c.op] if negate else c.op, a, b))
        return tuple(out)

    def frames_reached(self) -> bool:
        """Whether the statement being lowered runs on every call: no run-time
        ``if`` or loop around it, here or at the calls of the helpers inlined."""
        no_loop = all(f.loop is None for f in self.frames)
        return no_loop and self.path_condition() is B.TRUE

    # -- diagnostics ------------------------------------------------------------
    def error(self, node: ast.AST, message: str, hint: str = "") -> Node:
        self.diagnostics.append(self.diagnostic(node, message, hint))
        return self.poison

    def diagnostic(self, node: ast.AST, message: str, hint: str = "") -> Diagnostic:
        """A problem at ``node`` of the function being lowered (not recorded)."""
        source = self.frame.source
        line = getattr(node, "lineno", 0) or source.tree.lineno
        col = getattr(node, "col_offset", 0)
        end_line = getattr(node, "end_lineno", line)
        end_col = getattr(node, "end_col_offset", None)
        text = source.line_text(line)
        if end_col is None or end_line != line:
            end_col = len(text.rstrip())
        notes = tuple(f.call_site for f in reversed(self.frames) if f.call_site)
        return Diagnostic(
            message,
            source.display_file,
            line,
            col + 1,
            text,
            max(1, end_col - col),
            hint,
            notes,
        )

    def where(self) -> tuple[str, str]:
        """``file:line:col`` and the source line of the expression being lowered."""
        node = self.current
        if node is None or not self.frames:
            return "", ""
        source = self.frame.source
        line = getattr(node, "lineno", 0)
        col = getattr(node, "col_offset", 0)
        text = source.line_text(line).strip() if line else ""
        return f"{source.display_file}:{line}:{col + 1}", text

    # -- entry point ------------------------------------------------------------
    def trace(
        self,
        fn: types.FunctionType,
        dtypes: tuple[str, ...],
        same: dict[S.Atom, S.Dim] | None = None,
    ) -> Traced:
        custom = fn if isinstance(fn, custom_vjp) else None
        if custom is not None:
            fn = custom.fun  # type: ignore[assignment]
        source = function_source(fn)
        tree = source.tree
        a = tree.args
        arg_names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
        env: dict[str, Value] = {}
        params_list: list[Node] = []
        names: list[str] = []  # one per kernel parameter (a tree's leaves each)
        for n, dt in zip(arg_names, dtypes, strict=False):
            if dt.startswith(TREE):  # a tuple, list or dict of arrays: its leaves
                env[n], leaves = tree_value(dt, n, len(params_list), same)
                params_list.extend(leaves)
                names.extend(str(p.attrs[1]) for p in leaves)
                continue
            i = len(params_list)
            params_list.append(param_node(i, n, *parse_kind(dt, i, same)))
            names.append(n)
            env[n] = params_list[-1]
            if dt.startswith(STATIC):  # a string, None, a function: a constant
                env[n] = Static(static_value(dt))
        params = tuple(params_list)
        frame = Frame(source, env, _local_names(tree))
        self.frames.append(frame)
        self._check_signature(tree, keyword_only=True)

        def name_of(i: int | S.Atom) -> str:
            return names[i] if isinstance(i, int) else _count_text(i)

        if same is not None and S._namers:
            # a transform inlined into a caller (inline_transform): its shapes
            # are the caller's (`same`), so are their names
            name_of = S._namers[-1]  # type: ignore[assignment]
        AR.PARAM_LENGTHS.append(
            {}
            if same is None
            else {k[1]: d for k, d in same.items() if k[0] == "value"}  # type: ignore[misc]
        )
        with (
            S.collecting() as checks,
            S.naming(name_of),
            S.site(self.where),
            S.paths(self._path_lengths),
        ):
            try:
                if self.diagnostics:
                    output: Value = self.poison
                elif custom is not None:
                    frame.running = False
                    output = self.inline_custom(tree, custom, list(params), {})
                else:
                    output = self._run_frame(frame)
            finally:
                AR.PARAM_LENGTHS.pop()
        self.frames.pop()
        output, output_tree = _flatten_dicts(output)
        if self.diagnostics:
            unique = dict.fromkeys(self.diagnostics)  # a loop or two calls: once
            ordered = sorted(unique, key=lambda d: (d.filename, d.line, d.col))
            raise TranslationError(fn.__qualname__, ordered)
        return Traced(
            fn.__name__,
            params,
            output,
            self.hints,
            f"{source.display_file}:{tree.lineno}",
            tuple(dict.fromkeys(checks)),
            tuple(self.raises),
            output_tree,
        )

    def _check_signature(
        self, tree: ast.FunctionDef | ast.Lambda, keyword_only: bool = False
    ) -> None:
        a = tree.args
        for arg, what in ((a.vararg, "*args"), (a.kwarg, "**kwargs")):
            if arg is not None:
                self.error(
                    arg,
                    f"`{what}` parameters are not supported",
                    "list the parameters one by one",
                )
        for arg in [] if keyword_only else a.kwonlyargs:
            self.error(
                arg,
                "keyword-only parameters of a local function are not supported",
                "make it an ordinary positional parameter",
            )

    def _run_frame(self, frame: Frame) -> Value:
        tree = frame.source.tree
        if isinstance(tree, ast.Lambda):
            return self.expr(tree.body)
        reported = len(self.diagnostics)
        self.block(tree.body)
        if frame.discarded:
            return Static(None)  # `check(mode)` as a statement: its value is unused
        if frame.live is not B.FALSE and len(self.diagnostics) > reported:
            return self.poison  # the problems above explain the missing return
        if frame.live is not B.FALSE:
            last = tree.body[-1]
            self.error(
                last,
                f"`{tree.name}` can reach its end without returning a value",
                "end every path with `return ...`",
            )
            return self.poison
        *earlier, (_, result) = frame.returns
        for live, value in reversed(earlier):
            result = self.merge(tree, live, value, result)
        return result

    # -- helper calls -----------------------------------------------------------
    def inline_transform(
        self, call: ast.Call, obj: Any, args: list[Value], kwargs: dict[str, Value]
    ) -> Value:
        """A call of a symdiff transform inside the function (``slope =
        symdiff.grad(f)``, then ``slope(x) * x``): the transform's graph at the
        call's arguments joins this one, so an outer transform differentiates
        through it (``grad`` of a function calling ``grad``: second
        derivatives)."""
        name = getattr(obj, "__name__", "the transform")
        bound = self._bind(call, obj, name, args, kwargs)
        if not isinstance(bound, dict):
            return bound
        values = list(bound.values())
        if not all(isinstance(v, Node) for v in values):
            return self.error(
                call,
                f"the arguments of `{name}`, a symdiff transform called here, must "
                "be numbers or arrays",
                "call the transform outside, or pass its other arguments as "
                "constants of the function it transforms",
            )
        nodes: list[Node] = values  # type: ignore[assignment]
        dtypes = tuple(_kind_of(v) for v in nodes)
        same: dict[S.Atom, Any] = {
            ("shape", i, k): d
            for i, v in enumerate(nodes)
            for k, d in enumerate(v.shape)
            if d != 1
        }
        for i, v in enumerate(nodes):
            if v.dtype == "int64" and not v.shape:  # a size in the transform
                try:
                    same[("value", i)] = AR.length(v)
                except AR.Unsupported:
                    same[("value", i)] = None
        try:
            traced = obj.__symdiff_inline__(dtypes, same)
        except TranslationError as exc:
            self.diagnostics.extend(exc.diagnostics)
            return self.poison
        except SymdiffError as exc:
            return self.error(call, f"cannot inline `{name}`: {exc}")
        mapping = {
            p: v if v.dtype == p.dtype else B.to_float(v)
            for p, v in zip(traced.params, nodes, strict=True)
        }
        outputs = _tuple_leaves(traced.output)
        rebuilt = L.substitute(outputs, mapping, fold=True)
        for old, new in zip(outputs, rebuilt, strict=True):
            if old in traced.hints:
                self.hints.setdefault(new, traced.hints[old])
        if traced.checks and S._collectors:
            S._collectors[-1].extend(traced.checks)
        if traced.raises and any(f.loop is not None for f in self.frames):
            return self.error(
                call,
                f"`{name}` raises for some values, and a `raise` inside a loop is "
                "not supported",
                "call it after the loop, or check the values before calling it",
            )
        if traced.raises:
            conds = L.substitute([r.cond for r in traced.raises], mapping, fold=True)
            path = self.path_condition()
            self.raises.extend(
                dataclasses.replace(r, cond=B.logical_and(path, c))
                for r, c in zip(traced.raises, conds, strict=True)
            )
        return _tuple_rebuild(traced.output, rebuilt)

    def inline(
        self,
        call: ast.Call,
        fn: types.FunctionType,
        args: list[Value],
        kwargs: dict[str, Value],
    ) -> Value:
        """Lower a call of the user's own function by lowering its body in place."""
        name = fn.__qualname__
        if any(f.running and f.source.fn.__code__ is fn.__code__ for f in self.frames):
            return self.error(
                call,
                f"recursive call of `{name}` cannot be inlined",
                "rewrite the recursion as a loop",
            )
        try:
            source = function_source(fn)
        except SourceUnavailableError as exc:
            return self.error(
                call,
                f"cannot inline `{name}`: its source is unavailable",
                str(exc).splitlines()[0],
            )
        bound = self._bind(call, fn, name, args, kwargs)
        if not isinstance(bound, dict):
            return bound
        reported = len(self.diagnostics)
        result = self._run_inlined(
            call, name, source, dict(bound), _local_names(source.tree), bound
        )
        if len(self.diagnostics) > reported and _is_library(fn):
            # Problems deep inside someone else's code help nobody: say it once,
            # at the user's call.
            del self.diagnostics[reported:]
            module = getattr(fn, "__module__", "?")
            written = ast.unparse(call.func) if isinstance(call, ast.Call) else name
            return self.error(
                call,
                f"cannot differentiate library function `{written}` ({module}.{name})",
                "write the computation with math/numpy functions and your own helpers",
            )
        return result

    def _writes_into_arguments(
        self,
        call: ast.AST,
        frame: Frame,
        bound: dict[str, Value],
        marks: dict[str, Value],
    ) -> None:
        """A helper's writes into its array arguments (``def scale(r, s): r *=
        s``) reach the caller's arrays they were (``scale(Y[0], 2.0)`` changes
        ``Y``), as in NumPy; a temporary argument (``scale(2 * y, s)``) takes
        them with it."""
        if not isinstance(call, ast.Call):
            return
        params = list(bound)
        given: dict[str, ast.expr] = {}
        for i, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred) or i >= len(params):
                break
            given[params[i]] = arg
        given.update({k.arg: k.value for k in call.keywords if k.arg is not None})
        for pname, mark in marks.items():
            after = frame.env.get(pname)
            if (
                frame.env.get(key_of(pname)) is not mark  # rebound: a new array
                or after is bound[pname]
                or not isinstance(after, Node)
                or pname not in given
            ):
                continue
            view = self.view_chain(given[pname])
            if view is None:
                continue
            if view is AMBIGUOUS:
                self.error(
                    call,
                    f"the helper writes into its argument `{pname}`, which may or "
                    "may not share its array with another here",
                    "pass a copy (`.copy()`), or write into the original array",
                )
                continue
            base = self.frame.env.get(view.base)
            if isinstance(base, Node) and base.shape:
                self.frame.env[view.base] = self.write_back(view, base, after, call)
                self.wrote_in_place(view.base, call)

    # -- local functions ----------------------------------------------------------
    def local_function(
        self, tree: ast.FunctionDef | ast.Lambda, name: str, defaults: list[Value]
    ) -> Value:
        """The value of a local ``def`` or ``lambda`` (``defaults``: the values of
        its defaults): checked here, inlined at each call."""
        reported = len(self.diagnostics)
        self._check_signature(tree)
        self._check_free_writes(tree, name)
        if len(self.diagnostics) > reported or any(d is self.poison for d in defaults):
            return self.poison
        a = tree.args
        positional = [*a.posonlyargs, *a.args]
        first = len(positional) - len(defaults)
        kinds = (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        )
        signature = inspect.Signature(
            [
                inspect.Parameter(
                    p.arg,
                    kinds[i >= len(a.posonlyargs)],
                    default=_Default(i - first) if i >= first else inspect._empty,
                )
                for i, p in enumerate(positional)
            ]
        )
        key = ""
        if defaults:
            self.local_count += 1
            key = f"{name}.defaults{self.local_count}"  # no Python name looks so
            self.frame.env[key] = tuple(defaults)
        return Static(LocalFunction(tree, name, self.frame, signature, key))

    def _check_free_writes(self, tree: ast.FunctionDef | ast.Lambda, name: str) -> None:
        """Report element writes (``y[i] = v``) into a variable of the enclosing
        function: Python changes its array there; here arrays are values."""
        body = tree.body if isinstance(tree, ast.FunctionDef) else [tree.body]
        params = {a.arg for a in (*tree.args.posonlyargs, *tree.args.args)}
        assigned: set[str] = set()
        written: list[ast.Subscript] = []
        for stmt in body:
            for node in _walk_scope(stmt):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    assigned.add(node.id)
                elif (
                    isinstance(node, ast.Subscript)
                    and isinstance(node.ctx, ast.Store)
                    and isinstance(node.value, ast.Name)
                ):
                    written.append(node)
        for node in written:
            var = node.value.id  # type: ignore[attr-defined]
            if var not in params and var not in assigned:
                self.error(
                    node,
                    f"`{name}` writes into `{var}` of the function around it, "
                    "which Python would change there; symdiff passes arrays as "
                    "values",
                    f"return the new array from `{name}` and assign it in the "
                    f"enclosing function (`{var} = {name}(...)`)",
                )
                return

    def inline_local(
        self,
        call: ast.Call,
        local: LocalFunction,
        args: list[Value],
        kwargs: dict[str, Value],
    ) -> Value:
        """A call of a local function: its body lowered in place, in a frame that
        starts with the variables of the frame that defined it as they are now
        (a closure reads them at the call), and the arguments."""
        name = ast.unparse(call.func) if local.name == "<lambda>" else local.name
        tree = local.tree
        if any(f.running and f.source.tree is tree for f in self.frames):
            return self.error(
                call,
                f"recursive call of `{name}` cannot be inlined",
                "rewrite the recursion as a loop",
            )
        scope = local.scope
        depth = next((i for i, f in enumerate(self.frames) if f is scope), None)
        defaults = scope.env.get(local.defaults, ()) if local.defaults else ()
        if depth is None or not isinstance(defaults, tuple):
            return self.error(
                call,
                f"`{name}` is called where the variables it reads are gone",
                "call it in the block that defines it, or define it at module level",
            )
        try:
            arguments = local.signature.bind(*args, **kwargs)
        except TypeError as exc:
            return self.error(
                call,
                f"bad call of `{name}`: {exc}",
                f"call `{name}` with the parameters of its definition",
            )
        arguments.apply_defaults()
        own = _local_names(tree) | set(arguments.arguments)
        env = {k: v for k, v in scope.env.items() if k not in own}
        # loop bodies entered since the defining frame's own: what the body reads
        # from that frame comes into each of them as a captured variable
        for at, capture in self.captures:
            if at > depth:
                env = {k: capture(v, k) for k, v in env.items()}
                defaults = capture(defaults)  # type: ignore[assignment]
        bound: dict[str, Value] = {
            pname: defaults[value.index] if isinstance(value, _Default) else value
            for pname, value in arguments.arguments.items()
        }
        env.update(bound)
        here = self.frame.source
        source = LocalSource(here.fn, tree, here.filename, name)
        # a variable the enclosing function assigns later cannot be read yet
        later = scope.local_names - scope.env.keys()
        return self._run_inlined(call, name, source, env, own | later, bound)

    def _run_inlined(
        self,
        call: ast.Call,
        name: str,
        source: FunctionSource,
        env: dict[str, Value],
        local_names: set[str],
        bound: dict[str, Value],
    ) -> Value:
        """Lower a helper's or a local function's body (``source``) in a frame of
        its own that starts as ``env``: its result.  Its writes into array
        arguments reach the caller's arrays, as NumPy's do."""
        for pname, value in bound.items():
            if isinstance(value, Node):
                self.hints.setdefault(value, pname)
        here = self.frame.source
        site = f"inlined from `{here.name}` at {here.display_file}:{call.lineno}"
        marks = {}
        for pname, value in bound.items():
            if isinstance(value, Node) and value.shape:
                # the caller's array itself, as long as the helper does not rebind
                # the name: its writes into it reach the caller (as NumPy's do)
                marks[pname] = Static(View(_ARGUMENT))
                env[key_of(pname)] = marks[pname]
        frame = Frame(source, env, local_names, site)
        frame.discarded = call in self.statement_calls
        self.frames.append(frame)
        try:
            result = self._run_frame(frame)
        finally:
            self.frames.pop()
        self._writes_into_arguments(call, frame, bound, marks)
        return result

    def escaping(self, node: ast.AST, value: Value, what: str) -> bool:
        """Report a local function in ``value``, which is ``what`` ("returned",
        "passed to `np.exp`"): it can only be called."""
        stack = [value]
        while stack:
            v = stack.pop()
            if isinstance(v, tuple):
                stack.extend(v)
            elif isinstance(v, Static) and isinstance(v.obj, LocalFunction):
                fn = v.obj.name
                who = "a lambda" if fn == "<lambda>" else f"the local function `{fn}`"
                self.error(
                    node,
                    f"{who} cannot be {what}: symdiff inlines local functions "
                    "where they are called",
                    "call it here and use its value, or define it at module level",
                )
                return True
        return False

    def _bind(
        self,
        call: ast.AST,
        fn: Callable[..., Any],
        name: str,
        args: list[Value],
        kwargs: dict[str, Value],
    ) -> dict[str, Value] | Node:
        """``fn``'s parameters bound to a call's values, defaults filled in (as
        values), or the error reported for a call that does not fit."""
        try:
            bound = signature(fn).bind(*args, **kwargs)
        except TypeError as exc:
            return self.error(
                call,
                f"bad call of `{name}`: {exc}",
                f"call `{name}` with the parameters of its definition",
            )
        bound.apply_defaults()
        return {
            p: v if _is_value(v) else python_value(v)
            for p, v in bound.arguments.items()
        }

    def inline_custom(
        self,
        call: ast.AST,
        custom: custom_vjp,
        args: list[Value],
        kwargs: dict[str, Value],
    ) -> Value:
        """A call of a ``custom_vjp`` function: the value comes from ``fwd``;
        ``bwd`` is lowered at a cotangent variable ``g``.  A rule linear in ``g``
        (zero at 0, its slope free of ``g``) gives the local partials, its value
        at ``g = 1``, which forward mode uses too; any other (gradient clipping,
        a rule ignoring ``g``) is kept whole as a :class:`CustomRule` that
        reverse mode evaluates at the adjoint."""
        name = custom.__name__
        if custom.fwd is None or custom.bwd is None:
            return self.error(
                call,
                f"`{name}` is a custom_vjp without rules",
                f"call `{name}.defvjp(fwd, bwd)` before differentiating",
            )
        # As in JAX, the rules see every parameter, the defaults bound: fwd takes
        # them all, and bwd returns one cotangent per parameter, whichever the
        # call passed.
        bound = self._bind(call, custom.fun, name, args, kwargs)
        if not isinstance(bound, dict):
            return bound
        params, inputs = list(bound), list(bound.values())
        # Inside its own fwd rule, a call of the custom function means its primal.
        self.in_fwd.add(id(custom))
        try:
            pair = self.inline(call, custom.fwd, inputs, {})  # type: ignore[arg-type]
        finally:
            self.in_fwd.discard(id(custom))
        if pair is self.poison:
            return pair
        if not (
            isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], Node)
        ):
            return self.error(
                call,
                f"the fwd rule of `{name}` must return "
                "`(output, residuals)` with a number or an array as output",
            )
        out, residuals = pair
        g = L.var("g", out.shape)
        cts = self.inline(call, custom.bwd, [residuals, g], {})  # type: ignore[arg-type]
        if cts is self.poison:
            return cts
        if not isinstance(cts, tuple) or len(cts) != len(inputs):
            got = f"{len(cts)}" if isinstance(cts, tuple) else "not a tuple"
            return self.error(
                call,
                f"the bwd rule of `{name}` must return a tuple of {len(inputs)} "
                f"cotangent(s), one per parameter of `{name}` ({', '.join(params)}), "
                f"got {got}",
                "a parameter left to its default gets a cotangent too (None for "
                "none), as in JAX",
            )
        rules: list[Node | None] = []
        for value, ct in zip(inputs, cts, strict=True):
            if not isinstance(value, Node):
                return self.error(call, f"`{name}` takes numbers only")
            if isinstance(ct, Static) and ct.obj is None:
                rules.append(None)
            elif isinstance(ct, Node):
                rules.append(ct)
            else:
                return self.error(
                    call,
                    f"the bwd rule of `{name}` returns "
                    "something that is not a number or None",
                )
        nodes = [v for v in inputs if isinstance(v, Node)]
        for value, ct in zip(inputs, rules, strict=True):
            if ct is None or ct.shape == value.shape:
                continue
            # NumPy's broadcasting would hide a cotangent of the wrong shape;
            # lengths known only at run time (y's for x's) are checked then
            shape, want = (
                f"shape {S.format_shape(v.shape)}" if v.shape else "a number"
                for v in (ct, value)
            )
            what = (
                f"the bwd rule of `{name}` returns a cotangent of {shape} for an "
                f"input of {want}"
            )
            try:
                if len(ct.shape) != len(value.shape):
                    raise S.ShapeMismatch(what)
                for a, b in zip(ct.shape, value.shape, strict=True):
                    S.unify(a, b, what)
            except S.ShapeMismatch:
                return self.error(
                    call, what, "return one cotangent per input, shaped as that input"
                )
        if out.shape:
            # an array output: the rule is a vector-Jacobian product, evaluated
            # at the adjoint in reverse mode; it has no partials to multiply
            # tangents by
            why = self.diagnostic(
                call,
                f"`{name}` returns an array, so its custom_vjp rule has no "
                "forward-mode derivative (jvp, a forward Jacobian, the outer pass "
                "of hessian)",
                "differentiate it in reverse mode (grad, value_and_grad, vjp, "
                "jacobian(..., mode='reverse'))",
            )
            rule = CustomRule(g, tuple(rules), name, why)
            return make(
                "custom",
                (*nodes, out),
                ((None,) * len(rules), rule),
                shape=out.shape,
                dtype=out.dtype,
            )
        if _linear_in(g, [r for r in rules if r is not None]):
            partials = tuple(
                None if r is None else L.substitute([r], {g: B.ONE}, fold=True)[0]
                for r in rules
            )
            return make("custom", (*nodes, out), (partials, None), dtype=out.dtype)
        why = self.diagnostic(
            call,
            f"the bwd rule of `{name}` is not linear in its cotangent, so "
            f"`{name}` has no forward-mode derivative (jvp, a forward Jacobian, "
            "the outer pass of hessian)",
            "differentiate it in reverse mode (grad, value_and_grad, vjp, "
            "jacobian(..., mode='reverse')), or write a bwd rule linear in g",
        )
        rule = CustomRule(g, tuple(rules), name, why)
        unknown = (None,) * len(rules)  # forward mode reports `why` instead
        return make("custom", (*nodes, out), (unknown, rule), dtype=out.dtype)


def _zero_at_zero(g: Node, rules: list[Node]) -> bool:
    """Whether every rule is 0 wherever ``g`` is (``3 * x * g``, ``g / x if
    x > 0 else 0.0``; not ``g + 1`` or ``2 * x``), read from the graph: a
    product or quotient of something 0 is 0, a sum of zeros, a choice
    between zeros."""
    zero: dict[Node, bool] = {g: True}
    for n in topological(rules, stop={g}):
        if n in zero:
            continue
        flags = [zero[a] for a in n.args]
        if is_zero(n):
            zero[n] = True
        elif n.op in ("mul", "div", "neg") and flags:
            zero[n] = flags[0] or (n.op == "mul" and flags[1])
        elif n.op in ("add", "sub"):
            zero[n] = all(flags)
        elif n.op == "select":
            zero[n] = flags[1] and flags[2]
        else:
            zero[n] = False
    return all(zero[r] for r in rules)


def _linear_in(g: Node, rules: list[Node]) -> bool:
    """Whether every rule is ``g`` times something free of ``g``: zero at
    ``g = 0`` and with a derivative in ``g`` that does not read ``g`` (a rule
    that cannot be differentiated, through a nested custom rule that is not
    linear, is not)."""
    from symdiff.ad.forward import jvp_graph

    if not _zero_at_zero(g, rules):
        return False
    try:
        slopes, _ = jvp_graph(rules, [(g, B.ONE)])
    except TranslationError:
        return False
    return all(g not in set(topological([s])) for s in slopes)


_LIBRARY_DIRS = tuple(
    os.path.realpath(p) + os.sep
    for key in ("stdlib", "platstdlib", "purelib", "platlib")
    if (p := sysconfig.get_paths().get(key))
)


_INT_OPS = {"add": "+", "sub": "-", "mul": "*"}


def _count_text(count: Node) -> str:
    """A run-time count (a list grown in a loop over ``range(n - 1)``) in a
    message: ``n - 1``; a loop's iterations are counted from parameters and
    constants with ``+ - *`` (and clipped at 0), else described in words."""
    if count.op == "max" and count.args[1].op == "const" and count.args[1].value == 0:
        count = count.args[0]  # range(n): max(n, 0) iterations
    parts: list[str] = []
    stack: list[Node | str] = [count]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
        elif item.op == "param":
            parts.append(str(item.attrs[1]))
        elif item.op == "const":
            parts.append(str(item.value))
        elif item.op == "dim":
            parts.append(S.format_dim(item.attrs[0]))
        elif item.op in _INT_OPS and len(parts) + len(stack) < 16:
            a, b = item.args
            stack.extend([b, f" {_INT_OPS[item.op]} ", a])
        else:
            return "the number of iterations of a loop"
    return "".join(parts)


def _is_library(fn: types.FunctionType) -> bool:
    """True for functions of the standard library or installed packages."""
    path = os.path.realpath(fn.__code__.co_filename)
    return path.startswith(_LIBRARY_DIRS)


def _flatten_dicts(value: Value) -> tuple[Value, Any]:
    """``value`` with each dict (``Static``) as the tuple of its values, and
    the structure that turns the kernel's tuples back into dicts (None where
    ``value`` holds no dict).  Nesting is the user's own, shallow."""
    if isinstance(value, Maybe):  # None on some paths: Python's value elsewhere
        return value.value, None
    if isinstance(value, Static) and isinstance(value.obj, dict):
        items = [(k, _flatten_dicts(v)) for k, v in value.obj.items()]
        flat = tuple(f for _, (f, _) in items)
        return flat, ("dict", tuple((k, t) for k, (_, t) in items))
    if isinstance(value, tuple):
        parts = [_flatten_dicts(v) for v in value]
        flat = tuple(f for f, _ in parts)
        if is_namedtuple(value):  # returned as its class, as JAX does
            kind = namedtuple_kind(type(value))
            return flat, (kind, tuple(t for _, t in parts))
        if all(t is None for _, t in parts):
            return value, None
        return flat, ("tuple", tuple(t for _, t in parts))
    return value, None


def restructure(tree: Any, value: Any) -> Any:
    """A kernel's result (tuples) shaped as :func:`_flatten_dicts`' ``tree``."""
    if tree is None:
        return value
    kind, items = tree
    if kind == "dict":
        return {k: restructure(t, v) for (k, t), v in zip(items, value, strict=True)}
    parts = tuple(restructure(t, v) for t, v in zip(items, value, strict=True))
    if kind.startswith(NAMEDTUPLE):
        return static_value(kind)(*parts)  # type: ignore[operator]
    return parts


#: The base of a helper's array argument: the caller's array (no name here).
_ARGUMENT = "\0argument"


def _kind_of(node: Node) -> str:
    """The argument kind (``"float64"``, ``"float64[:,1]"``) ``node`` is."""
    if not node.shape:
        return node.dtype
    return f"{node.dtype}[{','.join('1' if d == 1 else ':' for d in node.shape)}]"


def _tuple_leaves(value: Value) -> list[Node]:
    out: list[Node] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, tuple):
            stack.extend(reversed(v))
        elif isinstance(v, Node):
            out.append(v)
    return out


def _tuple_rebuild(shape_of: Value, leaves: list[Node]) -> Value:
    it = iter(leaves)

    def build(v: Value) -> Value:  # nesting as deep as the user's tuples
        if isinstance(v, tuple):
            return tuple(build(x) for x in v)
        return next(it) if isinstance(v, Node) else v

    return build(shape_of)


def _is_value(obj: object) -> bool:
    return isinstance(obj, (Node, tuple, Static, Undefined, Masked))


def trace(fn: types.FunctionType, dtypes: tuple[str, ...]) -> Traced:
    """Lower ``fn`` for arguments of ``dtypes``; raises :class:`TranslationError`.

    Array code whose shapes must agree (``X @ W``: ``X.shape[1] == W.shape[0]``)
    is traced twice: the second time with equal axes named alike, so the kernel
    computes with one length; the first trace's assumptions are the checks the
    kernel makes on entry.
    """
    with deep_nesting():
        traced = Lowerer().trace(fn, dtypes)
        same = equal_axes(traced.checks)
        if not same:
            return traced
        again = Lowerer().trace(fn, dtypes, same)
    return dataclasses.replace(again, checks=traced.checks)


#: Python frames the lowering (and the simplification of nested selects) may
#: use: it follows the nesting of the user's code (an `elif` chain, helpers
#: calling helpers) with a few frames per level; graphs are walked without
#: recursion.
_NESTING_FRAMES = 20_000


@contextlib.contextmanager
def deep_nesting() -> Iterator[None]:
    """Room for recursion that follows the nesting of the user's code (the
    lowering of an `elif` chain of hundreds or helpers 1000 calls deep, the
    simplification of the selects such a chain makes), restored after.  Calls
    between Python functions take no C stack (3.11+), so a higher limit is
    safe; before 3.11 the limit is left as it is."""
    before = sys.getrecursionlimit()
    if before < _NESTING_FRAMES and sys.version_info >= (3, 11):
        sys.setrecursionlimit(_NESTING_FRAMES)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)
