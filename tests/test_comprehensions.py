"""Comprehensions and generator expressions: ``sum``/``max``/``min`` of a generator,
``tuple(...)``, list comprehensions (tuples over static iterations, arrays over
run-time ranges), filters and nested ``for`` clauses; values against Python,
gradients against JAX and central finite differences, Hessians and JVPs against
JAX; what stays unsupported, word for word with its position.

The functions differentiated here live in this file, so that ``inspect.getsource``
reads them; the JAX oracle runs the same functions with ``np`` and ``math`` rebound
to ``jax.numpy``.
"""

from __future__ import annotations

import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import symdiff
from symdiff.frontend.comprehensions import STATIC_ITEMS
from symdiff.frontend.lower import trace
from symdiff.ir.node import topological
from tests.checks import assert_close, fd_derivative, with_modules

jax.config.update("jax_enable_x64", True)

LINES = Path(__file__).read_text().splitlines()


# -- the forms users write -------------------------------------------------------------
def sum_of_squares(x):
    return sum(x[i] ** 2 for i in range(len(x)))


def list_of_three(x):
    ys = [math.sin(x[i]) for i in range(3)]
    return ys[0] * ys[1] + ys[2]


def sum_over_arguments(a, b, c):
    return sum(t * t for t in (a, b, c))


def neighbours(x):
    return np.array([x[i] * x[i + 1] for i in range(len(x) - 1)]).sum()


def sum_over_rows(w, xs):
    return sum(np.dot(w, row) ** 2 for row in xs)


def max_and_min(x):
    return max(x[i] for i in range(4)) - min(x[i] * x[0] for i in range(4))


def nested_fors(x):
    return sum(x[i] * x[j] for i in range(3) for j in range(i))


def static_filter(x):
    return sum(x[i] for i in range(5) if i % 2 == 0)


def unpacked_tuple(x):
    a, b, c = tuple(x[i] * (i + 1) for i in range(3))
    return a * b - c


def enumerated(x):
    ys = [v * math.exp(-0.1 * i) for i, v in enumerate(x)]
    return np.array(ys).sum()


def zipped_list(x, y):
    return np.sum(np.array([a * b for a, b in zip(x, y)]) ** 2)


def zipped_sum(x, y):
    return sum(a * math.sin(b) for a, b in zip(x, y))


def outer_product(x):
    m = np.array([[x[i] * x[j] for j in range(len(x))] for i in range(len(x))])
    return np.sum(m * m) + m[0, 1]


def rows_of_a_matrix(X):
    r = [np.tanh(row) for row in X]
    return np.sum(np.array(r) ** 2)


def shadowed_target(x):
    i = 2
    s = sum(x[i] for i in range(3))
    return s * x[i]  # Python's `i` is still 2: the comprehension's is its own


def in_a_loop(x, n):
    s = 0.0
    for k in range(n):
        s = s + sum(x[j] * k for j in range(3))
    return s


def helper_sum(v):
    return sum(t * t for t in v)


def calls_a_helper(x):
    return helper_sum(x) + helper_sum(x[1:])


def with_start(x):
    return sum((x[i] for i in range(len(x))), 1.5) * 2.0


def max_with_run_time_filter(x):
    return max(x[i] * x[i] for i in range(len(x)) if x[i] < 1.0)


def sum_with_run_time_filter(x):
    return sum(math.exp(x[i]) for i in range(len(x)) if x[i] > 0.0)


def sum_of_rows(X):
    return np.sum(sum(row * row for row in X))


def sum_of_arrays(x):
    return np.sum(sum(x * c for c in (1.0, 2.0, 3.0)) ** 2)


def long_constant_range(x):
    ys = [x[i % 3] * i for i in range(20)]
    return ys[3] * ys[17] + sum(ys)


def list_of_pairs(x):
    ps = [(x[i], x[i] * x[i]) for i in range(12)]
    return sum(a * b for a, b in ps)


def indexed_at_run_time(x, n):
    ys = [x[i] ** 2 for i in range(4)]
    s = 0.0
    for k in range(n):
        s = s + ys[k % 4]
    return s


def list_of_ints(x):
    idx = [len(x) - 1 - i for i in range(len(x))]
    return sum(x[idx[i]] * i for i in range(len(x)))


def filtered_list(x):
    ys = [x[i] for i in range(5) if i % 2 == 1]
    return ys[0] * ys[1]


def nested_static_list(x):
    return sum([x[i] * x[j] for i in range(3) for j in range(3) if j > i])


def max_of_a_list(x):
    return max([x[i] for i in range(len(x))]) + min([x[0], x[1]])


def reversed_enumerate(x):
    return sum(v * k for k, v in enumerate(reversed(x)))


def double_sum(x):
    return sum(
        sum(x[i] * x[j] * math.cos(x[i] - x[j]) for j in range(len(x)))
        for i in range(len(x))
    )


def in_a_branch(x):
    if x[0] > 0.0:
        s = sum(x[i] ** 3 for i in range(len(x)))
    else:
        s = -sum(v * v for v in x)
    return s


def in_a_while_loop(x):
    s, k = 0.0, 0
    while k < 3:
        s = s + max(x[i] * (k + 1) for i in range(3))
        k += 1
    return s


def sums_in_a_list(x):
    return np.sum(np.array([sum(x[j] for j in range(i + 1)) for i in range(4)]) ** 2)


def target_read_later(x):
    s = sum(x[i] for i in range(len(x)))
    t = sum(x[i] * x[i] for i in range(len(x)))
    for i in range(2):
        s = s * t + i
    return s


def list_over_an_int_argument(x, k):
    # a negative `k` allocates no items, in the branch not taken too
    return np.sum(np.array([x[i % 3] * i for i in range(k)])) if k > 0 else x[0]


def walrus_in_a_filter(x):
    return sum(y for i in range(4) if (y := x[i] * 2.0) > 0.0)


X5 = np.array([0.3, -1.2, 0.7, 2.0, 0.5])
Y5 = np.array([1.3, 0.2, -0.7, 0.1, 0.9])
ROWS = np.arange(12.0).reshape(4, 3) / 10 - 0.5

CASES = [
    (sum_of_squares, (X5,)),
    (list_of_three, (X5,)),
    (sum_over_arguments, (0.5, 1.5, -2.0)),
    (neighbours, (X5,)),
    (sum_over_rows, (np.array([0.1, 0.2, -0.3]), ROWS)),
    (max_and_min, (X5,)),
    (max_and_min, (-X5,)),
    (nested_fors, (X5,)),
    (static_filter, (X5,)),
    (unpacked_tuple, (X5,)),
    (enumerated, (X5,)),
    (zipped_list, (X5, Y5)),
    (zipped_sum, (X5, Y5)),
    (outer_product, (X5,)),
    (rows_of_a_matrix, (ROWS,)),
    (shadowed_target, (X5,)),
    (in_a_loop, (X5, 4)),
    (calls_a_helper, (X5,)),
    (with_start, (X5,)),
    (max_with_run_time_filter, (X5,)),
    (sum_with_run_time_filter, (X5,)),
    (sum_of_rows, (ROWS,)),
    (sum_of_arrays, (X5,)),
    (long_constant_range, (X5,)),
    (list_of_pairs, (np.linspace(-1.0, 1.0, 12),)),
    (indexed_at_run_time, (X5, 7)),
    (list_of_ints, (X5,)),
    (filtered_list, (X5,)),
    (nested_static_list, (X5,)),
    (max_of_a_list, (X5,)),
    (reversed_enumerate, (X5,)),
    (double_sum, (X5,)),
    (in_a_branch, (X5,)),
    (in_a_branch, (-X5,)),
    (in_a_while_loop, (X5,)),
    (sums_in_a_list, (X5,)),
    (target_read_later, (X5,)),
    (walrus_in_a_filter, (X5,)),
    (list_over_an_int_argument, (X5, 4)),
    (list_over_an_int_argument, (X5, -2)),
]


def _ids(cases):
    """The function's name, numbered where it is checked at several points."""
    names = [fn.__name__ for fn, _ in cases]
    return [
        f"{n}-{names[:k].count(n)}" if names.count(n) > 1 else n
        for k, n in enumerate(names)
    ]


def _jax(fn):
    return with_modules(fn, np=jnp, math=jnp)


@pytest.mark.parametrize(("fn", "args"), CASES, ids=_ids(CASES))
def test_value_and_gradient_match_python_jax_and_differences(fn, args):
    value, grad = symdiff.value_and_grad(fn, target="python")(*args)
    np.testing.assert_allclose(value, fn(*args), rtol=1e-12, atol=1e-12)
    want = np.asarray(jax.grad(_jax(fn))(*args))
    assert_close(grad, want, f"grad of {fn.__name__} against JAX")
    fd = fd_derivative(fn, args, 0)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-7)


HIGHER = [
    sum_of_squares,
    neighbours,
    max_and_min,
    outer_product,
    double_sum,
    in_a_branch,
    sums_in_a_list,
    sum_with_run_time_filter,
]


@pytest.mark.parametrize("fn", HIGHER, ids=[f.__name__ for f in HIGHER])
def test_hessian_and_jvp_match_jax(fn):
    x = X5
    t = np.linspace(0.1, 0.5, 5)
    h = symdiff.hessian(fn, target="python")(x)
    assert_close(h, np.asarray(jax.hessian(_jax(fn))(x)), f"hessian of {fn.__name__}")
    value, tangent = symdiff.jvp(fn, (x,), (t,), target="python")
    want_value, want_tangent = jax.jvp(_jax(fn), (x,), (t,))
    assert value == pytest.approx(float(want_value), rel=1e-12)
    assert tangent == pytest.approx(float(want_tangent), rel=1e-10)


@pytest.mark.slow
def test_compiled_with_numba():
    for fn, args in [
        (sum_of_squares, (X5,)),
        (neighbours, (X5,)),
        (sum_over_rows, (np.array([0.1, 0.2, -0.3]), ROWS)),
        (max_with_run_time_filter, (X5,)),
        (outer_product, (X5,)),
        (enumerated, (X5,)),
    ]:
        value, grad = symdiff.value_and_grad(fn, target="cpu")(*args)
        assert value == pytest.approx(fn(*args), rel=1e-12)
        assert_close(grad, np.asarray(jax.grad(_jax(fn))(*args)), fn.__name__)


# -- what they become ------------------------------------------------------------------
def test_static_iterations_are_unrolled():
    for fn, args in [
        (list_of_three, (X5,)),
        (sum_over_arguments, (0.5, 1.5, -2.0)),
        (max_and_min, (X5,)),
        (nested_fors, (X5,)),
    ]:
        f = symdiff.jit(fn, target="python")
        f(*args)
        lines = [line.strip() for line in f.source.splitlines()]
        assert not any(line.startswith("for ") for line in lines), f.source
        # max of a static generator folds its items: no -inf to start from
        assert "inf" not in f.source


def test_a_list_over_a_run_time_range_is_an_array_filled_in_a_loop():
    f = symdiff.jit(neighbours, target="python")
    assert f(X5) == pytest.approx(neighbours(X5))
    source = f.source
    assert "items = np.zeros((max(x.shape[0] - 1, 0),))" in source, source
    assert "# for i in range(len(x) - 1)" in source


def test_the_gradient_of_a_sum_reads_like_its_loop():
    g = symdiff.grad(sum_of_squares, target="python")
    g(X5)
    source = g.source
    assert "# backward: for i in range(len(x))" in source, source
    assert "total_bar" in source  # the accumulator's adjoint, named like it
    assert "x_bar[i" in source


def test_tuple_unrolls_constant_ranges_up_to_its_limit():
    assert symdiff.jit(tuple_of_the_limit, target="python")(X5) == pytest.approx(
        tuple_of_the_limit(X5)
    )
    with pytest.raises(symdiff.TranslationError, match="needs a length known"):
        symdiff.jit(tuple_past_the_limit, target="python")(X5)


def tuple_of_the_limit(x):
    t = tuple(x[i % 5] * i for i in range(STATIC_ITEMS))
    return t[1] * t[STATIC_ITEMS - 1]


def tuple_past_the_limit(x):
    t = tuple(x[i % 5] * i for i in range(STATIC_ITEMS + 1))
    return t[1] * t[STATIC_ITEMS]


def test_the_targets_do_not_become_loop_state():
    """``i`` of the first comprehension is read later, by the second one and by
    the loop: Python's comprehension has its own ``i``, so each loop carries only
    its total."""
    traced = trace(target_read_later, ("float64[:]",))
    loops = [n for n in topological([traced.output]) if n.op == "loop"]
    assert len(loops) == 2
    assert [len(n.attrs[0].carried) for n in loops] == [1, 1]


# -- what stays unsupported ------------------------------------------------------------
def tuple_over_a_run_time_range(x):
    return sum(tuple(x[i] for i in range(len(x))))


def list_with_a_run_time_filter(x):
    ys = [x[i] for i in range(len(x)) if x[i] > 0.0]
    return np.sum(np.array(ys))


def tuple_with_a_run_time_filter(x):
    a, b = tuple(x[i] for i in range(4) if x[i] > 0.0)
    return a * b


def two_run_time_clauses(x):
    return np.sum(np.array([x[i] * x[j] for i in range(len(x)) for j in range(3)]))


def set_comprehension(x):
    s = {x[i] for i in range(3)}
    return x[0] * len(s)


def dict_comprehension(x):
    d = {i: x[i] for i in range(3)}
    return x[0] * len(d)


def generator_to_np_array(x):
    return np.array(x[i] for i in range(3)).sum()


def generator_assigned(x):
    g = (x[i] for i in range(3))
    return sum(g)


def generator_to_a_helper(x):
    return helper_sum(x[i] for i in range(3))


def max_with_key(x):
    return max((x[i] for i in range(3)), key=abs)


def pairs_over_a_run_time_range(x):
    ps = [(x[i], x[i] * 2.0) for i in range(len(x))]
    return ps[0][0]


def max_of_rows(X):
    return max(row for row in X)


def max_of_nothing(x):
    return max(x[i] for i in range(0))


def too_many_items(x):
    return tuple(x[i % 3] for i in range(40) for j in range(40))


RUN_TIME_FILTER = (
    "a comprehension filter that depends on run-time values gives a list of "
    "unknown length",
    "choose the item instead (`[v if cond else 0.0 for ...]`), or add the items up "
    "with sum(... if cond), which may filter at run time",
)
ARGUMENT_ONLY = (
    "it is supported as the argument of sum(), max(), min(), tuple(), list(), "
    "any(), all(), math.fsum() or math.prod()"
)

ERRORS = [
    (
        tuple_over_a_run_time_range,
        "range(len(x))",
        "`tuple(...)` needs a length known when compiling; this `for` runs over a "
        "run-time range",
        "build an array with a list comprehension `[... for ...]`, or iterate over "
        f"a constant range (at most {STATIC_ITEMS} items)",
    ),
    (list_with_a_run_time_filter, "x[i] > 0.0", *RUN_TIME_FILTER),
    (tuple_with_a_run_time_filter, "x[i] > 0.0", *RUN_TIME_FILTER),
    (
        two_run_time_clauses,
        "[x[i] * x[j] for i in range(len(x)) for j in range(3)]",
        "a list comprehension with several `for` clauses over a run-time range is "
        "not supported",
        "nest the comprehensions (`[[... for j in ...] for i in ...]` is a 2-D "
        "array), or add the items up with sum(...)",
    ),
    (
        set_comprehension,
        "{x[i] for i in range(3)}",
        "a set comprehension is not supported",
        "use a list comprehension `[... for ...]`: sets have no order to "
        "differentiate along",
    ),
    (
        dict_comprehension,
        "{i: x[i] for i in range(3)}",
        "a dict comprehension is not supported",
        "use a list comprehension `[... for ...]` and index it, or pass the values "
        "as arguments",
    ),
    (
        generator_to_np_array,
        "(x[i] for i in range(3))",
        f"a generator expression cannot be passed to `np.array`: {ARGUMENT_ONLY}",
        "write the generator as a list comprehension `[... for ...]`",
    ),
    (
        generator_assigned,
        "(x[i] for i in range(3))",
        "a generator expression is supported only as the argument of sum(), max(), "
        "min(), tuple() or list()",
        "write a list comprehension `[...]` for a list of values",
    ),
    (
        generator_to_a_helper,
        "(x[i] for i in range(3))",
        f"a generator expression cannot be passed to `helper_sum`: {ARGUMENT_ONLY}",
        "write the generator as a list comprehension `[... for ...]`",
    ),
    (
        max_with_key,
        "max((x[i] for i in range(3)), key=abs)",
        "`max` of a generator takes no other arguments here",
        "for max/min with `key=` or `default=`, write the loop out",
    ),
    (
        pairs_over_a_run_time_range,
        "(x[i], x[i] * 2.0)",
        "the items of a list comprehension over a run-time range must be numbers "
        "or arrays",
        "build one list per part, or iterate over a constant range "
        f"(at most {STATIC_ITEMS} items), which gives a tuple",
    ),
    (
        max_of_rows,
        "row for",
        "`max` of arrays is not defined element-wise",
        "use np.maximum(a, b) element-wise, or np.max(x)",
    ),
    (
        max_of_nothing,
        "(x[i] for i in range(0))",
        "`max()` of an empty sequence",
        "Python raises ValueError here; give it at least one item",
    ),
    (
        too_many_items,
        "(x[i % 3] for i in range(40) for j in range(40))",
        "a comprehension of more than 1024 items is not unrolled",
        "build an array with one `for` clause over a range, or add the items up "
        "with sum(...)",
    ),
]


def _locate(fn, snippet: str) -> tuple[int, int]:
    """1-based line and column of ``snippet`` in the body of ``fn``."""
    first = fn.__code__.co_firstlineno
    for line in range(first, first + 10):
        text = LINES[line - 1]
        if snippet in text:
            return line, text.index(snippet) + 1
    raise AssertionError(f"{snippet!r} is not in {fn.__name__}")


@pytest.mark.parametrize(
    ("fn", "snippet", "message", "hint"), ERRORS, ids=[e[0].__name__ for e in ERRORS]
)
def test_unsupported_forms_say_what_to_write(fn, snippet, message, hint):
    arg = np.ones((3, 2)) if fn is max_of_rows else X5
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(fn, target="python")(arg)
    err = info.value
    assert len(err.diagnostics) == 1, str(err)  # no follow-on errors
    (diag,) = err.diagnostics
    assert diag.message == message
    assert diag.hint == hint
    line, col = _locate(fn, snippet)
    assert (diag.line, diag.col) == (line, col), str(err)
    assert Path(diag.filename).name == "test_comprehensions.py"
    rendered = str(err)
    assert f":{line}:{col}: {message}" in rendered
    caret_line = rendered.splitlines()[
        rendered.splitlines().index("    " + LINES[line - 1].strip()) + 1
    ]
    indent = len(LINES[line - 1]) - len(LINES[line - 1].lstrip())
    assert caret_line.index("^") == 4 + col - 1 - indent
    if snippet.startswith(("(", "[", "{")) or snippet.startswith("max("):
        assert caret_line.count("~") + 1 == len(snippet)


def scaled_rows(X):
    return np.array(
        [[X[i, j] * (i + 1) for j in range(X.shape[1])] for i in range(X.shape[0])]
    )


def test_nested_list_comprehension_forward_mode_on_the_parallel_target():
    """The accumulators ``items``, ``items_`` and their tangents were named so that
    Numba's parallel lowering made two of them ``items__dot`` (an internal
    AssertionError)."""
    X = np.arange(6.0).reshape(2, 3)
    T = np.ones((2, 3))
    value, tangent = symdiff.jvp(scaled_rows, (X,), (T,), target="parallel")
    np.testing.assert_array_equal(value, scaled_rows(X))
    np.testing.assert_array_equal(tangent, scaled_rows(T))


def row_square_norms(X):
    return np.array([np.sum(row**2) for row in X])


def test_reverse_mode_of_a_list_over_an_arrays_rows():
    """The array's length is the rows' count, a length node the kernel printed
    through the scalar printer (an internal KeyError 'dim')."""
    X = np.arange(6.0).reshape(3, 2)
    ct = np.array([1.0, 2.0, 3.0])
    for target in ("python", "cpu"):
        (x_bar,) = symdiff.vjp(row_square_norms, X, target=target)[1](ct)
        np.testing.assert_array_equal(x_bar, 2 * ct[:, None] * X)
    jac = symdiff.jacobian(row_square_norms, mode="reverse", target="python")(X)
    assert np.shape(jac) == (3, 3, 2)
