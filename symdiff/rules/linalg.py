"""Derivatives of the ``np.linalg`` ops (:mod:`symdiff.ir.linalg`), as matrix
calculus (Giles 2008, "Collected matrix derivative results"; Murray 2016 for the
Cholesky factor).  ``g`` is the output adjoint, ``X``/``x``/``L`` the output:

* ``X = inv(A)``:        ``A_bar = -X.T @ g @ X.T``;  ``X_dot = -X @ A_dot @ X``
* ``x = solve(A, b)``:   ``b_bar = solve(A.T, g)``, ``A_bar = -b_bar @ x.T``;
  ``x_dot = solve(A, b_dot - A_dot @ x)``
* ``d = det(A)``:        ``A_bar = g d inv(A).T``;  ``d_dot = d sum(inv(A).T * A_dot)``
  (``sum(inv(A).T * A_dot)`` is ``trace(solve(A, A_dot))``)
* ``slogdet(A)``:        the log's is ``det``'s over ``d``; the sign's is zero
* ``L = cholesky(A)``:   ``A_bar = sym(L^-T Phi(L.T @ g) L^-1)``;
  ``L_dot = L Phi(L^-1 sym(A_dot) L^-T)``, ``Phi`` the lower triangle with the
  diagonal halved and ``sym(M) = (M + M.T) / 2``: NumPy reads only the lower
  triangle, but the derivative is that of the symmetric matrix it stands for, as
  in JAX.

Every rule is built from these ops, ``dot``, ``transpose`` and selects, which all
have rules themselves: second derivatives (Hessians) differentiate them again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from symdiff.ir import arrays as A
from symdiff.ir import linalg as LA
from symdiff.ir.build import ZERO, add, apply, mul, neg, select, sub
from symdiff.ir.node import Node, constant

Vjp = Callable[[Node, Node], tuple[Node | None, ...]]
Jvp = Callable[[Node, Sequence[Node | None]], Node | None]

HALF = constant(0.5)


def _inv_t(a: Node) -> Node:
    """``inv(a).T``: the derivative of ``log |det a|``."""
    return A.transpose(LA.inv(a))


def _sym(m: Node) -> Node:
    return mul(HALF, add(m, A.transpose(m)))


def _phi(m: Node) -> Node:
    """The lower triangle of ``m`` with its diagonal halved (a select, no mask)."""
    n = m.shape[0]
    rows, cols = A.iota(0, (n, n)), A.iota(1, (n, n))
    lower = select(apply("lt", cols, rows), m, ZERO)
    return select(apply("eq", cols, rows), mul(HALF, m), lower)


def _vjp_inv(node: Node, g: Node) -> tuple[Node | None, ...]:
    x_t = A.transpose(node)
    return (neg(A.dot(A.dot(x_t, g), x_t)),)


def _jvp_inv(node: Node, dots: Sequence[Node | None]) -> Node | None:
    (a_dot,) = dots
    if a_dot is None:
        return None
    return neg(A.dot(A.dot(node, a_dot), node))


def _vjp_solve(node: Node, g: Node) -> tuple[Node | None, ...]:
    a, b = node.args
    b_bar = LA.solve(A.transpose(a), g)
    if len(b.shape) == 1:
        return neg(A.outer(b_bar, node)), b_bar
    return neg(A.dot(b_bar, A.transpose(node))), b_bar


def _jvp_solve(node: Node, dots: Sequence[Node | None]) -> Node | None:
    a, _b = node.args
    a_dot, b_dot = dots
    if a_dot is None and b_dot is None:
        return None
    rhs = b_dot
    if a_dot is not None:
        moved = A.dot(a_dot, node)
        rhs = neg(moved) if rhs is None else sub(rhs, moved)
    assert rhs is not None
    return LA.solve(a, rhs)


def _log_det_vjp(node: Node, g: Node) -> Node:
    """``g`` times the derivative of ``log |det A|``."""
    return mul(g, _inv_t(node.args[0]))


def _log_det_jvp(node: Node, a_dot: Node) -> Node:
    return A.reduce("sum", mul(_inv_t(node.args[0]), a_dot), (0, 1))


def _vjp_det(node: Node, g: Node) -> tuple[Node | None, ...]:
    return (_log_det_vjp(node, mul(g, node)),)


def _jvp_det(node: Node, dots: Sequence[Node | None]) -> Node | None:
    (a_dot,) = dots
    return None if a_dot is None else mul(node, _log_det_jvp(node, a_dot))


def _vjp_slogdet(node: Node, g: Node) -> tuple[Node | None, ...]:
    if node.attrs[0] == LA.SIGN:
        return (None,)  # piecewise constant
    return (_log_det_vjp(node, g),)


def _jvp_slogdet(node: Node, dots: Sequence[Node | None]) -> Node | None:
    (a_dot,) = dots
    if a_dot is None or node.attrs[0] == LA.SIGN:
        return None
    return _log_det_jvp(node, a_dot)


def _vjp_cholesky(node: Node, g: Node) -> tuple[Node | None, ...]:
    l_inv = LA.inv(node)
    inner = _phi(A.dot(A.transpose(node), g))
    return (_sym(A.dot(A.dot(A.transpose(l_inv), inner), l_inv)),)


def _jvp_cholesky(node: Node, dots: Sequence[Node | None]) -> Node | None:
    (a_dot,) = dots
    if a_dot is None:
        return None
    l_inv = LA.inv(node)
    inner = A.dot(A.dot(l_inv, _sym(a_dot)), A.transpose(l_inv))
    return A.dot(node, _phi(inner))


# fmt: off
VJPS: dict[str, Vjp] = {
    "solve":    _vjp_solve,
    "inv":      _vjp_inv,
    "det":      _vjp_det,
    "slogdet":  _vjp_slogdet,
    "cholesky": _vjp_cholesky,
}

JVPS: dict[str, Jvp] = {
    "solve":    _jvp_solve,
    "inv":      _jvp_inv,
    "det":      _jvp_det,
    "slogdet":  _jvp_slogdet,
    "cholesky": _jvp_cholesky,
}
# fmt: on
