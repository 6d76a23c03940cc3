"""``np.linalg``: ``solve``, ``inv``, ``det``, ``slogdet`` and ``cholesky``.

Values are checked against NumPy; gradients, VJPs, JVPs, Jacobians and a Hessian
against JAX in float64 (the same code with ``np`` rebound to ``jax.numpy``) and
against central finite differences of the NumPy function itself, on
well-conditioned random matrices (symmetric positive definite ones for
``cholesky`` and ``slogdet``).  ``cholesky`` reads only the lower triangle; its
derivative is that of the symmetric matrix (as JAX's), so its finite differences
move ``K`` in symmetric directions only.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import symdiff
from tests.checks import with_modules

jax.config.update("jax_enable_x64", True)

HERE = Path(__file__).name
N = 4


# -- user functions ---------------------------------------------------------------------
def gaussian_loglik(K, y):
    return -0.5 * y @ np.linalg.solve(K, y) - 0.5 * np.linalg.slogdet(K)[1]


def least_squares(A, b):
    return np.sum((np.linalg.solve(A.T @ A, A.T @ b)) ** 2)


def inv_in_expression(A, x):
    B = np.linalg.inv(A + 0.5 * np.eye(A.shape[0]))
    return np.sum(np.tanh(B @ x) * x) + np.trace(B @ A) + np.sum(B.T**2)


def solve_columns(A, B):
    return np.sum(np.sin(np.linalg.solve(A, B)) * np.arange(B.shape[1]))


def det_ratio(A, B):
    return np.linalg.det(A) / np.linalg.det(B) + np.linalg.det(A @ B.T) ** 0.5


def signed_logdet(A):
    sign, logdet = np.linalg.slogdet(A)
    return sign * logdet**2


def cholesky_logdet(K):
    L = np.linalg.cholesky(K)
    return 2.0 * np.sum(np.log(np.diag(L)))


def whitened(K, y):
    L = np.linalg.cholesky(K)
    z = np.linalg.solve(L, y)
    return np.sum(z**2) + np.sum(L * np.arange(K.shape[0]))


def upper_factor(K):
    U = np.linalg.cholesky(K, upper=True)
    return np.sum(np.cos(U) * np.arange(K.shape[0]))


# matrix-valued: Jacobians, VJPs and JVPs of the ops themselves
def inverse(A):
    return np.linalg.inv(A)


def solved(A, b):
    return np.linalg.solve(A, b)


def factor(K):
    return np.linalg.cholesky(K)


def det_and_logdet(A):
    return np.linalg.det(A), np.linalg.slogdet(A)[1]


# errors
def inv_sum(A):
    return np.sum(np.linalg.inv(A))


def solve_sum(A, b):
    return np.sum(np.linalg.solve(A, b))


def det_of_constant(x):
    return np.linalg.det(np.ones((2, 3)) * x)


def inv_of_stack(A):
    return np.sum(np.linalg.inv(A))


def solve_with_stack(A, B):
    return np.sum(np.linalg.solve(A, B))


# -- arguments ---------------------------------------------------------------------------
def general(rng, n=N):
    """A square matrix far from singular."""
    return rng.normal(size=(n, n)) + n * np.eye(n)


def spd(rng, n=N):
    m = rng.normal(size=(n, n))
    return m @ m.T + n * np.eye(n)


CASES = {
    "gaussian_loglik": (gaussian_loglik, lambda r: (spd(r), r.normal(size=N))),
    "least_squares": (
        least_squares,
        lambda r: (r.normal(size=(6, N)), r.normal(size=6)),
    ),
    "inv_in_expression": (inv_in_expression, lambda r: (general(r), r.normal(size=N))),
    "solve_columns": (solve_columns, lambda r: (general(r), r.normal(size=(N, 3)))),
    "det_ratio": (det_ratio, lambda r: (general(r), general(r))),
    "signed_logdet": (signed_logdet, lambda r: (-general(r),)),
    "cholesky_logdet": (cholesky_logdet, lambda r: (spd(r),)),
    "whitened": (whitened, lambda r: (spd(r), r.normal(size=N))),
    "upper_factor": (upper_factor, lambda r: (spd(r),)),
}
#: Where the function's first argument is a matrix that `cholesky` reads.
SYMMETRIC = {"cholesky_logdet", "whitened", "upper_factor"}
#: The cases also compiled with Numba (a compile each keeps the file short); the
#: slow ones only in the long run.
COMPILED = {"gaussian_loglik", "whitened"}
COMPILED_SLOW = {"least_squares"}


def args_of(name, seed=0):
    return CASES[name][1](np.random.default_rng(seed))


def on_jax(fn):
    return with_modules(fn, np=jnp)


def argnums_of(args):
    return tuple(range(len(args)))


def with_targets():
    out = [pytest.param(name, "python", id=f"{name}-python") for name in CASES]
    out += [
        pytest.param(
            name,
            "cpu",
            id=f"{name}-cpu",
            marks=[pytest.mark.slow] if name in COMPILED_SLOW else [],
        )
        for name in CASES
        if name in COMPILED | COMPILED_SLOW
    ]
    return pytest.mark.parametrize("name, target", out)


def directions(args, name, rng):
    """A random direction per argument (symmetric where `cholesky` reads it)."""
    out = [rng.normal(size=np.shape(a)) for a in args]
    if name in SYMMETRIC:
        out[0] = out[0] + out[0].T
    return out


def central_difference(fn, args, dirs, h=1e-5):
    plus = fn(*(a + h * d for a, d in zip(args, dirs, strict=True)))
    minus = fn(*(a - h * d for a, d in zip(args, dirs, strict=True)))
    return (plus - minus) / (2 * h)


# -- values and gradients ---------------------------------------------------------------
@with_targets()
def test_value_and_grad_match_numpy_and_jax(name, target):
    fn, _ = CASES[name]
    args = args_of(name)
    argnums = argnums_of(args)
    value, grads = symdiff.value_and_grad(fn, argnums=argnums, target=target)(*args)
    assert value == pytest.approx(fn(*args), rel=1e-12)
    want = jax.grad(on_jax(fn), argnums=argnums)(*args)
    for got, w in zip(grads, want, strict=True):
        np.testing.assert_allclose(got, np.asarray(w), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_grad_matches_finite_differences(name):
    fn, _ = CASES[name]
    args = args_of(name, seed=1)
    grads = symdiff.grad(fn, argnums=argnums_of(args), target="python")(*args)
    dirs = directions(args, name, np.random.default_rng(2))
    predicted = sum(np.sum(g * d) for g, d in zip(grads, dirs, strict=True))
    assert predicted == pytest.approx(central_difference(fn, args, dirs), rel=1e-7)


def test_values_of_each_function_match_numpy():
    rng = np.random.default_rng(3)
    A, K, b, B = general(rng), spd(rng), rng.normal(size=N), rng.normal(size=(N, 2))
    run = symdiff.jit(target="python")
    np.testing.assert_allclose(run(inverse)(A), np.linalg.inv(A), rtol=1e-13)
    np.testing.assert_allclose(run(solved)(A, b), np.linalg.solve(A, b), rtol=1e-13)
    np.testing.assert_allclose(run(solved)(A, B), np.linalg.solve(A, B), rtol=1e-13)
    np.testing.assert_allclose(run(factor)(K), np.linalg.cholesky(K), rtol=1e-13)
    det, logdet = run(det_and_logdet)(A)
    assert det == pytest.approx(np.linalg.det(A), rel=1e-13)
    assert logdet == pytest.approx(np.linalg.slogdet(A)[1], rel=1e-13)
    assert run(signed_logdet)(-A) == pytest.approx(signed_logdet(-A), rel=1e-13)


# -- other transforms -------------------------------------------------------------------
@pytest.mark.parametrize(
    "fn, make",
    [
        (inverse, lambda r: (general(r),)),
        (solved, lambda r: (general(r), r.normal(size=N))),
        (solved, lambda r: (general(r), r.normal(size=(N, 2)))),
        (factor, lambda r: (spd(r),)),
    ],
    ids=["inv", "solve-vector", "solve-matrix", "cholesky"],
)
def test_jacobian_vjp_and_jvp_match_jax(fn, make):
    rng = np.random.default_rng(4)
    args = make(rng)
    argnums = argnums_of(args)
    want = jax.jacobian(on_jax(fn), argnums=argnums)(*args)
    for mode in ("forward", "reverse"):
        jacobian = symdiff.jacobian(fn, argnums, mode, target="python")
        for got, w in zip(jacobian(*args), want, strict=True):
            np.testing.assert_allclose(got, np.asarray(w), rtol=1e-10, atol=1e-12)

    out, pullback = symdiff.vjp(fn, *args, target="python")
    cotangent = rng.normal(size=np.shape(out))
    _, jax_pullback = jax.vjp(on_jax(fn), *args)
    for got, w in zip(pullback(cotangent), jax_pullback(cotangent), strict=True):
        np.testing.assert_allclose(got, np.asarray(w), rtol=1e-10, atol=1e-12)

    tangents = tuple(rng.normal(size=np.shape(a)) for a in args)
    _, got = symdiff.jvp(fn, args, tangents, target="python")
    _, w = jax.jvp(on_jax(fn), args, tangents)
    np.testing.assert_allclose(got, np.asarray(w), rtol=1e-10, atol=1e-12)


def test_jvp_of_scalar_functions_matches_jax():
    rng = np.random.default_rng(5)
    for name in ("gaussian_loglik", "det_ratio", "signed_logdet", "whitened"):
        fn, _ = CASES[name]
        args = args_of(name, seed=5)
        tangents = tuple(directions(args, name, rng))
        _, got = symdiff.jvp(fn, args, tangents, target="python")
        _, want = jax.jvp(on_jax(fn), args, tangents)
        assert got == pytest.approx(float(want), rel=1e-10), name


@pytest.mark.parametrize("name", ["gaussian_loglik", "whitened", "det_ratio"])
def test_hessian_matches_jax(name):
    """Second derivatives differentiate the rules: solve/slogdet, cholesky, det."""
    fn, _ = CASES[name]
    args = args_of(name, seed=6)
    got = symdiff.hessian(fn, target="python")(*args)
    want = jax.hessian(on_jax(fn))(*args)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-9, atol=1e-11)


def test_parallel_target():
    K, y = args_of("gaussian_loglik", seed=7)
    got = symdiff.grad(gaussian_loglik, argnums=(0, 1), target="parallel")(K, y)
    want = jax.grad(on_jax(gaussian_loglik), argnums=(0, 1))(K, y)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-10, atol=1e-12)


def test_printed_code_calls_numpy_and_passes_transposes_as_views():
    grad = symdiff.grad(gaussian_loglik, argnums=(0, 1), target="python")
    grad(*args_of("gaussian_loglik"))
    source = grad.source
    assert "t1 = np.linalg.solve(K, y)" in source
    assert "np.linalg.solve(K.T, " in source  # the adjoint solve: no copy of K.T
    assert "np.linalg.inv(K)" in source


# -- errors -----------------------------------------------------------------------------
def line_of(fn) -> int:
    return fn.__code__.co_firstlineno + 1


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_a_non_square_matrix_is_a_shape_error(target):
    with pytest.raises(symdiff.ShapeError) as info:
        symdiff.grad(inv_sum, target=target)(np.ones((2, 3)))
    text = str(info.value)
    assert f"{HERE}:{line_of(inv_sum)}:" in text
    assert (
        "np.linalg.inv: the matrix must be square, got shape "
        "(A.shape[0], A.shape[1]) (got 2 and 3)"
    ) in text


def test_a_right_hand_side_of_another_length_is_a_shape_error():
    with pytest.raises(symdiff.ShapeError) as info:
        symdiff.grad(solve_sum, target="python")(np.eye(3), np.ones(4))
    assert (
        "np.linalg.solve: shapes (A.shape[0], A.shape[1]) and (b.shape[0],) not "
        "aligned: A.shape[0] (dim 1) != b.shape[0] (dim 0) (got 3 and 4)"
    ) in str(info.value)


@pytest.mark.parametrize(
    "fn, args, message",
    [
        (
            det_of_constant,
            (2.0,),
            "np.linalg.det: the matrix must be square, got shape (2, 3)",
        ),
        (
            inv_of_stack,
            (np.ones((2, 3, 3)),),
            "np.linalg.inv: expected a 2-D matrix, got an array of shape "
            "(A.shape[0], A.shape[1], A.shape[2])",
        ),
        (
            solve_with_stack,
            (np.eye(3), np.ones((2, 3, 1))),
            "np.linalg.solve: the right-hand side must be 1-D or 2-D",
        ),
    ],
    ids=["non-square-constant", "stacked-matrix", "stacked-rhs"],
)
def test_known_bad_shapes_are_translation_errors(fn, args, message):
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(fn, target="python")(*args)
    text = str(info.value)
    assert message in text
    assert f"{HERE}:{line_of(fn)}:" in text


def test_cuda_is_refused_with_a_pointer_to_the_cpu():
    K, y = args_of("gaussian_loglik")
    with pytest.raises(
        symdiff.ArgumentError,
        match=r"cannot run on CUDA: np\.linalg\.solve has no CUDA kernel .*"
        r"Use target='cpu'",
    ):
        symdiff.grad(gaussian_loglik, target="cuda")(K, y)
