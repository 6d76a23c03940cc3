"""The bridge to SymPy: IR nodes as SymPy expressions (for people and for tests)."""

from __future__ import annotations

import keyword
from collections.abc import Callable
from typing import Any

import sympy
from sympy.logic.boolalg import Boolean
from sympy.utilities.iterables import iterable

from symdiff.errors import ArgumentError, OutputError
from symdiff.ir.node import Node, topological
from symdiff.ir.ops import CONTROL_OPS


def _num(value: Any) -> sympy.Expr:
    if isinstance(value, bool):
        return sympy.true if value else sympy.false
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return sympy.Integer(int(value))
    if value == 0.5:
        return sympy.Rational(1, 2)
    return sympy.Float(value)


def _copysign(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    return sympy.Abs(a) * sympy.sign(b)


# fmt: off
#: op -> SymPy builder.
SYMPY: dict[str, Callable[..., Any]] = {
    "float":    lambda a: a,
    "int":      lambda a: sympy.sign(a) * sympy.floor(sympy.Abs(a)),
    "stop_gradient": lambda a: a,
    "custom":   lambda *a: a[-1],
    "add":      lambda a, b: a + b,
    "sub":      lambda a, b: a - b,
    "mul":      lambda a, b: a * b,
    "div":      lambda a, b: a / b,
    "floordiv": lambda a, b: sympy.floor(a / b),
    "mod":      lambda a, b: a - b * sympy.floor(a / b),
    "pow":      lambda a, b: a ** b,
    "neg":      lambda a: -a,
    "abs":      sympy.Abs,
    "sign":     sympy.sign,
    "floor":    sympy.floor,
    "ceil":     sympy.ceiling,
    "max":      sympy.Max,
    "min":      sympy.Min,
    "maximum":  sympy.Max,
    "minimum":  sympy.Min,
    "fmax":     sympy.Max,
    "fmin":     sympy.Min,
    "copysign": _copysign,
    "exp":      sympy.exp,
    "expm1":    lambda a: sympy.exp(a) - 1,
    "log":      sympy.log,
    "log1p":    lambda a: sympy.log(1 + a),
    "log2":     lambda a: sympy.log(a, 2),
    "log10":    lambda a: sympy.log(a, 10),
    "sqrt":     sympy.sqrt,
    "sin":      sympy.sin,
    "cos":      sympy.cos,
    "tan":      sympy.tan,
    "asin":     sympy.asin,
    "acos":     sympy.acos,
    "atan":     sympy.atan,
    "sinh":     sympy.sinh,
    "cosh":     sympy.cosh,
    "tanh":     sympy.tanh,
    "asinh":    sympy.asinh,
    "acosh":    sympy.acosh,
    "atanh":    sympy.atanh,
    "erf":      sympy.erf,
    "erfc":     sympy.erfc,
    "atan2":    sympy.atan2,
    "hypot":    lambda a, b: sympy.sqrt(a**2 + b**2),
    "lgamma":   sympy.loggamma,
    "gamma":    sympy.gamma,
    "logaddexp": lambda a, b: sympy.log(sympy.exp(a) + sympy.exp(b)),
    "cbrt":     lambda a: sympy.sign(a) * sympy.Abs(a) ** sympy.Rational(1, 3),
    "ldexp":    lambda a, b: a * 2**b,
    # integer functions SymPy has no symbolic form for: shown as calls
    "gcd":      sympy.Function("gcd"),
    "bitand":   sympy.Function("bitand"),
    "bitor":    sympy.Function("bitor"),
    "bitxor":   sympy.Function("bitxor"),
    "lshift":   lambda a, b: a * 2**b,
    "rshift":   lambda a, b: sympy.floor(a / 2**b),
    "invert":   lambda a: -a - 1,
    "sigmoid":  lambda a: 1 / (1 + sympy.exp(-a)),
    "softplus": lambda a: sympy.log(1 + sympy.exp(a)),
    "lt":       sympy.Lt,
    "le":       sympy.Le,
    "gt":       sympy.Gt,
    "ge":       sympy.Ge,
    "eq":       sympy.Eq,
    "ne":       sympy.Ne,
    "and":      sympy.And,
    "or":       sympy.Or,
    "not":      sympy.Not,
    "select":   lambda c, a, b: sympy.Piecewise((a, c), (b, True)),
}
# fmt: on


def symbol(node: Node) -> sympy.Symbol:
    """The SymPy symbol of a ``param`` node (real-valued)."""
    return sympy.Symbol(node.attrs[1], real=True)


def to_sympy(value: Any) -> Any:
    """Translate a node, or a (nested) tuple/list of nodes, to SymPy.

    The walk is iterative.  Shared subexpressions become repeated subtrees, so a
    deep DAG can give a large expression: this is for display and testing.
    """
    roots: list[Node] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Node):
            roots.append(item)
        elif isinstance(item, (tuple, list)):
            stack.extend(item)
    memo: dict[Node, Any] = {}
    order = topological(roots)
    if any(n.op in CONTROL_OPS or n.op == "var" for n in order):
        # said first: a loop's tape (arrays) comes before the loop in the order
        raise OutputError(
            "this kernel runs a loop, which has no closed form as formulas\n"
            "  help: read the generated code (.source, --emit source) or the "
            "graph (.ir, --emit ir)"
        )
    for node in order:
        if node.op == "const":
            memo[node] = _num(node.value)
        elif node.op == "param":
            memo[node] = symbol(node)
        elif node.op not in SYMPY:
            raise OutputError(
                f"`{node.op}` works on whole arrays and has no SymPy form yet, so "
                "this kernel cannot be shown as formulas\n"
                "  help: read the generated code (.source, --emit source) or the "
                "graph (.ir, --emit ir)"
            )
        else:
            memo[node] = SYMPY[node.op](*(memo[a] for a in node.args))

    def rebuild(item: Any) -> Any:
        if isinstance(item, Node):
            return memo[item]
        return type(item)(rebuild(v) for v in item)

    return rebuild(value)


# -- SymPy expressions as input ------------------------------------------------------
_FROM_SYMPY_UNARY: dict[Any, str] = {
    sympy.exp: "exp",
    sympy.log: "log",
    sympy.sin: "sin",
    sympy.cos: "cos",
    sympy.tan: "tan",
    sympy.asin: "asin",
    sympy.acos: "acos",
    sympy.atan: "atan",
    sympy.sinh: "sinh",
    sympy.cosh: "cosh",
    sympy.tanh: "tanh",
    sympy.asinh: "asinh",
    sympy.acosh: "acosh",
    sympy.atanh: "atanh",
    sympy.erf: "erf",
    sympy.erfc: "erfc",
    sympy.loggamma: "lgamma",
    sympy.gamma: "gamma",
    sympy.Abs: "abs",
    sympy.sign: "sign",
    sympy.floor: "floor",
    sympy.ceiling: "ceil",
}
_FROM_SYMPY_COMPARE: dict[Any, str] = {
    sympy.StrictLessThan: "lt",
    sympy.LessThan: "le",
    sympy.StrictGreaterThan: "gt",
    sympy.GreaterThan: "ge",
    sympy.Equality: "eq",
    sympy.Unequality: "ne",
}


def _from_sympy_node(e: Any, args: list[Node]) -> Node:
    from symdiff.ir import build as B

    if isinstance(e, sympy.Add):
        return _fold(B.add, args)
    if isinstance(e, sympy.Mul):
        return _fold(B.mul, args)
    if isinstance(e, sympy.Pow):
        base, expo = args
        if e.exp == sympy.Rational(1, 2):
            return B.apply("sqrt", base)
        if e.exp == -1:
            return B.div(B.ONE, base)
        return B.pow_(base, expo)
    if isinstance(e, sympy.Max):
        return _fold(lambda a, b: B.apply("max", a, b), args)
    if isinstance(e, sympy.Min):
        return _fold(lambda a, b: B.apply("min", a, b), args)
    if isinstance(e, sympy.atan2):
        return B.apply("atan2", *args)
    if isinstance(e, sympy.And):
        return _fold(B.logical_and, args)
    if isinstance(e, sympy.Or):
        return _fold(B.logical_or, args)
    if isinstance(e, sympy.Not):
        return B.logical_not(args[0])
    if isinstance(e, sympy.Piecewise):
        result = args[-2]  # the last piece's value: its condition is the fallback
        for k in range(len(args) - 4, -1, -2):
            result = B.select(args[k + 1], args[k], result)
        return result
    for kind, op in _FROM_SYMPY_COMPARE.items():
        if isinstance(e, kind):
            return B.apply(op, *args)
    for fn, op in _FROM_SYMPY_UNARY.items():
        if e.func == fn:
            return B.apply(op, *args)
    raise _unsupported(e)


#: The SymPy classes translated by :func:`_from_sympy_node`, besides
#: ``_FROM_SYMPY_UNARY``'s functions.
_FROM_SYMPY_KINDS = (
    sympy.Add,
    sympy.Mul,
    sympy.Pow,
    sympy.Max,
    sympy.Min,
    sympy.atan2,
    sympy.And,
    sympy.Or,
    sympy.Not,
    sympy.Piecewise,
    *_FROM_SYMPY_COMPARE,
)


def _supported(e: Any) -> bool:
    return isinstance(e, _FROM_SYMPY_KINDS) or e.func in _FROM_SYMPY_UNARY


def _unsupported(e: Any) -> ArgumentError:
    if isinstance(e, (sympy.Derivative, sympy.Integral)):
        help_ = "evaluate it first: expr.doit()"
    else:
        help_ = (
            "rewrite it with elementary functions (exp, log, sin, sqrt, ...), "
            "Piecewise, Max/Min, or pass a function written in Python to symdiff.grad"
        )
    return ArgumentError(
        f"from_sympy: `{e.func.__name__}` is not supported ({e})\n  help: {help_}"
    )


def _fold(fn: Callable[[Node, Node], Node], args: list[Node]) -> Node:
    result = args[0]
    for arg in args[1:]:
        result = fn(result, arg)
    return result


def _children(e: Any) -> tuple[Any, ...]:
    if isinstance(e, sympy.Piecewise):
        return tuple(x for pair in e.args for x in pair)
    return tuple(e.args)


def _symbols(symbols: Any, exprs: list[Any]) -> tuple[Any, ...]:
    """``symbols`` as a tuple of SymPy objects, checked: a name (a string) is the
    expression's symbol of that name, else a new ``sympy.Symbol``."""
    if isinstance(symbols, str) and symbols.strip():
        symbols = sympy.symbols(symbols, seq=True)
    elif isinstance(symbols, sympy.Basic) and not iterable(symbols):
        symbols = (symbols,)
    if isinstance(symbols, (set, frozenset, dict)) or not iterable(symbols):
        raise ArgumentError(
            "from_sympy: symbols must be the arguments in order, a list or tuple of "
            f"sympy.Symbol; got {_a(symbols)}\n{_EXAMPLE}"
        )
    by_name: dict[str, Any] = {}
    for e in exprs:
        by_name.update((str(s), s) for s in e.free_symbols)
    out = []
    for i, s in enumerate(symbols):
        if isinstance(s, str):
            s = by_name.get(s, sympy.Symbol(s))
        if not isinstance(s, sympy.Basic) or s.is_number or not s.free_symbols:
            raise ArgumentError(
                f"from_sympy: symbols must be sympy.Symbol; entry {i} is {_a(s)}\n"
                + _EXAMPLE
            )
        if s in out:
            raise ArgumentError(
                f"from_sympy: symbol `{s}` appears more than once in symbols\n"
                "  help: list each argument once"
            )
        out.append(s)
    return tuple(out)


def _a(value: Any) -> str:
    """``value`` for a message: ``None``, or its type and repr."""
    if value is None:
        return "None"
    kind = type(value).__name__
    return f"{'an' if kind[0] in 'aeiou' else 'a'} `{kind}` ({value!r})"


def _expressions(expr: Any, names: dict[str, Any]) -> Any:
    """``expr`` as SymPy expressions: a (nested) list or tuple becomes nested
    tuples (several outputs), a Matrix the tuple of its entries row by row, a
    string is parsed (``names`` gives its symbols)."""
    if isinstance(expr, sympy.MatrixBase):
        return tuple(_expressions(e, names) for e in expr)
    if isinstance(expr, (list, tuple)):
        return tuple(_expressions(e, names) for e in expr)
    if isinstance(expr, str):
        try:
            value = sympy.sympify(expr, locals=names)
        except (sympy.SympifyError, SyntaxError, TypeError, ValueError):
            raise ArgumentError(
                f"from_sympy: sympy.sympify cannot parse {expr!r}\n"
                "  help: pass the SymPy expression itself (x**2 with "
                "x = sympy.Symbol('x'))"
            ) from None
    else:
        try:
            value = sympy.sympify(expr, strict=True)
        except sympy.SympifyError:
            value = None
    if not isinstance(value, (sympy.Expr, Boolean)):
        raise ArgumentError(
            "from_sympy: expr must be a SymPy expression, or a list, tuple or Matrix "
            f"of them; got {_a(expr)}\n{_EXAMPLE}"
        )
    return value


def _parameter_names(symbols: tuple[Any, ...]) -> list[str]:
    """A distinct Python name per symbol: its own where it is one (not a keyword,
    not taken), else ``x{i}``."""
    own = [str(s) for s in symbols]
    usable = [n.isidentifier() and not keyword.iskeyword(n) for n in own]
    taken = {n for n, ok in zip(own, usable, strict=True) if ok}
    names: list[str] = []
    for i, (name, ok) in enumerate(zip(own, usable, strict=True)):
        if not ok or name in names:
            name = f"x{i}"
            while name in taken:
                name += "_"
        taken.add(name)
        names.append(name)
    return names


class SympyFunction:
    """A SymPy expression (or a nested list/tuple or Matrix of them) as a function
    of ``symbols``, ready for any symdiff transform.

    The arguments are checked here, and the expression is translated once, so
    that a bad one fails now rather than at the first call.
    """

    def __init__(self, expr: Any, symbols: Any):
        import inspect

        given = symbols if isinstance(symbols, (list, tuple)) else ()
        by_name = {str(s): s for s in given if isinstance(s, sympy.Basic)}
        self.expr = _expressions(expr, by_name)
        self.symbols = _symbols(symbols, _flat(self.expr))
        names = _parameter_names(self.symbols)
        self.__name__ = self.__qualname__ = "sympy_function"
        self.__signature__ = inspect.Signature(
            [
                inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                for n in names
            ]
        )
        self._names = names
        self.__symdiff_trace__(("float64",) * len(names))

    def __symdiff_trace__(self, dtypes: tuple[str, ...]) -> Any:
        from symdiff.frontend.lower import Traced, param_node
        from symdiff.ir.node import constant

        params = tuple(
            param_node(i, n, dt)
            for i, (n, dt) in enumerate(zip(self._names, dtypes, strict=True))
        )
        env: dict[Any, Node] = dict(zip(self.symbols, params, strict=True))
        # Iterative post-order over the expression tree; shared subtrees are
        # translated once (and hash-consing shares equal ones anyway).
        for root in _flat(self.expr):
            stack = [(root, False)]
            while stack:
                e, ready = stack.pop()
                if e in env:
                    continue
                if e.is_Number or e in (sympy.pi, sympy.E):
                    env[e] = constant(float(e))
                    continue
                if e in (sympy.true, sympy.false):
                    env[e] = constant(bool(e))
                    continue
                if isinstance(e, sympy.Symbol):
                    raise ArgumentError(
                        f"from_sympy: symbol `{e}` is not among the function's "
                        f"symbols\n  help: add `{e}` to the symbols list, or "
                        "substitute a value for it with expr.subs(...)"
                    )
                if not ready:
                    if not _supported(e):  # the outermost: Derivative, not its args
                        raise _unsupported(e)
                    stack.append((e, True))
                    stack.extend((c, False) for c in _children(e) if c not in env)
                    continue
                env[e] = _from_sympy_node(e, [env[c] for c in _children(e)])
        from symdiff.transforms import rebuild

        output = rebuild(self.expr, env.__getitem__)
        return Traced(self.__name__, params, output, {}, "<sympy>")

    def __call__(self, *args: Any) -> Any:
        values = dict(zip(self.symbols, args, strict=True))
        from symdiff.transforms import rebuild

        return rebuild(self.expr, lambda e: float(e.evalf(subs=values)))


def _flat(expr: Any) -> list[Any]:
    """The expressions of a nested tuple, left to right."""
    if isinstance(expr, tuple):
        return [e for item in expr for e in _flat(item)]
    return [expr]


#: The help line of from_sympy's argument errors.
_EXAMPLE = "  help: from_sympy(expr, [x, y]) with x, y = sympy.symbols('x y')"


def from_sympy(expr: Any, symbols: Any, *, target: str = "cpu") -> Any:
    """Compile a SymPy expression into a symdiff kernel (a faster ``lambdify`` that
    also differentiates).

    Parameters
    ----------
    expr : sympy.Expr, or a (nested) list/tuple or a Matrix of them
        The outputs: a list or tuple gives a tuple of outputs (nested lists,
        nested tuples), a Matrix its entries row by row.  A string is parsed
        with ``sympy.sympify``.
    symbols : sequence of sympy.Symbol
        The arguments, in order.  A name (a string) stands for the expression's
        symbol of that name; a string of several names (``"x y"``) for each.

    Returns
    -------
    Compiled
        Calling it evaluates ``expr``; its attributes ``grad`` (w.r.t. every
        symbol), ``jacobian`` and ``hessian`` are compiled transforms too
        (absent for an expression of no symbols: nothing to differentiate).

    Raises
    ------
    ArgumentError
        At once, for symbols that are not symbols (or are repeated), an ``expr``
        that is not an expression, a symbol of ``expr`` missing from ``symbols``,
        or a function symdiff cannot translate.

    Examples
    --------
    >>> import sympy, symdiff
    >>> x, y = sympy.symbols("x y")
    >>> f = symdiff.from_sympy(x**2 * y, [x, y])
    >>> f(3.0, 2.0), f.grad(3.0, 2.0)
    (18.0, (12.0, 9.0))
    """
    from symdiff import api

    fn = SympyFunction(expr, symbols)
    everything = tuple(range(len(fn.symbols)))
    compiled = api.jit(fn, target=target)
    if not everything:  # a constant: nothing to differentiate with respect to
        return compiled
    compiled.grad = api.grad(fn, argnums=everything, target=target)
    compiled.jacobian = api.jacobian(fn, argnums=everything, target=target)
    compiled.hessian = api.hessian(fn, argnums=everything, target=target)
    return compiled
