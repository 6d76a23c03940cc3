"""``raise`` statements that depend on values (``if sigma <= 0: raise
ValueError(...)``): the kernel computes their condition with the rest and
raises before it returns, on every transform and CPU target."""

from __future__ import annotations

import math

import numpy as np
import pytest

import symdiff


class ScaleError(ValueError):
    """An exception class of the user's: raised as its builtin base."""


def gaussian_nll(x, sigma):
    if sigma <= 0:
        raise ValueError(f"sigma must be positive, got {sigma}")
    if abs(x) > 1e6:
        raise ScaleError("x is out of range")
    return 0.5 * (x / sigma) ** 2 + math.log(sigma)


def checked_helper(v):
    if v < 0.0:
        raise ArithmeticError("negative")
    return math.sqrt(v)


def calls_checked_helper(x, y):
    if x > 0:
        return checked_helper(y) * x  # raises only where x > 0 and y < 0
    return y


def newton_sqrt(a):
    y = 1.0
    for _ in range(60):
        step = (y * y - a) / (2 * y)
        y -= step
        if abs(step) < 1e-14:
            break
    else:
        raise RuntimeError("no convergence")
    return y


def all_positive(x):
    if np.any(x <= 0):
        raise ValueError("weights must be positive")
    return np.sum(np.log(x))


@pytest.mark.parametrize("target", ["cpu", "python", "parallel"])
def test_values_that_pass_the_checks(target):
    g = symdiff.value_and_grad(gaussian_nll, argnums=(0, 1), target=target)
    value, (dx, ds) = g(1.5, 2.0)
    assert value == pytest.approx(gaussian_nll(1.5, 2.0))
    assert (dx, ds) == pytest.approx((1.5 / 4.0, 1 / 2.0 - 1.5**2 / 8.0))


@pytest.mark.parametrize("target", ["cpu", "python"])
@pytest.mark.parametrize(
    "kind", ["jit", "grad", "value_and_grad", "hessian", "jacobian"]
)
def test_the_kernel_raises_where_python_does(kind, target):
    transform = getattr(symdiff, kind)(gaussian_nll, target=target)
    with pytest.raises(ValueError, match=r"^sigma must be positive, got \{sigma\}$"):
        transform(1.0, -2.0)
    # a class of the user's: its builtin base, its name leading the message
    with pytest.raises(ValueError, match=r"^ScaleError: x is out of range$"):
        transform(2e6, 1.0)


def test_forward_and_reverse_mode_and_vectorize():
    with pytest.raises(ValueError, match="sigma must be positive"):
        symdiff.jvp(gaussian_nll, (1.0, -1.0), (1.0, 0.0))
    with pytest.raises(ValueError, match="sigma must be positive"):
        symdiff.vjp(gaussian_nll, 1.0, -1.0)
    batched = symdiff.vectorize(symdiff.grad(gaussian_nll, argnums=(0, 1)))
    dx, _ = batched(np.array([1.0, 2.0]), 2.0)
    np.testing.assert_allclose(dx, [0.25, 0.5])
    with pytest.raises(ValueError, match="sigma must be positive"):
        batched(np.array([1.0, 2.0]), np.array([1.0, -1.0]))


def test_a_raise_in_a_helper_holds_under_the_call_sites_condition():
    g = symdiff.grad(calls_checked_helper, argnums=(0, 1))
    assert g(-1.0, -4.0) == (0.0, 1.0)  # the helper is not called: no raise
    assert g(2.0, 4.0) == pytest.approx((2.0, 2.0 * 0.25))
    with pytest.raises(ArithmeticError, match=r"^negative$"):
        g(2.0, -4.0)


def test_for_else_raise_after_a_loop():
    value, slope = symdiff.value_and_grad(newton_sqrt)(2.0)
    assert value == pytest.approx(math.sqrt(2.0))
    assert slope == pytest.approx(0.5 / math.sqrt(2.0))


def test_arrays():
    g = symdiff.grad(all_positive)
    np.testing.assert_allclose(g(np.array([1.0, 4.0])), [1.0, 0.25])
    with pytest.raises(ValueError, match="weights must be positive"):
        g(np.array([1.0, -4.0]))


def test_the_source_shows_the_check():
    source = symdiff.grad(gaussian_nll).source
    assert "raise ValueError('sigma must be positive, got {sigma}')" in source
    assert "raise ValueError('ScaleError: x is out of range')" in source


small_slope = symdiff.grad(checked_helper)


def uses_a_checked_transform(x):
    return small_slope(x) * x


def test_a_transform_called_inside_keeps_its_checks():
    assert symdiff.jit(uses_a_checked_transform)(4.0) == pytest.approx(1.0)
    with pytest.raises(ArithmeticError, match="negative"):
        symdiff.jit(uses_a_checked_transform)(-4.0)


def raises_in_a_loop(x, n):
    for _ in range(n):
        if x < 0:
            raise ValueError("negative")
        x = x * 0.5
    return x


def test_a_raise_inside_a_loop_is_reported():
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(raises_in_a_loop)(1.0, 3)
    (diag,) = info.value.diagnostics
    assert diag.message == "`raise` inside a loop is not supported"
    assert "`for ... else: raise ...`" in diag.hint
