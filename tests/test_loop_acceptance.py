"""Issue 4's acceptance points that are about loops as a whole: graph size and build
time independent of the trip count, tape memory (with and without checkpointing),
and the errors for loop constructs symdiff rejects."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import symdiff
from tests.checks import fd_derivative

DT = 0.01


def rk4_rhs(theta, omega, damping, length):
    return omega, -9.81 / length * math.sin(theta) - damping * omega


def rk4(steps):
    def pendulum(damping, length, theta0):
        theta, omega = theta0, 0.0
        for _ in range(steps):
            k1t, k1o = rk4_rhs(theta, omega, damping, length)
            k2t, k2o = rk4_rhs(
                theta + 0.5 * DT * k1t, omega + 0.5 * DT * k1o, damping, length
            )
            k3t, k3o = rk4_rhs(
                theta + 0.5 * DT * k2t, omega + 0.5 * DT * k2o, damping, length
            )
            k4t, k4o = rk4_rhs(theta + DT * k3t, omega + DT * k3o, damping, length)
            theta = theta + DT / 6.0 * (k1t + 2.0 * k2t + 2.0 * k3t + k4t)
            omega = omega + DT / 6.0 * (k1o + 2.0 * k2o + 2.0 * k3o + k4o)
        return 0.5 * length**2 * omega**2 + 9.81 * length * (1 - math.cos(theta))

    return pendulum


POINT = (0.1, 1.5, 0.3)


def reference_gradient(f, point):
    """Central differences in every argument (the loop runs in plain Python)."""
    return np.array([fd_derivative(f, point, i) for i in range(len(point))])


def test_graph_and_source_do_not_grow_with_the_trip_count():
    sizes = {}
    for steps in (100, 10_000):
        g = symdiff.grad(rk4(steps), argnums=(0, 1, 2), target="python")
        kernel = g.kernel
        sizes[steps] = (len(kernel.schedule.nodes), kernel.source.count("\n"))
        text = re.sub(r"\b(100|10000|99|9999)\b", "N", kernel.source)
        sizes[steps] += (text.split("\n", 1)[1],)
    assert sizes[100] == sizes[10_000]
    assert sizes[100][1] < 120  # two loops, not 10 000 unrolled steps


def test_rk4_ten_thousand_steps_gradient_is_right():
    f = rk4(10_000)
    g = symdiff.grad(f, argnums=(0, 1, 2))
    want = reference_gradient(f, POINT)
    np.testing.assert_allclose(g(*POINT), want, rtol=1e-5, atol=1e-8)
    # 10 000 rows of the values the backward loop reads (no more than 16 per step)
    assert 0 < g.tape_bytes(*POINT) <= 16 * 8 * 10_000


@pytest.mark.slow
def test_checkpointing_bounds_the_tape_of_a_million_steps():
    f = rk4(1_000_000)
    full = symdiff.grad(f, argnums=(0, 1, 2))
    cp = symdiff.grad(f, argnums=(0, 1, 2), checkpoint=1000)
    full_bytes = full.tape_bytes(*POINT)
    cp_bytes = cp.tape_bytes(*POINT)
    per_step = full_bytes // 1_000_000
    # 1000 saved states (2 numbers) + one 1000-step segment's tape
    bound = 1000 * 2 * 8 + 1000 * per_step
    assert cp_bytes <= bound < full_bytes // 400
    np.testing.assert_allclose(cp(*POINT), full(*POINT), rtol=1e-12)


@pytest.mark.parametrize("every", [1, 7, 64, 1000, 5000])
def test_checkpointed_gradient_equals_the_taped_one(every):
    f = rk4(1000)
    want = symdiff.grad(f, argnums=(0, 1, 2), target="python")(*POINT)
    got = symdiff.grad(f, argnums=(0, 1, 2), checkpoint=every, target="python")
    np.testing.assert_allclose(got(*POINT), want, rtol=1e-13)
    assert (
        got.tape_bytes(*POINT)
        < symdiff.grad(f, argnums=(0, 1, 2), target="python").tape_bytes(*POINT)
        or every >= 1000
    )


def sum_of_sines(x, n):
    s = 0.0
    for i in range(n):
        s = s + math.sin(x * i)
    return s


def test_a_loop_whose_backward_needs_nothing_has_no_tape_and_no_forward_loop():
    g = symdiff.grad(sum_of_sines, target="python")
    assert g(0.3, 5) == pytest.approx(sum(i * math.cos(0.3 * i) for i in range(5)))
    assert g.tape_bytes(0.3, 5) == 0
    assert len(re.findall(r"^ +for \w+ in range", g.source, re.M)) == 1


def halve(x):
    while x > 1.0:
        x = x / 2.0
    return x * x


def test_the_tape_of_a_while_loop_is_reported_per_iteration():
    def f(x):
        while x > 1.0:
            x = 0.5 * x + 0.1 * math.sin(x)  # shrinks: ends below 1
        return x

    g = symdiff.grad(f, target="python")
    assert g(3.0) == pytest.approx(reference_gradient(f, (3.0,))[0], rel=1e-6)
    with pytest.raises(ValueError, match="bytes per iteration"):
        g.tape_bytes(3.0)


def test_checkpoint_must_be_a_positive_int():
    for bad in (0, -3, 2.5, True):
        with pytest.raises(
            symdiff.ArgumentError, match="checkpoint must be a positive int"
        ):
            symdiff.grad(halve, checkpoint=bad)


# -- constructs symdiff rejects, with what to write instead ------------------------
def step_from_argument(x, k):
    s = 0.0
    for i in range(0, 10, k):
        s = s + x * i
    return s


def changes_shape(x, n):
    acc = x[:2]
    for i in range(n):
        acc = x[:3] * i
    return np.sum(acc)


def used_after_loop(x, n):
    for i in range(n):
        y = x * i
    return y


def for_else_with_break(x, n):
    for i in range(n):
        if x > i:
            break
    else:
        x = x * 2.0
    return x


def range_of_four(x, n):
    s = 0.0
    for i in range(0, n, 1, 2):
        s = s + x
    return s


def range_of_a_float(x, n):
    s = 0.0
    for i in range(x):
        s = s + x
    return s


def loop_over_a_number(x, n):
    s = 0.0
    for v in x:
        s = s + v
    return s


def enumerate_from_a_float(x, n):
    s = 0.0
    for i, v in enumerate(range(n), x):
        s = s + x * v
    return s


def empty_zip(x, n):
    s = 0.0
    for pair in zip():
        s = s + x
    return s


def while_else_with_break(x, n):
    while x > 1.0:
        x = x / 2.0
        if x < n:
            break
    else:
        x = x * 2.0
    return x


def write_into_a_number(x, n):
    y = x * 2.0
    for i in range(n):
        y[i] = x
    return y


def write_a_tuple(x, n):
    out = np.zeros(3)
    for i in range(n):
        out[i] = (x, x)
    return np.sum(out)


def stepped_slice_write(x, n):
    out = np.zeros((3, 4))
    for i in range(n):
        out[i, ::2] = x
    return np.sum(out)


def tuple_becomes_number(x, n):
    pair = (x, x)
    for i in range(n):
        pair = x * i
    return pair


def break_over_tuple_of_pairs(x, n):
    s = 0.0
    for p in ((x, 1.0), (2.0, x)):
        if s > 1.0:
            break
        s = s + p[0] * p[1]
    return s


@pytest.mark.parametrize(
    ("fn", "args", "message", "hint"),
    [
        (
            step_from_argument,
            (1.0, 2),
            "a `range` step must be a non-zero integer constant",
            "write the step as a literal",
        ),
        (
            range_of_four,
            (1.0, 3),
            "`range` takes 1 to 3 positional arguments",
            "write `range(stop)`",
        ),
        (
            range_of_a_float,
            (1.0, 3),
            "`range` bounds must be integers",
            "use int arguments, len(x), x.shape[k]",
        ),
        (
            loop_over_a_number,
            (1.0, 3),
            "a `for` loop must run over `range(...)`",
            "loop over `range(len(x))`",
        ),
        (
            enumerate_from_a_float,
            (1.0, 3),
            "the start of `enumerate` must be an integer",
            "use an int constant",
        ),
        (empty_zip, (1.0, 3), "`zip` takes one or more iterables", "write `zip(x, y)`"),
        (
            write_into_a_number,
            (1.0, 3),
            "element assignment needs an array",
            "create it first",
        ),
        (
            write_a_tuple,
            (1.0, 3),
            "the assigned value must be a number or an array",
            "assign one element at a time",
        ),
        (
            tuple_becomes_number,
            (1.0, 3),
            "`pair` changes from 2 value(s) to something else inside the loop",
            "must keep its structure",
        ),
        (
            break_over_tuple_of_pairs,
            (1.0, 3),
            "`break` in a loop over a tuple of non-numbers is not supported",
            "loop over `range(len(t))`",
        ),
    ],
    ids=lambda v: v.__name__ if callable(v) else "",
)
def test_rejected_loop_constructs_say_what_to_write(fn, args, message, hint):
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(fn, target="python")(*args)
    text = str(info.value)
    assert message in text and hint in text
    assert "test_loop_acceptance.py:" in text


def test_a_variable_first_assigned_in_the_loop_keeps_its_last_value():
    g = symdiff.grad(used_after_loop, target="python")
    assert used_after_loop(1.5, 4) == 4.5
    assert g(1.5, 4) == 3.0  # y = x * 3 after the last iteration

    def last_index(x, n):
        s = 0.0
        for i in range(n):
            s = s + x * i
        return s * i

    assert symdiff.jit(last_index, target="python")(0.5, 4) == last_index(0.5, 4)


def test_a_loop_variable_that_changes_shape_is_reported():
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(changes_shape, target="python")(np.ones(4), 3)
    assert "changes shape inside the loop" in str(info.value)


def test_hessian_through_a_loop_matches_differences_of_the_gradient():
    f = rk4(200)
    grad = symdiff.grad(f, argnums=(0, 1, 2), target="python")
    hess = symdiff.hessian(f, argnums=(0, 1, 2), target="python")(*POINT)
    h = 1e-5
    for j in range(3):
        up, down = list(POINT), list(POINT)
        up[j] += h
        down[j] -= h
        column = (np.array(grad(*up)) - np.array(grad(*down))) / (2 * h)
        np.testing.assert_allclose([row[j] for row in hess], column, rtol=1e-5)


def backwards_recurrence(x, n):
    s = 0.0
    for i in reversed(range(n)):
        s = s * 0.5 + x * i
    return s


def reversed_rows(x):
    s = 0.0
    for v in reversed(x):
        s = s * 0.9 + v * v
    return s


def test_reversed_ranges_and_rows():
    g = symdiff.grad(backwards_recurrence, target="python")
    want = reference_gradient(lambda x: backwards_recurrence(x, 6), (0.7,))[0]
    assert g(0.7, 6) == pytest.approx(want)
    x = np.array([1.0, 2.0, 3.0, 0.5])
    want = [2 * v * 0.9 ** (k) for k, v in enumerate(x)]  # x[0] is added last
    np.testing.assert_allclose(symdiff.grad(reversed_rows, target="python")(x), want)


def loop_of_annotated_length(x, n: int):
    s = 0.0
    for i in range(n):
        s = s + math.sin(x * i)
    return s


def test_source_before_any_call_takes_int_annotations():
    source = symdiff.grad(loop_of_annotated_length, target="python").source
    assert "def loop_of_annotated_length_grad(x, n):" in source
    assert re.search(r"for \w+ in range\(", source)


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (for_else_with_break, (0.5, 3)),  # breaks at i = 0
        (for_else_with_break, (-0.5, 3)),  # never breaks: the else doubles x
        (for_else_with_break, (-0.5, 0)),  # no iteration: the else runs
        (while_else_with_break, (5.0, 3)),  # breaks
        (while_else_with_break, (5.0, 0)),  # the condition ends it: the else runs
    ],
)
@pytest.mark.parametrize("target", ["python", "cpu"])
def test_else_runs_where_the_loop_did_not_break(fn, args, target):
    """``for``/``while ... else`` with ``break``: the else block runs on the
    paths that did not break (a flag in the loop state), as in Python."""
    value, grad = symdiff.value_and_grad(fn, target=target)(*args)
    assert value == fn(*args)
    assert grad == pytest.approx(fd_derivative(fn, args, 0), rel=1e-6)


def test_a_stepped_slice_written_at_a_run_time_row():
    # out[i, ::2] = x: at the stepped slice's positions (tests/test_views.py too)
    for n in (0, 2, 3):
        assert symdiff.value_and_grad(stepped_slice_write)(1.5, n) == (
            stepped_slice_write(1.5, n),
            2.0 * n,
        )
