"""Lowering a Python function to the IR: statements, branches, helper calls.

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
import importlib
import inspect
import os
import sysconfig
import types
from dataclasses import dataclass, field

from symdiff.custom import custom_vjp
from symdiff.errors import Diagnostic, SourceUnavailableError, TranslationError
from symdiff.frontend.expressions import ExpressionLowering, python_value
from symdiff.frontend.source import FunctionSource, function_source
from symdiff.frontend.values import Static, Undefined, Value
from symdiff.ir import build as B
from symdiff.ir.node import Node, make

#: ``for`` loops over constant ranges are unrolled up to this many iterations.
MAX_UNROLL = 10_000

# Statement kinds symdiff rejects, with what to write instead.
UNSUPPORTED_STATEMENTS: dict[type, tuple[str, str]] = {
    ast.While: (
        "`while` loops are not supported yet",
        "use `for i in range(n)` with a constant `n`",
    ),
    ast.Break: (
        "`break` is not supported yet",
        "guard the rest of the loop body with `if` instead",
    ),
    ast.Continue: (
        "`continue` is not supported yet",
        "guard the rest of the loop body with `if` instead",
    ),
    ast.Try: (
        "`try` blocks are not supported",
        "remove it: differentiated code must be plain arithmetic",
    ),
    ast.With: ("`with` blocks are not supported", "move it out of the function"),
    ast.Raise: (
        "`raise` is not supported",
        "validate the arguments before calling the differentiated function",
    ),
    ast.Global: (
        "`global` declarations are not supported",
        "pass the value as an argument",
    ),
    ast.Nonlocal: (
        "`nonlocal` declarations are not supported",
        "pass the value as an argument",
    ),
    ast.Delete: ("`del` is not supported", "remove it"),
    ast.FunctionDef: (
        "a nested `def` is not supported",
        "define the helper at module level and call it",
    ),
    ast.ClassDef: ("a class definition is not supported", "define it at module level"),
    ast.AsyncFunctionDef: ("an `async def` is not supported", "use a plain `def`"),
    ast.AsyncFor: ("`async for` is not supported", "use a plain `for`"),
    ast.AsyncWith: ("`async with` is not supported", "remove it"),
    ast.Match: ("`match` statements are not supported", "use `if`/`elif`/`else`"),
}


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
    """

    name: str
    params: tuple[Node, ...]
    output: Value
    hints: dict[Node, str]
    location: str


def param_node(index: int, name: str, dtype: str) -> Node:
    return make("param", (), (index, name), dtype=dtype)


def _local_names(tree: ast.FunctionDef | ast.Lambda) -> set[str]:
    body = tree.body if isinstance(tree, ast.FunctionDef) else [tree.body]
    return _local_names_of(body)


def _local_names_of(body: list[ast.stmt] | list[ast.expr]) -> set[str]:
    names: set[str] = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


class Lowerer(ExpressionLowering):
    """Lowers one top-level function (and the helpers it calls) to a ``Traced``."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []
        self.hints: dict[Node, str] = {}
        self.frames: list[Frame] = []
        self.in_fwd: set[int] = set()
        self.poison = make("param", (), (-1, "<error>"))

    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    # -- diagnostics ------------------------------------------------------------
    def error(self, node: ast.AST, message: str, hint: str = "") -> Node:
        source = self.frame.source
        line = getattr(node, "lineno", 0) or source.tree.lineno
        col = getattr(node, "col_offset", 0)
        end_line = getattr(node, "end_lineno", line)
        end_col = getattr(node, "end_col_offset", None)
        text = source.line_text(line)
        if end_col is None or end_line != line:
            end_col = len(text.rstrip())
        notes = tuple(f.call_site for f in reversed(self.frames) if f.call_site)
        self.diagnostics.append(
            Diagnostic(
                message,
                source.display_file,
                line,
                col + 1,
                text,
                max(1, end_col - col),
                hint,
                notes,
            )
        )
        return self.poison

    # -- entry point ------------------------------------------------------------
    def trace(self, fn: types.FunctionType, dtypes: tuple[str, ...]) -> Traced:
        custom = fn if isinstance(fn, custom_vjp) else None
        if custom is not None:
            fn = custom.fun  # type: ignore[assignment]
        source = function_source(fn)
        tree = source.tree
        names = [a.arg for a in (*tree.args.posonlyargs, *tree.args.args)]
        params = tuple(
            param_node(i, n, dt)
            for i, (n, dt) in enumerate(zip(names, dtypes, strict=False))
        )
        frame = Frame(
            source, dict(zip(names, params, strict=False)), _local_names(tree)
        )
        self.frames.append(frame)
        self._check_signature(tree)
        if self.diagnostics:
            output: Value = self.poison
        elif custom is not None:
            frame.running = False
            output = self.inline_custom(tree, custom, list(params), {})
        else:
            output = self._run_frame(frame)
        self.frames.pop()
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
        )

    def _check_signature(self, tree: ast.FunctionDef | ast.Lambda) -> None:
        a = tree.args
        for arg, what in ((a.vararg, "*args"), (a.kwarg, "**kwargs")):
            if arg is not None:
                self.error(
                    arg,
                    f"`{what}` parameters are not supported",
                    "list the parameters one by one",
                )
        for arg in a.kwonlyargs:
            self.error(
                arg,
                "keyword-only parameters are not supported",
                "make it an ordinary positional parameter",
            )

    def _run_frame(self, frame: Frame) -> Value:
        tree = frame.source.tree
        if isinstance(tree, ast.Lambda):
            return self.expr(tree.body)
        reported = len(self.diagnostics)
        self.block(tree.body)
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
        try:
            bound = inspect.signature(fn).bind(*args, **kwargs)
        except TypeError as exc:
            return self.error(call, f"bad call of `{name}`: {exc}")
        bound.apply_defaults()
        env: dict[str, Value] = {}
        for pname, value in bound.arguments.items():
            env[pname] = python_value(value) if not _is_value(value) else value
            if isinstance(env[pname], Node):
                self.hints.setdefault(env[pname], pname)
        here = self.frame.source
        site = f"inlined from `{here.name}` at {here.display_file}:{call.lineno}"
        frame = Frame(source, env, _local_names(source.tree), site)
        self.frames.append(frame)
        reported = len(self.diagnostics)
        try:
            result = self._run_frame(frame)
        finally:
            self.frames.pop()
        if len(self.diagnostics) > reported and _is_library(fn):
            # Problems deep inside someone else's code help nobody: say it once,
            # at the user's call.
            del self.diagnostics[reported:]
            module = getattr(fn, "__module__", "?")
            return self.error(
                call,
                f"cannot differentiate library function `{module}.{name}`",
                "write the computation with math/numpy functions and your own helpers",
            )
        return result

    def inline_custom(
        self,
        call: ast.AST,
        custom: custom_vjp,
        args: list[Value],
        kwargs: dict[str, Value],
    ) -> Value:
        """A call of a ``custom_vjp`` function: the value comes from ``fwd``, the
        partials from ``bwd`` at cotangent 1 (a scalar VJP is linear in it)."""
        name = custom.__name__
        if custom.fwd is None or custom.bwd is None:
            return self.error(
                call,
                f"`{name}` is a custom_vjp without rules",
                f"call `{name}.defvjp(fwd, bwd)` before differentiating",
            )
        # Inside its own fwd rule, a call of the custom function means its primal.
        self.in_fwd.add(id(custom))
        try:
            pair = self.inline(call, custom.fwd, args, kwargs)  # type: ignore[arg-type]
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
                "`(output, residuals)` with one number as output",
            )
        out, residuals = pair
        inputs = list(args) + list(kwargs.values())
        cts = self.inline(call, custom.bwd, [residuals, B.ONE], {})  # type: ignore[arg-type]
        if cts is self.poison:
            return cts
        if not isinstance(cts, tuple) or len(cts) != len(inputs):
            return self.error(
                call,
                f"the bwd rule of `{name}` must return a tuple "
                f"of {len(inputs)} cotangent(s), one per input",
            )
        partials: list[Node | None] = []
        for value, ct in zip(inputs, cts, strict=True):
            if not isinstance(value, Node):
                return self.error(call, f"`{name}` takes numbers only")
            if isinstance(ct, Static) and ct.obj is None:
                partials.append(None)
            elif isinstance(ct, Node):
                partials.append(ct)
            else:
                return self.error(
                    call,
                    f"the bwd rule of `{name}` returns "
                    "something that is not a number or None",
                )
        nodes = [v for v in inputs if isinstance(v, Node)]
        return make("custom", (*nodes, out), (tuple(partials),), dtype=out.dtype)

    # -- statements -------------------------------------------------------------
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
            self.frame.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, tuple):
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
                )
                value = (self.poison,) * len(target.elts)
            for elt, item in zip(target.elts, value, strict=True):
                self.assign(elt, item)
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

    def _stmt_Assign(self, stmt: ast.Assign) -> None:
        value = self.expr(stmt.value)
        for target in stmt.targets:
            self.assign(target, value)

    def _stmt_AnnAssign(self, stmt: ast.AnnAssign) -> None:
        if stmt.value is not None:
            self.assign(stmt.target, self.expr(stmt.value))

    def _stmt_AugAssign(self, stmt: ast.AugAssign) -> None:
        as_load = ast.copy_location(
            ast.BinOp(left=_as_load(stmt.target), op=stmt.op, right=stmt.value), stmt
        )
        ast.fix_missing_locations(as_load)
        self.assign(stmt.target, self.expr(as_load))

    def _stmt_Return(self, stmt: ast.Return) -> None:
        if stmt.value is None:
            self.error(stmt, "`return` without a value", "return the function's result")
            value: Value = self.poison
        else:
            value = self.expr(stmt.value)
        self.frame.returns.append((self.frame.live, value))
        self.frame.live = B.FALSE

    def _stmt_Expr(self, stmt: ast.Expr) -> None:
        value = stmt.value
        if isinstance(value, ast.Constant):
            return  # a docstring or a bare constant: no effect
        if isinstance(value, (ast.Yield, ast.YieldFrom, ast.Await)):
            self.expr(value)  # reports the construct itself
            return
        if isinstance(value, ast.Call):
            name = ast.unparse(value.func)
            self.error(
                stmt,
                f"a call of `{name}` as a statement is not supported",
                "remove it: symdiff compiles functions without side effects",
            )
            return
        self.error(
            stmt,
            "an expression statement has no effect on the result",
            "assign its value to a variable, or remove it",
        )

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

    def _stmt_If(self, stmt: ast.If) -> None:
        frame = self.frame
        cond = B.truth(
            self.scalar(stmt.test, self.expr(stmt.test, test=True), "the condition")
        )
        if cond.op == "const":  # decided at compile time: lower one branch only
            self.block(stmt.body if cond.value else stmt.orelse)
            return
        env0, live0 = dict(frame.env), frame.live
        frame.live = B.logical_and(live0, cond)
        self.block(stmt.body)
        env_then, live_then = frame.env, frame.live
        frame.env, frame.live = dict(env0), B.logical_and(live0, B.logical_not(cond))
        self.block(stmt.orelse)
        env_else, live_else = frame.env, frame.live
        if live_then is B.FALSE:
            return  # the state after the `if` is the else branch's
        if live_else is B.FALSE:
            frame.env, frame.live = env_then, live_then
            return
        frame.env = {}
        for name in env_then.keys() | env_else.keys():
            a = env_then.get(name, Undefined(name, stmt.lineno))
            b = env_else.get(name, Undefined(name, stmt.lineno))
            frame.env[name] = a if a is b else self.merge(stmt, cond, a, b)
        untouched = live_then is B.logical_and(
            live0, cond
        ) and live_else is B.logical_and(live0, B.logical_not(cond))
        frame.live = live0 if untouched else B.logical_or(live_then, live_else)

    def _stmt_For(self, stmt: ast.For) -> None:
        items = self._unroll_items(stmt)
        if items is None:
            return
        for item in items:
            if self.frame.live is B.FALSE:
                return
            self.assign(stmt.target, item)
            self.block(stmt.body)
        self.block(stmt.orelse)

    def _unroll_items(self, stmt: ast.For) -> list[Value] | None:
        hint = (
            "loops are unrolled for now, so the bounds must be constants; "
            "loops with run-time bounds are planned"
        )
        it = stmt.iter
        if (
            isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name)
            and it.func.id == "range"
        ):
            bounds = [self.expr(a) for a in it.args]
            if any(b is self.poison for b in bounds):
                return None
            if (
                not all(
                    isinstance(b, Node) and b.op == "const" and b.dtype == "int64"
                    for b in bounds
                )
                or not 1 <= len(bounds) <= 3
                or it.keywords
            ):
                self.error(it, "`range` bounds must be constant integers", hint)
                return None
            rng = range(*(b.value for b in bounds))  # type: ignore[union-attr]
            if len(rng) > MAX_UNROLL:
                self.error(
                    it,
                    f"a loop of {len(rng)} iterations is too long to unroll "
                    f"(at most {MAX_UNROLL})",
                    hint,
                )
                return None
            return [B.constant(i) for i in rng]
        value = self.expr(it)
        if isinstance(value, tuple):
            return list(value)
        if value is not self.poison:
            self.error(it, "a `for` loop must run over `range(...)` or a tuple", hint)
        return None


_LIBRARY_DIRS = tuple(
    os.path.realpath(p) + os.sep
    for key in ("stdlib", "platstdlib", "purelib", "platlib")
    if (p := sysconfig.get_paths().get(key))
)


def _is_library(fn: types.FunctionType) -> bool:
    """True for functions of the standard library or installed packages."""
    path = os.path.realpath(fn.__code__.co_filename)
    return path.startswith(_LIBRARY_DIRS)


def _is_value(obj: object) -> bool:
    return isinstance(obj, (Node, tuple, Static, Undefined))


def _as_load(target: ast.expr) -> ast.expr:
    if isinstance(target, ast.Name):
        return ast.copy_location(ast.Name(id=target.id, ctx=ast.Load()), target)
    return target


def trace(fn: types.FunctionType, dtypes: tuple[str, ...]) -> Traced:
    """Lower ``fn`` for arguments of ``dtypes``; raises :class:`TranslationError`."""
    return Lowerer().trace(fn, dtypes)
