"""``np.linalg`` in the user's code: ``solve``, ``inv``, ``det``, ``slogdet`` and
``cholesky`` of 2-D float matrices (:mod:`symdiff.ir.linalg`).

``np.linalg.norm`` is an array reduction (:mod:`.arrays`).  :data:`FUNCTIONS` is
registered in :data:`symdiff.frontend.arrays.FUNCTIONS`, keyed like its entries.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from symdiff.frontend.values import Value
from symdiff.ir import arrays as A
from symdiff.ir import linalg as LA
from symdiff.ir.node import Node


def _operand(value: Value, what: str) -> Node:
    # imported here: frontend.arrays imports this module to register FUNCTIONS
    from symdiff.frontend.arrays import array

    return array(value, what)


def _solve(a: Value, b: Value) -> Node:
    return LA.solve(_operand(a, "`a`"), _operand(b, "`b`"))


def _inv(a: Value) -> Node:
    return LA.inv(_operand(a, "`a`"))


def _det(a: Value) -> Node:
    return LA.det(_operand(a, "`a`"))


def _slogdet(a: Value) -> tuple[Node, Node]:
    return LA.slogdet(_operand(a, "`a`"))


def _cholesky(a: Value, upper: Value | None = None) -> Node:
    from symdiff.frontend.arrays import flag

    lower = LA.cholesky(_operand(a, "`a`"))
    return A.transpose(lower) if flag(upper, "upper") else lower


FUNCTIONS: dict[int, tuple[str, Callable[..., Value]]] = {
    id(np.linalg.solve): ("np.linalg.solve", _solve),
    id(np.linalg.inv): ("np.linalg.inv", _inv),
    id(np.linalg.det): ("np.linalg.det", _det),
    id(np.linalg.slogdet): ("np.linalg.slogdet", _slogdet),
    id(np.linalg.cholesky): ("np.linalg.cholesky", _cholesky),
}
