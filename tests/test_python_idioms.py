"""Plain-Python idioms in numerical code: a None sentinel decided while
tracing (``best is None or v < best``), lists grown by repetition and
concatenation (``f = [0.0] * (n + 1)``, ``(a, b) + (c,)``), lists of numbers
written item by item."""

from __future__ import annotations

import math

import numpy as np
import pytest

import symdiff


def running_minimum(x):
    best = None
    for k in range(3):  # unrolled: `best is None` is known in each copy
        v = (x - 0.3 * k) ** 2
        if best is None or v < best:
            best = v
    return best


def first_positive_term(x):
    found = None
    total = 0.0
    for c in (-1.0, 0.5, 2.0):
        if found is not None and c > 0:
            total += c * x
        if found is None and c > 0:
            found = c
    return total + (found or 0.0) * x


def test_an_operand_known_while_tracing_decides_and_or():
    for x in (0.1, 0.35, 1.0):
        value, slope = symdiff.value_and_grad(running_minimum)(x)
        k = min(range(3), key=lambda k: (x - 0.3 * k) ** 2)
        assert value == pytest.approx(running_minimum(x))
        assert slope == pytest.approx(2 * (x - 0.3 * k))
    value, slope = symdiff.value_and_grad(first_positive_term)(1.5)
    assert (value, slope) == pytest.approx((first_positive_term(1.5), 2.5))


def none_before_a_loop(x, n):
    best = None
    for k in range(n):
        v = (x - 0.3 * k) ** 2
        if best is None or v < best:
            best = v
    return best


def previous_differences(xs):
    prev = None
    total = 0.0
    for v in xs:  # a loop node: `prev` is None in the first iteration only
        if prev is not None:
            total += (v - prev) ** 2
        prev = v
    return total


def test_a_none_carried_by_a_run_time_loop():
    for x, n in ((1.0, 3), (0.1, 4)):
        value, slope = symdiff.value_and_grad(none_before_a_loop)(x, n)
        k = min(range(n), key=lambda k: (x - 0.3 * k) ** 2)
        assert value == pytest.approx(none_before_a_loop(x, n))
        assert slope == pytest.approx(2 * (x - 0.3 * k))
    xs = np.array([1.0, 3.0, 2.0, 5.0])
    value, grads = symdiff.value_and_grad(previous_differences)(xs)
    assert value == previous_differences(xs)
    np.testing.assert_allclose(grads, [-4.0, 6.0, -8.0, 6.0])


def dynamic_programme(x, n: int):
    f = [0.0] * (n + 1)
    f[0] = x
    for i in range(1, n + 1):
        f[i] = 0.5 * f[i - 1] + x * i
    return f[n]


def joined(x):
    t = (x, 2 * x) + (3 * x,)  # noqa: RUF005 - the concatenation is the test
    items = [x] + [x * x]  # noqa: RUF005
    return sum(t) + items[1] * len(t)


def repeated_and_written(x):
    a = [x, 1.0] * 2
    f = [0.0, 0.0, 0.0]
    f[1] = x
    f[2] += math.sin(x)
    return sum(a) + f[1] * f[2]


@pytest.mark.parametrize(
    "fn, args",
    [
        (dynamic_programme, (0.7, 5)),
        (dynamic_programme, (0.7, 0)),
        (joined, (1.5,)),
        (repeated_and_written, (1.5,)),
    ],
)
def test_lists_repeated_joined_and_written(fn, args):
    value, slope = symdiff.value_and_grad(fn)(*args)
    assert value == pytest.approx(fn(*args), rel=1e-14)
    h = 1e-6
    moved = [(args[0] + s * h, *args[1:]) for s in (1, -1)]
    fd = (fn(*moved[0]) - fn(*moved[1])) / (2 * h)
    assert slope == pytest.approx(fd, rel=1e-7)


def repeated_pair(x, n):
    return sum([x, 1.0] * n)


def test_a_pair_repeated_at_run_time_is_reported():
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(repeated_pair)(1.0, 2)
    (diag,) = info.value.diagnostics
    assert "repeated a run-time number of times" in diag.message
    assert "np.tile" in diag.hint


TABLE = (0.0, 0.5, 0.9, 1.2)


def table_lookup(x):
    return TABLE[math.floor(x / 0.25)] * x + sum(x for _ in range(math.ceil(x)))


def test_math_floor_and_ceil_are_ints():
    for x in (0.6, 0.99):
        assert symdiff.value_and_grad(table_lookup)(x) == pytest.approx(
            (table_lookup(x), TABLE[math.floor(x / 0.25)] + math.ceil(x))
        )
    assert isinstance(symdiff.jit(lambda v: math.floor(v))(2.5), int)


def keyed_by_strings(params, x):
    total = 0.0
    for i in range(2):  # unrolled: i is known, so are the keys
        total += np.sum(params[f"W{i}"] * x) + np.sum(params["W" + str(i)] ** 2)
    return total


def test_keys_built_with_f_strings_and_str():
    params = {"W0": np.array([1.0, 2.0]), "W1": np.array([-1.0, 0.5])}
    x = np.array([0.5, 3.0])
    grads = symdiff.grad(keyed_by_strings)(params, x)
    for key, w in params.items():
        np.testing.assert_allclose(grads[key], x + 2 * w)


def formats_a_run_time_value(x, n):
    label = f"step {n}"  # noqa: F841
    return x


def test_an_f_string_of_a_run_time_value_is_reported():
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(formats_a_run_time_value)(1.0, 2)
    (diag,) = info.value.diagnostics
    assert diag.message == "an f-string of a value known only when the kernel runs"
