"""Smart constructors of the dense linear-algebra ops: ``solve``, ``inv``, ``det``,
``slogdet`` and ``cholesky`` of one square float64 matrix.

Each is one op of the table (kind ``linalg``), printed as one ``np.linalg`` call
(Numba compiles them with SciPy's LAPACK).  Their derivatives
(:mod:`symdiff.rules.linalg`) are built from these ops, ``dot``, ``transpose`` and
selects again, so that they can be differentiated once more (Hessians).

Operands must be 2-D: a stack of matrices is refused, as is a matrix that is not
square.  Known lengths that differ are an error now; symbolic ones are checked
when the kernel runs, as for ``dot``.
"""

from __future__ import annotations

from symdiff.ir import shapes as S
from symdiff.ir.build import to_float
from symdiff.ir.node import Node, make
from symdiff.ir.shapes import Length

#: The ops of this module, with the NumPy function each one is.
FUNCTIONS = {
    "solve": "np.linalg.solve",
    "inv": "np.linalg.inv",
    "det": "np.linalg.det",
    "slogdet": "np.linalg.slogdet",
    "cholesky": "np.linalg.cholesky",
}

#: ``slogdet``'s two results, by the position NumPy returns them at.
SIGN, LOGABSDET = 0, 1


def _square(a: Node, op: str) -> Length:
    """The order of the square matrix ``a``; a shape error if it is not one."""
    name = FUNCTIONS[op]
    rank = len(a.shape)
    if rank != 2:
        what = "a number" if rank == 0 else f"an array of shape {_shape(a)}"
        hint = (
            "for a stack of matrices, loop over them: `for M in A: ...`"
            if rank > 2
            else "pass a square 2-D array"
        )
        raise S.ShapeMismatch(f"{name}: expected a 2-D matrix, got {what}", hint)
    n, m = a.shape
    return S.unify(
        n,
        m,
        f"{name}: the matrix must be square, got shape {_shape(a)}",
    )


def _shape(a: Node) -> str:
    return S.format_shape(a.shape)


def _matrix(op: str, a: Node) -> Node:
    n = _square(a, op)
    return make(op, (to_float(a),), shape=(n, n), dtype="float64")


def inv(a: Node) -> Node:
    """``np.linalg.inv(a)``."""
    return _matrix("inv", a)


def cholesky(a: Node) -> Node:
    """``np.linalg.cholesky(a)``: the lower factor ``L`` of ``a = L @ L.T`` (only
    ``a``'s lower triangle is read; its derivative is taken as ``a``'s symmetric
    part's, as JAX does)."""
    return _matrix("cholesky", a)


def det(a: Node) -> Node:
    """``np.linalg.det(a)``."""
    _square(a, "det")
    return make("det", (to_float(a),), shape=(), dtype="float64")


def slogdet(a: Node) -> tuple[Node, Node]:
    """``np.linalg.slogdet(a)``: ``(sign, logabsdet)``, one node each."""
    _square(a, "slogdet")
    a = to_float(a)
    sign = make("slogdet", (a,), (SIGN,), shape=(), dtype="float64")
    return sign, make("slogdet", (a,), (LOGABSDET,), shape=(), dtype="float64")


def solve(a: Node, b: Node) -> Node:
    """``np.linalg.solve(a, b)`` with ``b`` a vector or a matrix of columns."""
    n = _square(a, "solve")
    if len(b.shape) not in (1, 2):
        what = "a number" if not b.shape else f"an array of shape {_shape(b)}"
        raise S.ShapeMismatch(
            f"np.linalg.solve: the right-hand side must be 1-D or 2-D, got {what}",
            "solve for a vector b or for the columns of a matrix B",
        )
    S.unify(
        n,
        b.shape[0],
        f"np.linalg.solve: shapes {_shape(a)} and {_shape(b)} not aligned: "
        f"{S.format_dim(n)} (dim 1) != {S.format_dim(b.shape[0])} (dim 0)",
    )
    shape = (n, *b.shape[1:])
    return make("solve", (to_float(a), to_float(b)), shape=shape, dtype="float64")
