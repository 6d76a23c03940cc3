"""Statements users leave in numerical code that do not change its value:
``print`` and logging (skipped with a warning naming the line), ``with
np.errstate(...)`` and ``warnings.catch_warnings()`` (their body is lowered),
``del`` of a name."""

from __future__ import annotations

import inspect
import logging
import math
import warnings

import numpy as np
import pytest

import symdiff

LOG = logging.getLogger("symdiff.tests.statements")


def chatty(x, y):
    z = x * y
    print("z =", z)
    LOG.info("z is %s", z)
    logging.debug("z: %s", z)
    warnings.warn("this warning is the caller's")
    total = 0.0
    for i in range(3):
        print("step", i, total)
        total = total + math.sin(z * i)
    return total


def chatty_by_hand(x, y):
    """d/dx and d/dy of sum_i sin(x y i)."""
    slope = sum(i * math.cos(x * y * i) for i in range(3))
    return slope * y, slope * x


def quiet_logs(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = np.sum(y**2)
    scratch = y * 2.0
    del scratch
    return z


def line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    (k,) = [i for i, line in enumerate(lines) if text in line]
    return first + k


def test_print_and_logging_are_skipped_with_a_warning_naming_the_line():
    g = symdiff.grad(chatty, argnums=(0, 1))
    with pytest.warns(symdiff.SymdiffWarning) as record:
        got = g(0.7, 1.3)
    np.testing.assert_allclose(got, chatty_by_hand(0.7, 1.3), rtol=1e-13)
    where = {(w.filename, w.lineno): str(w.message) for w in record}
    for text, call in [
        ('print("z =", z)', "print"),
        ("LOG.info(", "LOG.info"),
        ("logging.debug(", "logging.debug"),
        ("warnings.warn(", "warnings.warn"),
        ('print("step"', "print"),
    ]:
        message = where[(__file__, line_of(chatty, text))]
        assert message == (
            f"`{call}(...)` is skipped in the kernel of `chatty`, which has no "
            "side effects; call the Python function itself to see its output"
        )
    assert len(record) == 5


def prints_once(x):
    print(x)
    return x * x


def test_a_skipped_call_warns_once_per_line():
    g = symdiff.value_and_grad(prints_once)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("default")
        g(0.25)
        value, _ = g(3)  # a second kernel, for ints: no new warning
        symdiff.grad(prints_once)(1.0)  # nor for another transform
    assert value == 9
    assert [w.category for w in record] == [symdiff.SymdiffWarning]


def test_skipped_calls_in_every_transform_and_target():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", symdiff.SymdiffWarning)
        value, slope = symdiff.jvp(chatty, (0.4, 1.1), (1.0, 0.0))
        assert slope == pytest.approx(chatty_by_hand(0.4, 1.1)[0], rel=1e-13)
        assert value == pytest.approx(sum(math.sin(0.44 * i) for i in range(3)))
        g = symdiff.grad(chatty, target="python")
        assert g(0.4, 1.1) == pytest.approx(chatty_by_hand(0.4, 1.1)[0], rel=1e-13)
        batched = symdiff.vectorize(symdiff.grad(chatty, argnums=(0, 1)))
        gx, gy = batched(np.array([0.4, 0.9]), 1.1)
        want = chatty_by_hand(0.9, 1.1)
        assert (gx[1], gy[1]) == pytest.approx(want, rel=1e-12)


def test_errstate_catch_warnings_and_del_keep_the_value():
    x = np.array([0.5, 1.5, 3.0])
    g = symdiff.value_and_grad(quiet_logs)
    value, slope = g(x)
    assert value == pytest.approx(np.sum(np.log(x) ** 2), rel=1e-14)
    np.testing.assert_allclose(slope, 2 * np.log(x) / x, rtol=1e-13)


def test_other_context_managers_and_del_of_items_are_reported():
    def opens_a_file(x):
        with open("data.txt") as fh:  # noqa: F841
            y = x * 2.0
        return y

    def deletes_an_item(x):
        y = [x, x]
        del y[0]
        return x

    with pytest.raises(symdiff.TranslationError) as err:
        symdiff.grad(opens_a_file)(1.0)
    (diag,) = err.value.diagnostics
    assert diag.message == (
        "`with` blocks are not supported, except `np.errstate` and "
        "`warnings.catch_warnings`"
    )
    assert diag.line == line_of(opens_a_file, "with open")
    with pytest.raises(symdiff.TranslationError) as err:
        symdiff.grad(deletes_an_item)(1.0)
    (diag,) = err.value.diagnostics
    assert diag.message == "`del` is supported for names only"
    assert diag.line == line_of(deletes_an_item, "del y[0]")
