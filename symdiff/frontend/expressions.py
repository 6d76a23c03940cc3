"""Lowering Python expressions to IR, iteratively.

Expressions are walked with an explicit stack (post-order), never by recursion: a
user's ``a + a + ... + a`` with ten thousand terms is a left-deep AST that would
overflow a recursive visitor.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import functools
import inspect
import re
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from symdiff.custom import custom_vjp
from symdiff.errors import SymdiffError
from symdiff.frontend import arrays as AR
from symdiff.frontend import linalg as LN
from symdiff.frontend import masks
from symdiff.frontend import more_numpy as MN
from symdiff.frontend.arrays import BoundMethod, SliceValue, Unsupported
from symdiff.frontend.callables import bitwise, invert, lookup
from symdiff.frontend.values import (
    Conflict,
    LocalFunction,
    Masked,
    Maybe,
    Static,
    Undefined,
    Value,
    as_list,
    is_namedtuple,
)
from symdiff.ir import arrays as A
from symdiff.ir import build as B
from symdiff.ir import shapes as S
from symdiff.ir.node import Node, constant
from symdiff.ir.shapes import ShapeMismatch

if TYPE_CHECKING:
    from symdiff.frontend.lower import Frame

BINOPS: dict[type, Callable[[Node, Node], Node]] = {
    ast.Add: B.add,
    ast.Sub: B.sub,
    ast.Mult: B.mul,
    ast.Div: B.div,
    ast.Pow: B.pow_,
    ast.FloorDiv: lambda a, b: B.apply("floordiv", a, b),
    ast.Mod: lambda a, b: B.apply("mod", a, b),
    # on ints (bool arrays' & and | are masks, handled first)
    ast.BitAnd: bitwise("bitand"),
    ast.BitOr: bitwise("bitor"),
    ast.BitXor: bitwise("bitxor"),
    ast.LShift: bitwise("lshift"),
    ast.RShift: bitwise("rshift"),
}

#: An operand of ``and``/``or`` known while tracing not to decide it.
_DROPPED = object()

#: Expressions that hold a selection (``x[mask]``) without using it.
_CARRIERS = (ast.Tuple, ast.List, ast.NamedExpr)

_COMPARE = {
    ast.Lt: "lt",
    ast.LtE: "le",
    ast.Gt: "gt",
    ast.GtE: "ge",
    ast.Eq: "eq",
    ast.NotEq: "ne",
}

_OP_SYMBOLS = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.MatMult: "@",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.Invert: "~",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.USub: "-",
    ast.UAdd: "+",
    ast.Not: "not",
}

# Expression kinds symdiff rejects, with what to write instead.
UNSUPPORTED_EXPRESSIONS: dict[type, tuple[str, str]] = {
    ast.SetComp: (
        "a set comprehension",
        "use a list comprehension `[... for ...]`: sets have no order to "
        "differentiate along",
    ),
    ast.DictComp: (
        "a dict comprehension",
        "use a list comprehension `[... for ...]` and index it, or pass the "
        "values as arguments",
    ),
    ast.Set: ("a set", "use a tuple"),
    ast.Starred: ("`*` unpacking", "pass the arguments one by one"),
    ast.Await: ("`await`", "differentiate a plain (non-async) function"),
    ast.Yield: ("`yield`", "return a value instead"),
    ast.YieldFrom: ("`yield from`", "return a value instead"),
}


def python_value(obj: Any) -> Value:
    """A Python object met in the user's code, as a lowering value."""
    if isinstance(obj, (bool, np.bool_)):
        return constant(bool(obj))
    if isinstance(obj, (int, np.integer)):
        return constant(int(obj))
    if isinstance(obj, (float, np.floating)):
        return constant(float(obj))
    if is_namedtuple(obj):  # its fields, by name too
        return type(obj)(*(global_value(o) for o in obj))  # type: ignore[no-any-return]
    if isinstance(obj, tuple):
        return tuple(python_value(o) for o in obj)
    return Static(obj)


def global_value(obj: Any) -> Value:
    """A module-level or closure variable as a constant, its value when a kernel
    is traced (as JAX reads globals when it traces): numbers and tuples as they are,
    lists of numbers as tuples, NumPy arrays as constant arrays (small ones;
    :func:`symdiff.frontend.arrays.constant_array` says why not otherwise)."""
    if isinstance(obj, np.ndarray):
        return AR.constant_array(obj)
    frozen = _frozen(obj)
    return python_value(frozen if frozen is not None else obj)


def _frozen(obj: Any) -> Any:
    """A list of numbers (nested lists too) as tuples; None for anything else.
    Recursive in the nesting of the user's list, never in a graph."""
    if not isinstance(obj, list):
        return obj if isinstance(obj, (int, float, np.number, np.bool_)) else None
    items = [_frozen(o) for o in obj]
    return None if any(i is None for i in items) else tuple(items)


#: The methods of a dict the frontend runs while tracing.
_DICT_METHODS = ("items", "keys", "values", "get")

#: np.linalg functions whose LAPACK call raises for some matrices (singular,
#: not positive definite): under a run-time `if` they get a safe matrix.
_RAISING_LINALG = (np.linalg.solve, np.linalg.inv, np.linalg.cholesky)


_UNKNOWN = object()


@dataclass(frozen=True)
class _IsNone:
    """A :class:`Maybe` as an operand of ``is``/``==``: its flag is the test."""

    none: Node
    value: Node


def _kind_text(value: Value) -> str:
    if isinstance(value, Node):
        return "an array" if value.shape else "a number"
    if isinstance(value, tuple):
        return f"a tuple of {len(value)}"
    if isinstance(value, Static):
        if isinstance(value.obj, dict):
            return "a dict"
        return "None" if value.obj is None else f"a `{type(value.obj).__name__}`"
    return "another value"


def _optional(value: Value) -> bool:
    return isinstance(value, (Maybe, Node)) or (
        isinstance(value, Static) and value.obj is None
    )


def _as_maybe(value: Value, other: Value) -> tuple[Node, Node]:
    """``value`` (a number, None or a :class:`Maybe`) as (is None, value); None's
    value is a zero of ``other``'s kind (never read: Python would fail)."""
    if isinstance(value, Maybe):
        return value.none, value.value
    if isinstance(value, Node):
        return B.FALSE, value
    like = other.value if isinstance(other, Maybe) else other
    assert isinstance(like, Node)
    zero = B.constant(0) if like.dtype == "int64" else B.ZERO
    return B.TRUE, B.broadcast_to(zero, like.shape) if like.shape else zero


def _maybe_use(node: ast.expr, value: Value) -> Value:
    """A :class:`Maybe` where ``node`` uses it: compared with None, its flag;
    used any other way, its value (Python would fail on None there)."""
    if not isinstance(value, Maybe):
        return value
    if isinstance(node, ast.Compare):
        return _IsNone(value.none, value.value)  # type: ignore[return-value]
    return value.value


def _other_shapes(a: S.Shape, b: S.Shape) -> bool:
    """Whether the shapes differ whatever the lengths are when the function runs:
    in rank, in a length 1 against another (a stretch), or by a known amount
    (``n - 1`` against ``n``).  Lengths that may be equal are checked when the
    kernel runs."""
    if len(a) != len(b):
        return True
    for da, db in zip(a, b, strict=True):
        if da == db:
            continue
        if (da == 1) != (db == 1):
            return True
        gap = S.sub(da, db)
        if isinstance(gap, int) and gap != 0:
            return True
    return False


def is_namedtuple_class(cls: type) -> bool:
    return issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)


def _is_python(value: object) -> bool:
    """A Python object, not a value of the function (a namedtuple's default)."""
    return not isinstance(value, (Node, tuple, Static, Masked, Maybe, LocalFunction))


@dataclass(frozen=True)
class _Arm:
    """A mark in :meth:`ExpressionLowering.expr`'s work list: entering an arm of
    ``a if c else b`` (under ``cond``), or leaving one (``cond`` None)."""

    cond: Node | None


@dataclass(frozen=True, eq=False)
class TracedPartial:
    """``functools.partial(f, ...)`` called in the function: the function (a
    helper, a local function, a NumPy function) and the values it binds, the
    function's values (nodes), not Python objects."""

    func: object
    args: tuple[Value, ...]
    keywords: dict[str, Value]

    def map_values(self, fn: Callable[[Value], Value]) -> TracedPartial:
        """The partial with ``fn`` applied to the values it binds (a loop body
        captures them)."""
        return TracedPartial(
            self.func,
            tuple(fn(a) for a in self.args),
            {k: fn(v) for k, v in self.keywords.items()},
        )


def _python_object(value: Value) -> object:
    """The Python object a value known while tracing stands for (a string, a
    constant number), else ``_UNKNOWN``."""
    if isinstance(value, Static):
        return value.obj
    if isinstance(value, Node) and value.op == "const" and not value.shape:
        return value.value
    if isinstance(value, tuple):  # argnums=(0, 1)
        items = tuple(_python_object(v) for v in value)
        return _UNKNOWN if _UNKNOWN in items else items
    return _UNKNOWN


def _static_truth(value: Value) -> bool | None:
    """The truth of a condition known while tracing (a constant, a string,
    None), else None."""
    if isinstance(value, Node) and value.op == "const" and not value.shape:
        return bool(value.value)
    if isinstance(value, Static) and (value.obj is None or isinstance(value.obj, str)):
        return bool(value.obj)
    return None


def _is_lowered(value: object) -> bool:
    """A lowering value already (an item of a dict argument), not a Python
    object (an item of a global dict)."""
    if isinstance(value, tuple):
        return all(_is_lowered(v) for v in value)
    return isinstance(value, (Node, Static))


def _instance(obj: object) -> bool:
    """An object of the user's own class (``self``), whose attributes the
    function may read."""
    return (
        not isinstance(
            obj,
            (str, bytes, types.FunctionType, types.BuiltinFunctionType, np.ufunc),
        )
        and obj is not None
        and type(obj).__module__ not in ("builtins", "numpy")
    )


def _python_function(obj: object) -> types.FunctionType | None:
    """The Python function behind a wrapper of one (a Numba dispatcher's
    ``py_func``, ``functools.wraps``' ``__wrapped__``), else None."""
    inner = getattr(obj, "py_func", None)
    if isinstance(inner, types.FunctionType):
        return inner
    try:
        inner = inspect.unwrap(obj)  # type: ignore[arg-type]
    except (ValueError, TypeError):
        return None
    return inner if isinstance(inner, types.FunctionType) and inner is not obj else None


#: Array methods: ``x.sum()`` and the like (name: builder, ``x`` first).
METHODS: dict[str, Callable[..., Value]] = {**MN.METHODS, **AR.METHODS}


def _array_function(obj: object) -> tuple[str, Callable[..., Value]] | None:
    """The NumPy (``np.linalg``, ``scipy.special``, ``math``) function of arrays
    ``obj`` is: its name and builder, from the frontend's tables."""
    key = id(obj)
    found = AR.FUNCTIONS.get(key) or LN.FUNCTIONS.get(key) or MN.FUNCTIONS.get(key)
    return found or MN.scipy_function(obj)


def _unknown_help(obj: object) -> str:
    """What to write instead of a call symdiff cannot differentiate."""
    if obj is builtins.round:
        return (
            "rounding has slope 0 wherever it is defined: use np.rint(x) (half to "
            "even, a float) or int(x) (toward zero), which symdiff differentiates so"
        )
    if isinstance(obj, type):
        return (
            f"`{obj.__name__}` is a class: differentiated code computes with "
            "numbers and arrays; pass the values it holds as arguments"
        )
    return (
        "symdiff understands math/numpy functions (exp, log, sin, ...), "
        "min/max/abs/pow, and your own Python functions (also under @numba.njit); "
        "write this one in Python"
    )


class ExpressionLowering:
    """Mixin of :class:`symdiff.frontend.lower.Lowerer`: expressions to values."""

    frame: Frame
    hints: dict[Node, str]
    poison: Node
    current: ast.AST | None
    error: Callable[..., Node]
    inline: Callable[..., Value]
    inline_custom: Callable[..., Value]
    inline_local: Callable[..., Value]
    local_function: Callable[..., Value]
    escaping: Callable[..., bool]
    path_condition: Callable[[], Node]
    in_fwd: set[int]
    assign: Callable[..., None]
    conditional: set[int]
    generator_args: set[int]
    iterable_call: Callable[..., Value | None]
    inline_transform: Callable[..., Value]

    # -- the walk ---------------------------------------------------------------
    def expr(self, root: ast.expr, test: bool = False) -> Value:
        """Lower one expression; ``test`` marks a condition (``if``/``while`` test)."""
        tests = {id(root)} if test else set()
        results: dict[int, Value] = {}
        stack: list[tuple[ast.expr, bool]] = [(root, False)]
        # the parts Python may not evaluate (``a if c else b``'s arms, ``c and
        # x[i]``'s right side): both run here, so their run-time indices are
        # clamped into the array, as in an ``if`` statement's branches
        outer, self.conditional = self.conditional, set()
        lives: list[Node] = []  # the frame's live conditions outside the arms
        live_before = self.frame.live
        chosen: dict[int, ast.expr] = {}  # `a if c else b` with c known: the arm
        pending: dict[int, list[Value]] = {}  # `a or b`: its run-time operands
        try:
            while stack:
                node, ready = stack.pop()
                if isinstance(node, _Arm):
                    # entering (leaving) an arm of `a if c else b`: the code runs
                    # under the test, as in an `if` statement's branch, which a
                    # check of an index (`x[i] if i < len(x) else 0.0`) heeds
                    if node.cond is None:
                        self.frame.live = lives.pop()
                    else:
                        lives.append(self.frame.live)
                        self.frame.live = B.logical_and(self.frame.live, node.cond)
                    continue
                if isinstance(node, ast.IfExp) and not ready and id(node) not in tests:
                    if id(node.test) not in results:  # its test first
                        tests.add(id(node.test))
                        stack.append((node, False))
                        stack.append((node.test, False))
                        continue
                    truth = _static_truth(results[id(node.test)])
                    if truth is not None:  # lower the arm Python evaluates only
                        del results[id(node.test)]
                        chosen[id(node)] = node.body if truth else node.orelse
                        if id(node) in self.conditional:
                            self.conditional.add(id(chosen[id(node)]))
                        stack.append((node, True))
                        stack.append((chosen[id(node)], False))
                        continue
                if id(node) in chosen:
                    results[id(node)] = results.pop(id(chosen.pop(id(node))))
                    continue
                if isinstance(node, ast.BoolOp):
                    # operands one at a time: one known while tracing may decide
                    # (`best is None or v < best`), and Python evaluates no more
                    step = self._bool_step(node, results, pending, tests)
                    if step is not None:
                        stack.append((node, False))
                        stack.append((step, False))
                    continue
                children = self._children(node, tests)
                if isinstance(node, ast.IfExp) and id(node.test) in results:
                    children = [node.body, node.orelse]  # the test is lowered
                if not ready:
                    if id(node) in self.conditional:
                        self.conditional.update(id(c) for c in children)
                    elif isinstance(node, ast.IfExp):
                        self.conditional.update((id(node.body), id(node.orelse)))
                    elif isinstance(node, ast.BoolOp):
                        self.conditional.update(id(v) for v in node.values[1:])
                    stack.append((node, True))
                    test_value = (
                        results.get(id(node.test))
                        if isinstance(node, ast.IfExp)
                        else None
                    )
                    if (
                        isinstance(test_value, Node)
                        and not test_value.shape
                        and test_value.dtype == "bool"
                    ):
                        body, orelse = children
                        stack.extend(
                            [
                                (_Arm(None), False),  # type: ignore[list-item]
                                (orelse, False),
                                (_Arm(B.logical_not(test_value)), False),  # type: ignore[list-item]
                                (_Arm(None), False),  # type: ignore[list-item]
                                (body, False),
                                (_Arm(test_value), False),  # type: ignore[list-item]
                            ]
                        )
                        continue
                    stack.extend((child, False) for child in reversed(children))
                    continue
                if isinstance(node, ast.IfExp) and id(node.test) in results:
                    children = [node.test, *children]
                values = [results.pop(id(child)) for child in children]
                results[id(node)] = self._combine(node, values, id(node) in tests)
        finally:
            self.conditional = outer
            self.frame.live = live_before  # (as it was, should lowering fail)
        return results[id(root)]

    def _bool_step(
        self,
        node: ast.BoolOp,
        results: dict[int, Value],
        pending: dict[int, list[Value]],
        tests: set[int],
    ) -> ast.expr | None:
        """The next operand of ``node`` to lower, or None when ``node``'s value
        is in ``results``: ``a or b`` is decided by an ``a`` known to be true
        while tracing (``b`` is not lowered, as Python does not evaluate it);
        an operand known to be false is dropped; the run-time rest combine."""
        done = pending.setdefault(id(node), [])
        is_or = isinstance(node.op, ast.Or)
        test = id(node) in tests
        k = len(done)
        if k < len(node.values) and id(node.values[k]) in results:
            value = results.pop(id(node.values[k]))
            truth = _static_truth(value)
            last = k == len(node.values) - 1
            if truth is is_or or (last and truth is not None):
                # decides (true for `or`, false for `and`), or ends the run-time
                # operands before it: Python's value is this operand (`found or
                # 0.0`) where those before it pass, its truth in a condition
                del pending[id(node)]
                before = [v for v in done if v is not _DROPPED]
                if before:  # `x or 1.0`: x where it is true, else 1.0
                    results[id(node)] = self._bool_combine(
                        node, [*before, B.constant(truth) if test else value], test
                    )
                else:
                    results[id(node)] = B.constant(truth) if test else value
                return None
            done.append(_DROPPED if truth is not None else value)
            k += 1
        if k < len(node.values):
            following = node.values[k]
            if test:
                tests.add(id(following))
            if k or id(node) in self.conditional:
                self.conditional.add(id(following))  # Python may not evaluate it
            return following
        kept = [v for v in pending.pop(id(node)) if v is not _DROPPED]
        if not kept:  # every operand known, none deciding
            results[id(node)] = B.constant(not is_or)
        elif len(kept) == 1 and (test or done[-1] is kept[0]):
            # `None or x`: x itself (the operands before it are known to pass)
            results[id(node)] = kept[0]
        else:
            results[id(node)] = self._bool_combine(node, kept, test)
        return None

    def _bool_combine(self, node: ast.BoolOp, kept: list[Value], test: bool) -> Value:
        if any(v is self.poison for v in kept):
            return self.poison
        outer, self.current = self.current, node
        try:
            return self._expr_BoolOp(node, kept, test)
        finally:
            self.current = outer

    def _children(self, node: ast.expr, tests: set[int]) -> list[ast.expr]:
        if isinstance(node, ast.BinOp):
            return [node.left, node.right]
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                tests.add(id(node.operand))
            return [node.operand]
        if isinstance(node, ast.BoolOp):
            if id(node) in tests:
                tests.update(id(v) for v in node.values)
            return list(node.values)
        if isinstance(node, ast.Compare):
            return [node.left, *node.comparators]
        if isinstance(node, ast.IfExp):
            tests.add(id(node.test))
            return [node.test, node.body, node.orelse]
        if isinstance(node, ast.Call):
            for arg in node.args:
                if isinstance(arg, ast.GeneratorExp):  # lowered by the call
                    self.generator_args.add(id(arg))
            return [node.func, *node.args, *(k.value for k in node.keywords)]
        if isinstance(node, ast.Attribute):
            return [node.value]
        if isinstance(node, ast.Subscript):
            return [node.value, node.slice]
        if isinstance(node, (ast.Tuple, ast.List)):
            return list(node.elts)
        if isinstance(node, ast.Slice):
            return [e for e in (node.lower, node.upper, node.step) if e is not None]
        if isinstance(node, ast.NamedExpr):
            return [node.value]
        if isinstance(node, ast.Lambda):
            return list(node.args.defaults)  # evaluated where it is defined
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                return []  # `{**d}`: reported by _expr_Dict
            return [*node.keys, *node.values]  # type: ignore[list-item]
        if isinstance(node, ast.JoinedStr):
            return [v.value for v in node.values if isinstance(v, ast.FormattedValue)]
        return []

    def _combine(self, node: ast.expr, values: list[Value], test: bool) -> Value:
        handler = getattr(self, "_expr_" + type(node).__name__, None)
        if handler is None:
            what, hint = UNSUPPORTED_EXPRESSIONS.get(
                type(node), (f"`{type(node).__name__}` expressions", "")
            )
            return self.error(node, f"{what} is not supported", hint)
        if any(v is self.poison for v in values):
            return self.poison  # already reported; do not pile up follow-on errors
        if any(isinstance(v, Maybe) for v in values) and not isinstance(
            node, _CARRIERS
        ):
            values = [_maybe_use(node, v) for v in values]
        outer, self.current = self.current, node
        try:
            if not isinstance(node, _CARRIERS) and any(map(masks.has_masked, values)):
                return masks.combine(node, values, test, self._mask_handlers())
            return handler(node, values, test)
        except Unsupported as exc:
            return self.error(node, exc.message, exc.hint)
        except ShapeMismatch as exc:
            return self.error(node, str(exc), exc.hint)
        finally:
            self.current = outer

    def _mask_handlers(self) -> dict[str, Callable[[Any, list[Value], bool], Value]]:
        """The lowerings :func:`masks.combine` applies to a selection's data."""
        return {
            "BinOp": self._expr_BinOp,
            "UnaryOp": self._expr_UnaryOp,
            "Compare": self._expr_Compare,
            "Call": self._expr_Call,
        }

    # -- helpers ----------------------------------------------------------------
    def scalar(self, node: ast.AST, value: Value, what: str = "this value") -> Node:
        """``value`` as a number node, or a diagnostic."""
        if isinstance(value, Node):
            return value
        if isinstance(value, Maybe):
            return value.value
        if isinstance(value, Undefined):
            return self.error(
                node,
                f"`{value.name}` may be undefined here",
                (
                    f"it is assigned on only some paths through the `if` at line "
                    f"{value.line}; assign it before the `if` too"
                ),
            )
        if masks.has_masked(value):
            message = masks.refusal("this use of").message
            return self.error(node, message, masks.HINT)
        if isinstance(value, tuple):
            return self.error(
                node,
                f"{what} is a tuple, where a number is needed",
                "unpack it first: `a, b = pair`",
            )
        kind = type(value.obj).__name__
        return self.error(
            node,
            f"{what} is a `{kind}`, where a number is needed",
            "only numbers (and tuples of numbers) can be differentiated",
        )

    def merge(
        self,
        node: ast.AST,
        cond: Node,
        a: Value,
        b: Value,
        variable: str | None = "",
    ) -> Value:
        """``a if cond else b`` for any values: element-wise for tuples.
        Arrays of provably different shapes (a number and an array) are an
        error for ``a if c else b`` (``variable`` None); after an ``if``
        statement, where ``variable`` names it, an error only if it is read (a
        :class:`Conflict`); elsewhere ("": a loop's state, which the loop
        widens, a variable the lowering made) the smaller is stretched."""
        if cond.op == "const":
            return a if cond.value else b
        if (
            _optional(a)
            and _optional(b)
            and (
                isinstance(a, Maybe)
                or isinstance(b, Maybe)
                # `w = None` on one path, a number or an array on the other
                or (isinstance(a, Static) != isinstance(b, Static))
            )
        ):
            # `best` None on one path, a number on the other
            na, va = _as_maybe(a, b)
            nb, vb = _as_maybe(b, a)
            return Maybe(B.select(cond, na, nb), B.select(cond, va, vb))
        if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
            return tuple(
                self.merge(node, cond, x, y, variable)
                for x, y in zip(a, b, strict=True)
            )
        if isinstance(a, Node) and isinstance(b, Node):
            if variable != "" and _other_shapes(a.shape, b.shape):
                return self._shapes_differ(node, a, b, variable)
            # shapes that must agree are checked at the `if` (or its expression)
            outer, self.current = self.current, node
            try:
                return B.select(cond, a, b)
            finally:
                self.current = outer
        if isinstance(a, Static) and isinstance(b, Static) and a.obj is b.obj:
            return a
        if (
            isinstance(a, Static)
            and isinstance(b, Static)
            and isinstance(a.obj, dict)
            and isinstance(b.obj, dict)
        ):
            if set(a.obj) != set(b.obj):
                keys = [", ".join(map(repr, d.obj)) or "none" for d in (a, b)]  # type: ignore[union-attr]
                return self.error(
                    node,
                    f"the two branches give dicts of different keys ({keys[0]}; "
                    f"{keys[1]})",
                    "give the dict the same keys on both paths (a default value "
                    "where a branch has none)",
                )
            return Static(
                {k: self.merge(node, cond, a.obj[k], b.obj[k], variable) for k in a.obj}
            )
        if isinstance(a, Undefined):
            return a
        if isinstance(b, Undefined):
            return b
        if a is self.poison or b is self.poison:
            return self.poison  # already reported
        if masks.has_masked(a) or masks.has_masked(b):
            message = masks.refusal("choosing between branches with").message
            return self.error(node, message, masks.HINT)
        if isinstance(a, tuple) and isinstance(b, tuple):
            return self.error(
                node,
                "the two branches give tuples or lists of different lengths "
                f"({len(a)} and {len(b)} items)",
                "give them the same length on both paths (append on each)",
            )
        return self.error(
            node,
            "the two branches give values of different kinds "
            f"({_kind_text(a)} and {_kind_text(b)})",
            "make both branches produce the same structure",
        )

    def _shapes_differ(
        self, node: ast.AST, a: Node, b: Node, variable: str | None = None
    ) -> Value:
        """Branches that give one variable different shapes: which one the
        function holds after them is known only when it runs, and a kernel's
        arrays have one shape (stretching one branch's to the other's would
        change what sums, means and lengths of it give)."""

        def shape(v: Node) -> str:
            return (
                f"an array of shape {S.format_shape(v.shape)}"
                if v.shape
                else "a number"
            )

        message = (
            f"the two branches give values of different shapes ({shape(a)} and "
            f"{shape(b)}), and which one is taken is known only when the function "
            "runs"
        )
        hint = (
            "give both branches the same shape (for a number: `np.full(w.shape, "
            "1.0)`, `np.ones_like(w)`), or finish each case in its own branch "
            "(`if c: return np.sum(x[:1] ** 2)`)"
        )
        if variable:  # an error where it is read, if it is
            line = getattr(node, "lineno", 0)
            where = f"`{variable}` is read after the `if` at line {line}, where "
            return Conflict(variable, line, where + message, hint)
        return self.error(
            node,
            f"the two branches give values of different shapes ({shape(a)} and "
            f"{shape(b)}), and which one is taken is known only when the function "
            "runs",
            "give both branches the same shape (for a number: `np.full(w.shape, "
            "1.0)`, `np.ones_like(w)`), or finish each case in its own branch "
            "(`if c: return np.sum(x[:1] ** 2)`)",
        )

    # -- one method per expression kind ------------------------------------------
    def _expr_Constant(
        self, node: ast.Constant, values: list[Value], test: bool
    ) -> Value:
        if isinstance(node.value, complex):
            return self.error(
                node,
                "complex numbers are not supported",
                "split into real and imaginary parts",
            )
        return python_value(node.value)

    def _expr_Name(self, node: ast.Name, values: list[Value], test: bool) -> Value:
        frame = self.frame
        if node.id in frame.env:
            value = frame.env[node.id]
            if isinstance(value, Conflict):
                frame.env[node.id] = self.poison  # reported once
                return self.error(node, value.message, value.hint)
            if isinstance(value, Undefined):
                return self.scalar(node, value)
            return value
        if node.id in frame.local_names:
            return self.error(
                node,
                f"`{node.id}` is used before it is assigned",
                f"assign `{node.id}` before this line",
            )
        return self.resolve_global(node)

    def resolve_global(self, node: ast.Name) -> Value:
        fn = self.frame.source.fn
        code = fn.__code__
        if node.id in code.co_freevars and fn.__closure__:
            cell = fn.__closure__[code.co_freevars.index(node.id)]
            try:
                contents = cell.cell_contents
            except ValueError:
                return self.error(node, f"closure variable `{node.id}` is not set yet")
            return global_value(contents)
        if node.id in fn.__globals__:
            return global_value(fn.__globals__[node.id])
        if hasattr(builtins, node.id):
            return Static(getattr(builtins, node.id))
        if self._comprehension_variable(node):
            return self.error(
                node,
                f"`{node.id}` is a variable of the comprehension that made this "
                "function, which reads it only when called, after the comprehension "
                "(Python's late binding: the last value for every such function)",
                f"bind it when the function is made, as a default: `lambda t, "
                f"{node.id}={node.id}: ...`",
            )
        return self.error(
            node,
            f"name `{node.id}` is not defined",
            "define it at module level, or pass it as an argument",
        )

    def _comprehension_variable(self, node: ast.Name) -> bool:
        """Whether ``node`` reads a target of a comprehension that ``node`` is in
        (a local function made there, called after it)."""
        for frame in self.frames:
            for comp in ast.walk(frame.source.tree):
                if not isinstance(
                    comp, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)
                ):
                    continue
                targets = {
                    n.id
                    for g in comp.generators
                    for n in ast.walk(g.target)
                    if isinstance(n, ast.Name)
                }
                if node.id in targets and any(n is node for n in ast.walk(comp)):
                    return True
        return False

    def _expr_Attribute(
        self, node: ast.Attribute, values: list[Value], test: bool
    ) -> Value:
        (base,) = values
        if is_namedtuple(base) and node.attr in type(base)._fields:  # type: ignore[attr-defined]
            return getattr(base, node.attr)  # type: ignore[no-any-return]
        if isinstance(base, Node):
            if node.attr in METHODS:
                return Static(BoundMethod(base, node.attr))
            try:
                return AR.attribute(base, node.attr)
            except KeyError:
                what = "an array" if base.shape else "a number"
                return self.error(
                    node,
                    f"attribute `.{node.attr}` of {what} is not supported",
                    "symdiff understands .shape, .T, .ndim, .size and the methods "
                    + ", ".join(f".{m}()" for m in METHODS),
                )
        if isinstance(base, Static) and isinstance(base.obj, (types.ModuleType, type)):
            if not hasattr(base.obj, node.attr):
                name = getattr(base.obj, "__name__", "?")
                close = difflib.get_close_matches(node.attr, dir(base.obj), n=1)
                return self.error(
                    node,
                    f"`{name}` has no attribute `{node.attr}`",
                    f"did you mean `{name}.{close[0]}`?"
                    if close
                    else f"check the name against `{name}`'s documentation",
                )
            return global_value(getattr(base.obj, node.attr))  # `consts.TABLE`
        if (
            isinstance(base, Static)
            and isinstance(base.obj, dict)
            and node.attr in _DICT_METHODS
        ):
            return Static(getattr(base.obj, node.attr))  # params.items
        if isinstance(base, Static) and (
            _instance(base.obj) or isinstance(base.obj, (np.finfo, np.iinfo))
        ):
            # `self.k` of a bound method's object: read when the kernel is
            # built, as a global is (a method: inlined where it is called)
            try:
                return global_value(getattr(base.obj, node.attr))
            except AttributeError:
                kind = type(base.obj).__name__
                return self.error(
                    node, f"`{kind}` object has no attribute `{node.attr}`"
                )
        if isinstance(base, Static) and isinstance(base.obj, np.ufunc):
            name = f"np.{base.obj.__name__}.{node.attr}"
            return self.error(
                node,
                f"`{name}` (a method of a NumPy ufunc) is not supported",
                "np.add.at, np.subtract.at, np.cumsum and np.cumprod are; for a "
                "running maximum or the like, write the loop (`m = np.maximum(m, "
                "x[i])`)",
            )
        return self.error(
            node,
            f"attribute `.{node.attr}` is not supported here",
            "only module attributes (`math.pi`, `np.exp`) are understood",
        )

    def _safe_matrix(self, a: Value) -> Value:
        """The matrix of ``solve``/``inv``/``cholesky`` under a run-time ``if``:
        both branches run, so in the one not taken it is the identity, which
        LAPACK always takes (``if abs(det(A)) > eps: x = solve(A, b)`` with a
        singular ``A`` must not raise).  Its adjoint reaches ``A`` where taken."""
        path = self.path_condition()
        if path is B.TRUE or not (
            isinstance(a, Node) and len(a.shape) == 2 and a.dtype == "float64"
        ):
            return a
        n, m = a.shape
        return B.select(path, a, A.eye(n, m))

    def _dict_method(
        self,
        node: ast.Call,
        mapping: dict[Any, Any],
        method: str,
        args: list[Value],
        kwargs: dict[str, Value],
    ) -> Value:
        """``params.items()``, ``.keys()``, ``.values()``, ``.get(k, d)`` of a
        dict argument or a global dict: tuples, known while tracing."""
        if (
            kwargs
            or len(args) > (2 if method == "get" else 0)
            or (method == "get" and not args)
        ):
            return self.error(
                node,
                f"bad call of `.{method}()` of a dict",
                "`.items()`, `.keys()` and `.values()` take no arguments; "
                "`.get(key)` or `.get(key, default)`",
            )
        keys = [Static(k) if isinstance(k, str) else python_value(k) for k in mapping]
        if method == "keys":
            return tuple(keys)
        if method == "get":
            key = args[0]
            k = key.obj if isinstance(key, Static) else getattr(key, "value", None)
            if k not in mapping:
                return args[1] if len(args) > 1 else Static(None)
            return self._dict_item(node, mapping, key)  # type: ignore[arg-type]
        values = [self._dict_item(node, mapping, k) for k in keys]  # type: ignore[arg-type]
        if method == "values":
            return tuple(values)
        return tuple(zip(keys, values, strict=True))

    def _dict_item(self, node: ast.expr, mapping: dict[Any, Any], key: Value) -> Value:
        """``params["W"]``: an item of a dict argument (its leaves are parameters)
        or of a global dict (its numbers are constants), by a constant key."""
        if isinstance(key, Static):
            k = key.obj
        elif isinstance(key, Node) and key.op == "const":
            k = key.value
        else:
            return self.error(
                node,
                "a dict can only be indexed by a constant key here",
                'write the key out: `params["W"]`',
            )
        if k not in mapping:
            known = ", ".join(repr(key) for key in mapping)
            return self.error(
                node,
                f"the dict has no key {k!r}",
                f"its keys are {known}; `params.get(key, default)` gives a default",
            )
        item = mapping[k]
        return item if _is_lowered(item) else global_value(item)

    def _expr_BinOp(self, node: ast.BinOp, values: list[Value], test: bool) -> Value:
        if any(isinstance(v, tuple) for v in values):
            return self._sequence_op(node, *values)
        left, right = map(_python_object, values)
        if isinstance(node.op, ast.Add) and isinstance(left, str):
            if isinstance(right, str):
                return Static(left + right)  # "W" + str(i): a key
        build = BINOPS.get(type(node.op))
        if isinstance(node.op, ast.MatMult):
            left = AR.array(values[0], "the left operand of `@`")
            right = AR.array(values[1], "the right operand of `@`")
            return A.dot(left, right)
        if isinstance(node.op, (ast.BitAnd, ast.BitOr)):
            left, right = values
            if (
                isinstance(left, Node)
                and isinstance(right, Node)
                and left.dtype == right.dtype == "bool"
            ):
                # masks: (x > a) & (x < b), element-wise on arrays
                combine = (
                    B.logical_and if isinstance(node.op, ast.BitAnd) else B.logical_or
                )
                return combine(left, right)
        if build is None:
            symbol = _OP_SYMBOLS.get(type(node.op), type(node.op).__name__)
            hint = "use `*` for scalars" if symbol == "@" else ""
            return self.error(node, f"operator `{symbol}` is not supported", hint)
        left = self.scalar(node.left, values[0], "the left operand")
        right = self.scalar(node.right, values[1], "the right operand")
        return build(left, right)

    def _sequence_op(self, node: ast.BinOp, left: Value, right: Value) -> Value:
        """``(a, b) + (c,)`` and ``[0.0] * (n + 1)``, as Python does them for
        tuples and lists; a list of numbers repeated is an array (its items
        are written later: ``f[i] = ...``), of a run-time length too."""
        if isinstance(node.op, ast.Add) and isinstance(left, tuple):
            if isinstance(right, tuple):
                return left + right
        if isinstance(node.op, ast.Mult):
            items, count = (left, right) if isinstance(left, tuple) else (right, left)
            if (
                isinstance(items, tuple)
                and isinstance(count, Node)
                and not count.shape
                and count.dtype in ("int64", "bool")
            ):
                numbers = all(isinstance(v, Node) and not v.shape for v in items)
                if numbers and items and len(set(items)) == 1:
                    # [0.0] * n: n copies of one number
                    length = AR.length(count, "the count of a repeated list")
                    return as_list(B.broadcast_to(items[0], (length,)))  # type: ignore[arg-type]
                if count.op == "const":
                    repeated = items * max(int(count.value), 0)
                    if numbers and repeated:
                        return as_list(AR.array(repeated))
                    return repeated
                return self.error(
                    node,
                    "a list of several items repeated a run-time number of times",
                    "build it with np.tile(np.array([a, b]), n), or preallocate "
                    "`np.zeros(n)` and assign the items",
                )
        symbol = _OP_SYMBOLS.get(type(node.op), type(node.op).__name__)
        return self.error(
            node,
            f"`{symbol}` of a tuple or list is not supported",
            "tuples and lists concatenate with `+` and repeat with `* n`; for "
            "arithmetic make an array: np.array([a, b])",
        )

    def _expr_UnaryOp(
        self, node: ast.UnaryOp, values: list[Value], test: bool
    ) -> Value:
        operand = self.scalar(node.operand, values[0])
        if isinstance(node.op, ast.USub):
            return B.neg(operand)
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.Not):
            if operand.shape:
                return self.error(
                    node,
                    "`not` of an array: the truth value of an array is ambiguous",
                    "use `~mask` or np.logical_not(mask) element-wise",
                )
            return B.logical_not(B.truth(operand))
        if operand.dtype == "bool":  # `~mask`: NumPy's element-wise not
            return B.logical_not(operand)
        if operand.dtype == "int64":
            return invert(operand)
        return self.error(
            node,
            "operator `~` is supported on bools and bool arrays only",
            "use `not` for a condition, or `-x - 1` for an int",
        )

    def _expr_Compare(
        self, node: ast.Compare, values: list[Value], test: bool
    ) -> Value:
        result: Node = B.TRUE
        for i, op in enumerate(node.ops):
            left, right = values[i], values[i + 1]
            maybe = next((v for v in (left, right) if isinstance(v, _IsNone)), None)
            if maybe is not None:  # a variable None on some paths (`best`)
                other = right if maybe is left else left
                if isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)) and (
                    isinstance(other, Static) and other.obj is None
                ):
                    negate = isinstance(op, (ast.IsNot, ast.NotEq))
                    pair = B.logical_not(maybe.none) if negate else maybe.none
                    result = B.logical_and(result, pair)
                    continue
                left = maybe.value if maybe is left else left  # type: ignore[assignment]
                right = maybe.value if maybe is right else right  # type: ignore[assignment]
            if isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) or any(
                isinstance(v, Static) for v in (left, right)
            ):
                pair = self._compare_objects(node, op, left, right)
            elif type(op) in _COMPARE:
                pair = B.apply(
                    _COMPARE[type(op)],
                    self.scalar(node, left),
                    self.scalar(node, right),
                )
            else:  # pragma: no cover - Python has no other comparisons
                raise AssertionError(op)
            if pair is self.poison:
                return pair
            result = B.logical_and(result, pair)
        return result

    def _compare_objects(
        self, node: ast.Compare, op: ast.cmpop, left: Value, right: Value
    ) -> Node:
        """A comparison that involves Python objects (``mode == "mean"``,
        ``w is None``) or membership (``mode in ("a", "b")``, ``k in (1, 2)``):
        decided now where Python decides it from the objects alone."""
        symbol = _OP_SYMBOLS[type(op)]
        negate = isinstance(op, (ast.IsNot, ast.NotIn, ast.NotEq))
        if isinstance(op, (ast.In, ast.NotIn)):
            if isinstance(right, Static) and isinstance(right.obj, dict):
                right = tuple(  # `"b" in params`: among the keys
                    Static(k) if isinstance(k, str) else python_value(k)
                    for k in right.obj
                )
            if not isinstance(right, tuple):
                return self.error(
                    node,
                    f"`{symbol}` needs a tuple or a list on its right",
                    'write the choices out: `mode in ("a", "b")`',
                )
            hits = [self._compare_objects(node, ast.Eq(), left, v) for v in right]
            if any(h is self.poison for h in hits):
                return self.poison
            found: Node = B.FALSE
            for hit in hits:
                found = B.logical_or(found, hit)
            return B.logical_not(found) if negate else found
        if isinstance(op, ast.Eq) and not any(
            isinstance(v, Static) for v in (left, right)
        ):  # an item of `k in (1, 2)`
            return B.apply("eq", self.scalar(node, left), self.scalar(node, right))
        if isinstance(left, Static) and isinstance(right, Static):
            if isinstance(op, (ast.Is, ast.IsNot)):
                same = left.obj is right.obj
            elif isinstance(op, (ast.Eq, ast.NotEq)):
                same = bool(left.obj == right.obj)
            else:
                return self.error(
                    node,
                    f"`{symbol}` between `{type(left.obj).__name__}` and "
                    f"`{type(right.obj).__name__}` is not supported",
                    "compare these with == or !=",
                )
            return B.constant(same != negate)
        objects = [v for v in (left, right) if isinstance(v, Static)]
        if (
            isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq))
            and objects
            and all(isinstance(v, (Node, Static)) for v in (left, right))
        ):
            # a number or an array is never None, a string or a function
            return B.constant(negate)
        if isinstance(op, (ast.Is, ast.IsNot)):
            return self.error(
                node,
                f"`{symbol}` between numbers is not supported",
                "compare numbers with == or != (`is` is for `x is None`)",
            )
        return self.error(
            node,
            f"comparison `{symbol}` of "
            + " and ".join(
                f"a `{type(v.obj).__name__}`" if isinstance(v, Static) else "a number"
                for v in (left, right)
            )
            + " is not supported",
            "compare numbers with < <= > >= == !=, and strings with == or !=",
        )

    def _expr_BoolOp(self, node: ast.BoolOp, values: list[Value], test: bool) -> Value:
        operands = [self.scalar(node, v) for v in values]
        word = "and" if isinstance(node.op, ast.And) else "or"
        if any(o.shape for o in operands):
            return self.error(
                node,
                f"`{word}` of arrays: the truth value of an array is ambiguous",
                f"use `{'&' if word == 'and' else '|'}` or np.logical_{word}(a, b) "
                "element-wise (with parentheses around comparisons)",
            )
        if not test and any(o.dtype != "bool" for o in operands):
            # Python's value: the first operand that decides (`scale or 2.0` is
            # `scale if scale else 2.0`), as selects from the last one back
            value = operands[-1]
            for operand in reversed(operands[:-1]):
                truth = B.truth(operand)
                if word == "or":
                    value = B.select(truth, operand, value)
                else:
                    value = B.select(truth, value, operand)
            return value
        combine = B.logical_and if isinstance(node.op, ast.And) else B.logical_or
        result = B.truth(operands[0])
        for operand in operands[1:]:
            result = combine(result, B.truth(operand))
        return result

    def _expr_IfExp(self, node: ast.IfExp, values: list[Value], test: bool) -> Value:
        cond = self.condition(node.test, values[0])
        if cond is self.poison:
            return cond
        return self.merge(node, cond, values[1], values[2], None)

    def _expr_Tuple(self, node: ast.Tuple, values: list[Value], test: bool) -> Value:
        return tuple(values)

    def _expr_List(self, node: ast.List, values: list[Value], test: bool) -> Value:
        # a list literal is a tuple that NumPy functions take (``np.array([a, b])``)
        return tuple(values)

    def _expr_Slice(self, node: ast.Slice, values: list[Value], test: bool) -> Value:
        it = iter(values)
        parts = [
            next(it) if e is not None else None
            for e in (node.lower, node.upper, node.step)
        ]
        return Static(SliceValue(*parts))

    def condition(self, node: ast.AST, value: Value) -> Node:
        """A value used as a condition: a scalar (an array's truth is ambiguous)."""
        cond = self.scalar(node, value, "the condition")
        if cond.shape:
            return self.error(
                node,
                "the truth value of an array is ambiguous",
                "use np.where(cond, a, b) to choose element-wise, or reduce the "
                "condition with np.any(...) / np.all(...)",
            )
        return B.truth(cond)

    def _expr_Subscript(
        self, node: ast.Subscript, values: list[Value], test: bool
    ) -> Value:
        base, index = values
        run_time = (
            isinstance(index, Node)
            and index.op != "const"
            and not index.shape
            and index.dtype == "int64"
        )
        if run_time and isinstance(base, tuple) and base:
            if all(isinstance(b, Node) and not b.shape for b in base):
                base = AR.array(base)  # COEFFS[i] in a loop: an array of them
        if isinstance(base, Node) and base.shape:
            if isinstance(node.slice, ast.List):
                index = (index,)  # x[[0, 2]]: a list of positions, not x[0, 2]
            items = list(index) if isinstance(index, tuple) else [index]
            selection = masks.select(base, items) or masks.window(base, items)
            if selection is not None:  # x[x > 0], or x[:i] in a loop
                return selection
            value = AR.index(base, index)
            if value.op == "take" and (
                self.frame.live is not B.TRUE or id(node) in self.conditional
            ):
                # inside a branch: both branches run, the condition may be what
                # keeps this index in bounds
                spec = A.guarded(value.attrs[0])
                value = A.take(value.args[0], spec, value.args[1:])
            return value
        if isinstance(base, Node):
            return self.error(
                node,
                "a number cannot be indexed",
                "index the array before reducing it, or drop the index",
            )
        if isinstance(base, Static) and isinstance(base.obj, dict):
            return self._dict_item(node, base.obj, index)
        if not isinstance(base, tuple):
            kind = type(base.obj).__name__ if isinstance(base, Static) else "value"
            return self.error(
                node,
                f"a `{kind}` cannot be indexed in differentiated code",
                "index arrays, tuples, or lists of numbers",
            )
        if isinstance(index, Static) and isinstance(index.obj, SliceValue):
            # COEFFS[1:]: a slice of a tuple with constant bounds is a tuple
            sl = AR.constant_slice(index.obj)
            if sl is None:
                return self.error(
                    node.slice,
                    "a slice of a tuple or list needs constant bounds",
                    "write the bounds as numbers (COEFFS[1:3]), or make it an array",
                )
            if sl.step == 0:
                return self.error(
                    node.slice, "slice step cannot be zero", "use a nonzero step"
                )
            return base[sl]
        if not (
            isinstance(index, Node) and index.op == "const" and index.dtype == "int64"
        ):
            return self.error(
                node.slice,
                "a tuple of arrays or tuples needs a constant integer index",
                "index it with a constant, or make the items numbers (an index "
                "computed at run time reads an array of them)",
            )
        i = index.value
        if not -len(base) <= i < len(base):
            return self.error(
                node.slice,
                f"tuple index {i} is out of range for a tuple of {len(base)}",
            )
        return base[i]

    def _expr_Dict(self, node: ast.Dict, values: list[Value], test: bool) -> Value:
        """``{"loss": l, "acc": a}``: a mapping known while tracing (its keys
        constants), of values; an aux output, a dict of parameters."""
        if not values and node.keys:
            return self.error(
                node, "`**` in a dict display is not supported", "list the items"
            )
        n = len(node.keys)
        keys = [_python_object(k) for k in values[:n]]
        bad = next(
            (k for k, key in zip(node.keys, keys, strict=True) if key is _UNKNOWN),
            None,
        )
        if bad is not None:
            return self.error(
                bad,
                "a dict key must be known while tracing (a constant, a static "
                "argument, an unrolled loop's index)",
                "use string or integer constants as keys",
            )
        return Static(dict(zip(keys, values[n:], strict=True)))

    def _make_transform(
        self, node: ast.Call, obj: Any, args: list[Value], kwargs: dict[str, Value]
    ) -> Value:
        """``symdiff.grad(inner)`` written inside the function: the transform of
        a function known while tracing, made now (then called: its graph joins
        this one, as a transform made at module level does)."""
        name = ast.unparse(node.func)
        values = [_python_object(v) for v in [*args, *kwargs.values()]]
        if _UNKNOWN in values:
            return self.error(
                node,
                f"`{name}` inside a differentiated function takes a function and "
                "options known while tracing",
                "make the transform at module level, or pass constants",
            )
        if any(isinstance(v, LocalFunction) for v in values):
            return self.error(
                node,
                f"`{name}` of a function defined inside the differentiated one is "
                "not supported",
                "define that function at module level (its transform may be made "
                "inside)",
            )
        given = values[: len(args)]
        options = dict(zip(kwargs, values[len(args) :], strict=True))
        try:
            made = obj(*given, **options)
        except SymdiffError as exc:
            return self.error(node, f"`{name}`: {str(exc).splitlines()[0]}")
        except TypeError as exc:
            return self.error(node, f"bad call of `{name}`: {exc}")
        return Static(made)

    def _expr_JoinedStr(
        self, node: ast.JoinedStr, values: list[Value], test: bool
    ) -> Value:
        """``f"W{i}"`` of values known while tracing (an unrolled loop's index,
        a static argument): the string, a dict key say."""
        parts = iter(values)
        text = []
        for piece in node.values:
            if isinstance(piece, ast.Constant):
                text.append(str(piece.value))
                continue
            assert isinstance(piece, ast.FormattedValue)
            value = _python_object(next(parts))
            spec = piece.format_spec
            if value is _UNKNOWN or not (
                spec is None or all(isinstance(v, ast.Constant) for v in spec.values)  # type: ignore[attr-defined]
            ):
                return self.error(
                    piece,
                    "an f-string of a value known only when the kernel runs",
                    "strings are for keys and messages: build them from constants, "
                    "static arguments and unrolled loop indices",
                )
            if piece.conversion == ord("r"):
                value = repr(value)
            elif piece.conversion == ord("s"):
                value = str(value)
            elif piece.conversion == ord("a"):
                value = ascii(value)
            fmt = "".join(str(v.value) for v in spec.values) if spec else ""  # type: ignore[attr-defined]
            text.append(format(value, fmt))
        return Static("".join(text))

    def _expr_Lambda(self, node: ast.Lambda, values: list[Value], test: bool) -> Value:
        return self.local_function(node, "<lambda>", values)

    def _expr_NamedExpr(
        self, node: ast.NamedExpr, values: list[Value], test: bool
    ) -> Value:
        self.assign(node.target, values[0])
        return values[0]

    def _build(
        self,
        node: ast.Call,
        name: str,
        build: Callable[..., Value],
        args: list[Value],
        kwargs: dict[str, Value],
    ) -> Value:
        """A NumPy function or array method through its builder; a bad call
        names NumPy's function, not the builder (``_reduction.<locals>.build()``)."""
        try:
            return build(*args, **kwargs)
        except TypeError as exc:
            message = re.sub(r"^[\w.<>]+\(\)", f"{name}()", str(exc))
            return self.error(node, f"bad call of `{name}`: {message}")

    def _expr_Call(self, node: ast.Call, values: list[Value], test: bool) -> Value:
        callee, args = values[0], values[1 : 1 + len(node.args)]
        kwargs: dict[str, Value] = {}
        for k, v in zip(node.keywords, values[1 + len(node.args) :], strict=True):
            if k.arg is not None:
                kwargs[k.arg] = v
            elif isinstance(v, Static) and isinstance(v.obj, dict):
                # f(x, **opts) of a dict made in the function: its items
                if not all(isinstance(key, str) for key in v.obj):
                    return self.error(k.value, "`**` needs a dict with string keys")
                kwargs.update(v.obj)
            else:
                return self.error(
                    k.value,
                    f"`**{ast.unparse(k.value)}` must unpack a dict known while "
                    "tracing (made in the function, or a static argument)",
                    "pass the keyword arguments one by one: f(x, a=a, b=b)",
                )
        name = ast.unparse(node.func)
        if not isinstance(callee, Static):
            return self.error(
                node.func,
                f"`{name}` is not a function",
                "call a function: a helper you defined, a math or numpy function",
            )
        obj = getattr(callee.obj, "__symdiff_function__", callee.obj)
        if obj is functools.partial and args and isinstance(args[0], Static):
            # g = partial(f, a=x) in the function: the values it binds, traced
            return Static(TracedPartial(args[0].obj, tuple(args[1:]), kwargs))
        given = (args, kwargs)  # as written at the call (checked for escapes)
        while isinstance(obj, (functools.partial, TracedPartial)):
            # a partial: its function, with the arguments it binds (a module-level
            # one's, `PF = partial(f, a=2.0)`, as the constants they are)
            traced = isinstance(obj, TracedPartial)
            bound = obj.args if traced else [global_value(a) for a in obj.args]
            keywords = (
                obj.keywords
                if traced
                else {k: global_value(v) for k, v in obj.keywords.items()}
            )
            args = [*bound, *args]
            kwargs = {**keywords, **kwargs}
            obj = obj.func
        if isinstance(obj, LocalFunction):
            return self.inline_local(node, obj, args, kwargs)
        if hasattr(obj, "__symdiff_inline__"):  # slope = symdiff.grad(f)
            return self.inline_transform(node, obj, args, kwargs)
        if getattr(obj, "__module__", None) == "symdiff.api":
            return self._make_transform(node, obj, args, kwargs)
        inlined = isinstance(obj, types.FunctionType) or _python_function(obj)
        if not inlined or isinstance(obj, custom_vjp):
            # only the user's own helpers may take a local function (and call it)
            for arg, value in zip(
                [*node.args, *(k.value for k in node.keywords)],
                [*given[0], *given[1].values()],
                strict=True,
            ):
                if self.escaping(arg, value, f"passed to `{name}`"):
                    return self.poison
        consumed = self.iterable_call(node, name, obj, args, kwargs)
        if consumed is not None:  # sum(... for ...), max of a tuple
            return consumed
        mapping = getattr(obj, "__self__", None)
        if isinstance(mapping, dict) and name.rsplit(".", 1)[-1] in _DICT_METHODS:
            return self._dict_method(node, mapping, obj.__name__, args, kwargs)
        if isinstance(obj, BoundMethod):
            return self._build(
                node, name, METHODS[obj.name], [obj.array, *args], kwargs
            )
        if obj is np.stack and len(args) == 1 and not kwargs:
            (rows,) = args
            if isinstance(rows, Node) and rows.shape:
                # the rows of an array (a list grown in a loop node) stacked
                # again: the array itself, as NumPy gives
                return rows
        if obj in (np.finfo, np.iinfo) and all(isinstance(a, Static) for a in args):
            # np.finfo(float).eps: the limits of a type, constants
            try:
                return Static(obj(*(a.obj for a in args)))  # type: ignore[union-attr]
            except (TypeError, ValueError) as exc:
                return self.error(node, f"`{name}`: {exc}")
        numpy_fn = _array_function(obj)
        if numpy_fn is not None:
            if obj in _RAISING_LINALG and args:
                args = [self._safe_matrix(args[0]), *args[1:]]
            return self._build(node, name, numpy_fn[1], args, kwargs)
        if obj is builtins.str and len(args) == 1 and not kwargs:
            known = _python_object(args[0])
            if known is not _UNKNOWN:
                return Static(str(known))  # str(i) of a constant: a key
            return self.error(
                node,
                "`str` of a value known only when the kernel runs",
                "strings are for keys and messages: build them from constants",
            )
        if obj is builtins.len:
            if len(args) != 1 or kwargs:
                return self.error(node, "`len` takes one argument")
            (arg,) = args
            if isinstance(arg, tuple):
                return constant(len(arg))
            if isinstance(arg, Node) and arg.shape:
                return A.dim(arg.shape[0])
            if isinstance(arg, Static) and isinstance(arg.obj, (str, dict)):
                return constant(len(arg.obj))  # len(mode), len(params)
            return self.error(node, "`len` of a number is not defined")
        entry = lookup(obj)
        if entry is not None:
            if kwargs or None in kwargs:
                hint = "pass the arguments by position"
                if obj in (builtins.max, builtins.min) and "key" in kwargs:
                    sign = ">" if obj is builtins.max else "<"
                    hint = (
                        f"compare the keys yourself: `a if abs(a) {sign}= abs(b) "
                        "else b` (a key function is not supported)"
                    )
                elif obj in (builtins.max, builtins.min) and "default" in kwargs:
                    hint = "give it at least one item, or test the count first"
                return self.error(
                    node, f"`{name}` takes no keyword arguments here", hint
                )
            n = len(args)
            if obj is builtins.pow and n == 3:
                known = [_python_object(a) for a in args]
                if all(type(k) is int for k in known):  # pow(7, 3, 5): a constant
                    return constant(pow(*known))
                return self.error(
                    node,
                    "three-argument `pow` (a power modulo a number) of values known "
                    "only when the kernel runs is not supported",
                    "write `(a ** b) % m` (for small integers), or compute it "
                    "before the call",
                )
            if n < entry.min_args or (
                entry.max_args is not None and n > entry.max_args
            ):
                want = (
                    str(entry.min_args)
                    if entry.min_args == entry.max_args
                    else f"at least {entry.min_args}"
                )
                return self.error(
                    node,
                    f"`{name}` takes {want} argument"
                    f"{'s' if want != '1' else ''}, got {n}",
                    f"call it as Python's `{name}` is called",
                )
            if obj is builtins.float and n == 1 and isinstance(args[0], Static):
                text = args[0].obj
                try:  # float("inf"), float("-inf"), float("nan"), float("1e-8")
                    return constant(float(text))  # type: ignore[arg-type]
                except (TypeError, ValueError):
                    return self.error(
                        node,
                        f"float() cannot convert {text!r} to a number",
                        'write a number\'s text: float("inf"), float("1e-8")',
                    )
            # (a partial's bound arguments have no place in the call's text)
            places = node.args if len(node.args) == len(args) else [node] * len(args)
            nodes = [
                self.scalar(a, v, f"argument {i + 1} of `{name}`")
                for i, (a, v) in enumerate(zip(places, args, strict=True))
            ]
            if obj in (
                builtins.float,
                builtins.max,
                builtins.min,
                builtins.pow,
            ) and any(n.shape for n in nodes):
                return self.error(
                    node,
                    f"`{name}` of an array is not defined element-wise",
                    {
                        builtins.float: "use the array itself (it is float64), or "
                        "reduce it first: float(np.sum(x))",
                        builtins.max: "use np.maximum(a, b) element-wise, or np.max(x)",
                        builtins.min: "use np.minimum(a, b) element-wise, or np.min(x)",
                        builtins.pow: "use a ** b",
                    }[obj],
                )
            if any(n is self.poison for n in nodes):
                return self.poison
            return entry.build(*nodes)
        if isinstance(obj, custom_vjp):
            if id(obj) in self.in_fwd:
                return self.inline(node, obj.fun, args, kwargs)
            return self.inline_custom(node, obj, args, kwargs)
        if isinstance(obj, types.FunctionType):
            return self.inline(node, obj, args, kwargs)
        if isinstance(obj, types.MethodType) and isinstance(
            obj.__func__, types.FunctionType
        ):  # self.helper(x): the function, with its object first
            return self.inline(
                node, obj.__func__, [Static(obj.__self__), *args], kwargs
            )
        python = _python_function(obj)
        if python is not None:
            # the user's own helper under @numba.njit, @functools.lru_cache, ...:
            # its Python source, inlined like any helper
            return self.inline(node, python, args, kwargs)
        if isinstance(obj, type) and is_namedtuple_class(obj):
            # P(a, b) of a namedtuple class: its fields, the values given (a
            # default is the constant it is)
            try:
                made = obj(*args, **kwargs)
            except TypeError as exc:
                return self.error(node, f"bad call of `{name}`: {exc}")
            return obj(*(global_value(v) if _is_python(v) else v for v in made))  # type: ignore[no-any-return]
        call = next(
            (vars(c)["__call__"] for c in type(obj).__mro__ if "__call__" in vars(c)),
            None,
        )
        if (
            not isinstance(obj, type)
            and _instance(obj)
            and isinstance(call, types.FunctionType)
        ):
            # a callable object of the user's class (`SQ = Sq(3.0)`): its
            # `__call__`, with the object first, as a method is called
            return self.inline(node, call, [Static(obj), *args], kwargs)
        return self.error(node.func, f"unknown function `{name}`", _unknown_help(obj))
