"""The printer: one class owns the text of generated code.

An op table maps each op to a template and a precedence; ``parenthesize`` adds
parentheses only where Python needs them, so the output reads like hand-written
code.  Modules used (``math``, ``np``) are recorded while printing and become the
module's imports.  Targets differ only in the wrapper printed around the same body
(DESIGN.md section 8).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from symdiff.ir.node import Node
from symdiff.opt.schedule import Schedule

# Python operator precedence, loosest first.
(
    P_IFEXP,
    P_OR,
    P_AND,
    P_NOT,
    P_CMP,
    P_BITOR,
    P_BITXOR,
    P_BITAND,
    P_SHIFT,
    P_ADD,
    P_MUL,
    P_UNARY,
    P_POW,
    P_ATOM,
) = range(14)

# fmt: off
#: op -> (template, precedence, parenthesise-left-at, parenthesise-right-at).
#: An operand is wrapped when its precedence is below the given threshold.
TEMPLATES: dict[str, tuple[str, int, int, int]] = {
    "float":    ("float({0})",         P_ATOM,  0,        0),
    "int":      ("int({0})",           P_ATOM,  0,        0),
    # Pass-through ops print as their last operand (see ``Printer.definition``).
    "stop_gradient": ("{-1}",          P_ATOM,  0,        0),
    "custom":   ("{-1}",               P_ATOM,  0,        0),
    "add":      ("{0} + {1}",          P_ADD,   P_ADD,    P_ADD + 1),
    "sub":      ("{0} - {1}",          P_ADD,   P_ADD,    P_ADD + 1),
    "mul":      ("{0} * {1}",          P_MUL,   P_MUL,    P_MUL + 1),
    "div":      ("{0} / {1}",          P_MUL,   P_MUL,    P_MUL + 1),
    "floordiv": ("{0} // {1}",         P_MUL,   P_MUL,    P_MUL + 1),
    "mod":      ("{0} % {1}",          P_MUL,   P_MUL,    P_MUL + 1),
    "pow":      ("{0} ** {1}",         P_POW,   P_POW + 1, P_UNARY),
    "neg":      ("-{0}",               P_UNARY, P_UNARY,  0),
    "abs":      ("abs({0})",           P_ATOM,  0,        0),
    "sign":     ("np.sign({0})",       P_ATOM,  0,        0),
    "floor":    ("np.floor({0})",      P_ATOM,  0,        0),
    "ceil":     ("np.ceil({0})",       P_ATOM,  0,        0),
    "max":      ("max({0}, {1})",      P_ATOM,  0,        0),
    "min":      ("min({0}, {1})",      P_ATOM,  0,        0),
    "maximum":  ("np.maximum({0}, {1})", P_ATOM, 0,       0),
    "minimum":  ("np.minimum({0}, {1})", P_ATOM, 0,       0),
    "fmax":     ("np.fmax({0}, {1})",  P_ATOM,  0,        0),
    "fmin":     ("np.fmin({0}, {1})",  P_ATOM,  0,        0),
    "copysign": ("math.copysign({0}, {1})", P_ATOM, 0,    0),
    "exp":      ("math.exp({0})",      P_ATOM,  0,        0),
    "expm1":    ("math.expm1({0})",    P_ATOM,  0,        0),
    "log":      ("math.log({0})",      P_ATOM,  0,        0),
    "log1p":    ("math.log1p({0})",    P_ATOM,  0,        0),
    "log2":     ("math.log2({0})",     P_ATOM,  0,        0),
    "log10":    ("math.log10({0})",    P_ATOM,  0,        0),
    "sqrt":     ("math.sqrt({0})",     P_ATOM,  0,        0),
    "sin":      ("math.sin({0})",      P_ATOM,  0,        0),
    "cos":      ("math.cos({0})",      P_ATOM,  0,        0),
    "tan":      ("math.tan({0})",      P_ATOM,  0,        0),
    "asin":     ("math.asin({0})",     P_ATOM,  0,        0),
    "acos":     ("math.acos({0})",     P_ATOM,  0,        0),
    "atan":     ("math.atan({0})",     P_ATOM,  0,        0),
    "sinh":     ("math.sinh({0})",     P_ATOM,  0,        0),
    "cosh":     ("math.cosh({0})",     P_ATOM,  0,        0),
    "tanh":     ("math.tanh({0})",     P_ATOM,  0,        0),
    "asinh":    ("math.asinh({0})",    P_ATOM,  0,        0),
    "acosh":    ("math.acosh({0})",    P_ATOM,  0,        0),
    "atanh":    ("math.atanh({0})",    P_ATOM,  0,        0),
    "erf":      ("math.erf({0})",      P_ATOM,  0,        0),
    "erfc":     ("math.erfc({0})",     P_ATOM,  0,        0),
    "atan2":    ("math.atan2({0}, {1})", P_ATOM, 0,       0),
    "hypot":    ("math.hypot({0}, {1})", P_ATOM, 0,       0),
    "lgamma":   ("math.lgamma({0})",   P_ATOM,  0,        0),
    "gamma":    ("math.gamma({0})",    P_ATOM,  0,        0),
    "logaddexp": ("np.logaddexp({0}, {1})", P_ATOM, 0,    0),
    # Numba's np.cbrt is libm's cbrt, as Python's math.cbrt
    "cbrt":     ("np.cbrt({0})",       P_ATOM,  0,        0),
    "ldexp":    ("math.ldexp({0}, {1})", P_ATOM, 0,       0),
    "gcd":      ("math.gcd({0}, {1})", P_ATOM,  0,        0),
    "bitand":   ("{0} & {1}",          P_BITAND, P_BITAND, P_BITAND + 1),
    "bitor":    ("{0} | {1}",          P_BITOR, P_BITOR,  P_BITOR + 1),
    "bitxor":   ("{0} ^ {1}",          P_BITXOR, P_BITXOR, P_BITXOR + 1),
    "lshift":   ("{0} << {1}",         P_SHIFT, P_SHIFT,  P_SHIFT + 1),
    "rshift":   ("{0} >> {1}",         P_SHIFT, P_SHIFT,  P_SHIFT + 1),
    "invert":   ("~{0}",               P_UNARY, P_UNARY,  0),
    "sigmoid":  ("1.0 / (1.0 + math.exp(-{0}))", P_MUL, P_UNARY + 1, 0),
    "softplus": ("max({0}, 0.0) + math.log1p(math.exp(-abs({0})))", P_ADD, 0, 0),
    "lt":       ("{0} < {1}",          P_CMP,   P_CMP + 1, P_CMP + 1),
    "le":       ("{0} <= {1}",         P_CMP,   P_CMP + 1, P_CMP + 1),
    "gt":       ("{0} > {1}",          P_CMP,   P_CMP + 1, P_CMP + 1),
    "ge":       ("{0} >= {1}",         P_CMP,   P_CMP + 1, P_CMP + 1),
    "eq":       ("{0} == {1}",         P_CMP,   P_CMP + 1, P_CMP + 1),
    "ne":       ("{0} != {1}",         P_CMP,   P_CMP + 1, P_CMP + 1),
    "and":      ("{0} and {1}",        P_AND,   P_AND,    P_AND + 1),
    "or":       ("{0} or {1}",         P_OR,    P_OR,     P_OR + 1),
    "not":      ("not {0}",            P_NOT,   P_NOT,    0),
    # select(c, a, b) prints as ``a if c else b``: operands in template order.
    "select":   ("{1} if {0} else {2}", P_IFEXP, P_OR,    P_OR),
}
# fmt: on

_MODULES = {"math.": "import math", "np.": "import numpy as np"}

#: The ops whose template calls NumPy, which numba-cuda cannot compile: in a CUDA
#: kernel (symdiff.backend.cuda) each call of ``TEMPLATES[op]``'s function becomes
#: a call of an inner helper that returns what the CPU kernel (Numba's version of
#: the NumPy function) returns: float results, NaN and infinities passed through,
#: a zero with the sign Numba gives it (``np.ceil(-0.5)`` and ``np.sign(-0.0)``
#: are ``-0.0``), the first operand on a tie.  op -> the helper's parameters and
#: body.
CUDA_HELPERS: dict[str, tuple[str, str]] = {
    "sign": ("x", "return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else x)"),
    "floor": (
        "x",
        "return x if not abs(x) < 4503599627370496.0 "
        "else math.copysign(float(math.floor(x)), x)",
    ),
    "ceil": (
        "x",
        "return x if not abs(x) < 4503599627370496.0 "
        "else math.copysign(float(math.ceil(x)), x)",
    ),
    # CUDA's libdevice cbrt (correctly rounded or close; glibc's can differ)
    "cbrt": ("x", "return cuda.cbrt(x)"),
    "maximum": ("a, b", "return a if a != a or a >= b else b"),
    "minimum": ("a, b", "return a if a != a or a <= b else b"),
    "fmax": ("a, b", "return a if b != b or a >= b else b"),
    "fmin": ("a, b", "return a if b != b or a <= b else b"),
    # NaN: the operands' NaN as NumPy passes it on; a == b also catches two
    # equal infinities (their difference is NaN)
    "logaddexp": (
        "a, b",
        "return a - b if a != a or b != b else (a + 0.6931471805599453 if a == b "
        "else max(a, b) + math.log1p(math.exp(-abs(a - b))))",
    ),
}


class Printer:
    """Prints a :class:`Schedule` as the source of one Python function."""

    indent = "    "

    def __init__(self) -> None:
        self.imports: set[str] = set()

    # -- expressions ---------------------------------------------------------------
    def constant(self, value: Any) -> tuple[str, int]:
        if isinstance(value, int) and not -(2**63) <= value < 2**63:
            # beyond int64 (10 ** 20, folded exactly): the nearest float, what it
            # becomes beside a float in Python (Numba has no such int)
            text = repr(float(value))
        elif isinstance(value, bool) or isinstance(value, int):
            text = repr(value)
        elif math.isnan(value):
            self.imports.add(_MODULES["math."])
            return "math.nan", P_ATOM
        elif math.isinf(value):
            self.imports.add(_MODULES["math."])
            text = "math.inf" if value > 0 else "-math.inf"
        else:
            text = repr(value)
        return text, (P_UNARY if text.startswith("-") else P_ATOM)

    def expr(self, node: Node, names: Mapping[Node, str]) -> tuple[str, int]:
        """``node`` as an expression: its name if it has one, else inlined.

        Inlined subtrees hold at most ``MAX_INLINE`` ops (see the scheduler), so
        this recursion is shallow whatever the size of the user's graph.
        """
        if node in names:
            return names[node], P_ATOM
        return self.definition(node, names)

    def definition(self, node: Node, names: Mapping[Node, str]) -> tuple[str, int]:
        """``node``'s own expression (its arguments by name or inlined)."""
        if node.op == "const":
            return self.constant(node.value)
        template, prec, left, right = TEMPLATES[node.op]
        if template == "{-1}":
            return self.expr(node.args[-1], names)
        arg = node.args[0] if node.args else None
        if (
            node.op == "sigmoid"
            and arg is not None
            and arg.op == "neg"
            and arg not in names
        ):
            # s(-y) reads better as 1 / (1 + exp(y)) than with exp(-(-y))
            template, node = "1.0 / (1.0 + math.exp({0}))", arg
        if node.op == "pow" and _negative_int(node.args[1]) and arg.dtype == "float64":
            # Numba's x ** -k raises ZeroDivisionError at x = 0; 1.0 / x ** k is
            # the same computation (x ** k by squaring, then its reciprocal)
            # and gives inf there, as the IEEE semantics promise
            base, base_prec = self.expr(arg, names)
            k = -node.args[1].value
            if base_prec < (P_MUL + 1 if k == 1 else P_POW + 1):
                base = f"({base})"
            return (f"1.0 / {base}" if k == 1 else f"1.0 / {base} ** {k}"), P_MUL
        if (
            node.op == "pow"
            and arg is not None
            and arg.dtype == "float64"
            and node.args[1].dtype == "int64"
            and node.args[1].op != "const"
        ):
            # an int exponent known at run time: Numba's integer power raises
            # ZeroDivisionError for 0.0 ** -n; a float exponent is Python's own
            # x ** n (C's pow) and gives inf there
            base, base_prec = self.expr(arg, names)
            if base_prec < P_POW + 1:
                base = f"({base})"
            return f"{base} ** float({self.expr(node.args[1], names)[0]})", P_POW
        parts = []
        for i, arg in enumerate(node.args):
            text, arg_prec = self.expr(arg, names)
            threshold = left if (i == 0 or node.op == "select") else right
            if node.op == "select" and i == 0:
                threshold = P_OR
            if arg_prec < threshold:
                text = f"({text})"
            parts.append(text)
        for prefix, line in _MODULES.items():
            if prefix in template:
                self.imports.add(line)
        return template.format(*parts), prec

    def text(self, node: Node, names: Mapping[Node, str]) -> str:
        return self.expr(node, names)[0]

    # -- a whole function ------------------------------------------------------------
    def structure(self, value: Any, names: Mapping[Node, str]) -> str:
        """A (nested) tuple of nodes as a return expression."""
        if isinstance(value, Node):
            return self.text(value, names)
        items = [self.structure(v, names) for v in value]
        if len(items) == 1:
            return f"({items[0]},)"
        return "(" + ", ".join(items) + ")"

    def function(
        self,
        name: str,
        sched: Schedule,
        returns: Any,
        header: Sequence[str] = (),
        sections: Mapping[int, str] | None = None,
        raises: Sequence[Any] = (),
    ) -> str:
        """The module source: header comments, imports, then ``def name(...)``.

        ``sections`` maps a statement index to a comment printed before it
        (``# backward``); ``raises`` are the user's ``raise`` statements that
        depend on values (``frontend.values.Raise``), tested before returning.
        """
        sections = sections or {}
        params = ", ".join(sched.names[p] for p in sched.params)
        body = []
        for i, (target, node) in enumerate(sched.statements):
            if i in sections:
                body.append(f"{self.indent}# {sections[i]}")
            text = self.definition(node, sched.names)[0]
            body.append(f"{self.indent}{target} = {text}")
        body += self.raise_lines(raises, sched.names)
        if isinstance(returns, tuple) and len(returns) > 1:
            # `return a, b` rather than `return (a, b)`
            ret = ", ".join(self.structure(v, sched.names) for v in returns)
        else:
            ret = self.structure(returns, sched.names)
        body.append(f"{self.indent}return {ret}")
        lines = [f"# {h}" for h in header]
        lines += sorted(self.imports)
        lines += ["", "", f"def {name}({params}):", *body]
        return "\n".join(lines) + "\n"

    def raise_lines(
        self, raises: Sequence[Any], names: Mapping[Node, str]
    ) -> list[str]:
        """``if cond: raise ValueError(...)`` for each of the user's ``raise``
        statements that depend on values."""
        lines = []
        for r in raises:
            cond, _ = self.expr(r.cond, names)
            lines.append(f"{self.indent}if {cond}:")
            lines.append(f"{self.indent * 2}raise {r.exception}({r.message!r})")
        return lines


def _negative_int(node: Node) -> bool:
    """Whether ``node`` is an int constant below 0 (an exponent)."""
    value = node.value if node.op == "const" else None
    return isinstance(value, int) and not isinstance(value, bool) and value < 0
