"""More NumPy, composed from the existing IR: ``np.hstack``/``vstack``/
``column_stack``/``dstack``/``atleast_*d``, boolean-mask assignment
(``y[y < 0] = 0.0``), ``np.linspace``/``np.logspace``, ``.astype`` and
``np.float64``, ``np.tile``/``np.repeat``, ``np.mod``/``remainder``/``fmod``,
``np.round``/``around``/``rint``/``trunc``/``fix`` and ``np.einsum``.

Every function is ordinary user code at module level (symdiff reads its source).
Values are checked against NumPy itself (bit for bit where NumPy's own formula is
followed: linspace, rounding, fmod), gradients against JAX in float64 (the same
code with ``np`` rebound to ``jax.numpy``); mask assignment, which JAX cannot
run in place, against central finite differences and the ``np.where`` form.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import symdiff
from tests.checks import with_modules

jax.config.update("jax_enable_x64", True)

RTOL = 1e-12
ATOL = 1e-13


def normal(*shape):
    return lambda rng: rng.normal(size=shape)


# -- joining ----------------------------------------------------------------------------
def hstack_vectors(x, y):
    z = np.hstack((x, y, 2.0))
    return np.sum(np.sin(z) * np.arange(z.shape[0]))


def hstack_matrices(X, Y):
    return np.sum(np.hstack([X, Y]) ** 3)


def vstack_vectors(x, y):
    return np.sum(np.vstack((x, y, x * 2)) ** 3 * np.arange(3.0)[:, None])


def vstack_matrices(X, y):
    return np.sum(np.vstack([X, y]) ** 3 * np.arange(X.shape[0] + 1)[:, None])


def column_stack(x, y):
    return np.sum(np.column_stack((x, y, x * y)) ** 2 * np.array([1.0, 3.0, 5.0]))


def dstack(X, y):
    return np.sum(np.dstack((X, X**2, y)) ** 2 * np.array([1.0, 3.0, 5.0]))


def at_least(x, s):
    a, b = np.atleast_2d(x, s)
    return (
        np.sum(a**2)
        + np.sum(b) * np.sum(np.atleast_1d(s) ** 3)
        + np.sum(np.atleast_3d(x) ** 2 * np.atleast_3d(a))
    )


# -- linspace and logspace --------------------------------------------------------------
def linspace(a, b):
    return np.sum(np.sin(np.linspace(a, b, 7)) * np.arange(7.0))


def linspace_no_endpoint(a, b):
    return np.sum(np.linspace(a, b * 2, 5, endpoint=False) ** 3)


def linspace_one(a, b):
    return np.sum(np.linspace(a, b, 1) ** 3) + np.sum(
        np.linspace(a, b, num=1, endpoint=False) ** 2
    )


def linspace_of_len(x, a, b):
    return np.sum(np.linspace(a, b, len(x)) * x)


def linspace_of_arrays(x, b):
    return np.sum(np.linspace(x, b, 4) ** 2 * np.arange(4.0)[:, None])


def linspace_step(a, b):
    y, step = np.linspace(a, b, 6, retstep=True)
    return np.sum(y**2) * step


def logspace(a, b):
    return np.sum(np.logspace(a, b, 5)) + np.sum(
        np.logspace(a, b, 4, base=2.0, endpoint=False)
    )


def linspace_values(a, b):
    return np.linspace(a, b, 11)


def linspace_values_no_endpoint(a, b):
    return np.linspace(a, b, 7, endpoint=False)


# -- tile and repeat ----------------------------------------------------------------------
COUNTS = np.array([1, 3, 0])
TWICE_FIRST = np.array([2, 1, 1])


def tile_vector(x):
    return np.sum(np.sin(np.tile(x, 3)) * np.arange(3 * x.shape[0]))


def tile_matrix(X):
    return np.sum(np.tile(X, (2, 3)) ** 3) + np.sum(
        np.tile(X, (2, 1, 2)) ** 2 * np.arange(2.0)[:, None, None]
    )


def tile_more_reps(x):
    return np.sum(np.tile(x, (2, 2)) ** 3 * np.arange(2.0)[:, None])


def repeat_flat(X):
    return np.sum(np.sin(np.repeat(X, 3)) * np.arange(3 * X.size))


def repeat_axis(X):
    return np.sum(np.repeat(X, 2, axis=-1) ** 3 * np.arange(2 * X.shape[1])) + np.sum(
        X.repeat(2, axis=0) ** 2
    )


def repeat_counts(X):
    return np.sum(np.repeat(X, COUNTS, axis=1) ** 3 * np.arange(4.0)) + np.sum(
        np.repeat(X[0], 1) * np.repeat(X[1], TWICE_FIRST)[:3]
    )


def tile_values(X):
    return np.tile(X, (3, 1, 2))


def repeat_values(X):
    return np.repeat(X, 2, axis=0)


def repeat_listed_values(X):
    return np.repeat(X, [2, 0, 1], axis=1)


# -- remainders, rounding, casts ---------------------------------------------------------
def remainders(a, b):
    return np.sum(np.fmod(a, b) ** 2 + np.mod(a, b) * a + np.remainder(a * 3, b))


def rounded(x):
    return (
        np.sum(np.round(x) * x)
        + np.sum(np.around(x, 1) * x**2)
        + np.sum(x.round(-1) * x)
        + np.sum(np.rint(x) * np.trunc(x) * x)
    )


def casts(x, k):
    m = (x > 0).astype(float)
    n = (x > 0).astype(int)
    return (
        np.sum(x.astype(np.float64) * m)
        + np.sum(np.float64(k) * x * n)
        + np.sum(x.astype("float64") * x.astype(bool))
    )


def round_values(x):
    return np.round(x)


def rint_values(x):
    return np.rint(x)


def round_2_values(x):
    return np.round(x, 2)


def round_minus_1_values(x):
    return np.around(x, -1)


def trunc_values(x):
    return np.trunc(x)


def fix_values(x):
    return np.fix(x)


def fmod_values(a, b):
    return np.fmod(a, b)


def mod_values(a, b):
    return np.mod(a, b)


# -- einsum ----------------------------------------------------------------------------------
def einsum_matvec(A, x):
    return np.sum(np.sin(np.einsum("ij,j->i", A, x)))


def einsum_matmul(A, B):
    return np.sum(np.einsum("ij,jk->ik", A, B) ** 2)


def einsum_trace_diagonal(A):
    return np.einsum("ii->", A) ** 2 + np.sum(np.einsum("ii->i", A) ** 3)


def einsum_transpose(A):
    return np.sum(np.einsum("ij->ji", A) * np.arange(A.size).reshape(A.shape[::-1]))


def einsum_inner(x, y):
    return np.einsum("i,i->", x, y) ** 2


def einsum_batched(A, B):
    return np.sum(np.einsum("bij,bjk->bik", A, B) ** 2)


def einsum_implicit(A, B):
    return np.sum(np.einsum("ij,jk", A, B) ** 3)


def einsum_three(A, B, x):
    return np.sum(np.einsum("ij,jk,k->i", A, B, x) ** 2)


def einsum_outer(x, y):
    return np.sum(np.einsum("i,j->ij", x, y) ** 3 * np.arange(x.size)[:, None])


def einsum_sums(A):
    return np.sum(np.einsum("ij->j", A) ** 2) + np.einsum("ij->", A)


def einsum_batched_vector(A, x):
    return np.sum(np.einsum("bij,bj->bi", A, x) ** 2) + np.sum(
        np.einsum("bj,bij->b", x, A) ** 2
    )


def einsum_quadratic(A, x):
    return np.einsum("i,ij,j", x, A, x)


def einsum_mixed(A, B):
    return np.sum(np.einsum("iij,jk->ik", A, B) ** 2) + np.sum(
        np.einsum("ij,ij->i", B.T, B.T) ** 2
    )


def einsum_values(A, B):
    return np.einsum("bij,jk->bki", A, B)


CASES = [
    (hstack_vectors, (normal(3), normal(2))),
    (hstack_matrices, (normal(2, 3), normal(2, 2))),
    (vstack_vectors, (normal(4), normal(4))),
    (vstack_matrices, (normal(2, 4), normal(4))),
    (column_stack, (normal(4), normal(4))),
    (dstack, (normal(2, 3), normal(2, 3))),
    (at_least, (normal(3), lambda rng: 1.5)),
    (linspace, (lambda rng: 0.3, lambda rng: 1.7)),
    (linspace_no_endpoint, (lambda rng: 0.3, lambda rng: 1.7)),
    (linspace_one, (lambda rng: 0.3, lambda rng: 1.7)),
    (linspace_of_len, (normal(5), lambda rng: 0.3, lambda rng: 1.7)),
    (linspace_of_arrays, (normal(3), lambda rng: 1.2)),
    (linspace_step, (lambda rng: 0.3, lambda rng: 1.7)),
    (logspace, (lambda rng: 0.3, lambda rng: 1.7)),
    (tile_vector, (normal(4),)),
    (tile_matrix, (normal(2, 3),)),
    (tile_more_reps, (normal(3),)),
    (repeat_flat, (normal(2, 3),)),
    (repeat_axis, (normal(2, 3),)),
    (repeat_counts, (normal(2, 3),)),
    (
        remainders,
        (normal(6), lambda rng: rng.uniform(0.5, 2, 6) * np.array([1, -1] * 3)),
    ),
    (rounded, (lambda rng: 3 * rng.normal(size=6),)),
    (casts, (normal(5), lambda rng: 3)),
    (einsum_matvec, (normal(3, 4), normal(4))),
    (einsum_matmul, (normal(3, 4), normal(4, 2))),
    (einsum_trace_diagonal, (normal(3, 3),)),
    (einsum_transpose, (normal(2, 3),)),
    (einsum_inner, (normal(4), normal(4))),
    (einsum_batched, (normal(2, 3, 4), normal(2, 4, 5))),
    (einsum_implicit, (normal(3, 4), normal(4, 2))),
    (einsum_three, (normal(3, 4), normal(4, 2), normal(2))),
    (einsum_outer, (normal(3), normal(2))),
    (einsum_sums, (normal(3, 2),)),
    (einsum_batched_vector, (normal(2, 3, 4), normal(2, 4))),
    (einsum_quadratic, (normal(3, 3), normal(3))),
    (einsum_mixed, (normal(3, 3, 4), normal(4, 2))),
]

# one compile per kind of construct keeps the suite short
COMPILED = ("hstack_vectors", "rounded", "einsum_three")


def floats(args):
    return [np.asarray(a, dtype=float) if isinstance(a, int) else a for a in args]


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
    argnums = tuple(i for i, a in enumerate(args) if not isinstance(a, int))
    value, grads = symdiff.value_and_grad(fn, argnums=argnums, target=target)(*args)
    assert value == pytest.approx(fn(*args), rel=1e-13, abs=1e-13)
    jax_fn = with_modules(fn, np=jnp)
    want = jax.grad(jax_fn, argnums=argnums)(*floats(args))
    for got, expected in zip(grads, want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


# -- values bit for bit, and forward mode ------------------------------------------------------
SPECIAL = np.array(
    [
        *(0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, -0.3, -0.0, 0.0),
        *(3.7, -3.7, 1e300, -(2.0**52) - 0.5, 2.0**52 + 1, np.inf, -np.inf, np.nan),
        *(4503599627370495.5, 2.675, 0.125, -0.7, 1.005, -2.675, 15.0, -25.0),
    ]
)


def same_bits(got, want):
    """Equal values and signs of zero; NaN equal to NaN (any sign)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    both = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[both]), np.signbit(want[both]))


ROUNDING = [
    (round_values, np.round, "python"),
    (round_values, np.round, "cpu"),
    (rint_values, np.rint, "python"),
    (round_2_values, lambda x: np.round(x, 2), "python"),
    (round_minus_1_values, lambda x: np.around(x, -1), "python"),
    (trunc_values, np.trunc, "python"),
    (fix_values, np.fix, "python"),
]


@pytest.mark.parametrize(
    "fn, reference, target",
    ROUNDING,
    ids=[f"{f.__name__}-{t}" for f, _, t in ROUNDING],
)
def test_rounding_is_numpys_bit_for_bit(fn, reference, target):
    same_bits(symdiff.jit(fn, target=target)(SPECIAL), reference(SPECIAL))


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_remainders_are_numpys_bit_for_bit(target):
    a = np.array([5.3, -5.3, 5.3, -5.3, 0.0, -0.0, 1e17, 7.0, 3.0, np.inf, 2.0, 1e-300])
    b = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 3.0, 0.0, np.inf, 2.0, -0.0, 3.0])
    with np.errstate(all="ignore"):
        same_bits(symdiff.jit(fmod_values, target=target)(a, b), np.fmod(a, b))
        keep = np.isfinite(a) & (b != 0)  # Python's % and NumPy's agree there
        same_bits(
            symdiff.jit(mod_values, target=target)(a[keep], b[keep]),
            np.mod(a[keep], b[keep]),
        )


@pytest.mark.parametrize(
    "fn, args",
    [
        (linspace_values, (0.1, 0.7)),
        (linspace_values, (-3.0, 1e10)),
        (linspace_values_no_endpoint, (0.1, 0.7)),
        (tile_values, (np.arange(6.0).reshape(2, 3),)),
        (repeat_values, (np.arange(6.0).reshape(2, 3),)),
        (repeat_listed_values, (np.arange(6.0).reshape(2, 3),)),
        (
            einsum_values,
            (np.arange(24.0).reshape(2, 3, 4), np.arange(8.0).reshape(4, 2)),
        ),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_array_values_match_numpy(fn, args):
    same_bits(symdiff.jit(fn, target="python")(*args), fn(*args))


@pytest.mark.slow
def test_jacobian_jvp_and_hessian_match_jax():
    rng = np.random.default_rng(3)
    a, b = 0.3, 1.7
    jac = symdiff.jacobian(linspace_values, argnums=(0, 1), target="python")(a, b)
    want = jax.jacobian(with_modules(linspace_values, np=jnp), argnums=(0, 1))(a, b)
    for got, expected in zip(jac, want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)
    X, t = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    _, tangent = symdiff.jvp(tile_values, (X,), (t,), target="python")
    np.testing.assert_array_equal(tangent, np.tile(t, (3, 1, 2)))
    for fn, args in [
        (einsum_quadratic, (rng.normal(size=(3, 3)), rng.normal(size=3))),
        (tile_vector, (rng.normal(size=4),)),
        (linspace, (0.3, 1.7)),
    ]:
        hessian = symdiff.hessian(fn, argnums=len(args) - 1, target="python")(*args)
        expected = jax.hessian(with_modules(fn, np=jnp), argnums=len(args) - 1)(*args)
        np.testing.assert_allclose(hessian, expected, rtol=RTOL, atol=ATOL)


def test_einsum_matrix_products_are_matmuls():
    """``"ij,jk->ik"`` is a product of matrices, not an n**3 array summed."""
    grad = symdiff.grad(einsum_matmul, target="python")
    grad(np.ones((3, 4)), np.ones((4, 2)))
    assert "np.dot(A, B)" in grad.source


# -- boolean-mask assignment -------------------------------------------------------------------
def relu_in_place(x):
    y = np.sin(x)
    y[y < 0] = 0.0
    return np.sum(y**2 * np.arange(x.size).reshape(x.shape))


def clip_in_place(x, c):
    x = x * 1.0
    x[x > c] = c
    return np.sum(x**3)


def add_to_rows(X, v):
    Y = X * 2.0
    Y[X[:, 0] > 0] += v
    return np.sum(Y**2)


def set_columns(X, w):
    Y = np.cos(X)
    Y[:, w > 0] = 2.0 * w[0]
    return np.sum(Y**3)


def set_after_ellipsis(X):
    Y = X**2
    Y[..., X[0] > 0] = -1.0
    return np.sum(Y * X)


def set_rows_to_a_vector(X, r):
    Y = X + 0.0
    Y[X[:, 0] < 0.5] = r
    return np.sum(np.tanh(Y) * X)


def scale_in_place(x):
    y = np.sin(x)
    y[y < 0] *= 2.0
    y[y > 0.5] -= x[0]
    y[y > 0.7] /= 3.0
    y[y > 0.1] **= 2
    return np.sum(y * np.arange(x.size))


def copy_where(x, z):
    y = np.sin(x)
    y[x > 0] = z[x > 0]
    return np.sum(y**2 * np.arange(x.size))


def copy_rows(X, Z):
    Y = X * 2.0
    m = X[:, 0] > 0
    Y[m] = Z[m]
    Y[m] += Z[m]
    Y[m] *= X[m]
    return np.sum(Y**3)


def copy_rows_by_where(X, Z):
    Y = X * 2.0
    m = X[:, 0] > 0
    Y = np.where(m[:, None], Z, Y)
    Y = np.where(m[:, None], Y + Z, Y)
    Y = np.where(m[:, None], Y * X, Y)
    return np.sum(Y**3)


def relu_by_where(x):
    y = np.sin(x)
    y = np.where(y < 0, 0.0, y)
    return np.sum(y**2 * np.arange(x.size).reshape(x.shape))


def finite_difference(fn, args, i):
    x = np.array(args[i], dtype=float)
    grad = np.zeros_like(x)
    h = 1e-6
    for k in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[k] = h
        up, down = list(args), list(args)
        up[i], down[i] = x + e, x - e
        grad[k] = (fn(*up) - fn(*down)) / (2 * h)
    return grad


MASKED = [
    (relu_in_place, (normal(3, 4),)),
    (clip_in_place, (normal(5), lambda rng: 0.3)),
    (add_to_rows, (normal(5, 3), normal(3))),
    (set_columns, (normal(2, 4), normal(4))),
    (set_after_ellipsis, (normal(2, 4),)),
    (set_rows_to_a_vector, (normal(5, 3), normal(3))),
    (scale_in_place, (normal(7),)),
    (copy_where, (normal(7), normal(7))),
    (copy_rows, (normal(5, 3), normal(5, 3))),
]


@pytest.mark.parametrize(
    "fn, makes, target",
    [(f, m, "python") for f, m in MASKED] + [(MASKED[2][0], MASKED[2][1], "cpu")],
    ids=[f"{f.__name__}-python" for f, _ in MASKED] + [f"{MASKED[2][0].__name__}-cpu"],
)
def test_mask_assignment_matches_numpy_and_finite_differences(fn, makes, target):
    rng = np.random.default_rng(5)
    args = tuple(make(rng) for make in makes)
    argnums = tuple(range(len(args)))
    copies = [np.copy(a) for a in args]
    value, grads = symdiff.value_and_grad(fn, argnums=argnums, target=target)(*copies)
    for a, c in zip(args, copies, strict=True):
        np.testing.assert_array_equal(a, c)  # the caller's arrays are untouched
    assert value == pytest.approx(fn(*[np.copy(a) for a in args]), rel=1e-13)
    for i, got in enumerate(grads):
        want = finite_difference(fn, [np.copy(a) for a in args], i)
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-8)


def test_mask_assignment_is_the_where_jax_differentiates():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(3, 4))
    got = symdiff.grad(relu_in_place, target="python")(x)
    want = jax.grad(with_modules(relu_by_where, np=jnp))(x)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    X, Z = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    got = symdiff.grad(copy_rows, argnums=(0, 1), target="python")(X, Z)
    want = jax.grad(with_modules(copy_rows_by_where, np=jnp), argnums=(0, 1))(X, Z)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


# -- what is refused -----------------------------------------------------------------------------
def mask_read(x):
    return x[x > 0][1]  # np.sum(x[x > 0]) works: tests/test_masks.py


def mask_per_element(x, v):
    y = x * 1.0
    y[x > 0] = v
    return np.sum(y)


def copy_another_mask(x, z):
    y = x * 1.0
    y[x > 0] = z[z > 0]
    return np.sum(y)


def mask_with_an_integer(X):
    Y = X * 1.0
    Y[0, X[0] > 0] = 0.0
    return np.sum(Y)


def mask_of_another_shape(X, m):
    Y = X * 1.0
    Y[m > 0] = 0.0
    return np.sum(Y)


def einsum_ellipsis(A, B):
    return np.sum(np.einsum("...ij,...jk->...ik", A, B))


def einsum_bad_output(A):
    return np.sum(np.einsum("ij->ik", A))


def einsum_wrong_rank(A):
    return np.sum(np.einsum("ijk->i", A))


def to_float32(x):
    return np.sum(x.astype(np.float32))


def hstack_ranks(x, X):
    return np.sum(np.vstack((X, np.atleast_3d(x))))


def repeat_run_time_counts(x, k):
    return np.sum(np.repeat(x, k))


def linspace_float_num(a):
    return np.sum(np.linspace(0.0, a, 2.5))


@pytest.mark.parametrize(
    "fn, args, message, hint",
    [
        (mask_read, (np.ones(3),), "indexing a boolean-mask selection", "np.where"),
        (
            mask_per_element,
            (np.ones(3), np.ones(3)),
            "depends on how many elements the mask selects",
            "x = np.where(mask, values, x)",
        ),
        (
            copy_another_mask,
            (np.ones(3), np.ones(3)),
            "the assigned selection uses another mask",
            "select both sides with one mask",
        ),
        (
            mask_with_an_integer,
            (np.ones((2, 3)),),
            "the other indices must be `:` or `...`",
            "one mask of the array's shape",
        ),
        (einsum_ellipsis, (np.ones((2, 2)), np.ones((2, 2))), "ellipsis", "letter"),
        (einsum_bad_output, (np.ones((2, 2)),), "'k' does not appear", "output letter"),
        (einsum_wrong_rank, (np.ones((2, 2)),), "has 3 subscripts", "one letter"),
        (to_float32, (np.ones(2),), "float32 is not supported", "np.float64"),
        (
            hstack_ranks,
            (np.ones(2), np.ones((2, 2))),
            "same number of dimensions",
            "reshape",
        ),
        (
            repeat_run_time_counts,
            (np.ones(2), np.array([1, 2])),
            "counts computed when the kernel runs",
            "constants",
        ),
        (linspace_float_num, (1.0,), "must be an integer", "int constant"),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_refused_with_the_construct_and_a_hint(fn, args, message, hint):
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(fn, target="python")(*args)
    text = str(info.value)
    assert message in text and hint in text
    assert "test_numpy_more.py:" in text
    assert "^" in text


def test_a_mask_of_another_shape_is_a_shape_error():
    grad = symdiff.grad(mask_of_another_shape, target="python")
    np.testing.assert_array_equal(
        grad(np.ones((2, 3)), np.array([1.0, -1.0])), [[0, 0, 0], [1, 1, 1]]
    )
    with pytest.raises(symdiff.ShapeError, match="boolean index did not match"):
        grad(np.ones((2, 3)), np.ones(3))
