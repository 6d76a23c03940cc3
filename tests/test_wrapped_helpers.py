"""Calls of the user's helpers under decorators, and of what symdiff cannot
differentiate: a helper under ``@numba.njit`` or ``@functools.lru_cache`` is
Python source like any other (inlined); ``round``, ``int`` and classes get help
that fits them."""

from __future__ import annotations

import functools
import math

import numba
import numpy as np
import pytest

import symdiff


@numba.njit
def jitted_helper(x):
    return math.sin(x) * x


@functools.lru_cache(maxsize=128)
def cached_helper(x):
    return x**3


def uses_wrapped_helpers(x):
    return jitted_helper(x) + cached_helper(x)


def test_helpers_under_njit_and_lru_cache_are_inlined():
    x = 0.7
    grad = symdiff.grad(uses_wrapped_helpers, target="python")
    assert grad(x) == pytest.approx(math.cos(x) * x + math.sin(x) + 3 * x**2)


class Affine:
    def __init__(self, a):
        self.a = a


def uses_frexp(x):
    return math.frexp(x)[0] + x


def uses_class(x):
    return Affine(2.0).a * x


def unknown_keyword(x):
    return np.sum(x, foo=1)


@pytest.mark.parametrize(
    "fn, arg, message, hint",
    [
        (uses_frexp, 1.5, "unknown function `math.frexp`", None),
        (uses_class, 1.5, "unknown function `Affine`", "`Affine` is a class"),
        (
            unknown_keyword,
            np.ones(3),
            "np.sum() got an unexpected keyword argument 'foo'",
            None,
        ),
    ],
)
def test_what_cannot_be_called_says_what_to_write(fn, arg, message, hint):
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(fn, target="python")(arg)
    text = str(info.value)
    assert message in text
    assert "<locals>" not in text
    if hint is not None:
        assert hint in text


# -- decorators written with functools.wraps ------------------------------------------
def scaled(k):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(x):
            return k * fn(x)  # the wrapper's arithmetic is part of the function

        return wrapper

    return decorate


def timed(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        result = fn(*args, **kwargs)  # a pass-through: the wrapped function's value
        wrapper.calls = getattr(wrapper, "calls", 0) + 1
        return result

    return wrapper


def doubled(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return 2 * fn(*args, **kwargs)

    return wrapper


@scaled(10.0)
def scaled_square(x):
    return x * x


@timed
def timed_product(x, y):
    return x * math.sin(y)


@doubled
def doubled_cube(x):
    return x**3


def uses_decorated(x):
    return scaled_square(x) + timed_product(x, 2.0)


def test_a_wrapper_with_parameters_is_lowered_with_its_arithmetic():
    # it was dropped for the function it wraps (functools.wraps' __wrapped__)
    assert symdiff.grad(scaled_square)(1.5) == pytest.approx(30.0)
    x = 0.8
    want = 20.0 * x + math.sin(2.0)
    assert symdiff.grad(uses_decorated)(x) == pytest.approx(want, rel=1e-14)


def test_a_pass_through_wrapper_stands_for_the_function_it_wraps():
    g = symdiff.grad(timed_product, argnums=(0, 1))
    x, y = 1.5, 0.3
    assert g(x, y) == pytest.approx((math.sin(y), x * math.cos(y)), rel=1e-14)


def test_a_wrapper_taking_args_that_changes_the_result_is_reported():
    with pytest.raises(symdiff.SourceUnavailableError) as info:
        symdiff.grad(doubled_cube)
    text = str(info.value)
    assert (
        "`doubled_cube` is wrapped by a decorator's `wrapper(*args, **kwargs)`" in text
    )
    assert "help: give the wrapper the parameters" in text


# -- symdiff transforms called inside a function ---------------------------------------
@symdiff.grad
def slope(x):
    return x * math.sin(x)


def uses_slope(x):
    return slope(x) * x


def slope_by_hand(x):
    return math.sin(x) + x * math.cos(x)


def test_a_grad_called_inside_is_its_derivative_not_its_function():
    x = 0.7
    assert symdiff.jit(uses_slope)(x) == pytest.approx(slope_by_hand(x) * x)
    # and differentiating through it gives the second derivative
    second = 2 * math.cos(x) - x * math.sin(x)
    want = second * x + slope_by_hand(x)
    assert symdiff.grad(uses_slope)(x) == pytest.approx(want, rel=1e-13)
    assert symdiff.grad(uses_slope, target="python")(x) == pytest.approx(want)


power_and_slopes = symdiff.value_and_grad(lambda a, b: a * b**2, argnums=(0, 1))


def uses_value_and_grad(a, b):
    value, (da, db) = power_and_slopes(a, b)
    return value + da * db


def test_a_value_and_grad_called_inside_gives_its_tuple():
    a, b = 1.5, 2.0  # a b^2 + 2 a b^3
    g = symdiff.grad(uses_value_and_grad, argnums=(0, 1))
    assert g(a, b) == pytest.approx((b**2 + 2 * b**3, 2 * a * b + 6 * a * b**2))


tanh_energy_grad = symdiff.grad(lambda w: np.sum(np.tanh(w) ** 2))


def uses_array_grad(w):
    return np.sum(tanh_energy_grad(w) * w)


def test_a_grad_of_arrays_called_inside():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def oracle(w):
        return jnp.sum(jax.grad(lambda v: jnp.sum(jnp.tanh(v) ** 2))(w) * w)

    w = np.array([0.3, -0.2, 0.5, 1.1])
    value, slope_w = symdiff.value_and_grad(uses_array_grad)(w)
    assert value == pytest.approx(float(oracle(w)), rel=1e-13)
    np.testing.assert_allclose(slope_w, jax.grad(oracle)(w), rtol=1e-12)


def test_transforms_of_functions_under_njit_and_lru_cache():
    """The decorated function itself is transformed as the Python function it
    wraps (its `py_func`, its `__wrapped__`)."""
    x = 0.7
    assert symdiff.grad(jitted_helper)(x) == pytest.approx(
        math.cos(x) * x + math.sin(x)
    )
    assert symdiff.grad(cached_helper)(x) == pytest.approx(3 * x**2)
    assert symdiff.jit(jitted_helper).__class__.__name__ == "Compiled"
