"""Symbolic shapes: kernels are specialised per rank, not per size.

A dimension is an ``int`` (known when tracing: a literal ``np.zeros(3)``, an axis the
caller passed with length 1) or a :class:`Dim`, a polynomial with integer
coefficients over *atoms*: the length of a parameter's axis (``X.shape[1]``), the
value of an integer parameter, or an opaque ceiling division (the length of a step
slice).  Polynomials are kept in a canonical form, so ``n - 1`` built twice is equal
and hash-consing shares nodes of equal shapes.

NumPy's broadcasting needs to know whether two lengths are equal.  Lengths that are
``1`` are known from the signature; two different symbolic lengths are *assumed*
equal, and the assumption is recorded (:func:`unify`) with the user's line, to be
checked when the kernel runs.  A mismatch is then reported as NumPy would, at that
line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

# An atom: ("shape", param_index, axis) | ("value", param_index) | ("cdiv", Dim, k)
# | ("div", Dim, Dim) | ("mod", Dim, Dim): Python's ``%`` (a negative index wrapped)
# | ("node", Node): a run-time integer (a loop's trip count)
# | ("amax", param_index) | ("amin", param_index): the largest (smallest) element of
# an int array argument, -1 (0) when it is empty; only in checks (index arrays)
Atom = tuple[Any, ...]
Monomial = tuple[Atom, ...]


_DIVISIONS = {"cdiv": 2, "div": 3, "mod": 5}


def _atom_key(atom: Atom) -> tuple[Any, ...]:
    if atom[0] == "node":  # a run-time count (a loop's tape rows)
        return (4, "")
    if atom[0] in _DIVISIONS:
        return (_DIVISIONS[atom[0]], repr(atom[1]), repr(atom[2]))
    # the kind second: a parameter's value and its array's extremes never tie
    return (0 if atom[0] == "shape" else 1, atom[0], *atom[1:])


class Dim:
    """A symbolic length: ``sum(coeff * prod(atoms))`` in canonical order."""

    __slots__ = ("_hash", "terms")

    terms: tuple[tuple[Monomial, int], ...]
    _hash: int

    def __init__(self, terms: Mapping[Monomial, int]):
        items = [(m, c) for m, c in terms.items() if c != 0]
        items.sort(key=lambda mc: (len(mc[0]) == 0, [_atom_key(a) for a in mc[0]]))
        object.__setattr__(self, "terms", tuple(items))
        object.__setattr__(self, "_hash", hash(self.terms))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Dim is immutable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Dim) and other.terms == self.terms

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"Dim({format_dim(self)})"


Length = int | Dim
Shape = tuple[Length, ...]


def _poly(d: Length) -> dict[Monomial, int]:
    if isinstance(d, int):
        return {(): d} if d else {}
    return dict(d.terms)


def _norm(terms: dict[Monomial, int]) -> Length:
    terms = {m: c for m, c in terms.items() if c != 0}
    if not terms:
        return 0
    if set(terms) == {()}:
        return terms[()]
    return Dim(terms)


def atom(*parts: Any) -> Dim:
    """The dimension that is the single atom ``parts``."""
    return Dim({(tuple(parts),): 1})


def add(a: Length, b: Length) -> Length:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    terms = _poly(a)
    for m, c in _poly(b).items():
        terms[m] = terms.get(m, 0) + c
    return _norm(terms)


def neg(a: Length) -> Length:
    return mul(-1, a)


def sub(a: Length, b: Length) -> Length:
    return add(a, neg(b))


def mul(a: Length, b: Length) -> Length:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    terms: dict[Monomial, int] = {}
    for ma, ca in _poly(a).items():
        for mb, cb in _poly(b).items():
            m = tuple(sorted(ma + mb, key=_atom_key))
            terms[m] = terms.get(m, 0) + ca * cb
    return _norm(terms)


def cdiv(a: Length, k: int) -> Length:
    """``ceil(a / k)`` for a positive ``k``."""
    if k == 1:
        return a
    if isinstance(a, int):
        return -(-a // k)
    return atom("cdiv", a, k)


def floordiv(a: Length, b: Length) -> Length:
    """``a // b`` (used where the division is exact, checked at run time)."""
    if b == 1:
        return a
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    return atom("div", a, b)


def mod(a: Length, b: Length) -> Length:
    """``a % b`` as Python computes it (for ``-b <= a < b``: ``a`` wrapped into
    ``0 .. b - 1``, as a negative index is)."""
    if isinstance(a, int) and isinstance(b, int):
        return a % b
    return atom("mod", a, b)


def product(dims: Sequence[Length]) -> Length:
    result: Length = 1
    for d in dims:
        result = mul(result, d)
    return result


def format_dim(d: Length, names: Callable[[int], str] | None = None) -> str:
    """``d`` as a Python expression; ``names(i)`` is the name of parameter ``i``."""
    if isinstance(d, int):
        return str(d)

    if names is None and _namers:
        names = _namers[-1]

    def name(i: int) -> str:
        return names(i) if names is not None else f"p{i}"

    def paren(text: str) -> str:
        return f"({text})" if " " in text else text

    def atom_text(a: Atom) -> str:
        if a[0] == "shape":
            return f"{name(a[1])}.shape[{a[2]}]"
        if a[0] in ("value", "node"):
            return name(a[1])
        if a[0] in ("amax", "amin"):
            array, empty = name(a[1]), -1 if a[0] == "amax" else 0
            return f"(np.{a[0][1:]}({array}) if {array}.size else {empty})"
        inner = paren(format_dim(a[1], names))
        if a[0] in ("div", "mod"):
            op = "//" if a[0] == "div" else "%"
            return f"{inner} {op} {paren(format_dim(a[2], names))}"
        return f"-(-{inner} // {a[2]})"

    out = ""
    for m, c in d.terms:
        factors = [atom_text(a) for a in m]
        if len(m) > 1 or abs(c) != 1:
            factors = [paren(f) for f in factors]
        body = " * ".join(factors)
        mag = abs(c)
        if not m:
            term = str(mag)
        elif mag == 1:
            term = body
        else:
            term = f"{mag} * {body}"
        if not out:
            out = term if c > 0 else f"-{term}"
        else:
            out += f" + {term}" if c > 0 else f" - {term}"
    return out


def format_shape(shape: Shape, names: Callable[[int], str] | None = None) -> str:
    """A shape as a Python tuple expression: ``(X.shape[0], 3)``, ``(n,)``."""
    items = [format_dim(d, names) for d in shape]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


# -- assumptions about equal lengths ---------------------------------------------------
@dataclass(frozen=True)
class Check:
    """``left == right`` (``kind`` "eq") or ``left < right`` ("lt") must hold when
    the kernel runs; else ``message``."""

    left: Length
    right: Length
    message: str
    kind: str = "eq"
    #: conditions (``(op, a, b)``: ``a op b``, op one of lt le gt ge eq ne) under
    #: which alone the check applies: the run-time ``if`` around the code that
    #: assumes it, where that ``if`` tests lengths (``if k > 0: x[:-k]``)
    when: tuple[tuple[str, Length, Length], ...] = ()


def require_less(a: Length, b: Length, what: str, conditional: bool = False) -> None:
    """Record that ``a < b`` must hold (an index within its axis).
    ``conditional``: only where the code being lowered runs, when its ``if``s
    test lengths (for a check whose failure leaves the code memory-safe)."""
    gap = sub(b, a)
    if isinstance(gap, int):  # decided now (``n - 1 < n + 1``)
        if gap <= 0:
            raise ShapeMismatch(what)
        return
    if _collectors:
        where, text = _site[-1]() if _site else ("", "")
        message = f"{where}: {what}" if where else what
        if text:
            message += f"\n    {text}"
        when = (_paths[-1]() or ()) if conditional and _paths else ()
        _collectors[-1].append(Check(a, b, message, "lt", when))


_collectors: list[list[Check]] = []
#: The conditions under which the code being lowered runs, as lengths compared
#: (None where an ``if`` tests values): set by the lowerer.
_paths: list[Callable[[], tuple[tuple[str, Length, Length], ...] | None]] = []


@contextmanager
def paths(
    conditions: Callable[[], tuple[tuple[str, Length, Length], ...] | None],
) -> Iterator[None]:
    _paths.append(conditions)
    try:
        yield
    finally:
        _paths.pop()


#: How parameters are called in messages while tracing (set by the lowerer).
_namers: list[Callable[[int], str]] = []
#: What the frontend is lowering now (set by the lowerer): a function returning
#: ``(location, source text)`` for messages.
_site: list[Callable[[], tuple[str, str]]] = []


@contextmanager
def collecting() -> Iterator[list[Check]]:
    """Record the equalities :func:`unify` assumes while tracing."""
    checks: list[Check] = []
    _collectors.append(checks)
    try:
        yield checks
    finally:
        _collectors.pop()


@contextmanager
def naming(names: Callable[[int], str]) -> Iterator[None]:
    _namers.append(names)
    try:
        yield
    finally:
        _namers.pop()


@contextmanager
def site(where: Callable[[], tuple[str, str]]) -> Iterator[None]:
    _site.append(where)
    try:
        yield
    finally:
        _site.pop()


class ShapeMismatch(ValueError):
    """Shapes that are known not to fit (NumPy would reject them too): ``hint``
    says what to write instead."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint or (
            "make the shapes agree; x[:, None] or x[None, :] adds an axis of length "
            "1 that broadcasts"
        )


def unify(a: Length, b: Length, what: str) -> Length:
    """``a`` and ``b`` must be equal: return the length to use for both.

    Known lengths that differ raise :class:`ShapeMismatch`; symbolic ones are assumed
    equal and the assumption is recorded, with ``what`` and the user's line, for a
    check when the kernel runs.
    """
    if a == b:
        return a
    if isinstance(a, int) and isinstance(b, int):
        raise ShapeMismatch(what)
    if _collectors:
        where, text = _site[-1]() if _site else ("", "")
        message = f"{where}: {what}" if where else what
        if text:
            message += f"\n    {text}"
        _collectors[-1].append(Check(a, b, message))
    # Prefer the symbolic side that is a plain parameter length (reads best).
    return b if isinstance(a, int) else a


def broadcast(shapes: Sequence[Shape], what: Callable[[], str] | None = None) -> Shape:
    """NumPy's broadcast of ``shapes`` (right-aligned, 1 stretches)."""
    if len(shapes) == 1:
        return shapes[0]
    rank = max(len(s) for s in shapes)
    out: list[Length] = []
    for axis in range(rank):
        dim: Length = 1
        for s in shapes:
            k = axis - (rank - len(s))
            if k < 0:
                continue
            d = s[k]
            if d == 1:
                continue
            if dim == 1:
                dim = d
            elif d != dim:
                describe = what() if what is not None else ""
                message = (
                    "operands could not be broadcast together with shapes "
                    + " ".join(format_shape(s) for s in shapes)
                    + (f" ({describe})" if describe else "")
                )
                dim = unify(dim, d, message)
        out.append(dim)
    return tuple(out)
