"""``return`` inside ``for`` and ``while`` loops (frontend/returns.py rewrites it
into a ``break`` and a ``return`` after the loop): values against Python itself,
derivatives against central finite differences, for numbers, arrays and tuples,
nested loops, ``while True`` and helpers."""

from __future__ import annotations

import numpy as np
import pytest

import symdiff
from tests.checks import fd_derivative


def newton_sqrt(a):
    x = a
    for _ in range(50):
        nx = 0.5 * (x + a / x)
        if abs(nx - x) < 1e-12:
            return nx
        x = nx
    return x


def first_above(x, threshold):
    for i in range(x.shape[0]):
        if x[i] > threshold:
            return x[i] * 2.0
    return 0.0


def fixed_point_forever(a):
    x = a
    k = 0
    while True:
        x = x - (x * x - a) / (2 * x)
        k += 1
        if k >= 20:
            return x


def first_negative_entry(X):
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            if X[i, j] < 0:
                return X[i, j] ** 2, i
    return 0.0, -1


def scaled_pair(a, b):
    for k in range(5):
        if a * k > b:
            return a * k, b
    return a, b * 2.0


def bisect(c):
    lo, hi = 0.0, 4.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        f = mid * mid * mid - c
        if abs(f) < 1e-13:
            return mid
        if f > 0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def row_until(X, limit):
    acc = np.zeros(X.shape[1])
    for row in X:
        acc = acc + row
        if np.sum(acc) > limit:
            return acc * 2.0
    return acc


def uses_helper(x):
    return newton_sqrt(x) * first_above(np.array([x, 2 * x]), 1.0)


def with_else(x):
    for k in range(4):
        if x * k > 3.0:
            return x * k
    else:
        x = x + 1.0
    return -x


CASES = [
    (newton_sqrt, (2.0,)),
    (first_above, (np.array([0.5, 1.5, 3.0]), 1.0)),
    (first_above, (np.array([0.5, 0.7]), 1.0)),
    (fixed_point_forever, (3.0,)),
    (uses_helper, (1.3,)),
    (with_else, (0.8,)),
    (with_else, (2.0,)),
]


@pytest.mark.parametrize(
    "fn, args, target",
    [(fn, args, "python") for fn, args in CASES]
    + [(fn, args, "cpu") for fn, args in CASES[:2]],  # compiled: two suffice
)
def test_values_and_gradients(fn, args, target):
    value, grad = symdiff.value_and_grad(fn, target=target)(*args)
    assert value == pytest.approx(fn(*args), rel=1e-12)
    want = fd_derivative(fn, args, 0)
    np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-8)


def test_bisection_value_and_its_zero_slope():
    # the midpoint is built from constants chosen by comparisons: slope 0, as
    # automatic differentiation (JAX too) gives for bisection
    value, slope = symdiff.value_and_grad(bisect)(5.0)
    assert value == pytest.approx(bisect(5.0), rel=1e-13)
    assert slope == 0.0


def test_tuples_of_numbers_and_ints():
    X = np.array([[1.0, 2.0], [3.0, -0.5]])
    assert symdiff.jit(first_negative_entry)(X) == first_negative_entry(X)
    assert symdiff.jit(first_negative_entry)(np.ones((2, 2))) == (0.0, -1)
    jac = symdiff.jacobian(scaled_pair, argnums=(0, 1))(0.7, 1.5)
    assert jac == ((3.0, 0.0), (0.0, 1.0))
    assert symdiff.jit(scaled_pair)(0.7, 1.5) == pytest.approx(scaled_pair(0.7, 1.5))


def test_an_array_returned_from_a_loop():
    X = np.array([[0.5, 1.0], [1.0, 2.0], [3.0, 1.0]])
    for limit in (2.0, 100.0):
        got = symdiff.jit(row_until)(X, limit)
        np.testing.assert_array_equal(got, row_until(X, limit))
        vjp = symdiff.vjp(row_until, X, limit)[1](np.ones(2))[0]
        want = fd_derivative(lambda X: np.sum(row_until(X, limit)), (X,), 0)
        np.testing.assert_allclose(vjp, want, rtol=1e-6, atol=1e-8)


def test_messages_point_at_the_users_return():
    source = symdiff.jit(first_above)
    source(np.ones(2), 0.5)
    text = source.source
    assert "returned" in text and "break" in text


def local_function_returns_from_a_loop(x):
    def first_step_over(t, limit):
        for k in range(10):
            if t * k > limit:
                return t * k
        return t

    return first_step_over(x, 3.0) * 2.0 + first_step_over(x * x, 1.0)


def test_a_local_function_returns_from_its_own_loop():
    for x in (0.7, 2.5):
        value, slope = symdiff.value_and_grad(local_function_returns_from_a_loop)(x)
        assert value == pytest.approx(local_function_returns_from_a_loop(x), rel=1e-13)
        want = float(fd_derivative(local_function_returns_from_a_loop, (x,), 0))
        assert slope == pytest.approx(want, rel=1e-6)


def forever_with_a_break_in_an_inner_else(x, c):
    while True:
        if c > 0:
            return x
        for _ in range(3):
            pass
        else:
            break
    return 2 * x


def returns_and_a_bare_return(x):
    for i in range(int(x) + 3):
        if x > 1:
            return x
        if x < -5:
            return
    return 2 * x


def test_a_break_in_a_nested_loops_else_leaves_while_true():
    # the return after `while True` stays conditional: the inner else breaks out
    assert symdiff.value_and_grad(forever_with_a_break_in_an_inner_else)(1.0, -1.0) == (
        2.0,
        2.0,
    )
    assert symdiff.value_and_grad(forever_with_a_break_in_an_inner_else)(1.0, 1.0) == (
        1.0,
        1.0,
    )


def test_the_rewrite_does_not_recurse_over_long_expressions(tmp_path, monkeypatch):
    """The rewritten tree was a deep copy (copy.deepcopy recurses): a 400-term
    sum in a function with a return in a loop raised RecursionError."""
    terms = " + ".join(["x"] * 400)
    module = tmp_path / "long_sum.py"
    module.write_text(
        "def f(x):\n"
        "    for _ in range(3):\n"
        "        if x > 10.0:\n"
        "            return x\n"
        f"    return {terms}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import long_sum

    value, slope = symdiff.value_and_grad(long_sum.f, target="python")(1.0)
    assert (value, slope) == (400.0, 400.0)


def test_a_loop_with_a_bare_return_is_reported_at_both():
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(returns_and_a_bare_return)(1.0)
    text = str(info.value)
    assert "2 problems found" in text
    assert "a loop whose other `return` has no value cannot return one" in text
    assert "`return` without a value" in text
    assert text.count("help: return the function's result from every `return`") == 2
