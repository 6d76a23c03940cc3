"""How commands write: plain text, highlighted source, tables and JSON.

Styled text goes through ``click.echo``, which drops the colours when standard
output is not a terminal (or with ``--no-color`` / ``NO_COLOR``), so pipes and
files always get plain text.
"""

from __future__ import annotations

import functools
import io
import json
import keyword
import math
import os
import tokenize
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import click

from symdiff.cli.target import Failure
from symdiff.errors import OutputError, SymdiffError

# -- errors -------------------------------------------------------------------------


def reports_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Turn symdiff's errors into one-message failures (exit 1), and with
    ``--json`` also write every error as ``{"ok": false, "error": ...}``."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            try:
                return command(*args, **kwargs)
            except SymdiffError as exc:
                raise Failure(_for_the_command_line(exc, "points" in kwargs)) from None
        except click.ClickException as exc:
            if kwargs.get("as_json") or kwargs.get("emit") == "json":
                write_json(
                    {
                        "ok": False,
                        "error": exc.format_message(),
                        "exit_code": exc.exit_code,
                    }
                )
            raise

    return run


def _for_the_command_line(exc: SymdiffError, takes_points: bool) -> str:
    """The message, with advice about Python the CLI has a flag or a command
    for (``has_aux``; calling the API for values, where the command takes
    ``--at``) replaced by that."""
    message = str(exc)
    head, sep, advice = message.partition("\n  help: ")
    if isinstance(exc, OutputError) and sep and "has_aux" in advice:
        return f"{head}\n  help: `symdiff jacobian` differentiates every output"
    if (
        takes_points
        and isinstance(exc, OutputError)
        and head.endswith("no single kernel computes it")
    ):
        return (
            f"{head}\n  help: pass --at to compute its values (an array as nested "
            "lists: --at 'x=[1,2,3]'); `symdiff grad` prints the kernel of the "
            "gradient of a function returning one number"
        )
    return message


# -- JSON ---------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    """JSON-safe: tuples as lists, NumPy scalars as numbers, non-finite floats as
    the strings ``"nan"``, ``"inf"``, ``"-inf"`` (JSON has no such numbers)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    number = float(value)
    return number if math.isfinite(number) else str(number)


def write_json(payload: dict[str, Any]) -> None:
    click.echo(json.dumps(_plain(payload), indent=2, allow_nan=False))


def json_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--json",
        "as_json",
        is_flag=True,
        help="Write one JSON object to stdout (errors too), for scripts.",
    )(command)


# -- numbers and tables ---------------------------------------------------------------
def number(value: float) -> str:
    """Full precision, as ``repr`` shows a float."""
    return repr(float(value))


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns separated by two spaces, with a rule under the header."""
    widths = [
        max(len(str(cell)) for cell in column)
        for column in zip(header, *rows, strict=True)
    ]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            f"{c:<{w}}" for c, w in zip(cells, widths, strict=True)
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


# -- highlighting -------------------------------------------------------------------
_STYLES: dict[str, dict[str, Any]] = {
    "keyword": {"fg": "magenta", "bold": True},
    "function": {"fg": "blue", "bold": True},
    "comment": {"fg": "bright_black", "italic": True},
    "number": {"fg": "cyan"},
    "string": {"fg": "green"},
    "module": {"fg": "yellow"},
}


def use_color() -> bool:
    return not os.environ.get("NO_COLOR")


def highlight(source: str) -> str:
    """Python source with ANSI colours (``click.echo`` strips them off a terminal).

    Dependency-free: ``tokenize`` finds the tokens, the text between them is
    copied as it is, so removing the colours gives back ``source`` exactly.
    """
    lines = source.splitlines(keepends=True)
    out: list[str] = []
    row, col = 1, 0
    previous = ""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            out.append(_between(lines, (row, col), tok.start))
            kind = _kind(tok, previous)
            out.append(click.style(tok.string, **_STYLES[kind]) if kind else tok.string)
            row, col = tok.end
            if tok.type not in (tokenize.NL, tokenize.COMMENT):
                previous = tok.string
    except (tokenize.TokenError, SyntaxError):
        return source
    out.append(_between(lines, (row, col), (len(lines) + 1, 0)))
    return "".join(out)


def _kind(tok: tokenize.TokenInfo, previous: str) -> str | None:
    if tok.type == tokenize.COMMENT:
        return "comment"
    if tok.type == tokenize.NUMBER:
        return "number"
    if tok.type == tokenize.STRING:
        return "string"
    if tok.type == tokenize.NAME:
        if previous == "def":
            return "function"
        if keyword.iskeyword(tok.string):
            return "keyword"
        if tok.string in ("math", "np", "numpy", "numba"):
            return "module"
    return None


def _between(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> str:
    (r0, c0), (r1, c1) = start, end
    if (r0, c0) >= (r1, c1):
        return ""
    if r0 == r1:
        return lines[r0 - 1][c0:c1] if r0 <= len(lines) else ""
    parts = [lines[r0 - 1][c0:]] if r0 <= len(lines) else []
    parts += lines[r0 : min(r1 - 1, len(lines))]
    if r1 <= len(lines):
        parts.append(lines[r1 - 1][:c1])
    return "".join(parts)


def echo_source(source: str) -> None:
    text = source.rstrip("\n")
    click.echo(highlight(text) if use_color() else text)


def flat(value: Any) -> Iterator[Any]:
    """The leaves of a nested tuple, left to right (iteratively)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):
            stack.extend(reversed(item))
        else:
            yield item
