"""User functions that ``tests/test_cli.py`` runs the command line on.

A real file, imported by the CLI as users' files are.  It prints at import time on
purpose, to stdout and to stderr: the CLI must keep that out of its own output.
Error positions used by the tests are found by searching this file's text, so
nothing depends on line numbers.
"""

import math
import sys

import numpy as np

import symdiff

print("cli_cases imported (this line must not reach the CLI's output)")
print("cli_cases imported (nor this one, on stderr)", file=sys.stderr)

NOT_A_FUNCTION = 3.0


def poly(x, y):
    return 5.0 * x**2 - x * y**2


def chain(u):
    v = u**2
    return math.exp(math.sin(v) * math.log(v))


def helper(a):
    return a * a + math.sin(a)


def uses_helper(x, y):
    s = helper(x) + y
    return s * y


def branchy(x):
    if x > 0.0:
        return math.sqrt(x)
    return 0.5 * x


def only_positive(x):
    return math.log(x) + math.sqrt(x)


def polar(r, theta):
    return r * math.cos(theta), r * math.sin(theta)


def stopped(x):
    # symdiff sees x * const, so its derivative (x) is half the true one (2x):
    # `check` must report the mismatch.
    return x * symdiff.stop_gradient(x)


def uses_try(x):
    try:
        x = x / 2.0
    except ZeroDivisionError:
        x = 0.0
    return x


def no_args():
    return 1.0


@symdiff.grad(argnums=(0, 1))
def decorated(x, y):
    return x * y + y


def returns_bool(x):
    return x > 0.0


def kink(x):
    return abs(x)


def power(x, n, flag):
    # An int exponent and a bool switch: --arg n=i64,flag=bool.
    y = x**n
    if flag:
        return y + x
    if n > 2:
        return 2.0 * y
    return y


def smooth_exp(x):
    # Its Hessian entry is the gradient's node itself: exp(x).
    return math.exp(x)


def reciprocal(x):
    return 1.0 / x


def scaled(x, y=2.0):
    return x * y


class NotAFunction:
    def method(self, x):
        return x


def total(x):
    return np.sum(x * x)


def product_tanh(X, w):
    # A matrix product: np.dot in the kernel, BLAS in Numba.
    return np.sum(np.tanh(X @ w))


def sine_loop(x, n: int):
    s = 0.0
    for i in range(n):
        s = s + math.sin(x * s + i) * x
    return s
