"""symdiff: exact derivatives of ordinary numerical Python, compiled with Numba.

The public transforms follow JAX's signatures::

    import symdiff

    @symdiff.grad(argnums=(0, 1))
    def f(x, y):
        return x * y + y ** 2

    f(1.0, 2.0)     # (2.0, 5.0)
    print(f.source)  # the generated kernel
"""

__version__ = "0.1.0"

from symdiff.api import (
    grad,
    hessian,
    hvp,
    jacobian,
    jit,
    jvp,
    value_and_grad,
    vjp,
)
from symdiff.compiled import Compiled
from symdiff.custom import custom_vjp, stop_gradient
from symdiff.errors import (
    ArgumentError,
    OutputError,
    ShapeError,
    SourceUnavailableError,
    SymdiffError,
    SymdiffWarning,
    TranslationError,
)
from symdiff.vectorize import vectorize


def from_sympy(expr, symbols, *, target="cpu"):  # type: ignore[no-untyped-def]
    """Compile a SymPy expression; see :func:`symdiff.symbolic.from_sympy`.

    A thin wrapper, so that ``import symdiff`` does not import SymPy.
    """
    from symdiff.symbolic import from_sympy as build

    return build(expr, symbols, target=target)


__all__ = [
    "ArgumentError",
    "Compiled",
    "OutputError",
    "ShapeError",
    "SourceUnavailableError",
    "SymdiffError",
    "SymdiffWarning",
    "TranslationError",
    "__version__",
    "custom_vjp",
    "from_sympy",
    "grad",
    "hessian",
    "hvp",
    "jacobian",
    "jit",
    "jvp",
    "stop_gradient",
    "value_and_grad",
    "vectorize",
    "vjp",
]
