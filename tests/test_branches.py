"""Branches: if-conversion gives branch-correct derivatives and no NaN from an
untaken branch."""

import math

import pytest

import symdiff


def guarded_sqrt(x):
    if x > 0.0:
        return math.sqrt(x)
    return 0.0


def guarded_log(x):
    if x <= 1e-3:
        y = x
    else:
        y = math.log(x)
    return 2.0 * y


def expr_branch(x):
    return math.sqrt(x) if x > 0 else -x


def elif_chain(x, y):
    if x < -1.0:
        r = x * y
    elif x < 1.0:
        r = math.sin(x) * y
    elif y > 0:
        return x**2 + y
    else:
        r = math.exp(x) - y
    return r * r


def d_elif_chain(x, y):
    if x < -1.0:
        r, rx, ry = x * y, y, x
    elif x < 1.0:
        r, rx, ry = math.sin(x) * y, math.cos(x) * y, math.sin(x)
    elif y > 0:
        return 2 * x, 1.0
    else:
        r, rx, ry = math.exp(x) - y, math.exp(x), -1.0
    return 2 * r * rx, 2 * r * ry


def nested_returns(x):
    if x > 0.0:
        if x > 2.0:
            return math.log(x)
        t = math.sqrt(x)
    else:
        t = x * x
    if t > 1.0 and x < 10.0:
        return t * 3.0
    return t + x


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_untaken_branch_does_not_leak_nan(target):
    g = symdiff.grad(guarded_sqrt, target=target)
    assert g(0.0) == 0.0
    assert g(-4.0) == 0.0
    assert g(4.0) == pytest.approx(0.25)
    g = symdiff.grad(guarded_log, target=target)
    assert g(0.0) == 2.0
    assert g(-5.0) == 2.0
    assert g(2.0) == pytest.approx(1.0)
    g = symdiff.grad(expr_branch, target=target)
    assert g(0.0) == -1.0
    assert g(-1.0) == -1.0


@pytest.mark.parametrize(
    "x,y", [(-2.0, 0.5), (0.3, -0.7), (1.5, 0.4), (1.5, -0.4), (-1.0, 2.0)]
)
def test_elif_chain_with_early_return(x, y):
    g = symdiff.value_and_grad(elif_chain, argnums=(0, 1))
    value, grads = g(x, y)
    assert value == pytest.approx(elif_chain(x, y), rel=1e-14)
    assert grads == pytest.approx(d_elif_chain(x, y), rel=1e-13)


@pytest.mark.parametrize("x", [-3.0, 0.5, 1.5, 2.5, 50.0])
def test_nested_returns_match_finite_differences(x):
    g = symdiff.value_and_grad(nested_returns)
    value, dx = g(x)
    assert value == pytest.approx(nested_returns(x), rel=1e-14)
    h = 1e-6
    fd = (nested_returns(x + h) - nested_returns(x - h)) / (2 * h)
    assert dx == pytest.approx(fd, rel=1e-6)


def piecewise_ops(x, y):
    a = max(x, y) + min(x, 2.0 * y)
    b = abs(x - y) + math.floor(x) + math.copysign(x, y)
    return a * b


@pytest.mark.parametrize("x,y", [(0.3, 1.7), (2.2, -0.6), (-1.4, -2.9)])
def test_kinks_away_from_ties(x, y):
    g = symdiff.grad(piecewise_ops, argnums=(0, 1))
    h = 1e-7
    fdx = (piecewise_ops(x + h, y) - piecewise_ops(x - h, y)) / (2 * h)
    fdy = (piecewise_ops(x, y + h) - piecewise_ops(x, y - h)) / (2 * h)
    assert g(x, y) == pytest.approx((fdx, fdy), rel=1e-6)


def conditions(x, y):
    positive = x > 0
    if (positive and not y < 0) or x == y:
        return x * y
    return x + y


def test_boolean_values_and_connectives():
    g = symdiff.grad(conditions, argnums=(0, 1))
    assert g(1.0, 2.0) == (2.0, 1.0)
    assert g(1.0, -2.0) == (1.0, 1.0)
    assert g(-1.0, -1.0) == (-1.0, -1.0)


def static_branch(x, n):
    if n > 2:
        return x**n
    return -x


def test_branch_on_int_argument():
    g = symdiff.grad(static_branch)
    assert g(2.0, 3) == 12.0
    assert g(2.0, 1) == -1.0


CUTS = (0.3, 1.1, 0.7, 2.0, 1.5, 0.2, 0.9, 1.7, 1.2, 0.4, 0.8, 1.9, 0.6, 1.3)


def halve_or_square(x):
    s = x
    for c in CUTS:  # a tuple: unrolled, an `if` in each copy
        if s > c:
            s = s * 0.5
        else:
            s = s * s + c
    return s


def halve_or_square_slope(x):
    s, slope = x, 1.0
    for c in CUTS:
        if s > c:
            s, slope = s * 0.5, slope * 0.5
        else:
            s, slope = s * s + c, slope * 2 * s
    return slope


@pytest.mark.parametrize("x", [0.25, 0.8, 1.6, 3.0])
def test_chained_branches_stay_linear_in_the_backward_pass(x):
    """An `if` in each of 14 unrolled steps: the adjoint of `s` is one select per
    step (it was split into one term per combination of branches, 2**14)."""
    g = symdiff.grad(halve_or_square)
    assert len(g.source.splitlines()) < 120
    assert g(x) == pytest.approx(halve_or_square_slope(x), rel=1e-12)
