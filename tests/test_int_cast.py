"""``int(x)``, ``math.trunc(x)`` and ``.astype(int)`` of floats: toward zero, as
Python and NumPy do, with slope 0; the index of a lookup table
(``i = int(x / h)``) is the common use."""

from __future__ import annotations

import math

import numpy as np
import pytest

import symdiff
from tests.checks import fd_derivative


def interpolate(x, table):
    h = 0.25
    i = int(x / h)
    t = x / h - i
    return table[i] * (1 - t) + table[i + 1] * t


def truncations(x):
    return int(x) * x + math.trunc(-x) * 2.0


def bins(x):
    counts = (x * 2.0).astype(int)
    return np.sum(counts * x), counts


def int_of_int(n: int, x):
    return int(n) * x


TABLE = np.array([0.0, 1.0, 4.0, 9.0, 16.0, 25.0])


@pytest.mark.parametrize("target", ["cpu", "python"])
@pytest.mark.parametrize("x", [0.1, 0.6, 0.8, 1.2])  # off the knots
def test_lookup_table_interpolation(target, x):
    value, (gx, gt) = symdiff.value_and_grad(
        interpolate, argnums=(0, 1), target=target
    )(x, TABLE)
    assert value == pytest.approx(interpolate(x, TABLE), rel=1e-14)
    assert gx == pytest.approx(
        float(fd_derivative(interpolate, (x, TABLE), 0)), rel=1e-6
    )
    np.testing.assert_allclose(gt, fd_derivative(interpolate, (x, TABLE), 1), atol=1e-8)


@pytest.mark.parametrize("target", ["cpu", "python"])
@pytest.mark.parametrize("x", [-2.7, -0.5, 0.0, 0.5, 3.9])
def test_toward_zero_with_slope_zero(target, x):
    value, slope = symdiff.value_and_grad(truncations, target=target)(x)
    assert value == truncations(x)
    assert slope == int(x) + 0.0  # d/dx int(x) * x, with int(x)' = 0
    assert symdiff.jit(int_of_int, target=target)(3, 1.5) == 4.5


def test_astype_int_of_floats_is_numpys_cast():
    x = np.array([-1.7, -0.2, 0.0, 0.6, 2.5, 3.99])
    total, counts = symdiff.jit(bins)(x)
    want_total, want_counts = bins(x)
    np.testing.assert_array_equal(counts, want_counts)
    assert counts.dtype == np.int64
    assert total == pytest.approx(want_total, rel=1e-15)
    (grad,) = symdiff.vjp(bins, x)[1]((1.0, np.zeros(6, dtype=np.int64)))
    np.testing.assert_array_equal(grad, want_counts.astype(float))


def test_round_is_an_int_with_slope_zero():
    # round(x) is Python's: an int, half to even (tests/test_scalar_builtins.py)
    for x in (1.5, 2.5, -0.5, 3.7):
        assert symdiff.value_and_grad(rounds)(x) == (rounds(x), round(x))


def rounds(x):
    return round(x) * x
