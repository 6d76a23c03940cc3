"""Reading a function's source: the AST and the map back to file positions."""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import os
import textwrap
import types
from collections.abc import Iterator
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
        """The file name as messages and generated code show it: relative to its
        project's root (the nearest folder above it with a ``pyproject.toml``,
        ``setup.py``, ``setup.cfg`` or ``.git``), else its own name: the same
        text whichever folder the program runs from (kernels quote it, and a
        kernel's text is its cache key)."""
        return display_path(self.filename)

    def line_text(self, lineno: int) -> str:
        return linecache.getline(self.filename, lineno)


_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


@functools.lru_cache(maxsize=256)
def display_path(filename: str) -> str:
    """``filename`` relative to its project's root (see ``display_file``)."""
    if filename.startswith("<") or not os.path.isabs(filename):
        if not os.path.exists(filename):
            return filename  # <string>, <dynamic-code>: as it is
        filename = os.path.abspath(filename)
    folder = os.path.dirname(filename)
    here = folder
    while True:
        if any(os.path.exists(os.path.join(here, m)) for m in _MARKERS):
            return os.path.relpath(filename, here)
        parent = os.path.dirname(here)
        if parent == here:
            return os.path.basename(filename)
        here = parent


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
    fn = _through_wrappers(fn)
    return FunctionSource(fn, _tree(fn), fn.__code__.co_filename)


def signature(fn: object) -> inspect.Signature:
    """``fn``'s parameters as symdiff lowers it: a decorator's wrapper with its
    own parameters (``def wrapper(x, scale=3.0)``) has those, not the wrapped
    function's (which ``inspect.signature`` reports, following
    ``__wrapped__``)."""
    if isinstance(fn, types.FunctionType) and getattr(fn, "__wrapped__", None):
        try:
            own = _through_wrappers(fn) is fn
        except SourceUnavailableError:
            own = False
        if own:
            return inspect.signature(fn, follow_wrapped=False)
    return inspect.signature(fn)  # type: ignore[arg-type]


def _tree(fn: types.FunctionType) -> ast.FunctionDef | ast.Lambda:
    code = fn.__code__
    tree = _TREES.get(code)
    if tree is None:
        tree = _find_lambda(fn) if fn.__name__ == "<lambda>" else _find_def(fn)
        _TREES[code] = tree
    return tree


def _through_wrappers(fn: types.FunctionType) -> types.FunctionType:
    """The function to lower for ``fn``: ``fn`` itself, unless it is a
    decorator's wrapper (``functools.wraps``) that only passes its arguments on
    (``def wrapper(*args, **kwargs): ... return func(*args, **kwargs)``: a timer,
    a logger), which stands for the function it wraps.  A wrapper with its own
    parameters is lowered as it is, its arithmetic included (``return k *
    func(x)``); one taking ``*args`` that changes the result is reported."""
    seen: set[int] = set()
    while id(fn) not in seen:
        seen.add(id(fn))
        wrapped = getattr(fn, "__wrapped__", None)
        if wrapped is None or fn.__name__ == "<lambda>":
            return fn
        tree = _tree(fn)
        if not isinstance(tree, ast.FunctionDef):
            return fn
        if tree.args.vararg is None and tree.args.kwarg is None:
            return fn
        inner = getattr(wrapped, "py_func", wrapped)  # @numba.njit inside
        if not isinstance(inner, types.FunctionType):
            try:
                inner = inspect.unwrap(wrapped)  # @functools.lru_cache inside
            except ValueError:
                return fn
        if not isinstance(inner, types.FunctionType):
            return fn
        if not _passes_through(tree, fn, wrapped):
            name = getattr(wrapped, "__qualname__", "the function")
            params = ", ".join(inner.__code__.co_varnames[: inner.__code__.co_argcount])
            raise SourceUnavailableError(
                f"`{name}` is wrapped by a decorator's `{tree.name}(*args, "
                "**kwargs)`, which does more than call it: symdiff cannot follow "
                "its arguments\n"
                "  help: give the wrapper the parameters of the function it wraps "
                f"(`def {tree.name}({params}): ...`), or move the decorator's "
                "arithmetic into the function"
            )
        fn = inner
    return fn


def _passes_through(
    tree: ast.FunctionDef, wrapper: types.FunctionType, wrapped: object
) -> bool:
    """Whether every ``return`` of ``wrapper`` gives ``wrapped(*args,
    **kwargs)`` unchanged (directly, or through a name bound to that call only)."""
    names = {  # the names the wrapper calls the wrapped function by
        name
        for name, cell in zip(
            wrapper.__code__.co_freevars, wrapper.__closure__ or (), strict=False
        )
        if _cell(cell) is wrapped
    } | {n for n, v in wrapper.__globals__.items() if v is wrapped}
    star = tree.args.vararg.arg if tree.args.vararg else None
    stars = tree.args.kwarg.arg if tree.args.kwarg else None

    def forwards(node: ast.expr | None) -> bool:
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in names
        ):
            return False
        args_ok = [ast.dump(a) for a in node.args] == (
            [ast.dump(ast.Starred(ast.Name(star, ast.Load()), ast.Load()))]
            if star
            else []
        )
        keywords_ok = [(k.arg, ast.dump(k.value)) for k in node.keywords] == (
            [(None, ast.dump(ast.Name(stars, ast.Load())))] if stars else []
        )
        return args_ok and keywords_ok

    body = [n for stmt in tree.body for n in _walk_own(stmt)]
    results: set[str] = set()
    for node in body:
        if isinstance(node, ast.Assign) and forwards(node.value):
            results.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for node in body:  # a result name must not be bound to anything else
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and t.id in results:
                    if not (isinstance(node, ast.Assign) and forwards(node.value)):
                        results.discard(t.id)
    returns = [n for n in body if isinstance(n, ast.Return)]
    return bool(returns) and all(
        forwards(r.value) or (isinstance(r.value, ast.Name) and r.value.id in results)
        for r in returns
    )


def _cell(cell: types.CellType) -> object:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def _walk_own(root: ast.AST) -> list[ast.AST]:
    """The nodes of ``root`` outside the functions defined in it."""
    out: list[ast.AST] = []
    stack = [root]
    while stack:
        node = stack.pop()
        out.append(node)
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
                stack.append(child)
    return out


def _find_def(fn: types.FunctionType) -> ast.FunctionDef:
    try:
        # fn's own `def`: inspect.getsource(fn) would follow `__wrapped__`
        text = inspect.getsource(fn.__code__)
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
    if isinstance(tree, ast.AsyncFunctionDef):
        name = getattr(fn, "__qualname__", fn.__code__.co_name)
        where = f"{display_path(fn.__code__.co_filename)}:{fn.__code__.co_firstlineno}"
        raise SourceUnavailableError(
            f"`{name}` ({where}) is an `async def` function: symdiff differentiates "
            "functions defined with a plain `def`\n"
            "  help: make it a plain `def` (a function of numbers and arrays has "
            "nothing to await), or differentiate the plain function it awaits"
        )
    if not isinstance(tree, ast.FunctionDef):
        raise _no_source(fn, "its source is not a `def` statement")
    code = fn.__code__
    params = [a.arg for a in (*tree.args.posonlyargs, *tree.args.args)]
    if tree.name != code.co_name or params != list(
        code.co_varnames[: code.co_argcount]
    ):
        # the file changed since the module was imported: its text at the line
        # Python recorded is another function (or another signature)
        name = getattr(fn, "__qualname__", code.co_name)
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


# -- functions pickled by value -------------------------------------------------------
#: The file a function's source lives in and that file's lines, shipped with a
#: transform pickled to another process (see :func:`portable_source`).
ShippedSource = tuple[str, list[str]]


def portable_source(fn: object) -> ShippedSource | None:
    """The file and lines of ``fn``'s source where a pickle carries ``fn`` by value.

    cloudpickle (what Dask sends tasks with) pickles a function of ``__main__``
    by value and, since 3.1.3, names its file ``<dynamic-code>``, so the process
    that unpickles it finds no source to read.  A transform ships the file's
    lines beside the function; :func:`restore_source` puts them back.  None for
    a function that pickles by reference (an importable module's: the other
    process imports the module and reads the file itself).
    """
    for item in _functions_in(fn):
        if item.__module__ == "__main__":
            filename = item.__code__.co_filename
            lines = linecache.getlines(filename)
            return (filename, list(lines)) if lines else None
    return None


def restore_source(fn: object, shipped: ShippedSource | None) -> None:
    """Make ``fn``'s shipped source readable here: the file's lines go into
    ``linecache``, and the functions of ``__main__`` pickled by value (``fn``, the
    helpers among its globals and closures) get their file's name back."""
    if shipped is None:
        return
    filename, lines = shipped
    if not linecache.getlines(filename):
        # mtime None: linecache.checkcache keeps the entry (no file to compare with)
        linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)
    for item in _functions_in(fn, follow_globals=True):
        code = item.__code__
        if item.__module__ == "__main__" and not os.path.exists(code.co_filename):
            item.__code__ = code.replace(co_filename=filename)


def _functions_in(
    obj: object, follow_globals: bool = False
) -> Iterator[types.FunctionType]:
    """The Python functions behind ``obj`` (a function, a bound method, a
    ``functools.partial``, a ``custom_vjp`` and its rules); with
    ``follow_globals``, also those of ``__main__`` that they reach through their
    globals and closures (helpers), each once."""
    seen: set[int] = set()
    stack = [obj]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if not isinstance(item, types.FunctionType):
            # a method's function, a partial's, a custom_vjp's and its rules
            stack.extend(
                getattr(item, name, None) for name in ("__func__", "func", "fun")
            )
            stack.extend(getattr(item, name, None) for name in ("fwd", "bwd"))
            continue
        yield item
        wrapped = getattr(item, "__wrapped__", None)
        if wrapped is not None:
            stack.append(wrapped)
        if follow_globals and item.__module__ == "__main__":
            stack.extend(item.__globals__.get(n) for n in _global_names(item.__code__))
            for cell in item.__closure__ or ():
                try:
                    stack.append(cell.cell_contents)
                except ValueError:  # an empty cell
                    continue


def _global_names(code: types.CodeType) -> set[str]:
    """The names ``code`` and the functions defined in it may read as globals."""
    names: set[str] = set()
    codes = [code]
    while codes:
        c = codes.pop()
        names.update(c.co_names)
        codes.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return names
