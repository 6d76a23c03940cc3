"""Helpers in another module, called (and inlined) from test functions."""

import math

import numpy as np

import symdiff

SCALE = 3.0
WEIGHTS = np.array([1.0, -2.0, 0.5])


def square(a):
    return a * a


def softplus(a):
    if a > 30.0:
        return a
    return math.log1p(math.exp(a))


def energy(a, b, k=0.5):
    return k * square(a - b) + softplus(a * b)


def outer(a, b):
    return np.sin(energy(a, b)) * SCALE


# Decorated at module level: they pickle by reference (tests/test_vectorize.py).
@symdiff.grad
def decorated_grad(x):
    return x * x


@symdiff.vectorize
def decorated_vectorized(x):
    return x * x


@symdiff.custom_vjp
def clipped(x):
    return x


def _clipped_fwd(x):
    return x, None


def _clipped_bwd(residuals, g):
    return (min(g, 1.0),)


clipped.defvjp(_clipped_fwd, _clipped_bwd)
