"""Functions written as users write them that once failed: infinite fills, masked
writes on one-element arrays, list-of-lists tables, divisions by an empty mask's
sum on the Python target, transforms made inside a traced function, wrappers with
their own parameters, and ``any``/``all`` over run-time generators."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import symdiff
from symdiff.errors import SymdiffError
from tests.checks import fd_derivative


def running_min_of_inf(x):
    R = np.full(3, np.inf)
    R[0] = x
    return min(R[0], R[1]) + min(R[1], R[2])


def test_infinite_fill_then_item_write():
    for target in ("cpu", "python"):
        assert symdiff.jit(running_min_of_inf, target=target)(1.0) == math.inf
        src = symdiff.jit(running_min_of_inf, target=target).source
        assert "np.inf" in src


def two_masked_writes(x):
    y = x.copy()
    m = x > 0
    y[m] = y[m] * 2.0
    y[m] = y[m] * 3.0
    return np.sum(y)


@pytest.mark.parametrize(
    ("x", "expected"),
    [([0.5, -1.0], [6.0, 1.0]), ([0.5], [6.0]), ([-0.5], [1.0])],
)
def test_masked_writes_on_short_arrays(x, expected):
    grad = symdiff.grad(two_masked_writes)(np.array(x))
    np.testing.assert_allclose(grad, expected)


def table_rows(x, n: int):
    T = [[0.0] * 3 for _ in range(n)]
    T[1][2] = x * x
    return T[1][2] + T[0][0]


def table_constant(x):
    T = [[0.0] * 3 for _ in range(2)]
    T[1][2] = x
    T[0][1] = 2.0 * x
    return T[1][2] * 2 + T[0][1] * T[1][2]


def test_list_of_lists_tables():
    assert symdiff.value_and_grad(table_rows)(1.5, 2) == pytest.approx((2.25, 3.0))
    assert symdiff.value_and_grad(table_rows)(1.5, 4) == pytest.approx((2.25, 3.0))
    value, grad = symdiff.value_and_grad(table_constant)(1.5)
    assert value == pytest.approx(table_constant(1.5))
    assert grad == pytest.approx(2.0 + 4.0 * 1.5)


def divide_by_positive_sum(x):
    y = x.copy()
    y[x > 0] /= np.sum(x[x > 0])
    return np.sum(y)


def sample_variance_of_positive(x):
    return np.var(x[x > 0], ddof=1)


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_empty_mask_divisions_follow_ieee(target):
    x = np.array([-1.0, -2.0])
    grad = symdiff.grad(divide_by_positive_sum, target=target)(x)
    np.testing.assert_array_equal(grad, [1.0, 1.0])
    with np.errstate(all="ignore"):
        value = symdiff.jit(sample_variance_of_positive, target=target)(x)
    assert math.isnan(value)
    x = np.array([1.0, -2.0, 3.0])
    eps = 1e-6
    fd = [
        (divide_by_positive_sum(x + eps * e) - divide_by_positive_sum(x - eps * e))
        / (2 * eps)
        for e in np.eye(3)
    ]
    np.testing.assert_allclose(
        symdiff.grad(divide_by_positive_sum, target=target)(x), fd, atol=1e-6
    )


def cube(x):
    return x**3


def grad_made_inside(x):
    return symdiff.grad(cube)(x) * x


def value_and_grad_made_inside(x, y):
    v, g = symdiff.value_and_grad(cube)(x)
    return v * y + g


def test_transforms_made_inside_a_traced_function():
    assert symdiff.jit(grad_made_inside)(2.0) == pytest.approx(24.0)
    assert symdiff.grad(grad_made_inside)(2.0) == pytest.approx(36.0)
    got = symdiff.grad(value_and_grad_made_inside, argnums=(0, 1))(1.5, 2.0)
    assert got == pytest.approx((3 * 1.5**2 * 2.0 + 6 * 1.5, 1.5**3))


def local_transform(x):
    return symdiff.grad(lambda a: a * a)(x)


def test_transform_of_a_local_function_is_reported():
    with pytest.raises(SymdiffError, match="defined inside the differentiated one"):
        symdiff.jit(local_transform)(1.0)


def with_scale(fn):
    @functools.wraps(fn)
    def wrapper(x, scale=3.0):
        return fn(x) * scale

    return wrapper


@with_scale
def scaled_square(x):
    return x**2


def uses_scaled(x):
    return scaled_square(x, scale=0.5) + scaled_square(x)


def test_wrapper_with_its_own_parameters():
    assert symdiff.jit(scaled_square)(2.0) == pytest.approx(12.0)
    assert symdiff.jit(scaled_square)(2.0, scale=2.0) == pytest.approx(8.0)
    assert symdiff.grad(uses_scaled)(2.0) == pytest.approx(14.0)


def any_all_run_time(x):
    big = any(v > 1 for v in x)
    bounded = all(x[i] > -5 for i in range(len(x)))
    return float(big) + float(bounded) * np.sum(x)


def fsum_run_time(x):
    return math.fsum(x[i] ** 2 for i in range(len(x)))


@pytest.mark.parametrize("x", [[0.5, 2.0], [0.5, -6.0], [0.1, 0.2], [], [7.0]], ids=str)
def test_any_all_of_run_time_generators(x):
    x = np.array(x)
    assert symdiff.jit(any_all_run_time)(x) == pytest.approx(any_all_run_time(x))
    if len(x):
        grad = symdiff.grad(any_all_run_time)(x)
        bounded = all(v > -5 for v in x)
        np.testing.assert_allclose(grad, np.full(len(x), float(bounded)))


def test_fsum_of_run_time_generator_is_reported():
    with pytest.raises(SymdiffError, match="needs the items at once"):
        symdiff.jit(fsum_run_time)(np.array([1.0, 2.0]))


MASK = np.array([True, False, True, True])


def constant_masks(x):
    picked = x[MASK]
    return np.sum(picked * x[[False, False, False, False]].sum()) + picked[1] ** 2


def constant_mask_columns(X):
    return np.sum(X[[True, False], :] ** 2) + np.sum(X[:, [True, False, True, True]])


def mask_of_wrong_length(x):
    return np.sum(x[[True, False]])


def test_constant_boolean_masks_select_positions():
    x = np.arange(1.0, 5.0)
    assert symdiff.jit(constant_masks)(x) == pytest.approx(constant_masks(x))
    np.testing.assert_allclose(symdiff.grad(constant_masks)(x), [0.0, 0.0, 6.0, 0.0])
    X = np.arange(8.0).reshape(2, 4)
    assert symdiff.jit(constant_mask_columns)(X) == pytest.approx(36.0)
    np.testing.assert_allclose(
        symdiff.grad(constant_mask_columns)(X), [[1, 2, 5, 7], [1, 0, 1, 1]]
    )
    with pytest.raises(SymdiffError, match="boolean index did not match"):
        symdiff.jit(mask_of_wrong_length)(x)


def checked_sqrt(x):
    if x < 0:
        raise ValueError("x must be >= 0")
    return math.sqrt(x)


@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_a_raise_in_a_parallel_vectorized_loop_is_the_users(target):
    for transform, expected in ((symdiff.jit, [1.0, 2.0]), (symdiff.grad, [0.5, 0.25])):
        batched = symdiff.vectorize(transform(checked_sqrt), target=target)
        np.testing.assert_allclose(batched(np.array([1.0, 4.0])), expected)
        with pytest.raises(ValueError, match="x must be >= 0"):
            batched(np.array([1.0, -1.0, 4.0]))
        late = np.ones(10_000)
        late[7_000] = -1.0  # in a worker thread's part of the array
        with pytest.raises(ValueError, match="x must be >= 0"):
            batched(late)


def moded(x, mode="a"):
    return x * 2 if mode == "a" else x


def test_a_numpy_string_is_a_static_argument():
    assert symdiff.jit(moded)(1.0, np.str_("a")) == 2.0
    assert symdiff.jit(moded)(1.0, np.str_("b")) == 1.0


def or_default(x, scale=None):
    scale = scale or 2.0
    return x * scale


def and_constant(x):
    return (x and 1.0) * 1.0


def old_ternary(x, y):
    return ((not (x < y) and 1.0) or 2.0) * x


def int_or(x, n: int):
    return x * ((n or 2) > 1)


def condition_or_number(x):
    return x * ((x > 1) or 5.0)


def operands(x, y):
    return (x or y) * 2 + (x and y)


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (or_default, (3.0, 5.0)),
        (or_default, (3.0,)),
        (or_default, (3.0, 0.0)),
        (and_constant, (0.0,)),
        (and_constant, (2.0,)),
        (old_ternary, (1.0, 2.0)),
        (old_ternary, (3.0, 2.0)),
        (int_or, (1.5, 0)),
        (int_or, (1.5, 1)),
        (condition_or_number, (2.0,)),
        (condition_or_number, (0.5,)),
        (operands, (0.0, 3.0)),
        (operands, (2.0, 3.0)),
    ],
)
def test_and_or_return_the_deciding_operand(fn, args):
    assert symdiff.jit(fn)(*args) == fn(*args)


def power(x, y):
    return x**y


@pytest.mark.parametrize("point", [(2.0, 0.0), (3.0, 1.5), (0.5, -1.0)])
def test_hessian_of_power_is_symmetric(point):
    x, y = point
    H = np.array(symdiff.hessian(power, argnums=(0, 1))(x, y))
    expected = [
        [y * (y - 1) * x ** (y - 2), x ** (y - 1) * (1 + y * math.log(x))],
        [x ** (y - 1) * (1 + y * math.log(x)), x**y * math.log(x) ** 2],
    ]
    np.testing.assert_allclose(H, expected, rtol=1e-12, atol=1e-15)


def factorial_times(x, n: int):
    return math.factorial(n) * x


def test_factorial_of_a_run_time_int_is_exact_to_17():
    for n in range(18):
        assert symdiff.jit(factorial_times)(1.0, n) == float(math.factorial(n))
    assert symdiff.jit(factorial_times)(1.0, 25) == pytest.approx(
        float(math.factorial(25)), rel=1e-15
    )


def tanh_dot(w, x):
    return np.tanh(w @ x)


tanh_dot_grad = symdiff.grad(tanh_dot)


def grad_at_computed_argument(w, x):
    return np.sum(tanh_dot_grad(w, 2.0 * x)) + np.sum(tanh_dot_grad(np.sin(w), x))


def quadratic(x, A):
    return 0.5 * x @ A @ x


quadratic_grad = symdiff.grad(quadratic)


def gradient_step(lr, x0, A):
    return np.sum(x0 - lr * quadratic_grad(x0, A))


def head_energy(x, n: int):
    return np.sum(x[:n] ** 2) + np.sum(np.zeros(n) + 1.0)


head_energy_grad = symdiff.grad(head_energy)


def uses_head_energy(y, x, n: int):
    return np.sum(head_energy_grad(x, n) * y)


def test_transforms_inside_take_callers_shapes_and_sizes():
    w = np.array([0.1, -0.4, 0.3])
    x = np.array([1.0, 2.0, -0.5])
    assert symdiff.jit(grad_at_computed_argument)(w, x) == pytest.approx(
        grad_at_computed_argument(w, x)
    )
    A = 2.0 * np.eye(3)
    assert symdiff.jit(gradient_step)(0.1, x, A) == pytest.approx(
        gradient_step(0.1, x, A)
    )
    g = symdiff.grad(gradient_step, argnums=(0, 1))(0.1, x, A)
    assert g[0] == pytest.approx(-np.sum(A @ x))
    np.testing.assert_allclose(g[1], 1.0 - 0.1 * A.sum(axis=0))
    x4 = np.array([1.0, 2.0, 3.0, 4.0])
    y4 = np.array([1.0, 1.0, 2.0, 3.0])
    for n in (0, 2, 4):
        assert symdiff.jit(uses_head_energy)(y4, x4, n) == pytest.approx(
            uses_head_energy(y4, x4, n)
        )


def heat(u0, kappa, steps):
    n = u0.shape[0]
    u = u0.copy()
    for _ in range(steps):
        lap = np.zeros(n)
        lap[1:-1] = u[2:] - 2 * u[1:-1] + u[:-2]
        u = u + kappa * lap
    return np.sum(u**2)


def test_slice_writes_in_loops_on_the_parallel_target():
    u0 = np.arange(40.0) ** 2 / 100
    expected = heat(u0, 0.2, 5)
    for _ in range(3):  # the miscompiled kernel varied from run to run
        assert symdiff.jit(heat, target="parallel")(u0, 0.2, 5) == pytest.approx(
            expected, rel=1e-12
        )
    g_cpu = symdiff.grad(heat, argnums=(0, 1))(u0, 0.2, 5)
    g_par = symdiff.grad(heat, argnums=(0, 1), target="parallel")(u0, 0.2, 5)
    np.testing.assert_allclose(g_par[0], g_cpu[0], rtol=1e-12)
    assert g_par[1] == pytest.approx(g_cpu[1], rel=1e-12)


def norms(x, X):
    return (
        np.linalg.norm(x, 1)
        + np.linalg.norm(x, np.inf)
        + np.linalg.norm(x, -np.inf)
        + np.linalg.norm(x, 3)
        + np.linalg.norm(x, ord=0)
        + np.linalg.norm(X, 1)
        + np.linalg.norm(X, np.inf)
        + np.linalg.norm(X, -1)
        + np.sum(np.linalg.norm(X, 1, axis=1))
        + np.sum(np.linalg.norm(X, np.inf, axis=0, keepdims=True))
        + np.linalg.norm(X, "fro")
        + np.sum(np.linalg.norm(X, axis=(1, 0), ord=1, keepdims=True))
    )


def ufunc_names(x, y):
    z = np.subtract(x, y) * np.multiply(x, 2.0) + np.divide(x, y) + np.power(x, 2)
    z = z + np.floor_divide(x, 0.3) * y + np.negative(x) + np.positive(y)
    return np.sum(np.add(z, np.true_divide(x, 2)))


def cleaned_log(x):
    return np.sum(np.nan_to_num(np.log(x) * x, nan=1.0, posinf=5.0) + x)


def heads(X, W, h: int):
    n, d = X.shape
    Q = (X @ W).reshape(n, h, d // h)
    s = np.einsum("ihd,jhd->hij", Q, Q) / np.sqrt(d // h)
    return np.sum(np.tanh(s))


def _fd_matrix(fn, X, *rest):
    """d fn / d X by central differences (tests/checks.py)."""
    return fd_derivative(fn, (X, *rest), 0)


def test_numpy_norm_orders_ufunc_names_nan_to_num_and_head_reshapes():
    x = np.array([0.5, -2.0, 1.5])
    X = np.array([[1.0, -2.0, 0.3], [0.4, 0.5, -3.0]])
    assert symdiff.jit(norms)(x, X) == pytest.approx(norms(x, X), rel=1e-12)
    gx, gX = symdiff.grad(norms, argnums=(0, 1))(x, X)
    np.testing.assert_allclose(gx, _fd_matrix(lambda v: norms(v, X), x), atol=1e-6)
    np.testing.assert_allclose(gX, _fd_matrix(lambda M: norms(x, M), X), atol=1e-6)
    y = np.array([1.5, 0.25, 0.7])
    assert symdiff.jit(ufunc_names)(x, y) == pytest.approx(ufunc_names(x, y))
    v = np.array([0.0, 2.0, -1.0])
    with np.errstate(all="ignore"):
        assert symdiff.jit(cleaned_log)(v) == pytest.approx(cleaned_log(v))
    rng = np.random.default_rng(0)
    Xh, Wh = rng.normal(size=(3, 4)), 0.5 * np.eye(4)
    assert symdiff.jit(heads)(Xh, Wh, 2) == pytest.approx(heads(Xh, Wh, 2))
    np.testing.assert_allclose(
        symdiff.grad(heads)(Xh, Wh, 2), _fd_matrix(heads, Xh, Wh, 2), atol=1e-6
    )
    with pytest.raises(SymdiffError, match="cannot reshape"):
        symdiff.jit(heads)(Xh, Wh, 3)


def affine(x, a=1.0, b=2.0):
    return a * x + b


def unpacked_options(x):
    opts = {"a": 2.0, "b": -1.0}
    return affine(x, **opts) + affine(x, **{"b": 0.5})


def returns_dict(x):
    return {"a": x}


def misspelled(x):
    return math.sinn(x)


def test_keyword_unpacking_and_messages():
    assert symdiff.jit(unpacked_options)(1.5) == pytest.approx(unpacked_options(1.5))
    assert symdiff.grad(unpacked_options)(1.5) == pytest.approx(3.0)
    with pytest.raises(SymdiffError, match="returns a dict"):
        symdiff.grad(returns_dict)(1.0)
    with pytest.raises(SymdiffError, match=r"did you mean `math.sin`\?"):
        symdiff.jit(misspelled)(1.0)


def stats(x, y):
    return {"sum": x + y, "prod": x * y}


def loss_with_aux(x, y):
    return x * y, {"acc": x - y}


def test_vectorize_keeps_dicts():
    x = np.array([1.0, 2.0])
    out = symdiff.vectorize(symdiff.jit(stats))(x, 2.0)
    assert set(out) == {"sum", "prod"}
    np.testing.assert_allclose(out["prod"], [2.0, 4.0])
    g, aux = symdiff.vectorize(symdiff.grad(loss_with_aux, has_aux=True))(x, 2.0)
    np.testing.assert_allclose(g, [2.0, 2.0])
    np.testing.assert_allclose(aux["acc"], [-1.0, 0.0])


def underscored(x, a_, a__):
    return x * a_ + a__


def test_parallel_loops_rename_underscored_parameters():
    batched = symdiff.vectorize(symdiff.grad(underscored), target="parallel")
    np.testing.assert_allclose(batched(np.ones(3), np.ones(3), np.ones(3)), 1.0)


def test_kernel_text_is_the_same_from_any_folder(monkeypatch, tmp_path):
    """Files are named relative to their project's root, not the working folder
    (a kernel's text is its cache key)."""
    here = symdiff.jit(cube).source
    monkeypatch.chdir(tmp_path)
    assert symdiff.jit(cube).source == here
    line = cube.__code__.co_firstlineno
    assert here.splitlines()[0].endswith(f"(tests/test_hunt_regressions.py:{line})")


def lennard_jones(r):
    n = r.shape[0]
    d = r[:, None, :] - r[None, :, :]
    r2 = np.sum(d**2, axis=-1)
    mask = ~np.eye(n, dtype=bool)
    inv6 = np.where(mask, 1.0 / np.where(mask, r2, 1.0) ** 3, 0.0)
    return 0.5 * np.sum(4 * (inv6**2 - inv6)) + np.sum(np.eye(n, dtype=int) * 1.0)


def signed_area(a, b, c):
    return 0.5 * np.cross(b - a, c - a)


def test_eye_of_a_dtype_and_cross_of_two_vectors():
    r = np.array([[0.0, 0.0], [1.1, 0.2], [0.3, 1.4]])
    assert symdiff.jit(lennard_jones)(r) == pytest.approx(lennard_jones(r))
    np.testing.assert_allclose(
        symdiff.grad(lennard_jones)(r), _fd_matrix(lennard_jones, r), atol=1e-6
    )
    with pytest.raises(SymdiffError, match=r"np.cross\(a\[:2\], b\[:2\]\)"):
        symdiff.jit(signed_area)(
            np.zeros(2), np.array([1.0, 0.0]), np.array([0.0, 1.0])
        )


def order_statistics(x):
    return np.median(x) + np.quantile(x, 0.3) + np.percentile(x, 90.0)


def order_statistics_along(X):
    return np.sum(np.median(X, axis=0)) + np.sum(np.quantile(X, 0.25, axis=1))


@pytest.mark.parametrize("n", [1, 5, 6])
def test_median_quantile_percentile(n):
    x = np.random.default_rng(n).normal(size=n)
    assert symdiff.jit(order_statistics)(x) == pytest.approx(order_statistics(x))
    np.testing.assert_allclose(
        symdiff.grad(order_statistics)(x), _fd_matrix(order_statistics, x), atol=1e-6
    )
    X = np.random.default_rng(n).normal(size=(4, 3))
    assert symdiff.jit(order_statistics_along)(X) == pytest.approx(
        order_statistics_along(X)
    )
    np.testing.assert_allclose(
        symdiff.grad(order_statistics_along)(X),
        _fd_matrix(order_statistics_along, X),
        atol=1e-6,
    )
    assert np.isnan(symdiff.jit(order_statistics)(np.array([1.0, np.nan, 3.0])))
