"""Special functions: ``math.lgamma``/``math.gamma``, ``np.logaddexp``/``logaddexp2``
and the ``scipy.special`` functions built on them (``gammaln``, ``digamma``,
``betaln``, ``xlogy``, ...); the IEEE predicates ``isnan``/``isinf``/``isfinite``.

The digamma (``lgamma``'s derivative) is built from other ops (ir/special.py): its
values are checked against SciPy over a wide range, its derivative (the trigamma,
what a Hessian of ``lgamma`` needs) against ``scipy.special.polygamma``; the
likelihoods users write against JAX.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np
import pytest
from scipy import special

import symdiff
from symdiff.ir.node import constant
from symdiff.ir.special import digamma

jax.config.update("jax_enable_x64", True)


# -- the functions under test, as users write them --------------------------------------
def poisson_loglik(log_rate, counts):
    rate = np.exp(log_rate)
    return np.sum(counts * log_rate - rate - special.gammaln(counts + 1.0))


def negative_binomial(r, p, k):
    return (
        math.lgamma(k + r)
        - math.lgamma(r)
        - math.lgamma(k + 1)
        + r * math.log(p)
        + k * math.log1p(-p)
    )


def student_t(x, mu, log_sigma, nu):
    sigma = np.exp(log_sigma)
    z = (x - mu) / sigma
    n = x.shape[0]
    norm = math.lgamma((nu + 1.0) / 2.0) - math.lgamma(nu / 2.0)
    norm = norm - 0.5 * math.log(nu * math.pi) - log_sigma
    return n * norm - (nu + 1.0) / 2.0 * np.sum(np.log1p(z * z / nu))


def dirichlet_logpdf(alpha, x):
    return (
        special.gammaln(np.sum(alpha))
        - np.sum(special.gammaln(alpha))
        + np.sum((alpha - 1.0) * np.log(x))
    )


def beta_nll(a, b, x):
    return np.sum(
        -(a - 1.0) * np.log(x) - (b - 1.0) * np.log1p(-x) + special.betaln(a, b)
    )


def mixture(x, m1, m2):
    # a two-component mixture's log density, as logaddexp
    l1 = -0.5 * (x - m1) ** 2 + math.log(0.3)
    l2 = -0.5 * (x - m2) ** 2 + math.log(0.7)
    return np.sum(np.logaddexp(l1, l2))


def in_bits(x, y):
    return np.sum(np.logaddexp2(x, y * y))


def entropy_terms(p, q):
    return np.sum(special.xlogy(p, q) - special.xlog1py(p, -q))


def gamma_scalar(x):
    return math.gamma(x) * math.sin(x) + special.digamma(x) * x


def loggamma_only(x):
    return math.lgamma(x)


def digamma_array(x):
    return special.psi(x)


def gamma_array(x):
    return special.gamma(x)


def logistic_pieces(x):
    return np.sum(special.log_expit(x) + special.logit(special.expit(x)))


# -- the digamma ------------------------------------------------------------------------
WIDE = np.concatenate(
    [
        np.geomspace(1e-8, 1e12, 60),
        -np.geomspace(1e-6, 1e4, 40) + 0.37,  # negative, off the poles
        np.linspace(-6.9, 6.9, 97),
        [0.5, 1.0, 1.4616321449683622, 2.0, 8.5, 8.49999],
    ]
)


def test_digamma_matches_scipy_over_a_wide_range():
    for x in WIDE:
        got = digamma(constant(float(x))).value  # constant-folded through the IR
        want = special.digamma(x)
        assert got == pytest.approx(want, rel=2e-14, abs=2e-15 * max(1.0, abs(x))), x


def test_digamma_kernel_matches_scipy():
    got = symdiff.jit(digamma_array)(WIDE)
    np.testing.assert_allclose(got, special.digamma(WIDE), rtol=2e-14, atol=1e-14)


def test_trigamma_is_lgammas_second_derivative():
    xs = np.concatenate([np.geomspace(1e-3, 1e6, 30), np.linspace(-4.7, 4.9, 23)])
    hess = symdiff.hessian(loggamma_only)
    for x in xs:
        assert hess(float(x)) == pytest.approx(special.polygamma(1, x), rel=1e-12), x


def test_lgamma_and_gamma_keep_ieee_values_at_their_poles():
    # Python's math raises there; the kernels answer as C's lgamma and tgamma
    for target in ("cpu", "python"):
        value_and_grad = symdiff.value_and_grad(loggamma_only, target=target)
        assert value_and_grad(0.0)[0] == math.inf
        assert value_and_grad(-2.0)[0] == math.inf
        assert math.isnan(symdiff.jit(gamma_array, target=target)(-3.0))
    got = symdiff.jit(gamma_array)(np.array([-0.0, 0.0, 200.0, 4.0]))
    np.testing.assert_array_equal(got, [-math.inf, math.inf, math.inf, 6.0])


# -- users' functions against JAX ---------------------------------------------------------
RNG = np.random.default_rng(5)


def _jax_poisson(log_rate, counts):
    return jnp.sum(counts * log_rate - jnp.exp(log_rate) - jsp.gammaln(counts + 1.0))


def test_poisson_loglik_gradient():
    log_rate = RNG.normal(size=7)
    counts = RNG.poisson(3.0, size=7).astype(float)
    got = symdiff.grad(poisson_loglik, argnums=(0, 1), target="python")(
        log_rate, counts
    )
    want = jax.grad(_jax_poisson, argnums=(0, 1))(log_rate, counts)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def _jax_negbin(r, p, k):
    return (
        jsp.gammaln(k + r)
        - jsp.gammaln(r)
        - jsp.gammaln(k + 1.0)
        + r * jnp.log(p)
        + k * jnp.log1p(-p)
    )


@pytest.mark.parametrize("point", [(2.5, 0.3, 4.0), (0.4, 0.8, 0.0), (17.0, 0.05, 9.0)])
def test_negative_binomial_gradient_and_hessian(point):
    argnums = (0, 1, 2)
    got = symdiff.grad(negative_binomial, argnums=argnums, target="python")(*point)
    want = jax.grad(_jax_negbin, argnums=argnums)(*point)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    got_h = np.array(
        symdiff.hessian(negative_binomial, argnums=argnums, target="python")(*point)
    )
    want_h = np.array(jax.hessian(_jax_negbin, argnums=argnums)(*point))
    np.testing.assert_allclose(got_h, want_h, rtol=1e-11, atol=1e-13)


def _jax_student_t(x, mu, log_sigma, nu):
    sigma = jnp.exp(log_sigma)
    z = (x - mu) / sigma
    norm = jsp.gammaln((nu + 1.0) / 2.0) - jsp.gammaln(nu / 2.0)
    norm = norm - 0.5 * jnp.log(nu * jnp.pi) - log_sigma
    return x.shape[0] * norm - (nu + 1.0) / 2.0 * jnp.sum(jnp.log1p(z * z / nu))


def test_student_t_gradient_in_every_parameter():
    x = RNG.standard_t(4.0, size=9)
    args = (x, 0.2, -0.3, 3.5)
    argnums = (0, 1, 2, 3)
    got = symdiff.grad(student_t, argnums=argnums, target="python")(*args)
    want = jax.grad(_jax_student_t, argnums=argnums)(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def _jax_dirichlet(alpha, x):
    return (
        jsp.gammaln(jnp.sum(alpha))
        - jnp.sum(jsp.gammaln(alpha))
        + jnp.sum((alpha - 1.0) * jnp.log(x))
    )


def test_dirichlet_gradient_and_hessian():
    alpha = np.array([0.7, 2.0, 5.5, 0.05])
    x = RNG.dirichlet(np.ones(4))
    got = symdiff.grad(dirichlet_logpdf, target="python")(alpha, x)
    np.testing.assert_allclose(got, jax.grad(_jax_dirichlet)(alpha, x), rtol=1e-12)
    got_h = symdiff.hessian(dirichlet_logpdf, target="python")(alpha, x)
    want_h = jax.hessian(_jax_dirichlet)(alpha, x)
    np.testing.assert_allclose(got_h, want_h, rtol=1e-11)


def test_beta_negative_log_likelihood():
    x = RNG.uniform(0.05, 0.95, 6)
    got = symdiff.grad(beta_nll, argnums=(0, 1), target="python")(2.0, 3.5, x)
    want = jax.grad(
        lambda a, b: jnp.sum(
            -(a - 1.0) * jnp.log(x) - (b - 1.0) * jnp.log1p(-x) + jsp.betaln(a, b)
        ),
        argnums=(0, 1),
    )(2.0, 3.5)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_logaddexp_mixture_gradient_and_jvp():
    x = RNG.normal(size=8) * 3.0
    got = symdiff.grad(mixture, argnums=(0, 1, 2), target="python")(x, -1.0, 2.0)

    def jax_mixture(x, m1, m2):
        l1 = -0.5 * (x - m1) ** 2 + jnp.log(0.3)
        l2 = -0.5 * (x - m2) ** 2 + jnp.log(0.7)
        return jnp.sum(jnp.logaddexp(l1, l2))

    want = jax.grad(jax_mixture, argnums=(0, 1, 2))(x, -1.0, 2.0)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    tangent = RNG.normal(size=8)
    value, slope = symdiff.jvp(
        mixture, (x, -1.0, 2.0), (tangent, 0.5, -0.25), target="python"
    )
    jv, js = jax.jvp(jax_mixture, (x, -1.0, 2.0), (tangent, 0.5, -0.25))
    assert value == pytest.approx(float(jv), rel=1e-13)
    assert slope == pytest.approx(float(js), rel=1e-12)


def test_logaddexp_values_match_numpy_at_extremes():
    x = np.array([-1000.0, 1000.0, 0.0, -math.inf, math.inf, 3.0, math.nan, -math.inf])
    y = np.array([-1000.0, 999.0, 0.0, -math.inf, math.inf, -math.inf, 1.0, 2.0])
    got = symdiff.jit(in_bits)(x[:1], y[:1])  # compiles; values below
    assert got == pytest.approx(np.sum(np.logaddexp2(x[:1], y[:1] ** 2)))
    for target in ("cpu", "python"):
        both = symdiff.jit(_logaddexp_pair, target=target)(x, y)
        np.testing.assert_array_equal(both, np.logaddexp(x, y))
    # the derivative stays finite where exp would overflow
    g = symdiff.grad(mixture, argnums=0, target="python")(
        np.array([40.0, -40.0]), -30.0, 35.0
    )
    assert np.all(np.isfinite(g))


def _logaddexp_pair(x, y):
    return np.logaddexp(x, y)


def test_logaddexp2_gradient():
    x = RNG.normal(size=5)
    y = RNG.normal(size=5)
    got = symdiff.grad(in_bits, argnums=(0, 1), target="python")(x, y)
    want = jax.grad(lambda x, y: jnp.sum(jnp.logaddexp2(x, y * y)), argnums=(0, 1))(
        x, y
    )
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_xlogy_is_zero_at_zero_and_differentiable():
    p = np.array([0.0, 0.2, 0.5, 0.0])
    q = np.array([0.0, 0.3, 0.9, 0.4])
    value, (gp, gq) = symdiff.value_and_grad(
        entropy_terms, argnums=(0, 1), target="python"
    )(p, q)
    want = np.sum(special.xlogy(p, q) - special.xlog1py(p, -q))
    assert value == pytest.approx(want, rel=1e-14)
    # d/dp: log(q) - log1p(-q), also at p == 0 where q > 0; 0 at the pole q == 0
    expected_p = np.where(
        (p == 0) & (q == 0),
        -np.log1p(-q),
        np.log(np.where(q > 0, q, 1.0)) - np.log1p(-q),
    )
    np.testing.assert_allclose(gp, expected_p, rtol=1e-13)
    np.testing.assert_allclose(gq[1:3], p[1:3] / q[1:3] + p[1:3] / (1 - q[1:3]))


def test_gamma_and_digamma_of_a_number():
    for x in (0.3, 1.7, 4.2, -1.3, -2.6):
        got = symdiff.grad(gamma_scalar, target="python")(x)
        g, psi = special.gamma(x), special.digamma(x)
        want = (
            g * psi * math.sin(x) + g * math.cos(x) + special.polygamma(1, x) * x + psi
        )
        assert got == pytest.approx(want, rel=1e-12), x


def test_log_expit_and_logit():
    x = np.array([-30.0, -1.0, 0.0, 2.5, 8.0])  # logit(expit(30)) cancels
    got = symdiff.grad(logistic_pieces, target="python")(x)
    want = jax.grad(
        lambda x: jnp.sum(jax.nn.log_sigmoid(x) + jsp.logit(jax.nn.sigmoid(x)))
    )(x)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_gradient_source_is_deterministic_and_reads_as_a_series():
    grad = symdiff.grad(loggamma_only, target="python")
    grad(2.5)
    source = grad.source
    assert "math.lgamma" not in source  # the gradient needs only the digamma
    assert "math.log(" in source and "math.sin(" in source  # series, reflection
    again = symdiff.grad(loggamma_only, target="python")
    again(2.5)
    assert again.source == source


# -- IEEE predicates ------------------------------------------------------------------------
def nan_to_zero_squares(x):
    return np.sum(np.where(np.isnan(x), 0.0, x) ** 2)


def finite_part(x):
    return np.sum(np.where(np.isfinite(x), x, 0.0) * 3.0) + np.sum(np.isinf(x))


def scalar_guard(x, y):
    if math.isnan(y) or math.isinf(y):
        return x * 2.0
    return x * y


def test_isnan_isinf_isfinite():
    x = np.array([1.0, math.nan, -2.0, math.inf, -math.inf, 0.5])
    for fn in (nan_to_zero_squares, finite_part):
        value, grad = symdiff.value_and_grad(fn, target="python")(x)
        assert value == fn(x)
        want = jax.grad(
            lambda v: (
                jnp.sum(jnp.where(jnp.isnan(v), 0.0, v) ** 2)
                if fn is nan_to_zero_squares
                else jnp.sum(jnp.where(jnp.isfinite(v), v, 0.0) * 3.0)
            )
        )(x)
        np.testing.assert_array_equal(grad, want)
    for y in (math.nan, math.inf, -math.inf, 3.0):
        assert symdiff.grad(scalar_guard, target="python")(1.5, y) == (
            2.0 if y != 3.0 else 3.0
        )


def xlogy_pair(x, y):
    return special.xlogy(x, y) + 2.0 * special.xlog1py(x, y)


def test_xlogy_is_zero_at_zero_x_for_every_y_but_nan():
    for y in (-1.0, -2.0, 0.0, math.inf, -math.inf, 0.5):
        assert symdiff.jit(xlogy_pair)(0.0, y) == 0.0, y
    assert math.isnan(symdiff.jit(xlogy_pair)(0.0, math.nan))
    for x, y in ((1.5, 0.5), (2.0, 3.0)):
        got = symdiff.jit(xlogy_pair)(x, y)
        assert got == pytest.approx(special.xlogy(x, y) + 2 * special.xlog1py(x, y))


def test_digamma_at_its_poles_is_scipys():
    for x, want in (
        (0.0, -math.inf),
        (-0.0, math.inf),
        (-1.0, math.nan),
        (-3.0, math.nan),
    ):
        got = symdiff.jit(digamma_array)(x)
        assert got == want or (math.isnan(got) and math.isnan(want)), x
    # a number in gives a number out on the python target too (not a 0-d array)
    assert type(symdiff.jit(loggamma_only, target="python")(2.5)) is float


def _lgamma_of(x):
    return math.lgamma(x)


def test_digamma_reflection_near_zero_and_at_half_integers():
    """Below 0.5 the reflection's distance to the nearest integer is x itself
    (``x - floor(x)`` rounds for tiny negative x), and its cotangent is cos/sin
    (tan's derivatives lose everything at negative half-integers)."""
    euler = 0.5772156649015329
    for x in (-1e-20, -1e-17, -1e-12, 1e-20):
        assert symdiff.grad(_lgamma_of)(x) == pytest.approx(-1.0 / x - euler, rel=1e-12)
        assert symdiff.hessian(_lgamma_of)(x) == pytest.approx(1.0 / x**2, rel=1e-12)
    d3 = symdiff.grad(symdiff.grad(symdiff.grad(_lgamma_of)))
    assert d3(-0.5) == pytest.approx(-0.8287966442343199, rel=1e-12)
    assert symdiff.grad(d3)(-0.5) == pytest.approx(193.40909103400244, rel=1e-12)


def _betaln_of(a, b):
    return special.betaln(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (1e15, 2.0),
        (0.5, 1e12),
        (1e8, 5.0),
        (3.0, 4.5),
        (1e4, 1e4),
        (2e4, 3e5),
        (1e15, 1e15),
        (999.0, 2.0),
        (1e3, 2.0),
        (1e-3, 1e5),
        (50.0, 0.3),
    ],
)
def test_betaln_at_large_arguments_against_mpmath(a, b):
    """Where lgamma(a) + lgamma(b) - lgamma(a + b) would cancel (an argument past
    1e3), Stirling's series keeps betaln and its slopes to rounding."""
    import mpmath

    mpmath.mp.dps = 40
    value = float(mpmath.log(mpmath.beta(a, b)))
    da = float(mpmath.digamma(a) - mpmath.digamma(a + b))
    db = float(mpmath.digamma(b) - mpmath.digamma(a + b))
    assert symdiff.jit(_betaln_of)(a, b) == pytest.approx(value, rel=1e-12)
    ga, gb = symdiff.grad(_betaln_of, argnums=(0, 1))(a, b)
    assert ga == pytest.approx(da, rel=1e-11)
    assert gb == pytest.approx(db, rel=1e-8, abs=1e-16)
