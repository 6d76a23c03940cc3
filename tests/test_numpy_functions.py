"""NumPy functions composed from the existing IR ops: ``np.var``/``np.std``,
``np.diff``, ``np.flip``/``fliplr``/``flipud``, ``np.roll``, the ``*_like``
constructors, ``np.arange`` of floats, builtin ``sum``, ``np.diag`` and
``np.cumsum``/``np.cumprod``.

Every function is ordinary user code at module level (symdiff reads its source).
Its oracle is the same code run by HIPS autograd (``np`` rebound to
``autograd.numpy``) or, where autograd has no derivative (``np.flip``,
``np.cumprod``, ``np.diff``'s ``prepend``/``append``, ``np.roll`` of several
axes), by JAX in float64.  Values are checked against NumPy itself.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import autograd
import autograd.numpy as anp
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import symdiff
from tests.checks import with_modules

jax.config.update("jax_enable_x64", True)

RTOL = 1e-11
ATOL = 1e-12


# -- np.var and np.std ------------------------------------------------------------------
def var_all(x):
    return np.var(x) + np.std(x)


def var_axis_keepdims(x):
    return np.sum(np.sin(np.var(x, axis=0, keepdims=True)) * x)


def std_axis_ddof(x):
    return np.sum(np.std(x, axis=1, ddof=1) ** 3) + np.sum(np.var(x, axis=-1, ddof=2))


def std_axes_tuple(x):
    return np.sum(np.std(x, axis=(0, 2)) ** 3) * np.sum(
        np.var(x, axis=(1, 2), keepdims=True) * x
    )


def var_methods(x):
    return x.var() + np.sum(x.std(axis=-1, keepdims=True) * x) + x.var(1, ddof=1).sum()


def var_ddof_argument(x, d):
    return np.var(x, ddof=d) * np.std(x, ddof=d)


def standardise(x, w):
    # a standardisation layer, then a linear read-out
    z = (x - x.mean(0)) / x.std(0)
    return np.sum(np.tanh(z @ w) ** 2)


def layer_norm(x, gain):
    mu = np.mean(x, axis=-1, keepdims=True)
    sigma = np.sqrt(np.var(x, axis=-1, keepdims=True) + 1e-5)
    return np.sum(((x - mu) / sigma * gain) ** 2 * np.arange(x.shape[-1]))


# -- np.diff ----------------------------------------------------------------------------
def diff_squares(x):
    return np.sum(np.diff(x) ** 2)


def diff_second_axis0(x):
    return np.sum(np.sin(np.diff(x, n=2, axis=0)) * np.cos(x[1:-1]))


def diff_third_last_axis(x):
    return np.sum(np.diff(x, 3) ** 2) + np.sum(np.diff(x, n=0) ** 2)


def diff_prepend_append(x):
    a = np.diff(x, prepend=0.0, append=x[:, -1:] * 2.0)
    return np.sum(a**2 * np.arange(a.shape[1])) + np.sum(
        np.diff(x, axis=0, prepend=x[:1]) ** 3
    )


def total_variation(img):
    # isotropic total variation of an image, smoothed at 0
    dx = np.diff(img, axis=1)[:-1, :]
    dy = np.diff(img, axis=0)[:, :-1]
    return np.sum(np.sqrt(dx**2 + dy**2 + 1e-8))


# -- np.flip ----------------------------------------------------------------------------
def flip_all(x):
    return np.sum(np.flip(x) * x**2)


def flip_axes(x):
    return np.sum(np.sin(np.flip(x, axis=(0, 2))) * x) + np.sum(np.flip(x, -1) ** 3 * x)


def flip_lr_ud(x):
    return np.sum(np.fliplr(x) * np.flipud(x) ** 2)


def palindrome_penalty(x):
    # how far a signal is from reading the same backwards
    return np.sum((x - np.flip(x)) ** 2) + np.sum(x[::-1] * np.flip(x) ** 3)


# -- np.roll ----------------------------------------------------------------------------
def roll_1d(x):
    return (
        np.sum(np.roll(x, 1) * x)
        + np.sum(np.roll(x, -1) * x**2)
        + np.sum(np.roll(x, 7) ** 3)
        + np.sum(np.roll(x, 0) * x)
    )


def roll_axes(x):
    return (
        np.sum(np.sin(np.roll(x, 1, axis=0)) * x)
        + np.sum(np.roll(x, -2, axis=-1) ** 2 * x)
        + np.sum(np.roll(x, 3) * x**2)  # flattened, as NumPy rolls without an axis
    )


def roll_several_axes(x):
    return np.sum(np.roll(x, (1, -1), axis=(0, 1)) * x**2) + np.sum(
        np.roll(x, 2, axis=(0, 1, 1)) ** 3
    )


def roll_by(x, k):
    return np.sum(np.roll(x, k) * np.exp(x))


def periodic_energy(s):
    # a lattice field with periodic boundaries: nearest-neighbour coupling and a
    # double-well on-site term
    coupling = s * np.roll(s, 1, axis=0) + s * np.roll(s, -1, axis=1)
    return -np.sum(np.tanh(coupling)) + np.sum((s**2 - 1.0) ** 2)


# -- the *_like constructors and float np.arange ----------------------------------------
def like_constants(x):
    base = np.zeros_like(x) + np.ones_like(x) * x + np.full_like(x, 2.5) * x**2
    return np.sum(base + np.empty_like(x) * 0.0)


def like_as_accumulator(x):
    out = np.zeros_like(x)
    for i in range(1, x.shape[0]):
        out[i] = out[i - 1] * 0.5 + x[i] ** 2
    return np.sum(out * np.full_like(out, 3.0, dtype=float))


def like_as_accumulator_reference(x):
    # the oracle's version: autograd and JAX arrays take no item assignment
    acc, total = 0.0, 0.0
    for i in range(1, x.shape[0]):
        acc = acc * 0.5 + x[i] ** 2
        total = total + acc
    return 3.0 * total


def arange_float(x):
    return np.sum(x * np.arange(0.0, 1.0, 0.25)) + np.sum(x**2 * np.arange(4.0))


def time_grid_fit(y, amp, freq):
    # fit a sinusoid on a time grid built from the data's length
    t = np.arange(0.0, len(y)) * 0.1
    return np.sum((y - amp * np.sin(freq * t)) ** 2)


# -- builtin sum ------------------------------------------------------------------------
def builtin_sum_rows(x):
    return np.sum(sum(x) ** 2) + sum(x[0]) * sum(np.exp(x[:, 0]))


def builtin_sum_items(x, a):
    return sum((x[0], a * x[1], 2.0)) + sum([a, a**2], 1.0) + sum((x, x**2))[0]


def weighted_rows(X, w):
    # a convex combination of the rows of X
    return np.sum(np.tanh(sum(X * w[:, None]) / np.sum(w)))


# -- np.diag ----------------------------------------------------------------------------
def diag_of_vector(v, A):
    return np.sum(np.diag(v) @ A) + np.sum(np.diag(v, 1) ** 2) + np.sum(np.diag(v, -2))


def diag_of_matrix(A):
    return (
        np.sum(np.diag(A) ** 3)
        + np.sum(np.sin(np.diag(A, 1)))
        + np.sum(np.diag(A, -1) * 2.0)
    )


def diag_round_trip(A):
    return np.sum((A - np.diag(np.diag(A))) ** 2)


def gaussian_nll(L, X):
    # -log N(x; 0, (L L^T)^-1) summed over the rows of X, up to a constant: the
    # precision's Cholesky factor L gives its log-determinant, 2 sum(log |diag(L)|)
    return -X.shape[0] * np.sum(np.log(np.abs(np.diag(L)))) + 0.5 * np.sum((X @ L) ** 2)


# -- np.cumsum and np.cumprod -----------------------------------------------------------
def cumsum_axes(x):
    return np.sum(np.cumsum(x, axis=0) ** 2) + np.sum(np.sin(np.cumsum(x, axis=1)))


def cumsum_flat(x):
    return np.sum(np.cumsum(x) ** 2 * np.arange(x.size)) + x.cumsum().sum()


def cumprod_axes(x):
    return np.sum(np.cumprod(x, axis=1)) + np.sum(x.cumprod() ** 2)


def survival_loss(hazard, weights):
    # survival curve from per-step hazards, and a random walk path's misfit
    survival = np.cumprod(1.0 - hazard)
    path = np.cumsum(hazard * 0.5)
    return np.sum(survival * weights) + np.sum((path - 0.1) ** 2)


# -- the cases ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    fn: Callable[..., Any]
    make: Callable[[np.random.Generator], tuple[Any, ...]]
    oracle: str = "autograd"  # or "jax", where autograd has no derivative
    argnums: tuple[int, ...] = (0,)
    reference: Callable[..., Any] | None = None  # the oracle's code, when not fn


def normal(*shape: int) -> Callable[[np.random.Generator], tuple[Any, ...]]:
    return lambda rng: (rng.normal(size=shape),)


CASES = [
    Case(var_all, normal(4, 3)),
    Case(var_axis_keepdims, normal(5, 3)),
    Case(std_axis_ddof, normal(3, 4)),
    Case(std_axes_tuple, normal(3, 2, 4)),
    Case(var_methods, normal(4, 5)),
    Case(var_ddof_argument, lambda rng: (rng.normal(size=6), 1)),
    Case(
        standardise,
        lambda rng: (rng.normal(size=(6, 3)), rng.normal(size=(3, 2))),
        argnums=(0, 1),
    ),
    Case(
        layer_norm,
        lambda rng: (rng.normal(size=(4, 5)), rng.normal(size=5)),
        argnums=(0, 1),
    ),
    Case(diff_squares, normal(6)),
    Case(diff_second_axis0, normal(5, 3)),
    Case(diff_third_last_axis, normal(3, 6)),
    Case(diff_prepend_append, normal(3, 4), oracle="jax"),
    Case(total_variation, normal(5, 6)),
    Case(flip_all, normal(3, 4), oracle="jax"),
    Case(flip_axes, normal(2, 3, 4), oracle="jax"),
    Case(flip_lr_ud, normal(4, 3)),
    Case(palindrome_penalty, normal(7), oracle="jax"),
    Case(roll_1d, normal(5)),
    Case(roll_axes, normal(3, 4)),
    Case(roll_several_axes, normal(3, 4), oracle="jax"),
    Case(roll_by, lambda rng: (rng.normal(size=5), -3)),
    Case(periodic_energy, normal(4, 5)),
    Case(like_constants, normal(3, 2)),
    Case(like_as_accumulator, normal(6), reference=like_as_accumulator_reference),
    Case(arange_float, normal(4)),
    Case(time_grid_fit, lambda rng: (rng.normal(size=20), 1.3, 0.7), argnums=(0, 1, 2)),
    Case(builtin_sum_rows, normal(3, 4)),
    Case(builtin_sum_items, lambda rng: (rng.normal(size=3), 0.8), argnums=(0, 1)),
    Case(
        weighted_rows,
        lambda rng: (rng.normal(size=(4, 3)), rng.uniform(0.5, 1.5, 4)),
        argnums=(0, 1),
    ),
    Case(
        diag_of_vector,
        lambda rng: (rng.normal(size=4), rng.normal(size=(4, 3))),
        argnums=(0, 1),
    ),
    Case(diag_of_matrix, normal(4, 4)),
    Case(diag_round_trip, normal(3, 3)),
    Case(
        gaussian_nll,
        lambda rng: (
            np.tril(rng.normal(size=(3, 3))) + 3 * np.eye(3),
            rng.normal(size=(5, 3)),
        ),
        argnums=(0, 1),
    ),
    Case(cumsum_axes, normal(3, 4)),
    Case(cumsum_flat, normal(2, 3)),
    Case(cumprod_axes, normal(3, 4), oracle="jax"),
    Case(
        survival_loss,
        lambda rng: (rng.uniform(0.0, 0.3, 6), rng.normal(size=6)),
        oracle="jax",
        argnums=(0, 1),
    ),
]
BY_NAME = {c.fn.__name__: c for c in CASES}
IDS = [c.fn.__name__ for c in CASES]


def oracle_grad(case: Case, args: tuple[Any, ...]) -> tuple[Any, ...]:
    code = case.reference or case.fn
    if case.oracle == "jax":
        fn = with_modules(code, np=jnp)
        return tuple(np.asarray(g) for g in jax.grad(fn, case.argnums)(*args))
    fn = with_modules(code, np=anp)
    return tuple(autograd.grad(fn, i)(*args) for i in case.argnums)


def oracle_hessian(case: Case, args: tuple[Any, ...]) -> np.ndarray:
    if case.oracle == "jax":
        return np.asarray(jax.hessian(with_modules(case.fn, np=jnp))(*args))
    return autograd.hessian(with_modules(case.fn, np=anp))(*args)


def assert_close(got: Any, want: Any) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=RTOL, atol=ATOL)


# Every case runs its generated source as Python; Numba compiles one or two of each
# family (the same printer templates), which keeps the sweep's compile time in bounds.
CPU_SAMPLE = {
    "var_ddof_argument",
    "layer_norm",
    "diff_prepend_append",
    "flip_axes",
    "roll_several_axes",
    "roll_by",
    "like_as_accumulator",
    "arange_float",
    "builtin_sum_items",
    "diag_of_vector",
    "diag_round_trip",
    "cumsum_flat",
    "cumprod_axes",
    "survival_loss",
}
assert CPU_SAMPLE <= set(IDS), CPU_SAMPLE - set(IDS)
TARGETS = [(c, "python") for c in CASES] + [
    (c, "cpu") for c in CASES if c.fn.__name__ in CPU_SAMPLE
]


@pytest.mark.parametrize(
    "case, target", TARGETS, ids=[f"{c.fn.__name__}-{t}" for c, t in TARGETS]
)
def test_value_and_grad(case, target):
    args = case.make(np.random.default_rng(7))
    value, grads = symdiff.value_and_grad(case.fn, argnums=case.argnums, target=target)(
        *args
    )
    assert value == pytest.approx(case.fn(*args), rel=1e-13, abs=1e-13)
    for got, want in zip(grads, oracle_grad(case, args), strict=True):
        assert_close(got, want)


HESSIAN_JVP = [
    "std_axis_ddof",
    "total_variation",
    "periodic_energy",
    "diag_of_matrix",
    "cumprod_axes",
    "palindrome_penalty",
]


SLOW = pytest.mark.slow  # ~10 s of Numba compile each


@pytest.mark.parametrize(
    "name, target",
    [(n, "python") for n in HESSIAN_JVP]
    + [pytest.param(n, "cpu", marks=SLOW) for n in ("periodic_energy", "cumprod_axes")],
)
def test_hessian_and_jvp(name, target):
    case = BY_NAME[name]
    rng = np.random.default_rng(3)
    args = case.make(rng)
    hessian = symdiff.hessian(case.fn, target=target)(*args)
    assert_close(hessian, oracle_hessian(case, args))
    tangent = rng.normal(size=np.shape(args[0]))
    value, out_tangent = symdiff.jvp(case.fn, args, (tangent,), target=target)
    (gradient,) = oracle_grad(case, args)
    assert value == pytest.approx(case.fn(*args), rel=1e-13)
    assert out_tangent == pytest.approx(float(np.sum(gradient * tangent)), rel=1e-11)


PARALLEL = ["total_variation", "periodic_energy", "survival_loss"]


@pytest.mark.parametrize("name", PARALLEL)
def test_parallel_target(name):
    case = BY_NAME[name]
    args = case.make(np.random.default_rng(11))
    grads = symdiff.grad(case.fn, argnums=case.argnums, target="parallel")(*args)
    for got, want in zip(grads, oracle_grad(case, args), strict=True):
        assert_close(got, want)


@SLOW
def test_parallel_hessian_through_loops():
    """``np.cumprod`` is a loop; its Hessian (forward over reverse: tangents
    through the taped loop) on threads."""
    for name in ("cumprod_axes",):
        case = BY_NAME[name]
        args = case.make(np.random.default_rng(5))
        hessian = symdiff.hessian(case.fn, target="parallel")(*args)
        assert_close(hessian, oracle_hessian(case, args))


# -- edge cases ---------------------------------------------------------------------------
def spread(x):
    return np.std(x)


def spread_ddof(x):
    return np.std(x, ddof=1) + np.var(x, ddof=3)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_std_where_the_variance_is_zero_is_nan_as_in_jax(target):
    """``np.std`` is ``sqrt(np.var)``, as in NumPy and JAX: where the variance is
    0 (equal elements, one element) its derivative is ``0.5 / 0 * 0``, NaN, as
    JAX's ``grad(jnp.std)`` is (symdiff does not choose a subgradient)."""
    run = symdiff.value_and_grad(spread, target=target)
    for x in (np.full(3, 2.0), np.array([2.0]), np.array([-1.0, -1.0])):
        value, grad = run(x)
        assert value == 0.0
        want = np.asarray(jax.grad(with_modules(spread, np=jnp))(x))
        assert np.isnan(want).all() and np.isnan(grad).all()
    # ddof past the count divides by 0, as NumPy does: inf, or NaN for 0 / 0
    jit = symdiff.jit(spread_ddof, target=target)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for x in (np.array([1.0, 2.0]), np.array([1.0, 1.0]), np.array([3.0])):
            np.testing.assert_array_equal(jit(x), spread_ddof(x))


def running_1d(x):
    return np.sum(np.cumsum(x) * np.cumprod(x)) + np.sum(np.cumsum(x[::-1]) ** 2)


def diag_1d(v):
    return np.sum(np.diag(v, 1) ** 2) + np.sum(np.diag(np.outer(v, v)) ** 3)


def spread_1d(x):
    return np.var(x) + np.std(np.concatenate([x, x + 1.0]))


SHORT = [
    Case(diff_squares, normal(1)),
    Case(palindrome_penalty, normal(1), oracle="jax"),
    Case(roll_1d, normal(1)),
    Case(running_1d, normal(1), oracle="jax"),
    Case(diag_1d, normal(1)),
    Case(spread_1d, normal(1)),
    Case(cumsum_flat, normal(1, 1)),
    Case(diag_of_matrix, normal(1, 1)),
]


@pytest.mark.parametrize("target", ["python"])  # the kernels the CPU compiles
@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("case", SHORT, ids=[c.fn.__name__ for c in SHORT])
def test_lengths_one_and_two(case, n, target):
    """Length 1 is a specialisation of its own (a known length: ``np.diff`` is
    empty, a roll is the array itself); length 2 is the smallest symbolic one."""
    rng = np.random.default_rng(n)
    x = rng.normal(size=(n,) * np.ndim(case.make(rng)[0]))
    value, grad = symdiff.value_and_grad(case.fn, target=target)(x)
    assert value == pytest.approx(case.fn(x), rel=1e-13, abs=1e-14)
    assert_close(grad, oracle_grad(case, (x,))[0])


# -- values and dtypes of array results -----------------------------------------------------
def layouts(x, A):
    return (
        np.diff(x, 3),
        np.diff(A, axis=0),
        np.flip(A, (0, 1)),
        np.fliplr(A),
        np.flipud(A),
        np.roll(A, 5),
        np.roll(A, -1, axis=1),
        np.roll(x, 13),
    )


def diagonals(A):
    return np.diag(A), np.diag(A, 2), np.diag(A, -1), np.diag(A.T), np.diag(A.T, 1)


def integer_results(k, b):
    return (
        np.cumsum(k),
        np.cumprod(k, axis=0),
        np.cumsum(b),
        np.diff(b),
        np.zeros_like(k),
        np.ones_like(b),
        np.full_like(k, 2.7),
        np.zeros_like(k, dtype=float),
        np.full_like(b, 3),
        sum(k),
        np.diag(k),
        np.roll(k, 1),
    )


def aranges(x):
    return (
        np.arange(5.0),
        np.arange(0.0, 1.0, 0.1),
        np.arange(1.0, 1.3, 0.1),  # 4 elements, as NumPy's count rounds
        np.arange(1.0, 0.0, -0.25),
        np.arange(0.5, len(x)),
        np.arange(0, len(x), 2.0),
        np.arange(len(x), dtype=float),
        np.arange(1, 2 * len(x) + 1, 2),
        np.arange(5, 0, -2),
        np.arange(3),
        np.arange(2.0, -1),  # empty
    )


def empty_like_zeros(x, k):
    return np.empty_like(x), np.empty_like(k), np.empty_like(k, dtype=float)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_array_results_and_dtypes_match_numpy(target):
    rng = np.random.default_rng(2)
    x, A = rng.normal(size=6), rng.normal(size=(3, 5))
    k = rng.integers(-3, 4, size=(4, 2))
    b = rng.random(5) > 0.5
    for fn, args in (
        (layouts, (x, A)),
        (diagonals, (A,)),
        (diagonals, (A.T.copy(),)),
        (diagonals, (rng.normal(size=(4, 4)),)),
        (integer_results, (k, b)),
        (aranges, (x,)),
        (aranges, (np.ones(1),)),
    ):
        got = symdiff.jit(fn, target=target)(*args)
        want = fn(*args)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert np.shape(g) == np.shape(w)
            assert np.asarray(g).dtype == np.asarray(w).dtype, (fn.__name__, g, w)
            np.testing.assert_array_equal(g, w)
    # np.empty_like's contents are unspecified: symdiff's are zeros
    got = symdiff.jit(empty_like_zeros, target=target)(A, k)
    for g, w in zip(got, empty_like_zeros(A, k), strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype and not g.any()


def diag_grad_loop(A):
    return np.sum(np.diag(A) ** 2)


def cumsum_grad_loop(x):
    return np.sum(np.cumsum(x) ** 2)


def test_diag_and_cumsum_kernels_are_loops_over_their_positions():
    """The diagonal is read by a loop over its positions, its adjoint added into
    those positions of ``A_bar`` (no pass over the matrix, no copy per step);
    the cumulative sum carries its total, and its backward loop carries the
    adjoint's."""
    A = np.random.default_rng(0).normal(size=(4, 3))
    grad = symdiff.grad(diag_grad_loop, target="cpu")
    np.testing.assert_array_equal(grad(A), _diag_grad(A))
    assert "np.copy" not in grad.source
    assert "A_bar[i_2, i_2] += d_bar[i_2]" in grad.source
    x = np.arange(5.0)
    grad = symdiff.grad(cumsum_grad_loop, target="cpu")
    np.testing.assert_allclose(grad(x), 2 * np.cumsum(np.cumsum(x)[::-1])[::-1])
    assert "np.copy" not in grad.source
    assert "# backward: np.cumsum" in grad.source


def _diag_grad(A):
    out = np.zeros_like(A)
    for i in range(min(A.shape)):
        out[i, i] = 2 * A[i, i]
    return out


# -- what is refused, and how ---------------------------------------------------------------
def sum_of_number(a):
    return sum(a)


def diag_of_3d(x):
    return np.sum(np.diag(x.reshape(2, 2, -1)))


def arange_float_argument(x, a):
    return np.sum(x * np.arange(0.0, a))


def roll_mismatch(x):
    return np.sum(np.roll(x, (1, 2, 3), axis=(0, 1)))


def diff_negative(x):
    return np.sum(np.diff(x, n=-1))


def full_like_int_float(k, a):
    return np.sum(np.full_like(k, a)) * a


def var_into_out(x):
    return np.var(x, out=x)


@pytest.mark.parametrize(
    ("fn", "args", "message", "hint"),
    [
        (sum_of_number, (1.5,), "`sum` of a number is not supported", "np.sum(x)"),
        (
            diag_of_3d,
            (np.ones(8),),
            "np.diag: the input must be 1-D (a diagonal) or 2-D (a matrix)",
            "np.sum(A * np.eye(n), axis=-1)",
        ),
        (
            arange_float_argument,
            (np.ones(3), 3.0),
            "np.arange with float arguments needs a constant start",
            "np.arange(n) * h + a",
        ),
        (
            roll_mismatch,
            (np.ones((2, 3)),),
            "np.roll: `shift` and `axis` must have the same length",
            "one shift per axis",
        ),
        (
            diff_negative,
            (np.ones(3),),
            "np.diff: order must be non-negative but got -1",
            "n >= 0",
        ),
        (
            full_like_int_float,
            (np.ones(3, dtype=np.int64), 2.5),
            "a fill value computed in floating point cannot fill an integer array",
            "dtype=float",
        ),
        (var_into_out, (np.ones(3),), "np.var: `out` is not supported", "returned"),
    ],
    ids=lambda v: getattr(v, "__name__", "") if callable(v) else "",
)
def test_refused_with_a_message_and_a_hint(fn, args, message, hint):
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(fn, argnums=len(args) - 1, target="python")(*args)
    text = str(info.value)
    assert message in text
    assert "help: " in text and hint in text.split("help: ", 1)[1]


def diag_far_offset(A):
    return np.sum(np.diag(A, 3))


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_diag_offset_outside_the_matrix_is_a_shape_error(target):
    """NumPy's diagonal of a matrix it does not cross is empty; symdiff's length
    of a diagonal of symbolic shape needs at least one element, and says so."""
    run = symdiff.jit(diag_far_offset, target=target)
    assert run(np.ones((2, 5))) == 2.0
    with pytest.raises(
        symdiff.ShapeError, match=re.escape("np.diag: diagonal 3 lies outside")
    ):
        run(np.ones((5, 3)))
