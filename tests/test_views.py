"""Writes through NumPy views: ``for row in Y: row /= s``, ``v = y[1:3]; v +=
w``, ``T = Y.T; T[0] = 0``, ``M[i][j] = v``, ``b = a; b[0] = 1``.  symdiff's
arrays are values; the lowering writes a view's changes back into its array
and reads the views of a changed array again, so the results are NumPy's.
Each function is checked against NumPy for the value (on copies: the functions
write into their arguments as NumPy code does) and against central finite
differences for the gradient."""

from __future__ import annotations

import numpy as np
import pytest

import symdiff

X = np.arange(1.0, 7.0).reshape(3, 2)
V = np.array([0.5, -1.0, 2.0])


def normalise_rows(X):
    Y = X.copy()
    for row in Y:
        row /= np.sum(row**2)
    return np.sum(Y * X)


def scale_enumerated_rows(X):
    Y = X.copy()
    for i, row in enumerate(Y):
        row *= i + 1
    return np.sum(Y * X)


def write_into_a_row(X, v):
    M = X.copy()
    d = M[0]
    d[1] = v[0]
    d += v[1]
    return np.sum(M * M)


def add_into_a_slice(v):
    y = np.zeros(5)
    w = y[1:3]
    w += v[:2]
    return np.sum(y * np.arange(5.0))


def write_through_a_reshape(X, v):
    Y = X.copy()
    r = Y.reshape(-1)
    r[:3] = v
    return np.sum(Y**2 * np.arange(6.0).reshape(3, 2))


def write_through_a_transpose(X):
    Y = X.copy()
    T = Y.T
    T[0] = 0.0
    return np.sum(Y * X)


def write_unpacked_rows(X):
    Y = X.copy()
    a, b, c = Y
    a += 1.0
    c *= b
    return np.sum(Y * Y)


def scale_a_column(X):
    Y = X.copy()
    c = Y[:, 0]
    c *= 3.0
    return np.sum(Y * X)


def chained_indices(X):
    M = X.copy()
    M[1][0] = 5.0 * M[0][1]
    M[0][0] += M[2][1]
    return np.sum(M * M)


def a_view_sees_its_array_change(X):
    Y = X.copy()
    r = Y[1]
    Y[1, 0] = 10.0 * Y[0, 0]
    return np.sum(r * r)


def a_view_written_in_a_loop(X, n):
    Y = X.copy()
    r = Y[0]
    for _ in range(n):
        r *= 1.5
        Y[1] += r
    return np.sum(Y * Y) + np.sum(r)


def an_alias_of_the_argument(v):
    y = v
    y[0] = 7.0 * v[1]
    return np.sum(v * v)


def rebinding_is_not_a_write(X):
    Y = X.copy()
    for row in Y:
        row = row * 2.0  # a new array: Y keeps its rows
    return np.sum(Y * Y) + np.sum(row)


def a_view_of_a_view(X):
    Y = X.copy()
    r = Y[2]
    s = r[1:]
    s *= -4.0
    return np.sum(Y * X) + np.sum(r)


def rows_in_a_while_loop(X):
    Y = X.copy()
    i = 0
    while i < Y.shape[0]:
        row = Y[i]
        row -= np.mean(row)
        i += 1
    return np.sum(Y**3)


def gram_schmidt(A):
    Q = A.copy()
    for j in range(Q.shape[1]):
        q = Q[:, j]
        for k in range(j):
            q -= np.dot(Q[:, k], q) * Q[:, k]
        q /= np.linalg.norm(q)
    return np.sum(Q * (np.arange(Q.size) + 1.0).reshape(Q.shape))


def in_a_branch(X, c):
    Y = X.copy()
    r = Y[0]
    if c > 0:
        r *= 2.0
    else:
        r += 1.0
    return np.sum(Y * Y)


def views_made_by_functions(X):
    Y = X.copy()
    t = np.transpose(Y)
    t[0, 1] = 5.0 * t[1, 0]
    v = np.reshape(Y, -1)
    v[2] += 1.0
    w = np.asarray(Y)
    w[1, 1] *= 3.0
    f = np.flip(Y, axis=1)
    f[0, 0] -= 2.0
    e = np.atleast_2d(Y[1])
    e[0, 1] += 1.0
    return np.sum(Y * X)


def views_of_views(X):
    Y = X.copy()
    a = Y.T.T
    a[0, 0] = 5.0
    b = Y.T[1]
    b[0] *= 2.0
    c = Y[1][1:]
    c[0] += 7.0
    d = Y.transpose(1, 0)
    d[0] *= 3.0
    p, q = Y[0], Y[1]
    p += q
    return np.sum(Y * X)


def loops_over_views(X):
    Y = X.copy()
    for row in Y[1:]:
        row *= 2.0
    for col in Y.T:
        col += 1.0
    for r in reversed(Y):
        r -= 0.5
    for a, b in zip(Y, Y[::-1]):
        a += b  # b reads what an earlier `a += b` wrote, as in NumPy
    return np.sum(Y * X)


def chained_writes_in_a_loop(X):
    M = X.copy()
    for i in range(M.shape[0]):
        M[i][0] = 7.0 * M[i][1]
        M[i][1:] += 1.0
    return np.sum(M * M)


def scale(r, s):
    r *= s
    return r


def put(buf, i, v):
    buf[i] = v
    return v


def normalise(v):
    v /= np.sum(v)


def helpers_write_into_arguments(X):
    Y = X.copy()
    z = scale(Y[0], 2.0)
    put(Y, 1, Y[1] * 3.0)
    normalise(Y[1])
    w = scale(Y[0] * 1.0, 10.0)  # a temporary: Y does not change
    return np.sum(Y * Y) + np.sum(z) + np.sum(w)


def ring_buffer(x):
    buf = np.zeros(x.shape[0])
    s = 0.0
    for i in range(x.shape[0]):
        s += put(buf, i, x[i] ** 2)  # writes the caller's buf: the loop's state
    return s + np.sum(buf)


def stepped_writes(y):
    y = y.copy()
    y[::2] = 3.0 * y[1::2]
    y[::-1] += np.arange(4.0)
    return np.sum(y * y)


CASES = [
    (normalise_rows, (X,)),
    (scale_enumerated_rows, (X,)),
    (write_into_a_row, (X, V)),
    (add_into_a_slice, (V,)),
    (write_through_a_reshape, (X, V)),
    (write_through_a_transpose, (X,)),
    (write_unpacked_rows, (X,)),
    (scale_a_column, (X,)),
    (chained_indices, (X,)),
    (a_view_sees_its_array_change, (X,)),
    (a_view_written_in_a_loop, (X, 3)),
    (an_alias_of_the_argument, (V,)),
    (rebinding_is_not_a_write, (X,)),
    (a_view_of_a_view, (X,)),
    (rows_in_a_while_loop, (X,)),
    (gram_schmidt, (np.array([[2.0, 1.0, 0.5], [0.3, 1.5, 1.0], [1.0, 0.2, 3.0]]),)),
    (in_a_branch, (X, 1.0)),
    (in_a_branch, (X, -1.0)),
    (views_made_by_functions, (X,)),
    (views_of_views, (X,)),
    (loops_over_views, (X,)),
    (chained_writes_in_a_loop, (X,)),
    (helpers_write_into_arguments, (X,)),
    (ring_buffer, (V,)),
    (stepped_writes, (np.array([0.5, -1.0, 2.0, 3.0]),)),
]


def copies(args):
    return [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]


def finite_differences(fn, args, i, h=1e-6):
    grad = np.zeros_like(args[i])
    for idx in np.ndindex(args[i].shape):
        for sign in (1.0, -1.0):
            moved = copies(args)
            moved[i][idx] += sign * h
            grad[idx] += sign * fn(*moved) / (2 * h)
    return grad


@pytest.mark.parametrize("target", ["cpu", "python"])
@pytest.mark.parametrize(
    "fn, args", CASES, ids=[f"{c[0].__name__}-{k}" for k, c in enumerate(CASES)]
)
def test_writes_through_views_match_numpy(fn, args, target):
    argnums = tuple(i for i, a in enumerate(args) if isinstance(a, np.ndarray))
    g = symdiff.value_and_grad(fn, argnums=argnums, target=target)
    value, grads = g(*copies(args))
    assert value == pytest.approx(fn(*copies(args)), rel=1e-13)
    for i, got in zip(argnums, grads, strict=True):
        want = finite_differences(fn, args, i)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def reshaped_copy(Y):
    Z = Y.copy()
    r = Z.reshape(-1)
    r[0] = 9.0
    return np.sum(Y * Z)


def reshaped_argument(Y):
    r = Y.reshape(-1)  # a view of the caller's array: NumPy changes it
    r[0] = 5.0
    return np.sum(r)


@pytest.mark.parametrize("target", ["cpu", "parallel", "python"])
def test_the_callers_arrays_are_not_changed(target):
    for fn in (reshaped_copy, reshaped_argument):
        for transform in (symdiff.jit, symdiff.grad):
            y = np.ones((2, 3))
            transform(fn, target=target)(y)
            np.testing.assert_array_equal(y, np.ones((2, 3)))
    assert symdiff.jit(reshaped_copy, target=target)(np.ones((2, 3))) == 14.0
    x = X.copy()
    symdiff.value_and_grad(normalise_rows)(x)
    v = V.copy()
    symdiff.grad(an_alias_of_the_argument)(v)
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(v, V)


def view_made_in_one_branch(X, c):
    Y = X.copy()
    r = X[0] * 1.0
    if c > 0:
        r = Y[0]
    r += 1.0
    return np.sum(Y)


def a_view_chosen_by_a_condition(y, t):
    y = y.copy()
    v = y[0:2] if t > 0 else y[2:4]
    v[0] = 7.0
    return np.sum(y)


def shape_changing_in_place(v):
    y = v.copy()
    y += np.ones((2, 1))
    return np.sum(y)


def index_array_then_write(X):
    M = X.copy()
    M[[0, 2]][0] = 1.0  # a copy in NumPy: the write is lost there
    return np.sum(M)


@pytest.mark.parametrize(
    "fn, args, message, hint",
    [
        (
            view_made_in_one_branch,
            (X, 1.0),
            "`r` may or may not share its array with another here",
            "`r = ... .copy()`",
        ),
        (
            a_view_chosen_by_a_condition,
            (np.ones(4), 1.0),
            "`v` may or may not share its array with another here",
            "`v = ... .copy()`",
        ),
        (
            shape_changing_in_place,
            (V,),
            "writes into the array in place, so it cannot change its shape",
            "`y = y + ...`",
        ),
        (
            index_array_then_write,
            (X,),
            "where the index makes a view",
            "`M[i, j] = v`",
        ),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_writes_whose_effect_is_unclear_are_reported(fn, args, message, hint):
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(fn)(*args)
    (diag,) = info.value.diagnostics
    assert message in diag.message
    assert hint in diag.hint
