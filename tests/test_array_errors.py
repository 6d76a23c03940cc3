"""Array code at the edges: indices and slice bounds outside the array, sizes that do
not divide, bad axes, masks, and constructs that have no element-wise meaning.

Each case was a wrong number, a crash or an internal error once (found by writing
functions as users do); now each is right or a clear symdiff error at the user's
line, on both targets.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symdiff

HERE = Path(__file__).name
TARGETS = ["python", "cpu"]


def tail(x):
    return np.sum(x[2:100])


def at10(x):
    return x[10]


def at_minus7(x):
    return x[-7]


def by_fours(x):
    return np.sum(x.reshape(-1, 4) ** 2)


def first_half(x):
    return np.sum(x[: len(x) // 2] ** 2)


def band(x):
    return np.sum(np.where((x > 0.2) & (x < 0.8), x**2, 0.0))


def outside(x):
    return np.sum(np.where(np.logical_or(x < 0.2, x > 0.8), x**2, 0.0))


def line_of(fn) -> int:
    return fn.__code__.co_firstlineno + 1


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("fn", "n", "message"),
    [
        (tail, 5, "slice bound 100 is outside axis 0 of length x.shape[0]"),
        (at10, 5, "index 10 is out of bounds for axis 0 with size x.shape[0]"),
        (at_minus7, 5, "index -7 is out of bounds for axis 0 with size x.shape[0]"),
        (
            by_fours,
            6,
            "cannot reshape array of shape (x.shape[0],) into shape "
            "(x.shape[0] // 4, 4)",
        ),
    ],
)
def test_out_of_range_is_a_shape_error_at_the_users_line(fn, n, message, target):
    with pytest.raises(symdiff.ShapeError) as info:
        symdiff.grad(fn, target=target)(np.arange(float(n)))
    text = str(info.value)
    assert f"{HERE}:{line_of(fn)}:" in text
    assert message in text


@pytest.mark.parametrize("target", TARGETS)
def test_in_range_sizes_give_numpys_numbers(target):
    x = np.arange(200.0)
    assert np.array_equal(
        symdiff.grad(tail, target=target)(x), np.r_[0, 0, np.ones(98), np.zeros(100)]
    )
    assert symdiff.grad(at10, target=target)(x)[10] == 1.0
    assert symdiff.grad(at_minus7, target=target)(x)[-7] == 1.0
    assert np.allclose(symdiff.grad(by_fours, target=target)(np.ones(8)), 2.0)
    got = symdiff.grad(first_half, target=target)(np.arange(5.0))
    assert np.array_equal(got, [0.0, 2.0, 0.0, 0.0, 0.0])


@pytest.mark.parametrize("target", TARGETS)
def test_masks_with_and_or(target):
    x = np.array([0.1, 0.3, 0.5, 0.7, 0.9])
    assert np.allclose(symdiff.grad(band, target=target)(x), [0, 0.6, 1.0, 1.4, 0])
    assert np.allclose(symdiff.grad(outside, target=target)(x), [0.2, 0, 0, 0, 1.8])


def concat_bad_axis(a, b):
    return np.sum(np.concatenate([a, b], axis=1))


def list_index(x):
    return np.sum(x[[0, 2]])


def float_of_array(x):
    return float(x) * 2.0


def index_a_number(x):
    return np.sum(x)[0]


def builtin_max(x):
    return max(x, 0.0)


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (concat_bad_axis, "axis 1 is out of bounds for arrays of dimension 1"),
        (
            list_index,
            "indexing with an array or a list (fancy indexing) is not supported",
        ),
        (float_of_array, "`float` of an array is not defined element-wise"),
        (index_a_number, "a number cannot be indexed"),
        (builtin_max, "`max` of an array is not defined element-wise"),
    ],
)
def test_unsupported_array_constructs_are_translation_errors(fn, message):
    args = (np.ones(3), np.ones(2)) if fn is concat_bad_axis else (np.ones(3),)
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(fn, target="python")(*args)
    text = str(info.value)
    assert message in text
    assert f"{HERE}:{line_of(fn)}:" in text
