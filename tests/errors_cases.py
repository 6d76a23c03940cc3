"""User functions that symdiff must reject with a clear error.

``tests/test_errors.py`` differentiates these and checks the messages, including
file:line:col positions.  Those positions are found by searching this file's text
for a snippet, so the snippets used by the tests must stay unique in this file
(the tests check that).  Edit freely otherwise: nothing depends on line numbers.
"""

# ruff: noqa: E731, F821, F841

import contextlib
import math

import numpy as np

import symdiff

SCALE = 3.0


# -- unsupported statements -----------------------------------------------------------
def uses_while(x):
    while x > 1.0:
        x = x / 2.0
    return x


def uses_try(x):
    try:
        y = math.log(x)
    except ValueError:
        y = 0.0
    return x * 2.0


def uses_with(x):
    with contextlib.suppress(ValueError):
        y = math.log(x)
    return x * 3.0


def uses_raise(x):
    if x < 0.0:
        raise ValueError("x must be non-negative")
    return math.sqrt(x)


def uses_global(x):
    global SCALE
    return x * SCALE


def try_then_use(x):
    try:
        guarded = math.log(x)
    except ValueError:
        guarded = 0.0
    return x * guarded


def uses_nonlocal(x):
    total = x

    def bump(t):
        nonlocal total
        total = total + t
        return total

    return bump(x) + total


# -- unsupported expressions ----------------------------------------------------------
def returns_lambda(x):
    sq = lambda t: t * t
    return sq


def uses_set_comprehension(x):
    terms = {x**k for k in range(3)}
    return x + 1.0


def many_problems(x, y):
    total = 0.0
    for _ in range(20):
        total = total + x
        if total > 10.0:
            raise ValueError("too large")
    cube = lambda *v: v[0] ** 3
    powers = {y**p for p in range(4)}
    return total * y


def uses_yield(x):
    yield x * 2.0


def compares_with_is(x):
    return 1.0 if x is None else x


def assigns_attribute(x):
    x.cached = 1.0
    return x


# -- names and calls ------------------------------------------------------------------
def calls_unknown_math(x):
    return math.isqrt(x) * 2.0


def calls_unknown_numpy(x):
    return np.spacing(x) + x


def seeds_the_generator(x):
    y = x * 2.0
    np.random.seed(0)
    return y


def uses_unknown_name(x):
    return x * not_defined_anywhere


def uses_before_assignment(x):
    a = b_late + x
    b_late = 2.0
    return a


def defined_in_one_branch(x):
    if x > 0.0:
        only_then = x * 2.0
    return only_then + 1.0


# -- outputs --------------------------------------------------------------------------
def returns_pair(x):
    return x, x * 2.0


def returns_scalar(x):
    return x * x


def returns_triple(x):
    return x, x * 2.0, x * 3.0


def returns_string(x):
    return "not a number"


def returns_none(x):
    return None


def falls_off_end(x):
    if x > 0.0:
        return x * 2.0


def never_returns(x):
    y = x * 2.0


# -- arguments ------------------------------------------------------------------------
def two_args(x, y):
    return x * y + y


def square(x):
    return x * x


def flag_scale(x, flag):
    return x * 2.0 if flag else x


# -- helpers --------------------------------------------------------------------------
def fact_like(x):
    if x < 1.0:
        return 1.0
    return x * fact_like(x - 1.0)


def calls_recursive(x):
    return fact_like(x) + x


def helper_with_while(t):
    while t > 1.0:
        t = t / 2.0
        if t > 1e300:
            raise ValueError("negative")
    return t


def calls_bad_helper(x):
    return helper_with_while(x) * 2.0


def middle_helper(u):
    return helper_with_while(u) + 1.0


def calls_helper_twice_removed(x):
    return middle_helper(x) * x


def helper_twice_on_one_line(x):
    return helper_with_while(x) + helper_with_while(x * 2.0)


# -- loops ------------------------------------------------------------------------------
def lambda_in_unrolled_loop(x):
    acc = x
    for i in range(5):
        f = lambda *z: z[0] + i
        acc = acc * 2.0
    return acc


def range_of_argument(x, n):
    acc = 0.0
    for i in range(n):
        acc = acc + x
    return acc


# -- parameters -------------------------------------------------------------------------
def star_args(x, *rest):
    return x * 2.0


def keyword_only(x, *, scale):
    return x * scale


# -- positions in indented, decorated and lambda definitions ----------------------------
class Model:
    @staticmethod
    def energy(x):
        return x * math.frexp(x)[1]


@symdiff.grad(target="python")
def decorated(x):
    return x * math.frexp(x)[0]


module_lambda = lambda x: {x, x * 2.0}


# -- has_aux, arrays before the first call -----------------------------------------------
def value_is_a_pair(x):
    return (x, x * 2.0), 1.0


def array_layer(W, b, X):
    H = np.tanh(X @ W + b)
    return np.sum(H)
