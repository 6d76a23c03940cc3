"""Local functions: a ``def`` or ``lambda`` inside the differentiated function,
inlined at each call with Python's scoping (the enclosing variables as they are at
the call, private locals, defaults computed where the function is defined);
values against Python, gradients against JAX and central finite differences,
Hessians and JVPs against JAX; what stays unsupported, word for word with its
position.

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
from tests.checks import assert_close, fd_derivative, with_modules

jax.config.update("jax_enable_x64", True)

LINES = Path(__file__).read_text().splitlines()


# -- the forms users write -------------------------------------------------------------
def closures_and_defaults(x, y):
    sq = lambda t: t * t  # noqa: E731

    def g(t, s=2.0):
        return math.sin(t) * s + y  # reads the enclosing `y`

    return sq(x) + g(x) + g(y, 3.0)


def late_binding(x):
    w = 2.0
    scale = lambda t: t * w  # noqa: E731
    a = scale(x[0])
    w = x[1] * 3.0  # the next call sees the new `w`
    return a + scale(x[2])


def keywords_and_positional_only(x):
    def g(a, /, b, c=0.5):
        return a * b - c

    return g(x[0], c=x[1], b=x[2]) + g(x[1], x[2])


def calls_each_other(x):
    def outer(t):
        return inner(t) * 2.0 + t  # `inner` is defined by the time of the call

    def inner(t):
        return math.exp(-t * t)

    return outer(outer(x[0])) + inner(x[1])


def private_locals(x):
    t = x[0]

    def g(u):
        t = u * 2.0  # g's own `t`
        return t + 1.0

    r = g(x[1])
    return t * r


def in_a_loop(x):
    w = 2.0
    h = lambda t: t * w  # noqa: E731
    s = 0.0
    for i in range(len(x)):
        s = s + h(x[i])
        w = w + x[i]  # read by the next call
    return s


def in_a_generator(x):
    sq = lambda t: t * t  # noqa: E731
    return sum(sq(x[i]) for i in range(len(x))) + max(sq(x[i]) for i in range(3))


def loop_inside_reads_enclosing(x):
    y = x[0]
    a = lambda t: t * y  # noqa: E731

    def b(t):
        s = 0.0
        for i in range(len(x)):
            s = s + a(x[i] * t)
        return s

    return b(2.0) + b(x[1])


def defined_in_a_loop(x):
    acc = 0.0
    for i in range(len(x)):
        h = lambda t: t * x[i]  # noqa: E731
        acc = acc + h(x[i - 1])
    for k in range(3):  # unrolled
        h = lambda t: t + k  # noqa: E731
        acc = acc * h(x[k])
    return acc


def default_in_a_loop(x):
    y = x[0]

    def g(t, s=y * y):
        return t * s

    acc = 0.0
    for i in range(len(x)):
        acc = acc + g(x[i])
    y = 10.0  # the default was computed at the `def`
    return acc + g(1.0)


def apply_twice(fn, v):
    return fn(fn(v))


def map_sum(fn, v):
    s = 0.0
    for i in range(len(v)):
        s = s + fn(v[i])
    return s


def passed_to_helpers(x):
    k = x[0]
    twice = apply_twice(lambda t: t * k + 1.0, x[1])
    return twice + map_sum(lambda t: math.sin(t * k), x)


def on_arrays(x):
    layer = lambda v: np.tanh(v * x[0] + 0.1)  # noqa: E731
    return np.sum(layer(layer(x)) ** 2)


def branching_local(x):
    def relu_ish(t):
        if t > 0.0:
            return t * t
        return -0.5 * t

    return sum(relu_ish(x[i] - 0.25) for i in range(len(x)))


def nested_locals(x):
    a = x[0]

    def outer(t):
        b = t * a
        inner = lambda u: u * b + a  # noqa: E731
        return inner(t) + inner(b)

    return outer(x[1]) * outer(x[2])


def loop_nodes_nested(x):
    c = x[0]
    f = lambda t: t * c  # noqa: E731

    def g(t):
        s = 0.0
        for i in range(len(x)):
            for j in range(len(x)):
                s = s + f(x[i] * x[j]) * t
        return s

    acc = 0.0
    for k in range(len(x)):
        acc = acc + g(x[k])
    return acc


def tuple_of_functions(x):
    fs = (math.sin, lambda t: t * t, math.exp)
    return sum(f(x[i]) for i, f in enumerate(fs))


X5 = np.array([0.3, -0.7, 1.1, 0.4, 0.9])

CASES = [
    (late_binding, (X5,)),
    (keywords_and_positional_only, (X5,)),
    (calls_each_other, (X5,)),
    (private_locals, (X5,)),
    (in_a_loop, (X5,)),
    (in_a_generator, (X5,)),
    (loop_inside_reads_enclosing, (X5,)),
    (defined_in_a_loop, (X5,)),
    (default_in_a_loop, (X5,)),
    (passed_to_helpers, (X5,)),
    (on_arrays, (X5,)),
    (branching_local, (X5,)),
    (nested_locals, (X5,)),
    (loop_nodes_nested, (X5,)),
    (tuple_of_functions, (X5,)),
]


def _jax(fn):
    return with_modules(fn, np=jnp, math=jnp)


@pytest.mark.parametrize(("fn", "args"), CASES, ids=[f.__name__ for f, _ in CASES])
def test_value_and_gradient_match_python_jax_and_differences(fn, args):
    value, grad = symdiff.value_and_grad(fn, target="python")(*args)
    np.testing.assert_allclose(value, fn(*args), rtol=1e-12, atol=1e-12)
    want = np.asarray(jax.grad(_jax(fn))(*args))
    assert_close(grad, want, f"grad of {fn.__name__} against JAX")
    fd = fd_derivative(fn, args, 0)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-7)


def test_the_example_closure_with_defaults():
    # the gradient in both arguments: `y` is read by `g` as a closure
    x, y = 1.3, 0.7
    value, (gx, gy) = symdiff.value_and_grad(
        closures_and_defaults, argnums=(0, 1), target="python"
    )(x, y)
    assert value == pytest.approx(closures_and_defaults(x, y), rel=1e-14)
    assert gx == pytest.approx(2 * x + 2.0 * math.cos(x), rel=1e-12)
    assert gy == pytest.approx(1.0 + 3.0 * math.cos(y) + 1.0, rel=1e-12)
    want = jax.grad(_jax(closures_and_defaults), argnums=(0, 1))(x, y)
    assert (gx, gy) == pytest.approx(tuple(float(w) for w in want), rel=1e-12)


HIGHER = [late_binding, in_a_loop, loop_inside_reads_enclosing, nested_locals]


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
    for fn in (in_a_loop, loop_inside_reads_enclosing, passed_to_helpers):
        value, grad = symdiff.value_and_grad(fn, target="cpu")(X5)
        assert value == pytest.approx(fn(X5), rel=1e-12)
        assert_close(grad, np.asarray(jax.grad(_jax(fn))(X5)), fn.__name__)


def test_a_call_in_a_loop_node_reads_captured_variables():
    # `f` called from `g`'s loops reads `c` through each loop's captured inputs:
    # the traced loops are well formed, and nothing of the outer graph leaks in
    f = symdiff.jit(loop_nodes_nested, target="python")
    assert f(X5) == pytest.approx(loop_nodes_nested(X5), rel=1e-12)


# -- what stays unsupported --------------------------------------------------------------
def recursive_local(x):
    def fact(n, t):
        return t if n == 0 else fact(n - 1, t) * t

    return fact(3, x)


def returns_a_def(x):
    def g(t):
        return t * 2.0

    return (g, x)


def passes_to_numpy(x):
    g = lambda t: t * 2.0  # noqa: E731
    return np.sum(np.vectorize(g)(x))


def writes_into_enclosing(x):
    out = np.zeros(3)

    def put(i, v):
        out[i] = v
        return v

    return put(0, x[0]) + np.sum(out)


def bad_call(x):
    g = lambda t, s=1.0: t * s  # noqa: E731
    return g(x, 2.0, 3.0)


def reads_a_later_variable(x):
    g = lambda t: t * z  # noqa: E731
    a = g(x)
    z = 2.0
    return a + z


def _line(snippet: str) -> int:
    """The line of this file's user code (above the tests) holding ``snippet``."""
    end = LINES.index("def _line(snippet: str) -> int:")
    (line,) = [i + 1 for i, text in enumerate(LINES[:end]) if snippet in text]
    return line


def _only(fn, *args):
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(fn, target="python")(*args)
    (diag,) = info.value.diagnostics
    return diag


def test_recursion_is_reported():
    diag = _only(recursive_local, 1.5)
    assert diag.message == "recursive call of `fact` cannot be inlined"
    assert diag.hint == "rewrite the recursion as a loop"
    assert diag.line == _line("fact(n - 1, t) * t")
    assert diag.col == LINES[diag.line - 1].index("fact(n - 1") + 1
    assert diag.notes == (
        f"inlined from `recursive_local` at {diag.filename}:{_line('fact(3, x)')}",
    )


def test_a_local_function_as_a_value_is_reported():
    diag = _only(returns_a_def, 1.5)
    assert diag.message == (
        "the local function `g` cannot be returned: symdiff inlines local "
        "functions where they are called"
    )
    assert diag.hint == "call it here and use its value, or define it at module level"
    assert diag.line == _line("return (g, x)")
    diag = _only(passes_to_numpy, X5)
    assert diag.message == (
        "a lambda cannot be passed to `np.vectorize`: symdiff inlines local "
        "functions where they are called"
    )


def test_writing_into_an_enclosing_array_is_reported():
    diag = _only(writes_into_enclosing, X5)
    assert diag.message == (
        "`put` writes into `out` of the function around it, which Python would "
        "change there; symdiff passes arrays as values"
    )
    assert diag.hint == (
        "return the new array from `put` and assign it in the enclosing function "
        "(`out = put(...)`)"
    )
    assert (diag.line, diag.col) == (_line("out[i] = v"), 9)


def test_bad_calls_and_unassigned_variables_are_reported():
    diag = _only(bad_call, 1.5)
    assert diag.message == "bad call of `g`: too many positional arguments"
    diag = _only(reads_a_later_variable, 1.5)
    assert diag.message == "`z` is used before it is assigned"
    assert diag.line == _line("g = lambda t: t * z")
