"""The public transforms: JAX's conventions, decorators, specialisation, inspection."""

import inspect
import linecache
import math
from math import exp as e_exp

import numpy as np
import pytest
import sympy

import symdiff
from tests import helpers_mod, module_names

OFFSET = 0.25


def f2(x, y):
    v = x * x
    return math.exp(math.sin(v) * math.log(v)) + y * v


def df2(x, y):
    v = x * x
    z = math.exp(math.sin(v) * math.log(v))
    dv = z * (math.cos(v) * math.log(v) + math.sin(v) / v) + y
    return dv * 2 * x, v


def test_grad_int_argnums_returns_a_float():
    g = symdiff.grad(f2)
    out = g(1.3, 0.5)
    assert isinstance(out, float)
    assert out == pytest.approx(df2(1.3, 0.5)[0], rel=1e-13)


def test_grad_tuple_argnums_returns_a_tuple():
    g = symdiff.grad(f2, argnums=(0, 1))
    out = g(1.3, 0.5)
    assert isinstance(out, tuple) and len(out) == 2
    assert out == pytest.approx(df2(1.3, 0.5), rel=1e-13)
    assert symdiff.grad(f2, argnums=(1,))(1.3, 0.5) == pytest.approx((1.69,))


def test_negative_argnums():
    assert symdiff.grad(f2, argnums=-1)(1.3, 0.5) == pytest.approx(1.69)


def test_value_and_grad():
    value, grads = symdiff.value_and_grad(f2, argnums=(0, 1))(1.3, 0.5)
    assert value == pytest.approx(f2(1.3, 0.5), rel=1e-15)
    assert grads == pytest.approx(df2(1.3, 0.5), rel=1e-13)


def with_aux(x, y):
    loss = x * y + x
    return loss, (x * 2.0, y)


def test_has_aux():
    grads, aux = symdiff.grad(with_aux, argnums=(0, 1), has_aux=True)(2.0, 3.0)
    assert grads == (4.0, 2.0)
    assert aux == (4.0, 3.0)
    (value, aux), g = symdiff.value_and_grad(with_aux, has_aux=True)(2.0, 3.0)
    assert value == 8.0 and aux == (4.0, 3.0) and g == 4.0


def test_decorator_forms():
    @symdiff.grad
    def a(x):
        return x**3

    @symdiff.grad()
    def b(x):
        return x**3

    @symdiff.grad(argnums=(0, 1))
    def c(x, y):
        return x**3 * y

    @symdiff.jit
    def d(x, y):
        return x * y + 1.0

    @symdiff.value_and_grad(argnums=1)
    def e(x, y):
        return x * y

    assert a(2.0) == b(2.0) == 12.0
    assert c(2.0, 1.0) == (12.0, 8.0)
    assert d(2.0, 3.0) == 7.0
    assert e(2.0, 3.0) == (6.0, 2.0)
    assert a.__name__ == "a" and a.__doc__ is None


def test_lambda():
    assert symdiff.grad(lambda x: x**2 + 3.0 * x)(1.0) == 5.0


def test_argument_types_share_kernels_per_signature():
    g = symdiff.grad(f2, argnums=(0, 1))
    expected = g(1.3, 0.5)
    assert g(np.float64(1.3), np.float64(0.5)) == pytest.approx(expected)
    assert g(np.float32(1.5), 0.5) == pytest.approx(g(1.5, 0.5))
    assert len(g._by_dtypes) == 1  # float, np.float64 and np.float32 share a kernel
    assert g(2, 1) == pytest.approx(g(2.0, 1.0))  # ints are differentiated as reals
    assert all(isinstance(v, float) for v in g(2, 1))


def int_power(x, n):
    return x**n


def test_int_arguments_not_differentiated_stay_ints():
    g = symdiff.grad(int_power)
    assert g(2.0, 3) == 12.0
    assert g(2.0, 5) == 80.0
    assert symdiff.jit(int_power)(3, 2) == 9


def test_zero_d_arrays_are_the_numbers_they_hold():
    # As NumPy scalars are: np.array(1.5) is 1.5 (not a "0-d array" error).
    g = symdiff.grad(f2, argnums=(0, 1))
    expected = g(1.5, 2.0)
    for x in (np.array(1.5), np.array(1.5, dtype=np.float32)):
        got = g(x, np.array(2.0))
        assert got == pytest.approx(expected, rel=1e-15)
        assert all(type(v) is float for v in got)
    one = symdiff.grad(f2)(np.array(1.5), 2.0)
    assert type(one) is float and one == expected[0]
    assert symdiff.grad(int_power)(np.array(2), np.array(3)) == 12.0  # n stays an int
    assert symdiff.jit(int_power)(np.array(3), np.array(2)) == 9
    assert symdiff.jvp(f2, (np.array(1.5), 2.0), (np.array(1.0), 0.0)) == (
        pytest.approx(f2(1.5, 2.0), rel=1e-15),
        pytest.approx(expected[0], rel=1e-15),
    )


def with_defaults(x, scale=2.0):
    return scale * x * x


def test_keywords_and_defaults():
    g = symdiff.grad(with_defaults)
    assert g(3.0) == 12.0
    assert g(3.0, scale=1.0) == 6.0
    assert g(x=3.0, scale=0.5) == 3.0


def uses_helpers(a, b):
    return helpers_mod.outer(a, b) + helpers_mod.SCALE * e_exp(a) + OFFSET


def test_helpers_from_other_modules_are_inlined():
    g = symdiff.value_and_grad(uses_helpers, argnums=(0, 1))
    a, b = sympy.symbols("a b", real=True)
    energy = sympy.Rational(1, 2) * (a - b) ** 2 + sympy.log(1 + sympy.exp(a * b))
    expr = sympy.sin(energy) * 3 + 3 * sympy.exp(a) + sympy.Rational(1, 4)
    point = {a: 0.7, b: -0.4}
    value, (ga, gb) = g(0.7, -0.4)
    assert value == pytest.approx(float(expr.subs(point)), rel=1e-13)
    assert ga == pytest.approx(float(sympy.diff(expr, a).subs(point)), rel=1e-12)
    assert gb == pytest.approx(float(sympy.diff(expr, b).subs(point)), rel=1e-12)


def make_closure(k):
    def f(x):
        return k * math.sin(x)

    return f


@pytest.mark.parametrize("target", ["python", "cpu", "parallel"])
def test_functions_named_like_the_generated_modules_globals(target):
    """A kernel is never named ``math``, ``np`` or ``numba``: its module
    imports those names."""
    x = 0.7
    assert symdiff.jit(module_names.math, target=target)(x) == pytest.approx(
        2.0 * math.sin(x), rel=1e-15
    )
    assert symdiff.grad(module_names.math, target=target)(x) == pytest.approx(
        2.0 * math.cos(x), rel=1e-15
    )
    assert symdiff.value_and_grad(module_names.np, target=target)(x) == pytest.approx(
        (math.exp(x) * x, math.exp(x) * (1.0 + x)), rel=1e-15
    )
    v = np.array([0.1, 0.2, 0.3])
    assert symdiff.jit(module_names.numba, target=target)(v) == pytest.approx(
        np.sum(np.sin(2.0 * v)), rel=1e-15
    )
    np.testing.assert_allclose(
        symdiff.grad(module_names.numba, target=target)(v),
        2.0 * np.cos(2.0 * v),
        rtol=1e-15,
    )
    assert "def math_jit(x):" in symdiff.jit(module_names.math).source


def test_closures_resolve_their_cells():
    assert symdiff.grad(make_closure(2.0))(0.0) == 2.0
    assert symdiff.grad(make_closure(5.0))(0.0) == 5.0


def constants(x):
    return math.pi * x + math.e + np.pi * OFFSET


def big_ints(x):
    return x * (10**20) / 10**19 + 2**70 * 0.0


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_ints_beyond_int64_are_floats(target):
    assert symdiff.value_and_grad(big_ints, target=target)(1.5) == (15.0, 10.0)


def test_module_constants():
    assert symdiff.grad(constants)(1.0) == pytest.approx(math.pi)
    assert symdiff.jit(constants)(1.0) == pytest.approx(constants(1.0))


COEFFS = [0.5, -1.0, 2.0]  # module-level list, array, nested list
WEIGHTS = np.array([1.0, 2.0, 3.0])
TABLE = [[1.0, 2.0], [3.0, 4.0]]
TOO_BIG = np.zeros(5000)
NAME = "horner"


def horner_globals(x, n):
    s = 0.0
    for i in range(n):  # a run-time index into a list of numbers
        s = s * x + COEFFS[i]
    a, b = TABLE[1]
    return s + np.sum(WEIGHTS * x) + WEIGHTS[2] * x * x + len(COEFFS) * a * b * x


def module_attribute_array(x):
    return np.sum(helpers_mod.WEIGHTS * x) + helpers_mod.WEIGHTS[1] * x[0]


def test_a_modules_array_read_as_an_attribute_is_a_constant_too():
    x = np.array([1.0, 2.0, 3.0])
    got = symdiff.grad(module_attribute_array, target="python")(x)
    np.testing.assert_array_equal(got, helpers_mod.WEIGHTS + np.array([-2.0, 0.0, 0.0]))


def too_big(x):
    return np.sum(TOO_BIG * x)


def indexes_a_string(x):
    return x * len(NAME[0])


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_module_lists_and_arrays_are_constants(target):
    """Their values when the transform is built, as JAX reads globals: lists of
    numbers as tuples (indexed at run time too), small arrays as arrays."""
    value, slope = symdiff.value_and_grad(horner_globals, target=target)(0.5, 3)
    assert value == horner_globals(0.5, 3)
    assert slope == pytest.approx(2 * 0.5 * 0.5 - 1.0 + 6.0 + 2 * 3.0 * 0.5 + 36.0)


def test_global_values_that_cannot_be_constants_are_named():
    with pytest.raises(symdiff.TranslationError, match="5000 elements") as exc:
        symdiff.grad(too_big)(1.0)
    assert "pass it as an argument" in str(exc.value)
    with pytest.raises(symdiff.TranslationError, match="a `str` cannot be indexed"):
        symdiff.grad(indexes_a_string)(1.0)


def test_source_is_deterministic_and_in_linecache():
    a = symdiff.value_and_grad(f2, argnums=(0, 1)).source
    b = symdiff.value_and_grad(f2, argnums=(0, 1)).source
    assert a == b
    g = symdiff.grad(f2)
    kernel = g.kernel
    assert inspect.getsource(kernel.python) == kernel.source.split("\n\n\n", 1)[1]
    # With the disk cache the kernel lives in a real module in the cache folder;
    # without it, under a synthetic name registered in linecache.
    filename = kernel.python.__code__.co_filename
    assert linecache.getline(filename, 1).startswith("# generated by symdiff")
    py = symdiff.grad(f2, target="python").kernel.python
    assert py.__code__.co_filename.startswith("<symdiff:")
    assert inspect.getsource(py).startswith("def f2_grad(x, y):")


def test_ir_listing():
    ir = symdiff.grad(f2).ir
    assert ir.splitlines()[0] == "%0 = param x : f64"
    assert "# v" in ir
    assert ir.splitlines()[-1].startswith("return x_bar = %")


def test_sympy_bridge():
    g = symdiff.grad(f2, argnums=(0, 1))
    gx, gy = g.to_sympy()
    x, y = sympy.symbols("x y", real=True)
    expected = sympy.diff(sympy.exp(sympy.sin(x**2) * sympy.log(x**2)) + y * x**2, x)
    assert float((gx - expected).subs({x: 1.3, y: 0.5})) == pytest.approx(0, abs=1e-12)
    assert sympy.simplify(gy - x**2) == 0
    tex = g.latex()
    assert r"\frac{\partial f2}{\partial x}" in tex
    assert r"\frac{\partial f2}{\partial y} = x^{2}" in tex


def test_python_target_matches_cpu():
    cpu = symdiff.grad(f2, argnums=(0, 1))(1.1, 0.3)
    py = symdiff.grad(f2, argnums=(0, 1), target="python")(1.1, 0.3)
    assert cpu == pytest.approx(py, rel=1e-15)


def test_exp_of_z_is_evaluated_once_and_cheap():
    def z(u):
        return math.exp(math.sin(u**2) * math.log(u**2))

    forward = symdiff.jit(z).op_counts["total"]
    both = symdiff.value_and_grad(z)
    assert both.op_counts["total"] <= 2.5 * forward
    assert both.source.count("math.exp(") == 1
    u = 1.7
    _, du = both(u)
    expected = (
        z(u) * (math.cos(u * u) * math.log(u * u) + math.sin(u * u) / (u * u)) * 2 * u
    )
    assert du == pytest.approx(expected, rel=1e-13)


def test_only_active_nodes_are_differentiated():
    def f(x, data):
        heavy = math.exp(math.sin(data) * math.cos(data))
        return x * heavy

    g = symdiff.grad(f)
    assert g.source.count("math.cos(") == 1  # no adjoint flows into `data`
    assert g(2.0, 0.3) == pytest.approx(math.exp(math.sin(0.3) * math.cos(0.3)))


def big_int_difference(x):
    return x * ((10**20 + 1) - 10**20)


def test_big_ints_fold_exactly():
    assert symdiff.value_and_grad(big_int_difference)(2.0) == (2.0, 1.0)
