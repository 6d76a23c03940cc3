"""Loop functions that once went wrong (found by an adversarial review), each
checked against central finite differences."""

from __future__ import annotations

import math

import numpy as np
import pytest

import symdiff
from tests.checks import fd_derivative


def partly_overwritten(x):
    v = np.zeros(3)
    for i in range(3):
        v = v * 0.5 + x
        v[i] = math.sin(v[i])
    return np.sum(v)


def sine_map(x, n):
    s = x
    for _ in range(n):
        s = s * math.sin(s)
    return s


def triangular_pairs(x):
    e = 0.0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            e = e + math.sin(x[i] * x[j])
    return e


def back_substitution(U, b):
    n = len(b)
    x = np.zeros(n)
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s = s - U[i, j] * x[j]
        x[i] = s / U[i, i]
    return np.sum(x * x)


def while_in_for(x):
    total = 0.0
    for i in range(10):
        y = x + 0.01 * i
        while y > 0.1:
            y = y * 0.5
        total = total + y
    return total


def harmonic_while(x):
    s = 0.0
    i = 0
    while i < 15:
        s = s + x / (i + 1)
        i += 1
    return s * x


def read_then_scattered(x, idx, n):
    # the inner backward loop's adjoint of `v` is `x`'s and, halved, `g`'s: it
    # must not start from `x_bar` (it did, and `g` got `x_bar`'s past too)
    out = np.zeros(4)
    for _ in range(n):
        g = np.zeros(3)
        for p in range(3):
            g[p] += out[idx[p]]
        v = g * 0.5 + x
        for p in range(v.shape[0]):
            out[idx[p]] = v[p]
    return np.sum(out**2 * np.arange(4.0))


U = np.triu(np.random.default_rng(0).uniform(size=(4, 4))) + 2 * np.eye(4)
B = np.random.default_rng(1).uniform(size=4)
X5 = np.array([0.3, 0.5, 0.9, 1.1, 0.2])

CASES = [
    (partly_overwritten, (np.array([0.3, -0.4, 0.8]),), 0),
    (sine_map, (0.5, 10), 0),
    (triangular_pairs, (X5,), 0),
    (back_substitution, (U, B), 0),
    (back_substitution, (U, B), 1),
    (while_in_for, (0.373,), 0),
    (read_then_scattered, (np.array([0.3, -0.5, 0.8]), np.array([3, 1, 2]), 3), 0),
]


@pytest.mark.parametrize("checkpoint", [None, 2, 3])
@pytest.mark.parametrize(
    ("fn", "args", "argnum"), CASES, ids=[f"{c[0].__name__}-{c[2]}" for c in CASES]
)
def test_gradient(fn, args, argnum, checkpoint):
    g = symdiff.grad(fn, argnums=argnum, checkpoint=checkpoint, target="python")
    np.testing.assert_allclose(
        g(*args), fd_derivative(fn, args, argnum), rtol=1e-6, atol=1e-8
    )


def test_gradient_compiled():
    g = symdiff.grad(while_in_for)
    assert g(0.373) == pytest.approx(fd_derivative(while_in_for, (0.373,), 0), rel=1e-6)


def test_hessian_of_a_while_loop_with_an_int_counter():
    h = symdiff.hessian(harmonic_while, target="python")(0.8)
    assert h == pytest.approx(2 * sum(1 / (i + 1) for i in range(15)))


def grows(x, n):
    v = x * 1.0
    for _ in range(n):
        v = np.concatenate([v, v[-1:] * 0.5])
    return np.sum(v)


def test_state_that_grows_is_reported_at_the_loop():
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(grows, target="python")(np.ones(3), 2)
    text = str(info.value)
    assert "`v` changes shape inside the loop, from (x.shape[0],) to" in text
    assert "test_loop_regressions.py:" in text


def guarded_read(x):
    s = 0.0
    for i in range(len(x)):
        if i + 1 < len(x):
            s = s + x[i] * x[i + 1]
        else:
            s = s + x[i]
    return s


def guarded_write(x, a):
    n = len(x)
    out = np.zeros(n)
    for i in range(n - 1, -1, -1):
        if i == n - 1:
            out[i] = x[i]
        else:
            out[i] = x[i] + a * out[i + 1]
    return np.sum(out * out)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_an_index_a_branch_keeps_in_bounds_is_clamped_in_the_other(target):
    x = np.array([0.3, 0.5, 0.9, 1.1, 0.2])
    g = symdiff.grad(guarded_read, target=target)
    np.testing.assert_allclose(g(x), fd_derivative(guarded_read, (x,), 0), rtol=1e-6)
    g2 = symdiff.grad(guarded_write, argnums=(0, 1), target=target)
    gx, ga = g2(x, 0.7)
    np.testing.assert_allclose(gx, fd_derivative(guarded_write, (x, 0.7), 0), rtol=1e-6)
    assert ga == pytest.approx(fd_derivative(guarded_write, (x, 0.7), 1), rel=1e-6)
    assert "min(max(" in g.source


def index_set_before(x, n):
    i = 10
    for i in range(n):
        pass
    return x * i


def rows_set_before(X, x):
    row = np.ones(3)
    for row in X:
        pass
    return np.sum(row * x)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_a_target_assigned_before_the_loop_keeps_that_value_after_no_iteration(
    target,
):
    """Python leaves a loop's target as it was when the loop runs no iteration
    (it was 0, the value of a target first assigned in the loop)."""
    vg = symdiff.value_and_grad(index_set_before, target=target)
    assert vg(2.0, 0) == (20.0, 10.0)
    assert vg(2.0, 3) == (4.0, 2.0)
    X, x = np.arange(6.0).reshape(2, 3), np.array([1.0, 2.0, 3.0])
    for rows in (X, X[:0]):
        value, (gX, gx) = symdiff.value_and_grad(
            rows_set_before, argnums=(0, 1), target=target
        )(rows, x)
        assert value == rows_set_before(rows, x)
        assert np.array_equal(gx, rows[-1] if len(rows) else np.ones(3))
        want = np.zeros_like(rows)
        want[-1:] = x  # only the last row is read
        assert np.array_equal(gX, want)


def sine_square_map(x, n: int):
    s = x
    for _ in range(n):
        s = math.sin(s) * x + 0.1 * s * s
    return s


def test_checkpointing_a_gradients_gradient():
    """checkpoint= on the outer transform of grad(grad(f)) leaves the inner
    gradient's tape-writing loop whole (its saved states would be whole tapes;
    it raised KeyError 'param' while printing)."""
    want = symdiff.hessian(sine_square_map, target="python")(0.7, 5)
    inner = symdiff.grad(sine_square_map, target="python")
    for inner_checkpoint in (None, 2):
        if inner_checkpoint:
            inner = symdiff.grad(sine_square_map, checkpoint=2, target="python")
        outer = symdiff.grad(inner, checkpoint=2, target="python")
        assert outer(0.7, 5) == pytest.approx(want, rel=1e-13)


def written_in_a_branch(x):
    L = np.zeros(len(x))
    for i in range(len(x)):
        if i == 0:
            L[i] = x[i]
        else:
            L[i] = x[i] / L[0]  # L[0] is 0 while i == 0, in the untaken branch
    return np.sum(L)


def cholesky_logdet(A):
    n = A.shape[0]
    L = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1):
            s = A[i, j]
            for k in range(j):
                s = s - L[i, k] * L[j, k]
            if i == j:
                L[i, j] = math.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
    total = 0.0
    for i in range(n):
        total = total + 2.0 * math.log(L[i, i])
    return total


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_an_element_written_in_an_untaken_branch_leaks_no_nan(target):
    """The adjoint of an element written under ``if`` reaches it as a choice
    between zero and the adjoint (one condition for the whole array); reading
    an element of that choice keeps the condition outside, so the untaken
    branch's infinite partial never meets its zero (0 * inf was NaN)."""
    x = np.array([4.0, 2.0, 3.0])
    got = symdiff.grad(written_in_a_branch, target=target)(x)
    np.testing.assert_allclose(got, [1.0 - 5.0 / 16.0, 0.25, 0.25], rtol=1e-15)
    B = np.random.default_rng(1).normal(size=(4, 4))
    A = B @ B.T + 4.0 * np.eye(4)
    inverse = np.linalg.inv(A)  # d logdet / dA, read from the lower triangle
    want = np.tril(2.0 * inverse) - np.diag(np.diag(inverse))
    got = symdiff.grad(cholesky_logdet, target=target)(A)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def running_min_from_inf(x):
    best = math.inf
    for i in range(x.shape[0]):
        c = (x[i] - 0.3) ** 2
        if c < best:
            best = c
    return best


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_an_infinite_start_imports_math(target):
    """``best = math.inf`` before a loop: the kernel prints ``math.inf`` where the
    loop starts, and imports ``math`` (it did not: NameError)."""
    x = np.array([0.0, 1.0, 0.4, 0.9])
    value, grad = symdiff.value_and_grad(running_min_from_inf, target=target)(x)
    assert value == pytest.approx(0.01)
    np.testing.assert_allclose(grad, [0.0, 0.0, 0.2, 0.0])


COEFFS = (1.0, -2.0, 3.0, 0.5)


def horner_of_a_slice(x):
    s = 0.0
    for c in COEFFS[1:-1]:
        s = s * x + c
    return s + sum(COEFFS[::2]) * x


def test_a_constant_slice_of_a_tuple_is_a_tuple():
    value, grad = symdiff.value_and_grad(horner_of_a_slice, target="python")(0.5)
    assert value == horner_of_a_slice(0.5)
    assert grad == pytest.approx(-2.0 + 4.0)


def shrinks_to_a_number(x, n):
    y = x
    for _ in range(n):
        y = np.sum(y) * 0.5
    return np.sum(y)


def test_a_state_that_shrinks_is_reported_at_the_loop():
    """``y = np.sum(y)`` makes Python's ``y`` a number; it was broadcast back to
    the array's shape (37.5 where Python gives 7.5)."""
    run = symdiff.jit(shrinks_to_a_number, target="python")
    assert run(np.array([3.0]), 2) == shrinks_to_a_number(np.array([3.0]), 2)
    with pytest.raises(symdiff.ShapeError) as info:
        run(np.arange(5.0), 1)
    assert "`y` must keep its shape through the loop" in str(info.value)
    assert "test_loop_regressions.py:" in str(info.value)


def push(buf, i, v):
    buf[i] = v  # NumPy: the caller's array changes
    return v


def ring(x):
    buf = np.zeros(x.shape[0])
    s = 0.0
    for i in range(x.shape[0]):
        s += push(buf, i, x[i] ** 2)
    return s + np.sum(buf)


def set_row(a, i, v):
    a[i] = v
    return a


def functional_writes(x):
    buf = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        buf = set_row(buf, i, x[i] ** 2)
    return np.sum(buf)


def test_a_helper_that_writes_into_its_argument_changes_the_callers_array():
    """`push(buf, i, v)` writes into the caller's `buf`, as NumPy's does: `buf`
    becomes the loop's state though no statement of the loop assigns it."""
    x = np.arange(1.0, 4.0)
    value, grad = symdiff.value_and_grad(ring, target="python")(x)
    assert value == ring(x)
    np.testing.assert_allclose(grad, 4 * x)
    grad = symdiff.grad(functional_writes, target="python")(x)
    np.testing.assert_allclose(grad, 2 * x)  # the array returned and assigned


def neighbour_product(x):
    s = 0.0
    n = x.shape[0]
    for i in range(n):
        nxt = x[i + 1] if i + 1 < n else 0.0  # Python reads x[n] never
        s += x[i] * nxt
    return s


def find_first_above(x, thr):
    i = 0
    n = x.shape[0]
    while i < n and x[i] < thr:  # x[n] is never read either
        i += 1
    if i < n:
        return x[i] * 2.0
    return 0.0


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_indices_guarded_by_a_conditional_expression_or_and(target):
    """Both arms of ``a if c else b`` and both sides of ``c and d`` run here, so
    the index there is clamped, as in an ``if`` statement (python raised
    IndexError; cpu read and wrote one element past the array)."""
    x = np.array([1.0, 2.0, 3.0, 4.0])
    grad = symdiff.grad(neighbour_product, target=target)(x)
    np.testing.assert_allclose(grad, [2.0, 4.0, 6.0, 3.0])
    value = symdiff.jit(find_first_above, target=target)(x, 10.0)
    assert value == 0.0
    assert symdiff.jit(find_first_above, target=target)(x, 2.5) == 6.0
