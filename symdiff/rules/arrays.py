"""Derivatives of the array ops, as matrix calculus (seed 004's standard results).

An element-wise op's derivative is its scalar partial times the adjoint, summed back
to the operand's shape (``rules.table`` plus :func:`symdiff.ir.arrays.unbroadcast`).
The ops here are linear in their array operands, or nearly so, and a Jacobian of
them would be huge and mostly zero; each declares instead

* a VJP: the operand adjoints given the output adjoint ``g``
  (``C = A @ B``: ``A_bar = g @ B.T``, ``B_bar = A.T @ g``), and
* a JVP: the output tangent given operand tangents (``None`` = zero).

Both see the node (its operands, attrs and output) and build IR with the smart
constructors; neither touches code generation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from symdiff.ir import arrays as A
from symdiff.ir import shapes as S
from symdiff.ir.build import (
    ONE,
    ZERO,
    add,
    apply,
    broadcast_to,
    div,
    mul,
    select,
    sub,
)
from symdiff.ir.node import Node
from symdiff.rules import linalg

Vjp = Callable[[Node, Node], tuple[Node | None, ...]]
Jvp = Callable[[Node, Sequence[Node | None]], Node | None]


def _spread(g: Node, node: Node) -> Node:
    """A reduction's adjoint stretched back over the reduced axes."""
    x = node.args[0]
    axes = node.attrs[0]
    return broadcast_to(A.reshape(g, A.keepdims_shape(x.shape, axes)), x.shape)


def _vjp_sum(node: Node, g: Node) -> tuple[Node | None, ...]:
    return (_spread(g, node),)


def _others_product(node: Node) -> Node:
    """``d prod / d x_i``: at every ``i``, the product of the other elements the
    reduction multiplies, exact where elements are 0 (``prod / x_i`` is 0/0 there).

    The nonzero elements' product over ``x_i`` (zeros counted as ones), times the
    product of the *other* zeros: 1 if there are none, the zero element itself if
    there is one (its value 0, but its derivative 1, so that differentiating this
    again gives the Hessian's entries there), else 0.  No division by 0 happens.
    """
    x = node.args[0]
    axes = node.attrs[0]
    zero = apply("eq", x, ZERO)
    ones = select(zero, ONE, x)
    rest = div(_spread(A.reduce("prod", ones, axes), node), ones)
    is_zero = select(zero, ONE, ZERO)
    picked = select(zero, x, ZERO)
    other_zeros = sub(_spread(A.reduce("sum", is_zero, axes), node), is_zero)
    zero_value = sub(_spread(A.reduce("sum", picked, axes), node), picked)
    alone = select(apply("eq", other_zeros, ONE), zero_value, ZERO)
    return mul(rest, select(apply("eq", other_zeros, ZERO), ONE, alone))


def _vjp_prod(node: Node, g: Node) -> tuple[Node | None, ...]:
    return (mul(_spread(g, node), _others_product(node)),)


def _extreme_mask(node: Node) -> tuple[Node, Node]:
    """Where the max/min is attained, and by how many elements (ties share)."""
    x = node.args[0]
    hit = apply("eq", x, _spread(node, node))
    count = A.reduce("sum", select(hit, ONE, ZERO), node.attrs[0])
    return hit, count


def _vjp_extreme(node: Node, g: Node) -> tuple[Node | None, ...]:
    hit, count = _extreme_mask(node)
    share = _spread(div(g, count), node)
    return (select(hit, share, ZERO),)


def _jvp_extreme(node: Node, dots: Sequence[Node | None]) -> Node | None:
    (xd,) = dots
    if xd is None:
        return None
    hit, count = _extreme_mask(node)
    picked = A.reduce("sum", select(hit, xd, ZERO), node.attrs[0])
    return div(picked, count)


def _vjp_dot(node: Node, g: Node) -> tuple[Node | None, ...]:
    a, b = node.args
    ra, rb = len(a.shape), len(b.shape)
    if ra == 1 and rb == 1:
        return mul(g, b), mul(g, a)
    if ra == 2 and rb == 2:
        return A.dot(g, A.transpose(b)), A.dot(A.transpose(a), g)
    if ra == 1:  # (k,) @ (k, m) -> (m,)
        return A.dot(b, g), A.outer(a, g)
    # (n, k) @ (k,) -> (n,)
    return A.outer(g, b), A.dot(A.transpose(a), g)


def _jvp_dot(node: Node, dots: Sequence[Node | None]) -> Node | None:
    a, b = node.args
    ad, bd = dots
    total = None
    if ad is not None:
        total = A.dot(ad, b)
    if bd is not None:
        term = A.dot(a, bd)
        total = term if total is None else add(total, term)
    return total


def _vjp_getitem(node: Node, g: Node) -> tuple[Node | None, ...]:
    spec = node.attrs[0]
    plain = tuple(e for e in spec if e[0] != "new")
    squeezed = tuple(
        d
        for e, d in zip((e for e in spec if e[0] != "int"), g.shape, strict=True)
        if e[0] != "new"
    )
    return (A.scatter(A.reshape(g, squeezed), plain, node.args[0].shape),)


def _vjp_concat(node: Node, g: Node) -> tuple[Node | None, ...]:
    axis = node.attrs[0]
    out: list[Node | None] = []
    start: S.Length = 0
    for x in node.args:
        length = x.shape[axis]
        spec = tuple(
            ("slice", start, length, 1) if i == axis else ("slice", 0, d, 1)
            for i, d in enumerate(g.shape)
        )
        out.append(A.getitem(g, spec))
        start = S.add(start, length)
    return tuple(out)


def _vjp_pack(node: Node, g: Node) -> tuple[Node | None, ...]:
    return tuple(A.getitem(g, (("int", i),)) for i in range(len(node.args)))


def _linear(fn: Callable[[Node, Node], Node]) -> Jvp:
    """The JVP of an op linear in its one operand: the op applied to the tangent."""

    def jvp(node: Node, dots: Sequence[Node | None]) -> Node | None:
        (xd,) = dots
        return None if xd is None else fn(node, xd)

    return jvp


def _jvp_prod(node: Node, dots: Sequence[Node | None]) -> Node | None:
    (xd,) = dots
    if xd is None:
        return None
    return A.reduce("sum", mul(_others_product(node), xd), node.attrs[0])


def _jvp_concat(node: Node, dots: Sequence[Node | None]) -> Node | None:
    if all(d is None for d in dots):
        return None
    parts = [
        d if d is not None else broadcast_to(ZERO, x.shape)
        for x, d in zip(node.args, dots, strict=True)
    ]
    if node.op == "pack":
        return A.pack(parts)
    return A.concat(parts, node.attrs[0])


# fmt: off
def _vjp_take(node: Node, g: Node) -> tuple[Node | None, ...]:
    x, *index = node.args
    spec = node.attrs[0]
    zeros = broadcast_to(ZERO, x.shape)
    return (A.index_update(zeros, g, spec, index, "add"), *[None] * len(index))


def _vjp_index_update(node: Node, g: Node) -> tuple[Node | None, ...]:
    _x, v, *index = node.args
    mode, spec = node.attrs
    v_bar = A.unbroadcast(A.take(g, spec, index), v.shape)
    x_bar = g if mode == "add" else A.index_update(g, ZERO, spec, index, "set")
    return (x_bar, v_bar, *[None] * len(index))


def _jvp_take(node: Node, dots: Sequence[Node | None]) -> Node | None:
    if dots[0] is None:
        return None
    return A.take(dots[0], node.attrs[0], node.args[1:])


def _jvp_index_update(node: Node, dots: Sequence[Node | None]) -> Node | None:
    x, _v, *index = node.args
    xd, vd = dots[0], dots[1]
    if xd is None and vd is None:
        return None
    mode, spec = node.attrs
    if xd is None:
        xd = broadcast_to(ZERO, x.shape)
    if vd is None:
        if mode == "add":
            return xd
        vd = ZERO
    return A.index_update(xd, vd, spec, index, mode)


VJPS: dict[str, Vjp] = {
    "sum":       _vjp_sum,
    "prod":      _vjp_prod,
    "amax":      _vjp_extreme,
    "amin":      _vjp_extreme,
    "dot":       _vjp_dot,
    "broadcast": lambda node, g: (A.unbroadcast(g, node.args[0].shape),),
    "transpose": lambda node, g: (A.transpose(g, A.inverse(node.attrs[0])),),
    "reshape":   lambda node, g: (A.reshape(g, node.args[0].shape),),
    "getitem":   _vjp_getitem,
    "scatter":   lambda node, g: (A.getitem(g, node.attrs[0]),),
    "concat":    _vjp_concat,
    "pack":      _vjp_pack,
    "take":      _vjp_take,
    "index_update": _vjp_index_update,
    "argsort":   lambda node, g: (None,),  # positions (ints): no derivative
}

JVPS: dict[str, Jvp] = {
    "sum":       _linear(lambda node, t: A.reduce("sum", t, node.attrs[0])),
    "prod":      _jvp_prod,
    "amax":      _jvp_extreme,
    "amin":      _jvp_extreme,
    "dot":       _jvp_dot,
    "broadcast": _linear(lambda node, t: broadcast_to(t, node.shape)),
    "transpose": _linear(lambda node, t: A.transpose(t, node.attrs[0])),
    "reshape":   _linear(lambda node, t: A.reshape(t, node.shape)),
    "getitem":   _linear(lambda node, t: A.getitem(t, node.attrs[0])),
    "scatter":   _linear(lambda node, t: A.scatter(t, node.attrs[0], node.shape)),
    "concat":    _jvp_concat,
    "pack":      _jvp_concat,
    "take":      _jvp_take,
    "index_update": _jvp_index_update,
    "argsort":   lambda node, dots: None,
}
# fmt: on
VJPS.update(linalg.VJPS)  # np.linalg: solve, inv, det, slogdet, cholesky
JVPS.update(linalg.JVPS)
