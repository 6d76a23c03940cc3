"""Canonical functions whose generated source is pinned by tests/test_golden.py."""

import math


def seed004(u):
    return math.exp(math.sin(u**2) * math.log(u**2))


def quickstart(x, y):
    v = x * x
    return math.exp(math.sin(v) * math.log(v)) + y * v


def relu(a):
    return max(a, 0.0)


def relu_net(w1, b1, w2, b2, w3, b3, x, y):
    a1 = w1 * x + b1
    h1 = relu(a1)
    a2 = w2 * h1 + b2
    h2 = relu(a2)
    f = w3 * h2 + b3
    return 0.5 * (f - y) ** 2


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def branchy(x, y):
    if x > 0.0:
        r = math.sqrt(x) * y
    else:
        r = -x * y
    return r if y > 1.0 else r * r


def polar(r, theta):
    x = r * math.cos(theta)
    y = r * math.sin(theta)
    return math.hypot(x, y) + math.atan2(y, x)
