"""Scheduling: the DAG becomes an ordered list of SSA statements.

A node gets its own statement (a named variable) when it is used more than once,
when the user named it, when it is an output, or when inlining it would make its
consumer's line long; anything else is inlined into its one consumer.  Names come
from the user's variables (``v``, ``v_1`` for a rebinding), adjoints are ``v_bar``,
and the rest are numbered temporaries ``t0, t1, ...`` in statement order, so the same
graph always prints the same text.
"""

from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from symdiff.ir.node import Node, topological, use_counts
from symdiff.ir.ops import ARITH, OPS, REPEATS_OPERANDS, TRANSCENDENTAL

#: Largest number of ops inlined into one expression.
MAX_INLINE = 3

#: Names generated code never binds: keywords, builtins and the modules it imports.
RESERVED = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | {"math", "np"}


@dataclass(frozen=True)
class Schedule:
    """Statements in execution order, and the name of every materialised node."""

    params: tuple[Node, ...]
    statements: tuple[tuple[str, Node], ...]
    names: Mapping[Node, str]
    nodes: tuple[Node, ...]

    def op_counts(self) -> dict[str, int]:
        """Ops by kind over every computed node; ``total`` = arith + transcendental.

        A loop's body counts once (the ops of one iteration, at every depth)."""
        counts = {
            "arith": 0,
            "transcendental": 0,
            "compare": 0,
            "logic": 0,
            "select": 0,
        }
        nodes = list(self.nodes)
        bodies = [n.attrs[0] for n in nodes if n.op == "loop"]
        while bodies:
            body = bodies.pop()
            inner = body.nodes()
            nodes.extend(inner)
            bodies.extend(n.attrs[0] for n in inner if n.op == "loop")
        for node in nodes:
            spec = OPS[node.op]
            if spec.cost is not None:
                counts[ARITH] += spec.cost[0]
                counts[TRANSCENDENTAL] += spec.cost[1]
            elif spec.kind in counts:
                counts[spec.kind] += 1
        counts["total"] = counts[ARITH] + counts[TRANSCENDENTAL]
        return counts


class _Namer:
    """Fresh names: ``hint``, then ``hint_1``, ``hint_2``...

    ``separator="__"`` (kernels compiled with ``parallel=True``): ``hint__1``.
    Numba's SSA form names a variable assigned twice ``L.1``, ``L.2``, and its
    parallel lowering makes those ``L_1``, ``L_2`` (doubling underscores in
    every other name), which must not be names of ours.
    """

    def __init__(self, separator: str = "_") -> None:
        self.taken: set[str] = set(RESERVED)
        self.next_suffix: dict[str, int] = {}
        self.separator = separator

    def fresh(self, hint: str | None) -> str:
        """``hint``, or ``hint_1``, ``hint_2``... (``t0``, ``t1``... with no hint)."""
        if hint is not None and self.separator == "__":
            # no `__` of ours but the separator's: `items__dot` (the tangent of an
            # `items_`) would be what the lowering makes of an `items_dot`
            hint = re.sub("_{2,}", "_", hint).rstrip("_") or "v"
        stem = hint or "t"
        k = self.next_suffix.get(stem, 0 if hint is None else 1)
        name = stem if hint is not None and stem not in self.taken else None
        while name is None or name in self.taken:
            name = f"t{k}" if hint is None else f"{stem}{self.separator}{k}"
            k += 1
        self.next_suffix[stem] = k
        self.taken.add(name)
        return name


def schedule(
    params: Sequence[Node],
    outputs: Sequence[Node],
    hints: Mapping[Node, str],
    output_hints: Sequence[str] = (),
    first: Sequence[Node] = (),
) -> Schedule:
    """Order the nodes reaching ``outputs`` into named statements.

    Parameters
    ----------
    params : sequence of Node
        The kernel's parameters, in order (named by their ``param`` names).
    outputs : sequence of Node
        Every node the kernel returns.
    hints : mapping
        Preferred names of nodes (user variables, ``x_bar`` for adjoints).
    output_hints : sequence of str
        Preferred names for the outputs (``value``, ``x_bar``), used when the user
        gave the node no name.
    first : sequence of Node
        Nodes whose needed ancestors are scheduled before anything else (the
        primal output, so the forward pass precedes the backward pass).
    """
    needed = set(topological(outputs))
    roots = [*first, *outputs]
    order = [
        n for n in topological(roots) if n in needed and n.op not in ("param", "const")
    ]
    counts = use_counts(topological(outputs))
    # An output that is also a forward value keeps a forward name: `dout_dr` must
    # not label the cos(theta) that the forward pass computes.
    forward = set(topological(first)) if first else set()
    output_hint = {
        node: hint
        for node, hint in zip(outputs, output_hints, strict=False)
        if node not in forward or node in first
    }
    namer = _Namer()
    names: dict[Node, str] = {}
    for p in params:
        names[p] = namer.fresh(p.attrs[1])
    size: dict[Node, int] = {}
    materialise: set[Node] = set(outputs)
    for node in order:
        if node.op in REPEATS_OPERANDS:
            materialise.update(a for a in node.args if a.op not in ("param", "const"))
        size[node] = 1 + sum(size.get(a, 0) for a in node.args if a not in materialise)
        if counts.get(node, 0) > 1 or node in hints or size[node] > MAX_INLINE:
            materialise.add(node)
    statements = []
    for node in order:
        if node in materialise and node not in names:
            hint = hints.get(node) or output_hint.get(node)
            names[node] = namer.fresh(hint)
            statements.append((names[node], node))
    return Schedule(tuple(params), tuple(statements), names, tuple(order))
