"""What a command works on: ``FILE.py:FUNC``, ``--wrt`` and points (``--at``),
typed by the parameters' kinds (``--arg``, see :mod:`symdiff.cli.kinds`).

A target file is imported as a module (symdiff resolves the names a function uses
to live objects, so the file must run), with its own printing (stdout and
stderr) captured: it is shown only if the import fails, so that a script that
prints at import time does not garble the command's output.  Problems with
what the user typed are usage errors (exit 2); problems found in the user's code
are failures (exit 1).
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import importlib.util
import inspect
import io
import math
import os
import sys
import traceback
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import click

from symdiff.cli.kinds import (
    BOOL,
    FLOAT,
    INT,
    array_shape,
    base_kind,
    format_value,
    infer,
    is_array,
    is_static,
    literal_array_kind,
    parse_kinds,
    parse_value,
    sample,
    short,
    split_items,
    static_kind_of,
    static_literal,
    static_text,
)
from symdiff.compiled import Compiled, annotated_dtype
from symdiff.errors import SymdiffError


class Failure(click.ClickException):
    """A failure that is not the user's typing: exit status 1."""


def bad_target(message: str) -> click.BadParameter:
    return click.BadParameter(message, param_hint="'FILE.py:FUNC'")


@dataclass(frozen=True)
class Target:
    """A function named on the command line.

    ``fn`` is the function to differentiate (a symdiff-decorated function is
    unwrapped to the user's own), ``params`` its positional parameter names,
    ``defaults`` the default values of those that have one.
    """

    spec: str
    where: str
    is_file: bool
    name: str
    fn: Callable[..., Any]
    params: tuple[str, ...]
    defaults: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"`{self.name}` ({self.where})"


_SPEC_HELP = "expected FILE.py:FUNC (or module:FUNC)"


def load_target(spec: str) -> Target:
    """Resolve ``path/to/file.py:func`` or ``package.module:func``.

    The function's name follows the last colon, so a file whose name has a
    colon works (``a:b.py:f``); a spec whose part before it names no ``.py``
    file and still has a colon (``m.py:f:g``) is a usage error.
    """
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        raise bad_target(
            f"{_SPEC_HELP}, got {spec!r}; for example examples/seed004_chain.py:z"
        )
    if ":" in where and not where.endswith(".py"):
        raise bad_target(
            f"{spec!r} has too many colons: {_SPEC_HELP}, for example "
            "examples/seed004_chain.py:z"
        )
    is_file = (
        where.endswith(".py")
        or os.sep in where
        or "/" in where
        or os.path.isfile(where)
    )
    module = _import_file(where) if is_file else _import_module(where)
    fn = _lookup(module, where, name)
    if isinstance(fn, Compiled):
        # The user's own function under a symdiff decorator (update_wrapper): the
        # command works on the function as written, and says so (in Python,
        # symdiff.grad of the decorated name would differentiate its result)
        inner = getattr(fn, "__wrapped__", fn)
        if inner is not fn:
            click.echo(
                f"note: `{name}` is decorated with symdiff.{fn._spec.kind}; this "
                f"command works on `{name}` as written, without the decorator",
                err=True,
            )
        fn = inner
    from symdiff.api import unwrap_decorated

    fn = unwrap_decorated(fn)  # @numba.njit, @functools.lru_cache
    params = list(_positional(fn))
    if (
        isinstance(fn, types.FunctionType)
        and params[:1] == ["self"]
        and "." in fn.__qualname__
    ):
        raise bad_target(
            f"`{name}` is a method of a class: name the method of an object made "
            f"at module level (`model = {fn.__qualname__.rsplit('.', 1)[0]}(...)`, "
            f"then `{where}:model.{fn.__name__}`)"
        )
    required = _required_keyword_only(fn)
    if required:
        raise bad_target(
            f"`{name}` has keyword-only parameters without a default "
            f"({', '.join(required)}): the command line gives positional "
            "parameters only; give them defaults (they are used as given), or "
            "make them positional"
        )
    return Target(spec, where, is_file, name, fn, _positional(fn), _defaults(fn))


def _import_module(name: str) -> types.ModuleType:
    # As `python -m` does: a module in the working directory can be named.
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(name)
    except SyntaxError as exc:
        raise Failure(syntax_error_message(exc)) from None
    except ImportError as exc:
        raise bad_target(f"cannot import module {name!r}: {exc}") from None


def _import_file(path: str) -> types.ModuleType:
    if not os.path.exists(path):
        raise bad_target(f"no such file: {path}")
    if os.path.isdir(path):
        raise bad_target(f"{path} is a directory; expected a Python file")
    if not path.endswith(".py"):
        raise bad_target(f"{path} is not a .py file; {_SPEC_HELP}")
    stem = os.path.splitext(os.path.basename(path))[0]
    # Registered under its own name so that it can import its neighbours and be
    # found by pickle/dataclasses, unless that name belongs to another module.
    taken = sys.modules.get(stem)
    same = taken is not None and _same_file(getattr(taken, "__file__", None), path)
    module_name = stem if (taken is None or same) and stem.isidentifier() else None
    module_name = module_name or f"_symdiff_user_{abs(hash(os.path.abspath(path)))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise bad_target(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    printed = io.StringIO()  # stdout and stderr, interleaved as written
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(module_name, None)
        raise Failure(syntax_error_message(exc)) from None
    except (Exception, SystemExit) as exc:
        sys.modules.pop(module_name, None)
        message = _import_failure(path, exc)
        if printed.getvalue():
            message += "\nits output before the error:\n" + printed.getvalue().rstrip()
        raise Failure(message) from None
    return module


def _same_file(a: str | None, b: str) -> bool:
    try:
        return a is not None and os.path.samefile(a, b)
    except OSError:
        return False


def display_path(path: str) -> str:
    """``path`` relative to the working directory when it lies inside it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def syntax_error_message(exc: SyntaxError) -> str:
    """``file:line:col: syntax error: msg``, then the line with a caret."""
    kind = "indentation error" if isinstance(exc, IndentationError) else "syntax error"
    where = display_path(exc.filename or "<unknown>")
    col = exc.offset or 1
    lines = [f"{where}:{exc.lineno}:{col}: {kind}: {exc.msg}"]
    if exc.text:
        text = exc.text.rstrip("\n")
        stripped = text.lstrip()
        caret = max(col - 1 - (len(text) - len(stripped)), 0)
        end = exc.end_offset if exc.end_offset and exc.end_offset > col else col + 1
        lines += ["    " + stripped, "    " + " " * caret + "^" + "~" * (end - col - 1)]
    return "\n".join(lines)


def _import_failure(path: str, exc: BaseException) -> str:
    """Where in the user's file an exception raised at import time came from."""
    target = os.path.abspath(path)
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(frame.filename) == target:
            line = frame.lineno
    where = f"{display_path(path)}:{line}" if line else display_path(path)
    if isinstance(exc, SystemExit):
        return f"{where}: the file called sys.exit({exc.code!r}) while being imported"
    return f"{where}: importing the file raised {type(exc).__name__}: {exc}"


def _lookup(module: types.ModuleType, where: str, name: str) -> Callable[..., Any]:
    obj: Any = module
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise bad_target(
                f"{where} has no function `{name}`{_suggest(module, name)}"
            )
    if isinstance(obj, type):
        raise bad_target(
            f"`{name}` in {where} is a class, not a function: name a function "
            f"defined with `def` (or a static method, {name}.method)"
        )
    if not callable(obj):
        raise bad_target(
            f"`{name}` in {where} is a {type(obj).__name__}, not a function"
        )
    return obj  # type: ignore[no-any-return]


def _suggest(module: types.ModuleType, name: str) -> str:
    functions = sorted(
        key
        for key, value in vars(module).items()
        if callable(value)
        and not isinstance(value, type)
        and getattr(value, "__module__", None) == module.__name__
    )
    close = difflib.get_close_matches(name, functions, n=1)
    if close:
        return f"; did you mean `{close[0]}`?"
    if functions:
        shown = ", ".join(functions[:8]) + (", ..." if len(functions) > 8 else "")
        return f" (functions defined there: {shown})"
    return ""


def _positional(fn: Callable[..., Any]) -> tuple[str, ...]:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return ()
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(p.name for p in params if p.kind in kinds)


def _required_keyword_only(fn: Callable[..., Any]) -> list[str]:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in params
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is p.empty
    ]


def _defaults(fn: Callable[..., Any]) -> dict[str, Any]:
    """The default values of the parameters that have one."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in params if p.default is not p.empty}


# -- --wrt --------------------------------------------------------------------------
def parse_wrt(
    target: Target, wrt: str | None, kinds: Sequence[str] | None = None
) -> int | tuple[int, ...]:
    """``--wrt x,y`` or ``--wrt 0,1`` as ``argnums``; by default every parameter
    (every float64 one when ``kinds`` declares some int64 or bool or a static
    one).

    One parameter gives an int (derivatives come back as numbers, as with
    ``symdiff.grad(f)``), several a tuple.  An int64 parameter may be named (it is
    differentiated as a real number, as the API does); a bool may not, nor a
    static one unless its value is a number.
    """
    params = target.params
    if not params:
        raise Failure(f"{target.label} takes no arguments: nothing to differentiate")
    kinds = tuple(kinds) if kinds is not None else (FLOAT,) * len(params)
    if wrt is None:
        floats = [i for i, kind in enumerate(kinds) if base_kind(kind) == FLOAT]
        if not floats:
            raise click.UsageError(_nothing_by_default(target, kinds))
        return floats[0] if len(floats) == 1 else tuple(floats)
    argnums: list[int] = []
    for item in (part.strip() for part in wrt.split(",")):
        index = _wrt_index(target, item)
        if index in argnums:
            raise click.BadParameter(
                f"`{params[index]}` is given twice", param_hint="'--wrt'"
            )
        if base_kind(kinds[index]) == BOOL:
            raise click.BadParameter(
                f"cannot differentiate with respect to `{params[index]}`: it is a "
                "bool (only f64 and i64 parameters can be differentiated)",
                param_hint="'--wrt'",
            )
        if is_static(kinds[index]) and not _is_number(sample(kinds[index])):
            name = params[index]
            raise click.BadParameter(
                f"cannot differentiate with respect to `{name}`: it is static "
                f"({name}={static_text(kinds[index])}; a parameter whose default is "
                "a string or None configures the function)\n  help: to "
                f"differentiate it, make it a number: --arg {name}=f64",
                param_hint="'--wrt'",
            )
        argnums.append(index)
    return argnums[0] if len(argnums) == 1 else tuple(argnums)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _nothing_by_default(target: Target, kinds: Sequence[str]) -> str:
    listed = ", ".join(f"{p}: {k}" for p, k in zip(target.params, kinds, strict=True))
    ints = [p for p, k in zip(target.params, kinds, strict=True) if base_kind(k) == INT]
    if not ints:
        return f"`{target.name}` has no parameter to differentiate ({listed})"
    return (
        f"`{target.name}` has no float64 parameter to differentiate by default "
        f"({listed}); pass --wrt {','.join(ints)} to differentiate as real numbers"
    )


def _wrt_index(target: Target, item: str) -> int:
    params = target.params
    listed = f"`{target.name}` takes {', '.join(params)}"
    if not item:
        raise click.BadParameter(
            f"empty name in the list; {listed}", param_hint="'--wrt'"
        )
    if item.lstrip("-").isdigit():
        index = int(item)
        if not -len(params) <= index < len(params):
            raise click.BadParameter(
                f"index {index} is out of range; {listed}", param_hint="'--wrt'"
            )
        return index % len(params)
    if item in params:
        return params.index(item)
    close = difflib.get_close_matches(item, params, n=1)
    hint = f"; did you mean `{close[0]}`?" if close else ""
    raise click.BadParameter(
        f"`{item}` is not a parameter; {listed}{hint}", param_hint="'--wrt'"
    )


def wrt_names(target: Target, argnums: int | tuple[int, ...]) -> list[str]:
    indices = (argnums,) if isinstance(argnums, int) else argnums
    return [target.params[i] for i in indices]


# -- points and kinds -----------------------------------------------------------------
#: A parameter's value at a point: a number, an array, or a static parameter's
#: value (a string, None, the object of its default).
Value = Any


def point_items(target: Target, text: str) -> dict[str, str]:
    """``--at x=1,y=2`` (or ``--at 1,2``, in parameter order) as ``{name: text}``,
    every parameter given once."""
    params = target.params
    items = [part for part in split_items(text) if part]
    values: dict[str, str] = {}
    for k, item in enumerate(items):
        name, eq, raw = item.partition("=")
        if not eq and k >= len(params):
            raise click.BadParameter(
                f"{len(items)} values for `{target.name}`, which takes "
                f"{len(params)} ({', '.join(params)})",
                param_hint="'--at'",
            )
        if not eq:
            name, raw = params[k], item
        name = name.strip()
        if name not in params:
            raise click.BadParameter(
                f"`{name}` is not a parameter of `{target.name}` "
                f"(it takes {', '.join(params)})",
                param_hint="'--at'",
            )
        if name in values:
            raise click.BadParameter(f"`{name}` is given twice", param_hint="'--at'")
        values[name] = raw
    return values


def argument_kinds(
    target: Target,
    arg_texts: Sequence[str] = (),
    points: Sequence[str] = (),
    infer_kinds: bool = False,
) -> tuple[str, ...]:
    """Each parameter's kind: from ``--arg``, else (with ``--infer-kinds``) from
    the ``--at`` values, else from an ``int``/``bool`` annotation or default
    (``def f(x, n=3)``: as ``.source`` before a call shows it), else float64.

    A parameter whose default is a string or None is static, as in the API
    (``def f(x, mode="sq")``): its kind is that of its value at the first point
    that gives one (``--at mode=lin``), else of its default."""
    declared = parse_kinds(target, arg_texts)
    items = [point_items(target, t) for t in points]
    inferred = infer(target, items) if infer_kinds else {}
    # an array written out at --at ([1, 2, 3]) is an array, with or without
    # --infer-kinds: nothing else can be meant
    arrays: dict[str, str] = {}
    for point in items:
        for name, raw in point.items():
            kind = literal_array_kind(raw, name)
            if kind is not None and name not in declared:
                arrays[name] = kind
    kinds = []
    for p in target.params:
        assumed = _annotated_kind(target, p)
        if p in declared or p in arrays or not is_static(assumed):
            kinds.append(declared.get(p) or arrays.get(p) or inferred.get(p) or assumed)
            continue
        # static: the kernel shown (and checked) is the one for its first value
        given = [point[p] for point in items if p in point]
        if given:
            assumed = static_kind_of(static_literal(given[0], p, "--at"))
        kinds.append(assumed)
    return tuple(kinds)


def _annotated_kind(target: Target, name: str) -> str:
    """int64 or bool for a parameter annotated or defaulting so, else float64."""
    try:
        return annotated_dtype(inspect.signature(target.fn).parameters[name])
    except (TypeError, ValueError, KeyError):
        return FLOAT


def parse_point(
    target: Target, text: str, kinds: Sequence[str] | None = None
) -> tuple[Value, ...]:
    """``--at x=1,y=2`` (or ``--at 1,2``) as a tuple of values: floats, or ints
    and bools for the parameters ``kinds`` says are int64 or bool.  A parameter
    left out takes its default value, as in a Python call."""
    params = target.params
    kinds = tuple(kinds) if kinds is not None else (FLOAT,) * len(params)
    raw = point_items(target, text)
    missing = [p for p in params if p not in raw and p not in target.defaults]
    if missing:
        raise click.BadParameter(
            f"no value for {', '.join(missing)} in {text!r}; "
            f"give every parameter, e.g. {_example_point(params, kinds)}",
            param_hint="'--at'",
        )
    return tuple(
        parse_value(raw[p], kind, p, "--at") if p in raw else _default(target, p, kind)
        for p, kind in zip(params, kinds, strict=True)
    )


def _default(target: Target, name: str, kind: str) -> Value:
    """A parameter's default value as a value of its kind (``y=2`` is 2.0 for a
    float64 parameter; a static parameter's as it is), or a usage error when it
    is not one."""
    value = target.defaults[name]
    if is_static(kind):
        return value
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == BOOL:
        fits = isinstance(value, bool)
    elif kind == INT:
        fits = number and float(value).is_integer()
    else:
        fits = kind == FLOAT and number
    if not fits:
        raise click.BadParameter(
            f"no value for {name}, and its default ({value!r}) is not a "
            f"{short(kind)} value; give {name}=... too",
            param_hint="'--at'",
        )
    return bool(value) if kind == BOOL else int(value) if kind == INT else float(value)


_EXAMPLE = {INT: "{k}", BOOL: "true", FLOAT: "{k}.0"}


def _example_point(params: Sequence[str], kinds: Sequence[str]) -> str:
    return ",".join(
        f"{p}={_example_value(kind, k + 1)}"
        for k, (p, kind) in enumerate(zip(params, kinds, strict=True))
    )


def _example_value(kind: str, k: int) -> str:
    if is_static(kind):
        return static_text(kind)
    if is_array(kind):
        import numpy as np

        return str(np.full(array_shape(kind), k).tolist()).replace(" ", "")
    return _EXAMPLE[kind].format(k=k)


def _number(raw: str, option: str, name: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise click.BadParameter(
            f"`{name}={raw.strip()}`: {raw.strip()!r} is not a number",
            param_hint=f"'{option}'",
        ) from None


def parse_domains(
    target: Target,
    texts: Sequence[str],
    default: tuple[float, float],
    kinds: Sequence[str] | None = None,
) -> dict[str, tuple[float, float]]:
    """``--domain x=0.1:2,y=-1:1`` as ``{name: (low, high)}`` for every parameter
    that is not a bool or static (an int64 one needs an integer between LOW and
    HIGH)."""
    kind_of = dict(
        zip(target.params, kinds or (FLOAT,) * len(target.params), strict=True)
    )
    domains = {
        p: default
        for p in target.params
        if kind_of[p] != BOOL and not is_static(kind_of[p])
    }
    for text in texts:
        for item in (part.strip() for part in text.split(",") if part.strip()):
            name, eq, bounds = item.partition("=")
            low, colon, high = bounds.partition(":")
            name = name.strip()
            if not eq or not colon:
                raise click.BadParameter(
                    f"expected NAME=LOW:HIGH, got {item!r}", param_hint="'--domain'"
                )
            if kind_of.get(name) == BOOL:
                raise click.BadParameter(
                    f"`{name}` is a bool: its random values are true and false",
                    param_hint="'--domain'",
                )
            if is_static(kind_of.get(name, FLOAT)):
                raise click.BadParameter(
                    f"`{name}` is static: it keeps its value, "
                    f"{static_text(kind_of[name])}, at every point (set it with "
                    f"--at {name}=...)",
                    param_hint="'--domain'",
                )
            if name not in domains:
                raise click.BadParameter(
                    f"`{name}` is not a parameter of `{target.name}` "
                    f"(it takes {', '.join(target.params)})",
                    param_hint="'--domain'",
                )
            lo, hi = _number(low, "--domain", name), _number(high, "--domain", name)
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise click.BadParameter(
                    f"`{item}`: need finite LOW < HIGH", param_hint="'--domain'"
                )
            if kind_of[name] == INT and math.ceil(lo) > math.floor(hi):
                raise click.BadParameter(
                    f"`{item}`: {name} is int64, but no integer lies in [LOW, HIGH]",
                    param_hint="'--domain'",
                )
            domains[name] = (lo, hi)
    return domains


def format_point(params: Sequence[str], point: Sequence[Value]) -> str:
    return ", ".join(
        f"{p}={format_value(v)}" for p, v in zip(params, point, strict=True)
    )


@contextlib.contextmanager
def users_errors(
    target: Target, kinds: Sequence[str], point: Sequence[Value] | None = None
) -> Iterator[None]:
    """A failure for what the user's function raises while it is traced or
    run, such as its own ``raise ValueError(f"unknown mode {mode!r}")`` that a
    static value reaches (symdiff raises the user's exception, as Python
    would), naming the static values (``point``'s, else those of ``kinds``);
    symdiff's own errors pass through."""
    try:
        yield
    except SymdiffError:
        raise
    except Exception as exc:
        if not (
            isinstance(exc, (ArithmeticError, ValueError, TypeError))
            or raised_by_function(exc)
        ):
            raise
        static = [
            f"{p}={static_text(k) if point is None else format_value(point[i])}"
            for i, (p, k) in enumerate(zip(target.params, kinds, strict=True))
            if is_static(k)
        ]
        where = f" (with {', '.join(static)})" if static else ""
        raise Failure(
            f"{target.label} raised {type(exc).__name__}: {exc}{where}"
        ) from None


def raised_by_function(exc: BaseException) -> bool:
    """Whether the user's function raised ``exc`` (its own ``raise``): while it
    was traced (symdiff marks the exception it raises for it) or in a kernel
    (raised on a line of generated code)."""
    if getattr(exc, "symdiff_raised_by_function", False):
        return True
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_filename.startswith("<symdiff:")


def point_json(value: Any) -> Any:
    """A point's value for ``--json`` (arrays as nested lists; a static object,
    such as a function, by its name)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if value is None or isinstance(value, (str, int, float)):
        return value
    return format_value(value)
