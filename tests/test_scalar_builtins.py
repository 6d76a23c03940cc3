"""Python's scalar builtins: exact ``math.fsum``, bools in arithmetic, ``round``,
``divmod``, ``math.fmod/remainder/isclose/cbrt/ldexp/gcd/lcm/perm``, ``any``/``all``
and the bitwise operators on ints.

Each value is compared with Python's own, bit for bit, on the CPU target, on
``target="python"`` and (for straight-line kernels of floats) on the warm start's
plain-Python version of the kernel; derivatives with finite differences or JAX.
"""

import math
import random
import struct

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import symdiff
from symdiff.backend.exact import exact_python
from symdiff.kernel import _output_types

jax.config.update("jax_enable_x64", True)

TARGETS = ("cpu", "python")


def same(a, b):
    """Equal bits for floats (NaN equals NaN), equal value and type otherwise."""
    if isinstance(a, tuple):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("d", a) == struct.pack("d", b) or (a != a and b != b)
    return type(a) is type(b) and a == b


def python_answer(fn, args):
    """What Python gives, or None where it raises (the kernel's IEEE value then
    stands for the exception)."""
    try:
        return fn(*args)
    except (ValueError, OverflowError, ZeroDivisionError):
        return None


def warm_python(compiled):
    """The warm start's plain-Python version of a kernel of floats (None if the
    source is refused: Numba answers those calls)."""
    kernel = compiled.kernel
    return exact_python(kernel.source, kernel.name, _output_types(kernel.plan))


def check_values(fn, points, warm=True):
    """``fn``'s kernel on every target equals Python's ``fn`` at ``points``."""
    for target in TARGETS:
        compiled = symdiff.jit(fn, target=target)
        for args in points:
            want = python_answer(fn, args)
            if want is not None:
                assert same(compiled(*args), want), (fn.__name__, target, args)
    if not warm:
        return
    python = warm_python(symdiff.jit(fn))
    assert python is not None, fn.__name__
    kernel = symdiff.jit(fn)
    for args in points:
        try:
            got = python(*args)
        except Exception:
            continue  # the warm start lets Numba answer
        assert same(got, kernel(*args)), (fn.__name__, "warm", args)


def finite_difference(fn, args, i, h=1e-6):
    hi, lo = list(args), list(args)
    hi[i] += h
    lo[i] -= h
    return (fn(*hi) - fn(*lo)) / (2 * h)


# -- math.fsum -----------------------------------------------------------------------
def fsum3(x, y, z):
    return math.fsum((x, y, z))


def fsum_with_constants(a, b, c, d):
    return math.fsum([a, 1e16, b, 3.0, c, -1e16, d])


def fsum_list(x):
    return math.fsum([x, 1e16, -1e16])


def fsum_of_ints(x, n: int):
    return math.fsum((n, True, x, 2))


HARD = [
    (1.0, 1e16, -1e16),
    (1e16, 1.0, -1e16),
    (1e100, 1.0, -1e100),
    (1.0, 2.0**-53, 2.0**-120),  # a tie that the bits far below break
    (1.0, 2.0**-53, -(2.0**-120)),
    (1.0, -(2.0**-54), -(2.0**-140)),
    (2.0**53, 1.0, 2.0**-60),
    (0.1, 0.2, 0.3),
    (-0.0, -0.0, -0.0),  # Python's fsum of zeros is +0.0
    (5e-324, -5e-324, 1e-310),
    (1.7976931348623157e308, -1.7976931348623157e308, 1.0),
    (math.inf, 1.0, 2.0),
    (-math.inf, 1.0, 2.0),
    (math.nan, 1.0, 2.0),
    (math.inf, -math.inf, 1.0),  # Python raises ValueError: NaN here
    (1e308, 1e308, -1e308),  # Python raises OverflowError: inf here
]


def _hard_float(rng):
    k = rng.random()
    if k < 0.3:
        return rng.uniform(-1, 1) * 10.0 ** rng.randint(-20, 20)
    if k < 0.5:
        return rng.choice([1.0, -1.0]) * 2.0 ** rng.randint(-80, 80)
    if k < 0.8:
        return rng.choice([0.1, -0.1, 1e16, -1e16, 1.0, -1.0, 0.5, 2.0**-53, -3.0])
    return rng.uniform(-1, 1) * 2.0 ** rng.randint(-1070, 1020)


def test_fsum_is_exact_on_hard_cases():
    check_values(fsum3, HARD)
    assert symdiff.jit(fsum_list)(1.0) == 1.0 == math.fsum([1.0, 1e16, -1e16])
    assert symdiff.jit(fsum3)(*[0.1] * 3) == math.fsum([0.1] * 3)


def test_fsum_matches_python_on_random_cancellations():
    rng = random.Random(7)
    points = []
    for _ in range(1500):
        args = [_hard_float(rng) for _ in range(4)]
        if rng.random() < 0.5:
            args[rng.randrange(4)] = -args[rng.randrange(4)]
        points.append(tuple(args))
    check_values(fsum_with_constants, points)


def test_fsum_of_ints_and_bools_is_a_float():
    for target in TARGETS:
        f = symdiff.jit(fsum_of_ints, target=target)
        assert same(f(0.5, 3), 6.5)


def test_fsum_derivative_is_one_per_term():
    for target in TARGETS:
        value, grads = symdiff.value_and_grad(fsum3, argnums=(0, 1, 2), target=target)(
            1.0, 1e16, -1e16
        )
        assert value == 1.0 and grads == (1.0, 1.0, 1.0)
    out, tangent = symdiff.jvp(fsum3, (1.0, 2.0, 3.0), (0.5, 0.25, 2.0))
    assert (out, tangent) == (6.0, 2.75)
    hessian = symdiff.hessian(fsum3, argnums=(0, 1, 2))(1.0, 2.0, 3.0)
    assert all(v == 0.0 for row in hessian for v in row)
    assert symdiff.grad(fsum_list)(3.0) == 1.0


def test_fsum_inside_a_loop():
    def f(x, n: int):
        s = 0.0
        for i in range(n):
            s = s + math.fsum((x, 1e16, float(i), -1e16))
        return s

    for target in TARGETS:
        assert symdiff.value_and_grad(f, target=target)(1.0, 3) == (6.0, 3.0)


# -- bools in arithmetic are ints --------------------------------------------------
def steps(x):
    return ((x > 0) + (x > 1) + (x > 1.5)) * x


def sign_squared(x):
    return ((x > 0) - (x < 0)) * x * x


def bool_powers(x):
    return (x > 0) ** -1 + abs(-(x > 1)) + (x > 0) * (x > 1) + (x > 0) // True


def test_bools_add_as_ints_on_every_target():
    for target in TARGETS:
        vg = symdiff.value_and_grad(steps, target=target)
        assert vg(2.0) == (6.0, 3.0)
        assert vg(1.2) == (2.4, 2.0)
        assert symdiff.value_and_grad(sign_squared, target=target)(-2.0) == (
            -4.0,
            4.0,
        )
    points = [(v,) for v in (-2.0, -0.0, 0.5, 1.2, 2.0)]
    check_values(steps, points)
    check_values(sign_squared, points)
    check_values(bool_powers, [(2.0,), (0.5,)], warm=False)


# -- round ---------------------------------------------------------------------------
def round_int(x):
    return round(x)


def round_2(x):
    return round(x, 2)


def round_5(x):
    return round(x, 5)


def round_15(x):
    return round(x, 15)


def round_minus_1(x):
    return round(x, -1)


def round_minus_3(x):
    return round(x, ndigits=-3)


def round_of_an_int(k):
    return round(k, -1)


ROUND_POINTS = [
    2.5, 3.5, -2.5, 0.5, -0.5, 2.675, 0.285, 1.005, 0.125, 0.375, 0.005, 0.015,
    15.0, 25.0, -15.0, 1250.0, 2500.0, -0.0, 0.0, 1e-320, 4503599627370497.0,
    5e15 + 0.5, 1e16, 12345.5, math.inf, -math.inf, math.nan,
]  # fmt: skip


def _round_points(rng, n):
    points = [(x,) for x in ROUND_POINTS]
    for _ in range(n):
        e = rng.randint(-6, 17)
        decimal = round(rng.uniform(0, 10.0**e), rng.randint(0, 8))
        points.append((rng.choice([1, -1]) * decimal + rng.choice([0, 0.5, 5e-3]),))
        points.append((rng.uniform(-1, 1) * 10.0 ** rng.randint(-10, 20),))
    return points


@pytest.mark.parametrize(
    "fn", [round_2, round_5, round_15, round_minus_1, round_minus_3]
)
def test_round_with_ndigits_is_pythons_correctly_rounded_value(fn):
    points = _round_points(random.Random(fn.__name__), 400)
    check_values(fn, points, warm=False)


def test_round_to_an_int_ties_to_even():
    points = [(x,) for x in ROUND_POINTS if math.isfinite(x)]
    points += [(x + 0.5,) for x in range(-6, 6)]
    check_values(round_int, points, warm=False)
    assert same(symdiff.jit(round_int)(2.5), 2)


def test_round_of_ints():
    check_values(
        round_of_an_int, [(k,) for k in (15, 25, -15, -25, 14, 0, 7)], warm=False
    )
    assert same(symdiff.jit(lambda k: round(k))(True), 1)


def test_round_has_slope_zero():
    assert symdiff.grad(round_2)(2.675) == 0.0
    assert symdiff.grad(lambda x: round(x) * x)(2.4) == 2.0


def test_round_needs_a_constant_ndigits_in_range():
    with pytest.raises(symdiff.SymdiffError, match="must be a constant integer"):
        symdiff.jit(lambda x, n: round(x, int(n)))(1.5, 2.0)
    with pytest.raises(symdiff.SymdiffError, match="from -22 to 22"):
        symdiff.jit(lambda x: round(x, 30))(1.5)


# -- divmod, fmod, remainder -------------------------------------------------------
def divmod_floats(a, b):
    return divmod(a, b)


def divmod_ints(a: int, b: int):
    return divmod(a, b)


def fmod(x, y):
    return math.fmod(x, y)


def remainder(x, y):
    return math.remainder(x, y)


DIVISIONS = [
    (7.5, 2.0), (-7.5, 2.0), (7.5, -2.0), (-7.5, -2.0), (1.0, 0.1), (-1.0, 0.1),
    (5.0, math.inf), (-5.0, math.inf), (-0.0, 3.0), (0.0, -3.0), (1e300, 1e-300),
    (2.5, 1.0), (3.5, 1.0), (-2.5, 1.0), (1e16, 3.0), (0.1, 0.03), (math.inf, 2.0),
    (3.0, 0.0), (math.nan, 1.0),
]  # fmt: skip


def test_divmod_is_pythons():
    check_values(divmod_floats, DIVISIONS[:-3], warm=False)
    check_values(divmod_ints, [(7, 2), (-7, 2), (7, -2), (-7, -2), (0, 5)], warm=False)
    assert same(symdiff.jit(divmod_ints)(True, True), (1, 0))


def test_fmod_and_remainder_are_pythons():
    check_values(fmod, DIVISIONS, warm=False)
    check_values(remainder, DIVISIONS, warm=False)
    assert same(symdiff.jit(remainder)(5.0, 2.0), 1.0)  # a tie: n = 2, even
    assert same(symdiff.jit(remainder)(7.0, 2.0), -1.0)


@pytest.mark.parametrize("fn", [fmod, remainder])
def test_fmod_and_remainder_derivatives(fn):
    rng = random.Random(fn.__name__)
    grad = symdiff.grad(fn, argnums=(0, 1))
    for _ in range(20):
        x, y = rng.uniform(-9, 9), rng.choice([-1, 1]) * rng.uniform(0.5, 3)
        for i, g in enumerate(grad(x, y)):
            assert g == pytest.approx(finite_difference(fn, (x, y), i), abs=1e-6)
    jax_fmod = jax.grad(jnp.fmod, argnums=(0, 1))(7.5, -2.0)
    assert symdiff.grad(fmod, argnums=(0, 1))(7.5, -2.0) == tuple(map(float, jax_fmod))


# -- isclose, cbrt, ldexp ------------------------------------------------------------
def isclose(a, b):
    return math.isclose(a, b)


def isclose_tolerances(a, b):
    return math.isclose(a, b, rel_tol=0.1, abs_tol=1e-3)


def test_isclose_is_pythons():
    points = [
        (1.0, 1.0 + 1e-10), (1.0, 1.1), (math.inf, math.inf), (math.inf, 1.0),
        (math.nan, math.nan), (0.0, 1e-300), (-0.0, 0.0), (1e300, 1.0000000001e300),
    ]  # fmt: skip
    check_values(isclose, points)
    check_values(isclose_tolerances, [(1.0, 1.05), (1.0, 1.2), (0.0, 5e-4), (0, 1)])
    with pytest.raises(symdiff.SymdiffError, match="non-negative"):
        symdiff.jit(lambda a, b: math.isclose(a, b, abs_tol=-1.0))(1.0, 2.0)


def cbrt(x):
    return math.cbrt(x)


def np_cbrt(x):
    return np.cbrt(x) * 1.0


CUBES = [(8.0,), (-27.0,), (2.0,), (-0.0,), (0.0,), (math.inf,), (1e-310,), (3.3,)]


@pytest.mark.skipif(not hasattr(math, "cbrt"), reason="math.cbrt: Python 3.11+")
def test_cbrt_is_libms_on_every_target():
    rng = random.Random(3)
    points = CUBES + [(rng.uniform(-1e3, 1e3),) for _ in range(200)]
    check_values(cbrt, points)
    # np.cbrt is the same libm cbrt in the kernel; NumPy's own (correctly
    # rounded here) differs by up to 2 ulp from glibc's
    for target in TARGETS:
        f = symdiff.jit(np_cbrt, target=target)
        for (x,) in points:
            assert f(x) == pytest.approx(float(np.cbrt(x)), rel=9e-16, abs=0), x


def test_cbrt_derivative():
    for x in (8.0, -27.0, 0.3, 5.0):
        g = symdiff.grad(np_cbrt)(x)
        assert g == pytest.approx(float(jax.grad(jnp.cbrt)(x)), rel=1e-14)
        assert g == pytest.approx(finite_difference(np_cbrt, (x,), 0), rel=1e-6)
    assert symdiff.grad(np_cbrt)(0.0) == math.inf


def ldexp(x, n: int):
    return math.ldexp(x, n)


def test_ldexp_is_exact_and_its_slope_is_a_power_of_two():
    points = [
        (1.5, 3), (1.5, -1074), (3.0, -1075), (1.0, 1023), (2.0**-1000, 2000),
        (1.0, 1024), (-3.0, -2000), (1.0, 10**12), (math.inf, -5), (-0.0, 4),
    ]  # fmt: skip
    check_values(ldexp, points, warm=False)
    for target in TARGETS:
        assert symdiff.jit(ldexp, target=target)(1.0, 1024) == math.inf
        assert symdiff.grad(ldexp, target=target)(1.5, 3) == 8.0
        assert symdiff.grad(ldexp, target=target)(1.5, -2) == 0.25
    assert symdiff.jit(lambda x: math.ldexp(x, 3))(0.75) == 6.0
    with pytest.raises(symdiff.SymdiffError, match="takes integers"):
        symdiff.jit(lambda x: math.ldexp(x, 2.0))(1.0)


# -- integers: gcd, lcm, perm --------------------------------------------------------
def gcd(a: int, b: int):
    return math.gcd(a, b, 6)


def lcm(a: int, b: int):
    return math.lcm(a, b)


def perm(n: int, k: int):
    return math.perm(n, k)


def test_gcd_lcm_perm_of_ints():
    pairs = [(12, 18), (-12, 18), (0, 0), (0, -5), (7, 13), (4, 6)]
    check_values(gcd, pairs, warm=False)
    check_values(lcm, pairs, warm=False)
    check_values(perm, [(5, 2), (10, 10), (3, 5), (20, 3), (0, 0)], warm=False)
    assert same(symdiff.jit(lambda x: math.perm(5) * x)(1.0), 120.0)
    assert same(symdiff.jit(lambda x: math.gcd(12, 18) * x)(1.0), 6.0)
    with pytest.raises(symdiff.SymdiffError, match="takes integers"):
        symdiff.jit(lambda x: math.gcd(x, 4))(2.0)


# -- any, all ------------------------------------------------------------------------
def any_of(a, b):
    return any((a, b > 1, 0.0))


def all_of(a, b):
    return all([a, b > 1, 1.0])


def any_all_of_an_array(x):
    return float(any(x > 1.0)) + 2.0 * float(all(x > 0.0))


def test_any_and_all():
    points = [(0.0, 0.0), (0.0, 2.0), (math.nan, 0.0), (-0.0, 1.0), (1.0, 2.0)]
    check_values(any_of, points)
    check_values(all_of, points)
    for target in TARGETS:
        f = symdiff.jit(any_all_of_an_array, target=target)
        for x in ([0.5, 2.0], [-1.0, 0.5], [3.0, 4.0]):
            assert f(np.array(x)) == any_all_of_an_array(np.array(x))


# -- bitwise operators on ints -------------------------------------------------------
def bits_mix(x, n: int, m: int):
    ints = (n & m) + (n | m) * 3 + (n ^ m) - (n << 3) + (n >> 2) + (n >> m)
    return float(ints + (n << (m % 7))) * x


def test_bitwise_operators_on_ints():
    points = [(1.5, 12, 10), (1.5, -12, 5), (0.5, 7, 64), (2.0, -1, 70), (1.0, 5, 0)]
    for target in TARGETS:
        vg = symdiff.value_and_grad(bits_mix, target=target)
        for x, n, m in points:
            value = bits_mix(x, n, m)
            assert vg(x, n, m) == (value, value / x)
    # beyond 63 places: Python's int shifted out of int64 (0), or its sign
    shifts = symdiff.jit(lambda x, n: ((n << 64) + (n >> 200)) * x)
    assert shifts(1.0, -5) == -1.0
    xor = symdiff.jit(lambda x, y: ((x > 0) ^ (y > 0)) * x)
    assert xor(1.0, -1.0) == 1.0 and xor(1.0, 1.0) == 0.0
    inverted = symdiff.jit(lambda x, n: (~n) * x)
    assert inverted(2.0, 5) == -12.0
    with pytest.raises(symdiff.SymdiffError, match="takes integers"):
        symdiff.jit(lambda x: x & 1)(1.0)


# -- constants are not reassociated -----------------------------------------------
def test_constant_products_keep_their_rounding():
    def f(y):
        return 100.0 * (0.1 * y)

    def g(y):
        return 0.5 * (2.0 * y) + 3 * (5 * y)

    for target in TARGETS:
        assert same(symdiff.jit(f, target=target)(3.0), f(3.0))
        assert same(symdiff.jit(g, target=target)(3.0), g(3.0))
    assert "0.5" not in symdiff.jit(g).source  # powers of two still fold
