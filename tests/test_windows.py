"""Windows: slices that start at a run-time index but have a fixed length
(``x[i:i + 3]``, ``x[i:i + len(w)]``, ``img[i:i + 2, j:j + 2]``), read and written
inside loops as the positions ``start + arange(length)``.  Values against NumPy,
derivatives against central finite differences and JAX."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import symdiff
from tests.checks import fd_derivative

jax.config.update("jax_enable_x64", True)


def conv1d(x, w):
    n = x.shape[0] - w.shape[0] + 1
    out = np.zeros(n)
    for i in range(n):
        out[i] = np.sum(x[i : i + w.shape[0]] * w)
    return np.sum(out**2)


def moving_average(x):
    k = 3
    s = 0.0
    for i in range(len(x) - k + 1):
        s += np.mean(x[i : i + k]) ** 2
    return s


def patches(img, kern):
    tot = 0.0
    for i in range(img.shape[0] - 1):
        for j in range(img.shape[1] - 1):
            tot += np.sum(img[i : i + 2, j : j + 2] * kern) ** 2
    return tot


def splat(x):
    out = np.zeros(x.shape[0] + 2)
    for i in range(x.shape[0]):
        out[i : i + 3] += x[i] * np.array([0.25, 0.5, 0.25])
    return np.sum(out**2)


def stepped(x):
    s = 0.0
    for i in range(2):
        s += np.sum(x[i : i + 4 : 2] ** 2) * (i + 1)
    return s


def rows_from_argument(X, i: int):
    return np.sum(X[i : i + 2, :] ** 2)


def run_time_length(x, k: int):
    s = 0.0
    for i in range(k):
        s += np.sum(x[i:k])
    return s


def window_across_a_colon(X):
    s = 0.0
    for i in range(X.shape[2] - 1):
        s += np.sum(X[0, :, i : i + 2])
    return s


RNG = np.random.default_rng(4)
CASES = [
    (conv1d, (RNG.normal(size=9), RNG.normal(size=3)), (0, 1)),
    (moving_average, (RNG.normal(size=7),), (0,)),
    (patches, (RNG.normal(size=(4, 5)), RNG.normal(size=(2, 2))), (0, 1)),
    (splat, (RNG.normal(size=5),), (0,)),
    (stepped, (RNG.normal(size=6),), (0,)),
    (rows_from_argument, (RNG.normal(size=(5, 3)), 2), (0,)),
]


@pytest.mark.parametrize("fn, args, argnums", CASES, ids=[c[0].__name__ for c in CASES])
def test_values_and_gradients(fn, args, argnums):
    value, grads = symdiff.value_and_grad(fn, argnums=argnums, target="python")(*args)
    assert value == pytest.approx(fn(*args), rel=1e-13)
    for i, g in zip(argnums, grads):
        np.testing.assert_allclose(g, fd_derivative(fn, args, i), rtol=1e-6, atol=1e-8)


def test_conv1d_against_jax_and_compiled():
    x, w = RNG.normal(size=12), RNG.normal(size=4)

    def jax_conv(x, w):
        n = x.shape[0] - w.shape[0] + 1
        out = jnp.stack([jnp.sum(x[i : i + w.shape[0]] * w) for i in range(n)])
        return jnp.sum(out**2)

    got = symdiff.grad(conv1d, argnums=(0, 1))(x, w)
    want = jax.grad(jax_conv, argnums=(0, 1))(x, w)
    for g, v in zip(got, want):
        np.testing.assert_allclose(g, v, rtol=1e-12)
    hess = symdiff.hessian(conv1d, argnums=1, target="python")(x, w)
    np.testing.assert_allclose(hess, jax.hessian(jax_conv, argnums=1)(x, w), rtol=1e-11)


def test_a_slice_of_run_time_length_is_read_as_a_selection():
    # x[i:k]: its length is known only when the kernel runs (test_run_time_slices)
    x = np.array([0.5, -1.0, 2.0, 3.0, 0.25])
    value, slope = symdiff.value_and_grad(run_time_length)(x, 4)
    assert value == pytest.approx(run_time_length(x, 4))
    np.testing.assert_array_equal(slope, [1.0, 2.0, 3.0, 4.0, 0.0])


def test_a_window_across_a_colon_is_refused():
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(window_across_a_colon)(np.ones((2, 3, 4)))
    assert "a slice with a run-time start goes with" in str(info.value)


def window_from_argument(x, i: int):
    return np.sum(x[i : i + 2] ** 3)


def test_a_window_past_the_end_reports_its_bound():
    x = np.arange(1.0, 6.0)
    with pytest.raises(
        symdiff.ShapeError, match=r"\(got i \+ 2 = 6, x.shape\[0\] \+ 1 = 6\)"
    ):
        symdiff.jit(window_from_argument, target="python")(x, 4)
    with pytest.raises(symdiff.ShapeError, match=r"\(got i = -2\)"):
        symdiff.jit(window_from_argument, target="python")(x, -2)


def empty_windows(x):
    s = 0.0
    for i in range(len(x) - 1):
        s += np.sum(x[i:i] * 2.0) + x[i]
    return s


def test_an_empty_window_is_empty_as_in_numpy():
    x = np.ones(4)
    value, grad = symdiff.value_and_grad(empty_windows, target="python")(x)
    assert value == empty_windows(x)
    np.testing.assert_array_equal(grad, [1.0, 1.0, 1.0, 0.0])
