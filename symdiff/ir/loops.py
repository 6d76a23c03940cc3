"""Loops in the IR: a ``loop`` node runs a body subgraph a number of times.

A :class:`Body` is a closed graph.  Its inputs are ``var`` nodes: the iteration
number ``k`` (0, 1, ... in the order iterations run their data; a backward loop
visits them from the last down), the *carried* values (the loop's state: their
first values are operands of the loop node, the body computes the next ones) and
the *captured* values (read-only operands: arguments, constants computed before the
loop, arrays the loop reads with ``x[i]``).  The loop node's operands are
``(count, *init, *captured)``; its results are ``item`` nodes: the final carried
values, then the number of iterations run.

A ``while`` loop has a *test* (on the carried values, before each iteration) and no
bound; ``break`` adds a *stop* flag (after each iteration).  Everything else about
control flow inside a body is if-converted, as at top level.

Bodies never look outside themselves, so every pass treats one as a function: the
reverse pass differentiates it with the same table (``ad/loops.py``), the code
generator prints it inside a ``for`` statement (``backend/loops.py``).  Nesting of
bodies is bounded by the user's own nesting of loops; graphs inside a body are
walked iteratively like any other.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from symdiff.ir.build import apply
from symdiff.ir.node import Node, constant, make, topological
from symdiff.ir.ops import ARRAY_OPS
from symdiff.ir.shapes import Dim, Length, Shape

_UIDS = itertools.count()


def var(name: str, shape: Shape = (), dtype: str = "float64") -> Node:
    """A fresh body input named ``name`` (the name is a hint for generated code)."""
    return make("var", (), (next(_UIDS), name), shape=shape, dtype=dtype)


@dataclass(frozen=True)
class Body:
    """What one iteration computes.

    Attributes
    ----------
    index : Node
        The iteration number, an int64 ``var``.
    carried : tuple of Node
        ``var`` nodes: the state at the start of an iteration.
    captured : tuple of Node
        ``var`` nodes: values from outside the loop, the same in every iteration.
    outputs : tuple of Node
        The state at the end of an iteration, one per carried value (same shape
        and dtype).
    test : Node or None
        A ``while`` loop's condition, computed from the state before an
        iteration: the loop ends when it is false.
    stop : Node or None
        Computed by the iteration (``break``): the loop ends after an iteration
        where it is true.
    bounded : bool
        Whether the count operand bounds the iterations (False for ``while``).
    reverse : bool
        Whether the iterations run from ``count - 1`` down to 0 (backward loops).
    label : str
        What the loop is, for comments in generated code
        (``for _ in range(1000)  (pendulum.py:12)``).
    extends : tuple or None
        ``(base, operands, results)`` when this loop computes everything a loop
        with body ``base`` computes, and more (a tangent or a tape): where the
        base loop's operands are among this loop's operands, and its results among
        this loop's results.  :func:`merge_extensions` then runs one loop, not two.
    tapes : tuple of int
        Which carried values are tapes (rows written by reverse mode, or saved
        states for checkpointing): what :func:`tape_bytes` counts.
    accumulators : tuple of int
        Which carried values only ever have something added to them (a backward
        loop's adjoints of captured values): such a loop may start from an
        enclosing loop's accumulator instead of from zero.
    """

    index: Node
    carried: tuple[Node, ...]
    captured: tuple[Node, ...]
    outputs: tuple[Node, ...]
    test: Node | None = None
    stop: Node | None = None
    bounded: bool = True
    reverse: bool = False
    label: str = ""
    extends: tuple[Body, tuple[int, ...], tuple[int, ...]] | None = None
    tapes: tuple[int, ...] = ()
    accumulators: tuple[int, ...] = ()

    def roots(self) -> list[Node]:
        """Every node the body computes a value for."""
        extra = [n for n in (self.test, self.stop) if n is not None]
        return [*self.outputs, *extra]

    def nodes(self) -> list[Node]:
        return topological(self.roots())


def loop(
    count: Node, init: Sequence[Node], captured: Sequence[Node], body: Body
) -> Node:
    """The loop node running ``body`` from ``init`` (``count`` times at most)."""
    if len(init) != len(body.carried) or len(captured) != len(body.captured):
        raise ValueError("a loop's operands must match its body's inputs")
    for v, out in zip(body.carried, body.outputs, strict=True):
        if v.shape != out.shape or v.dtype != out.dtype:
            raise ValueError(
                f"loop state {v.attrs[1]!r} changes from {v.dtype}{list(v.shape)} "
                f"to {out.dtype}{list(out.shape)}"
            )
    return make("loop", (count, *init, *captured), (body,), shape=(), dtype="float64")


def body_of(node: Node) -> Body:
    body: Body = node.attrs[0]
    return body


def operands(node: Node) -> tuple[Node, list[Node], list[Node]]:
    """``(count, init, captured)`` of a loop node."""
    body = body_of(node)
    n = len(body.carried)
    return node.args[0], list(node.args[1 : 1 + n]), list(node.args[1 + n :])


def result(node: Node, k: int) -> Node:
    """The final value of carried value ``k``."""
    v = body_of(node).carried[k]
    return make("item", (node,), (k,), shape=v.shape, dtype=v.dtype)


def results(node: Node) -> list[Node]:
    return [result(node, k) for k in range(len(body_of(node).carried))]


def trips(node: Node) -> Node:
    """How many iterations ran (the count, or fewer after ``break``/``while``)."""
    body = body_of(node)
    if body.bounded and body.test is None and body.stop is None:
        return node.args[0]
    k = len(body.carried)
    return make("item", (node,), (k,), shape=(), dtype="int64")


def substitute(
    roots: Sequence[Node],
    mapping: Mapping[Node, Node],
    memo: dict[Node, Node] | None = None,
    fold: bool = False,
) -> list[Node]:
    """``roots`` with every node of ``mapping`` replaced by its value (same shape
    and dtype), rebuilding what lies between; iterative.  ``memo``, if given,
    receives every old node -> new node.  With ``fold``, rebuilt ops fold and
    simplify as when first built (``max(min(10.0, 1.0), -1.0)`` is ``1.0``).

    A ``custom_vjp`` call's node holds graphs in its attributes (partials, or a
    rule of its cotangent); they are substituted too, so that nothing rebuilt
    still reads a replaced node."""
    memo = {} if memo is None else memo
    memo.update(mapping)
    # lengths that are run-time counts (a tape's rows) name a node: walk those
    # first, so that a shape follows its count when the count is rebuilt
    counts = [a[1] for n in topological(roots) for a in _count_atoms(n.shape)]
    for n in topological([*counts, *roots], stop=mapping.keys()):
        if n in memo:
            continue
        args = tuple(memo.get(a, a) for a in n.args)
        shape = _remap(n.shape, memo)
        attrs = _custom_attrs(n, memo, fold) if n.op == "custom" else n.attrs
        same = all(x is y for x, y in zip(args, n.args, strict=True))
        if shape == n.shape and same and attrs is n.attrs:
            memo[n] = n
        elif fold and not attrs and not n.shape and n.op not in ARRAY_OPS:
            memo[n] = apply(n.op, *args)  # an element-wise op (a dot is not one)
        else:
            memo[n] = make(n.op, args, attrs, shape=shape, dtype=n.dtype)
    return [memo.get(r, r) for r in roots]


def _custom_attrs(node: Node, memo: dict[Node, Node], fold: bool) -> tuple[Any, ...]:
    """A custom node's attributes with their graphs substituted (the same
    object when nothing in them changes).  Recursive only in the nesting of
    custom rules inside custom rules, as the user wrote them."""
    partials, rule = node.attrs
    graphs = [p for p in partials if p is not None]
    if rule is not None:
        graphs += [c for c in rule.cotangents if c is not None]
    rebuilt = substitute(graphs, {}, memo, fold)
    if all(x is y for x, y in zip(rebuilt, graphs, strict=True)):
        return node.attrs
    new = iter(rebuilt)
    new_partials = tuple(None if p is None else next(new) for p in partials)
    if rule is not None:
        cts = tuple(None if c is None else next(new) for c in rule.cotangents)
        rule = dataclasses.replace(rule, cotangents=cts)
    return (new_partials, rule)


def _count_atoms(shape: Shape) -> list[tuple[Any, ...]]:
    return [
        a
        for d in shape
        if isinstance(d, Dim)
        for m, _ in d.terms
        for a in m
        if a[0] == "node"
    ]


def _remap(shape: Shape, memo: Mapping[Node, Node]) -> Shape:
    """``shape`` with each run-time count node replaced as ``memo`` says."""
    if not _count_atoms(shape):
        return shape
    out: list[Length] = []
    for d in shape:
        if not isinstance(d, Dim):
            out.append(d)
            continue
        terms: dict[tuple[tuple[Any, ...], ...], int] = {}
        for m, c in d.terms:
            key = tuple(
                ("node", memo.get(a[1], a[1])) if a[0] == "node" else a for a in m
            )
            terms[key] = terms.get(key, 0) + c
        out.append(Dim(terms))
    return tuple(out)


def merge_extensions(
    roots: Sequence[Node], hints: dict[Node, str] | None = None
) -> list[Node]:
    """Read the results of a loop from a loop that extends it (its tangent or
    taping version) when both are in the graph, so that one loop runs.
    ``hints`` (names for generated code) follow the nodes that are rebuilt."""
    roots = list(roots)
    for _ in range(64):  # one round per level of extension (tangent of a tape...)
        order = topological(roots)
        loops: dict[Body, list[Node]] = {}
        items: dict[Node, list[Node]] = {}
        for n in order:
            if n.op == "loop":
                loops.setdefault(body_of(n), []).append(n)
            elif n.op == "item":
                items.setdefault(n.args[0], []).append(n)
        mapping: dict[Node, Node] = {}
        for group in list(loops.values()):
            for big in group:
                ext = body_of(big).extends
                if ext is None:
                    continue
                base, where, outs = ext
                for small in loops.get(base, []):
                    if not all(
                        small.args[i] is big.args[j] for i, j in enumerate(where)
                    ):
                        continue
                    for it in items.get(small, []):
                        k = it.attrs[0]
                        mapping[it] = make(
                            "item",
                            (big,),
                            (outs[k],),
                            shape=it.shape,
                            dtype=it.dtype,
                        )
        if not mapping:
            return roots
        memo: dict[Node, Node] = {}
        roots = substitute(roots, mapping, memo)
        if hints is not None:
            for old, new in memo.items():
                if old is not new and old in hints:
                    hints.setdefault(new, hints[old])
    return roots


def zeros(shape: Shape, dtype: str) -> Node:
    """An array of zeros (a loop's initial tape or adjoint accumulator)."""
    from symdiff.ir.build import broadcast_to

    zero = {"float64": 0.0, "int64": 0, "bool": False}[dtype]
    return broadcast_to(constant(zero), shape) if shape else constant(zero)


def tape_arrays(roots: Sequence[Node]) -> list[Node]:
    """The initial value of every tape (its shape is the tape's) in the graph of
    ``roots``, in loops nested at any depth."""
    out: list[Node] = []
    stack = [list(roots)]
    while stack:
        for n in topological(stack.pop()):
            if n.op == "loop":
                body = body_of(n)
                out.extend(n.args[1 + k] for k in body.tapes)
                stack.append(body.roots())
    return out
