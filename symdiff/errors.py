"""Errors that users read.

Every exception symdiff raises on purpose derives from :class:`SymdiffError`.  Errors
about the user's source carry :class:`Diagnostic` records: what is wrong, where
(``file:line:col``), the line with a caret under the construct, and what to write
instead.  All problems found in one function are reported together.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class SymdiffError(Exception):
    """Base class of every error symdiff raises on purpose."""


class SymdiffWarning(UserWarning):
    """Something symdiff did differently from Python, on purpose: a ``print``
    skipped in a compiled kernel, say.  The message names the line."""


@dataclass(frozen=True)
class Diagnostic:
    """One problem in the user's source.

    Attributes
    ----------
    message : str
        What is wrong, e.g. ``"`while` loops are not supported"``.
    filename, line, col : str, int, int
        Where; ``line`` is 1-based, ``col`` 1-based (as editors show it).
    source_line : str
        The text of that line, shown with a caret.
    width : int
        How many columns the caret underlines.
    hint : str
        What to write instead.
    notes : tuple of str
        Extra context, such as the call chain that inlined a helper.
    """

    message: str
    filename: str
    line: int
    col: int
    source_line: str = ""
    width: int = 1
    hint: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def location(self) -> str:
        return f"{self.filename}:{self.line}:{self.col}"

    def render(self) -> str:
        parts = [f"{self.location}: {self.message}"]
        if self.source_line:
            text = self.source_line.rstrip("\n")
            stripped = text.lstrip()
            indent = len(text) - len(stripped)
            caret_col = max(self.col - 1 - indent, 0)
            width = max(1, min(self.width, len(stripped) - caret_col))
            parts.append("    " + stripped)
            parts.append("    " + " " * caret_col + "^" + "~" * (width - 1))
        if self.hint:
            parts.append(f"  help: {self.hint}")
        parts.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(parts)


class TranslationError(SymdiffError):
    """The function uses constructs symdiff cannot translate.

    ``diagnostics`` lists every problem found, in source order.
    """

    def __init__(self, function: str, diagnostics: list[Diagnostic]):
        self.function = function
        self.diagnostics = list(diagnostics)
        super().__init__(self._render())

    def _render(self) -> str:
        n = len(self.diagnostics)
        head = (
            f"cannot translate `{self.function}`: "
            f"{n} problem{'s' if n != 1 else ''} found"
        )
        return head + "\n\n" + "\n\n".join(d.render() for d in self.diagnostics)


class SourceUnavailableError(SymdiffError):
    """The function's source text cannot be read (builtins, REPL definitions)."""


class ArgumentError(SymdiffError, TypeError):
    """Arguments of the wrong number or type, or a bad ``argnums``."""


class OutputError(SymdiffError, TypeError):
    """The function's output does not suit the transform (e.g. ``grad`` of a tuple)."""


class ShapeError(SymdiffError, ValueError):
    """Arguments whose shapes do not fit the function (NumPy would reject them).

    The message names the user's line, the operation and the lengths that differ.
    """


#: The generated kernels say this (a plain ValueError, so that a kernel saved by
#: ``symdiff compile`` needs nothing from symdiff); calls turn it into ShapeError.
SHAPE_MARK = " (got "
