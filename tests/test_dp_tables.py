"""Dynamic-programming tables as users start them (``[0] * (n + 1)``, lists of
rows, comprehensions: Python lists, which hold the floats written into them),
NumPy int arrays (which truncate what is stored, with no derivative), slices of
empty arrays, and LU with partial pivoting, against Python and finite
differences."""

from __future__ import annotations

import numpy as np
import pytest

import symdiff
from symdiff.errors import SymdiffError
from tests.checks import fd_derivative


def _fd(fn, x, *rest):
    """d fn / d x by central differences (tests/checks.py)."""
    return fd_derivative(fn, (x, *rest), 0)


def best_sum(x):
    n = len(x)
    dp = [0] * (n + 1)
    for i in range(1, n + 1):
        dp[i] = max(dp[i - 1], 0) + x[i - 1] * 0.5
    return dp[n]


def unrolled_table(x):
    dp = [0] * 3
    dp[1] = x[0] * 0.5
    dp[2] = dp[1] + x[1]
    return dp[2] + dp[0]


def lcs_like(x, y):
    n, m = len(x), len(y)
    L = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            L[i][j] = max(
                L[i - 1][j - 1] + x[i - 1] * y[j - 1], L[i - 1][j], L[i][j - 1]
            )
    return L[n][m]


def comprehension_table(x):
    dp = [0 for _ in range(len(x) + 1)]
    for i in range(len(x)):
        dp[i + 1] = dp[i] + x[i] * 0.5
    return dp[-1]


def int_counts(x):
    counts = [0] * 3
    for i in range(len(x)):
        counts[i % 3] = counts[i % 3] + 1
    return counts[0] * 1.5 + np.sum(x)


X = np.array([0.7, 1.3, 0.9])
Y = np.array([0.4, 0.6])


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (best_sum, (X,)),
        (unrolled_table, (X,)),
        (lcs_like, (np.array([0.7, 1.3, 0.95]), Y)),  # no tie between paths
        (comprehension_table, (X,)),
        (int_counts, (X,)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_python_lists_hold_the_floats_written(fn, args):
    assert symdiff.jit(fn)(*args) == pytest.approx(fn(*args), rel=1e-12)
    np.testing.assert_allclose(symdiff.grad(fn)(*args), _fd(fn, *args), atol=1e-6)


def numpy_full_int(x):
    a = np.full(3, 0, dtype=int)
    a[1] = x * 2.5
    return np.sum(a) * 1.0 + x


def numpy_int_zeros(x):
    a = np.zeros(3, dtype=np.int64)
    a[1] = x * 2.5
    a[2] = x * x
    return np.sum(a) * 1.0 + x


def numpy_full_of_int(x):
    a = np.full(2, 0)  # NumPy: an int array
    a[0] = x
    return a[0] * 1.0 + x


@pytest.mark.parametrize("fn", [numpy_full_int, numpy_int_zeros, numpy_full_of_int])
def test_numpy_int_arrays_truncate_what_is_stored(fn):
    for x in (0.7, 1.9):
        assert symdiff.jit(fn)(x) == pytest.approx(fn(x))
        assert symdiff.grad(fn)(x) == pytest.approx(1.0)


def tail_sum(x):
    s = 0.0
    for v in x[1:]:
        s += v
    return s + np.sum(np.diff(x)) + np.sum(np.cumsum(x[:-1]))


def test_slices_of_an_empty_array_are_empty():
    for n in (0, 1, 3):
        x = np.arange(1.0, n + 1.0)
        assert symdiff.jit(tail_sum)(x) == pytest.approx(tail_sum(x))
        assert symdiff.grad(tail_sum)(x).shape == (n,)


def lu_pivot_logdet(A):
    A = A.copy()
    n = A.shape[0]
    s = 0.0
    for k in range(n):
        p = k + np.argmax(np.abs(A[k:, k]))
        if p != k:
            tmp = A[k].copy()
            A[k] = A[p]
            A[p] = tmp
        for i in range(k + 1, n):
            f = A[i, k] / A[k, k]
            A[i, k:] -= f * A[k, k:]
        s += np.log(np.abs(A[k, k]))
    return s


def test_lu_with_partial_pivoting():
    A = np.array([[0.5, 2.0, 1.0], [3.0, 1.0, 0.2], [1.0, 0.1, 4.0]])
    assert symdiff.jit(lu_pivot_logdet)(A) == pytest.approx(np.linalg.slogdet(A)[1])
    np.testing.assert_allclose(
        symdiff.grad(lu_pivot_logdet)(A), np.linalg.inv(A).T, atol=1e-12
    )


def cumsum_of_prefix(x):
    s = 0.0
    for i in range(len(x)):
        s += np.sum(np.cumsum(x[:i]))
    return s


def write_past_an_unrolled_end(x):
    out = np.zeros(len(x))
    for i in range(3):
        out[i - 1 : i + 2] += x[i]
    return np.sum(out)


def test_messages_of_run_time_slices_and_static_bounds():
    with pytest.raises(SymdiffError, match="a slice of run-time length is not"):
        symdiff.jit(cumsum_of_prefix)(np.ones(3))
    with pytest.raises(SymdiffError, match=r"test_dp_tables.py:\d+:\d+: slice bound"):
        symdiff.jit(write_past_an_unrolled_end)(np.ones(2))
