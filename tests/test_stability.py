"""Hand-written logistic and softplus: recognised, stable, and exact in the tails."""

import math

import pytest

import symdiff


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def sigmoid_exp(x):
    return math.exp(x) / (1.0 + math.exp(x))


def softplus(x):
    return math.log(1.0 + math.exp(x))


def softplus_log1p(x):
    return math.log1p(math.exp(x))


def exact_sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def exact_dsigmoid(x):
    t = math.exp(-abs(x))
    return t / (1.0 + t) ** 2


POINTS = [-1000.0, -40.0, -3.0, 0.0, 0.7, 30.0, 1000.0]


@pytest.mark.parametrize("target", ["cpu", "python"])
@pytest.mark.parametrize("fn", [sigmoid, sigmoid_exp])
def test_logistic(fn, target):
    g = symdiff.value_and_grad(fn, target=target)
    for x in POINTS:
        value, dx = g(x)
        assert value == pytest.approx(exact_sigmoid(x), rel=1e-15, abs=1e-300)
        assert dx == pytest.approx(exact_dsigmoid(x), rel=1e-14, abs=1e-300)


@pytest.mark.parametrize("target", ["cpu", "python"])
@pytest.mark.parametrize("fn", [softplus, softplus_log1p])
def test_softplus(fn, target):
    g = symdiff.value_and_grad(fn, target=target)
    for x in POINTS:
        value, dx = g(x)
        expected = max(x, 0.0) + math.log1p(math.exp(-abs(x)))
        assert value == pytest.approx(expected, rel=1e-15, abs=1e-300)
        assert dx == pytest.approx(exact_sigmoid(x), rel=1e-14, abs=1e-300)


def test_recognised_in_source_and_cheap():
    g = symdiff.value_and_grad(sigmoid)
    assert "value = 1.0 / (1.0 + math.exp(-x))" in g.source
    forward = symdiff.jit(sigmoid).op_counts["total"]
    assert forward == 4
    assert g.op_counts["total"] <= 2.5 * forward
