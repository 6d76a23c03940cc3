"""Loops inside branches that are not taken: they run no iteration.

Branches are if-converted (both sides computed, then selected), so a loop node
under ``if x > 0`` used to run at ``x = -1`` too: its backward loop met
``sqrt(-1)`` with a zero adjoint (0 * NaN = NaN in the gradient), and a ``while``
loop that only terminates when its branch is taken spun forever.  A loop's trip
count is now 0, and a ``while`` loop's test false, where its branch is not taken.
Also from the same bug hunt: indexing a list grown in a loop over a run-time
range, ``float("inf")``, and integer ``//`` by zero in an untaken branch on the
python target.
"""

from __future__ import annotations

import inspect
import math
import signal
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import symdiff
from tests.checks import with_modules
from tests.fresh_process import project

jax.config.update("jax_enable_x64", True)


def early_return(x, n):
    if x <= 0:
        return x
    s = 0.0
    for i in range(n):
        s += math.sqrt(x) * (i + 1)
    return s


def loop_in_branch_in_loop(x, n):
    total = 0.0
    for k in range(3):
        if x > k:
            for i in range(n):
                total += math.log(x - k) / (i + 1)
        else:
            total += x
    return total


def helper_with_loop(x, n):
    s = 0.0
    for i in range(n):
        s += math.sqrt(x) + i
    return s


def calls_helper_in_branch(x, n):
    if x > 0:
        return helper_with_loop(x, n)
    return 2.0 * x


def jax_early_return(x, n):
    body = sum(jax.numpy.sqrt(jax.numpy.maximum(x, 1e-300)) * (i + 1) for i in range(n))
    return jax.numpy.where(x <= 0, x, body)


CASES = [
    (early_return, (-1.0, 20), 1.0),
    (loop_in_branch_in_loop, (1.5, 20), None),
    (loop_in_branch_in_loop, (-0.5, 20), 3.0),
    (calls_helper_in_branch, (-2.0, 20), 2.0),
]


@pytest.mark.parametrize("target", ["python", "cpu"])
@pytest.mark.parametrize("fn, args, slope", CASES)
def test_gradient_of_a_loop_in_an_untaken_branch(fn, args, slope, target):
    got = symdiff.grad(fn, target=target)(*args)
    h = 1e-6
    x, rest = args[0], args[1:]
    fd = (fn(x + h, *rest) - fn(x - h, *rest)) / (2 * h)
    assert math.isfinite(got)
    assert got == pytest.approx(fd, rel=1e-7, abs=1e-9)
    if slope is not None:
        assert got == slope
    _, tangent = symdiff.jvp(fn, args, (1.0, 0), target=target)
    assert tangent == pytest.approx(got, rel=1e-12)


def test_hessian_and_taken_branch_match_jax():
    hessian = symdiff.hessian(early_return, target="python")
    assert hessian(-1.0, 20) == 0.0
    for x in (0.3, 2.0):
        want = jax.hessian(jax_early_return)(x, 20)
        assert hessian(x, 20) == pytest.approx(float(want), rel=1e-12)


def time_to_reach(v, d):
    if v <= 0:
        return math.inf
    x, t = 0.0, 0.0
    while x < d:
        x += v * 0.01
        t += 0.01
    return t


def guarded_while(x):
    if x > 0:
        y = 10.0
        while y > 0:
            y -= x
        return y
    return -x


def _alarm(signum, frame):
    raise TimeoutError("the while loop of the untaken branch ran")


def test_a_while_loop_in_an_untaken_branch_does_not_run():
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(120)
    try:
        assert symdiff.jit(guarded_while, target="python")(-1.0) == 1.0
        assert symdiff.grad(guarded_while, target="python")(-1.0) == -1.0
        assert symdiff.grad(time_to_reach, target="python")(0.0, 1.0) == 0.0
        assert symdiff.jit(time_to_reach, target="python")(0.5, 1.0) == pytest.approx(
            time_to_reach(0.5, 1.0)
        )
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_while_loop_in_an_untaken_branch_does_not_run_compiled(tmp_path):
    # compiled code cannot be interrupted: a new process, with a time limit
    work, env = project(
        tmp_path,
        {
            "user.py": inspect.getsource(guarded_while),
            "run.py": textwrap.dedent(
                """
                import symdiff, user
                print(symdiff.value_and_grad(user.guarded_while)(-1.0))
                print(symdiff.value_and_grad(user.guarded_while)(3.0))
                """
            ),
        },
    )
    done = subprocess.run(
        [sys.executable, "run.py"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["(1.0, -1.0)", "(-2.0, -4.0)"]


def last_state(x, n):
    ys = []
    y = x
    for _ in range(n):
        y = math.sin(y) + x
        ys.append(y)
    return ys[-1]


def second_item(x, n):
    out = np.array([x * i for i in range(n)])
    return out[1]


def test_indexing_a_list_grown_in_a_loop():
    grad = symdiff.grad(last_state, target="cpu")
    h = 1e-6
    fd = (last_state(0.8 + h, 5) - last_state(0.8 - h, 5)) / (2 * h)
    assert grad(0.8, 5) == pytest.approx(fd, rel=1e-8)
    assert symdiff.grad(second_item, target="cpu")(0.8, 5) == 1.0
    with pytest.raises(symdiff.ShapeError) as info:
        symdiff.grad(second_item, target="cpu")(0.8, 1)
    assert "index 1 is out of bounds for axis 0 with size n (got" in str(info.value)


def running_min(x, n):
    best = float("inf")
    for i in range(n):
        best = min(best, (x - i) ** 2)
    return best


def guarded_int_division(x, k):
    if k != 0:
        return x * (10 // k) + x * (10 % k)
    return x


def test_float_of_a_string_and_integer_division_in_an_untaken_branch():
    assert symdiff.value_and_grad(running_min, target="python")(2.3, 5) == (
        pytest.approx(0.09),
        pytest.approx(0.6),
    )
    for target in ("python", "cpu"):
        assert symdiff.value_and_grad(guarded_int_division, target=target)(0.5, 0) == (
            0.5,
            1.0,
        )
        assert symdiff.value_and_grad(guarded_int_division, target=target)(0.5, 3) == (
            2.0,
            4.0,
        )


# -- arrays ------------------------------------------------------------------------------
def cluster_spread(X, mask):
    count = np.sum(mask)
    loss = 0.0
    if count > 0:
        mu = np.sum(X * mask) / count  # 0/0 where the cluster is empty
        loss = np.sum(mask * (X - mu) ** 2)
    return loss


def test_an_array_reduction_in_an_untaken_branch_leaks_no_nan():
    for target in ("python", "cpu"):
        value, grad = symdiff.value_and_grad(cluster_spread, target=target)(
            np.ones(3), np.zeros(3)
        )
        assert value == 0.0
        np.testing.assert_array_equal(grad, np.zeros(3))
        value, grad = symdiff.value_and_grad(cluster_spread, target=target)(
            np.array([1.0, 2.0, 4.0]), np.array([1.0, 0.0, 1.0])
        )
        assert value == pytest.approx(4.5)
        np.testing.assert_allclose(grad, [-3.0, 0.0, 3.0])


def window_sums(x, k):
    s = 0.0
    for i in range(len(x) - k + 1):
        s += np.sum(x[i : i + k] ** 2)
    return s


def block_energy(X, b):
    total = 0.0
    for i in range(X.shape[0] // b):
        total += np.sum(X[i * b : i * b + b]) ** 2
    return total


def buffer_of_k(x, k):
    s = 0.0
    for i in range(len(x)):
        buf = np.zeros(k) + x[i]
        s += np.sum(buf * buf)
    return s


def kernel_by_length(x, w):
    m = len(w) - 1
    s = 0.0
    for i in range(len(x) - m):
        s += np.sum(x[i : i + m + 1] * w) ** 2
    return s


def tail_energy(x, k):
    return np.sum(x[-k:] ** 2)


def moving_average(x, k):
    c = np.concatenate((np.zeros(1), np.cumsum(x)))
    return (c[k:] - c[:-k]) / k


def test_lengths_from_int_arguments_inside_loops_and_negated():
    jnp = jax.numpy
    x, w = np.linspace(0.5, 2.0, 7), np.array([0.5, -1.0, 2.0])
    cases = [
        (window_sums, (x, 3)),
        (block_energy, (x.reshape(7, 1), 2)),
        (buffer_of_k, (x, 4)),
        (kernel_by_length, (x, w)),
        (tail_energy, (x, 3)),
    ]
    for fn, args in cases:
        got = symdiff.grad(fn, target="cpu")(*args)
        oracle = with_modules(fn, np=jnp)
        want = jax.grad(oracle)(*args)
        np.testing.assert_allclose(got, want, rtol=1e-12)
    got = symdiff.jacobian(moving_average, target="cpu")(x, 3)
    want = jax.jacobian(with_modules(moving_average, np=jnp))(x, 3)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    with pytest.raises(symdiff.ShapeError) as info:
        symdiff.grad(tail_energy, target="cpu")(x, 0)
    assert "slice bound -k counts from the end of axis 0 and must be negative" in str(
        info.value
    )


def solve_if_regular(A, b):
    d = np.linalg.det(A)
    if abs(d) > 1e-12:
        x = np.linalg.solve(A, b)
    else:
        x = b
    return np.sum(x**2)


def cholesky_if_positive(S, b):
    if S[0, 0] > 0:
        L = np.linalg.cholesky(S)
        return np.sum(np.log(np.diag(L))) + np.sum(b)
    return np.sum(b**2)


def test_lapack_calls_in_an_untaken_branch_do_not_raise():
    jnp = jax.numpy
    singular, b = np.array([[1.0, 2.0], [2.0, 4.0]]), np.array([1.0, 1.0])
    regular = np.array([[2.0, 0.5], [0.3, 1.5]])
    for target in ("python", "cpu"):
        both = symdiff.value_and_grad(solve_if_regular, argnums=(0, 1), target=target)
        value, (dA, db) = both(singular, b)
        assert value == 2.0
        np.testing.assert_array_equal(dA, np.zeros((2, 2)))
        np.testing.assert_array_equal(db, [2.0, 2.0])
        value, grads = both(regular, b)
        want = jax.grad(with_modules(solve_if_regular, np=jnp), argnums=(0, 1))(
            regular, b
        )
        for g, w in zip(grads, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12)
        chol = symdiff.value_and_grad(cholesky_if_positive, argnums=1, target=target)
        value, db = chol(np.array([[-1.0, 0.0], [0.0, 1.0]]), b)
        assert value == 2.0
        np.testing.assert_array_equal(db, [2.0, 2.0])


def lagged_product(x, k):
    if k > 0:
        return np.sum(x[:-k] * x[k:])
    return np.sum(x**2)


def test_a_negated_bound_guarded_by_its_if():
    # at k == 0 the branch is not taken: its sign check is not made
    x = np.arange(1.0, 6.0)
    for target in ("python", "cpu"):
        grad = symdiff.grad(lagged_product, target=target)
        np.testing.assert_array_equal(grad(x, 0), 2 * x)
        np.testing.assert_array_equal(grad(x, 2), [3.0, 4.0, 6.0, 2.0, 3.0])
