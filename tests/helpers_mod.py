"""Helpers in another module, called (and inlined) from test functions."""

import math

import numpy as np

SCALE = 3.0


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
