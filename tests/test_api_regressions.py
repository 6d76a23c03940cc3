"""Regressions in the public API: jvp/vjp/hvp with default parameters and int
primals, functions of no parameters, arguments compiled code cannot take, and
custom_vjp's argument checks.  Compared with JAX (x64) where JAX defines the
result."""

import math

import jax
import numpy as np
import pytest

import symdiff

jax.config.update("jax_enable_x64", True)

PY = {"target": "python"}


def with_defaults(x, y=2.0, z=3.0):
    return x * y * z


def cubic_with_default(x, y=2.0):
    return x**3 * y + x * y * y


def pow_int(x, n):
    return x**n


def int_bound_and_factor(x, n):
    s = 0.0
    for i in range(n):
        s += x * i
    return s * n


def const():
    return 3.0


def scale(x, n):
    return x * n


def total(x):
    return np.sum(x**2)


def jax_hvp(f, primals, tangents):
    return jax.jvp(jax.grad(f, argnums=tuple(range(len(primals)))), primals, tangents)[
        1
    ]


# -- jvp / vjp / hvp: parameters after the primals keep their defaults ---------------
@pytest.mark.parametrize(
    ("primals", "tangents"),
    [((1.5,), (1.0,)), ((1.5, 4.0), (1.0, 0.5)), ((1.5, 4.0, 0.5), (0.0, 1.0, 2.0))],
)
def test_jvp_fills_in_defaults_like_jax(primals, tangents):
    out, tangent = symdiff.jvp(with_defaults, primals, tangents, **PY)
    want_out, want_tangent = jax.jvp(with_defaults, primals, tangents)
    assert out == pytest.approx(float(want_out), rel=1e-15)
    assert tangent == pytest.approx(float(want_tangent), rel=1e-15)


@pytest.mark.parametrize("primals", [(1.5,), (1.5, 4.0), (1.5, 4.0, 0.5)])
def test_vjp_returns_one_cotangent_per_primal_given(primals):
    out, pullback = symdiff.vjp(with_defaults, *primals, **PY)
    cotangents = pullback(2.0)
    want_out, jax_pullback = jax.vjp(with_defaults, *primals)
    assert out == pytest.approx(float(want_out), rel=1e-15)
    assert len(cotangents) == len(primals)
    want = [float(c) for c in jax_pullback(2.0)]
    assert list(cotangents) == pytest.approx(want, rel=1e-15)


@pytest.mark.parametrize(
    ("primals", "tangents"), [((1.5,), (1.0,)), ((1.5, 0.5), (1.0, -2.0))]
)
def test_hvp_fills_in_defaults_like_jax(primals, tangents):
    got = symdiff.hvp(cubic_with_default, primals, tangents, **PY)
    want = [float(v) for v in jax_hvp(cubic_with_default, primals, tangents)]
    assert len(got) == len(primals)
    assert list(got) == pytest.approx(want, rel=1e-14)


def test_jvp_with_more_primals_than_parameters_is_an_argument_error():
    with pytest.raises(symdiff.ArgumentError, match="too many positional arguments"):
        symdiff.jvp(with_defaults, (1.0, 2.0, 3.0, 4.0), (1.0, 0.0, 0.0, 0.0), **PY)
    with pytest.raises(symdiff.ArgumentError, match="missing a required argument"):
        symdiff.jvp(with_defaults, (), (), **PY)


# -- an int primal is a real number in forward mode too ---------------------------
def test_jvp_uses_the_tangent_of_an_int_primal():
    """As grad(argnums=1) and vjp do (JAX would need a float0 tangent)."""
    x, n = 1.5, 3
    _, tangent = symdiff.jvp(pow_int, (x, n), (0.0, 1.0), **PY)
    assert tangent == pytest.approx(x**n * math.log(x), rel=1e-14)
    assert tangent == pytest.approx(
        symdiff.grad(pow_int, argnums=1, **PY)(x, n), rel=1e-14
    )
    assert tangent == pytest.approx(symdiff.vjp(pow_int, x, n, **PY)[1](1.0)[1])
    # both directions at once, against JAX at the same point as a float
    _, tangent = symdiff.jvp(pow_int, (x, n), (0.5, -2.0), **PY)
    _, want = jax.jvp(pow_int, (x, float(n)), (0.5, -2.0))
    assert tangent == pytest.approx(float(want), rel=1e-14)


def test_hvp_of_an_int_primal_is_the_hessian_column():
    x, n = 1.5, 3
    hessian = symdiff.hessian(pow_int, argnums=(0, 1), **PY)(x, n)
    got = symdiff.hvp(pow_int, (x, n), (0.0, 1.0), **PY)
    assert list(got) == pytest.approx([hessian[0][1], hessian[1][1]], rel=1e-14)
    want = jax_hvp(pow_int, (x, float(n)), (0.25, 1.0))
    got = symdiff.hvp(pow_int, (x, n), (0.25, 1.0), **PY)
    assert list(got) == pytest.approx([float(w) for w in want], rel=1e-14)


def test_int_primal_stays_an_int_where_it_bounds_a_loop():
    """The tangent of `n` flows through `s * n`, not through `range(n)`: the
    same derivative as vjp's."""
    x, n = 1.5, 3
    out, tangent = symdiff.jvp(int_bound_and_factor, (x, n), (0.0, 1.0), **PY)
    assert out == int_bound_and_factor(x, n)
    _, pullback = symdiff.vjp(int_bound_and_factor, x, n, **PY)
    assert tangent == pytest.approx(pullback(1.0)[1]) and tangent == 4.5


# -- functions of no parameters ---------------------------------------------------
def test_jit_of_a_function_of_no_parameters():
    f = symdiff.jit(const, **PY)
    assert f() == 3.0
    assert f() == 3.0  # the fast path, built after the first call
    with pytest.raises(symdiff.ArgumentError, match="too many positional"):
        f(1.0)
    assert symdiff.jvp(const, (), (), **PY) == (3.0, 0.0)
    assert symdiff.vjp(const, **PY)[1](1.0) == ()


@pytest.mark.parametrize(
    "transform",
    [symdiff.grad, symdiff.value_and_grad, symdiff.hessian, symdiff.jacobian],
)
def test_differentiating_a_function_of_no_parameters_is_an_argument_error(
    transform,
):
    with pytest.raises(symdiff.ArgumentError, match="`const`: it takes no arguments"):
        transform(const, **PY)


# -- arguments that compiled code cannot take ---------------------------------------
def test_int_beyond_int64_is_an_argument_error():
    f = symdiff.jit(scale, **PY)
    for n in (2**70, -(2**63) - 1):
        with pytest.raises(symdiff.ArgumentError, match=r"`n` of `scale` .*int64"):
            f(1.5, n)
    assert f(1.5, 2**63 - 1) == 1.5 * (2**63 - 1)  # the fast path from here on
    with pytest.raises(symdiff.ArgumentError, match="does not fit in int64"):
        f(1.5, 2**70)
    with pytest.raises(symdiff.ArgumentError, match="does not fit in int64"):
        symdiff.grad(scale, **PY)(1.5, 2**70)
    with pytest.raises(symdiff.ArgumentError, match="does not fit in int64"):
        symdiff.jvp(scale, (1.5, 2**70), (1.0, 0.0), **PY)
    # differentiated, it is a float: only a float64's range matters
    assert symdiff.grad(scale, argnums=1, **PY)(1.5, 2**70) == 1.5
    with pytest.raises(symdiff.ArgumentError, match="too large for a float64"):
        symdiff.grad(scale, argnums=1, **PY)(1.5, 10**400)


def test_int_beyond_int64_after_a_compiled_call_is_an_argument_error():
    """Numba's dispatcher raises OverflowError for it, on the fast path too."""
    f = symdiff.jit(scale)
    with pytest.raises(symdiff.ArgumentError, match="does not fit in int64") as info:
        f(1.5, 2**70)
    assert "\x1b[" not in str(info.value)
    assert f(1.5, 3) == 4.5
    with pytest.raises(symdiff.ArgumentError, match="`n` of `scale` is 11805"):
        f(1.5, 2**70)


def test_masked_array_is_an_argument_error():
    x = np.ma.array([1.0, 2.0], mask=[0, 1])
    with pytest.raises(symdiff.ArgumentError, match="`x` of `total` is a masked") as e:
        symdiff.grad(total, **PY)(x)
    assert "x.filled(" in str(e.value) and "np.asarray(x)" in str(e.value)
    assert symdiff.grad(total, **PY)(x.filled(0.0)) == pytest.approx([2.0, 0.0])


# -- custom_vjp checks its arguments ------------------------------------------------
@symdiff.custom_vjp
def square(x):
    return x * x


def use_square(x):
    return square(x)


@pytest.mark.parametrize("fun", [3, None, math.sin])
def test_custom_vjp_of_a_non_function_is_an_argument_error(fun):
    with pytest.raises(symdiff.ArgumentError, match="custom_vjp expects a Python"):
        symdiff.custom_vjp(fun)


def test_defvjp_of_non_functions_is_an_argument_error():
    with pytest.raises(
        symdiff.ArgumentError,
        match=r"`square.defvjp\(fwd, bwd\)` expects two Python functions, but "
        "fwd is a `int` and bwd is a `int`",
    ):
        square.defvjp(1, 2)
    assert square.fwd is None and square.bwd is None  # nothing registered
    with pytest.raises(symdiff.ArgumentError, match="but bwd is a `str`"):
        square.defvjp(lambda x: (x * x, x), "bwd")
    assert isinstance(symdiff.ArgumentError("x"), TypeError)


# -- custom_vjp with a parameter left to its default --------------------------------
@symdiff.custom_vjp
def scaled(x, y=2.0):
    return x * y


def scaled_fwd(x, y=2.0):
    return x * y, (x, y)


def scaled_bwd(res, g):
    x, y = res
    return (g * y, g * x)


scaled.defvjp(scaled_fwd, scaled_bwd)


def use_scaled_default(x):
    return scaled(x)


def use_scaled_given(x):
    return scaled(x, 3.0)


def test_custom_vjp_bwd_returns_one_cotangent_per_parameter():
    """As in JAX, bwd returns a cotangent per parameter, defaults included: one
    rule serves `scaled(x)` and `scaled(x, 3.0)`."""
    assert symdiff.grad(use_scaled_given, **PY)(1.5) == 3.0
    assert symdiff.grad(use_scaled_default, **PY)(1.5) == 2.0


def test_from_sympy_of_a_constant_compiles_without_derivatives():
    constant = symdiff.from_sympy(3, [], target="python")
    assert constant() == 3.0
    assert not hasattr(constant, "grad")  # nothing to differentiate


def zeros_of_int_length(x, n: int):
    z = np.zeros(n) + x
    return np.sum(z * z)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_an_array_summed_away_leaves_its_length_to_print(target):
    """``np.sum((np.zeros(n) + x) ** 2)`` folds to ``n * x * x``: no array is
    left, but the length ``n`` is (it raised KeyError 'dim')."""
    assert symdiff.jit(zeros_of_int_length, target=target)(1.5, 3) == 6.75
    assert symdiff.grad(zeros_of_int_length, target=target)(1.5, 3) == 9.0


def my_loss(x_val, y):
    return x_val**2 * y


def with_aux(x, y):
    return x * y, x + y


def test_latex_labels_name_the_function_and_the_aux():
    tex = symdiff.grad(my_loss, target="python").latex()
    assert tex.startswith(r"\frac{\partial \mathrm{my\_loss}}{\partial x_{val}}")
    tex = symdiff.value_and_grad(with_aux, has_aux=True, target="python").latex()
    assert r"\mathrm{aux} = x + y" in tex and r"\mathrm{value} = x y" in tex


def linear_score(w, X):
    return np.sum(w * X)


def snapshot(x):
    return x.copy()


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_results_are_never_the_callers_arrays(target):
    """`grad` of np.sum(w * X) is X's values, and `x.copy()` folds to x: the
    kernel returned the argument itself, so `g *= -0.1` changed the caller's X."""
    X = np.array([1.0, 2.0, 3.0])
    g = symdiff.grad(linear_score, target=target)(np.zeros(3), X)
    assert g is not X
    g *= -0.1
    np.testing.assert_array_equal(X, [1.0, 2.0, 3.0])
    x = np.array([5.0, 6.0])
    s = symdiff.jit(snapshot, target=target)(x)
    s[0] = 0.0
    np.testing.assert_array_equal(x, [5.0, 6.0])


@symdiff.custom_vjp
def halved_gradient(x):
    return x * 1.0


def halved_fwd(x):
    return x * 1.0, None


def halved_bwd(res, g):
    return (0.5 * g,)


halved_gradient.defvjp(halved_fwd, halved_bwd)


def uses_an_array_custom_vjp(x):
    return np.sum(halved_gradient(x) * np.arange(3.0))


def test_a_custom_vjp_with_an_array_output_runs_its_rule_at_the_adjoint():
    """Its rules were read as a number's (the gradient came out [1.5, 1.5, 1.5]
    where [0, 0.5, 1] is right); now bwd runs at the array adjoint."""
    for target in ("cpu", "python"):
        g = symdiff.grad(uses_an_array_custom_vjp, target=target)(np.ones(3))
        np.testing.assert_allclose(g, [0.0, 0.5, 1.0])
