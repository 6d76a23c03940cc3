"""JAX's conventions and Python's, where they once differed: negative argnums
count the call's arguments, jvp/vjp/hvp see a changed global, dicts and None
pass through a run-time ``if``, np.uint64 beyond int64 is refused, and some
NumPy helpers and messages."""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import pytest

import symdiff
from symdiff.errors import ArgumentError, OutputError, SymdiffError


def f(x, y, z=1.5):
    return x * y**2 * z**3


def test_negative_argnums_count_the_calls_arguments():
    assert symdiff.grad(f, argnums=-1)(0.3, 0.5) == pytest.approx(1.0125)  # d/dy
    assert symdiff.grad(f, argnums=-1)(0.3, 0.5, z=2.0) == pytest.approx(2.4)
    assert symdiff.grad(f, argnums=-1)(0.3, 0.5, 2.0) == pytest.approx(0.9)  # d/dz
    assert symdiff.hessian(f, argnums=-1)(0.3, 0.5) == pytest.approx(2.025)
    assert symdiff.grad(f, argnums=(-2, -1))(0.3, 0.5) == pytest.approx(
        (0.84375, 1.0125)
    )
    with pytest.raises(ArgumentError, match="out of range for a call of `f` with 2"):
        symdiff.grad(f, argnums=-3)(0.3, 0.5)
    with pytest.raises(ArgumentError, match="besides the 1 bound to it"):
        symdiff.grad(functools.partial(f, 2.0), argnums=-3)


K = 2.0


def scaled(x):
    return K * x**2


class Scale:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return self.k * x**2


def test_jvp_vjp_and_hvp_see_a_changed_global_and_attribute():
    global K
    try:
        assert symdiff.jvp(scaled, (1.0,), (1.0,)) == (2.0, 4.0)
        K = 5.0
        assert symdiff.jvp(scaled, (1.0,), (1.0,)) == (5.0, 10.0)
        out, pullback = symdiff.vjp(scaled, 1.0)
        assert (out, pullback(1.0)) == (5.0, (10.0,))
        assert symdiff.hvp(scaled, (1.0,), (1.0,)) == (10.0,)
    finally:
        K = 2.0
    s = Scale(2.0)
    assert symdiff.jvp(s, (1.0,), (1.0,)) == (2.0, 4.0)
    s.k = 5.0
    assert symdiff.jvp(s, (1.0,), (1.0,)) == (5.0, 10.0)


def loss_with_aux(x):
    if x > 0:
        return x * x, {"side": 1.0, "v": x}
    return -x, {"side": -1.0, "v": 2 * x}


def dict_in_branches(x):
    if x > 0:
        d = {"a": x}
    else:
        d = {"a": -x}
    return d["a"] * 3.0


def dicts_of_other_keys(x):
    if x > 0:
        d = {"a": x}
    else:
        d = {"b": x}
    return d


def appended_on_each_path(x):
    ys = []
    if x > 0:
        ys.append(x)
    else:
        ys.append(-x)
    return ys[0] * 2.0


def appended_on_one_path(x):
    ys = [1.0]
    if x > 0:
        ys.append(x)
    return ys[0]


def none_or_array(x, t):
    w = None
    if t > 0:
        w = x * 2.0
    if w is None:
        return np.sum(x)
    return np.sum(w * x)


def test_dicts_lists_and_none_through_a_run_time_if():
    value, g = symdiff.value_and_grad(loss_with_aux, has_aux=True)(-0.5)
    assert value == (0.5, {"side": -1.0, "v": -1.0}) and g == -1.0
    assert symdiff.grad(dict_in_branches)(-0.5) == -3.0
    assert symdiff.grad(appended_on_each_path)(-0.5) == -2.0
    x = np.arange(3.0)
    np.testing.assert_array_equal(symdiff.grad(none_or_array)(x, 1.0), 4.0 * x)
    np.testing.assert_array_equal(symdiff.grad(none_or_array)(x, -1.0), [1.0] * 3)
    with pytest.raises(SymdiffError, match="dicts of different keys"):
        symdiff.jit(dicts_of_other_keys)(1.0)
    with pytest.raises(SymdiffError, match=r"different lengths \(2 and 1 items\)"):
        symdiff.jit(appended_on_one_path)(1.0)


def half(n):
    return n // 2


def test_uint64_beyond_int64_is_refused_on_every_call():
    j = symdiff.jit(half)
    assert j(np.uint64(5)) == 2
    with pytest.raises(ArgumentError, match="does not fit in int64"):
        j(np.uint64(2**63))
    assert j(np.uint64(2**63 - 1)) == 2**62 - 1


def numpy_helpers(x):
    y = np.copy(x)
    y[0] = 5.0
    n = np.size(x) + np.ndim(x) + np.shape(x)[0] + np.size(x, 0)
    return np.sum(y * x) * n + x[0]


def filled_views(X):
    Y = X.copy()
    Y[1].fill(2.0)
    Y[:, 0].fill(X[0, 0] * 3.0)
    return np.sum(Y * X)


def test_np_copy_shape_ndim_size_and_filled_views():
    x = np.arange(1.0, 4.0)
    assert symdiff.value_and_grad(numpy_helpers)(x)[0] == numpy_helpers(x)
    np.testing.assert_array_equal(symdiff.grad(numpy_helpers)(x), [51.0, 40.0, 60.0])
    X = np.arange(1.0, 7.0).reshape(2, 3)
    value, g = symdiff.value_and_grad(filled_views)(X)
    assert value == filled_views(X)
    np.testing.assert_array_equal(g, [[18.0, 4.0, 6.0], [3.0, 2.0, 2.0]])


def vec(x):
    return x * 2.0


def float_index(x, i):
    return x[i] ** 2


def running_max(x):
    return np.sum(np.maximum.accumulate(x))


def changes_outer(x):
    def h():
        nonlocal x
        x = x * 2

    h()
    return x


def integral(a):
    import scipy.integrate

    return scipy.integrate.quad(lambda t: math.exp(-a * t * t), 0.0, 1.0)[0]


def test_messages():
    with pytest.raises(OutputError, match=r"^hessian needs `vec`"):
        symdiff.hessian(vec)(np.ones(3))
    with pytest.raises(SymdiffError, match="this one is a float") as info:
        symdiff.grad(float_index, argnums=(0, 1))(np.ones(3), 1)
    assert "leave it out of argnums" in str(info.value)
    with pytest.raises(SymdiffError, match=r"`np\.maximum\.accumulate` \(a method"):
        symdiff.grad(running_max)(np.ones(3))
    with pytest.raises(SymdiffError, match="`nonlocal` declarations"):
        symdiff.grad(changes_outer)(1.0)
    pytest.importorskip("scipy")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning from inside SciPy's source
        with pytest.raises(SymdiffError, match="cannot differentiate library"):
            symdiff.grad(integral)(1.0)


def late_bound(x):
    fs = [lambda t: t * k for k in range(3)]
    return fs[0](x)


def bound_early(x):
    fs = [lambda t, k=k: t * k for k in range(3)]
    return fs[1](x) + fs[2](x)


def test_a_comprehension_variable_read_by_a_function_it_made():
    with pytest.raises(SymdiffError, match="late binding") as info:
        symdiff.grad(late_bound)(1.5)
    assert "`lambda t, k=k: ...`" in str(info.value)
    assert symdiff.grad(bound_early)(1.5) == 3.0
