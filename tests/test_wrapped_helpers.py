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


def uses_round(x):
    return round(x) + x


def uses_class(x):
    return Affine(2.0).a * x


def unknown_keyword(x):
    return np.sum(x, foo=1)


@pytest.mark.parametrize(
    "fn, arg, message, hint",
    [
        (uses_round, 1.5, "unknown function `round`", "np.rint(x) (half to even"),
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
