"""Lists grown with ``append``: a tuple of values where the length is known when
compiling (straight-line code, unrolled loops), an array of the trip count filled
row by row where a loop node appends one item per iteration to a list empty
before it; values against Python, gradients against JAX and central finite
differences, a Hessian and a JVP against JAX; what stays unsupported, word for
word with its position.

The functions differentiated here live in this file, so that ``inspect.getsource``
reads them; the JAX oracle runs the same functions with ``np`` and ``math`` rebound
to ``jax.numpy``.
"""

from __future__ import annotations

import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import symdiff
from tests.checks import assert_close, fd_derivative, with_modules

jax.config.update("jax_enable_x64", True)

LINES = Path(__file__).read_text().splitlines()


# -- the forms users write -------------------------------------------------------------
def over_a_run_time_range(x, w):
    ys = []
    for i in range(len(x)):
        ys.append(math.sin(x[i]) * w)
    return np.sum(np.array(ys)) + ys[0] + len(ys)


def over_a_constant_range(x, w):
    ys = []
    for i in range(3):
        ys.append(math.sin(x[i]) * w)
    ys.append(x[4])  # straight-line
    return sum(ys) + np.sum(np.stack(ys)) * ys[1] + len(ys)


def over_rows(X, w):
    out = []
    for row in X:
        out.append(np.tanh(row * w))
    return np.sum(np.stack(out) ** 2) + sum(out)[0] + len(out)


def nested_lists(x, w):
    out = []
    for i in range(len(x)):
        row = []
        for j in range(len(x)):
            row.append(x[i] * x[j] * w)
        out.append(np.array(row))
    return np.sum(np.array(out) ** 2)


def with_other_state(x, w):
    ys = []
    s = 0.0
    for i in range(1, len(x)):
        s = s + x[i - 1] * w
        ys.append(s * x[i])
    return sum(ys) + s


def ints_then_floats(x, w):
    # the first item is an int, the next ones floats: the array widens
    ys = []
    for i in range(len(x)):
        ys.append(i if i == 0 else x[i] * w)
    return np.sum(np.array(ys) ** 2)


def extend_with_a_tuple(x, w):
    ys = [x[0]]
    ys.extend((x[1] * w, x[2]))
    return ys[0] * ys[1] + ys[2]


def in_a_local_function(x, w):
    def squares(v):
        ys = []
        for i in range(len(v)):
            ys.append(v[i] * v[i] * w)
        return np.array(ys)

    return np.sum(squares(x) * squares(x * 2.0))


X5 = np.array([0.3, -0.7, 1.1, 0.4, 0.9])
ROWS = np.array([[0.1, 0.2, -0.3], [0.5, -0.4, 0.2], [0.3, 0.9, -0.8]])

CASES = [
    (over_a_run_time_range, (X5, 1.5)),
    (over_a_constant_range, (X5, 1.5)),
    (over_rows, (ROWS, 1.5)),
    (nested_lists, (X5, 1.5)),
    (with_other_state, (X5, 1.5)),
    (ints_then_floats, (X5, 1.5)),
    (extend_with_a_tuple, (X5, 1.5)),
    (in_a_local_function, (X5, 1.5)),
]


def _jax(fn):
    return with_modules(fn, np=jnp, math=jnp)


@pytest.mark.parametrize(("fn", "args"), CASES, ids=[f.__name__ for f, _ in CASES])
def test_value_and_gradient_match_python_jax_and_differences(fn, args):
    value, (gx, gw) = symdiff.value_and_grad(fn, argnums=(0, 1), target="python")(*args)
    np.testing.assert_allclose(value, fn(*args), rtol=1e-12, atol=1e-12)
    want = jax.grad(_jax(fn), argnums=(0, 1))(*args)
    assert_close(gx, np.asarray(want[0]), f"grad of {fn.__name__} against JAX")
    assert_close(gw, float(want[1]), f"grad of {fn.__name__} in w against JAX")
    np.testing.assert_allclose(gx, fd_derivative(fn, args, 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gw, fd_derivative(fn, args, 1), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fn", [over_a_run_time_range, nested_lists])
def test_hessian_and_jvp_match_jax(fn):
    x, t = X5, np.linspace(0.1, 0.5, 5)
    h = symdiff.hessian(fn, target="python")(x, 1.5)
    want = np.asarray(jax.hessian(_jax(fn))(x, 1.5))
    assert_close(h, want, f"hessian of {fn.__name__}")
    value, tangent = symdiff.jvp(lambda v: fn(v, 1.5), (x,), (t,), target="python")
    want_value, want_tangent = jax.jvp(lambda v: _jax(fn)(v, 1.5), (x,), (t,))
    assert value == pytest.approx(float(want_value), rel=1e-12)
    assert tangent == pytest.approx(float(want_tangent), rel=1e-10)


def test_a_list_over_a_run_time_range_is_an_array_filled_in_a_loop():
    f = symdiff.jit(over_a_run_time_range, target="python")
    assert f(X5, 1.5) == pytest.approx(over_a_run_time_range(X5, 1.5), rel=1e-12)
    x7 = np.linspace(-1.0, 1.0, 7)  # another length, the same kernel
    assert f(x7, 1.5) == pytest.approx(over_a_run_time_range(x7, 1.5), rel=1e-12)
    assert "for " in f.source


@pytest.mark.slow
def test_compiled_with_numba():
    for fn, args in CASES[:4]:
        value, gx = symdiff.value_and_grad(fn, target="cpu")(*args)
        assert value == pytest.approx(fn(*args), rel=1e-12)
        assert_close(gx, np.asarray(jax.grad(_jax(fn))(*args)), fn.__name__)


# -- what stays unsupported --------------------------------------------------------------
def appends_under_a_condition(x):
    ys = []
    for i in range(len(x)):
        if x[i] > 0.0:
            ys.append(x[i])
    return np.sum(np.array(ys))


def appends_twice(x):
    ys = []
    for i in range(len(x)):
        ys.append(x[i])
        ys.append(x[i] * 2.0)
    return np.sum(np.array(ys))


def pops(x):
    ys = [x[0], x[1]]
    ys.pop()
    return ys[0]


def reads_while_appending(x):
    ys = []
    for i in range(len(x)):
        ys.append(x[i] + len(ys))
    return np.sum(np.array(ys))


def extends_with_an_array(x):
    ys = []
    ys.extend(x)
    return ys[0]


def appends_in_a_run_time_branch(x):
    ys = [x[0]]
    if x[1] > 0.0:
        ys.append(x[1])
    return sum(ys)


def appends_in_a_while_loop(x):
    ys = []
    i = 0
    while i < len(x):
        ys.append(x[i])
        i += 1
    return sum(ys)


HINT = "preallocate the array, `out = np.zeros(n)`, and assign `out[i] = v`"


def _line(snippet: str, after: str) -> int:
    """The line holding ``snippet`` in the user function ``after`` (above)."""
    start = LINES.index(f"def {after}(x):")
    return start + 1 + next(i for i, t in enumerate(LINES[start:]) if snippet in t)


@pytest.mark.parametrize(
    ("fn", "snippet", "target", "message"),
    [
        (
            appends_under_a_condition,
            "ys.append(x[i])",
            "ys.append",
            "appending to `ys` under a condition in a loop of run-time length "
            "gives a list of unknown length",
        ),
        (
            appends_twice,
            "ys.append(x[i] * 2.0)",
            "ys.append",
            "`ys` is appended to more than once per iteration of a loop of "
            "run-time length",
        ),
        (pops, "ys.pop()", "ys.pop", "`ys.pop` is not supported"),
        (
            reads_while_appending,
            "len(ys)",
            "ys)",
            "`ys` is used inside the loop that appends to it, where its length is "
            "known only at run time",
        ),
        (
            appends_in_a_while_loop,
            "ys.append(x[i])",
            "ys.append",
            "appending to `ys` in this loop gives a list whose length is known "
            "only at run time",
        ),
    ],
    ids=lambda v: v.__name__ if callable(v) else "",
)
def test_refused_with_a_located_message_and_a_rewrite(fn, snippet, target, message):
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(fn, target="python")(X5)
    (diag,) = info.value.diagnostics
    line = _line(snippet, fn.__name__)
    assert diag.message == message
    assert diag.hint == HINT
    assert (diag.line, diag.col) == (line, LINES[line - 1].index(target) + 1)
    assert f"{diag.location}: {message}" in str(info.value)
    assert "^" in str(info.value)


def test_other_refusals_say_what_to_write():
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(appends_in_a_run_time_branch, target="python")(X5)
    (diag,) = info.value.diagnostics
    # (appends on each path of an `if` are fine: the lengths must agree after it)
    assert diag.message == (
        "the two branches give tuples or lists of different lengths (2 and 1 items)"
    )
    assert diag.hint == "give them the same length on both paths (append on each)"
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(extends_with_an_array, target="python")(X5)
    (diag,) = info.value.diagnostics
    assert diag.message == (
        "`ys.extend` of an array gives a list whose length is not known when compiling"
    )


def running_sums(x, n: int):
    ys = []
    s = 0
    for _ in range(n):
        ys.append(s)  # an int first, a float once the loop widens `s`
        s = s + x
    return np.sum(np.array(ys))


def test_items_that_widen_with_the_loop_state():
    value, slope = symdiff.value_and_grad(running_sums, target="python")(1.5, 5)
    assert (value, slope) == (running_sums(1.5, 5), 10.0)
