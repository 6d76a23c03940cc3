"""Forward mode: tangents propagated in topological order from the same table."""

from __future__ import annotations

from collections.abc import Sequence

from symdiff.ad.loops import loop_jvp
from symdiff.errors import TranslationError
from symdiff.ir.arrays import unbroadcast
from symdiff.ir.build import ZERO, add, broadcast_to, mul
from symdiff.ir.node import Node, topological
from symdiff.rules import partials
from symdiff.rules.arrays import JVPS


def jvp_graph(
    outputs: Sequence[Node], tangents: Sequence[tuple[Node, Node]]
) -> tuple[tuple[Node, ...], dict[Node, Node]]:
    """Tangents of ``outputs`` given ``(param, param_dot)`` pairs.

    Returns the output tangents and the whole tangent table (for naming).
    Inactive paths carry the symbolic zero (absent from the table), so they cost
    nothing.
    """
    dot: dict[Node, Node] = dict(tangents)
    loop_dots: dict[Node, dict[int, Node]] = {}
    for node in topological(outputs):
        if node in dot or not node.args:
            continue
        if node.op == "item":
            found = loop_dots.get(node.args[0], {}).get(node.attrs[0])
            if found is not None:
                dot[node] = found
            continue
        arg_dots = [dot.get(a) for a in node.args]
        if all(d is None for d in arg_dots):
            continue
        if node.op == "loop":
            loop_dots[node] = loop_jvp(node, arg_dots)
            continue
        if node.op == "custom" and node.attrs[1] is not None:
            rule = node.attrs[1]  # a bwd rule not linear in g: no partials
            raise TranslationError(rule.name, [rule.why])
        jvp = JVPS.get(node.op)
        total: Node | None = None
        if jvp is not None:
            total = jvp(node, arg_dots)
        else:
            for arg_dot, partial in zip(arg_dots, partials(node), strict=True):
                if arg_dot is None or partial is None:
                    continue
                term = mul(partial, arg_dot)
                if node.op == "custom" and term.shape != node.shape:
                    # a user rule's partial for an array input of a number-valued
                    # function: the directional derivative sums over its elements
                    term = unbroadcast(term, node.shape)
                total = term if total is None else add(total, term)
        if total is not None:
            # a tangent has its value's shape (an operand may have been broadcast)
            dot[node] = broadcast_to(total, node.shape)
    zeros = (broadcast_to(ZERO, out.shape) for out in outputs)
    return tuple(dot.get(out, z) for out, z in zip(outputs, zeros, strict=True)), dot
