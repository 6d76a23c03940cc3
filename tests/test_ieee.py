"""IEEE semantics at special points: ``1 / 0`` is ``inf`` on every target, as the
README promises, never ``ZeroDivisionError`` (Numba's integer powers raise it for
``0.0 ** -k``: the printer writes ``1.0 / x ** k``, the same computation, and a
run-time int exponent as a float, Python's own ``x ** n``)."""

import math

import numpy as np
import pytest

import symdiff
from symdiff.backend.exact import int_power


def inverse_square(x):
    return x**-2


def reciprocal_power(x):
    return 3.0 * x**-1 + x


TARGETS = ["python", "cpu"]


@pytest.mark.parametrize("target", TARGETS)
def test_negative_integer_powers_at_zero_are_infinite(target):
    assert symdiff.jit(inverse_square, target=target)(0.0) == math.inf
    assert symdiff.jit(inverse_square, target=target)(0) == math.inf  # an int
    assert symdiff.grad(inverse_square, target=target)(0.0) == -math.inf
    assert symdiff.grad(inverse_square, target=target)(-0.0) == math.inf
    assert symdiff.hessian(inverse_square, target=target)(0.0) == math.inf
    value, slope = symdiff.value_and_grad(reciprocal_power, target=target)(-0.0)
    assert value == -math.inf and slope == -math.inf
    batched = symdiff.vectorize(symdiff.grad(inverse_square, target=target))
    np.testing.assert_array_equal(
        batched(np.array([0.0, 1.0, -2.0])), [-math.inf, -2.0, 0.25]
    )


def test_negative_integer_powers_print_as_reciprocals():
    source = symdiff.grad(inverse_square).source
    assert "1.0 / x ** 3" in source and "** -" not in source


def test_negative_integer_powers_elsewhere_are_numbas():
    """Bit for bit what Numba's ``x ** -k`` gives (square and multiply, then the
    reciprocal: ``exact.int_power``), where that does not raise."""
    for x in (0.3, -1.7, 1e-100, 3e100, 7.0):
        assert symdiff.jit(inverse_square)(x) == int_power(x, -2)
        assert symdiff.grad(inverse_square)(x) == -2 * int_power(x, -3)


@pytest.mark.parametrize("target", TARGETS)
def test_powers_that_underflow_to_zero_are_infinite(target):
    assert symdiff.jit(inverse_square, target=target)(1e-300) == math.inf
    assert symdiff.grad(inverse_square, target=target)(-1e-200) == math.inf


def int_argument_power(x, n: int):
    return x**n


@pytest.mark.parametrize("target", TARGETS)
def test_powers_by_an_int_argument_at_zero(target):
    """``x ** n`` with ``n`` known only at run time: ``0.0 ** -1`` is ``inf``
    (Numba's integer power raised), and ``x ** 0`` has slope 0 at ``x = 0`` too
    (``0 * 0.0 ** -1`` was NaN), as in JAX."""
    assert symdiff.jit(int_argument_power, target=target)(0.0, -1) == math.inf
    grad = symdiff.grad(int_argument_power, target=target)
    assert grad(0.0, 0) == 0.0
    assert grad(0.0, -1) == -math.inf
    assert grad(0.0, 2) == 0.0
    assert grad(1.5, 3) == pytest.approx(3 * 1.5**2, rel=1e-15)
