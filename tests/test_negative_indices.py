"""Indices computed from shapes that may be negative (``x[-len(x)]``, ``x[-n + 1]``)
count from the end, as in NumPy; past either end they raise ``ShapeError`` when the
kernel runs (or at translation, where no length fits), as NumPy raises
``IndexError``."""

from __future__ import annotations

import numpy as np
import pytest

import symdiff


def first_by_negative_length(x):
    return x[-len(x)] * x[len(x) - 1]


def from_the_end(x):
    n = x.shape[0]
    return x[n - 2] + x[-n + 1] ** 2


def one_before_the_start(x):
    return x[-len(x) - 1]


def write_first(x):
    out = np.zeros_like(x)
    out[-x.shape[0]] = x[0] * 3.0
    return np.sum(out * x)


def fd_grad(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


@pytest.mark.parametrize("fn", [first_by_negative_length, from_the_end, write_first])
@pytest.mark.parametrize("n, target", [(2, "python"), (3, "cpu"), (5, "python")])
def test_values_and_gradients_match_numpy(fn, n, target):
    x = np.linspace(0.5, 2.0, n)
    value, grad = symdiff.value_and_grad(fn, target=target)(x)
    assert value == pytest.approx(fn(x), rel=1e-14)
    np.testing.assert_allclose(grad, fd_grad(fn, x), rtol=1e-7, atol=1e-9)


def test_past_the_start_is_reported():
    # -len(x) - 1 is out of bounds whatever the length: reported at translation
    with pytest.raises(symdiff.TranslationError, match="out of bounds for axis 0"):
        symdiff.jit(one_before_the_start)(np.ones(3))
