"""Array code at the edges: indices and slice bounds outside the array, sizes that do
not divide, bad axes, masks, and constructs that have no element-wise meaning.

Each case was a wrong number, a crash or an internal error once (found by writing
functions as users do); now each is right or a clear symdiff error at the user's
line, on both targets.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symdiff

HERE = Path(__file__).name
TARGETS = ["python", "cpu"]


def tail(x):
    return np.sum(x[2:100])


def at10(x):
    return x[10]


def at_minus7(x):
    return x[-7]


def by_fours(x):
    return np.sum(x.reshape(-1, 4) ** 2)


def first_half(x):
    return np.sum(x[: len(x) // 2] ** 2)


def band(x):
    return np.sum(np.where((x > 0.2) & (x < 0.8), x**2, 0.0))


def outside(x):
    return np.sum(np.where(np.logical_or(x < 0.2, x > 0.8), x**2, 0.0))


def line_of(fn) -> int:
    return fn.__code__.co_firstlineno + 1


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("fn", "n", "message"),
    [
        (tail, 5, "slice bound 100 is outside axis 0 of length x.shape[0]"),
        (at10, 5, "index 10 is out of bounds for axis 0 with size x.shape[0]"),
        (at_minus7, 5, "index -7 is out of bounds for axis 0 with size x.shape[0]"),
        (
            by_fours,
            6,
            "cannot reshape array of shape (x.shape[0],) into shape "
            "(x.shape[0] // 4, 4)",
        ),
    ],
)
def test_out_of_range_is_a_shape_error_at_the_users_line(fn, n, message, target):
    with pytest.raises(symdiff.ShapeError) as info:
        symdiff.grad(fn, target=target)(np.arange(float(n)))
    text = str(info.value)
    assert f"{HERE}:{line_of(fn)}:" in text
    assert message in text


@pytest.mark.parametrize("target", TARGETS)
def test_in_range_sizes_give_numpys_numbers(target):
    x = np.arange(200.0)
    assert np.array_equal(
        symdiff.grad(tail, target=target)(x), np.r_[0, 0, np.ones(98), np.zeros(100)]
    )
    assert symdiff.grad(at10, target=target)(x)[10] == 1.0
    assert symdiff.grad(at_minus7, target=target)(x)[-7] == 1.0
    assert np.allclose(symdiff.grad(by_fours, target=target)(np.ones(8)), 2.0)
    got = symdiff.grad(first_half, target=target)(np.arange(5.0))
    assert np.array_equal(got, [0.0, 2.0, 0.0, 0.0, 0.0])


def at_arg(x, j):
    return x[j] ** 2


def from_the_end(X, k):
    return np.sum(X[-k, 1:] * X[1:, k - 1])


@pytest.mark.parametrize("target", TARGETS)
def test_an_index_from_an_int_argument_may_count_from_the_end(target):
    """``x[j]`` with ``j`` an argument: ``-n <= j < n`` as in NumPy (a negative
    index counts from the end), anything else a ShapeError at the user's line."""
    x = np.arange(1.0, 6.0)
    g = symdiff.grad(at_arg, target=target)
    for j in range(-5, 5):
        want = np.zeros(5)
        want[j] = 2.0 * x[j]
        assert np.array_equal(g(x, j), want), j
        assert symdiff.jit(at_arg, target=target)(x, j) == x[j] ** 2
    for j in (5, -6):
        with pytest.raises(symdiff.ShapeError) as info:
            g(x, j)
        assert f"{HERE}:{line_of(at_arg)}:" in str(info.value)
        assert "index j is out of bounds for axis 0 with size x.shape[0]" in str(
            info.value
        )
    X = np.arange(16.0).reshape(4, 4) / 7.0
    for k in (1, 2, 3):
        gX = np.zeros_like(X)
        gX[-k, 1:] += X[1:, k - 1]
        gX[1:, k - 1] += X[-k, 1:]
        assert np.allclose(symdiff.grad(from_the_end, target=target)(X, k), gX), k


@pytest.mark.parametrize("target", TARGETS)
def test_masks_with_and_or(target):
    x = np.array([0.1, 0.3, 0.5, 0.7, 0.9])
    assert np.allclose(symdiff.grad(band, target=target)(x), [0, 0.6, 1.0, 1.4, 0])
    assert np.allclose(symdiff.grad(outside, target=target)(x), [0.2, 0, 0, 0, 1.8])


def concat_bad_axis(a, b):
    return np.sum(np.concatenate([a, b], axis=1))


def mask_index(x):
    return np.cumsum(x[x > 0.5])


def transpose_a_number(x):
    return np.transpose(np.sum(x), (1, 0))


def float_of_array(x):
    return float(x) * 2.0


def index_a_number(x):
    return np.sum(x)[0]


def builtin_max(x):
    return max(x, 0.0)


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (concat_bad_axis, "axis 1 is out of bounds for arrays of dimension 1"),
        (
            mask_index,
            "`np.cumsum` of a boolean-mask selection (`x[mask]`) is not supported",
        ),
        (transpose_a_number, "`axes` must be a permutation of the array's axes"),
        (float_of_array, "`float` of an array is not defined element-wise"),
        (index_a_number, "a number cannot be indexed"),
        (builtin_max, "`max` of an array is not defined element-wise"),
    ],
)
def test_unsupported_array_constructs_are_translation_errors(fn, message):
    args = (np.ones(3), np.ones(2)) if fn is concat_bad_axis else (np.ones(3),)
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(fn, target="python")(*args)
    text = str(info.value)
    assert message in text
    assert f"{HERE}:{line_of(fn)}:" in text


# -- every kind of array construct symdiff rejects: what, where and what instead -------
def trace_3d(A):
    return np.trace(A)


def transpose_list(A):
    return np.sum(np.transpose(A, 1))


def two_unknowns(x):
    return np.sum(x.reshape(-1, -1))


def tril_vector(x):
    return np.sum(np.tril(x))


def concat_numbers(x):
    return np.sum(np.concatenate((np.sum(x), np.sum(x))))


def stack_bad_axis(x):
    return np.sum(np.stack((x, x), axis=3))


def arange_down(x):
    return np.sum(x * np.arange(len(x), 0, -1))


def where_one(x):
    return np.sum(np.where(x > 0))


def two_ellipses(A):
    return np.sum(A[..., ...])


def zero_step(x):
    return np.sum(x[::0])


def index_out_of_range(x):
    return np.eye(3)[0, 7] * x[0]


def axis_out_of_range(x):
    return np.sum(x, axis=2)


def repeated_axis(A):
    return np.sum(A, axis=(0, 0))


def keepdims_not_constant(x, flag):
    return np.sum(np.sum(x, axis=0, keepdims=flag))


def matmul_with_number(x):
    return np.sum(x @ 2.0)


def size_from_values(x):
    return np.sum(np.zeros(len(x) + (x[0] > 0)))


def known_shapes_disagree(x):
    return np.sum(np.zeros(3) + np.ones(4) * x[0])


ONE_D = (np.ones(4),)
TWO_D = (np.ones((2, 3)),)
REJECTED = [
    (
        trace_3d,
        (np.ones((2, 2, 2)),),
        "np.trace: only 2-D arrays are supported",
        "np.sum(A * np.eye(n), axis=(-2, -1))",
    ),
    (
        transpose_list,
        TWO_D,
        "`axes` must be a tuple of integers",
        "np.transpose(x, (1, 0, 2))",
    ),
    (
        two_unknowns,
        ONE_D,
        "can only specify one unknown dimension",
        "give every length but one",
    ),
    (
        tril_vector,
        ONE_D,
        "np.tril/np.triu need an array of at least 2 dimensions",
        "build the matrix first",
    ),
    (
        concat_numbers,
        ONE_D,
        "zero-dimensional arrays cannot be joined",
        "np.array([a, b])",
    ),
    (
        stack_bad_axis,
        ONE_D,
        "axis 3 is out of bounds for the result of dimension 2",
        "axes count from 0",
    ),
    (
        arange_down,
        ONE_D,
        "np.arange: only positive constant steps are supported",
        "[::-1]",
    ),
    (
        where_one,
        ONE_D,
        "np.where with one argument is not supported",
        "np.where(c, a, b)",
    ),
    (two_ellipses, TWO_D, "an index can only have a single ellipsis", "keep one"),
    (zero_step, ONE_D, "slice step cannot be zero", "a positive or negative step"),
    (
        index_out_of_range,
        TWO_D,
        "index 7 is out of bounds for axis 1 with size 3",
        "index within the axis",
    ),
    (
        axis_out_of_range,
        ONE_D,
        "axis 2 is out of bounds for an array of dimension 1",
        "axes count from 0",
    ),
    (repeated_axis, TWO_D, "repeated axis", "name each axis once"),
    (
        keepdims_not_constant,
        (np.ones(4), True),
        "`keepdims` must be a constant True or False",
        "write True or False",
    ),
    (matmul_with_number, ONE_D, "matmul: an operand is a scalar", "with `*`"),
    (
        size_from_values,
        ONE_D,
        "must be computed from integer constants, shapes",
        "sizes must be known when the kernel starts, not from array values",
    ),
    (
        known_shapes_disagree,
        ONE_D,
        "operands could not be broadcast together with shapes (3,) (4,)",
        "make the shapes agree",
    ),
]


@pytest.mark.parametrize(
    ("fn", "args", "message", "hint"), REJECTED, ids=[r[0].__name__ for r in REJECTED]
)
def test_rejected_array_code_says_what_where_and_instead(fn, args, message, hint):
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(fn, target="python")(*args)
    text = str(info.value)
    assert message in text
    assert f"{HERE}:{line_of(fn)}:" in text  # file:line:col
    assert "^" in text  # the line, with a caret under the construct
    help_line = next(line for line in text.splitlines() if "help:" in line)
    assert hint in help_line


def matmul_loss(W, x):
    return np.sum(np.tanh(W @ x) ** 2)


def test_array_kernels_have_no_sympy_form_and_say_so():
    g = symdiff.grad(matmul_loss, target="python")
    g(np.ones((2, 3)), np.ones(3))
    with pytest.raises(symdiff.OutputError) as info:
        g.latex()
    assert str(info.value).startswith(
        "`dot` works on whole arrays and has no SymPy form"
    )
    assert "help: read the generated code (.source" in str(info.value)


def test_the_listing_names_lengths_axes_and_indices():
    g = symdiff.grad(first_half, target="python")
    g(np.ones(6))
    listing = g.ir
    assert "param x : f64[x.shape[0]]" in listing
    assert "getitem %0 [0:x.shape[0] // 2] : f64[x.shape[0] // 2]" in listing
    assert "Dim(" not in listing


def shapes_differ_by_branch(x, y):
    if y > 0:
        z = x[1:]
    else:
        z = x
    return np.sum(z * z)


def weights_or_mean(r, w, use_w):
    ww = w if use_w > 0 else 1.0
    return np.sum(ww * r**2) / np.sum(ww)


def test_branches_of_different_shapes_are_reported_at_the_if():
    """Both branches run (if-conversion), so their arrays must have one shape; a
    number in one and an array in the other was stretched to the array (the sum
    of `ww` then counted the length: silently wrong), `x[1:]` against `x` failed
    when called.  Both are refused while tracing: where the variable is read
    after an `if` statement (once), at a conditional expression itself."""
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.jit(shapes_differ_by_branch, target="python")(np.ones(3), 1.0)
    text = str(info.value)
    line = line_of(shapes_differ_by_branch)
    assert f"{HERE}:{line + 4}:19: `z` is read after the `if` at line {line}" in (text)
    assert "1 problem found" in text
    assert "different shapes (an array of shape (x.shape[0] - 1,) and an array of" in (
        text
    )
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(weights_or_mean)(np.ones(3), np.ones(3), 0.0)
    text = str(info.value)
    assert "(an array of shape (w.shape[0],) and a number)" in text
    assert "np.full(w.shape, 1.0)" in text


def spectral_norm(W):
    return np.linalg.norm(W, 2)


def dot_of_stacks(A, B):
    return np.sum(np.dot(A, B))


def method_with_dtype(x):
    return x.sum(dtype=np.float64)


@pytest.mark.parametrize(
    ("fn", "args", "message"),
    [
        # NumPy's values differ from what these computed (Frobenius, matmul)
        (spectral_norm, (np.ones((2, 2)),), "the spectral norm (ord=2 of a matrix)"),
        (dot_of_stacks, (np.ones((2, 2, 2)), np.ones((2, 2, 2))), "np.dot of arrays"),
        (method_with_dtype, (np.ones(3),), "np.sum: `dtype` is not supported"),
    ],
)
def test_refused_where_numpy_means_something_else(fn, args, message):
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.jit(fn, target="python")(*args)
    assert message in str(info.value)
    assert f"{HERE}:{line_of(fn)}:" in str(info.value)


def clip_by_keyword(x):
    return np.sum(np.clip(x, a_min=0.0, a_max=0.5) ** 2)


def test_clip_takes_numpys_keywords():
    x = np.array([-1.0, 0.2, 0.7])
    value, grad = symdiff.value_and_grad(clip_by_keyword, target="python")(x)
    assert value == pytest.approx(0.29)
    np.testing.assert_allclose(grad, [0.0, 0.4, 0.0])


def not_of_a_mask(x):
    return np.sum(np.where(not (x > 0), x, 0.0))


def and_of_masks(x):
    return np.sum(np.where((x > 0) and (x < 1), x, 0.0))


def inverted_mask(x):
    return np.sum(np.where(~(x > 0), x, 0.0) ** 2)


def test_truth_of_arrays_is_refused_and_tilde_works():
    """`not`/`and` of arrays raise in NumPy (ambiguous truth); they were taken
    element-wise here. `~mask` is NumPy's element-wise not (it was refused,
    with a hint towards `not`)."""
    for fn, hint in ((not_of_a_mask, "~mask"), (and_of_masks, "np.logical_and")):
        with pytest.raises(symdiff.TranslationError) as info:
            symdiff.jit(fn, target="python")(np.ones(3))
        assert "the truth value of an array is ambiguous" in str(info.value)
        assert hint in str(info.value)
    x = np.array([-1.0, 0.5, -2.0])
    value, grad = symdiff.value_and_grad(inverted_mask, target="python")(x)
    assert value == 5.0
    np.testing.assert_allclose(grad, [-2.0, 0.0, -4.0])


def tilde_of_a_float(x):
    return ~x


def slice_of_a_tuple_at_run_time(x, k: int):
    return sum((1.0, 2.0, 3.0)[k:]) * x


@pytest.mark.parametrize(
    ("fn", "args", "message", "hint"),
    [
        (tilde_of_a_float, (1.5,), "operator `~` is supported on bools", "`-x - 1`"),
        (
            slice_of_a_tuple_at_run_time,
            (1.5, 1),
            "a slice of a tuple or list needs constant bounds",
            "COEFFS[1:3]",
        ),
    ],
)
def test_what_python_allows_and_symdiff_cannot_says_so(fn, args, message, hint):
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.jit(fn, target="python")(*args)
    text = str(info.value)
    assert message in text and hint in text
    assert f"{HERE}:{line_of(fn)}:" in text
