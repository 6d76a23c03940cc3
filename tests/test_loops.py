"""Loops and control flow: every transform on the loop corpus, against its oracle.

The corpus (``loop_corpus.py``) names one oracle per function:

* ``"autograd"``: HIPS autograd on the *same* user code: ``loop_corpus.py`` is loaded a
  second time with its global ``np`` rebound to ``autograd.numpy`` and its global
  ``math`` to the same functions from ``autograd.numpy``, so every corpus function
  and every helper it calls becomes an autograd function.  symdiff must agree to a
  norm-wise relative error of 1e-9.
* ``"fd"``: central finite differences of the plain function (step 1e-6), for
  functions that write into arrays (autograd cannot).  symdiff must agree to
  ``rtol=1e-5, atol=1e-7`` element-wise.

Both oracles are checked on their own first (``test_oracle_consistent``, which needs
no symdiff): autograd's forward value against the plain call and its derivatives
against finite differences; finite differences against themselves at twice the step
(so the step is in the flat part of the error curve).  Every point the symdiff tests
use is checked: both seeds and the second trip counts.

symdiff is then checked against the oracle: ``jit`` against the plain call; ``grad``
and ``value_and_grad`` on every scalar function; ``jvp`` and ``vjp`` on a sample and
every array function; ``jacobian`` on the array functions.  The broad sweep runs the
generated source as plain Python (``target="python"``, no Numba compile); a sample
runs compiled with Numba (``target="cpu"``).  Two structural checks: a 1000-step loop
is a loop in the generated source, not 1000 copies of its body, and two values of an
``int`` trip count share one kernel.

Run ``python -m tests.test_loops`` to print which corpus functions cover which
feature.
"""

from __future__ import annotations

import math
import re
import types
import zlib

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

import symdiff
from tests import loop_corpus as corpus
from tests.checks import (
    assert_close,
    assert_like_argument,
    contract,
    coverage,
    fd_derivative,
    load_copy,
)
from tests.loop_corpus import BY_NAME, CASES, Int, LoopCase

FD_STEP = 1e-6  # central differences
FD_RTOL = 1e-5  # element-wise tolerance between symdiff and finite differences
FD_ATOL = 1e-7
TARGET = "python"  # the broad sweep; CPU_SAMPLE runs on "cpu"
SEEDS = (0, 1)  # grad and jit use seed 0, value_and_grad seed 1

SCALAR_CASES = [c for c in CASES if c.output == "scalar"]
ARRAY_CASES = [c for c in CASES if c.output == "array"]
SHARED_KERNEL_CASES = [c for c in CASES if c.has_other_trip_count]

# Scalar-output functions that also go through jvp and vjp (all array-output ones do):
# one per family of loops.
TRANSFORM_SAMPLE = [
    "cumprod_recurrence",
    "euler_decay",
    "exp_taylor_break",
    "halve_until_below_one",
    "horner",
    "kalman_filter_1d",
    "nested_int_bounds",
    "online_logsumexp",
    "pair_energy",
    "pair_forces",
    "pendulum_rk4",
    "rnn_tanh",
    "skip_negatives_continue",
    "strided_sum_int_bounds",
    "weighted_scatter_matrix",
    "while_until_total",
    "zero_trip_loop",
    "zip_weighted_sum",
]

# Compiled with Numba: scalar loop, data-dependent while, in-place writes, pairs of
# rows, an RNN.  The first few run always; the rest are marked slow.
CPU_SAMPLE = ["euler_decay", "halve_until_below_one", "cumsum_loop"]
CPU_SLOW = ["pair_energy", "rnn_tanh", "pair_forces", "zero_trip_loop"]


# -- the oracle ---------------------------------------------------------------------------
def _autograd_math():
    """``math`` for the autograd copy: the corpus's math functions, from autograd."""
    namespace = types.ModuleType("math_for_the_oracle")
    namespace.__dict__.update(
        sin=anp.sin,
        cos=anp.cos,
        tan=anp.tan,
        exp=anp.exp,
        log=anp.log,
        log1p=anp.log1p,
        expm1=anp.expm1,
        sqrt=anp.sqrt,
        tanh=anp.tanh,
        sinh=anp.sinh,
        cosh=anp.cosh,
        atan=anp.arctan,
        asin=anp.arcsin,
        acos=anp.arccos,
        atan2=anp.arctan2,
        hypot=anp.hypot,
        fabs=anp.abs,
        pi=math.pi,
        e=math.e,
    )
    return namespace


AUTOGRAD_CORPUS = load_copy(
    corpus, "_loop_corpus_under_autograd", np=anp, math=_autograd_math()
)


def autograd_fn(case: LoopCase):
    return getattr(AUTOGRAD_CORPUS, case.name)


def autograd_derivative(case: LoopCase, args, i):
    f = autograd_fn(case)
    if case.output == "scalar":
        return np.asarray(autograd.grad(f, i)(*args), dtype=float)
    return np.asarray(autograd.jacobian(f, i)(*args), dtype=float)


def oracle_derivatives(case: LoopCase, args, argnums):
    """One derivative per entry of argnums, of shape out.shape + arg.shape (the
    gradient for a scalar function), from the case's oracle."""
    if case.oracle == "autograd":
        return tuple(autograd_derivative(case, args, i) for i in argnums)
    assert case.oracle == "fd", case.oracle
    return tuple(fd_derivative(case.fn, args, i) for i in argnums)


# -- inputs -------------------------------------------------------------------------------
def _draw(rng, shape, domain):
    if domain == "real":
        a = rng.standard_normal(shape)
    elif domain == "small":
        a = 0.3 * rng.standard_normal(shape)
    elif domain == "positive":
        a = rng.uniform(0.5, 2.0, shape)
    elif domain == "unit":
        a = rng.uniform(-0.9, 0.9, shape)
    elif domain == "prob":
        a = rng.uniform(0.1, 0.9, shape)
    elif domain == "rate":
        a = rng.uniform(0.1, 0.4, shape)
    elif domain == "large":
        a = rng.uniform(3.0, 50.0, shape)
    elif domain == "chain":
        n, d = shape
        a = np.zeros(shape)
        a[:, 0] = 1.1 * np.arange(n)
        a = a + 0.05 * rng.standard_normal((n, d))
    else:
        raise ValueError(f"unknown domain {domain!r}")
    return float(a) if shape == () else np.ascontiguousarray(a, dtype=np.float64)


def make_args(case: LoopCase, seed=0, other=False):
    """Arguments for ``case``, reproducible from its name and ``seed``; ``other``
    takes the second value of every ``Int`` that has one."""
    rng = np.random.default_rng([zlib.crc32(case.name.encode()), seed])
    args = []
    domains = dict(zip(case.float_argnums, case.domains(), strict=True))
    for k, spec in enumerate(case.args):
        if isinstance(spec, Int):
            value = spec.other if other and spec.other is not None else spec.value
            args.append(int(value))
        else:
            args.append(_draw(rng, spec, domains[k]))
    return tuple(args)


def oracle_points(case: LoopCase):
    """Every argument tuple the symdiff tests evaluate ``case`` at."""
    points = [make_args(case, seed=s) for s in SEEDS]
    if case.has_other_trip_count:
        points.append(make_args(case, seed=0, other=True))
    return points


def tangents_like(case: LoopCase, values, seed):
    """A random direction per float argument, 0.0 for int arguments."""
    rng = np.random.default_rng(seed)
    return tuple(
        0.0
        if isinstance(spec, Int)
        else float(rng.standard_normal())
        if np.ndim(v) == 0
        else rng.standard_normal(np.shape(v))
        for spec, v in zip(case.args, values, strict=True)
    )


# -- comparisons --------------------------------------------------------------------------


def assert_fd_close(got, want, what, rtol=FD_RTOL, atol=FD_ATOL):
    shape, want_shape = np.shape(got), np.shape(want)
    assert shape == want_shape, f"{what}: shape {shape}, expected {want_shape}"
    got = np.asarray(got, dtype=float)
    want = np.asarray(want, dtype=float)
    excess = np.abs(got - want) - (atol + rtol * np.abs(want))
    assert np.all(excess <= 0), (
        f"{what}: differs from finite differences by up to "
        f"{float(np.max(np.abs(got - want))):.3g} (rtol={rtol:g}, atol={atol:g})\n"
        f"got:\n{got}\nexpected (finite differences):\n{want}"
    )


def assert_matches_oracle(case: LoopCase, got, want, what):
    if case.oracle == "fd":
        assert_fd_close(got, want, what)
    else:
        assert_close(got, want, what)


def ids(cases):
    return [c.name for c in cases]


def by_names(names):
    return [BY_NAME[n] for n in names]


# -- the corpus and its oracles on their own (no symdiff) ---------------------------------
def test_corpus_size_and_args():
    assert len(CASES) >= 45
    assert len(ARRAY_CASES) >= 3
    assert sum(c.oracle == "fd" for c in CASES) >= 8
    for c in CASES:
        assert c.oracle in ("autograd", "fd"), c.name
        assert c.output in ("scalar", "array"), c.name
        assert len(c.domains()) == len(c.float_argnums), c.name
        assert c.float_argnums, f"{c.name}: nothing to differentiate"
        assert set(c.diff_argnums) <= set(c.float_argnums), (
            f"{c.name}: argnums must not name an int argument"
        )
        for spec in c.args:
            assert isinstance(spec, (Int, tuple)), c.name
    assert SHARED_KERNEL_CASES, "no case has a second trip count"
    assert any(
        isinstance(a, Int) and 0 in (a.value, a.other) for c in CASES for a in c.args
    ), "no case runs a loop zero times through an int argument"
    for names in (TRANSFORM_SAMPLE, CPU_SAMPLE, CPU_SLOW):
        assert all(n in BY_NAME for n in names), set(names) - set(BY_NAME)


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_oracle_consistent(case):
    for args in oracle_points(case):
        value = case.fn(*args)
        assert np.all(np.isfinite(value)), f"{case.name}: non-finite value {value}"
        assert np.ndim(value) == (0 if case.output == "scalar" else 1), case.name
        assert max(float(np.max(np.abs(value))), 1.0) < 1e6, (
            f"{case.name}: value {value} too large for the tolerances"
        )
        for i in case.diff_argnums:
            fd = fd_derivative(case.fn, args, i)
            assert fd.shape == np.shape(value) + np.shape(args[i])
            # The step is small enough and large enough: twice the step agrees to a
            # tenth of the tolerance symdiff is held to.
            fd2 = fd_derivative(case.fn, args, i, step=2 * FD_STEP)
            assert_fd_close(
                fd,
                fd2,
                f"{case.name}: finite differences, steps h and 2h, arg {i}",
                rtol=FD_RTOL / 10,
                atol=FD_ATOL / 10,
            )
            if case.oracle == "autograd":
                ad = autograd_derivative(case, args, i)
                assert_fd_close(
                    ad,
                    fd,
                    f"{case.name}: autograd vs finite differences, arg {i}",
                    rtol=FD_RTOL / 10,
                    atol=FD_ATOL / 10,
                )
        if case.oracle == "autograd":
            assert_close(
                autograd_fn(case)(*args), value, "autograd's forward value", tol=1e-13
            )
        else:
            # autograd really cannot run it (else it should be the oracle)
            with pytest.raises((TypeError, ValueError)):
                autograd.grad(autograd_fn(case), case.diff_argnums[0])(*args)


# Each feature, as a pattern in the source of some corpus function (or a helper it
# calls).
REQUIRED_FEATURES = {
    "for over range(n)": r"for \w+ in range\(\w+\):",
    "range(a, b)": r"range\([^,()]+, [^,()]+\)",
    "range(a, b, step)": r"range\([^,()]+, [^,()]+, [^,()]+\)",
    "negative step": r"range\([^)]*, -1\)",
    "range of int arguments": r"range\(lo, hi, \d+\)",
    "inner bound from outer index": r"range\(i \+ 1, n\)|range\(i\)",
    "nested for": r"for .*:\n\s+for ",
    "for over an array": r"for (c|v|z) in \w+:",
    "for row in X": r"for (row|x_t) in \w+:",
    "enumerate": r"in enumerate\(",
    "zip of arrays": r"in zip\(\w+, \w+\)",
    "zip of range and array": r"in zip\(range\(",
    "while counter": r"while k < n:",
    "while data-dependent": r"while x > 1\.0:|while y < ",
    "while tolerance": r"while abs\(",
    "while with and": r"while .* and ",
    "if/else in loop": r"^( +)(?:for|while) [^\n]*\n(?:\1 [^\n]*\n)*?\1 +else:",
    "break": r"\bbreak\b",
    "continue": r"\bcontinue\b",
    "out[i] = ...": r"\w+\[i\] = ",
    "out[i] = out[i - 1] ...": r"(\w+)\[i\] = .*\b\1\[i - 1\]",
    "acc[i, :] +=": r"\w+\[i, :\] \+= ",
    "acc[j, :] -=": r"\w+\[j, :\] -= ",
    "array += in loop": r"^\s+[A-Z] \+= ",
    "x[i - 1], x[i], x[i + 1]": r"\[i - 1\].*\[i\].*\[i \+ 1\]",
    "X[i] - X[j]": r"\w\[i\] - \w\[j\]",
    "X[i, :]": r"\w\[i, :\]",
    "W @ h + U @ x_t": r"W @ h \+ U @ x_t",
    "int accumulator s = 0": r"s = 0\n",
    "tuple swap": r"\w+, \w+ = \w+, ",
    "augmented assignments": r"\*=",
    "helper call in loop": r"= pendulum_rhs\(|softplus\(|soft_pair_potential\(",
    "int // and %": r"n // 2",
    "math in loop": r"math\.(sin|cos|exp|log)\(",
    "np in loop": r"np\.(exp|tanh|sin|log)\(",
}
REQUIRED_TAGS = {
    "Euler",
    "RK4",
    "leapfrog",
    "Horner",
    "continued fraction",
    "Newton",
    "Fibonacci-like",
    "particle pairs",
    "RNN",
    "smoothing filter",
    "zero trips",
    "constant empty range",
    "int trip count",
    "data-dependent while",
    "data-dependent break",
    "counter while",
    "bisection",
    "array carried",
    "nested loops",
    "if/else in loop",
    "helper in loop",
    "out[i] =",
    "acc[i, :] +=",
    "data arguments",
}


def test_corpus_covers_every_feature():
    missing = [
        f
        for f, names in coverage(CASES, REQUIRED_FEATURES, corpus).items()
        if not names
    ]
    assert not missing, f"no corpus function uses: {missing}"
    tags = {t for c in CASES for t in c.tags}
    assert REQUIRED_TAGS <= tags, f"missing tags: {REQUIRED_TAGS - tags}"


# -- symdiff against the oracle -----------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_jit(case):
    args = make_args(case)
    got = symdiff.jit(case.fn, target=TARGET)(*args)
    want = case.fn(*args)
    if case.output == "array":
        assert isinstance(got, np.ndarray), type(got).__name__
        assert got.dtype == np.float64
    assert_close(got, want, f"jit({case.name})", tol=1e-12)


@pytest.mark.parametrize("case", SCALAR_CASES, ids=ids(SCALAR_CASES))
def test_grad(case):
    args = make_args(case)
    saved = [np.copy(a) for a in args]
    argnums = case.diff_argnums
    got = symdiff.grad(case.fn, argnums=argnums, target=TARGET)(*args)
    for a, before in zip(args, saved, strict=True):
        assert np.array_equal(a, before), "the arguments were written to"
    assert isinstance(got, tuple) and len(got) == len(argnums)
    wants = oracle_derivatives(case, args, argnums)
    for i, g, want in zip(argnums, got, wants, strict=True):
        what = f"grad of {case.name} wrt argument {i} ({case.oracle})"
        assert_like_argument(g, args[i], what)
        assert_matches_oracle(case, g, want, what)


@pytest.mark.parametrize("case", SCALAR_CASES, ids=ids(SCALAR_CASES))
def test_value_and_grad(case):
    args = make_args(case, seed=1)
    argnums = case.diff_argnums
    value, grads = symdiff.value_and_grad(case.fn, argnums=argnums, target=TARGET)(
        *args
    )
    assert np.ndim(value) == 0
    assert_close(value, case.fn(*args), f"value of {case.name}", tol=1e-12)
    wants = oracle_derivatives(case, args, argnums)
    for i, g, want in zip(argnums, grads, wants, strict=True):
        what = f"grad of {case.name} wrt argument {i} ({case.oracle})"
        assert_like_argument(g, args[i], what)
        assert_matches_oracle(case, g, want, what)


@pytest.mark.parametrize("case", SCALAR_CASES, ids=ids(SCALAR_CASES))
@pytest.mark.filterwarnings("ignore:Output seems independent of input")
def test_reverse_over_reverse(case):
    """The gradient's own reverse-mode derivative (``jacobian(grad(f),
    mode="reverse")``, what ``grad(grad(f))`` builds): its backward loops are
    differentiated again, and their adjoints run forwards.  Against the
    Hessian (forward over reverse) and, independently, autograd's Jacobian of
    its gradient or finite differences of symdiff's gradient."""
    args = make_args(case)
    k = case.diff_argnums[0]
    g = symdiff.grad(case.fn, argnums=k, target=TARGET)
    got = symdiff.jacobian(g, argnums=k, mode="reverse", target=TARGET)(*args)
    hess = symdiff.hessian(case.fn, argnums=k, target=TARGET)(*args)
    assert_close(got, hess, f"jacobian(grad({case.name})) against its hessian")
    what = f"jacobian(grad({case.name})) wrt argument {k} ({case.oracle})"
    if case.oracle == "autograd":
        f = autograd_fn(case)
        want = np.asarray(autograd.jacobian(autograd.grad(f, k), k)(*args))
        assert_close(got, want, what, tol=1e-8)
    else:
        assert_fd_close(got, fd_derivative(g, args, k), what, rtol=1e-4, atol=1e-6)


JVP_VJP_CASES = by_names(TRANSFORM_SAMPLE) + ARRAY_CASES


@pytest.mark.parametrize("case", JVP_VJP_CASES, ids=ids(JVP_VJP_CASES))
def test_jvp(case):
    """Forward mode; every argument is a primal, int ones get a 0.0 tangent."""
    args = make_args(case)
    tangents = tangents_like(case, args, seed=4)
    out, out_dot = symdiff.jvp(case.fn, args, tangents, target=TARGET)
    assert_close(out, case.fn(*args), f"jvp({case.name}) output", tol=1e-12)
    floats = case.float_argnums
    want = sum(
        contract(d, tangents[i], np.ndim(args[i]))
        for i, d in zip(floats, oracle_derivatives(case, args, floats), strict=True)
    )
    assert_matches_oracle(case, out_dot, want, f"jvp({case.name}) tangent")


@pytest.mark.parametrize("case", JVP_VJP_CASES, ids=ids(JVP_VJP_CASES))
def test_vjp(case):
    """Reverse mode; the cotangents of the float arguments are checked (what an int
    argument gets back is not specified here)."""
    args = make_args(case)
    out, vjp_fun = symdiff.vjp(case.fn, *args, target=TARGET)
    assert_close(out, case.fn(*args), f"vjp({case.name}) output", tol=1e-12)
    cotangent = np.random.default_rng(5).standard_normal(np.shape(out))
    if np.ndim(out) == 0:
        cotangent = float(cotangent)
    cotangents = vjp_fun(cotangent)
    assert isinstance(cotangents, tuple) and len(cotangents) == len(args)
    floats = case.float_argnums
    for i, d in zip(floats, oracle_derivatives(case, args, floats), strict=True):
        # pull back: contract the cotangent with the output axes of d
        want = np.tensordot(np.asarray(cotangent), d, axes=np.ndim(cotangent))
        what = f"vjp({case.name}) cotangent {i}"
        assert_like_argument(cotangents[i], args[i], what)
        assert_matches_oracle(case, cotangents[i], want, what)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("case", ARRAY_CASES, ids=ids(ARRAY_CASES))
def test_jacobian(case, mode):
    args = make_args(case)
    argnums = case.diff_argnums
    got = symdiff.jacobian(case.fn, argnums=argnums, mode=mode, target=TARGET)(*args)
    assert isinstance(got, tuple) and len(got) == len(argnums)
    wants = oracle_derivatives(case, args, argnums)
    for i, g, want in zip(argnums, got, wants, strict=True):
        what = f"jacobian({case.name}, mode={mode}) wrt argument {i}"
        assert isinstance(g, np.ndarray), f"{what}: got {type(g).__name__}"
        assert_matches_oracle(case, g, want, what)


# -- structure: loops stay loops ----------------------------------------------------------
def _grad_source(fn, *args, target=TARGET):
    g = symdiff.grad(fn, argnums=0, target=target)
    g(*args)  # builds the kernel for these argument types; .source shows it
    return g.source


def test_long_loop_is_not_unrolled():
    """range(1000) in a scalar function is a loop in the kernel: the source is no
    longer than for range(10), and holds a `for` (scalar kernels have no loops of
    their own)."""
    short = _grad_source(corpus.damped_oscillator_10_steps, 0.3, -0.2)
    long = _grad_source(corpus.damped_oscillator_1000_steps, 0.3, -0.2)
    assert re.search(r"^\s*for \w+ in ", long, re.M), long
    assert len(long) < 2 * len(short) + 500, (
        f"the 1000-step kernel has {len(long)} characters, the 10-step one "
        f"{len(short)}: unrolled?"
    )
    assert len(long) < 20_000
    assert long.count("math.sin(") < 10


def test_long_while_loop_is_not_unrolled():
    source = _grad_source(corpus.damped_oscillator_while_1000, 0.3, -0.2)
    assert re.search(r"^\s*(for|while) ", source, re.M), source
    assert len(source) < 20_000
    assert source.count("math.sin(") < 10


def test_long_loop_with_writes_is_not_unrolled():
    x = np.array([0.7, 0.2])
    source = _grad_source(corpus.decay_chain_1000, x)
    assert len(source) < 20_000
    assert source.count("x[1]") < 20


def test_long_loops_give_exact_gradients():
    args = (0.3, -0.2)
    for fn in (
        corpus.damped_oscillator_1000_steps,
        corpus.damped_oscillator_while_1000,
    ):
        got = symdiff.grad(fn, argnums=(0, 1), target=TARGET)(*args)
        oracle = getattr(AUTOGRAD_CORPUS, fn.__name__)
        want = autograd.grad(oracle, (0, 1))(*args)
        assert_close(got, want, f"grad of {fn.__name__}")
    x = np.array([0.7, 0.2])
    got = symdiff.grad(corpus.decay_chain_1000, target=TARGET)(x)
    assert_fd_close(got, fd_derivative(corpus.decay_chain_1000, (x,), 0), "decay")


@pytest.mark.parametrize("case", SHARED_KERNEL_CASES, ids=ids(SHARED_KERNEL_CASES))
def test_trip_counts_share_one_kernel(case):
    """Two values of the int arguments: one kernel, the same source, both right."""
    g = symdiff.value_and_grad(case.fn, argnums=case.diff_argnums, target=TARGET)
    sources = []
    for other in (False, True, False):
        args = make_args(case, other=other)
        value, grads = g(*args)
        sources.append(g.source)
        ints = [args[i] for i in case.int_argnums]
        assert_close(value, case.fn(*args), f"value of {case.name} at {ints}", 1e-12)
        wants = oracle_derivatives(case, args, case.diff_argnums)
        for i, got, want in zip(case.diff_argnums, grads, wants, strict=True):
            assert_matches_oracle(
                case, got, want, f"grad of {case.name} wrt argument {i} at {ints}"
            )
    assert len(g._by_dtypes) == 1, "a kernel per trip count"
    assert sources[0] == sources[1] == sources[2]


# -- compiled with Numba ------------------------------------------------------------------
CPU_PARAMS = [pytest.param(BY_NAME[n], id=n) for n in CPU_SAMPLE] + [
    pytest.param(BY_NAME[n], id=n, marks=pytest.mark.slow) for n in CPU_SLOW
]


@pytest.mark.parametrize("case", CPU_PARAMS)
def test_cpu_value_and_grad(case):
    g = symdiff.value_and_grad(case.fn, argnums=case.diff_argnums, target="cpu")
    points = [make_args(case, seed=s) for s in SEEDS]
    if case.has_other_trip_count:
        points.append(make_args(case, other=True))
    for args in points:
        value, grads = g(*args)
        assert_close(value, case.fn(*args), f"value of {case.name}", tol=1e-12)
        wants = oracle_derivatives(case, args, case.diff_argnums)
        for i, got, want in zip(case.diff_argnums, grads, wants, strict=True):
            what = f"grad of {case.name} wrt argument {i} (cpu)"
            assert_like_argument(got, args[i], what)
            assert_matches_oracle(case, got, want, what)
    assert len(g._by_dtypes) == 1


def test_cpu_long_loop():
    args = (0.3, -0.2)
    fn = corpus.damped_oscillator_1000_steps
    got = symdiff.grad(fn, argnums=(0, 1), target="cpu")(*args)
    want = autograd.grad(getattr(AUTOGRAD_CORPUS, fn.__name__), (0, 1))(*args)
    assert_close(got, want, "grad of damped_oscillator_1000_steps (cpu)")


if __name__ == "__main__":  # the coverage table of the corpus
    for feature, names in coverage(CASES, REQUIRED_FEATURES, corpus).items():
        print(f"{feature:32} {len(names):3}  {', '.join(names[:4])}")
    print(
        f"{len(CASES)} functions, {len(ARRAY_CASES)} with array outputs, "
        f"{sum(c.oracle == 'fd' for c in CASES)} checked by finite differences"
    )
