"""NumPy's advanced indexing: reads ``x[idx]``, ``P[np.arange(n), labels]``,
``X[:, [0, 2]]``, ``np.take``, and writes ``out[idx] = v``, ``out[idx] += v``.

Reads are checked against JAX in float64 (the same code with ``np`` rebound to
``jax.numpy``; HIPS autograd where the code indexes with a list, which JAX
refuses).  Writes have no such oracle (JAX's ``.at[].set`` leaves the order of
repeated positions unspecified), so they are checked against NumPy's own values
and central finite differences of the function itself.
"""

from __future__ import annotations

import autograd
import autograd.numpy as anp
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import symdiff
from tests.checks import with_modules

jax.config.update("jax_enable_x64", True)

COLUMNS = np.array([2, 0, -1])


# -- reads ------------------------------------------------------------------------------
def gather_weighted(x, idx):
    # negative and repeated positions: a repeated one gets both adjoints
    return np.sum(np.sin(x[idx]) * np.arange(idx.shape[0]))


def cross_entropy(logits, labels):
    m = np.max(logits, axis=1, keepdims=True)
    z = logits - m
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(logp[np.arange(logits.shape[0]), labels])


def embedding_bag(E, tokens, w):
    h = np.tanh(E[tokens])  # (batch, length, dim)
    return np.sum(np.sum(h, axis=1) @ w)


def constant_columns(X):
    # a module-level index array after a slice
    return np.sum(X[1:, COLUMNS] ** 2 * X[0, 0])


def apart(A, idx):
    # the indexed axes are not adjacent: the index's axis comes first
    return np.sum(A[0, :, idx] ** 3 * np.arange(A.shape[1]))


def adjacent(A, i, j):
    # broadcast index arrays on adjacent axes: their shape (2, 3) stays in place
    return np.sum(np.cos(A[:, i, j]) * np.arange(6.0).reshape(2, 3))


def rows_in_a_loop(X, idx):
    s = 0.0
    for row in X:
        s += np.sum(row[idx] ** 2) * row[0]
    return s


def taken(x, idx):
    return np.sum(np.take(x, idx, axis=1) ** 2) + np.sum(x.take(idx) * 0.5)


def labels_of_labels(w, labels, idx):
    # an int array gathered, then used as an index
    return np.sum(w[labels[idx]] ** 2)


def listed(x):
    return np.sum(x[[0, 0, 3]] * x[1]) + np.sum(x[:, [1]] ** 2)


def normal(*shape):
    return lambda rng: rng.normal(size=shape)


READS = [
    (gather_weighted, lambda rng: (rng.normal(size=5), np.array([4, 1, 1, -2]))),
    (cross_entropy, lambda rng: (rng.normal(size=(6, 4)), rng.integers(0, 4, 6))),
    (
        embedding_bag,
        lambda rng: (
            rng.normal(size=(7, 3)),
            rng.integers(0, 7, (2, 5)),
            rng.normal(size=3),
        ),
    ),
    (constant_columns, lambda rng: (rng.normal(size=(4, 3)),)),
    (apart, lambda rng: (rng.normal(size=(2, 3, 4)), np.array([1, 3, -4]))),
    (
        adjacent,
        lambda rng: (
            rng.normal(size=(2, 3, 4)),
            np.array([[1], [2]]),
            np.array([0, 3, 1]),
        ),
    ),
    (rows_in_a_loop, lambda rng: (rng.normal(size=(3, 4)), np.array([3, 1, 3]))),
    (taken, lambda rng: (rng.normal(size=(3, 4)), np.array([[0, 3], [2, 2]]))),
    (
        labels_of_labels,
        lambda rng: (rng.normal(size=4), np.array([3, 0, 2, 1, 3]), np.array([4, 0])),
    ),
]


def jax_grad(fn, args):
    return np.asarray(jax.grad(with_modules(fn, np=jnp))(*args))


def with_targets(cases, compiled):
    """Every case as Python, the ``compiled`` ones with Numba too (a compile per
    kind of read or write keeps the suite short)."""
    out = [(fn, make, "python") for fn, make in cases]
    out += [(fn, make, "cpu") for fn, make in cases if fn.__name__ in compiled]
    return pytest.mark.parametrize(
        "fn, make, target", out, ids=[f"{f.__name__}-{t}" for f, _, t in out]
    )


@with_targets(READS, ("cross_entropy", "apart", "taken"))
def test_reads_match_jax(fn, make, target):
    args = make(np.random.default_rng(1))
    value, grad = symdiff.value_and_grad(fn, target=target)(*args)
    assert value == pytest.approx(fn(*args), rel=1e-13)
    np.testing.assert_allclose(grad, jax_grad(fn, args), rtol=1e-12, atol=1e-13)


def test_list_positions_match_autograd():
    x = np.random.default_rng(2).normal(size=(4, 3))
    value, grad = symdiff.value_and_grad(listed, target="python")(x)
    assert value == pytest.approx(listed(x), rel=1e-13)
    want = autograd.grad(with_modules(listed, np=anp))(x)
    np.testing.assert_allclose(grad, want, rtol=1e-12, atol=1e-13)


def test_hessian_jvp_and_parallel():
    rng = np.random.default_rng(3)
    x, idx = rng.normal(size=5), np.array([4, 1, 1, -2])
    hessian = symdiff.hessian(gather_weighted, target="python")(x, idx)
    want = jax.hessian(with_modules(gather_weighted, np=jnp))(x, idx)
    np.testing.assert_allclose(hessian, want, rtol=1e-12, atol=1e-13)
    tangent = rng.normal(size=5)
    _, out_tangent = symdiff.jvp(
        gather_weighted, (x, idx), (tangent, np.zeros(4)), target="python"
    )
    assert out_tangent == pytest.approx(jax_grad(gather_weighted, (x, idx)) @ tangent)
    logits, labels = rng.normal(size=(50, 4)), rng.integers(0, 4, 50)
    grad = symdiff.grad(cross_entropy, target="parallel")(logits, labels)
    np.testing.assert_allclose(
        grad, jax_grad(cross_entropy, (logits, labels)), rtol=1e-12, atol=1e-13
    )


def test_arange_rows_read_the_position_itself():
    """``logp[np.arange(n), labels]``: no array of positions, no wrap-around test
    for them; the labels (an argument: they may be negative) get one."""
    logits, labels = np.zeros((3, 4)), np.array([0, 1, 2])
    grad = symdiff.grad(cross_entropy, target="python")
    grad(logits, labels)
    loop = grad.source.split("# backward: advanced indexing")[1]
    assert "logp_bar[p, " in loop
    assert "labels[p] < 0" in loop


# -- writes -----------------------------------------------------------------------------
def write_set(x, idx):
    out = np.zeros(5)
    out[idx] = x  # idx repeats a position: the last value written stays
    return np.sum(np.sin(out) * np.arange(5.0))


def write_add(x, idx):
    out = np.ones(5) * x[0]
    out[idx] += x**2  # NumPy reads first: a repeated position adds once
    return np.sum(np.sin(out) * np.arange(5.0))


def write_lists(X):
    out = np.zeros((3, 4))
    out[[0, 2]] = X  # two rows (not out[0, 2])
    out[:, [1, 1]] += 2.0 * X[0, :2]
    return np.sum(out**3)


def scatter_in_a_loop(x, idx, n: int):
    out = np.zeros(4)
    for t in range(n):
        out[idx] = out[idx] * 0.5 + x
    return np.sum(out**2 * np.arange(4.0))


def finite_difference(fn, args):
    x = args[0]
    grad = np.zeros_like(x)
    h = 1e-6
    for k in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[k] = h
        grad[k] = (fn(x + e, *args[1:]) - fn(x - e, *args[1:])) / (2 * h)
    return grad


WRITES = [
    (write_set, lambda rng: (rng.normal(size=3), np.array([0, 4, 0]))),
    (write_add, lambda rng: (rng.normal(size=3), np.array([0, -1, 0]))),
    (write_lists, lambda rng: (rng.normal(size=(2, 4)),)),
    (scatter_in_a_loop, lambda rng: (rng.normal(size=3), np.array([3, 1, 3]), 3)),
]


@with_targets(WRITES, ("write_add", "scatter_in_a_loop"))
def test_writes_match_numpy_and_finite_differences(fn, make, target):
    args = make(np.random.default_rng(4))
    value, grad = symdiff.value_and_grad(fn, target=target)(*args)
    assert value == pytest.approx(fn(*args), rel=1e-13)
    np.testing.assert_allclose(grad, finite_difference(fn, args), rtol=1e-7, atol=1e-8)


def test_backward_scatter_reads_before_it_zeroes():
    """The adjoint of ``out[idx] = v`` reads ``out_bar`` at a position, then
    zeroes it there: read first, so no copy of ``out_bar`` per iteration."""
    grad = symdiff.grad(write_set, target="python")
    grad(np.zeros(3), np.array([0, 4, 0]))
    assert "np.copy" not in grad.source


# -- what is refused ----------------------------------------------------------------------
def by_mask(x):
    return x[x > 0][0]  # np.sum(x[x > 0]) works: tests/test_masks.py


def by_floats(x):
    return np.sum(x[x])


def with_new_axis(x, idx):
    return np.sum(x[None, idx])


def write_after_slice(x, idx):
    out = np.zeros((3, 4))
    out[idx, 1:] = x
    return np.sum(out)


@pytest.mark.parametrize(
    "fn, args, message, hint",
    [
        (by_mask, (np.ones(3),), "boolean-mask selection", "np.where(mask, x, 0.0)"),
        (by_floats, (np.ones(3),), "must be of integer type", "int array"),
        (with_new_axis, (np.ones(3), np.array([0])), "`None`", "np.expand_dims"),
        (
            write_after_slice,
            (np.ones(3), np.array([0])),
            "the other indices must be integers or `:`",
            "slice first",
        ),
    ],
)
def test_refused_with_the_construct_and_a_hint(fn, args, message, hint):
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(fn, target="python")(*args)
    text = str(info.value)
    assert message in text and hint in text
    assert "test_advanced_indexing.py:" in text


def gather_squares(x, idx):
    return np.sum(x[idx] ** 2)


ON_A_ZEROS_ARRAY = np.array([0, 5])


def constant_out_of_bounds(x):
    return np.sum(np.zeros(3)[ON_A_ZEROS_ARRAY] + x)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_an_index_array_argument_is_bounds_checked(target):
    """Positions outside the axis are a ShapeError with the user's line, as
    NumPy's IndexError (the loop read outside the array: garbage or a crash)."""
    grad = symdiff.grad(gather_squares, target=target)
    np.testing.assert_array_equal(grad(np.ones(3), np.array([0, -3, 2])), [4, 0, 2])
    np.testing.assert_array_equal(grad(np.ones(3), np.zeros(0, np.int64)), [0, 0, 0])
    for bad in ([0, 3], [-4]):
        with pytest.raises(symdiff.ShapeError) as info:
            grad(np.ones(3), np.array(bad))
        assert "an index in `idx` is out of bounds for axis 0" in str(info.value)
        assert "test_advanced_indexing.py:" in str(info.value)


def test_a_constant_index_outside_a_known_length_is_refused():
    with pytest.raises(symdiff.TranslationError, match="index 5 is out of bounds"):
        symdiff.grad(constant_out_of_bounds, target="python")(1.0)


def rows_and_a_mask(X, idx):
    return np.sum(X[idx, X[0] > 0])


def test_a_mask_after_an_index_array_argument_is_named_as_such():
    """The bounds message of `idx` once took the place of the construct's name."""
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(rows_and_a_mask, target="python")(np.ones((3, 3)), np.array([0]))
    assert "a boolean mask is supported as the first index only" in str(info.value)
