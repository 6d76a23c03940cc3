"""Argument kinds: ``--arg n=i64,flag=bool`` and ``--infer-kinds``.

symdiff builds one kernel per argument signature.  On the command line every
parameter is a float64 unless ``--arg NAME=KIND`` says otherwise (``f64``,
``i64`` or ``bool``; ``float64``, ``float``, ``int64`` and ``int`` are accepted
too), or ``--infer-kinds`` reads it off the ``--at`` values: an integer literal
(no dot, no exponent) is an int64, ``true``/``false`` a bool.  Inference is off by
default because ``--at x=2`` usually means 2.0.

As in the Python API, a differentiated int64 parameter is a real number to the
kernel (float64); int64 and bool parameters that are not differentiated stay as
they are (an exponent, a branch condition).  ``f64[3,4]`` is an array of that
shape: the kernel is the one for its rank (and its axes of length 1), so the shape
only has to be representative.

A parameter whose default is a string or None (``mode="sq"``, ``w=None``) is
static, as in the Python API: it configures the function, the kernel is
specialised to its value, and it is neither differentiated nor drawn by
``check``.  Its kind is ``static:`` and the Python literal of that value (the
library's own kind for a string or None); its ``--at`` values are Python
literals (``mode=lin`` is the string ``'lin'``).

This module knows nothing of :class:`~symdiff.cli.target.Target` beyond its
``name`` and ``params``, so that ``target`` can import it.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from symdiff.frontend.values import STATIC, static_value

if TYPE_CHECKING:
    from symdiff.cli.target import Target
    from symdiff.compiled import Compiled
    from symdiff.kernel import Kernel

FLOAT, INT, BOOL = "float64", "int64", "bool"
#: Every spelling ``--arg`` accepts, and the kind it means.
SPELLINGS = {
    "f64": FLOAT,
    "float64": FLOAT,
    "float": FLOAT,
    "i64": INT,
    "int64": INT,
    "int": INT,
    "bool": BOOL,
}
VALID = "f64 (or float64, float), i64 (or int64, int) and bool"
#: Numba's names, for the explicit signatures of a compiled module.
NUMBA_TYPES = {FLOAT: "float64", INT: "int64", BOOL: "boolean"}
SHORT = {FLOAT: "f64", INT: "i64", BOOL: "bool"}
#: A value of each kind, to ask the API which kernel a call would use.
_SAMPLES: dict[str, Any] = {FLOAT: 1.0, INT: 1, BOOL: True}
_INT_LITERAL = re.compile(r"[+-]?[0-9]+\Z")
_BOOL_LITERALS = {"true": True, "false": False}

ARG_HINT = "'--arg'"

arg_option = click.option(
    "--arg",
    "arg_kinds",
    metavar="NAME=KIND",
    multiple=True,
    help="A parameter's kind: f64 (the default), i64 or bool, e.g. --arg n=i64, "
    "or an array: --arg X=f64[256,784] (repeatable).  The kernel is the one for "
    "that signature (an array's rank, not its size).",
)
infer_option = click.option(
    "--infer-kinds",
    "infer_kinds",
    is_flag=True,
    help="Take kinds not given by --arg from the --at values: integer literals "
    "(no dot, no exponent) are i64, true/false bool.  Off by default, as "
    "x=2 usually means 2.0.",
)


def split_items(text: str) -> list[str]:
    """``a=1,b=f64[3,4]`` as ``["a=1", "b=f64[3,4]"]``: commas inside brackets
    belong to a shape, and commas inside quotes to a string (``mode='a,b'``).
    Empty items are kept (as ``""``) for the caller to report."""
    items, depth, start = [], 0, 0
    quote = ""
    for k, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[(":
            depth += 1
        elif char in "])":
            depth = max(depth - 1, 0)
        elif char == "," and depth == 0:
            items.append(text[start:k].strip())
            start = k + 1
    items.append(text[start:].strip())
    return items


def parse_kinds(target: Target, texts: Sequence[str]) -> dict[str, str]:
    """``--arg n=i64,flag=bool`` (repeatable) as ``{"n": "int64", "flag": "bool"}``."""
    params = target.params
    kinds: dict[str, str] = {}
    for text in texts:
        items = [item for item in split_items(text) if item]  # a trailing comma
        if not items:
            raise click.BadParameter(
                f"expected NAME=KIND, got {text!r}; KIND is {VALID}",
                param_hint=ARG_HINT,
            )
        for item in items:
            name, eq, spelled = (part.strip() for part in item.partition("="))
            if not eq or not name:
                raise click.BadParameter(
                    f"expected NAME=KIND, got {item!r}; KIND is {VALID}",
                    param_hint=ARG_HINT,
                )
            if name not in params:
                raise click.BadParameter(
                    f"`{name}` is not a parameter of `{target.name}` "
                    f"(it takes {', '.join(params)}){_close(name, params)}",
                    param_hint=ARG_HINT,
                )
            if name in kinds:
                raise click.BadParameter(
                    f"`{name}` is given twice", param_hint=ARG_HINT
                )
            kinds[name] = _kind(name, spelled)
    return kinds


_ARRAY = re.compile(r"\s*(\w+)\s*\[([^\]]*)\]\s*\Z")


def _kind(name: str, spelled: str) -> str:
    if "[" in spelled or "]" in spelled:
        match = _ARRAY.match(spelled)
        dims = match.group(2).split(",") if match else []
        if not match or not all(d.strip().isdigit() and int(d) > 0 for d in dims):
            raise click.BadParameter(
                f"`{name}={spelled}`: an array kind is KIND[LENGTHS] with positive "
                "integer lengths, e.g. f64[3,4]",
                param_hint=ARG_HINT,
            )
        base = _kind(name, match.group(1))
        return f"{base}[{','.join(str(int(d)) for d in dims)}]"
    kind = SPELLINGS.get(spelled.lower())
    if kind is None:
        what = f"unknown kind {spelled!r}" if spelled else "no kind given"
        close = difflib.get_close_matches(spelled.lower(), SPELLINGS, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise click.BadParameter(
            f"`{name}={spelled}`: {what}; the kinds are {VALID}{hint}",
            param_hint=ARG_HINT,
        )
    return kind


def _close(name: str, params: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, params, n=1)
    return f"; did you mean `{close[0]}`?" if close else ""


# -- values -------------------------------------------------------------------------
def array_literal(raw: str, name: str, option: str) -> Any:
    """``[1, 2, 3]`` or ``[[1, 2], [3, 4]]`` as a float64 array."""
    import ast

    import numpy as np

    try:
        value = np.array(ast.literal_eval(raw.strip()), dtype=np.float64)
    except (ValueError, SyntaxError, TypeError):
        raise click.BadParameter(
            f"`{name}={raw.strip()}`: not an array of numbers (write nested lists, "
            "e.g. [[1, 2], [3, 4]])",
            param_hint=f"'{option}'",
        ) from None
    if value.ndim == 0 or value.size == 0:
        raise click.BadParameter(
            f"`{name}={raw.strip()}`: an array needs at least one element",
            param_hint=f"'{option}'",
        )
    return value


def literal_array_kind(raw: str, name: str) -> str | None:
    """The array kind of a bracketed ``--at`` value (``f64[2,2]``), else None."""
    if not raw.strip().startswith("["):
        return None
    shape = array_literal(raw, name, "--at").shape
    return f"{FLOAT}[{','.join(map(str, shape))}]"


#: What a static parameter's ``--at`` value may be: the values of Python
#: literals that configure a function (not containers: those are data).
_STATIC_TYPES = (str, bool, int, float, type(None))


def static_literal(raw: str, name: str, option: str) -> Any:
    """A static parameter's ``--at`` value: a Python literal (``'lin'``, ``None``,
    ``True``, ``2.5``; ``true`` and ``false`` too, as for bools), else the text
    as written, a string (``mode=lin``)."""
    text = raw.strip()
    if text.lower() in _BOOL_LITERALS:
        return _BOOL_LITERALS[text.lower()]
    if not text:
        raise click.BadParameter(
            f"`{name}=`: no value given (an empty string is {name}='')",
            param_hint=f"'{option}'",
        )
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        if text[0] in "'\"":
            raise click.BadParameter(
                f"`{name}={text}`: not a string literal (is a quote missing?)",
                param_hint=f"'{option}'",
            ) from None
        return text  # a bare word: the string as written
    if not isinstance(value, _STATIC_TYPES):
        raise click.BadParameter(
            f"`{name}={text}`: {name} is static (its default is a string or "
            "None): its value is a string, None, true/false or a number, not a "
            f"{type(value).__name__}",
            param_hint=f"'{option}'",
        )
    return value


def static_kind_of(value: Any) -> str:
    """The kind of a static parameter given ``value``: ``static:'lin'``."""
    return STATIC + repr(value)


def literal_kind(raw: str) -> str:
    """What ``--infer-kinds`` makes of one ``--at`` value."""
    text = raw.strip()
    if text.lower() in _BOOL_LITERALS:
        return BOOL
    if _INT_LITERAL.match(text):
        return INT
    return FLOAT


def infer(target: Target, points: Sequence[Mapping[str, str]]) -> dict[str, str]:
    """The kind of each parameter from its ``--at`` values at every point: int64
    if all are integer literals, bool if all are true/false, else float64 (an
    integer literal is a float too).  Bools mixed with numbers are an error."""
    kinds: dict[str, str] = {}
    for name in target.params:
        seen = {literal_kind(point[name]) for point in points if name in point}
        if BOOL in seen and len(seen) > 1:
            values = ", ".join(sorted({point[name] for point in points}))
            raise click.BadParameter(
                f"`{name}` is true/false at one point and a number at another "
                f"({values}); give it one kind, e.g. --arg {name}=bool",
                param_hint="'--at'",
            )
        if seen:
            kinds[name] = seen.pop() if len(seen) == 1 else FLOAT
    return kinds


def parse_value(raw: str, kind: str, name: str, option: str) -> Any:
    """One ``--at`` value as a Python float, int or bool, by the parameter's kind
    (a Python literal for a static parameter)."""
    text = raw.strip()
    if is_static(kind):
        return static_literal(text, name, option)
    if is_array(kind):
        value = array_literal(text, name, option)
        # kernels are per dimension (the lengths only say which axes are 1),
        # and a call picks its own: points may have arrays of other lengths
        if value.ndim != len(array_shape(kind)):
            raise click.BadParameter(
                f"`{name}={text}` has shape {value.shape}, but `{name}` is "
                f"{short(kind)} (from --arg or an --at value): give "
                f"arrays of {len(array_shape(kind))} dimension(s)",
                param_hint=f"'{option}'",
            )
        return value  # type: ignore[no-any-return]
    if kind == INT:
        if _INT_LITERAL.match(text):
            return int(text)
        raise click.BadParameter(
            f"`{name}={text}`: {name} is int64; expected an integer such as 3",
            param_hint=f"'{option}'",
        )
    if kind == BOOL:
        if text.lower() in _BOOL_LITERALS:
            return _BOOL_LITERALS[text.lower()]
        raise click.BadParameter(
            f"`{name}={text}`: {name} is a bool; expected true or false",
            param_hint=f"'{option}'",
        )
    try:
        return float(text)
    except ValueError:
        hint = ""
        if text.lower() in _BOOL_LITERALS:
            hint = f" ({name} is float64: pass --arg {name}=bool or --infer-kinds)"
        raise click.BadParameter(
            f"`{name}={text}`: {text!r} is not a number{hint}",
            param_hint=f"'{option}'",
        ) from None


def format_value(value: Any) -> str:
    if hasattr(value, "shape") and getattr(value, "ndim", 0):
        import numpy as np

        text = np.array2string(
            value,
            precision=3,
            separator=",",
            threshold=4,
            edgeitems=1,
            max_line_width=10**6,
        )
        return text.replace(" ", "").replace("\n", "")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.6g}"
    if value is None or isinstance(value, str):
        return repr(value)
    return str(getattr(value, "__name__", None) or repr(value))  # a static object


# -- kernels ------------------------------------------------------------------------
def is_static(kind: str) -> bool:
    """A static parameter's kind (``static:'sq'``): the kernel is specialised to
    the value, which is a constant to it."""
    return kind.startswith(STATIC)


def static_text(kind: str) -> str:
    """A static kind's value as the kernel's header shows it: ``'sq'``, ``None``;
    an object (a default ``act=np.tanh``) by its name."""
    return format_value(static_value(kind))


def is_array(kind: str) -> bool:
    # a static string may hold brackets (``static:'a[1]'``)
    return "[" in kind and not is_static(kind)


def base_kind(kind: str) -> str:
    """The element kind: ``float64`` of ``float64[3,4]`` (of ``float64`` too)."""
    return kind if is_static(kind) else kind.split("[")[0]


def array_shape(kind: str) -> tuple[int, ...]:
    return tuple(int(d) for d in kind[kind.index("[") + 1 : -1].split(","))


def sample(kind: str) -> Any:
    """A value of a kind (an array of ones for an array kind, the value itself
    for a static kind)."""
    if is_static(kind):
        return static_value(kind)
    if is_array(kind):
        import numpy as np

        base = base_kind(kind)
        dtype = {FLOAT: np.float64, INT: np.int64, BOOL: np.bool_}[base]
        return np.ones(array_shape(kind), dtype=dtype)
    return _SAMPLES[kind]


def short(kind: str) -> str:
    """``f64``, ``i64[3]``: a kind as ``--arg`` spells it (``static 'sq'`` for a
    static one)."""
    if is_static(kind):
        return f"static {static_text(kind)}"
    if is_array(kind):
        return SHORT[base_kind(kind)] + kind[kind.index("[") :]
    return SHORT[kind]


def numba_type(dtype: str, contiguous: bool = True) -> str:
    """A kernel dtype (``float64``, ``float64[:,1]``) as a Numba signature type:
    for an array, C-contiguous (``float64[:, ::1]``, what NumPy makes and BLAS
    wants) or, with ``contiguous=False``, of any layout (``float64[:, :]``)."""
    if is_array(dtype):
        base = base_kind(dtype)
        rank = dtype.count(",") + 1
        last = "::1" if contiguous else ":"
        return f"{NUMBA_TYPES[base]}[{', '.join([':'] * (rank - 1) + [last])}]"
    return NUMBA_TYPES[dtype]


def is_typed(kinds: Iterable[str]) -> bool:
    """Some parameter is not a float64 (the default signature); a static one
    does not count, as the kernel's header says what it is specialised to."""
    return any(kind != FLOAT and not is_static(kind) for kind in kinds)


def kernel_dtypes(compiled: Compiled, kinds: Sequence[str]) -> tuple[str, ...]:
    """The signature of the kernel a call with arguments of these kinds runs:
    the API's own rule (differentiated ints are float64 to the kernel)."""
    from symdiff.api import BoundCompiled

    if isinstance(compiled, BoundCompiled):
        # a functools.partial, a bound method, a callable object: the dtypes of
        # the parameters its call takes (not the bound ones)
        full = all_dtypes(compiled, kinds)
        names = list(compiled._compiled._signature.parameters)
        by_name = dict(zip(names, full, strict=True))
        own = inspect.signature(compiled._original).parameters
        return tuple(by_name[n] for n in own if n in by_name)
    return all_dtypes(compiled, kinds)


def all_dtypes(compiled: Any, kinds: Sequence[str]) -> tuple[str, ...]:
    """The kernel's dtypes, of every parameter of the function it compiles."""
    from symdiff.api import BoundCompiled

    values = tuple(sample(kind) for kind in kinds)
    kwargs: dict[str, Any] = {}
    if isinstance(compiled, BoundCompiled):
        values = (*compiled._args, *values)  # the bound arguments first
        kwargs = dict(compiled._kwargs)
        compiled = compiled._compiled
    # keyword-only parameters take their defaults (target.py requires them)
    return compiled._dtypes(compiled._bind(values, kwargs))[0]


def select_kernel(compiled: Compiled, kinds: Sequence[str]) -> Kernel:
    """Build (or reuse) that kernel; it becomes ``compiled.kernel`` too, so that
    ``source``, ``ir``, ``latex()`` and ``to_sympy()`` describe it."""
    return compiled._kernel(all_dtypes(compiled, kinds))


def signature_text(params: Sequence[str], dtypes: Sequence[str]) -> str:
    """``x: float64, n: int64, mode = 'sq'`` (a static parameter by its value)."""
    return ", ".join(
        f"{p} = {static_text(d)}" if is_static(d) else f"{p}: {d}"
        for p, d in zip(params, dtypes, strict=True)
    )


def with_signature(source: str, params: Sequence[str], dtypes: Sequence[str]) -> str:
    """The kernel's source with a ``# signature: (...)`` line after its header
    comments (the ``def`` line does not say which parameter is an int)."""
    lines = source.splitlines(keepends=True)
    end = 0
    while end < len(lines) and lines[end].startswith("#"):
        end += 1
    line = f"# signature: ({signature_text(params, dtypes)})\n"
    return "".join([*lines[:end], line, *lines[end:]])


def describe(params: Sequence[str], kinds: Sequence[str]) -> dict[str, str]:
    return dict(zip(params, kinds, strict=True))


def kinds_flag(params: Sequence[str], kinds: Sequence[str]) -> str | None:
    """``n=i64,flag=bool`` for the parameters that are not float64 (for a
    ``Regenerate with`` line), or None."""
    named = [
        f"{p}={short(k)}"
        for p, k in zip(params, kinds, strict=True)
        if k != FLOAT and not is_static(k)
    ]
    return ",".join(named) or None
