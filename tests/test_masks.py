"""Boolean-mask selections, ``x[mask]``: element-wise arithmetic, reductions and
``y[mask] = f(x[mask])``, checked against JAX (float64) written with
``jnp.where`` and against NumPy's own call for the values."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import symdiff

jax.config.update("jax_enable_x64", True)

RNG = np.random.default_rng(11)
X = RNG.normal(size=9)
X[3] = 0.0  # on the mask's edge: log(0) in the unselected part
Y = RNG.normal(size=9)
M = RNG.normal(size=(7, 3))


def log_where_positive(x):
    out = np.zeros_like(x)
    m = x > 0
    out[m] = np.log(x[m])
    return np.sum(out**2)


def log_where_positive_jax(x):
    m = x > 0
    return jnp.sum(jnp.where(m, jnp.log(jnp.where(m, x, 1.0)), 0.0) ** 2)


def reductions(x):
    pos = x[x > 0]
    return (
        np.sum(np.log(pos))
        + pos.mean()
        + len(pos)
        + np.max(pos) * x[x < 0].sum()
        + min(x[x < 0]) ** 2
        + pos.prod()
    )


def reductions_jax(x):
    m, n = x > 0, x < 0
    logs = jnp.sum(jnp.where(m, jnp.log(jnp.where(m, x, 1.0)), 0.0))
    mean = jnp.sum(jnp.where(m, x, 0.0)) / jnp.sum(m)
    top = jnp.max(jnp.where(m, x, -jnp.inf))
    low = jnp.min(jnp.where(n, x, jnp.inf))
    prod = jnp.prod(jnp.where(m, x, 1.0))
    return (
        logs + mean + jnp.sum(m) + top * jnp.sum(jnp.where(n, x, 0.0)) + low**2 + prod
    )


def robust_residuals(x, y):
    r = x - y
    valid = np.abs(r) < 1.0
    return np.mean(r[valid] ** 2) + 0.5 * np.std(r[valid]) + np.var(x[valid], ddof=1)


def robust_residuals_jax(x, y):
    r = x - y
    v = jnp.abs(r) < 1.0
    n = jnp.sum(v)
    mean_r = jnp.sum(jnp.where(v, r, 0)) / n
    std = jnp.sqrt(jnp.sum(jnp.where(v, (r - mean_r) ** 2, 0)) / n)
    mean_x = jnp.sum(jnp.where(v, x, 0)) / n
    var_x = jnp.sum(jnp.where(v, (x - mean_x) ** 2, 0)) / (n - 1)
    return jnp.sum(jnp.where(v, r**2, 0)) / n + 0.5 * std + var_x


def selected_rows(X):
    m = X[:, 0] > 0
    rows = X[m]
    return (
        np.sum(rows.sum(axis=0) ** 2)
        + np.sum(X[m, 1] * 3.0)
        + np.linalg.norm(rows)
        + np.sum(np.exp(rows.mean(axis=1)))
        + np.sum(X[m, 1:] @ np.array([1.0, -2.0]))
    )


def selected_rows_jax(X):
    m = X[:, 0] > 0
    rows = jnp.where(m[:, None], X, 0.0)
    per_row = jnp.where(m, jnp.exp(X.mean(axis=1)), 0.0)
    tail = jnp.where(m, X[:, 1:] @ jnp.array([1.0, -2.0]), 0.0)
    return (
        jnp.sum(rows.sum(axis=0) ** 2)
        + jnp.sum(jnp.where(m, X[:, 1], 0.0) * 3.0)
        + jnp.sqrt(jnp.sum(rows**2))
        + jnp.sum(per_row)
        + jnp.sum(tail)
    )


def leaky_update(x):
    y = x.copy()
    m = x < 0
    y[m] = 0.1 * x[m] + np.exp(x[m]) - 1
    y[m] *= 2.0
    y[x > 1] += x[x > 1] ** 2
    return np.sum(y * y)


def leaky_update_jax(x):
    m = x < 0
    y = jnp.where(m, 0.1 * x + jnp.exp(x) - 1, x)
    y = jnp.where(m, y * 2.0, y)
    y = jnp.where(x > 1, y + x**2, y)
    return jnp.sum(y * y)


def paired(x, y):
    m = (x > -0.5) & (y < 0.5)
    a, b = x[m], y[m]
    return np.dot(a, b) + a @ np.sin(b) + np.sum(np.where(a > 0, a, b)) + a.size


def paired_jax(x, y):
    m = (x > -0.5) & (y < 0.5)
    return (
        jnp.sum(jnp.where(m, x * y, 0.0))
        + jnp.sum(jnp.where(m, x * jnp.sin(y), 0.0))
        + jnp.sum(jnp.where(m, jnp.where(x > 0, x, y), 0.0))
        + jnp.sum(m)
    )


def per_row_in_a_loop(X):
    total = 0.0
    for i in range(X.shape[0]):
        row = X[i]
        total += np.sum(row[row > 0] ** 2)
    return total


def per_row_in_a_loop_jax(X):
    return jnp.sum(jnp.where(X > 0, X**2, 0.0))


def helper_of_a_selection(v):
    return np.sum(v**2) / len(v)


def through_a_helper(x):
    return helper_of_a_selection(x[x > 0.2])


def through_a_helper_jax(x):
    m = x > 0.2
    return jnp.sum(jnp.where(m, x**2, 0.0)) / jnp.sum(m)


def selection_read_in_a_loop(x, n):
    v = x[x > 0]
    s = 0.0
    for i in range(n):
        s += np.sum(v * i) + np.sum(v[v > 1.0])
    return s


def selection_read_in_a_loop_jax(x, n):
    m = x > 0
    return sum(
        jnp.sum(jnp.where(m, x * i, 0.0)) + jnp.sum(jnp.where(m & (x > 1.0), x, 0.0))
        for i in range(n)
    )


CASES = [
    (log_where_positive, log_where_positive_jax, (X,)),
    (reductions, reductions_jax, (X,)),
    (robust_residuals, robust_residuals_jax, (X, Y)),
    (selected_rows, selected_rows_jax, (M,)),
    (leaky_update, leaky_update_jax, (X,)),
    (paired, paired_jax, (X, Y)),
    (per_row_in_a_loop, per_row_in_a_loop_jax, (M,)),
    (through_a_helper, through_a_helper_jax, (X,)),
]


def test_a_loop_reads_a_selection_made_before_it():
    x = X * 2.0
    g = symdiff.value_and_grad(selection_read_in_a_loop)
    value, slope = g(x, 5)
    want_value, want_slope = jax.value_and_grad(selection_read_in_a_loop_jax)(x, 5)
    assert value == pytest.approx(float(want_value), rel=1e-13)
    np.testing.assert_allclose(slope, want_slope, rtol=1e-13)


@pytest.mark.parametrize("target", ["cpu", "python"])
@pytest.mark.parametrize("fn, oracle, args", CASES, ids=[c[0].__name__ for c in CASES])
def test_value_and_gradient_match_jax(fn, oracle, args, target):
    argnums = tuple(range(len(args)))
    value, grads = symdiff.value_and_grad(fn, argnums=argnums, target=target)(*args)
    want_value, want_grads = jax.value_and_grad(oracle, argnums=argnums)(*args)
    assert value == pytest.approx(fn(*args), rel=1e-13)
    assert value == pytest.approx(float(want_value), rel=1e-13)
    for got, want in zip(grads, want_grads, strict=True):
        assert np.all(np.isfinite(got))  # no NaN from the unselected elements
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_parallel_target_and_other_sizes():
    g = symdiff.grad(reductions, target="parallel")
    for n in (2, 5, 40):
        x = RNG.normal(size=n)
        x[0], x[1] = 0.5, -0.5  # both selections non-empty
        want = jax.grad(reductions_jax)(x)
        np.testing.assert_allclose(g(x), want, rtol=1e-12, atol=1e-14)


def test_hessian_and_forward_mode():
    x = np.abs(X) + 0.1
    x[::2] *= -1
    h = symdiff.hessian(log_where_positive)(x)
    np.testing.assert_allclose(h, jax.hessian(log_where_positive_jax)(x), rtol=1e-12)
    t = RNG.normal(size=x.shape)
    _, tangent = symdiff.jvp(robust_residuals, (x, Y), (t, t))
    _, want = jax.jvp(robust_residuals_jax, (x, Y), (t, t))
    assert tangent == pytest.approx(float(want), rel=1e-12)


def test_an_empty_selection():
    x = -np.abs(X) - 0.1
    value, slope = symdiff.value_and_grad(log_where_positive)(x)
    assert value == 0.0 and not slope.any()
    # the sum of nothing is 0 and its mean NaN, as in NumPy; the max is -inf
    # (NumPy raises: zero-size array to reduction operation maximum)
    assert symdiff.jit(lambda v: np.sum(v[v > 0]))(x) == 0.0
    assert np.isnan(symdiff.jit(lambda v: np.mean(v[v > 0]))(x))
    assert symdiff.jit(lambda v: np.max(v[v > 0]))(x) == -np.inf


def returns_a_selection(x):
    return x[x > 0]


def indexes_a_selection(x):
    return x[x > 0][0]


def adds_a_whole_array(x, y):
    return np.sum(x[x > 0] + y)


def two_masks(x, y):
    return np.sum(x[x > 0] * y[y > 0])


def sorts_a_selection(x):
    return np.sort(x[x > 0])[0]


def chooses_a_selection(x, c):
    if c > 0:
        v = x[x > 0]
    else:
        v = x[x < 0]
    return np.sum(v)


def writes_another_mask(x):
    y = np.zeros_like(x)
    y[x > 0] = x[x < 0]
    return np.sum(y)


def doubles_a_selection(x, n):
    v = x[x > 0]
    for _ in range(n):
        v = v * 2.0
    return np.sum(v)


def loops_over_a_selection(x):
    return sum(t**2 for t in x[x > 0])


def masks_a_column(X):
    return np.sum(X[:, X[0] > 0])


@pytest.mark.parametrize(
    "fn, args, message, hint",
    [
        (returns_a_selection, (X,), "returning a boolean-mask selection", "np.where"),
        (indexes_a_selection, (X,), "indexing a boolean-mask selection", "np.where"),
        (
            adds_a_whole_array,
            (X, Y),
            "an array is combined with a boolean-mask selection",
            "select it with the same mask (y[mask])",
        ),
        (two_masks, (X, Y), "different masks", "m = (x > 0) & (y > 0)"),
        (sorts_a_selection, (X,), "`np.sort` of a boolean-mask selection", "np.where"),
        (
            chooses_a_selection,
            (X, 1.0),
            "choosing between branches with a boolean-mask selection",
            "np.where",
        ),
        (writes_another_mask, (X,), "uses another mask", "y[m] = np.log(x[m])"),
        (masks_a_column, (M,), "the first index only", "X.T[mask]"),
        (
            doubles_a_selection,
            (X, 3),
            "`v` holds a boolean-mask selection (`x[mask]`) that this loop assigns",
            "np.where",
        ),
        (loops_over_a_selection, (X,), "a loop over a boolean-mask", "np.where"),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_what_needs_the_selected_positions_is_reported(fn, args, message, hint):
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(fn)(*args)
    (diag,) = info.value.diagnostics
    assert message in diag.message
    assert hint in diag.hint
    assert diag.filename.endswith("test_masks.py")
