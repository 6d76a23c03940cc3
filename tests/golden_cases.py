"""Canonical functions whose generated source is pinned by tests/test_golden.py."""

import math

import numpy as np


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


def mlp_loss(W1, b1, W2, b2, W3, b3, X, Y):
    H1 = np.maximum(X @ W1 + b1, 0.0)
    H2 = np.maximum(H1 @ W2 + b2, 0.0)
    F = H2 @ W3 + b3
    return 0.5 * np.sum((F - Y) ** 2) / X.shape[0]


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def softmax_xent(W, X, Y):
    Z = X @ W
    m = np.max(Z, axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.sum(np.exp(Z - m), axis=1))
    return np.mean(lse - np.sum(Y * Z, axis=1))


# -- loops ------------------------------------------------------------------------------
def pendulum_rhs(theta, omega, damping, length):
    return omega, -9.81 / length * math.sin(theta) - damping * omega


def pendulum(damping, length, theta0):
    theta, omega, dt = theta0, 0.0, 0.01
    for _ in range(1000):
        k1t, k1o = pendulum_rhs(theta, omega, damping, length)
        k2t, k2o = pendulum_rhs(
            theta + 0.5 * dt * k1t, omega + 0.5 * dt * k1o, damping, length
        )
        theta = theta + dt * k2t
        omega = omega + dt * k2o
    return 0.5 * length**2 * omega**2 + 9.81 * length * (1 - math.cos(theta))


def smoothing(x):
    out = np.zeros(len(x))
    for i in range(1, len(x)):
        out[i] = out[i - 1] * 0.5 + x[i] ** 2
    return np.sum(out)


def halve(x):
    k = 0
    while x > 1.0:
        x = x / 2.0
        k += 1
    return x * k
