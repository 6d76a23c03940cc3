"""Slices whose bounds are a loop's index, read and reduced: ``L[i, :i] @
y[:i]`` (triangular solves), ``np.dot(L[i, :j], L[j, :j])`` (Cholesky by
hand), ``x[:n - lag] * x[lag:]`` (autocorrelation), ``np.sum(x[:i])``.  Their
length is known only when the kernel runs; symdiff reads them as selections
of the whole axis (tests/test_masks.py).  Checked against JAX (float64), which
unrolls the same Python loops."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import symdiff

jax.config.update("jax_enable_x64", True)

RNG = np.random.default_rng(5)


def forward_substitution(L, b):
    y = np.zeros(len(b))
    for i in range(len(b)):
        y[i] = (b[i] - L[i, :i] @ y[:i]) / L[i, i]
    return np.sum(y**2)


def forward_substitution_jax(L, b):
    y = jnp.zeros(len(b))
    for i in range(len(b)):
        y = y.at[i].set((b[i] - L[i, :i] @ y[:i]) / L[i, i])
    return jnp.sum(y**2)


def back_substitution(U, b):
    n = len(b)
    x = np.zeros(n)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - np.dot(U[i, i + 1 :], x[i + 1 :])) / U[i, i]
    return np.sum(x * (np.arange(n) + 1.0))


def back_substitution_jax(U, b):
    n = len(b)
    x = jnp.zeros(n)
    for i in range(n - 1, -1, -1):
        x = x.at[i].set((b[i] - jnp.dot(U[i, i + 1 :], x[i + 1 :])) / U[i, i])
    return jnp.sum(x * (jnp.arange(n) + 1.0))


def cholesky_by_hand(A):
    n = A.shape[0]
    L = np.zeros_like(A)
    for i in range(n):
        for j in range(i + 1):
            s = np.dot(L[i, :j], L[j, :j])
            if i == j:
                L[i, j] = np.sqrt(A[i, i] - s)
            else:
                L[i, j] = (A[i, j] - s) / L[j, j]
    return np.sum(L * L[::-1])


def cholesky_by_hand_jax(A):
    n = A.shape[0]
    L = jnp.zeros_like(A)
    for i in range(n):
        for j in range(i + 1):
            s = jnp.dot(L[i, :j], L[j, :j])
            if i == j:
                L = L.at[i, j].set(jnp.sqrt(A[i, i] - s))
            else:
                L = L.at[i, j].set((A[i, j] - s) / L[j, j])
    return jnp.sum(L * L[::-1])


def autocorrelation(x, max_lag):
    n = len(x)
    total = 0.0
    for lag in range(1, max_lag):
        total += np.sum(x[: n - lag] * x[lag:]) / (n - lag)
    return total


def autocorrelation_jax(x, max_lag):
    n = len(x)
    total = 0.0
    for lag in range(1, max_lag):
        total += jnp.sum(x[: n - lag] * x[lag:]) / (n - lag)
    return total


def prefixes_and_suffixes(x):
    s = 0.0
    for i in range(len(x)):
        s += np.sum(x[:i]) * x[i] + np.max(x[i:]) + np.mean(x[i:] ** 2)
    return s


def prefixes_and_suffixes_jax(x):
    s = 0.0
    for i in range(len(x)):
        s += jnp.sum(x[:i]) * x[i] + jnp.max(x[i:]) + jnp.mean(x[i:] ** 2)
    return s


def lower(n):
    return np.tril(RNG.normal(size=(n, n))) + 3 * np.eye(n)


def spd(n):
    m = RNG.normal(size=(n, n))
    return m @ m.T + n * np.eye(n)


CASES = [
    (
        forward_substitution,
        forward_substitution_jax,
        lambda n: (lower(n), RNG.normal(size=n)),
    ),
    (
        back_substitution,
        back_substitution_jax,
        lambda n: (lower(n).T, RNG.normal(size=n)),
    ),
    (cholesky_by_hand, cholesky_by_hand_jax, lambda n: (spd(n),)),
    (autocorrelation, autocorrelation_jax, lambda n: (RNG.normal(size=n + 3), 3)),
    (prefixes_and_suffixes, prefixes_and_suffixes_jax, lambda n: (RNG.normal(size=n),)),
]


@pytest.mark.parametrize("n", [1, 4])
@pytest.mark.parametrize("fn, oracle, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_run_time_slices_match_jax(fn, oracle, make, n):
    args = make(n)
    argnums = tuple(i for i, a in enumerate(args) if isinstance(a, np.ndarray))
    g = symdiff.value_and_grad(fn, argnums=argnums)  # one kernel for every n
    value, grads = g(*args)
    want_value, want_grads = jax.value_and_grad(oracle, argnums=argnums)(*args)
    assert value == pytest.approx(fn(*args), rel=1e-12)
    assert value == pytest.approx(float(want_value), rel=1e-12)
    for got, want in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def two_run_time_slices(A, k):
    total = 0.0
    for i in range(k):
        total += np.sum(A[:i, :i])
    return total


def a_stepped_run_time_slice(x):
    total = 0.0
    for i in range(len(x)):
        total += np.sum(x[:i:2])
    return total


@pytest.mark.parametrize(
    "fn, args, message",
    [
        (two_run_time_slices, (np.ones((3, 3)), 2), "two slices whose lengths"),
        (
            a_stepped_run_time_slice,
            (np.ones(3),),
            "a slice with a run-time length and a step",
        ),
    ],
)
def test_what_is_not_supported_is_reported(fn, args, message):
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(fn)(*args)
    assert message in str(info.value)
