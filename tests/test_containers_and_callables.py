"""Dicts and lists as a loop's state, namedtuples as pytrees, partials and callable
objects called inside a function, and the messages of constructs near them: each
once failed (a zero gradient, a stale constant, a misleading message)."""

from __future__ import annotations

import functools
import math
from collections import namedtuple
from typing import NamedTuple

import numpy as np
import pytest

import symdiff
from symdiff.errors import SymdiffError
from tests.checks import fd_derivative


# -- dicts in loops of run-time length ----------------------------------------------
def dict_read_in_loop(p, xs):
    s = 0.0
    for v in xs:
        s += p["a"] * v + p["b"]
    return s


def dict_made_and_read_in_loop(x, n):
    d = {"a": x}
    s = 0.0
    for _ in range(n):
        s += d["a"] * d["a"]
    return s


def test_a_dict_read_in_a_loop_is_captured():
    xs = np.array([1.0, 2.0, 3.0])
    p = {"a": 0.5, "b": -1.0}
    # once a zero gradient (the kernel returned 0.0) and a KeyError in jit
    assert symdiff.grad(dict_read_in_loop)(p, xs) == {"a": 6.0, "b": 3.0}
    assert symdiff.jit(dict_read_in_loop)(p, xs) == dict_read_in_loop(p, xs)
    assert symdiff.value_and_grad(dict_made_and_read_in_loop)(0.7, 3) == (
        pytest.approx(3 * 0.49),
        pytest.approx(6 * 0.7),
    )


def dict_state(x, n):
    d = {"a": x, "b": 1.0}
    for _ in range(n):
        d["b"] = d["b"] * x
        d["a"] = d["a"] + d["b"]
    return d["a"] * d["b"]


def dict_rebuilt_in_other_order(x, n):
    d = {"a": x, "b": 1.0}
    for _ in range(n):
        d = {"b": d["b"] * x, "a": d["a"] + 1.0}
    return d["a"] * d["b"]


def dict_of_arrays_sgd(w, X, y, n):
    p = {"w": w, "b": 0.0}
    for _ in range(n):
        r = X @ p["w"] + p["b"] - y
        p["w"] = p["w"] - 0.01 * (X.T @ r)
        p["b"] = p["b"] - 0.01 * np.sum(r)
    return np.sum(p["w"] ** 2) + p["b"]


def dict_in_while(x):
    d = {"t": 0.0, "y": x}
    while d["t"] < 1.0:
        d["y"] = d["y"] + 0.1 * d["y"] * d["y"]
        d["t"] = d["t"] + 0.1
    return d["y"]


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (dict_state, (0.7, 4)),
        (dict_rebuilt_in_other_order, (0.7, 4)),
        (dict_in_while, (0.7,)),
    ],
)
def test_a_dict_is_a_loops_state(fn, args):
    value, slope = symdiff.value_and_grad(fn)(*args)
    assert value == pytest.approx(fn(*args), rel=1e-14)
    assert slope == pytest.approx(float(fd_derivative(fn, args, 0)), rel=1e-6)


def test_a_dict_of_arrays_is_a_loops_state():
    rng = np.random.default_rng(3)
    X, y, w = rng.normal(size=(6, 3)), rng.normal(size=6), rng.normal(size=3)
    value, g = symdiff.value_and_grad(dict_of_arrays_sgd)(w, X, y, 5)
    assert value == pytest.approx(dict_of_arrays_sgd(w, X, y, 5), rel=1e-13)
    np.testing.assert_allclose(
        g, fd_derivative(dict_of_arrays_sgd, (w, X, y, 5), 0), rtol=1e-6
    )


def dict_gains_a_key(x, n):
    d = {"a": x}
    for _ in range(n):
        d["b"] = d["a"] * 2
    return d["a"]


def test_a_dict_that_gains_keys_in_a_loop_is_named():
    with pytest.raises(SymdiffError) as info:
        symdiff.grad(dict_gains_a_key)(0.7, 3)
    text = str(info.value)
    assert "the keys of dict `d` change inside the loop" in text
    assert "before it: 'a'; after an iteration: 'a', 'b'" in text
    assert "give the dict every key" in text


# -- lists written item by item --------------------------------------------------------
def list_display_written_in_loop(x, n):
    f = [x, 0.0]
    for _ in range(n):
        f[0] = f[0] * 0.5 + x
        f[1] += f[0]
    return f[0] + f[1]


def append_after_item_write(x):
    values = [x, 2.0 * x]
    values[1] = values[0] * values[1]
    values.append(x**3)
    return sum(values)


@pytest.mark.parametrize(
    ("fn", "args"),
    [(list_display_written_in_loop, (0.7, 5)), (append_after_item_write, (0.7,))],
)
def test_lists_written_by_item(fn, args):
    value, slope = symdiff.value_and_grad(fn)(*args)
    assert value == pytest.approx(fn(*args), rel=1e-14)
    assert slope == pytest.approx(float(fd_derivative(fn, args, 0)), rel=1e-6)


# -- namedtuples -----------------------------------------------------------------------
State = namedtuple("State", ["x", "v"])


class Params(NamedTuple):
    k: float
    c: float = 0.1


Data = namedtuple("Data", ["X", "y"])


def step(s, p, dt):
    return State(s.x + dt * s.v, s.v - dt * (p.k * s.x + p.c * s.v))


def oscillator(p, x0, n):
    s = State(x0, 0.0)
    for _ in range(n):
        s = step(s, p, 0.01)
    return s.x**2 + s.v**2


def least_squares(w, d):
    return np.sum((d.X @ w - d.y) ** 2)


def unpacked(p, x):
    k, c = p
    return k * x + c * p[1] + len(p)


def as_output(x):
    return State(x * 2.0, math.sin(x))


def with_default(x):
    p = Params(x)
    return p.k * p.c


def test_namedtuples_are_pytrees():
    p = Params(2.0, 0.3)
    value, (gp, gx) = symdiff.value_and_grad(oscillator, argnums=(0, 1))(p, 1.0, 50)
    assert value == pytest.approx(oscillator(p, 1.0, 50), rel=1e-14)
    assert type(gp) is Params  # the gradient has the argument's structure
    h = 1e-6
    for field in ("k", "c"):
        up, down = (
            p._replace(**{field: getattr(p, field) + h}),
            p._replace(**{field: getattr(p, field) - h}),
        )
        want = (oscillator(up, 1.0, 50) - oscillator(down, 1.0, 50)) / (2 * h)
        assert getattr(gp, field) == pytest.approx(want, rel=1e-6)
    assert gx == pytest.approx(float(fd_derivative(oscillator, (p, 1.0, 50), 1)))
    assert symdiff.grad(unpacked)(p, 2.0) == Params(2.0, 0.6)
    assert symdiff.jit(as_output)(0.5) == State(1.0, math.sin(0.5))
    assert symdiff.grad(with_default)(0.5) == pytest.approx(0.1)


def test_a_namedtuples_arrays_are_data_not_constants():
    w = np.array([0.5, -0.2])
    d = Data(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 0.0]))
    vg = symdiff.value_and_grad(least_squares)
    assert vg(w, d)[0] == pytest.approx(least_squares(w, d))
    d.X[0, 0] = 10.0  # once a stale value: the arrays were the kernel's constants
    assert vg(w, d)[0] == pytest.approx(least_squares(w, d))
    big = Data(np.ones((100, 100)), np.ones(100))  # once "a global array"
    assert vg(np.ones(100), big)[0] == pytest.approx(least_squares(np.ones(100), big))


# -- partials and callable objects -----------------------------------------------------
def base(x, a, b=1.0):
    return a * math.sin(x) + b * x**3


PF = functools.partial(base, a=2.0)


class Square:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return self.k * x * x


class Cube(Square):
    """Inherits its __call__."""


SQ, CUBE = Square(3.0), Cube(2.0)


def calls_module_level_callables(x):
    return PF(x) + SQ(x) + CUBE(x)


def partial_made_inside(x, y):
    g = functools.partial(base, a=y * 2.0)
    h = functools.partial(base, x)
    return g(x) + h(y, b=y)


@pytest.mark.parametrize(
    ("fn", "args"),
    [(calls_module_level_callables, (0.7,)), (partial_made_inside, (0.7, 1.3))],
)
def test_partials_and_callable_objects_are_inlined(fn, args):
    value, grads = symdiff.value_and_grad(fn, argnums=tuple(range(len(args))))(*args)
    assert value == pytest.approx(fn(*args), rel=1e-14)
    for i, g in enumerate(grads):
        assert g == pytest.approx(float(fd_derivative(fn, args, i)), rel=1e-6)


# -- messages --------------------------------------------------------------------------
def constant_modular_power(x):
    return pow(7, 3, 5) * x


def modular_power_of_an_argument(x, n):
    return pow(n, 2, 5) * x


def test_three_argument_pow():
    assert symdiff.grad(constant_modular_power)(0.7) == 3.0
    with pytest.raises(SymdiffError) as info:
        symdiff.grad(modular_power_of_an_argument)(0.7, 3)
    assert "three-argument `pow`" in str(info.value)
    assert "(a ** b) % m" in str(info.value)


async def awaited(x):
    return x * x


def test_async_def_is_named():
    with pytest.raises(SymdiffError) as info:
        symdiff.grad(awaited)(1.0)
    text = str(info.value)
    assert "is an `async def` function" in text
    assert "test_containers_and_callables.py:" in text


# -- found in review -------------------------------------------------------------------
def partial_in_a_loop(x, a, n):
    g = functools.partial(base, a=a * 2)
    s = 0.0
    for i in range(n):
        s = s + g(x[i])
    return s


RELU = functools.partial(np.maximum, 0.0)


def partial_of_numpy(x):
    return np.sum(RELU(x)) + functools.partial(math.pow, 2.0)(x[0])


def partial_of_local_function(x, a):
    def inner(v, k):
        return v * k

    return functools.partial(inner, k=a)(x)


def test_partials_in_loops_of_numpy_functions_and_of_local_functions():
    X = np.array([0.5, 1.0, 1.5])
    assert symdiff.jit(partial_in_a_loop)(X, 2.0, 3) == pytest.approx(
        partial_in_a_loop(X, 2.0, 3)
    )
    assert symdiff.grad(partial_in_a_loop, argnums=1)(X, 2.0, 3) == pytest.approx(
        2 * np.sum(np.sin(X))  # once 0.0: the bound `a` was not captured
    )
    x = np.array([-1.0, 0.5, 2.0])
    assert symdiff.jit(partial_of_numpy)(x) == pytest.approx(partial_of_numpy(x))
    assert symdiff.grad(partial_of_local_function, argnums=1)(1.5, 2.0) == 1.5


class Config(NamedTuple):
    scale: float
    mode: str = "sq"


def configured(c, x):
    return c.scale * x * x if c.mode == "sq" else c.scale * x


def test_a_namedtuple_with_a_string_is_a_static_config():
    assert symdiff.jit(configured)(Config(2.0), 3.0) == 18.0
    assert symdiff.grad(configured, argnums=1)(Config(2.0, "lin"), 3.0) == 2.0
    np.testing.assert_array_equal(
        symdiff.vectorize(symdiff.jit(configured))(Config(2.0), np.arange(3.0)),
        [0.0, 2.0, 8.0],
    )
    # a namedtuple of numbers given to vectorize is a constant of its kernel too
    np.testing.assert_array_equal(
        symdiff.vectorize(symdiff.jit(with_default))(np.arange(3.0)), [0.0, 0.1, 0.2]
    )


def list_items_swapped(x, y):
    s = [x, 10.0 * x]
    s[0] = s[0] * y
    s[0], s[1] = s[1], s[0]  # a Python list's items: a swap
    return s[0] - 3.0 * s[1]


def test_a_lists_items_are_not_views():
    assert symdiff.jit(list_items_swapped)(1.0, 2.0) == list_items_swapped(1.0, 2.0)


def overwritten_after_the_if(x, c):
    y = 0.0
    if c > 0:
        y = x
    y = np.ones(3)  # the shapes after the `if` differ, but no one reads them
    return np.sum(y * x)


def dict_with_a_mode(x, n):
    d = {"a": x, "mode": "sq"}
    for _ in range(n):
        if d["mode"] == "sq":
            d["a"] = d["a"] * d["a"]
    return d["a"]


def test_unread_branch_shapes_and_dicts_holding_strings():
    x = np.arange(3.0)
    assert symdiff.jit(overwritten_after_the_if)(x, 1.0) == 3.0
    assert symdiff.grad(dict_with_a_mode)(1.1, 3) == pytest.approx(8 * 1.1**7)
