"""What the frontend refuses, each with its message, a hint of what to write
instead, and the user's line: the refusals added with NumPy's and SciPy's
functions, windows, masks, lists and loops, dicts, comparisons of Python objects and
`raise`, one function each."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symdiff

LINES = Path(__file__).read_text().splitlines()


def repeat_negative(x):
    return np.sum(np.repeat(x, -1))


def repeat_negative_counts(x):
    return np.sum(np.repeat(x, [1, -1, 2]))


def einsum_number_subscripts(x):
    return np.sum(np.einsum(1, x))


def einsum_too_few_operands(A):
    return np.sum(np.einsum("ij,jk->ik", A))


def einsum_digit(x):
    return np.sum(np.einsum("i1->i", x))


def einsum_output_twice(A):
    return np.sum(np.einsum("ij->ii", A))


def linspace_int_dtype(x):
    return np.sum(np.linspace(0.0, x, 5, dtype=int))


def linspace_axis(x):
    return np.sum(np.linspace(x, 2.0 * x, 3, axis=1))


def linspace_negative(x):
    return np.sum(np.linspace(0.0, x, -2))


def round_out(x):
    return np.sum(np.round(x, out=x))


def round_ints_negative(x):
    return np.sum(np.round(np.arange(5), -1)) * x[0]


def fmod_ints(x):
    return np.sum(np.fmod(np.arange(3), 2)) * x[0]


def window_backwards(x):
    s = 0.0
    for i in range(len(x) - 3):
        s += np.sum(x[i + 3 : i : -1])
    return s


def mask_with_a_matrix(x):
    y = x.copy()
    y[y > 0] = np.ones((2, 2))
    return np.sum(y)


def mask_rows_stretched(x):
    Y = np.zeros((3, 1)) + x[0]
    Y[x == x] = np.ones(4)  # would make Y (3, 4)
    return np.sum(Y)


def mask_copy_stretched(x):
    y = np.zeros((3, 1)) + x[0]
    z = np.ones((3, 4))
    m = x == x  # a mask known when the kernel runs
    y[m] = z[m]  # would make y (3, 4)
    return np.sum(y)


def sum_of_three(x):
    return sum((t for t in (x, x)), 1.0, 2.0)


def tuple_step_zero(x):
    t = (x, 2.0 * x)
    return t[::0][0]


def trapezoid_of_a_number(x):
    return np.trapezoid(x[0])


def multi_dot_one_array(A):
    return np.sum(np.linalg.multi_dot(A))


def multi_dot_of_a_vector_inside(A, v):
    return np.sum(np.linalg.multi_dot([A, v, A]))


def matrix_power_of_a_vector(v):
    return np.sum(np.linalg.matrix_power(v, 2))


def matrix_power_inverse_of_a_stack(S):
    return np.sum(np.linalg.matrix_power(S, -1))


def average_with_matrix_weights(X):
    return np.sum(np.average(X, axis=0, weights=np.ones((2, 2, 2))))


def append_two(x):
    ys = []
    ys.append(x, 2.0 * x)
    return ys[0]


def bare_return(x):
    if x > 0:
        return
    return x


def kw_not_a_dict(x):
    return np.sum(x, **x)


def add_at_stretched(x):
    out = np.zeros((3, 1))
    np.add.at(out, [0, 1], np.ones((2, 4)))
    return np.sum(out) * x[0]


def add_at_of_an_expression(x):
    np.add.at(x * 2, [0], 1.0)
    return np.sum(x)


def norm_over_three_axes(x):
    return np.linalg.norm(np.ones((2, 2, 2)) * x[0], 1, axis=(0, 1, 2))


def write_two_run_time_slices(x, n: int):
    A = np.zeros((n, n))
    for i in range(n):
        A[i:, i:] = x[0]
    return np.sum(A)


def fill_diagonal_of_a_rectangle(X):
    M = X.copy()
    np.fill_diagonal(M, 1.0)
    return np.sum(M)


def positions_stretched(x):
    y = np.zeros((3, 1)) + x[0]
    y[[0, 2]] = np.ones((2, 4))
    return np.sum(y)


def several_quantiles(x):
    return np.sum(np.quantile(x, np.array([0.1, 0.9])))


def range_of_a_power(x, k: int):
    s = 0.0
    for _ in range(2**k):
        s += x[0]
    return s


V3 = np.array([1.0, -2.0, 3.0])
M3 = np.arange(9.0).reshape(3, 3) + np.eye(3)


PARAMS = {"a": 1.0}


def missing_key(x):
    return x * PARAMS["b"]


def key_from_a_value(x):
    return x * PARAMS[int(x)]


def dict_method_arguments(x):
    return x * len(PARAMS.items(1))


def float_of_a_word(x):
    return x * float("big")


def membership_of_a_number(x):
    return x if x in x else 0.0


def ordering_strings(x):
    return x if "a" < "b" else 0.0


def identity_of_numbers(x, y):
    return x if x is y else y


def raise_on_every_path(x):
    raise ValueError(f"x is {x}")


CASES = [
    (repeat_negative, (V3,), "negative dimensions are not allowed", "0 or more"),
    (repeat_negative_counts, (V3,), "np.repeat: negative dimensions", "0 or more"),
    (einsum_number_subscripts, (V3,), "must be a string constant", "write them out"),
    (einsum_too_few_operands, (M3,), "2 operand subscripts for 1 operands", "one"),
    (einsum_digit, (V3,), "invalid subscript in 'i1->i'", "letters a-z"),
    (einsum_output_twice, (M3,), "output subscript 'i' appears more", "each"),
    (linspace_int_dtype, (1.0,), "`dtype` must be float", "np.floor"),
    (linspace_axis, (V3,), "only axis=0 is supported", ".T or np.transpose"),
    (linspace_negative, (1.0,), "Number of samples, -2, must be", "num >= 0"),
    (round_out, (V3,), "np.round: `out` is not supported", "the returned array"),
    (round_ints_negative, (V3,), "integers with negative decimals", "x * 1.0"),
    (fmod_ints, (V3,), "np.fmod of integers is not supported", "a * 1.0"),
    (window_backwards, (np.ones(6),), "run-time start needs a positive step", "x[i]"),
    (mask_with_a_matrix, (V3,), "could not broadcast the value of shape", "a number"),
    (mask_rows_stretched, (V3,), "into the masked elements of", "a number"),
    (mask_copy_stretched, (V3,), "could not broadcast the masked", "np.where"),
    (sum_of_three, (1.0,), "`sum` takes a generator and an optional start", "sum("),
    (tuple_step_zero, (1.0,), "slice step cannot be zero", "step"),
    (trapezoid_of_a_number, (V3,), "`y` must be an array, not a number", "1-D array"),
    (multi_dot_one_array, (M3,), "multi_dot takes a tuple or list", "a list"),
    (multi_dot_of_a_vector_inside, (M3, V3), "must be two-dimensional", "first and"),
    (matrix_power_of_a_vector, (V3,), "at least two-dimensional", "square matrix"),
    (
        matrix_power_inverse_of_a_stack,
        (np.ones((2, 3, 3)),),
        "negative power",
        "n >= 0",
    ),
    (average_with_matrix_weights, (M3,), "1D weights expected", "1-D weights"),
    (append_two, (1.0,), "`ys.append` takes one argument", "ys.extend((a, b))"),
    (bare_return, (1.0,), "`return` without a value", "from every `return`"),
    (missing_key, (1.0,), "the dict has no key 'b'", "its keys are 'a'"),
    (key_from_a_value, (1.0,), "indexed by a constant key", "write the key"),
    (dict_method_arguments, (1.0,), "bad call of `.items()`", "take no arguments"),
    (float_of_a_word, (1.0,), "float() cannot convert 'big'", 'float("inf")'),
    (membership_of_a_number, (1.0,), "`in` needs a tuple or a list", "write the"),
    (ordering_strings, (1.0,), "`<` between `str` and `str`", "== or !="),
    (identity_of_numbers, (1.0, 2.0), "`is` between numbers", "`x is None`"),
    (raise_on_every_path, (1.0,), "this `raise` runs for these arguments", "raises"),
    (kw_not_a_dict, (V3,), "`**x` must unpack a dict", "one by one"),
    (add_at_stretched, (V3,), "np.add.at: could not broadcast", "one value per"),
    (add_at_of_an_expression, (V3,), "it must be a variable", "name the array"),
    (norm_over_three_axes, (V3,), "over more than two axes", "one axis"),
    (write_two_run_time_slices, (V3, 3), "a write to two slices", "one axis"),
    (fill_diagonal_of_a_rectangle, (np.ones((2, 3)),), "may not be square", "min("),
    (positions_stretched, (V3,), "into the indexed elements", "a number"),
    (several_quantiles, (V3,), "`q` must be one number", "once per quantile"),
    (range_of_a_power, (V3, 2), "`range` bounds must be integers", "1 << k"),
]


@pytest.mark.parametrize(
    "fn, args, message, hint", CASES, ids=[c[0].__name__ for c in CASES]
)
def test_refused_with_the_construct_and_a_hint(fn, args, message, hint):
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.jit(fn, target="python")(*args)
    text = str(info.value)
    assert message in text
    assert "\n  help: " in text and hint in text.split("\n  help: ", 1)[1]
    first = fn.__code__.co_firstlineno
    lines = [n for n in range(first, first + 8) if f"test_refusals.py:{n}:" in text]
    assert lines, text  # the location points into the function
