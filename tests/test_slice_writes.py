"""Windows that may reach past an array's ends, and writes to slices whose bounds
are known only when the kernel runs, against NumPy and finite differences.

A window ``x[i:i + 3]`` is a gather of three elements only where the loop's range
keeps it inside the array (proven from the range, ``bounds.py``); elsewhere NumPy
gives a shorter slice, and so does symdiff (it once read and wrote past the end)."""

from __future__ import annotations

import numpy as np
import pytest

import symdiff
from symdiff.frontend import bounds
from tests.checks import fd_derivative


def _fd(fn, x, *rest):
    """d fn / d x by central differences (tests/checks.py)."""
    return fd_derivative(fn, (x, *rest), 0)


def window_sums_to_the_end(x):
    s = 0.0
    for i in range(len(x)):
        s += np.sum(x[i - 2 : i] ** 2) + np.mean(x[i : i + 3]) * x[i]
    return s


def add_past_the_end(x):
    out = np.zeros(len(x))
    for i in range(len(x)):
        out[i : i + 2] += x[i]
    return np.sum(out**2)


def add_before_the_start(x):
    out = np.zeros(len(x))
    for i in range(len(x)):
        out[i - 1 : i + 1] += x[i] ** 2
    return np.sum(out * x)


def decay_the_rest(x):
    out = x.copy()
    for i in range(len(x)):
        out[i:] *= 0.9
    return np.sum(out * x)


def add_to_prefix(x):
    out = np.zeros(len(x))
    for i in range(len(x)):
        out[: i + 1] += x[i]
    return np.sum(out**2)


def lu_residual(A):
    A = A.copy()
    n = A.shape[0]
    for k in range(n):
        for i in range(k + 1, n):
            f = A[i, k] / A[k, k]
            A[i, k + 1 :] -= f * A[k, k + 1 :]
            A[i, k] = f
    return np.sum(A**2)


def set_tail_from_head(x):
    y = x.copy()
    for i in range(1, len(x)):
        y[i:] = x[: len(x) - i] * 0.5 + y[i:]
    return np.sum(y**2)


VECTORS = [
    np.array([0.3, -1.2, 2.0, 0.7, 1.1]),
    np.array([0.5]),
    np.array([1.5, -0.4]),
]


@pytest.mark.parametrize(
    "fn",
    [
        window_sums_to_the_end,
        add_past_the_end,
        add_before_the_start,
        decay_the_rest,
        add_to_prefix,
        set_tail_from_head,
    ],
)
@pytest.mark.parametrize("x", VECTORS, ids=lambda x: f"n{len(x)}")
def test_slices_at_the_ends_as_numpy(fn, x):
    assert symdiff.jit(fn)(x) == pytest.approx(fn(x), rel=1e-12)
    np.testing.assert_allclose(symdiff.grad(fn)(x), _fd(fn, x), atol=1e-6)


def test_lu_row_updates():
    A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    assert symdiff.jit(lu_residual)(A) == pytest.approx(lu_residual(A))
    np.testing.assert_allclose(
        symdiff.grad(lu_residual)(A), _fd(lu_residual, A), atol=1e-6
    )


def windows_inside(x, w):
    s = 0.0
    for i in range(len(x) - 2):
        s += np.sum(x[i : i + 3])
    for i in range(1, len(x) - 1):
        s += np.sum(x[i - 1 : i + 2] ** 2)
    for i in range(len(x) - len(w) + 1):
        s += np.dot(x[i : i + len(w)], w)
    for i in range(0, len(x) - 1, 2):
        s += np.prod(x[i : i + 2])
    for i in range(len(x)):
        for j in range(i):
            s += np.sum(x[j : j + 2]) * 0.5
    for i in range(len(x) - 1, 1, -1):
        s += np.sum(x[i - 2 : i + 1])
    return s


def test_windows_kept_inside_by_their_ranges_are_proven(monkeypatch):
    """The ranges users write around windows prove them inside the array, so the
    windows stay gathers of fixed length (not slices of run-time length)."""
    verdicts = []
    inside = bounds.inside

    def spy(*args):
        verdicts.append(inside(*args))
        return verdicts[-1]

    monkeypatch.setattr(bounds, "inside", spy)
    x = np.arange(1.0, 8.0)
    w = np.array([1.0, -2.0, 0.5])
    assert symdiff.jit(windows_inside)(x, w) == pytest.approx(windows_inside(x, w))
    assert verdicts and all(verdicts)


def lu_right_looking(A):
    A = A.copy()
    n = A.shape[0]
    for k in range(n):
        A[k + 1 :, k] /= A[k, k]
        for j in range(k + 1, n):
            A[k + 1 :, j] -= A[k + 1 :, k] * A[k, j]
    return np.sum(A**2)


def cholesky_right_looking(A):
    A = A.copy()
    n = A.shape[0]
    for k in range(n):
        A[k, k] = np.sqrt(A[k, k])
        A[k + 1 :, k] /= A[k, k]
        for j in range(k + 1, n):
            A[j:, j] -= A[j:, k] * A[j, k]
    return np.sum(np.tril(A))


@pytest.mark.parametrize("fn", [lu_right_looking, cholesky_right_looking])
def test_column_writes_of_run_time_length(fn):
    A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    assert symdiff.jit(fn)(A) == pytest.approx(fn(A), rel=1e-12)
    np.testing.assert_allclose(symdiff.grad(fn)(A), _fd(fn, A), atol=1e-6)
