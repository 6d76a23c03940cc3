"""symdiff.vectorize: scalar transforms as batched, broadcasting NumPy functions."""

import ast
import functools
import gc
import importlib
import inspect
import math
import subprocess
import sys

import numpy as np
import pytest

import symdiff
from symdiff.vectorize import vectorize
from tests.cuda_cases import numba, piecewise, safe_sqrt, z

# `symdiff.vectorize` is the function; the module is reached through the importer
vectorize_module = importlib.import_module("symdiff.vectorize")

TARGETS = ("cpu", "parallel")


def f2(x, y):
    v = x * x
    return math.exp(math.sin(v) * math.log(v)) + y * v


def df2(x, y):
    v = x * x
    z = np.exp(np.sin(v) * np.log(v))
    dv = z * (np.cos(v) * np.log(v) + np.sin(v) / v) + y
    return dv * 2 * x, v


def dpiecewise(x, y):
    with np.errstate(all="ignore"):
        return _dpiecewise(x, y)


def _dpiecewise(x, y):
    dx = np.where(
        x > 1.0, y / (x - 1.0), np.where(x < -1.0, -y / (x + 1.0) ** 2, 2 * x * y)
    )
    dy = np.where(x > 1.0, np.log(x - 1.0), np.where(x < -1.0, 1 / (x + 1.0), x * x))
    return dx, dy


def polar(r, t):
    return r * math.cos(t), r * math.sin(t)


def with_aux(x, y):
    return x * y + x, (x * 2.0, y)


def kinked(a, b):
    return max(a, 0.0) * abs(b) + min(a, b)


def leaves(value):
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in leaves(v)]
    return [value]


# The loops call glibc's SIMD transcendentals (libmvec, at most 4 ulp from the
# correctly rounded value) where the scalar kernel calls scalar libm (< 1 ulp):
# a loop's value of one function of the inputs is within a few ulp of the scalar
# kernel's, not always the same bits.
ULPS = 8 * np.finfo(float).eps


def assert_matches_scalar(vec, scalar, *arrays, rtol=1e-13):
    """``vec(*arrays)`` against the transform called element by element."""
    got = vec(*arrays)
    shape = np.broadcast_shapes(*(np.shape(a) for a in arrays))
    cols = [np.broadcast_to(a, shape).ravel() for a in arrays]
    want = [leaves(scalar(*vals)) for vals in zip(*cols)]
    got_leaves = leaves(got)
    for k, g in enumerate(got_leaves):
        assert np.shape(g) == shape
        w = np.array([row[k] for row in want], dtype=float)
        np.testing.assert_allclose(np.ravel(g), w, rtol=rtol, atol=0)
    assert all(len(row) == len(got_leaves) for row in want)
    return got


RNG = np.random.default_rng(7)
XS = RNG.uniform(-3.0, 3.0, 41)
YS = RNG.uniform(-2.0, 2.0, 41)


# -- correctness ----------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_grad_matches_scalar_calls_and_analytic(target):
    g = symdiff.grad(f2, argnums=(0, 1))
    vec = vectorize(g, target=target)
    x = np.abs(XS) + 0.1
    gx, gy = assert_matches_scalar(vec, g, x, YS)
    want_x, want_y = df2(x, YS)
    np.testing.assert_allclose(gx, want_x, rtol=1e-12)
    np.testing.assert_allclose(gy, want_y, rtol=1e-14)
    assert gx.dtype == np.float64 and gx.flags.c_contiguous


def test_value_and_grad_structure():
    vg = symdiff.value_and_grad(f2, argnums=(0, 1))
    x = np.abs(XS) + 0.1
    value, (gx, _) = assert_matches_scalar(vectorize(vg), vg, x, YS)
    np.testing.assert_allclose(value, [f2(a, b) for a, b in zip(x, YS)], rtol=1e-14)
    np.testing.assert_allclose(gx, df2(x, YS)[0], rtol=1e-12)


def test_value_and_grad_with_aux():
    vg = symdiff.value_and_grad(with_aux, argnums=(0, 1), has_aux=True)
    (value, (a0, a1)), (gx, gy) = vectorize(vg)(XS, YS)
    np.testing.assert_array_equal(value, XS * YS + XS)
    np.testing.assert_array_equal(a0, XS * 2.0)
    np.testing.assert_array_equal(a1, YS)
    np.testing.assert_array_equal(gx, YS + 1.0)
    np.testing.assert_array_equal(gy, XS)


def test_grad_int_argnums_gives_one_array():
    out = vectorize(symdiff.grad(z))(np.abs(XS) + 0.1)
    assert isinstance(out, np.ndarray) and out.shape == XS.shape


@pytest.mark.parametrize("target", TARGETS)
def test_branches_leak_no_nan(target):
    x = np.array([-4.0, -1.0, -0.0, 0.0, 1e-300, 0.25, 9.0])
    vg = symdiff.value_and_grad(safe_sqrt)
    value, grad = vectorize(vg, target=target)(x)
    assert not np.isnan(value).any() and not np.isnan(grad).any()
    np.testing.assert_array_equal(value, np.sqrt(np.maximum(x, 0.0)))
    pos = x > 0
    np.testing.assert_allclose(grad[pos], 0.5 / np.sqrt(x[pos]), rtol=ULPS)
    np.testing.assert_array_equal(grad[~pos], 0.0)


def test_piecewise_all_three_branches():
    g = symdiff.grad(piecewise, argnums=(0, 1))
    x = np.concatenate([XS, [1.0, -1.0, 1.5, -1.5]])
    y = np.resize(YS, x.shape)
    gx, gy = assert_matches_scalar(vectorize(g), g, x, y)
    assert not np.isnan(gx).any() and not np.isnan(gy).any()
    want_x, want_y = dpiecewise(x, y)
    np.testing.assert_allclose(gx, want_x, rtol=1e-13)
    np.testing.assert_allclose(gy, want_y, rtol=1e-13)


def test_kinks_follow_the_scalar_kernel():
    g = symdiff.grad(kinked, argnums=(0, 1))
    a = np.array([-1.0, 0.0, 0.0, 2.0, 1.0])
    b = np.array([0.5, 0.0, -1.0, -3.0, 1.0])
    assert_matches_scalar(vectorize(g), g, a, b, rtol=ULPS)


def test_jit_of_plain_function_and_of_compiled():
    got = vectorize(polar)(2.0, XS)
    assert isinstance(got, tuple) and len(got) == 2
    np.testing.assert_allclose(got[0], 2.0 * np.cos(XS), rtol=ULPS)
    np.testing.assert_allclose(got[1], 2.0 * np.sin(XS), rtol=ULPS)
    jitted = symdiff.jit(polar)
    assert_matches_scalar(vectorize(jitted), jitted, 2.0, XS, rtol=ULPS)


@pytest.mark.parametrize("target", TARGETS)
def test_jacobian_nested_structure(target):
    jac = symdiff.jacobian(polar, argnums=(0, 1))
    r = np.abs(XS)
    (drx, dtx), (dry, dty) = vectorize(jac, target=target)(r, YS)
    np.testing.assert_allclose(drx, np.cos(YS), rtol=ULPS)
    np.testing.assert_allclose(dtx, -r * np.sin(YS), rtol=ULPS)
    np.testing.assert_allclose(dry, np.sin(YS), rtol=ULPS)
    np.testing.assert_allclose(dty, r * np.cos(YS), rtol=ULPS)
    assert_matches_scalar(vectorize(jac, target=target), jac, r, YS, rtol=ULPS)


def test_hessian():
    h = symdiff.hessian(f2, argnums=(0, 1))
    x = np.abs(XS) + 0.1
    (_, hxy), (hyx, hyy) = assert_matches_scalar(vectorize(h), h, x, YS)
    np.testing.assert_allclose(hxy, 2 * x, rtol=ULPS)
    np.testing.assert_array_equal(hyy, 0.0)
    np.testing.assert_array_equal(hxy, hyx)


def test_python_target_transform_is_vectorized_with_numba():
    g = symdiff.grad(f2, argnums=(0, 1), target="python")
    x = np.abs(XS) + 0.1
    gx, _ = vectorize(g)(x, YS)
    np.testing.assert_allclose(gx, df2(x, YS)[0], rtol=1e-12)


# -- broadcasting ---------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_scalar_and_array(target):
    g = symdiff.grad(f2, argnums=(0, 1))
    vec = vectorize(g, target=target)
    x = np.abs(XS) + 0.1
    gx, gy = assert_matches_scalar(vec, g, x, 0.5)
    assert gx.shape == x.shape and gy.shape == x.shape
    assert "y0 = y[0]" in vec.source  # read once, not expanded
    gx, gy = assert_matches_scalar(vec, g, 1.25, YS)
    assert "x0 = x[0]" in vec.source


@pytest.mark.parametrize("target", TARGETS)
def test_row_and_column(target):
    g = symdiff.grad(f2, argnums=(0, 1))
    x = (np.abs(XS[:7]) + 0.1)[:, None]
    y = YS[None, :5]
    gx, _ = assert_matches_scalar(vectorize(g, target=target), g, x, y)
    assert gx.shape == (7, 5)
    np.testing.assert_allclose(gx, df2(x, y)[0], rtol=1e-12)


def test_three_dimensional_shapes():
    g = symdiff.value_and_grad(f2, argnums=(0, 1))
    x = RNG.uniform(0.1, 2.0, (2, 3, 4))
    y = RNG.uniform(-1.0, 1.0, (3, 1))
    value, (gx, gy) = assert_matches_scalar(vectorize(g), g, x, y)
    assert value.shape == gx.shape == gy.shape == (2, 3, 4)
    value, (gx, gy) = assert_matches_scalar(vectorize(g), g, x[:, :1, :], y[None])
    assert value.shape == (2, 3, 4)
    # size-1 arrays of any rank broadcast like scalars
    value, _ = vectorize(g)(np.full((1, 1, 1), 1.5), y)
    assert value.shape == (1, 3, 1)


def test_non_contiguous_fortran_and_other_dtypes():
    g = symdiff.grad(f2, argnums=(0, 1))
    vec = vectorize(g)
    base = RNG.uniform(0.1, 2.0, (6, 8))
    y = np.asfortranarray(RNG.uniform(-1, 1, (6, 8)))
    for x in (base[::2, ::3], base.T.copy().T, base.astype(np.float32)):
        gx, _ = assert_matches_scalar(vec, g, x, y[: x.shape[0], : x.shape[1]])
        assert gx.shape == x.shape
    # ints and lists are converted; inputs are left alone
    x = np.arange(1, 6)
    before = x.copy()
    gx, _ = vec(x, [0.5, 1.0, 1.5, 2.0, 2.5])
    np.testing.assert_allclose(gx, df2(x.astype(float), 0.5 + 0.5 * x - 0.5)[0])
    np.testing.assert_array_equal(x, before)


def test_same_shape_contiguous_float64_inputs_are_not_copied():
    a = np.linspace(0.0, 1.0, 10).reshape(2, 5)
    flat = vectorize_module._flat(a, (2, 5), np.float64, False)
    assert np.shares_memory(flat, a) and flat.shape == (10,)
    assert not np.shares_memory(
        vectorize_module._flat(a[:, ::2], (2, 3), np.float64, False), a
    )


def int_power(x, n, flag):
    out = x
    for _ in range(3):
        out = out * x
    return out * n if flag else out + n // 2


def test_int_and_bool_arguments_keep_their_kernel_dtypes():
    vec = vectorize(symdiff.jit(int_power))
    jitted = symdiff.jit(int_power)
    n = np.array([3, 4, 5])
    flag = np.array([True, False, True])
    out = vec(2, n, flag)
    assert out.dtype == np.int64  # the int64 kernel, as a scalar call would use
    np.testing.assert_array_equal(
        out, [jitted(2, int(a), bool(b)) for a, b in zip(n, flag)]
    )
    g = vectorize(symdiff.grad(int_power))  # x differentiated: float64
    got = g(np.array([1, 2]), n[:2], flag[:2])
    np.testing.assert_allclose(got, [4.0 * 3, 4.0 * 8])


def compare(x, y):
    return x > y, x * y


def test_bool_outputs():
    gt, prod = vectorize(compare)(XS, 0.0)
    assert gt.dtype == np.bool_
    np.testing.assert_array_equal(gt, XS > 0.0)
    np.testing.assert_array_equal(prod, XS * 0.0)


# -- 0-d and empty ------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_zero_dimensional_inputs_give_numpy_scalars(target):
    g = symdiff.grad(f2, argnums=(0, 1))
    gx, gy = vectorize(g, target=target)(1.3, np.array(0.5))
    assert isinstance(gx, np.float64) and np.ndim(gx) == 0
    assert (gx, gy) == pytest.approx(g(1.3, 0.5), rel=ULPS)


@pytest.mark.parametrize("target", TARGETS)
def test_empty_inputs(target):
    vg = vectorize(symdiff.value_and_grad(f2, argnums=(0, 1)), target=target)
    value, (gx, gy) = vg(np.empty(0), 1.0)
    assert value.shape == gx.shape == gy.shape == (0,)
    value, (gx, gy) = vg(np.empty((0, 3)), np.ones(3))
    assert value.shape == (0, 3) and gx.dtype == np.float64
    value, _ = vg(np.empty((4, 0)), np.ones((1, 1)))
    assert value.shape == (4, 0)


# -- the generated loop ---------------------------------------------------------------
def test_source_shows_the_loop_and_is_deterministic():
    g = symdiff.grad(f2, argnums=(0, 1))
    cpu = vectorize(g, target="cpu")
    par = vectorize(g, target="parallel")
    assert cpu.source == (
        f"# generated by symdiff {symdiff.__version__}: vectorize(target='cpu') of "
        "`f2_grad`\n"
        "# one call of `f2_grad` per element; the output arrays are preallocated\n"
        "\n"
        "\n"
        "def f2_grad_cpu(x, y, x_bar, y_bar):\n"
        "    for i in range(x_bar.shape[0]):\n"
        "        x_bar[i], y_bar[i] = f2_grad(x[i], y[i])\n"
    )
    assert "import numba" in par.source
    assert "for i in numba.prange(x_bar.shape[0]):" in par.source
    again = symdiff.grad(f2, argnums=(0, 1))
    assert vectorize(again, target="parallel").source == par.source
    # registered like the kernels: inspect and tracebacks see the generated text
    assert inspect.getsource(cpu.python) == cpu.source.split("\n\n\n")[1]
    assert cpu.kernel is g._kernel(("float64", "float64"))


def test_nested_outputs_in_source():
    src = vectorize(symdiff.jacobian(polar, argnums=(0, 1))).source
    assert (
        "(dout0_dr[i], dout0_dt[i]), (dout1_dr[i], dout1_dt[i]) = "
        "polar_jacobian(r[i], t[i])"
    ) in src


def clash(i, numba, x_bar):
    return i * numba * x_bar


def identity_twice(x):
    return (x,), x


def test_outputs_named_like_arguments():
    vec = vectorize(identity_twice)
    (a,), b = vec(XS)
    np.testing.assert_array_equal(a, XS)
    np.testing.assert_array_equal(b, XS)
    assert "(x_out[i],), x_out_[i] = identity_twice(x[i])" in vec.source


def builtin_names(x, abs, range):
    return x * abs + range


@pytest.mark.parametrize("target", TARGETS)
def test_parameters_and_functions_named_like_builtins(target):
    vec = vectorize(symdiff.grad(builtin_names, argnums=(0, 1, 2)), target=target)
    # renamed with a number on "parallel" (Numba's parallel lowering can make
    # `a_` and `a__` one name), with an underscore elsewhere
    renamed = "abs2, range2" if target == "parallel" else "abs_, range_"
    assert f"(x, {renamed}, x_bar, abs_bar, range_bar)" in vec.source
    gx, ga, gr = vec(XS, YS, 2.0)
    np.testing.assert_array_equal(gr, 1.0)
    np.testing.assert_array_equal(gx, YS)
    np.testing.assert_array_equal(ga, XS)
    # a kernel named like a module the loop imports is called by another name
    vec = vectorize(symdiff.jit(numba), target=target)
    assert "= numba_jit(x[i])" in vec.source
    np.testing.assert_allclose(vec(XS), XS * XS, rtol=ULPS)


def test_names_that_clash_with_the_loop_are_renamed():
    vec = vectorize(symdiff.grad(clash, argnums=(0, 1, 2)), target="parallel")
    assert (
        "def clash_grad_parallel(i2, numba2, x_bar, i_bar, numba_bar, x_bar_bar)"
        in vec.source
    )
    gi, gn, _ = vec(np.arange(3.0), 2.0, 3.0)
    np.testing.assert_array_equal(gi, [6.0, 6.0, 6.0])
    np.testing.assert_array_equal(gn, 3.0 * np.arange(3.0))


def test_loops_are_cached_per_kernel_and_target_and_dropped_with_the_kernel():
    g = symdiff.grad(f2, argnums=(0, 1))
    a, b = vectorize(g), vectorize(g)
    a(XS, YS)
    b(XS, YS)
    assert a._current()[1] is b._current()[1]
    assert vectorize(g, target="parallel")._current()[1] is not a._current()[1]
    key = id(g._kernel(("float64", "float64")))
    assert key in vectorize_module._LOOPS
    del g, a, b
    gc.collect()
    assert key not in vectorize_module._LOOPS


def test_decorator_forms_and_keywords():
    @symdiff.vectorize
    def area(w, h):
        return w * h

    @symdiff.vectorize(target="cpu")
    def perimeter(w, h=1.0):
        return 2.0 * (w + h)

    np.testing.assert_array_equal(area(XS, h=2.0), XS * 2.0)
    np.testing.assert_array_equal(perimeter(XS), 2.0 * (XS + 1.0))
    assert area.__name__ == "area" and "area" in repr(area)
    assert vectorize(area).transform is area.transform


# -- Dask -----------------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_dask_arrays_give_dask_arrays_chunk_by_chunk(target):
    da = pytest.importorskip("dask.array")
    vg = vectorize(symdiff.value_and_grad(f2, argnums=(0, 1)), target=target)
    x = da.from_array(XS, chunks=10)
    value, (gx, gy) = vg(x, YS[0])
    assert all(isinstance(a, da.Array) for a in (value, gx, gy))
    assert gx.chunks == ((10, 10, 10, 10, 1),)
    assert_close_all((value, (gx, gy)), vg(XS, YS[0]))
    # chunks that differ between arguments are unified; shapes broadcast
    y = da.from_array(YS, chunks=15)
    gx, gy = vectorize(symdiff.grad(f2, argnums=(0, 1)), target=target)(x, y)
    assert_close_all((gx, gy), vectorize(symdiff.grad(f2, argnums=(0, 1)))(XS, YS))
    grid = vectorize(symdiff.grad(f2), target=target)(x[:, None], y[None, :5])
    assert grid.shape == (41, 5) and isinstance(grid, da.Array)
    assert_close_all(
        grid.compute(), vectorize(symdiff.grad(f2))(XS[:, None], YS[None, :5])
    )


def test_dask_one_output_in_a_tuple_and_list_arguments():
    da = pytest.importorskip("dask.array")
    vec = vectorize(symdiff.grad(f2, argnums=(0,)))
    (gx,) = vec(da.from_array(XS, chunks=7), list(YS))
    assert isinstance(gx, da.Array) and gx.shape == XS.shape
    assert_close_all(gx.compute(), vec(XS, YS)[0])


def test_dask_arrays_of_the_wrong_dtype():
    da = pytest.importorskip("dask.array")
    with pytest.raises(symdiff.ArgumentError, match="`x` of `f2` has complex"):
        vectorize(symdiff.grad(f2))(da.from_array(XS + 1j), 1.0)


def assert_close_all(got, want):
    # chunks run the SIMD loop body and its scalar remainder on other elements
    for g, w in zip(leaves(got), leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-13)


def test_decorated_functions_pickle_by_reference():
    import pickle

    from tests import helpers_mod

    for obj in (helpers_mod.decorated_grad, helpers_mod.decorated_vectorized):
        assert pickle.loads(pickle.dumps(obj)) is obj
    assert pickle.loads(pickle.dumps(symdiff.grad(helpers_mod.clipped)))(3.0) == 1.0


def test_transforms_and_vectorized_functions_pickle():
    import pickle

    g = symdiff.grad(f2, argnums=(0, 1), target="parallel")
    again = pickle.loads(pickle.dumps(g))
    assert again(1.3, 0.4) == g(1.3, 0.4)
    vec = pickle.loads(pickle.dumps(vectorize(g)))
    assert vec.target == "parallel"
    assert_close_all(vec(XS, YS), vectorize(g)(XS, YS))


MAIN_SCRIPT = """
import math, sys
import cloudpickle
import symdiff

SCALE = 2.0

def helper(u):
    return math.sin(u) * SCALE

def f(x, y):
    return helper(x * y) + math.exp(-x)

g = symdiff.grad(f, argnums=(0, 1))
vec = symdiff.vectorize(symdiff.value_and_grad(lambda u: helper(u) ** 2))
with open(sys.argv[1], "wb") as out:
    cloudpickle.dump((g, vec), out)
"""

LOAD_SCRIPT = """
import pickle, sys
import numpy as np
with open(sys.argv[1], "rb") as src:
    g, vec = pickle.load(src)
print(repr(g(1.3, 0.4)))
value, slope = vec(np.array([0.5, 1.5]))
print(repr(value.tolist()))
print(repr(slope.tolist()))
"""


def test_transforms_of_main_functions_pickle_by_value(tmp_path):
    """Dask pickles tasks with cloudpickle, which carries a function of __main__
    (and its helpers) by value and, since 3.1.3, without its file's name: the
    transform ships the source, so a process without the file still builds it."""
    pytest.importorskip("cloudpickle")
    from tests.fresh_process import project

    work, env = project(
        tmp_path, {"main_script.py": MAIN_SCRIPT, "load.py": LOAD_SCRIPT}
    )
    blob = tmp_path / "transforms.pkl"
    run = functools.partial(
        subprocess.run, env=env, capture_output=True, text=True, timeout=120
    )
    made = run([sys.executable, str(work / "main_script.py"), str(blob)])
    assert made.returncode == 0, made.stderr
    (work / "main_script.py").unlink()  # the loading process cannot read it
    loaded = run([sys.executable, str(work / "load.py"), str(blob)], cwd=tmp_path)
    assert loaded.returncode == 0, loaded.stderr
    x, y = 1.3, 0.4
    slope = 2.0 * math.cos(x * y)
    want = (slope * y - math.exp(-x), slope * x)
    got = ast.literal_eval(loaded.stdout.splitlines()[0])
    np.testing.assert_allclose(got, want, rtol=1e-14)
    values, slopes = map(ast.literal_eval, loaded.stdout.splitlines()[1:3])
    u = np.array([0.5, 1.5])
    np.testing.assert_allclose(values, (2.0 * np.sin(u)) ** 2, rtol=1e-14)
    np.testing.assert_allclose(slopes, 8.0 * np.sin(u) * np.cos(u), rtol=1e-13)


# -- errors ---------------------------------------------------------------------------
def test_unknown_target():
    with pytest.raises(symdiff.ArgumentError, match=r"unknown target 'gpu'.*'cpu'"):
        vectorize(z, target="gpu")


def test_non_numeric_inputs():
    vec = vectorize(symdiff.grad(f2, argnums=(0, 1)))
    with pytest.raises(
        symdiff.ArgumentError, match="argument `y` of `f2` is an array of strings"
    ):
        vec(XS, np.array(["a"]))
    # one string is a static argument, as in a call of the transform
    with pytest.raises(symdiff.ArgumentError, match="respect to `y`: it is a `str`"):
        vec(XS, "a")
    with pytest.raises(symdiff.ArgumentError, match="`x` of `f2` has complex numbers"):
        vec(XS + 1j, 1.0)
    with pytest.raises(symdiff.ArgumentError, match="`x` of `f2` has dtype object"):
        vec(object(), 1.0)
    with pytest.raises(symdiff.ArgumentError, match="`x` of `f2` is not an array"):
        vec([[1.0], [1.0, 2.0]], 1.0)


def test_shapes_that_do_not_broadcast():
    vec = vectorize(symdiff.grad(f2, argnums=(0, 1)))
    with pytest.raises(symdiff.ArgumentError) as info:
        vec(np.ones(3), np.ones((2, 4)))
    assert str(info.value) == (
        "the arguments of `f2` cannot be broadcast together: "
        "`x` has shape (3,), `y` has shape (2, 4)"
    )


def test_wrong_number_of_arguments():
    vec = vectorize(symdiff.grad(f2, argnums=(0, 1)))
    with pytest.raises(symdiff.ArgumentError, match=r"f2\(x, y\): missing .* 'y'"):
        vec(XS)
    with pytest.raises(symdiff.ArgumentError, match="too many positional"):
        vec(XS, XS, XS)


def test_bad_functions_and_bool_differentiation():
    with pytest.raises(symdiff.ArgumentError, match="expects a function"):
        vectorize(3.0)
    with pytest.raises(
        symdiff.ArgumentError, match="with respect to `flag`: it is a bool"
    ):
        vectorize(symdiff.grad(int_power, argnums=2))(1.0, 2, np.array([True]))


# -- static arguments -----------------------------------------------------------------
def with_mode(x, mode="sq"):
    return x * x if mode == "sq" else 3.0 * x


def with_weight(x, w=None):
    return x * x if w is None else w * x


@pytest.mark.parametrize("target", TARGETS)
def test_a_static_default_that_is_not_passed(target):
    xs = np.array([1.0, 2.0])
    np.testing.assert_array_equal(
        vectorize(symdiff.grad(with_mode), target=target)(xs), 2 * xs
    )
    np.testing.assert_array_equal(
        vectorize(symdiff.grad(with_weight), target=target)(xs), 2 * xs
    )


@pytest.mark.parametrize("target", TARGETS)
def test_a_string_passed_is_static_and_numbers_are_batched(target):
    xs = np.array([1.0, 2.0])
    vec = vectorize(symdiff.value_and_grad(with_mode), target=target)
    value, slope = vec(xs, "lin")
    np.testing.assert_array_equal(value, 3 * xs)
    np.testing.assert_array_equal(slope, [3.0, 3.0])
    np.testing.assert_array_equal(vec(xs, mode="sq")[1], 2 * xs)
    weighted = vectorize(symdiff.grad(with_weight), target=target)
    np.testing.assert_array_equal(weighted(xs, 4.0), [4.0, 4.0])
    np.testing.assert_array_equal(weighted(xs, np.array([4.0, 5.0])), [4.0, 5.0])
    np.testing.assert_array_equal(weighted(xs, None), 2 * xs)


def test_the_loop_takes_no_static_argument():
    vec = vectorize(symdiff.grad(with_mode))
    before = vec.source  # the default, before any call
    vec(np.array([1.0]), "lin")
    for source in (before, vec.source):
        assert "def with_mode_grad_cpu(x, x_bar):" in source
        assert "x_bar[i] = with_mode_grad(x[i], 0)" in source
        assert "# static (the kernel is specialised to it; 0 is passed in its " in (
            source
        )


def test_static_arguments_with_dask():
    da = pytest.importorskip("dask.array")
    xs = np.arange(6.0)
    vec = vectorize(symdiff.grad(with_mode))
    got = vec(da.from_array(xs, chunks=2), "lin")
    np.testing.assert_array_equal(got.compute(), np.full(6, 3.0))
    np.testing.assert_array_equal(vec(da.from_array(xs, chunks=2)).compute(), 2 * xs)


def test_an_array_of_strings_is_refused():
    vec = vectorize(symdiff.grad(with_mode))
    with pytest.raises(symdiff.ArgumentError) as info:
        vec(np.array([1.0, 2.0]), np.array(["sq", "lin"]))
    assert str(info.value) == (
        "argument `mode` of `with_mode` is an array of strings (<U3); a string is "
        "a static argument, which configures the function (the kernel is "
        "specialised to it): pass one string, and call once per string"
    )
    with pytest.raises(symdiff.ArgumentError, match="cannot differentiate"):
        vectorize(symdiff.grad(with_mode, argnums=1))(np.array([1.0]), "lin")


def test_static_arguments_on_cuda():
    """In Numba's CUDA simulator unless SYMDIFF_TEST_GPU=1: the CUDA kernel takes
    no array for a static argument either."""
    pytest.importorskip("numba.cuda")
    xs = np.array([1.0, 2.0])
    vec = vectorize(symdiff.grad(with_mode), target="cuda")
    np.testing.assert_array_equal(vec(xs), 2 * xs)
    np.testing.assert_array_equal(vec(xs, "lin"), [3.0, 3.0])
    assert "def with_mode_grad_cuda(x, x_bar):" in vec.source


# -- out= ----------------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_out_receives_the_results_and_is_returned(target):
    vec = vectorize(symdiff.grad(f2, argnums=(0, 1)), target=target)
    x = RNG.uniform(0.5, 2.0, (3, 4))
    want = vec(x, 0.7)
    gx, gy = np.full((3, 4), np.nan), np.full((3, 4), np.nan)
    got = vec(x, 0.7, out=(gx, gy))
    assert got[0] is gx and got[1] is gy
    np.testing.assert_array_equal(gx, want[0])
    np.testing.assert_array_equal(gy, want[1])
    # one output: the array itself, or a one-element tuple
    one = np.empty((3, 4))
    assert vectorize(symdiff.grad(f2), target=target)(x, 0.7, out=one) is one
    np.testing.assert_array_equal(one, want[0])
    vectorize(symdiff.grad(f2), target=target)(x, 0.7, out=[np.zeros((3, 4))])


def test_out_in_place_strided_cast_and_broadcast():
    g = vectorize(symdiff.grad(f2))
    x = RNG.uniform(0.5, 2.0, 6)
    want = g(x, 0.3)
    # (aliased, strided or of another length, the loop may take the scalar libm
    # path or another SIMD split than `want`'s: equal within a few ulp, see ULPS)
    same = x.copy()  # the argument itself: each element is read before written
    assert g(same, 0.3, out=same) is same
    np.testing.assert_allclose(same, want, rtol=ULPS, atol=0)
    # shifted onto its own argument: computed apart, then copied
    z = np.concatenate([[9.0], x])
    g(z[1:], 0.3, out=z[:-1])
    np.testing.assert_allclose(z[:-1], want, rtol=ULPS, atol=0)
    # every other element; float32 (same_kind cast); a larger shape
    strided = np.zeros(12)
    g(x, 0.3, out=strided[::2])
    np.testing.assert_allclose(strided[::2], want, rtol=ULPS, atol=0)
    assert not strided[1::2].any()
    single = np.empty(6, np.float32)
    g(x, 0.3, out=single)
    np.testing.assert_allclose(single, want.astype(np.float32), rtol=1e-7)
    rows = np.empty((2, 6))
    g(x, 0.3, out=rows)
    np.testing.assert_allclose(rows, [want, want], rtol=ULPS, atol=0)
    scalar = np.empty(())
    assert g(1.5, 0.3, out=scalar) is scalar
    assert scalar[()] == g(1.5, 0.3)


def test_out_keeps_the_result_structure():
    def pair(x):
        return {"a": x + 1.0, "b": 2.0 * x}

    vec = vectorize(symdiff.jit(pair))
    a, b = np.empty(3), np.empty(3)
    got = vec(np.arange(3.0), out=(a, b))
    assert got["a"] is a and got["b"] is b
    np.testing.assert_array_equal(b, [0.0, 2.0, 4.0])


def test_a_parameter_named_out_is_the_functions():
    def scaled(x, out):
        return x * out

    np.testing.assert_array_equal(
        vectorize(symdiff.jit(scaled))(np.arange(3.0), out=2.0), [0.0, 2.0, 4.0]
    )


@pytest.mark.parametrize(
    ("out", "message"),
    [
        (np.empty(4), r"out= of `f2` has shape \(4,\), but the arguments broadcast"),
        ((np.empty(5),), r"out= of `f2` has 1 array\(s\); its result has 2"),
        ([1.0, 2.0], r"out\[0\] of `f2` is a `float`, not an array"),
        ((np.empty(5), np.empty(6)), "have different shapes"),
        ((np.empty(5, int), np.empty(5)), "dtype int64, which the result"),
    ],
)
def test_out_errors(out, message):
    vec = vectorize(symdiff.grad(f2, argnums=(0, 1)))
    with pytest.raises(symdiff.ArgumentError, match=message):
        vec(np.linspace(0.5, 1.5, 5), 0.3, out=out)


def test_out_read_only_and_dask():
    vec = vectorize(symdiff.grad(f2))
    frozen = np.empty(5)
    frozen.flags.writeable = False
    with pytest.raises(symdiff.ArgumentError, match="read-only"):
        vec(np.linspace(0.5, 1.5, 5), 0.3, out=frozen)
    da = pytest.importorskip("dask.array")
    with pytest.raises(symdiff.ArgumentError, match="with Dask arrays"):
        vec(da.ones(5, chunks=2), 0.3, out=np.empty(5))
