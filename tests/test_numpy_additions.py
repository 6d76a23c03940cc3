"""NumPy functions added after a hunt for what users write and symdiff refused:
``np.argmax``/``argmin`` (used as indices), ``np.swapaxes``/``moveaxis``,
``np.sort``/``argsort`` (the one new op, ``argsort``), ``np.convolve``/
``correlate``, ``np.tensordot``, ``np.max``/``min`` of empty arrays (an error
when the kernel runs, as NumPy raises) and ``initial=``, ``np.isclose``/
``allclose``, ``x.item()``, ``np.expand_dims`` with a tuple, ``np.interp``,
``np.pad``, ``np.meshgrid``, ``np.cov``/``corrcoef``.

Every function is ordinary user code at module level (symdiff reads its source).
Values are checked against NumPy, gradients against JAX in float64 (the same code
with ``np`` rebound to ``jax.numpy``), on ``target="python"`` and ``"cpu"`` at
several sizes: kernels are specialised per rank and per axis of length 1, so
lengths 1, 2 and 6 run two kernels of each function.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import symdiff
from tests.checks import with_modules

jax.config.update("jax_enable_x64", True)

RTOL = 1e-11
ATOL = 1e-12
SIZES = (1, 2, 6)
KNOTS = np.array([-1.0, 0.0, 0.5, 2.0, 3.5])


# -- argmax, argmin --------------------------------------------------------------------
def arg_extremes(P, x):
    n = P.shape[0]
    rows = P[np.arange(n), np.argmax(P, axis=1)]
    cols = P[np.argmin(P, axis=0), np.arange(P.shape[1])]
    best = x[np.argmax(x)] * 2.0 + x[x.argmin()] ** 2
    flat = P.ravel()[P.argmax()] + np.sum(np.argmax(P, axis=0, keepdims=True))
    return np.sum(rows**2) + np.sum(np.sin(cols)) + best + flat


# -- sort, argsort ---------------------------------------------------------------------
def sort_vector(x):
    s = np.sort(x)
    w = np.arange(x.shape[0]) + 1.0
    return np.sum(s**3 * w) + x[np.argsort(x)][-1] * 2.0 + np.sum(np.sort(-x) * w)


def sort_matrix(X):
    w = np.arange(X.shape[1]) + 1.0
    rows = np.sum(np.sort(X) ** 2 * w)
    cols = np.sum(np.sort(X, axis=0) * (np.arange(X.shape[0]) + 1.0)[:, None])
    flat = np.sort(X, axis=None)
    return rows + cols + np.sum(flat * np.cos(flat))


# -- axes ------------------------------------------------------------------------------
def swap_and_move(X):
    a = np.swapaxes(X, 0, 2) * np.arange(3.0)[None, None, :]
    b = X.swapaxes(-1, 1)[..., 0]
    c = np.moveaxis(X, 0, -1)
    d = np.moveaxis(X, (0, 1), (-1, -2))
    return (
        np.sum(a**2)
        + np.sum(np.sin(b))
        + np.sum(c * np.arange(3.0))
        + np.sum(d[:, :, 1] ** 3)
    )


def tensor_products(A, B, C):
    two = np.tensordot(A, B, axes=([1, 0], [0, 1]))  # (2, 4)
    one = np.tensordot(A, C, axes=1)  # (n, 3, 4)
    none = np.tensordot(C, C[0], 0)  # an outer product
    full = np.tensordot(C, C, axes=2)  # a number
    return np.sum(two**2) + np.sum(np.sin(one)) + np.sum(none**2) + full


# -- pad -------------------------------------------------------------------------------
def pad_vector(x, c):
    n = x.shape[0]
    constant = np.pad(x, (2, 3), constant_values=c)
    edge = np.pad(x, (1, 4), mode="edge")
    reflect = np.pad(x, 5, mode="reflect")  # wider than x: NumPy's repeats
    symmetric = np.pad(x, (3, 8), "symmetric")
    wrap = np.pad(x, (7, 2), mode="wrap")
    return (
        np.sum(constant**2 * np.arange(n + 5))
        + np.sum(edge**3)
        + np.sum(reflect * np.arange(n + 10))
        + np.sum(np.sin(symmetric) * np.arange(n + 11))
        + np.sum(wrap * np.arange(n + 9))
    )


def pad_by_arguments(x, k):
    # widths from shapes and int arguments: zero-padding to a length, any mode
    fixed = np.pad(x, (0, 8 - len(x)))
    reflect = np.pad(x, (k, 2), mode="reflect")
    symmetric = np.pad(x, (1, k), "symmetric")
    return (
        np.sum(fixed * np.arange(8.0))
        + np.sum(reflect**2 * np.arange(len(x) + k + 2))
        + np.sum(np.pad(x, k, mode="wrap") ** 3)
        + np.sum(symmetric * np.arange(len(x) + k + 1))
        + np.sum(np.pad(x, (k, 1), mode="edge") ** 2)
    )


def pad_matrix(X, c):
    widths = ((1, 2), (2, 1))
    constant = np.pad(X, widths, constant_values=((c, 2.0), (3.0, -c)))
    reflect = np.pad(X, ((0, 2), (3, 1)), mode="reflect")
    return np.sum(constant**2 * np.arange(X.shape[1] + 3)) + np.sum(
        np.exp(reflect) * np.arange(X.shape[1] + 4)
    )


# -- convolve, correlate ---------------------------------------------------------------
def convolutions(a, v, w):
    # v has 3 elements (slices), w a length known only when the kernel runs
    # (a gather of windows); a is the longer array
    total = 0.0
    for mode in ("full", "same", "valid"):
        total = total + np.sum(np.convolve(a, v, mode) ** 2 * np.cos(a[0]))
        total = total + np.sum(np.correlate(a, w, mode) ** 3)
        total = total + np.sum(np.sin(np.convolve(a, w, mode=mode)))
        total = total + np.sum(np.correlate(a, v, mode=mode) * np.exp(v[1]))
    return total + np.sum(np.correlate(a, v))


def convolve_short_first(a, c):
    # np.array([...]) has a known length: with len(a) == 1, NumPy swaps
    v = np.array([c, 1.0, -2.0, 0.5])
    total = 0.0
    for mode in ("full", "same", "valid"):
        total = total + np.sum(np.convolve(a, v, mode) * np.arange(4.0)[-1])
        total = total + np.sum(np.correlate(a, v, mode) ** 2)
    return total


# -- cov, corrcoef ---------------------------------------------------------------------
def covariances(X, y):
    return (
        np.sum(np.cov(X) ** 2)
        + np.sum(np.cov(X, rowvar=False, bias=True) * 2.0)
        + np.cov(y) * 3.0
        + np.sum(np.cov(X, y, ddof=0) ** 2)
        + np.sum(np.sin(np.corrcoef(X, y)))
    )


# -- meshgrid --------------------------------------------------------------------------
def meshgrids(x, y, z):
    A, B = np.meshgrid(x, y)
    C, D, E = np.meshgrid(x, y, z, indexing="ij")
    F, G = np.meshgrid(x, y, sparse=True)
    return (
        np.sum(A**2 * B)
        + np.sum(C * D**3 * E)
        + np.sum(np.sin(F + G))
        + np.sum(A * np.arange(x.shape[0]))
    )


# -- interp, isclose, item, expand_dims, initial ---------------------------------------
def interpolate(x, fp, s):
    return (
        np.sum(np.interp(x, KNOTS, fp) ** 2)
        + np.interp(s, KNOTS, fp, left=-1.0)
        + np.sum(np.interp(x, KNOTS, fp, left=s, right=2.0 * s))
    )


def closeness(x, y):
    near = np.isclose(x, y)
    loose = np.isclose(x, y, rtol=0.0, atol=0.5)
    same = np.allclose(x, x + 1e-9)
    return np.sum(np.where(near, x, 2.0 * x)) + np.sum(np.where(loose, y, x)) + same


def numbers_and_axes(x, X):
    one = x[:1].item() * 3.0 + X.item(1) + X[:1, :1].item()
    spread = np.expand_dims(x, axis=(0, 2)) * np.ones((2, 1, 3))
    again = np.expand_dims(X, (-1, 0))
    return one + np.sum(spread**2) + np.sum(np.sin(again))


def with_initial(x):
    return (
        np.max(x, initial=0.0)
        + np.min(x, initial=1.5)
        + np.sum(x, initial=2.0)
        + x.max(initial=-1.0) * 2.0
        + np.max(x, where=x < 0.5, initial=-5.0)
        + np.min(x * 2.0, where=x > 0.0, initial=3.0)
    )


def _normal(*shape):
    return lambda n, rng: rng.normal(size=tuple(n if d is None else d for d in shape))


def _number(n, rng):
    return float(rng.normal())


CASES = [
    (arg_extremes, (_normal(None, 3), _normal(None))),
    (sort_vector, (_normal(None),)),
    (sort_matrix, (_normal(None, 4),)),
    (swap_and_move, (_normal(3, None, 2),)),
    (tensor_products, (_normal(None, 3, 2), _normal(3, None, 4), _normal(2, 4))),
    (pad_vector, (_normal(None), _number)),
    (pad_by_arguments, (_normal(None), lambda n, rng: 7)),
    (pad_matrix, (_normal(None, 3), _number)),
    # the kernels: 3 elements (slices) and n + 17 (a matrix of windows)
    (convolutions, (_normal(None), _normal(3), _normal(None))),
    (convolve_short_first, (_normal(None), _number)),
    (covariances, (_normal(3, None), _normal(None))),
    (meshgrids, (_normal(None), _normal(3), _normal(None))),
    (
        interpolate,
        (lambda n, rng: rng.uniform(-2.0, 4.5, n), _normal(5), lambda n, rng: 0.3),
    ),
    (closeness, (_normal(None), _normal(None))),
    (numbers_and_axes, (_normal(None), _normal(2, 3))),
    (with_initial, (lambda n, rng: rng.uniform(-2.0, 2.0, n),)),
]

#: Argument shapes that the functions need beyond ``n`` (``a`` longer than
#: ``w``; ``cov`` needs two observations).
LENGTHS = {
    "convolutions": lambda n: (n + 20, 3, n + 17),
    "covariances": lambda n: (n + 1, n + 1),
    # NumPy swaps the arrays when `a` is the shorter: a length known to be 1,
    # or one the kernel checks against the 4 of `v`
    "convolve_short_first": lambda n: (n if n == 1 else n + 3, 0),
}


def make_args(fn, makes, n, seed=0):
    rng = np.random.default_rng(seed + n)
    sizes = LENGTHS.get(fn.__name__, lambda n: (n,) * len(makes))(n)
    return tuple(make(size, rng) for make, size in zip(makes, sizes, strict=True))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize(
    "fn, makes, target",
    [pytest.param(f, m, "python", id=f"{f.__name__}-python") for f, m in CASES]
    + [
        pytest.param(f, m, "cpu", id=f"{f.__name__}-cpu", marks=pytest.mark.slow)
        for f, m in CASES
    ],
)
def test_values_match_numpy_and_gradients_match_jax(fn, makes, target, n):
    args = make_args(fn, makes, n)
    argnums = tuple(i for i, a in enumerate(args) if not isinstance(a, int))
    transform = symdiff.value_and_grad(fn, argnums=argnums, target=target)
    value, grads = transform(*args)
    assert value == pytest.approx(fn(*args), rel=1e-12, abs=1e-12)
    if fn is numbers_and_axes:  # JAX's .item() stops the gradient
        want = _numbers_and_axes_grad(*args)
    else:
        want = jax.grad(with_modules(fn, np=jnp), argnums=argnums)(*args)
    for got, expected in zip(grads, want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


def _numbers_and_axes_grad(x, X):
    x_bar = 2 * 2 * 3 * x  # (x spread over 2 * 3 copies) squared
    x_bar[0] += 3.0
    X_bar = np.cos(X)
    X_bar.flat[1] += 1.0
    X_bar[0, 0] += 1.0
    return x_bar, X_bar


# -- values, NumPy's -------------------------------------------------------------------
def argsort_values(x):
    return np.argsort(x), x.argsort(), np.sort(x), np.sort(x, axis=None)


def argsort_rows(X):
    return np.argsort(X, axis=0), np.argsort(X), np.sort(X, axis=0)


def extreme_positions(x, X):
    return (
        np.argmax(x),
        np.argmin(x),
        np.argmax(X, axis=1),
        np.argmin(X, axis=0),
        X.argmax(),
        np.argmax(X, axis=1, keepdims=True),
    )


def isclose_values(x, y):
    return (
        np.isclose(x, y),
        np.isclose(x, y, equal_nan=True),
        np.isclose(x, y, 1e-3, 1e-6),
        np.allclose(x, y),
        np.allclose(x[:1], x[:1]),
    )


def interp_values(x, fp):
    return np.interp(x, KNOTS, fp), np.interp(x, KNOTS, fp, left=-7.0, right=9.0)


def pad_values(X):
    return (
        np.pad(X, ((2, 7), (9, 4)), mode="reflect"),
        np.pad(X, ((2, 7), (9, 4)), mode="symmetric"),
        np.pad(X, ((2, 7), (9, 4)), mode="wrap"),
        np.pad(X, 3, mode="edge"),
        np.pad(X, ((1, 0), (2, 3)), constant_values=((1.0, 2.0), (3.0, 4.0))),
    )


def convolve_values(a, v):
    return (
        np.convolve(a, v),
        np.convolve(a, v, "same"),
        np.convolve(a, v, "valid"),
        np.correlate(a, v),
        np.correlate(a, v, "same"),
        np.correlate(a, v, "full"),
    )


TIES = np.array([2.0, -1.0, 2.0, np.nan, -1.0, 0.0, np.inf, -np.inf, 0.0, -0.0])
CLOSE = (
    np.array([1.0, 1.0, np.inf, np.inf, np.nan, 0.0, 1e-9, 5.0]),
    np.array([1.0 + 1e-6, 1.1, np.inf, -np.inf, np.nan, 1e-9, 0.0, 5.0001]),
)
VALUE_CASES = [
    (argsort_values, (TIES,)),
    (argsort_values, (np.array([3.0]),)),
    (argsort_rows, (np.array([[3.0, 1.0, 1.0], [np.nan, 0.0, -2.0]]),)),
    (argsort_rows, (np.arange(12.0).reshape(3, 4)[::-1] % 5,)),
    (extreme_positions, (TIES, np.array([[1.0, 3.0, 3.0], [np.nan, 0.0, 0.0]]))),
    (extreme_positions, (np.array([-1.0, 4.0, 4.0]), np.array([[2.0, 2.0]]))),
    (isclose_values, CLOSE),
    (
        interp_values,
        (
            np.array([-3.0, -1.0, 0.0, 0.25, 0.5, 2.0, 3.0, 3.5, 4.0, np.nan]),
            np.array([1.0, -2.0, 0.5, 0.5, 3.0]),
        ),
    ),
    (interp_values, (np.array(0.75), np.array([1.0, -2.0, 0.5, 0.5, 3.0]))),
    (pad_values, (np.arange(6.0).reshape(2, 3),)),
    (pad_values, (np.arange(3.0).reshape(1, 3),)),
    (convolve_values, (np.arange(7.0) ** 2, np.array([1.0, -2.0, 0.5, 3.0]))),
    (convolve_values, (np.arange(6.0) ** 2, np.array([1.0, -2.0, 0.5]))),
    (convolve_values, (np.arange(3.0), np.array([2.0]))),
]


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert got.dtype.kind == want.dtype.kind or {got.dtype.kind, want.dtype.kind} <= {
        "i",
        "f",
    }
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("target", ["python", "cpu"])
@pytest.mark.parametrize(
    "fn, args",
    VALUE_CASES,
    ids=[f"{f.__name__}-{k}" for k, (f, _) in enumerate(VALUE_CASES)],
)
def test_values_are_numpys(fn, args, target):
    got = symdiff.jit(fn, target=target)(*args)
    want = list(fn(*args))
    # NumPy's default sort orders ties as it likes; symdiff's is stable
    if fn is argsort_values:
        want[:2] = [np.argsort(args[0], kind="stable")] * 2
    if fn is argsort_rows:
        want[:2] = [np.argsort(args[0], axis=k, kind="stable") for k in (0, -1)]
    for g, w in zip(got, want, strict=True):
        _same(g, w)


# -- empty arrays, messages, the CUDA target -------------------------------------------
def largest(x):
    return np.max(x) + x.min()


def largest_rows(X):
    return np.sum(np.max(X, axis=1))


def first_largest(x):
    return x[np.argmax(x)]


def masked_max(x):
    return np.max(x, where=x > 0)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_max_of_an_empty_axis_raises_as_numpy_does(target):
    message = "zero-size array to reduction operation maximum which has no identity"
    with pytest.raises(ValueError, match=message):
        np.max(np.zeros(0))
    for fn, arg in [(largest, np.zeros(0)), (largest_rows, np.zeros((3, 0)))]:
        with pytest.raises(symdiff.ShapeError, match=message):
            symdiff.jit(fn, target=target)(arg)
        with pytest.raises(symdiff.ShapeError, match=message):
            symdiff.grad(fn, target=target)(arg)
    # no maximum is taken over the empty axis 0
    assert symdiff.jit(largest_rows, target=target)(np.zeros((0, 3))) == 0.0
    with pytest.raises(symdiff.ShapeError, match="argmax of an empty sequence"):
        symdiff.grad(first_largest, target=target)(np.zeros(0))


def test_initial_gives_the_value_of_an_empty_array():
    x = np.zeros(0)
    value, grad = symdiff.value_and_grad(with_initial, target="cpu")(x)
    assert value == with_initial(x)
    assert grad.shape == (0,)


def test_where_without_initial_is_numpys_error_with_a_hint():
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(masked_max, target="python")(np.ones(3))
    text = str(info.value)
    assert (
        "np.max: reduction operation 'maximum' does not have an identity, so to "
        "use a where mask one has to specify 'initial'"
    ) in text
    assert "help: give the value of an empty selection: np.max(x, where=mask, " in text


def unsupported_pad(x):
    return np.sum(np.pad(x, 2, mode="mean"))


def correlate_shorter(a, v):
    return np.sum(np.correlate(a, v, "same"))


def sized_item(x):
    return x.item() * 2.0


def test_messages():
    with pytest.raises(symdiff.TranslationError, match=r"np\.pad: mode 'mean' is not"):
        symdiff.grad(unsupported_pad, target="python")(np.ones(3))
    f = symdiff.grad(correlate_shorter, target="python")
    with pytest.raises(symdiff.ShapeError, match="at least as long as the second"):
        f(np.ones(2), np.ones(4))
    assert f(np.ones(4), np.ones(2)).shape == (4,)
    g = symdiff.grad(sized_item, target="python")
    assert g(np.array([3.0])) == 2.0
    with pytest.raises(symdiff.ShapeError, match="can only convert an array of size 1"):
        g(np.ones(2))  # the kernel for length 2 assumed 1 element


def test_sort_is_refused_on_cuda_with_a_pointer_to_the_cpu():
    with pytest.raises(
        symdiff.ArgumentError,
        match=r"cannot run on CUDA: np\.sort and np\.argsort .*target='cpu'",
    ):
        symdiff.grad(sort_vector, target="cuda")(np.arange(3.0))


@pytest.mark.gpu
def test_the_rest_runs_on_cuda():
    for fn, makes in CASES:
        if fn in (sort_vector, sort_matrix):
            continue
        args = make_args(fn, makes, 4)
        argnums = tuple(i for i, a in enumerate(args) if not isinstance(a, int))
        value, grads = symdiff.value_and_grad(fn, argnums=argnums, target="cuda")(*args)
        want_value, want = symdiff.value_and_grad(fn, argnums=argnums, target="python")(
            *args
        )
        assert value == pytest.approx(want_value, rel=1e-10)
        for got, expected in zip(grads, want, strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


# -- Jacobians and Hessians ------------------------------------------------------------
def sorted_cubes(x):
    return np.sort(x) ** 3


def picked(P):
    return P[np.arange(P.shape[0]), np.argmax(P, axis=1)] * P[:, 0]


def moved(X):
    return np.moveaxis(np.swapaxes(X, 0, 1), -1, 0) ** 2


def contracted(A, B):
    return np.sum(np.sin(np.tensordot(A, B, axes=([0, 1], [1, 0]))))


def padded(x):
    return np.pad(x, (2, 3), mode="reflect") * np.pad(x, (1, 4), constant_values=x[0])


def convolved(a, v):
    return np.sum(np.convolve(a, v, "same") ** 3)


def correlation(X):
    return np.sum(np.corrcoef(X) ** 3)


def grid(x, y):
    A, B = np.meshgrid(x, y)
    return A * B**2


def interpolated(x, fp):
    return np.interp(x, KNOTS, fp) ** 2


@pytest.mark.slow
@pytest.mark.parametrize(
    "fn, shapes, kind",
    [
        (sorted_cubes, [(5,)], "jacobian"),
        (picked, [(4, 3)], "jacobian"),
        (moved, [(2, 3, 4)], "jacobian"),
        (contracted, [(3, 4), (4, 3)], "hessian"),
        (padded, [(4,)], "jacobian"),
        (convolved, [(7,), (3,)], "hessian"),
        (convolved, [(25,), (19,)], "hessian"),
        (correlation, [(3, 5)], "hessian"),
        (grid, [(3,), (2,)], "jacobian"),
        (interpolated, [(6,), (5,)], "jacobian"),
        (sort_matrix, [(3, 4)], "hessian"),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_jacobians_and_hessians_match_jax(fn, shapes, kind):
    rng = np.random.default_rng(11)
    args = [rng.normal(size=s) for s in shapes]
    if fn is interpolated:
        args[0] = rng.uniform(-2.0, 4.5, shapes[0])
    argnums = tuple(range(len(args)))
    transform = getattr(symdiff, kind)
    jax_fn = with_modules(fn, np=jnp)
    want = getattr(jax, kind)(jax_fn, argnums=argnums)(*args)
    modes = ["forward", "reverse"] if kind == "jacobian" else [None]
    for mode in modes:
        options = {"mode": mode} if mode else {}
        got = transform(fn, argnums=argnums, target="python", **options)(*args)
        for g, w in zip(_leaves(got), _leaves(want), strict=True):
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


def _leaves(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in _leaves(item)]
    return [np.asarray(tree)]


@pytest.mark.slow
def test_sorting_rows_runs_on_the_parallel_target():
    X = np.random.default_rng(2).normal(size=(5, 4))
    got = symdiff.value_and_grad(sort_matrix, target="parallel")(X)
    want = symdiff.value_and_grad(sort_matrix, target="python")(X)
    assert got[0] == pytest.approx(want[0], rel=1e-13)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-13)
