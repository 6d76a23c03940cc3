"""NumPy calls that write into an array argument (np.add.at, np.subtract.at,
np.copyto, np.fill_diagonal, a.fill, a.sort), against NumPy and finite
differences: finite-element assembly and histograms, as users write them."""

from __future__ import annotations

import numpy as np
import pytest

import symdiff
from symdiff.errors import SymdiffError
from tests.checks import fd_derivative


def _fd(fn, x, *rest):
    """d fn / d x by central differences (tests/checks.py)."""
    return fd_derivative(fn, (x, *rest), 0)


def assemble_stiffness(k, nodes):
    n = nodes.shape[0] + 1
    K = np.zeros((n, n))
    for e in range(nodes.shape[0]):
        idx = nodes[e]
        ke = k[e] * np.array([[1.0, -1.0], [-1.0, 1.0]])
        np.add.at(K, (idx[:, None], idx[None, :]), ke)
    return np.sum(K**2) + K[0, 0] * K[1, 1]


def weighted_histogram(x, bins):
    out = np.zeros(3)
    np.add.at(out, bins, x**2)  # a bin given twice gets both
    np.subtract.at(out, [0, 0], 1.0)
    return np.sum(out * np.array([1.0, 2.0, 3.0]))


def fills_and_copies(x):
    a = np.empty(len(x))
    a.fill(2.0)
    b = x.copy()
    b.sort()
    M = np.zeros((3, 3))
    np.fill_diagonal(M, x[:3])
    c = np.zeros_like(x)
    np.copyto(c, x * 3)
    return np.sum(a * b * np.linspace(1, 2, len(x))) + np.sum(M @ x[:3]) + np.sum(c**2)


def add_at_in_a_loop(x):
    acc = np.zeros(2)
    for i in range(len(x)):
        np.add.at(acc, [i % 2, 0], x[i])
    return acc[0] * 2 + acc[1]


def add_at_through_a_view(x):
    Y = np.zeros((2, 3))
    row = Y[1]
    np.add.at(row, np.array([0, 2, 2]), x)
    return np.sum(Y * np.arange(6.0).reshape(2, 3))


X = np.array([0.5, -1.0, 2.0, 0.3])
BINS = np.array([0, 2, 2, 1])


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (
            assemble_stiffness,
            (np.array([1.0, 2.0, 3.0]), np.array([[0, 1], [1, 2], [2, 3]])),
        ),
        (weighted_histogram, (X, BINS)),
        (fills_and_copies, (X,)),
        (add_at_in_a_loop, (X,)),
        (add_at_through_a_view, (X[:3],)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_inplace_calls_as_numpy(fn, args):
    assert symdiff.jit(fn)(*args) == pytest.approx(fn(*args), rel=1e-12)
    np.testing.assert_allclose(symdiff.grad(fn)(*args), _fd(fn, *args), atol=1e-6)


def multiply_at(x):
    out = np.ones(3)
    np.multiply.at(out, [0, 1], x[:2])
    return np.sum(out)


def unknown_mutation(x):
    out = np.zeros(3)
    np.random.shuffle(out)
    return np.sum(out * x)


def test_other_inplace_calls_are_reported():
    with pytest.raises(SymdiffError, match=r"`np.multiply.at` is not supported"):
        symdiff.jit(multiply_at)(X)
    with pytest.raises(SymdiffError, match="what it changes is not known"):
        symdiff.jit(unknown_mutation)(X[:3])
