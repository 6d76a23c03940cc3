"""``break``, ``continue`` and ``for ... else`` in unrolled loops (constant ranges of at
most 8 steps, tuples), alone and nested in loop nodes and in other unrolled loops:
values against Python itself, derivatives against central finite differences."""

from __future__ import annotations

import math

import numpy as np
import pytest

import symdiff
from symdiff.frontend.loops import UNROLL
from tests.checks import fd_derivative


def continue_alone(x):
    s = 0.0
    for i in range(3):
        if i == 1:
            continue
        s += x * i
    return s


def continue_data_dependent(x):
    s = 0.0
    for i in range(6):
        t = math.sin(x * (i + 1))
        if t < 0.0:
            continue
        s = s + t * x
    return s + t  # `t` from the last iteration, as in Python


def continue_in_else_branch(x):
    s = x
    for i in range(5):
        if s < 4.0:
            s = s * 1.5 + i
        else:
            if i % 2 == 0:
                continue
            s = s - 0.5 * x
        s = s + 0.1 * x * x
    return s


def continue_in_real_loop(x):
    s = 0.0
    for _ in range(20):  # a loop node
        for j in range(3):  # unrolled
            if j == 0:
                continue  # skips j == 0 only, not the rest of the outer iteration
            s += x * j
    return s


def continue_in_loop_of_n(x, n):
    s = 0.0
    for k in range(n):
        for j in range(4):
            if s > 1.0 + 0.5 * k:
                continue
            s = s + math.cos(x * j) * 0.5
        s = s * 0.9 + x
    return s


def break_alone(x):
    s = 0.0
    for i in range(6):
        s = s * x + i
        if s > 3.0:
            break
        s = s + 0.25
    return s * i  # `i` holds the iteration that broke


def break_in_real_loop(x, n):
    s = 0.0
    for k in range(n):
        for j in range(5):
            if s > 2.0 * (k + 1):
                break
            s = s + x * math.exp(-0.1 * j)
        s = s + 0.01 * k * x
    return s


def break_in_while_loop(x):
    s, k = 0.0, 0
    while k < 12:
        for j in range(4):
            if j * x > 1.5:
                break
            s = s + math.sin(x + j)
        k += 1
    return s


def for_else(x):
    for i in range(3):
        if x > i:
            break
    else:
        x = 0.5 * x * x
    return x


def for_else_of_no_iterations(x):
    for i in range(0):
        if x > i:
            break
    else:
        x = x * 3.0
    return x


def for_else_without_break(x):
    s = 1.0
    for i in range(4):
        s = s * (x + i)
    else:
        s = -s
    return s


def for_else_in_real_loop(x, n):
    s = 0.0
    for k in range(n):
        for j in range(3):
            if math.sin(x * (j + k)) > 0.5:
                s = s + x * j
                break
        else:
            s = s - x * x
            continue  # the outer loop's
        s = s + 1.0
    return s


def continue_over_tuple(x):
    s = 0.0
    for c in (1.0, 2.0, 3.0):
        if c == 2.0:
            continue
        s = s + c * x * x
    return s


def break_over_tuple(x):
    s = 0.0
    for c in (1.0, 2.0, 3.0):
        s = s + c * x
        if s > 2.0:
            break
    else:
        s = s * 10.0
    return s * c


def continue_over_tuple_of_pairs(x):
    s = 0.0
    for p in ((x, 1.0), (2.0, x), (x, x)):
        if s > 1.0:
            continue
        s = s + p[0] * p[1]
    else:
        s = s * x  # no `break`: it runs
    return s


def nested_unrolled_continue(x):
    s = 0.0
    for i in range(3):
        for j in range(3):
            if j == i:
                continue  # the inner loop's
            s = s + math.sin(x * i + j)
        if i == 1:
            continue  # the outer loop's
        s = s * x
    return s


def nested_unrolled_break(x):
    s = 0.0
    for i in range(4):
        for j in range(4):
            if s > x * (i + 1):
                break
            if j > i:
                continue
            s = s + 0.5 + 0.1 * j * x
        else:
            s = s + x  # the inner loop did not break
            continue
        s = s - 0.05 * x * x
        if s > 3.0:
            break
    return s


def continue_around_break(x):
    s = 0.0
    for i in range(3):
        if i == 1:
            continue
        for j in range(4):
            s = s + x * (j + 1)
            if s > 2.0 * (i + 1):
                break
        else:
            s = s + 0.5 * x
    return s


def break_around_continue(x):
    s = 0.0
    for i in range(5):
        for j in range(3):
            if j == i % 3:
                continue
            s = s + math.sin(x * (i + j))
        if s > 1.5:
            break
    return s * i


def for_else_under_if(x):
    if x > 0.0:
        for c in (0.5, 1.0, 2.0):
            if x < c:
                x = x * c
                break
        else:
            return x * x * x
    return x + 1.0


def continue_with_array_writes(x):
    out = np.zeros(5)
    for i in range(5):
        if x[i] < 0.0:
            continue
        out[i] = x[i] * x[i]
        if i >= 3:
            break
        out[i + 1] = 0.5 * x[i]
    return np.sum(out * np.arange(1.0, 6.0))


CASES = [
    (continue_alone, (0.5,)),
    (continue_alone, (-1.25,)),
    (continue_data_dependent, (0.8,)),
    (continue_data_dependent, (2.3,)),
    (continue_in_else_branch, (0.7,)),
    (continue_in_else_branch, (3.1,)),
    (continue_in_real_loop, (0.5,)),
    (continue_in_loop_of_n, (0.6, 4)),
    (continue_in_loop_of_n, (1.3, 7)),
    (break_alone, (0.8,)),
    (break_alone, (1.7,)),
    (break_alone, (0.3,)),
    (break_in_real_loop, (0.7, 5)),
    (break_in_real_loop, (0.2, 3)),
    (break_in_while_loop, (0.6,)),
    (break_in_while_loop, (1.2,)),
    (for_else, (1.5,)),  # breaks at i = 0
    (for_else, (0.5,)),  # breaks at i = 1
    (for_else, (-0.5,)),  # no break: the else block runs
    (for_else_of_no_iterations, (2.0,)),
    (for_else_without_break, (0.4,)),
    (for_else_in_real_loop, (0.9, 4)),
    (for_else_in_real_loop, (0.2, 3)),
    (continue_over_tuple, (0.75,)),
    (break_over_tuple, (0.5,)),  # breaks at c = 2
    (break_over_tuple, (1.2,)),  # breaks at c = 2
    (break_over_tuple, (2.5,)),  # breaks at c = 1
    (break_over_tuple, (0.1,)),  # no break
    (continue_over_tuple_of_pairs, (0.6,)),
    (continue_over_tuple_of_pairs, (0.3,)),
    (nested_unrolled_continue, (0.4,)),
    (nested_unrolled_break, (0.3,)),
    (nested_unrolled_break, (1.1,)),
    (continue_around_break, (0.35,)),
    (continue_around_break, (1.2,)),
    (break_around_continue, (0.4,)),
    (break_around_continue, (0.05,)),
    (for_else_under_if, (0.3,)),
    (for_else_under_if, (0.8,)),
    (for_else_under_if, (3.0,)),
    (for_else_under_if, (-1.0,)),
    (continue_with_array_writes, (np.array([0.5, -1.0, 2.0, 1.5, 0.7]),)),
    (continue_with_array_writes, (np.array([-0.5, 1.0, -2.0, -1.5, 0.7]),)),
]


def _id(case):
    fn, args = case
    return f"{fn.__name__}{args[0] if np.ndim(args[0]) == 0 else ''}"


def test_a_short_loop_with_continue_is_unrolled():
    assert UNROLL >= 6  # the loops these tests are about are the short ones
    f = symdiff.jit(continue_alone, target="python")
    assert f(0.5) == 1.0
    assert "for " not in f.source  # `i == 1` decided when lowering: s = 2 * x


@pytest.mark.parametrize(("fn", "args"), CASES, ids=[_id(c) for c in CASES])
def test_value_and_gradient_match_python(fn, args):
    value = symdiff.jit(fn, target="python")(*args)
    np.testing.assert_allclose(value, fn(*args), rtol=1e-12, atol=1e-12)
    g = symdiff.grad(fn, target="python")(*args)
    np.testing.assert_allclose(g, fd_derivative(fn, args, 0), rtol=1e-6, atol=1e-8)


def test_hessian_of_a_loop_with_continue_and_break():
    x = 0.8
    h = symdiff.hessian(break_alone, target="python")(x)

    def d(v):
        return float(fd_derivative(break_alone, (v,), 0))

    step = 1e-4
    want = (d(x + step) - d(x - step)) / (2 * step)
    assert h == pytest.approx(want, rel=1e-5)
    h = symdiff.hessian(continue_data_dependent, target="python")(2.3)
    g = symdiff.grad(continue_data_dependent, target="python")
    want = (g(2.3 + step) - g(2.3 - step)) / (2 * step)
    assert h == pytest.approx(want, rel=1e-6)


def test_compiled_with_numba():
    for fn, args in [
        (continue_in_real_loop, (0.5,)),
        (nested_unrolled_break, (1.1,)),
        (for_else, (0.5,)),
        (for_else, (-0.5,)),
    ]:
        assert symdiff.jit(fn, target="cpu")(*args) == pytest.approx(fn(*args))
        g = symdiff.grad(fn, target="cpu")(*args)
        assert g == pytest.approx(float(fd_derivative(fn, args, 0)), rel=1e-6)


@pytest.mark.parametrize("x", [1.5, -1.5])
def test_for_else_with_break_in_a_loop_node(x):
    """The same flag as in the unrolled loop, in a loop node's state."""
    value, grad = symdiff.value_and_grad(long_for_else, target="python")(x)
    assert value == long_for_else(x)
    assert grad == pytest.approx(float(fd_derivative(long_for_else, (x,), 0)))


def long_for_else(x):
    for i in range(UNROLL + 1):  # a loop node
        if x > i:
            break
    else:
        x = 0.0
    return x


def three_nested_ranges(x, y):
    s = 0.0
    for i in range(8):
        for j in range(8):
            for k in range(8):
                s += math.sin(x * i + y * j + 0.1 * k * x * y) * 0.01
    return s


def test_nested_constant_ranges_unroll_within_a_budget():
    """Only the innermost range(8) is unrolled (8 copies within the budget of 16):
    the outer two stay loops, so the gradient is a few hundred lines, not the
    thousands of 512 copies, and the Hessian builds in seconds."""
    import ast
    import inspect
    import textwrap

    from symdiff.frontend.loops import UNROLL_NESTED, _unrolled_copies

    tree = ast.parse(textwrap.dedent(inspect.getsource(three_nested_ranges)))
    body = tree.body[0].body
    assert _unrolled_copies(body) == 512
    assert _unrolled_copies(body[1].body) == 64  # inside the outer loop
    assert UNROLL_NESTED == 16
    grad = symdiff.grad(three_nested_ranges, argnums=(0, 1), target="python")
    got = grad(0.3, 0.7)
    source = grad.source
    assert source.count("for ") >= 2 and len(source.splitlines()) < 400
    for k in range(2):
        want = float(fd_derivative(three_nested_ranges, (0.3, 0.7), k))
        assert got[k] == pytest.approx(want, rel=1e-7)


def masked_sum(x, y):
    s = 0.0
    for j in range(8):
        if x[j] >= 0:
            s += math.exp(0.1 * x[j]) * y
    return s


def test_an_if_in_each_unrolled_iteration_keeps_the_adjoint_linear():
    """The adjoint of ``s`` after j iterations has one term per combination of the
    branches taken unless ``select(c, g, 0) + select(c, 0, g)`` is joined into
    ``g``: 2**8 terms and a kernel Numba could not compile."""
    x = np.linspace(-1.0, 1.0, 8)
    grad = symdiff.value_and_grad(masked_sum, argnums=(0, 1), target="python")
    value, (gx, gy) = grad(x, 1.3)
    assert value == pytest.approx(masked_sum(x, 1.3), rel=1e-14)
    assert len(grad.source.splitlines()) < 150
    np.testing.assert_allclose(gx, fd_derivative(masked_sum, (x, 1.3), 0), atol=1e-8)
    assert gy == pytest.approx(float(fd_derivative(masked_sum, (x, 1.3), 1)), rel=1e-7)
