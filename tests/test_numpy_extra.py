"""NumPy, SciPy and ``math`` functions composed from the existing IR
(symdiff/frontend/more_numpy.py): ``np.cross``, ``np.polyval``, ``np.trapezoid``,
``np.linalg.multi_dot``/``matrix_power``, ``np.kron``, ``np.nansum``/``nanmean``/
``nanmax``/``nanmin``, ``np.sum``/``np.mean`` with ``where=``, ``np.average``,
``scipy.special.logsumexp``/``softmax``/``log_softmax``, ``math.fsum``/``prod``/
``dist`` and ``math.hypot`` of any number of arguments.

Every function is ordinary user code at module level (symdiff reads its source).
Values are checked against NumPy/SciPy, gradients against JAX in float64 (the
same code with ``np`` rebound to ``jax.numpy``, ``sps`` to ``jax.scipy.special``
and ``math`` to a namespace of JAX spellings).
"""

from __future__ import annotations

import functools
import math
import operator
import types
import warnings

import jax
import jax.numpy as jnp
import jax.scipy.special as jsps
import numpy as np
import pytest
import scipy.special as sps

import symdiff
from tests.checks import with_modules

jax.config.update("jax_enable_x64", True)

RTOL = 1e-12
ATOL = 1e-13

JAX_MATH = types.SimpleNamespace(
    fsum=lambda xs: functools.reduce(operator.add, xs),
    prod=lambda xs, start=1: functools.reduce(operator.mul, xs, start),
    dist=lambda p, q: jnp.sqrt(sum((a - b) ** 2 for a, b in zip(p, q, strict=True))),
    hypot=lambda *xs: jnp.sqrt(sum(x**2 for x in xs)),
    sin=jnp.sin,
)


def normal(*shape):
    return lambda rng: rng.normal(size=shape)


def with_nans(*shape):
    def make(rng):
        x = rng.normal(size=shape)
        x[rng.random(shape) < 0.3] = np.nan
        x.flat[0] = 0.5  # every reduction below sees a number
        return x

    return make


# -- vectors and polynomials ------------------------------------------------------------
def cross_stack(A, b):
    return np.sum(np.cross(A, b) ** 2 * np.arange(3.0))


def cross_axis(A, B):
    return np.sum(np.sin(np.cross(A, B, axis=0)) * np.arange(4.0))


def cross_axes(A, B):
    return np.sum(np.cross(A, B, axisa=0, axisb=-1, axisc=0) ** 3)


def cross_2d(x, y):
    u = np.array([x[0], x[1]])
    v = np.array([y[1], y[2]])
    return np.cross(u, v) ** 2 + np.sum(np.cross(u, y) ** 2 * np.arange(3.0))


def polyval_runtime(p, x):
    return np.sum(np.sin(np.polyval(p, x)))


def polyval_constant(x, a):
    return np.sum(np.polyval(np.array([a, -2.0, a * a, 0.5]), x) ** 2)


def polyval_scalar(p, t):
    return np.polyval(p, t) ** 2


def trapezoid_x(y, x):
    return np.sum(np.trapezoid(y, x, axis=0) ** 2)


def trapezoid_x_same_shape(y, x):
    return np.sum(np.trapezoid(y, x=x, axis=-1) ** 2)


def trapezoid_dx(y, h):
    return np.sum(np.trapezoid(y**2, dx=h) * np.arange(2.0)) + np.trapezoid(y[0])


def kron_vectors(a, b):
    return np.sum(np.kron(a, b) ** 2 * np.arange(6.0))


def kron_matrices(A, B):
    return np.sum(np.sin(np.kron(A, B)) * np.arange(24.0).reshape(4, 6))


def kron_mixed(a, B):
    return np.sum(np.kron(a, B) ** 3) + np.sum(np.kron(B, a) ** 2)


# -- linear algebra ---------------------------------------------------------------------
def multi_dot_vector(A, B, v):
    return np.sum(np.linalg.multi_dot([A, B, v]) ** 2)


def multi_dot_row(u, A, B, C):
    return np.sum(np.sin(np.linalg.multi_dot((u, A, B, C))))


def matrix_powers(A):
    total = np.sum(np.linalg.matrix_power(A, 0))
    for n in (1, 2, 3, 5, 6):
        total = total + np.sum(np.linalg.matrix_power(A, n)) / n
    return total


def matrix_power_inverse(A):
    return np.sum(np.linalg.matrix_power(A, -2))


def matrix_power_stack(A):
    return np.sum(np.linalg.matrix_power(A, 4) ** 2)


# -- NaN-ignoring reductions, masks, weights --------------------------------------------
def nan_reductions(x):
    return (
        np.nansum(x)
        + np.sum(np.nansum(x, axis=-1) ** 2)
        + np.sum(np.nanmean(x, axis=(0,)) ** 2)
        + np.sum(np.nanmax(x, axis=-2, keepdims=True) * np.arange(4.0))
        + np.nanmin(x)
    )


def sum_where(x):
    return np.sum(x**2, where=x > 0) + np.sum(
        np.sum(np.sin(x), axis=-1, where=x < 0.5) ** 2
    )


def mean_where(x):
    return np.mean(x**2, where=x > 0) + np.sum(
        np.mean(np.sin(x), axis=0, where=x < 0.5, keepdims=True) ** 2
    )


def average_weights(x, w):
    return np.sum(np.average(x, axis=-1, weights=w) ** 2)


def average_same_shape(x, w):
    return np.average(np.sin(x), weights=w**2) + np.sum(
        np.average(x, axis=0, weights=w**2)
    )


def average_returned(x, w):
    avg, scale = np.average(x, axis=-2, weights=w, returned=True)
    return np.sum(avg**2 * scale) + np.average(x**2)


# -- scipy.special ----------------------------------------------------------------------
def logsumexp_all(x):
    return sps.logsumexp(x) ** 2


def logsumexp_axis(x):
    return np.sum(np.sin(sps.logsumexp(x, axis=-1))) + np.sum(
        sps.logsumexp(x, axis=0, keepdims=True) ** 2
    )


def logsumexp_weighted(x, b):
    return np.sum(sps.logsumexp(x, axis=-2, b=b**2) ** 2)


def logsumexp_sign(x, b):
    value, sign = sps.logsumexp(x, axis=1, b=b, return_sign=True)
    return np.sum(value * sign)


def softmaxes(x):
    return (
        np.sum(sps.softmax(x) * np.arange(12.0).reshape(3, 4))
        + np.sum(sps.softmax(x, axis=-1) ** 2)
        + np.sum(sps.log_softmax(x, axis=0) ** 2)
        + np.sum(sps.log_softmax(x) * np.arange(12.0).reshape(3, 4))
    )


# -- math ------------------------------------------------------------------------------
def math_sums(a, b, c):
    return (
        math.fsum((a, b * b, c))
        + math.prod((a, b, c))
        + math.prod([a, b], start=c)
        + math.dist((a, b), (c, 1.0))
        + math.dist((a,), (b,))
        + math.hypot(a, b, c)
        + math.hypot(a)
        + math.sin(math.hypot(b, c))
    )


def math_of_arrays(x, y):
    return math.fsum(x) * math.prod(y) + math.dist(x, y)


CASES = [
    (cross_stack, (normal(4, 3), normal(3))),
    (cross_axis, (normal(3, 4), normal(3, 4))),
    (cross_axes, (normal(3, 2), normal(2, 3))),
    (cross_2d, (normal(3), normal(3))),
    (polyval_runtime, (normal(4), normal(2, 3))),
    (polyval_constant, (normal(5), lambda rng: 0.7)),
    (polyval_scalar, (normal(3), lambda rng: -1.3)),
    (trapezoid_x, (normal(5, 3), lambda rng: np.sort(rng.normal(size=5)))),
    (trapezoid_x_same_shape, (normal(3, 5), normal(3, 5))),
    (trapezoid_dx, (normal(2, 5), lambda rng: 0.3)),
    (kron_vectors, (normal(2), normal(3))),
    (kron_matrices, (normal(2, 3), normal(2, 2))),
    (kron_mixed, (normal(3), normal(2, 2))),
    (multi_dot_vector, (normal(3, 4), normal(4, 2), normal(2))),
    (multi_dot_row, (normal(3), normal(3, 4), normal(4, 2), normal(2, 3))),
    (matrix_powers, (lambda rng: rng.normal(size=(3, 3)) / 2,)),
    (matrix_power_inverse, (lambda rng: rng.normal(size=(3, 3)) + 3 * np.eye(3),)),
    (matrix_power_stack, (lambda rng: rng.normal(size=(2, 3, 3)) / 2,)),
    (nan_reductions, (with_nans(3, 4),)),
    (sum_where, (normal(3, 4),)),
    (mean_where, (normal(3, 4),)),
    (average_weights, (normal(3, 4), lambda rng: rng.random(4))),
    (average_same_shape, (normal(3, 4), normal(3, 4))),
    (average_returned, (normal(3, 2), lambda rng: rng.random(3))),
    (logsumexp_all, (normal(3, 4),)),
    (logsumexp_axis, (normal(3, 4),)),
    (logsumexp_weighted, (normal(3, 4), normal(3, 1))),
    (logsumexp_sign, (normal(3, 4), lambda rng: rng.random((3, 4)))),
    (softmaxes, (normal(3, 4),)),
    (math_sums, (lambda rng: 0.3, lambda rng: 1.2, lambda rng: -0.7)),
    (math_of_arrays, (normal(4), normal(4))),
]

# one compile per kind of construct keeps the suite short
COMPILED = ("cross_stack", "logsumexp_weighted")


def reference(fn, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy deprecates 2-D vectors in np.cross
        return fn(*args)


@pytest.mark.parametrize(
    "fn, makes, target",
    [pytest.param(f, m, "python", id=f"{f.__name__}-python") for f, m in CASES]
    + [
        pytest.param(f, m, "cpu", id=f"{f.__name__}-cpu", marks=pytest.mark.slow)
        for f, m in CASES
        if f.__name__ in COMPILED
    ],
)
def test_values_match_numpy_and_gradients_match_jax(fn, makes, target):
    rng = np.random.default_rng(7)
    args = tuple(make(rng) for make in makes)
    argnums = tuple(range(len(args)))
    value, grads = symdiff.value_and_grad(fn, argnums=argnums, target=target)(*args)
    assert value == pytest.approx(reference(fn, args), rel=1e-12, abs=1e-12)
    jax_fn = with_modules(fn, np=jnp, sps=jsps, math=JAX_MATH)
    want = jax.grad(jax_fn, argnums=argnums)(*args)
    for got, expected in zip(grads, want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


# -- array values, special values -----------------------------------------------------
def cross_values(a, b):
    return np.cross(a, b)


def polyval_values(p, x):
    return np.polyval(p, x)


def trapezoid_values(y, x):
    return np.trapezoid(y, x, axis=-2)


def kron_values(A, B):
    return np.kron(A, B)


def matrix_power_values(A):
    return np.linalg.matrix_power(A, 7)


def nanmax_values(x):
    return np.nanmax(x, axis=-1)


def nanmin_values(x):
    return np.nanmin(x, axis=0)


def nanmean_values(x):
    return np.nanmean(x, axis=1)


def logsumexp_values(x):
    return sps.logsumexp(x, axis=-1)


def logsumexp_weighted_values(x, b):
    return sps.logsumexp(x, axis=-1, b=b)


def softmax_values(x):
    return sps.softmax(x, axis=-1)


def log_softmax_values(x):
    return sps.log_softmax(x, axis=-1)


INF, NAN = math.inf, math.nan
SPECIAL_ROWS = np.array(
    [
        [-INF, -INF, -INF],
        [INF, 1.0, 2.0],
        [-INF, 0.5, 800.0],
        [NAN, 1.0, 2.0],
        [1000.0, 1000.0, -1000.0],
    ]
)


@pytest.mark.parametrize(
    "fn, args",
    [
        (cross_values, (np.arange(24.0).reshape(2, 4, 3) % 5, np.array([1.0, -2, 3]))),
        (polyval_values, (np.array([1.5, -2.0, 0.5, 3.0]), np.linspace(-2, 2, 7))),
        (
            trapezoid_values,
            (np.arange(24.0).reshape(2, 4, 3) ** 1.5, np.array([0.0, 0.1, 0.5, 2.0])),
        ),
        (kron_values, (np.arange(6.0).reshape(2, 3), np.arange(4.0).reshape(2, 2))),
        (matrix_power_values, (np.arange(9.0).reshape(3, 3) / 7,)),
        (nanmax_values, (SPECIAL_ROWS,)),
        (nanmin_values, (SPECIAL_ROWS.T,)),
        (nanmean_values, (SPECIAL_ROWS,)),
        (logsumexp_values, (SPECIAL_ROWS,)),
        (logsumexp_weighted_values, (SPECIAL_ROWS, np.array([1.0, 2.0, 0.0]))),
        (softmax_values, (SPECIAL_ROWS[1:],)),
        (log_softmax_values, (SPECIAL_ROWS[2:],)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_array_values_match_numpy_and_scipy(fn, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = fn(*args)
        got = symdiff.jit(fn, target="python")(*args)
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)


def test_logsumexp_derivative_is_the_softmax():
    x = np.array([[0.3, -1.0, 2.0, 800.0], [-INF, 0.0, 1.0, 2.0]])
    got = symdiff.grad(lambda_free_logsumexp, target="python")(x)
    np.testing.assert_allclose(got, sps.softmax(x, axis=-1), rtol=1e-15, atol=0)


def lambda_free_logsumexp(x):
    return np.sum(sps.logsumexp(x, axis=-1))


def test_a_cross_of_vectors_not_of_3_components_is_a_shape_error():
    grad = symdiff.grad(cross_stack, target="python")
    grad(np.ones((2, 3)), np.ones(3))
    with pytest.raises(symdiff.ShapeError, match="incompatible dimensions"):
        grad(np.ones((2, 4)), np.ones(4))


# -- forward mode, Jacobians, Hessians --------------------------------------------------
def softmax_vector(x):
    return sps.softmax(x)


def cross_of(a, b):
    return np.cross(a, b)


@pytest.mark.slow
def test_jacobian_jvp_and_hessian_match_jax():
    rng = np.random.default_rng(3)
    x = rng.normal(size=5)
    jac = symdiff.jacobian(softmax_vector, target="python")(x)
    np.testing.assert_allclose(jac, jax.jacobian(jsps.softmax)(x), rtol=RTOL, atol=ATOL)
    a, b, ta, tb = (rng.normal(size=(2, 3)) for _ in range(4))
    _, tangent = symdiff.jvp(cross_of, (a, b), (ta, tb), target="python")
    np.testing.assert_allclose(
        tangent, np.cross(ta, b) + np.cross(a, tb), rtol=RTOL, atol=ATOL
    )
    for fn, args in [
        (logsumexp_axis, (rng.normal(size=(3, 4)),)),
        (polyval_runtime, (rng.normal(size=4), rng.normal(size=(2, 3)))),
        (matrix_power_stack, (rng.normal(size=(1, 2, 2)) / 2,)),
    ]:
        last = len(args) - 1
        hessian = symdiff.hessian(fn, argnums=last, target="python")(*args)
        jax_fn = with_modules(fn, np=jnp, sps=jsps)
        expected = jax.hessian(jax_fn, argnums=last)(*args)
        np.testing.assert_allclose(hessian, expected, rtol=1e-10, atol=1e-11)


# -- refusals -----------------------------------------------------------------------
def matrix_power_run_time(A, n):
    return np.sum(np.linalg.matrix_power(A, n))


def polyval_matrix(P, x):
    return np.sum(np.polyval(P, x))


def multi_dot_one(A):
    return np.sum(np.linalg.multi_dot([A]))


def cross_of_four(x):
    return np.sum(np.cross(np.array([x, x, x, x]), np.array([x, x, x, x])))


def sum_with_dtype(x):
    return np.sum(x, dtype=np.float32)


def average_without_axis(x, w):
    return np.average(x, weights=w)


def dist_of_two_sizes(a, b):
    return math.dist((a, b), (a,))


def fsum_of_a_matrix(X):
    return math.fsum(X)


@pytest.mark.parametrize(
    "fn, args, message, hint",
    [
        (
            matrix_power_run_time,
            (np.eye(2), 3),
            "must be a constant integer",
            "constant",
        ),
        (polyval_matrix, (np.ones((2, 2)), np.ones(3)), "1-D array", "highest power"),
        (multi_dot_one, (np.eye(2),), "at least two arrays", "two or more arrays"),
        (cross_of_four, (1.0,), "incompatible dimensions", "3 components"),
        (sum_with_dtype, (np.ones(2),), "`dtype` is not supported", "leave"),
        (
            average_without_axis,
            (np.ones((2, 3)), np.ones(3)),
            "axis must be specified",
            "axis=-1",
        ),
        (dist_of_two_sizes, (1.0, 2.0), "same number of dimensions", "coordinates"),
        (fsum_of_a_matrix, (np.ones((2, 2)),), "1-D array", "math.fsum((a, b, c))"),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_refused_with_the_construct_and_a_hint(fn, args, message, hint):
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(fn, target="python")(*args)
    text = str(info.value)
    assert message in text and hint in text
    assert "test_numpy_extra.py:" in text
    assert "^" in text
