"""Arguments that configure a function rather than feed it numbers: strings
(``reduction="mean"``), ``None`` (``w=None``) and functions (``act=np.tanh``).
The kernel is specialised to each such value, as JAX's static arguments are;
comparisons of them (``==``, ``is None``, ``in``) are decided while tracing, a
``raise`` they reach raises the user's own exception, and a validation helper
called as a statement runs.  Also keyword-only parameters, ``math.factorial``
and ``math.comb``.

Every function is ordinary user code at module level; gradients are checked
against JAX in float64 (``np`` rebound to ``jax.numpy``), values against the
function itself.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import symdiff
from tests.checks import with_modules

jax.config.update("jax_enable_x64", True)

RTOL = 1e-12


def loss(pred, target, reduction="mean", weights=None):
    r = (pred - target) ** 2
    if weights is not None:
        r = r * weights
    if reduction == "mean":
        return np.mean(r)
    elif reduction in ("sum", "total"):
        return np.sum(r)
    else:
        raise ValueError(f"unknown reduction {reduction!r}")


def swish(z):
    return z / (1.0 + np.exp(-z))


def layer(x, W, act=np.tanh, post=None):
    h = act(W @ x)
    if post is not None:
        h = post(h)
    return np.sum(h**2)


@pytest.mark.parametrize("target", ["python", "cpu"])
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"reduction": "sum"},
        {"reduction": "total", "weights": "w"},
        {"weights": "w"},
    ],
    ids=["default", "sum", "total-weighted", "mean-weighted"],
)
def test_string_and_none_arguments(options, target):
    rng = np.random.default_rng(1)
    pred, goal, w = rng.normal(size=5), rng.normal(size=5), rng.uniform(size=5)
    kwargs = {k: w if v == "w" else v for k, v in options.items()}
    value, grad = symdiff.value_and_grad(loss, target=target)(pred, goal, **kwargs)
    want = jax.grad(lambda p: with_modules(loss, np=jnp)(p, goal, **kwargs))(pred)
    np.testing.assert_allclose(value, loss(pred, goal, **kwargs), rtol=RTOL)
    np.testing.assert_allclose(grad, want, rtol=RTOL)


def test_one_transform_keeps_a_kernel_per_string():
    grad = symdiff.grad(loss, target="python")
    pred, goal = np.array([1.0, 2.0]), np.array([0.0, 0.0])
    np.testing.assert_allclose(grad(pred, goal, "sum"), [2.0, 4.0])
    np.testing.assert_allclose(grad(pred, goal, "mean"), [1.0, 2.0])
    np.testing.assert_allclose(grad(pred, goal, reduction="sum"), [2.0, 4.0])
    assert "# specialised to: reduction = 'mean', weights = None" in grad.source


def test_function_arguments():
    rng = np.random.default_rng(2)
    x, W = rng.normal(size=3), rng.normal(size=(2, 3))
    grad = symdiff.grad(layer, argnums=(0, 1), target="cpu")
    for act, post in [(np.tanh, None), (np.sin, np.exp), (swish, None)]:
        got = grad(x, W, act, post)
        jact = {np.tanh: jnp.tanh, np.sin: jnp.sin}.get(act) or with_modules(
            swish, np=jnp
        )
        jpost = jnp.exp if post is np.exp else None
        want = jax.grad(
            lambda x, W: with_modules(layer, np=jnp)(x, W, jact, jpost),
            argnums=(0, 1),
        )(x, W)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=RTOL)


def test_a_raise_the_strings_reach_raises_the_users_exception():
    grad = symdiff.grad(loss, target="python")
    with pytest.raises(ValueError, match="unknown reduction 'median'"):
        grad(np.ones(2), np.zeros(2), "median")


def test_strings_are_not_differentiated():
    with pytest.raises(symdiff.ArgumentError) as info:
        symdiff.grad(loss, argnums=2)(np.ones(2), np.zeros(2), "sum")
    assert "cannot differentiate with respect to `reduction`: it is a `str`" in str(
        info.value
    )


def check_mode(mode):
    if mode not in ("l1", "l2"):
        raise ValueError("mode must be 'l1' or 'l2', got " + repr(mode))


def penalty(x, mode="l2"):
    check_mode(mode)
    if mode == "l1":
        return np.sum(np.abs(x))
    return np.sum(x**2)


def test_a_validation_helper_called_as_a_statement():
    x = np.array([1.0, -2.0])
    grad = symdiff.grad(penalty, target="python")
    np.testing.assert_allclose(grad(x), [2.0, -4.0])
    np.testing.assert_allclose(grad(x, "l1"), [1.0, -1.0])
    with pytest.raises(ValueError, match="got 'l0'"):
        grad(x, "l0")


def sign_checked(x):
    if x < 0:
        raise ValueError("negative")
    return x


def same_number(x, y):
    return x if x is y else y


def test_comparisons_that_depend_on_values_are_refused():
    # a `raise` that depends on values raises when the kernel runs
    assert symdiff.grad(sign_checked)(1.0) == 1.0
    with pytest.raises(ValueError, match="negative"):
        symdiff.grad(sign_checked)(-1.0)
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(same_number)(1.0, 2.0)
    message = str(info.value)
    assert "`is` between numbers is not supported" in message
    assert "(`is` is for `x is None`)" in message


def scaled(x, k):
    if k in (1, 2):
        return k * x**2
    return x


def test_membership_of_numbers():
    grad = symdiff.grad(scaled, target="python")
    assert grad(3.0, 2) == 12.0
    assert grad(3.0, 1) == 6.0
    assert grad(3.0, 5) == 1.0


def soft_abs(x, *, eps=1e-3):
    return np.sqrt(x * x + eps)


def smooth_l1(x, *, eps=1e-3, reduction="sum"):
    r = soft_abs(x, eps=eps)
    return np.sum(r) if reduction == "sum" else np.mean(r)


def test_keyword_only_parameters():
    x = np.array([1.0, -2.0, 0.5])
    grad = symdiff.grad(smooth_l1, target="python")
    for kwargs in ({}, {"eps": 0.5}, {"eps": 0.5, "reduction": "mean"}):
        eps = kwargs.get("eps", 1e-3)
        scale = 1 / len(x) if kwargs.get("reduction") == "mean" else 1.0
        want = scale * x / np.sqrt(x * x + eps)  # d/dx of sum(sqrt(x**2 + eps))
        np.testing.assert_allclose(grad(x, **kwargs), want, rtol=RTOL)
    with pytest.raises(symdiff.ArgumentError, match="too many positional arguments"):
        grad(x, 0.5)


def taylor_exp(x, n=12):
    return sum(x**k / math.factorial(k) for k in range(n))


def bernstein(t, c):
    n = len(c) - 1
    s = 0.0
    for k in range(n + 1):
        s += c[k] * math.comb(n, k) * t**k * (1 - t) ** (n - k)
    return s


def test_factorial_and_comb():
    # unrolled (constants, exact) and in a loop over a run-time range
    for n in (5, 20):
        value, slope = symdiff.value_and_grad(taylor_exp, target="cpu")(0.7, n)
        assert value == pytest.approx(taylor_exp(0.7, n), rel=1e-15)
        assert slope == pytest.approx(taylor_exp(0.7, n - 1), rel=1e-15)
    c = np.array([1.0, 2.0, 0.5, 3.0, -1.0, 0.25])
    for target in ("python", "cpu"):
        value, slope = symdiff.value_and_grad(bernstein, target=target)(0.3, c)
        assert value == pytest.approx(bernstein(0.3, c), rel=1e-14)
        h = 1e-6
        fd = (bernstein(0.3 + h, c) - bernstein(0.3 - h, c)) / (2 * h)
        assert slope == pytest.approx(fd, rel=1e-8)


def factorial_of_float(x):
    return math.factorial(x)


def test_factorial_of_a_float_is_refused():
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(factorial_of_float)(3.0)
    assert "`math.factorial` takes integers: its argument is a float" in str(info.value)


# -- bound methods, callable objects, functools.partial ---------------------------------
class Spring:
    def __init__(self, k, rest):
        self.k = k
        self.rest = rest
        self.masses = np.array([1.0, 2.0])

    def stretch(self, x):
        return x - self.rest

    def energy(self, x):
        return 0.5 * self.k * self.stretch(x) ** 2 + np.sum(self.masses) * x

    def __call__(self, x, y):
        return self.energy(x) * y


def test_bound_methods_and_callable_objects():
    stiff, soft = Spring(3.0, 1.0), Spring(5.0, 0.5)
    grad = symdiff.grad(stiff.energy, target="python")
    assert grad(2.0) == 3.0 * (2.0 - 1.0) + 3.0
    assert "# specialised to: self = <Spring object>" in grad.source
    assert symdiff.grad(soft.energy, target="python")(2.0) == 5.0 * 1.5 + 3.0
    assert symdiff.hessian(stiff.energy, target="python")(2.0) == 3.0
    assert symdiff.jvp(stiff.energy, (2.0,), (1.0,), target="python") == (7.5, 6.0)
    out, pullback = symdiff.vjp(stiff.energy, 2.0, target="python")
    assert (out, pullback(1.0)) == (7.5, (6.0,))
    both = symdiff.value_and_grad(stiff, argnums=(0, 1), target="cpu")
    assert both(2.0, 4.0) == (30.0, (24.0, 7.5))


def test_partial_functions():
    pred, goal = np.array([1.0, 2.0]), np.zeros(2)
    summed = functools.partial(loss, reduction="sum")
    np.testing.assert_allclose(symdiff.grad(summed)(pred, goal), [2.0, 4.0])
    # a bound array is an argument like the others; argnums counts the call's
    fixed_prediction = functools.partial(loss, pred)
    np.testing.assert_allclose(symdiff.grad(fixed_prediction)(goal), [-1.0, -2.0])
    np.testing.assert_allclose(
        symdiff.grad(fixed_prediction)(goal, "sum"), [-2.0, -4.0]
    )


def scaled_factorial(x, n):
    return x * math.factorial(n)


def scaled_comb(x, n, k):
    return x * math.comb(n, k)


def test_factorial_and_comb_of_negative_ints_raise_as_python():
    assert symdiff.grad(scaled_factorial)(1.0, 5) == 120.0
    with pytest.raises(ValueError, match=r"`math\.factorial` of a negative number"):
        symdiff.grad(scaled_factorial)(1.0, -1)
    assert symdiff.grad(scaled_comb, target="python")(1.0, 3, 5) == 0.0
    with pytest.raises(ValueError, match="`k` must be 0 or more"):
        symdiff.grad(scaled_comb, target="python")(1.0, 3, -1)


@dataclasses.dataclass
class LossConfig:
    scale: float
    power: int = 2


def configured_loss(x, cfg):
    return cfg.scale * np.sum(x**cfg.power)


def test_objects_of_the_users_classes_are_static_arguments():
    grad = symdiff.grad(configured_loss, target="python")
    np.testing.assert_array_equal(grad(np.ones(2), LossConfig(2.0)), [4.0, 4.0])
    np.testing.assert_array_equal(grad(np.ones(2), LossConfig(1.0, 3)), [3.0, 3.0])
    assert "# specialised to: cfg = <LossConfig object>" in grad.source
    spring = Spring(3.0, 1.0)
    assert symdiff.grad(Spring.energy, argnums=1, target="python")(spring, 2.0) == 6.0
