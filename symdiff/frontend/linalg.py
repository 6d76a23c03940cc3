"""``np.linalg`` in the user's code: ``solve``, ``inv``, ``det``, ``slogdet`` and
``cholesky`` of 2-D float matrices (:mod:`symdiff.ir.linalg`).

``np.linalg.norm`` is an array reduction (:mod:`.arrays`).  :data:`FUNCTIONS` is
keyed like :data:`symdiff.frontend.arrays.FUNCTIONS`; the lowering looks a
callable up in both.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from symdiff.frontend.arrays import array, flag
from symdiff.frontend.values import Value
from symdiff.ir import arrays as A
from symdiff.ir import linalg as LA
from symdiff.ir.node import Node


def _solve(a: Value, b: Value) -> Node:
    return LA.solve(array(a, "`a`"), array(b, "`b`"))


def _inv(a: Value) -> Node:
    return LA.inv(array(a, "`a`"))


def _det(a: Value) -> Node:
    return LA.det(array(a, "`a`"))


def _slogdet(a: Value) -> tuple[Node, Node]:
    return LA.slogdet(array(a, "`a`"))


def _cholesky(a: Value, upper: Value | None = None) -> Node:
    lower = LA.cholesky(array(a, "`a`"))
    return A.transpose(lower) if flag(upper, "upper") else lower


_BUILDERS: dict[str, Callable[..., Value]] = {
    "solve": _solve,
    "inv": _inv,
    "det": _det,
    "slogdet": _slogdet,
    "cholesky": _cholesky,
}

FUNCTIONS: dict[int, tuple[str, Callable[..., Value]]] = {
    id(getattr(np.linalg, op)): (name, _BUILDERS[op])
    for op, name in LA.FUNCTIONS.items()
}
