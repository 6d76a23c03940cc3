"""NumPy's views and NaN-free gradients where both branches are computed: writes
through ``swapaxes``/``moveaxis``/``y[None, :]``, copies made by flattening a
non-contiguous view, rows assigned from views of the same array, two ``np.where``
on one mask, and indices kept in bounds by the ``if`` around them.  Each once
gave another value than NumPy's (or a NaN, or an error for correct code)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import symdiff
from symdiff.errors import SymdiffError, SymdiffWarning
from tests.checks import fd_derivative

X = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])


def swapaxes_write(X):
    Y = X.copy()
    T = Y.swapaxes(0, 1)
    T[0, 1] = 100.0 * X[0, 0]
    return Y[1, 0] + Y[0, 1]


def np_swapaxes_write(X):
    Y = X.copy()
    T = np.swapaxes(Y, 1, 0)
    T[2, 1] += 7.0
    return np.sum(Y * Y)


def moveaxis_write(X):
    Y = X.copy()
    T = np.moveaxis(Y, 0, -1)
    T[0, 1] = 100.0
    return Y[1, 0] + Y[0, 1]


def flattened_transpose(X):
    Y = X.copy()
    f = Y.T.reshape(-1)  # a copy: Y.T is not contiguous
    f[1] = 100.0
    return Y[0, 1] + Y[1, 0] + f[1] * X[0, 0]


def flattened_columns(X):
    Y = X.copy()
    f = Y[:, :2].ravel()  # a copy
    f[2] = 100.0
    return np.sum(Y * Y)


def flattened_rows(X):
    Y = X.copy()
    f = Y[1:].ravel()  # contiguous rows: a view
    f[0] = 100.0
    return np.sum(Y * X)


def new_axis_write(x):
    y = x.copy()
    r = y[None, :]
    r[0, 1] = 50.0 * x[0]
    return np.sum(y * x)


@pytest.mark.parametrize(
    "fn",
    [
        swapaxes_write,
        np_swapaxes_write,
        moveaxis_write,
        flattened_transpose,
        flattened_columns,
        flattened_rows,
    ],
)
def test_writes_through_views_as_numpy(fn):
    value, g = symdiff.value_and_grad(fn)(X)
    assert value == pytest.approx(fn(X), rel=1e-14)
    np.testing.assert_allclose(g, fd_derivative(fn, (X,), 0), rtol=1e-6, atol=1e-8)


def test_write_through_a_new_axis_view():
    x = np.array([1.5, 2.0, 3.0])
    value, g = symdiff.value_and_grad(new_axis_write)(x)
    assert value == pytest.approx(new_axis_write(x))
    np.testing.assert_allclose(g, fd_derivative(new_axis_write, (x,), 0), rtol=1e-6)


def rows_from_views(X):
    Y = X.copy()
    Y[0], Y[1] = Y[1], Y[0]  # NumPy: both rows become the old Y[1]
    return Y[0, 0] + 10.0 * Y[1, 0] + Y[0, 1] * Y[1, 1]


def scalars_swapped(x):
    y = x.copy()
    y[0], y[1] = y[1], y[0]  # numbers are copies: a swap
    return y[0] + 10.0 * y[1]


def test_rows_assigned_from_views_of_their_array():
    with pytest.warns(SymdiffWarning, match="assigns NumPy views one after the other"):
        value, g = symdiff.value_and_grad(rows_from_views)(X[:, :2].copy())
    Z = X[:, :2].copy()
    assert value == rows_from_views(Z)
    np.testing.assert_allclose(g, fd_derivative(rows_from_views, (Z,), 0), atol=1e-7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert symdiff.jit(scalars_swapped)(np.arange(1.0, 4.0)) == 12.0


def two_wheres(x):
    m = x > 0
    y = np.where(m, np.sqrt(x), x)
    y = np.where(m, y, 2.0 * y)
    return np.sum(y)


def two_masked_writes(x):
    y = x.copy()
    m = y > 0
    y[m] = np.sqrt(y[m])
    y[~m] = 2.0 * y[~m]
    return np.sum(y)


@pytest.mark.parametrize("fn", [two_wheres, two_masked_writes])
def test_no_nan_from_a_branch_not_taken(fn):
    # once [nan, 0.25]: a zero adjoint stretched to the array's shape was not
    # known to be zero, and 0 * (0.5 / sqrt(-1)) is NaN
    g = symdiff.grad(fn)(np.array([-1.0, 4.0]))
    np.testing.assert_array_equal(g, [2.0, 0.25])


def pick(x, i: int):
    if i < len(x):
        return x[i] * 2.0
    return 0.0


def pick_expression(x, i: int):
    return x[i] * 2.0 if i < len(x) else -1.0


def weight(x, k: int):
    if k >= 0 and k < x.shape[0]:
        return x[k] ** 2
    return np.mean(x) ** 2


def wrong_guard(x, i: int):
    return x[i] * 2.0 if i > 0 else 0.0


@pytest.mark.parametrize(
    ("fn", "i"),
    [(pick, 5), (pick, 1), (pick_expression, 7), (pick_expression, -2), (weight, 7)],
)
def test_an_index_kept_in_bounds_by_its_if(fn, i):
    x = np.array([1.0, 2.0, 3.0])
    value, g = symdiff.value_and_grad(fn)(x, i)
    assert value == fn(x, i)
    np.testing.assert_allclose(g, fd_derivative(fn, (x, i), 0), atol=1e-8)


def test_an_index_out_of_bounds_where_it_is_read_still_fails():
    with pytest.raises(SymdiffError, match="index i is out of bounds for axis 0"):
        symdiff.jit(wrong_guard)(np.array([1.0, 2.0, 3.0]), 5)


def transposed_row_flattened(A):
    B = A.copy()
    r = B.T.ravel()  # (1, m).T is contiguous: a view, as NumPy makes it
    r[0] = 100.0
    return np.sum(B * A)


def test_flattening_a_transpose_of_one_row_is_a_view():
    A = np.arange(1.0, 5.0).reshape(1, 4)
    assert symdiff.jit(transposed_row_flattened)(A) == transposed_row_flattened(A)


def test_an_index_into_an_empty_array_under_a_guard_is_refused():
    # the branch not taken is computed too: it would read an empty array
    with pytest.raises(SymdiffError, match="the array is empty"):
        symdiff.jit(pick)(np.zeros(0), 0)
