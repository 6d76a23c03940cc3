"""``custom_vjp`` with arrays: array inputs in forward mode (the partial of a
number-valued function is summed against the tangent) and array outputs (``bwd``
runs at the array adjoint, as a vector-Jacobian product; forward mode is refused
with a message).  Oracles: the derivative written out by hand and JAX's
``custom_vjp`` with the same rules."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import symdiff

jax.config.update("jax_enable_x64", True)


# -- a number-valued custom function of an array ------------------------------------------
@symdiff.custom_vjp
def squared_norm(x):
    return np.sum(x * x)


def squared_norm_fwd(x):
    return np.sum(x * x), x


def squared_norm_bwd(x, g):
    return (2.0 * g * x,)


squared_norm.defvjp(squared_norm_fwd, squared_norm_bwd)


def scaled_norm(x, s):
    return squared_norm(x * s) * 3.0


# -- array-valued ones ---------------------------------------------------------------------
@symdiff.custom_vjp
def clip_gradient(x, lo, hi):
    return x


def clip_gradient_fwd(x, lo, hi):
    return x, (lo, hi)


def clip_gradient_bwd(res, g):
    lo, hi = res
    return (np.clip(g, lo, hi), None, None)


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


def clipped_regression(w, X, y):
    z = clip_gradient(X @ w, -0.1, 0.1)
    return np.sum((z - y) ** 2)


@symdiff.custom_vjp
def row_norms(X):
    return np.sqrt(np.sum(X * X, axis=1))


def row_norms_fwd(X):
    n = np.sqrt(np.sum(X * X, axis=1))
    return n, (X, n)


def row_norms_bwd(res, g):
    X, n = res
    # finite at a zero row, where the chain rule through sqrt gives NaN
    return ((g / np.maximum(n, 1e-12))[:, None] * X,)


row_norms.defvjp(row_norms_fwd, row_norms_bwd)


def weighted_norms(X):
    return np.sum(row_norms(X) ** 2 * np.arange(X.shape[0]))


def norms_and_values(X):
    return row_norms(X) * 2.0


@symdiff.custom_vjp
def wrong_shape(x):
    return x * 2.0


def wrong_shape_fwd(x):
    return x * 2.0, None


def wrong_shape_bwd(res, g):
    return (np.sum(g),)


wrong_shape.defvjp(wrong_shape_fwd, wrong_shape_bwd)


def uses_wrong_shape(x):
    return np.sum(wrong_shape(x))


# -- JAX twins -------------------------------------------------------------------------------
@jax.custom_vjp
def jax_clip_gradient(x, lo, hi):
    return x


jax_clip_gradient.defvjp(
    lambda x, lo, hi: (x, (lo, hi)),
    lambda res, g: (jnp.clip(g, res[0], res[1]), None, None),
)


RNG = np.random.default_rng(2)


@pytest.mark.parametrize("target", ["cpu", "python", "parallel"])
def test_array_output_rule_runs_at_the_adjoint(target):
    X = RNG.normal(size=(6, 3))
    w = RNG.normal(size=3)
    y = RNG.normal(size=6)
    got = symdiff.grad(clipped_regression, target=target)(w, X, y)

    def jax_loss(w):
        z = jax_clip_gradient(X @ w, -0.1, 0.1)
        return jnp.sum((z - y) ** 2)

    np.testing.assert_allclose(got, jax.grad(jax_loss)(w), rtol=1e-13)


def test_array_output_rule_with_matrix_input():
    X = RNG.normal(size=(5, 3))
    X[2] = 0.0  # a zero row: the rule keeps it finite
    got = symdiff.grad(weighted_norms)(X)
    weights = np.arange(5.0)
    np.testing.assert_allclose(got, 2.0 * weights[:, None] * X, rtol=1e-13)
    value, vjp_fun = symdiff.vjp(norms_and_values, X)
    np.testing.assert_allclose(value, 2.0 * np.sqrt(np.sum(X * X, axis=1)))
    ct = RNG.normal(size=5)
    (x_bar,) = vjp_fun(ct)
    n = np.maximum(np.sqrt(np.sum(X * X, axis=1)), 1e-12)
    np.testing.assert_allclose(x_bar, (2.0 * ct / n)[:, None] * X, rtol=1e-13)
    jac = symdiff.jacobian(norms_and_values, mode="reverse")(X)
    assert np.shape(jac) == (5, 5, 3)


def test_array_output_rule_is_refused_in_forward_mode():
    X = RNG.normal(size=(4, 3))
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.jvp(weighted_norms, (X,), (X,))
    message = str(info.value)
    assert "`row_norms` returns an array, so its custom_vjp rule has no " in message
    assert "forward-mode derivative" in message
    assert "help: differentiate it in reverse mode" in message
    assert "test_custom_arrays.py:" in message


def test_cotangent_of_the_wrong_shape_is_reported():
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(uses_wrong_shape)(np.ones(3))
    message = str(info.value)
    assert (
        "the bwd rule of `wrong_shape` returns a cotangent of a number for an "
        "input of shape (x.shape[0],)" in message
    )
    assert "shaped as that input" in message


def test_array_input_in_forward_mode():
    """The partial of a number-valued custom function of an array is an array;
    forward mode sums it against the tangent (it raised an internal IndexError)."""
    x = RNG.normal(size=4)
    t = RNG.normal(size=4)
    value, slope = symdiff.jvp(scaled_norm, (x, 1.5), (t, 0.5))
    assert value == pytest.approx(3.0 * np.sum((1.5 * x) ** 2), rel=1e-14)
    want = 3.0 * 2.0 * np.sum(1.5 * x * (t * 1.5 + x * 0.5))
    assert slope == pytest.approx(want, rel=1e-13)
    jac = symdiff.jacobian(scaled_norm, mode="forward")(x, 1.5)
    np.testing.assert_allclose(jac, 3.0 * 2.0 * 1.5**2 * x, rtol=1e-13)
    hess = symdiff.hessian(scaled_norm)(x, 1.5)
    np.testing.assert_allclose(hess, 3.0 * 2.0 * 1.5**2 * np.eye(4), rtol=1e-13)


@symdiff.custom_vjp
def dot(x, y):
    return np.sum(x * y)


def dot_fwd(x, y):
    return np.sum(x * y), (x, y)


def dot_bwd(res, g):
    x, y = res
    return (g * y, g * x)  # y's length for x's: equal when the kernel runs


dot.defvjp(dot_fwd, dot_bwd)


def squared_dot(x, y):
    return dot(x, y) ** 2


def test_cotangents_shaped_by_another_input_of_the_same_length():
    x, y = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    gx, gy = symdiff.grad(squared_dot, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, 2 * np.dot(x, y) * y)
    np.testing.assert_allclose(gy, 2 * np.dot(x, y) * x)
    with pytest.raises(symdiff.ShapeError):
        symdiff.grad(squared_dot, argnums=(0, 1))(x, np.ones(4))
