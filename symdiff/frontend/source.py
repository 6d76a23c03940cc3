"""Reading a function's source: the AST and the map back to file positions."""

from __future__ import annotations

import ast
import inspect
import linecache
import os
import textwrap
import types
from dataclasses import dataclass

from symdiff.errors import SourceUnavailableError
from symdiff.frontend.returns import rewrite_loop_returns


@dataclass(frozen=True)
class FunctionSource:
    """A parsed function and how its AST positions map to the file.

    ``tree`` is an ``ast.FunctionDef`` or ``ast.Lambda`` whose positions are already
    file positions (line numbers shifted, columns re-indented).
    """

    fn: types.FunctionType
    tree: ast.FunctionDef | ast.Lambda
    filename: str

    @property
    def name(self) -> str:
        return self.fn.__name__

    @property
    def display_file(self) -> str:
        """The file name as shown in messages: relative to the cwd when inside it."""
        try:
            rel = os.path.relpath(self.filename)
        except ValueError:
            return self.filename
        return self.filename if rel.startswith("..") else rel

    def line_text(self, lineno: int) -> str:
        return linecache.getline(self.filename, lineno)


# Parsed trees by code object: closures made by one `def` share their tree.
_TREES: dict[types.CodeType, ast.FunctionDef | ast.Lambda] = {}


def _no_source(fn: object, why: str) -> SourceUnavailableError:
    name = getattr(fn, "__qualname__", repr(fn))
    return SourceUnavailableError(
        f"cannot read the source of `{name}`: {why}\n"
        "  help: symdiff reads a function's source text; define it with `def` in a "
        "file (or a notebook cell) and pass the function itself"
    )


def function_source(fn: object) -> FunctionSource:
    """Parse ``fn``'s source, with positions that point into its file.

    Raises
    ------
    SourceUnavailableError
        For builtins, C functions and functions defined where no source is kept
        (the plain REPL, ``exec`` of a string).
    """
    if not isinstance(fn, types.FunctionType):
        kind = type(fn).__name__
        raise _no_source(fn, f"it is a {kind}, not a Python function")
    code = fn.__code__
    tree = _TREES.get(code)
    if tree is None:
        tree = _find_lambda(fn) if fn.__name__ == "<lambda>" else _find_def(fn)
        _TREES[code] = tree
    return FunctionSource(fn, tree, code.co_filename)


def _find_def(fn: types.FunctionType) -> ast.FunctionDef:
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):
        where = fn.__code__.co_filename
        raise _no_source(
            fn, f"it was defined in {where}, which keeps no source"
        ) from None
    first_line = text.splitlines()[0] if text else ""
    indent = len(first_line) - len(first_line.lstrip())
    try:
        module = ast.parse(textwrap.dedent(text))
    except SyntaxError as exc:
        raise _no_source(fn, f"its source does not parse ({exc.msg})") from None
    tree = module.body[0] if module.body else None
    if not isinstance(tree, ast.FunctionDef):
        raise _no_source(fn, "its source is not a `def` statement")
    inner = inspect.unwrap(fn)  # what inspect.getsource read
    code = getattr(inner, "__code__", fn.__code__)
    params = [a.arg for a in (*tree.args.posonlyargs, *tree.args.args)]
    if tree.name != code.co_name or params != list(
        code.co_varnames[: code.co_argcount]
    ):
        # the file changed since the module was imported: its text at the line
        # Python recorded is another function (or another signature)
        name = getattr(inner, "__qualname__", code.co_name)
        raise SourceUnavailableError(
            f"the source of `{name}` in {code.co_filename} changed since "
            f"it was imported: line {code.co_firstlineno} now holds `def "
            f"{tree.name}({', '.join(params)})`\n"
            "  help: reload the module (importlib.reload) or restart, so that the "
            "function and its file agree"
        )
    # inspect.getsource starts at the first decorator, which is co_firstlineno.
    ast.increment_lineno(tree, code.co_firstlineno - 1)
    if indent:
        for node in ast.walk(tree):
            if hasattr(node, "col_offset"):
                node.col_offset += indent
                if getattr(node, "end_col_offset", None) is not None:
                    node.end_col_offset += indent
    return rewrite_loop_returns(tree)


def _find_lambda(fn: types.FunctionType) -> ast.Lambda:
    try:
        lines, _ = inspect.findsource(fn)
    except (OSError, TypeError):
        where = fn.__code__.co_filename
        raise _no_source(
            fn, f"it was defined in {where}, which keeps no source"
        ) from None
    try:
        module = ast.parse("".join(lines))
    except SyntaxError:
        raise _no_source(fn, "the file holding the lambda does not parse") from None
    params = list(fn.__code__.co_varnames[: fn.__code__.co_argcount])
    found = [
        node
        for node in ast.walk(module)
        if isinstance(node, ast.Lambda)
        and node.lineno == fn.__code__.co_firstlineno
        and [a.arg for a in node.args.args] == params
    ]
    if len(found) != 1:
        raise _no_source(
            fn,
            "several lambdas with the same parameters share its line, so its "
            "source is ambiguous",
        )
    return found[0]
