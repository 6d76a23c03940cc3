"""Reverse mode: the dynamic-programming table of adjoints (seed 001, section 13).

``adj[n]`` is d(output)/d(n).  It is computed lazily: the sweep walks the output's
ancestors in reverse topological order, but only *active* nodes (those that depend on
a requested input) get an entry, so data that no requested input reaches costs
nothing.  Each node's adjoint is the sum of its consumers' contributions
``adj[consumer] * partial``, built with the smart constructors, so the backward graph
reuses forward nodes (the adjoint of ``exp(y)`` multiplies by the node ``exp(y)``
itself) and hash-consing shares repeated subexpressions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from symdiff.ad.loops import loop_vjp
from symdiff.ir.arrays import unbroadcast
from symdiff.ir.build import (
    ONE,
    ZERO,
    add,
    broadcast_to,
    div,
    mul,
    neg,
    select,
)
from symdiff.ir.loops import substitute
from symdiff.ir.node import Node, topological
from symdiff.ir.node import is_zero as _is_zero_constant
from symdiff.rules import partials
from symdiff.rules.arrays import VJPS

#: How deep :func:`_factors` looks into products; keeps accumulation O(1) per term.
_FACTOR_DEPTH = 3


@dataclass(frozen=True)
class Adjoints:
    """Result of a reverse sweep.

    Attributes
    ----------
    grads : tuple of Node
        d(output)/d(wrt[i]) for each requested input (the constant 0 if inactive).
    table : dict
        The adjoint of every active node, for naming (``v_bar``) and inspection.
    """

    grads: tuple[Node, ...]
    table: dict[Node, Node]


def active_nodes(order: Sequence[Node], wrt: Sequence[Node]) -> set[Node]:
    """Nodes of ``order`` that depend on some node of ``wrt``."""
    active = set(wrt)
    for node in order:
        if node not in active and any(a in active for a in node.args):
            active.add(node)
    return active


def vjp_graph(seeds: Sequence[tuple[Node, Node]], wrt: Sequence[Node]) -> Adjoints:
    """Build the adjoint graph of ``sum_k <seed_k, out_k>`` with respect to ``wrt``.

    Parameters
    ----------
    seeds : sequence of (output, cotangent) pairs
        For ``grad`` of a scalar function: ``[(out, ONE)]``.
    wrt : sequence of Node
        The parameter nodes to differentiate with respect to.
    """
    outputs = [out for out, _ in seeds]
    order = topological(outputs)
    active = active_nodes(order, wrt)
    terms: dict[Node, list[Node]] = {}
    for out, seed in seeds:
        if out in active:
            terms.setdefault(out, []).append(seed)
    table: dict[Node, Node] = {}
    loop_terms: dict[Node, dict[int, Node]] = {}
    for node in reversed(order):
        if node.op == "loop":
            cotangents = loop_terms.pop(node, None)
            if cotangents:
                flags = [a in active for a in node.args]
                for arg, contribution in zip(
                    node.args, loop_vjp(node, cotangents, flags), strict=True
                ):
                    if contribution is not None and arg in active:
                        terms.setdefault(arg, []).append(contribution)
            continue
        parts = adjoint_parts(terms.pop(node, []))
        if not parts:
            continue  # no contribution, or only exact zeros: the symbolic zero
        total = parts[0]
        for part in parts[1:]:
            total = add(total, part)
        table[node] = total
        if not node.args:
            continue
        if node.op == "item":  # the loop gets all its results' adjoints at once
            loop_terms.setdefault(node.args[0], {})[node.attrs[0]] = total
            continue
        if node.op == "custom" and node.attrs[1] is not None:
            # a user's bwd rule not linear in its cotangent, evaluated at this one
            rule = node.attrs[1]
            at = {rule.g: total}
            for arg, ct in zip(node.args, rule.cotangents, strict=False):  # no value
                if ct is not None and arg in active:
                    ct_at = substitute([ct], at, fold=True)[0]
                    terms.setdefault(arg, []).append(ct_at)
            continue
        vjp = VJPS.get(node.op)
        if vjp is not None:
            for arg, contribution in zip(node.args, vjp(node, total), strict=True):
                if contribution is not None and arg in active:
                    terms.setdefault(arg, []).append(contribution)
            continue
        for arg, partial in zip(node.args, partials(node), strict=True):
            if partial is not None and arg in active:
                # Each guarded part meets the partial inside its own guard; an
                # operand that was broadcast gets the sum over the stretched axes.
                terms.setdefault(arg, []).extend(
                    unbroadcast(mul(g, partial), arg.shape) for g in parts
                )
    grads = tuple(table.get(w, broadcast_to(ZERO, w.shape)) for w in wrt)
    return Adjoints(grads, table)


def adjoint_parts(contributions: list[Node]) -> list[Node]:
    """A node's adjoint as a short list of terms whose sum it is.

    Contributions routed through a branch are selects with a zero arm,
    ``select(c, g, 0)``, possibly nested (a branch inside a branch).  They are kept
    apart, one term per *guard path* (the conditions from the outside in), because
    a sum of terms under different guards is no longer a select, and multiplying
    that sum by a partial that is infinite in an untaken branch (``sqrt`` at a
    negative point) would give ``0 * inf = NaN``.  Terms under the same path are
    added inside it; exact zeros (an adjoint that folded to the constant 0) are
    dropped, as the symbolic zero they are; the unguarded rest is summed with
    :func:`accumulate`.  The number of terms is bounded by the number of
    contributions.
    """
    groups: dict[tuple[tuple[Node, bool], ...], list[Node]] = {}
    stack: list[tuple[Node, tuple[tuple[Node, bool], ...]]] = [
        (t, ()) for t in reversed(contributions)
    ]
    while stack:
        term, path = stack.pop()
        if is_zero(term):
            continue
        guard = _guard(term)
        if guard is not None:
            inner = term.args[1] if guard[1] else term.args[2]
            stack.append((inner, (*path, guard)))
        elif term.op in ("add", "sub") and (path or _has_guard(term)):
            a, b = term.args
            stack.append((neg(b) if term.op == "sub" else b, path))
            stack.append((a, path))
        else:
            groups.setdefault(path, []).append(term)
    parts = []
    for path, part in _merge_complements(
        {path: accumulate(payloads) for path, payloads in groups.items()}
    ).items():
        for cond, taken in reversed(path):
            part = select(cond, part, ZERO) if taken else select(cond, ZERO, part)
        if not is_zero(part):
            parts.append(part)
    return parts


Path = tuple[tuple[Node, bool], ...]


def is_zero(node: Node) -> bool:
    """An exact zero, also stretched to a shape (``unbroadcast`` of an adjoint
    that folded to 0: ``select(m, 0, 2) * select(m, 1, 0)``): the symbolic zero,
    which no partial multiplies (``0 * inf`` would be a NaN)."""
    while node.op == "broadcast":
        node = node.args[0]
    return _is_zero_constant(node)


def _merge_complements(groups: dict[Path, Node]) -> dict[Path, Node]:
    """Join the terms of two paths that differ in one guard only, ``(c, taken)``
    and ``(c, not taken)``: ``select(c, g, 0) + select(c, 0, g)`` is ``g`` under
    the rest of the path, and ``select(c, a, 0) + select(c, 0, b)`` is
    ``select(c, a, b)``.  Without this an ``if`` in each of n unrolled
    iterations (``if x[j] >= 0: s += ...``, ``if s > c: s = s * 0.5 else: s = s
    * s``) splits the adjoint of ``s`` into 2**n terms, one per combination of
    branches."""
    merged = True
    while merged and len(groups) > 1:
        merged = False
        for path in list(groups):
            if path not in groups:
                continue
            for k, (cond, taken) in enumerate(path):
                other = (*path[:k], (cond, not taken), *path[k + 1 :])
                if other not in groups:
                    continue
                value, rest = groups.pop(path), groups.pop(other)
                if value is not rest:
                    # the node is computed outside this `if` (its terms reach
                    # both branches), so its partials hold on both paths: one
                    # select carries both terms safely
                    value = (
                        select(cond, value, rest)
                        if taken
                        else select(cond, rest, value)
                    )
                shorter = (*path[:k], *path[k + 1 :])
                prior = groups.get(shorter)
                groups[shorter] = value if prior is None else add(prior, value)
                merged = True
                break
    return groups


def _has_guard(term: Node) -> bool:
    """Whether a sum (``add``/``sub`` chain) has a zero-arm select among its terms."""
    stack = list(term.args)
    while stack:
        node = stack.pop()
        if _guard(node) is not None:
            return True
        if node.op in ("add", "sub"):
            stack.extend(node.args)
    return False


def _guard(term: Node) -> tuple[Node, bool] | None:
    """``(condition, taken_arm)`` of a select with one exact-zero arm."""
    if term.op != "select":
        return None
    cond, a, b = term.args
    if is_zero(b):
        return cond, True
    if is_zero(a):
        return cond, False
    return None


def _factors(term: Node) -> tuple[list[Node], list[Node]]:
    """Split a product/quotient into numerator and denominator factors (shallowly)."""
    num: list[Node] = []
    den: list[Node] = []
    stack = [(term, True, 0)]
    while stack:
        node, up, depth = stack.pop()
        if depth < _FACTOR_DEPTH and node.op == "mul":
            stack.append((node.args[1], up, depth + 1))
            stack.append((node.args[0], up, depth + 1))
        elif depth < _FACTOR_DEPTH and node.op == "div":
            stack.append((node.args[1], not up, depth + 1))
            stack.append((node.args[0], up, depth + 1))
        else:
            (num if up else den).append(node)
    return num, den


def _product(num: list[Node], den: list[Node]) -> Node:
    result: Node | None = None
    for f in num:
        result = f if result is None else mul(result, f)
    for f in den:
        result = div(result if result is not None else ONE, f)
    return result if result is not None else ONE


def accumulate(contributions: list[Node]) -> Node:
    """Sum adjoint contributions, factoring out a common multiplicative factor.

    ``g*a*p + g*b*q`` becomes ``g*(a*p + b*q)``: one multiplication instead of two.
    Consumers of a node often share their adjoint's factors (all the partials of a
    product carry the product's adjoint), so this keeps the backward pass near the
    cost of the forward pass (seed 003's cheap-gradient principle).
    """
    if len(contributions) == 1:
        return contributions[0]
    split = [_factors(t) for t in contributions]
    common: list[Node] = []
    for factor in list(split[0][0]):
        if factor.op == "const" or not all(factor in num for num, _ in split[1:]):
            continue
        common.append(factor)
        for num, _ in split:
            num.remove(factor)
    if not common:
        total = contributions[0]
        for term in contributions[1:]:
            total = add(total, term)
        return total
    total = _product(*split[0])
    for num, den in split[1:]:
        total = add(total, _product(num, den))
    return mul(_product(common, []), total)
