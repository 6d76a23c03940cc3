"""``target="parallel"``: the same kernels, with ``numba.prange`` outer loops where
the iterations touch disjoint memory, compiled with ``parallel=True``.

Results are compared with the single-threaded kernel (sums may be reduced per thread:
equal up to rounding).  Loops that would race — scatters, sums of shifted slices,
reductions over the threads' axis — stay sequential, which the sources show.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import symdiff
from tests.array_corpus import BY_NAME
from tests.test_arrays import assert_close, make_args

SAMPLE = ["mlp_loss", "softmax_xent", "rosenbrock", "gmm_objective", "attention"]


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow)
        if n in ("attention", "gmm_objective")
        else n
        for n in SAMPLE
        if n in BY_NAME
    ],
)
def test_parallel_grad_equals_cpu_grad(name):
    case = BY_NAME[name]
    args = make_args(case)
    argnums = case.diff_argnums
    got = symdiff.grad(case.fn, argnums=argnums, target="parallel")(*args)
    want = symdiff.grad(case.fn, argnums=argnums, target="cpu")(*args)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_close(g, w, f"parallel grad of {name}, argument {i}", tol=1e-12)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def tanh_layer(x, W):
    return np.sum(np.tanh(x @ W) ** 2) + np.sum(np.exp(-(x**2)))


def test_threads_only_where_iterations_are_independent():
    x = np.random.default_rng(0).normal(size=(50, 6))
    W = np.random.default_rng(1).normal(size=(6, 4))
    layer = symdiff.value_and_grad(tanh_layer, argnums=(0, 1), target="parallel")
    (value, (gx, gW)) = layer(x, W)
    assert "for i in numba.prange(x.shape[0]):" in layer.source
    assert "import numba" in layer.source
    cpu_value, (cx, cW) = symdiff.value_and_grad(tanh_layer, argnums=(0, 1))(x, W)
    assert math.isclose(value, cpu_value, rel_tol=1e-13)
    assert np.allclose(gx, cx, rtol=1e-13) and np.allclose(gW, cW, rtol=1e-13)
    # x_bar[i] += ...; x_bar[i + 1] += ...: neighbouring iterations write one element
    ros = symdiff.grad(rosenbrock, target="parallel")
    xs = np.random.default_rng(2).normal(size=1000)
    assert np.array_equal(ros(xs), symdiff.grad(rosenbrock)(xs))
    assert "prange" not in ros.source


def test_parallel_scalar_function_is_the_cpu_kernel():
    g = symdiff.grad(lambda u: math.exp(math.sin(u * u)), target="parallel")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = g(1.3)
    # compiled as the CPU kernel: no "parallel=True but nothing to parallelise"
    assert not [w for w in caught if "parallel" in str(w.message)], caught
    assert value == symdiff.grad(lambda u: math.exp(math.sin(u * u)))(1.3)


def lower_triangle(x):
    n = len(x)
    L = np.zeros((n, n))
    for i in range(n):
        for j in range(i):
            L[i, j] = x[i] * L[j, j] + x[j]
        L[i, i] = math.exp(x[i])
    return np.sum(L)


def iterated_map(x):
    v = x
    for _ in range(20):
        v = np.sin(v) + 0.5 * v
    return np.sum(v * v)


def test_loop_state_versions_keep_clear_of_numbas_names():
    """Numba's SSA names a variable assigned twice ``L.1``, ``L.2``, and its
    parallel lowering turns those into ``L_1``, ``L_2``: the parallel kernel's
    own versions are ``L__1``, ``L__2`` (Numba failed with 'key already in
    dictionary: L_2')."""
    x = np.linspace(0.1, 1.0, 5)
    for fn, transform in (
        (lower_triangle, symdiff.grad),
        (iterated_map, symdiff.hessian),
    ):
        parallel = transform(fn, target="parallel")
        np.testing.assert_allclose(
            parallel(x), transform(fn)(x), rtol=1e-13, atol=1e-13
        )
    grad = symdiff.grad(lower_triangle, target="parallel")
    grad(x)
    assert "L__1" in grad.source and "L_1" not in grad.source


def slice_written(u):
    lap = np.zeros_like(u)
    lap[1:-1] = u[2:] - 2 * u[1:-1] + u[:-2]
    return np.sum(lap * u)


def test_a_slice_assignment_is_a_loop_on_threads_targets():
    """Numba's parallel lowering wrote zeros for ``lap[1:n - 1] = t0`` after the
    kernel's shape checks (value 0.0 where NumPy gives 60.0): parallel kernels
    write a slice element by element."""
    u = np.arange(6.0) ** 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = symdiff.value_and_grad(slice_written, target="parallel")
        value, grad = run(u)
    want_value, want_grad = symdiff.value_and_grad(slice_written, target="python")(u)
    assert value == want_value == slice_written(u)
    np.testing.assert_array_equal(grad, want_grad)
    assert "lap[1:u.shape[0] - 1] =" not in run.source


def halving_recurrence(x, n):
    s = 0.0
    for _ in range(n):
        s = s * 0.5 + x
    return s


def test_a_sequential_loop_compiles_without_numbas_parallel_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        slope = symdiff.grad(halving_recurrence, target="parallel")(1.0, 5)
    assert slope == pytest.approx(1.9375)
    assert not [w for w in caught if "parallel=True" in str(w.message)]
