"""Tuples, lists and dicts of arrays as arguments (JAX's pytrees): each leaf is a
parameter of the kernel, and the gradient comes back shaped as the argument (a
dict of arrays for a dict of arrays).  Also a global dict of constants.

Every function is ordinary user code at module level; gradients are checked
against JAX in float64 on the same containers.
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


def mlp_loss(params, X, y):
    W1, b1 = params["W1"], params["b1"]
    h = np.tanh(X @ W1 + b1)
    pred = h @ params["W2"] + params["b2"]
    return np.mean((pred - y) ** 2)


def layers_loss(layers, x):
    h = x
    for W, b in layers:
        h = np.tanh(W @ h + b)
    return np.sum(h**2)


def nested(model, x):
    scale, (a, b) = model["scale"], model["pair"]
    return scale * np.sum(a * x) + np.sum(b) ** 2


def _assert_tree_close(got, want):
    assert type(got) is type(want)
    if isinstance(want, dict):
        assert sorted(got) == sorted(want)  # JAX sorts the keys; here they keep order
        for key in want:
            _assert_tree_close(got[key], want[key])
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_tree_close(g, w)
    else:
        np.testing.assert_allclose(got, np.asarray(want), rtol=RTOL, atol=1e-14)


def _to_numpy(tree):
    if isinstance(tree, dict):
        return {k: _to_numpy(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(_to_numpy(v) for v in tree)
    return float(tree) if np.ndim(tree) == 0 else np.asarray(tree)


def _cases(rng):
    params = {
        "W1": rng.normal(size=(3, 4)),
        "b1": rng.normal(size=4),
        "W2": rng.normal(size=4),
        "b2": 0.3,
    }
    X, y = rng.normal(size=(5, 3)), rng.normal(size=5)
    layers = [
        (rng.normal(size=(3, 3)), rng.normal(size=3)),
        (rng.normal(size=(2, 3)), rng.normal(size=2)),
    ]
    model = {"scale": 1.5, "pair": (rng.normal(size=3), rng.normal(size=2))}
    return [
        (mlp_loss, (params, X, y)),
        (layers_loss, (layers, rng.normal(size=3))),
        (nested, (model, rng.normal(size=3))),
    ]


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_gradients_shaped_as_the_arguments(target):
    for fn, args in _cases(np.random.default_rng(4)):
        value, grad = symdiff.value_and_grad(fn, target=target)(*args)
        oracle = with_modules(fn, np=jnp)
        want_value, want = jax.value_and_grad(oracle)(*args)
        assert value == pytest.approx(float(want_value), rel=RTOL)
        _assert_tree_close(grad, _to_numpy(want))


def test_several_argnums_and_a_container_not_differentiated():
    rng = np.random.default_rng(5)
    (fn, (params, X, y)), *_ = _cases(rng)
    grads = symdiff.grad(fn, argnums=(0, 1), target="python")(params, X, y)
    want = jax.grad(with_modules(fn, np=jnp), argnums=(0, 1))(params, X, y)
    _assert_tree_close(grads, _to_numpy(want))
    # the dict passed but not differentiated: its leaves are plain parameters
    dX = symdiff.grad(fn, argnums=1, target="python")(params, X, y)
    np.testing.assert_allclose(dX, want[1], rtol=RTOL)


def test_the_kernel_follows_the_structure():
    grad = symdiff.grad(layers_loss, target="python")
    rng = np.random.default_rng(6)
    one = [(rng.normal(size=(2, 2)), rng.normal(size=2))]
    two = [*one, (rng.normal(size=(3, 2)), rng.normal(size=3))]
    assert len(grad(one, np.ones(2))) == 1
    assert len(grad(two, np.ones(2))) == 2
    assert "with respect to: layers_0_0, layers_0_1, layers_1_0, layers_1_1" in (
        grad.source
    )


def test_a_leaf_that_is_not_a_number_is_named():
    with pytest.raises(symdiff.ArgumentError) as info:
        symdiff.grad(mlp_loss)({"W1": "x"}, np.ones((2, 2)), np.ones(2))
    assert "argument `params['W1']` of `mlp_loss` is a `str`" in str(info.value)
    with pytest.raises(symdiff.ArgumentError) as info:
        symdiff.hessian(layers_loss)([(np.ones((2, 2)), np.ones(2))], np.ones(2))
    assert "tuple, list and dict arguments work with grad, value_and_grad, jit" in str(
        info.value
    )


SETTINGS = {"scale": 2.0, "offsets": (1.0, 3.0)}


def with_global_settings(x):
    return SETTINGS["scale"] * x**2 + SETTINGS["offsets"][1]


def test_a_global_dict_of_constants():
    assert symdiff.value_and_grad(with_global_settings, target="python")(1.5) == (
        7.5,
        6.0,
    )


def l2_penalty(params, lam):
    total = 0.0
    for name, p in params.items():
        if name != "bias":
            total = total + lam * np.sum(p**2)
    return total + sum(np.sum(v) for v in params.values()) + len(params)


def optional_entries(params, x):
    scale = params.get("scale", 1.0)
    shift = params["shift"] if "shift" in params else 0.0  # only the arm Python runs
    return np.sum(scale * x + shift)


def test_dict_methods_and_membership():
    params = {"W": np.ones((2, 2)), "bias": np.array([1.0, 2.0])}
    value, grad = symdiff.value_and_grad(l2_penalty, target="python")(params, 0.5)
    assert value == l2_penalty(params, 0.5)
    np.testing.assert_array_equal(grad["W"], np.full((2, 2), 2.0))
    np.testing.assert_array_equal(grad["bias"], [1.0, 1.0])
    both = symdiff.value_and_grad(optional_entries, target="python")
    assert both({"scale": 2.0}, np.ones(3)) == (6.0, {"scale": 3.0})
    assert both({"scale": 2.0, "shift": 1.0}, np.ones(3)) == (
        9.0,
        {"scale": 3.0, "shift": 3.0},
    )


def test_vjp_of_a_dict_argument():
    rng = np.random.default_rng(8)
    (fn, (params, X, y)), *_ = _cases(rng)
    out, pullback = symdiff.vjp(fn, params, X, y, target="python")
    assert out == pytest.approx(fn(params, X, y), rel=RTOL)
    got = pullback(2.0)
    _, jax_pullback = jax.vjp(with_modules(fn, np=jnp), params, X, y)
    _assert_tree_close(got, _to_numpy(tuple(jax_pullback(2.0))))


# -- dicts made in the function ---------------------------------------------------------
def loss_with_metrics(w, x, y):
    err = x @ w - y
    metrics = {"mae": np.mean(np.abs(err))}
    metrics["max"] = np.max(err)
    metrics["max"] += 0.0
    return np.mean(err**2), metrics


def summary(x):
    return {"sum": np.sum(x), "squares": x**2, "pair": (x[0], {"last": x[-1]})}


def test_a_dict_as_the_aux_value_and_from_jit():
    rng = np.random.default_rng(3)
    w, x, y = rng.normal(size=2), rng.normal(size=(5, 2)), rng.normal(size=5)
    grads, aux = symdiff.grad(loss_with_metrics, has_aux=True)(w, x, y)
    want_value, want_aux = loss_with_metrics(w, x, y)
    assert aux == pytest.approx(want_aux) and list(aux) == ["mae", "max"]
    np.testing.assert_allclose(grads, 2 * x.T @ (x @ w - y) / 5, rtol=1e-13)
    (value, aux2), grads2 = symdiff.value_and_grad(loss_with_metrics, has_aux=True)(
        w, x, y
    )
    assert value == pytest.approx(want_value) and aux2 == aux
    np.testing.assert_array_equal(grads2, grads)
    out = symdiff.jit(summary)(np.array([1.0, 2.0, 3.0]))
    assert out["sum"] == 6.0 and out["pair"][1] == {"last": 3.0}
    np.testing.assert_array_equal(out["squares"], [1.0, 4.0, 9.0])
