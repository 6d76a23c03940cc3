"""Unpacking arrays (``a, b = p``, ``for x, y in points``), ``enumerate(x, start=1)``
and the array methods ``.sum``/``.mean`` with NumPy's signatures (``where=``,
positional ``dtype``); ``x.clip``, ``np.finfo(float).eps``, ``np.float32`` of a
constant and ``np.empty``.

Every function is ordinary user code at module level (symdiff reads its source).
Gradients are checked against JAX in float64 (the same code with ``np`` rebound to
``jax.numpy``) on the python and cpu targets.
"""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import symdiff
from tests.checks import with_modules

jax.config.update("jax_enable_x64", True)

RTOL = 1e-12
ATOL = 1e-13


def pendulum_energy(state, m):
    q, p = state
    return p**2 / (2 * m) + m * 9.81 * (1 - np.cos(q))


def segment_lengths(points):
    total = 0.0
    for x, y in points:
        total = total + np.sqrt(x**2 + y**2 + 1.0)
    return total


def triangle_area(P):
    a, b, c = P
    u, v = b - a, c - a
    return 0.5 * (u[0] * v[1] - u[1] * v[0]) ** 2


def pairs_with_index(points):
    total = 0.0
    for i, (x, y) in enumerate(points, start=1):
        total = total + i * x * y
    return total


def weighted_by_rank(x):
    return sum(k * np.tanh(v) for k, v in enumerate(x, start=2))


def masked_methods(X):
    positive = X.sum(where=X > 0)
    return positive + X.mean(where=X < 0.5) + X.mean(0, None).sum()


def mean_rows_keepdims(X):
    return np.sum(X.mean(axis=1, keepdims=True) * X) + X.sum(0, None, None, True).sum()


CASES = [
    (pendulum_energy, lambda rng: (rng.normal(size=2), 1.3)),
    (segment_lengths, lambda rng: (rng.normal(size=(5, 2)),)),
    (triangle_area, lambda rng: (rng.normal(size=(3, 2)),)),
    (pairs_with_index, lambda rng: (rng.normal(size=(4, 2)),)),
    (weighted_by_rank, lambda rng: (rng.normal(size=6),)),
    (masked_methods, lambda rng: (rng.normal(size=(4, 3)),)),
    (mean_rows_keepdims, lambda rng: (rng.normal(size=(3, 4)),)),
]


@pytest.mark.parametrize("target", ["python", "cpu"])
@pytest.mark.parametrize("fn, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_value_and_gradient_match_jax(fn, make, target):
    args = make(np.random.default_rng(7))
    value, grad = symdiff.value_and_grad(fn, target=target)(*args)
    oracle = with_modules(fn, np=jnp)
    np.testing.assert_allclose(value, fn(*args), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(grad, jax.grad(oracle)(*args), rtol=RTOL, atol=ATOL)


def test_unpacked_rows_have_hessians():
    P = np.random.default_rng(3).normal(size=(3, 2))
    got = symdiff.hessian(triangle_area, target="python")(P)
    want = jax.hessian(with_modules(triangle_area, np=jnp))(P)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_unpacking_checks_the_length_when_the_kernel_runs():
    grad = symdiff.grad(pendulum_energy, target="cpu")
    with pytest.raises(symdiff.ShapeError) as info:
        grad(np.ones(3), 1.0)
    message = str(info.value)
    line = inspect.getsourcelines(pendulum_energy)[1] + 1
    assert f"test_unpacking.py:{line}:5: cannot unpack an array of length" in message
    assert "into 2 names (got 3 and 2)" in message
    assert "q, p = state" in message


def fixed_length(x):
    y = np.zeros(3) + x[0]
    a, b = y
    return a * b


def test_a_known_length_that_differs_is_reported_where_it_is_written():
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(fixed_length, target="python")(np.ones(2))
    message = str(info.value)
    assert "cannot unpack an array of length 3 into 2 names" in message
    assert "a, b = y" in message
    assert "help: unpack as many names as the array has rows" in message


def first_and_rest(x, y, z):
    a, *rest = (x, y, z)
    return a * rest[0] + rest[1]


def ends_and_middle(x, y, z, w):
    a, *middle, b = (x, y, z, w)
    return a * b + sum(middle)


def star_of_rows(p):
    first, *others = np.array([1.0, 2.0, 3.0]) * p
    return first * others[1]


def test_starred_unpacking():
    grad = symdiff.grad
    assert grad(first_and_rest, argnums=(0, 1, 2))(1.0, 2.0, 3.0) == (2.0, 1.0, 1.0)
    assert grad(ends_and_middle, argnums=(0, 1, 2, 3))(1.0, 2.0, 3.0, 4.0) == (
        4.0,
        1.0,
        1.0,
        1.0,
    )
    assert grad(star_of_rows, target="python")(2.0) == 12.0


def too_few(x, y):
    a, b, *rest = (x,)
    return a * b + len(rest)


def test_starred_unpacking_of_too_few_values_is_one_problem():
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(too_few)(1.0, 2.0)
    message = str(info.value)
    assert "1 problem found" in message
    assert "cannot unpack 1 values into at least 2 names" in message


def safe_log(x):
    eps = np.finfo(float).eps
    return np.sum(np.log(x.clip(eps, None)) + np.float32(0.1))


def squares_in_empty(x):
    out = np.empty(len(x))
    for i in range(len(x)):
        out[i] = x[i] ** 2
    return np.sum(out)


def test_finfo_clip_float32_constants_and_empty():
    x = np.array([1.0, 0.0, 2.0])
    for target in ("python", "cpu"):
        value, grad = symdiff.value_and_grad(safe_log, target=target)(x)
        assert value == safe_log(x)
        np.testing.assert_array_equal(grad, [1.0, 0.0, 0.5])
        assert symdiff.value_and_grad(squares_in_empty, target=target)(
            np.array([1.0, 3.0])
        )[0] == pytest.approx(10.0)
