"""NumPy array support: every transform on the array corpus, against autograd.

The oracle is HIPS autograd, run on the *same* user code: ``array_corpus.py`` is
loaded a second time with its global ``np`` rebound to ``autograd.numpy``, so every
corpus function and every helper it calls becomes an autograd function (autograd has
no derivative of ``np.vdot``; the oracle gets one written with ``sum`` and ``ravel``).  The oracle
is itself cross-checked (``test_oracle_consistent``): its forward value against plain
NumPy, its derivatives against central finite differences.

symdiff is then checked against the oracle: ``jit`` against the plain call; ``grad``
(all differentiable arguments, and one alone), ``value_and_grad``, ``jvp``, ``vjp``
and ``jacobian`` against autograd, to a norm-wise relative error of 1e-9.  The broad
sweep runs the generated source as plain Python (``target="python"``, no Numba
compile); a sample runs compiled with Numba (``target="cpu"``), at two sizes of the
same ranks.

Run ``python -m tests.test_arrays`` to print which corpus functions cover which op.
"""

from __future__ import annotations

import re
import types
import zlib
from pathlib import Path

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

import symdiff
from tests import array_corpus as corpus
from tests.array_corpus import BY_NAME, CASES, ArrayCase
from tests.checks import (
    assert_close,
    assert_like_argument,
    contract,
    coverage,
    load_copy,
)

TARGET = "python"  # the broad sweep; CPU_SAMPLE runs on "cpu"

SCALAR_CASES = [c for c in CASES if c.output == "scalar"]
ARRAY_CASES = [c for c in CASES if c.output == "array"]

# Scalar-output functions that also go through jvp and vjp (all array-output ones do).
TRANSFORM_SAMPLE = [
    "array_from_scalar_args",
    "attention",
    "elastic_net",
    "gmm_objective",
    "huber",
    "mlp_loss",
    "quad_form",
    "rosenbrock",
    "scalar_times_array",
    "softmax_xent",
]

# Compiled with Numba and called at two sizes: one function per family of ops.
CPU_SAMPLE = [
    "abs_sign",
    "concat_features",
    "constants",
    "huber",
    "max_min_reduce",
    "mlp_loss",
    "norms",
    "reshape_roundtrip",
    "rosenbrock",
    "row_column",
    "seed000_block",
    "softmax_xent",
    "step_slices",
    "sum_axes",
    "trace_products",
]
CPU_SLOW = ["attention", "gmm_objective"]  # ~10 s of Numba compile each, for now
CPU_ARRAY_SAMPLE = ["affine_tanh", "pairwise_sq_dists", "rosen_residuals"]


# -- the oracle ---------------------------------------------------------------------------


def _autograd_numpy():
    """``autograd.numpy``, plus the one corpus op it cannot differentiate: vdot."""
    namespace = types.ModuleType("autograd_numpy_for_the_oracle")
    namespace.__dict__.update(vars(anp))
    namespace.vdot = lambda a, b: anp.sum(anp.ravel(a) * anp.ravel(b))
    return namespace


AUTOGRAD_CORPUS = load_copy(
    corpus, "_array_corpus_under_autograd", np=_autograd_numpy()
)


def oracle(case: ArrayCase):
    return getattr(AUTOGRAD_CORPUS, case.name)


def oracle_grads(case: ArrayCase, args, argnums):
    """One gradient per entry of argnums (scalar-output functions)."""
    return tuple(autograd.grad(oracle(case), i)(*args) for i in argnums)


def oracle_jacobians(case: ArrayCase, args, argnums):
    """One Jacobian per entry of argnums, of shape out.shape + arg.shape."""
    return tuple(
        np.asarray(autograd.jacobian(oracle(case), i)(*args), dtype=float)
        for i in argnums
    )


def derivatives(case: ArrayCase, args, argnums):
    """Gradients or Jacobians, whichever suits the function's output."""
    if case.output == "scalar":
        return tuple(
            np.asarray(g, dtype=float) for g in oracle_grads(case, args, argnums)
        )
    return oracle_jacobians(case, args, argnums)


# -- inputs -------------------------------------------------------------------------------
def _draw(rng, shape, domain):
    if domain == "real":
        a = rng.standard_normal(shape)
    elif domain == "positive":
        a = rng.uniform(0.5, 2.0, shape)
    elif domain == "unit":
        a = rng.uniform(-0.9, 0.9, shape)
    elif domain == "binary":
        a = rng.integers(0, 2, shape).astype(float)
    elif domain == "onehot":
        k = shape[-1]
        a = np.eye(k)[rng.integers(0, k, shape[:-1])]
    else:
        raise ValueError(f"unknown domain {domain!r}")
    return float(a) if shape == () else np.ascontiguousarray(a, dtype=np.float64)


def make_args(case: ArrayCase, shapes=None, seed=0):
    """Arguments for ``case``, reproducible from its name and ``seed``."""
    rng = np.random.default_rng([zlib.crc32(case.name.encode()), seed])
    shapes = case.shapes if shapes is None else shapes
    return tuple(
        _draw(rng, shape, domain)
        for shape, domain in zip(shapes, case.domains(), strict=True)
    )


def tangents_like(values, seed):
    rng = np.random.default_rng(seed)
    return tuple(
        float(rng.standard_normal())
        if np.ndim(v) == 0
        else rng.standard_normal(np.shape(v))
        for v in values
    )


# -- comparisons --------------------------------------------------------------------------


def ids(cases):
    return [c.name for c in cases]


def by_names(names):
    return [BY_NAME[n] for n in names]


# -- the oracle on its own ----------------------------------------------------------------
FD_STEP = 1e-5
FD_TOL = 1e-7  # relative to max(1, |derivative|): central differences, not exact


def central_difference(fn, args, i, direction):
    """d/dh fn(args with args[i] + h * direction) at h = 0."""

    def at(h):
        moved = list(args)
        moved[i] = args[i] + h * direction
        return np.asarray(fn(*moved), dtype=float)

    return (at(FD_STEP) - at(-FD_STEP)) / (2 * FD_STEP)


def fd_directions(arg, rng):
    """A random unit direction, and two coordinate directions for an array."""
    if np.ndim(arg) == 0:
        return [1.0]
    v = rng.standard_normal(np.shape(arg))
    directions = [v / np.linalg.norm(v)]
    for _ in range(2):
        e = np.zeros(np.shape(arg))
        e[tuple(rng.integers(0, n) for n in np.shape(arg))] = 1.0
        directions.append(e)
    return directions


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_oracle_consistent(case):
    args = make_args(case)
    value = case.fn(*args)
    assert np.all(np.isfinite(value)), f"{case.name}: non-finite value {value}"
    if case.output == "scalar":
        assert np.ndim(value) == 0
    else:
        assert np.ndim(value) >= 1
    assert_close(oracle(case)(*args), value, "autograd's forward value", tol=1e-13)

    rng = np.random.default_rng(1)
    for i, d in zip(
        case.diff_argnums, derivatives(case, args, case.diff_argnums), strict=True
    ):
        rank_in = np.ndim(args[i])
        assert d.shape == np.shape(value) + np.shape(args[i])
        for direction in fd_directions(args[i], rng):
            fd = central_difference(case.fn, args, i, direction)
            ad = contract(d, direction, rank_in)
            scale = max(1.0, float(np.max(np.abs(ad))))
            err = float(np.max(np.abs(fd - ad))) / scale
            assert err <= FD_TOL, (
                f"{case.name}: autograd vs finite differences on argument {i}: "
                f"{err:.3g}\nfd: {fd}\nautograd: {ad}"
            )


def test_corpus_size_and_shapes():
    assert len(CASES) >= 75
    assert len(ARRAY_CASES) >= 8
    for c in CASES:
        assert len(c.domains()) == len(c.shapes), c.name
        assert all(0 <= i < len(c.shapes) for i in c.diff_argnums), c.name
        resized = c.resized_shapes()
        if resized is not None:
            assert [len(s) for s in resized] == [len(s) for s in c.shapes], c.name
    # Python floats mixed with arrays
    assert any(() in c.shapes and any(s != () for s in c.shapes) for c in CASES), (
        "no case mixes Python float and array arguments"
    )


# Each op symdiff supports, as a pattern in the source of some corpus function (or a
# helper it calls), and the compositions the corpus must contain.
REQUIRED_OPS = {
    "x.shape": r"\.shape\b",
    "len(x)": r"\blen\(",
    "x.ndim": r"\.ndim\b",
    "x.size": r"\.size\b",
    "np.exp": r"np\.exp\(",
    "np.log": r"np\.log\(",
    "np.sin": r"np\.sin\(",
    "np.cos": r"np\.cos\(",
    "np.tanh": r"np\.tanh\(",
    "np.sqrt": r"np\.sqrt\(",
    "**": r"\*\*",
    "np.maximum": r"np\.maximum\(",
    "np.minimum": r"np\.minimum\(",
    "np.clip": r"np\.clip\(",
    "np.where": r"np\.where\(",
    "np.abs": r"np\.abs\(",
    "np.sign": r"np\.sign\(",
    "np.sum": r"np\.sum\(",
    "np.mean": r"np\.mean\(",
    "np.prod": r"np\.prod\(",
    "np.max": r"np\.max\(",
    "np.min": r"np\.min\(",
    "axis=int": r"axis=-?\d",
    "axis=tuple": r"axis=\(",
    "keepdims": r"keepdims=True",
    "np.linalg.norm vector": r"np\.linalg\.norm\((x|u|v|d)\)",
    "np.linalg.norm Frobenius": r"np\.linalg\.norm\(A",
    "logsumexp": r"def logsumexp",
    "@": r" @ ",
    "np.dot": r"np\.dot\(",
    "np.matmul": r"np\.matmul\(",
    "np.outer": r"np\.outer\(",
    "np.inner": r"np\.inner\(",
    "np.vdot": r"np\.vdot\(",
    "np.trace": r"np\.trace\(",
    ".T": r"\.T\b",
    "np.transpose": r"np\.transpose\(",
    "x.reshape": r"(?<!np)\.reshape\(",
    "np.reshape": r"np\.reshape\(",
    "reshape -1": r"reshape\([^)]*-1",
    "x.ravel()": r"(?<!np)\.ravel\(\)",
    "np.ravel": r"np\.ravel\(",
    "np.tril": r"np\.tril\(",
    "np.triu": r"np\.triu\(",
    "x[int]": r"\w\[\d+\]",
    "x[-int]": r"\w\[-\d+\]",
    "x[1:] - x[:-1]": r"\[1:\] - \w+\[:-1\]",
    "x[::2]": r"\[::2\]",
    "x[a:b:step]": r"\[\d+:\d+:\d+\]",
    "x[::-1]": r"\[::-1\]",
    "A[i, :]": r"\[(?!None)\w+, :\]",
    "A[:, j]": r"\[:, (?!None)\w+( - 1)?\]",
    "x[None, :]": r"\[None, :",
    "x[:, None]": r"\[:, None",
    "np.concatenate": r"np\.concatenate\(",
    "np.stack": r"np\.stack\(",
    "np.zeros": r"np\.zeros\(",
    "np.ones": r"np\.ones\(",
    "np.full": r"np\.full\(",
    "np.arange": r"np\.arange\(",
    "np.eye": r"np\.eye\(",
    "np.array constant": r"np\.array\(\[\d|np\.array\(\[\[\d",
    "np.array of computed scalars": r"np\.array\(\[[a-z]",
    ".sum()": r"(?<!np)\.sum\(",
    ".mean()": r"(?<!np)\.mean\(",
    ".max()": r"(?<!np)\.max\(",
    ".min()": r"(?<!np)\.min\(",
}
REQUIRED_TAGS = {
    "MLP",
    "softmax cross-entropy",
    "Rosenbrock",
    "quadratic form",
    "least squares",
    "seed 000 block",
    "GMM",
    "attention",
    "polynomial features",
    "broadcast row-column",
    "broadcast trailing dims",
    "keepdims feeding broadcasting",
    "max/min without ties",
    "trace of products",
    "outer product",
    "scalar argument",
    "data arguments",
}


def test_corpus_covers_every_op():
    missing = [
        op for op, names in coverage(CASES, REQUIRED_OPS, corpus).items() if not names
    ]
    assert not missing, f"no corpus function uses: {missing}"
    tags = {t for c in CASES for t in c.tags}
    assert REQUIRED_TAGS <= tags, f"missing compositions: {REQUIRED_TAGS - tags}"


# -- symdiff against the oracle -----------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_jit(case):
    args = make_args(case)
    got = symdiff.jit(case.fn, target=TARGET)(*args)
    want = case.fn(*args)
    if case.output == "array":
        assert isinstance(got, np.ndarray), type(got).__name__
        assert got.dtype == np.float64
    assert_close(got, want, f"jit({case.name})")


@pytest.mark.parametrize("case", SCALAR_CASES, ids=ids(SCALAR_CASES))
def test_grad(case):
    args = make_args(case)
    saved = [np.copy(a) for a in args]
    argnums = case.diff_argnums
    got = symdiff.grad(case.fn, argnums=argnums, target=TARGET)(*args)
    for a, before in zip(args, saved, strict=True):
        assert np.array_equal(a, before), "the arguments were written to"
    assert isinstance(got, tuple) and len(got) == len(argnums)
    for i, g, want in zip(argnums, got, oracle_grads(case, args, argnums), strict=True):
        assert_like_argument(g, args[i], f"grad of {case.name} wrt argument {i}")
        assert_close(g, want, f"grad of {case.name} wrt argument {i}")


@pytest.mark.parametrize("case", SCALAR_CASES, ids=ids(SCALAR_CASES))
def test_grad_one_argnum(case):
    # an int argnums: the gradient itself, not a tuple; the last differentiable
    # argument, so that functions of several arguments use a proper subset
    i = case.diff_argnums[-1]
    args = make_args(case, seed=2)
    got = symdiff.grad(case.fn, argnums=i, target=TARGET)(*args)
    assert not isinstance(got, tuple)
    assert_like_argument(got, args[i], f"grad of {case.name} wrt argument {i}")
    (want,) = oracle_grads(case, args, (i,))
    assert_close(got, want, f"grad of {case.name} wrt argument {i}")


@pytest.mark.parametrize("case", SCALAR_CASES, ids=ids(SCALAR_CASES))
def test_value_and_grad(case):
    args = make_args(case, seed=3)
    argnums = case.diff_argnums
    value, grads = symdiff.value_and_grad(case.fn, argnums=argnums, target=TARGET)(
        *args
    )
    assert np.ndim(value) == 0
    assert_close(value, case.fn(*args), f"value of {case.name}")
    for i, g, want in zip(
        argnums, grads, oracle_grads(case, args, argnums), strict=True
    ):
        assert_like_argument(g, args[i], f"grad of {case.name} wrt argument {i}")
        assert_close(g, want, f"grad of {case.name} wrt argument {i}")


JVP_VJP_CASES = by_names(TRANSFORM_SAMPLE) + ARRAY_CASES


@pytest.mark.parametrize("case", JVP_VJP_CASES, ids=ids(JVP_VJP_CASES))
def test_jvp(case):
    args = make_args(case)
    tangents = tangents_like(args, seed=4)
    out, out_dot = symdiff.jvp(case.fn, args, tangents, target=TARGET)
    assert_close(out, case.fn(*args), f"jvp({case.name}) output")
    everything = tuple(range(len(args)))
    want = sum(
        contract(d, t, np.ndim(t))
        for d, t in zip(derivatives(case, args, everything), tangents, strict=True)
    )
    assert_close(out_dot, want, f"jvp({case.name}) tangent")


@pytest.mark.parametrize("case", JVP_VJP_CASES, ids=ids(JVP_VJP_CASES))
def test_vjp(case):
    args = make_args(case)
    out, vjp_fun = symdiff.vjp(case.fn, *args, target=TARGET)
    assert_close(out, case.fn(*args), f"vjp({case.name}) output")
    (cotangent,) = tangents_like((out,), seed=5)
    cotangents = vjp_fun(cotangent)
    assert isinstance(cotangents, tuple) and len(cotangents) == len(args)
    everything = tuple(range(len(args)))
    for i, (got, d) in enumerate(
        zip(cotangents, derivatives(case, args, everything), strict=True)
    ):
        # pull back: contract the cotangent with the output axes of d
        want = np.tensordot(np.asarray(cotangent), d, axes=np.ndim(cotangent))
        assert_like_argument(got, args[i], f"vjp({case.name}) cotangent {i}")
        assert_close(got, want, f"vjp({case.name}) cotangent {i}")


@pytest.mark.parametrize("mode", ["forward", "reverse", "auto"])
@pytest.mark.parametrize("case", ARRAY_CASES, ids=ids(ARRAY_CASES))
def test_jacobian(case, mode):
    args = make_args(case)
    argnums = case.diff_argnums
    got = symdiff.jacobian(case.fn, argnums=argnums, mode=mode, target=TARGET)(*args)
    assert isinstance(got, tuple) and len(got) == len(argnums)
    for i, g, want in zip(
        argnums, got, oracle_jacobians(case, args, argnums), strict=True
    ):
        what = f"jacobian({case.name}, mode={mode}) wrt argument {i}"
        assert isinstance(g, np.ndarray), f"{what}: got {type(g).__name__}"
        assert_close(g, want, what)


def _check_at_two_sizes(case, transform):
    """One compiled transform, called at the corpus shapes and at other sizes of the
    same ranks: both results must be right."""
    resized = case.resized_shapes()
    for shapes, seed in ((case.shapes, 6), (resized, 7), (case.shapes, 8)):
        args = make_args(case, shapes, seed=seed)
        got = transform(*args)
        if case.output == "array":
            assert_close(got, case.fn(*args), f"jit({case.name}) at {shapes}")
            continue
        wants = oracle_grads(case, args, case.diff_argnums)
        for i, g, want in zip(case.diff_argnums, got, wants, strict=True):
            what = f"grad of {case.name} wrt argument {i} at {shapes}"
            assert_like_argument(g, args[i], what)
            assert_close(g, want, what)


RESIZABLE = [c for c in CASES if c.resized_shapes() not in (None, c.shapes)]


@pytest.mark.parametrize("case", RESIZABLE, ids=ids(RESIZABLE))
def test_other_sizes_same_rank(case):
    if case.output == "array":
        transform = symdiff.jit(case.fn, target=TARGET)
    else:
        transform = symdiff.grad(case.fn, argnums=case.diff_argnums, target=TARGET)
    _check_at_two_sizes(case, transform)


# -- compiled with Numba ------------------------------------------------------------------
CPU_PARAMS = [pytest.param(BY_NAME[n], id=n) for n in CPU_SAMPLE] + [
    pytest.param(BY_NAME[n], id=n, marks=pytest.mark.slow) for n in CPU_SLOW
]


@pytest.mark.parametrize("case", CPU_PARAMS)
def test_cpu_grad_at_two_sizes(case):
    assert case in RESIZABLE
    transform = symdiff.grad(case.fn, argnums=case.diff_argnums, target="cpu")
    _check_at_two_sizes(case, transform)


@pytest.mark.parametrize("case", by_names(CPU_SAMPLE[:4]), ids=CPU_SAMPLE[:4])
def test_cpu_value_and_grad(case):
    args = make_args(case)
    value, grads = symdiff.value_and_grad(case.fn, argnums=case.diff_argnums)(*args)
    assert_close(value, case.fn(*args), f"value of {case.name}")
    wants = oracle_grads(case, args, case.diff_argnums)
    for i, g, want in zip(case.diff_argnums, grads, wants, strict=True):
        assert_like_argument(g, args[i], f"grad of {case.name} wrt argument {i}")
        assert_close(g, want, f"grad of {case.name} wrt argument {i}")


@pytest.mark.parametrize("case", by_names(CPU_ARRAY_SAMPLE), ids=CPU_ARRAY_SAMPLE)
def test_cpu_jit_and_jacobian(case):
    _check_at_two_sizes(case, symdiff.jit(case.fn))
    args = make_args(case)
    got = symdiff.jacobian(case.fn, argnums=case.diff_argnums)(*args)
    wants = oracle_jacobians(case, args, case.diff_argnums)
    for i, g, want in zip(case.diff_argnums, got, wants, strict=True):
        assert_close(g, want, f"jacobian({case.name}) wrt argument {i}")


def _non_contiguous(a):
    """The same values, laid out as a strided view (1-D) or in Fortran order."""
    if np.ndim(a) == 0:
        return a
    if np.ndim(a) == 1:
        return np.repeat(a, 2)[::2]
    return np.asfortranarray(a)  # the layout of a transpose


@pytest.mark.parametrize("target", ["python", "cpu"])
@pytest.mark.parametrize("name", ["trailing_dims", "mlp_loss", "smoothness"])
def test_non_contiguous_arguments(name, target):
    """Views users pass without thinking (A.T, x[::2], Fortran order) are arrays too."""
    case = BY_NAME[name]
    args = make_args(case)
    views = tuple(_non_contiguous(a) for a in args)
    assert any(not v.flags.c_contiguous for v in views if np.ndim(v) > 0)
    g = symdiff.grad(case.fn, argnums=case.diff_argnums, target=target)
    for i, got, want in zip(
        case.diff_argnums,
        g(*views),
        oracle_grads(case, args, case.diff_argnums),
        strict=True,
    ):
        assert_like_argument(got, args[i], f"grad of {name} wrt argument {i}")
        assert_close(got, want, f"grad of {name} wrt argument {i} (views)")


# -- data arguments -----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["mlp_loss", "softmax_xent", "elastic_net"])
def test_data_arguments_get_no_gradient(name):
    """Arguments outside argnums get no gradient, and stay arguments: new data give
    new, correct gradients (they are not baked into the kernel at the first call)."""
    case = BY_NAME[name]
    argnums = case.diff_argnums
    assert len(argnums) < len(case.shapes)
    data = [i for i in range(len(case.shapes)) if i not in argnums]
    g = symdiff.grad(case.fn, argnums=argnums, target=TARGET)
    args = make_args(case)
    other = make_args(case, seed=9)
    new_data = tuple(other[i] if i in data else a for i, a in enumerate(args))
    for a in (args, new_data):
        got = g(*a)
        assert len(got) == len(argnums)
        for i, gi, want in zip(
            argnums, got, oracle_grads(case, a, argnums), strict=True
        ):
            assert_like_argument(gi, a[i], f"grad of {name} wrt argument {i}")
            assert_close(gi, want, f"grad of {name} wrt argument {i}")


# -- shape errors -------------------------------------------------------------------------
# The wording of shape errors is not settled yet.  What is checked: the error is a
# SymdiffError (not a raw NumPy/Numba exception) and names the user's file and line
# as ``array_corpus.py:LINE``.  Adjust SHAPE_ERROR and SHAPE_ERROR_LOCATION (a regex
# format string with {file} and {line}) here when the wording lands.
SHAPE_ERROR = symdiff.SymdiffError
SHAPE_ERROR_LOCATION = r"{file}:{line}\b"
SHAPE_ERROR_CASES = [
    # (corpus function, argument shapes, the offending line)
    ("mismatched_matmul", ((3, 4), (5, 2)), "H = X @ W"),
    ("mismatched_add", ((3,), (4,)), "z = x + y"),
    ("matmul_with_scalar", ((3,), ()), "y = x @ s"),
]
CORPUS_LINES = Path(corpus.__file__).read_text().splitlines()


def corpus_line(snippet: str) -> int:
    hits = [n + 1 for n, text in enumerate(CORPUS_LINES) if snippet in text]
    assert len(hits) == 1, f"{snippet!r} must occur on exactly one line: {hits}"
    return hits[0]


@pytest.mark.parametrize("target", ["python", "cpu"])
@pytest.mark.parametrize(
    ("name", "shapes", "snippet"),
    SHAPE_ERROR_CASES,
    ids=[c[0] for c in SHAPE_ERROR_CASES],
)
def test_shape_error_names_the_users_line(name, shapes, snippet, target):
    fn = getattr(corpus, name)
    args = tuple(1.5 if s == () else np.ones(s) for s in shapes)
    with pytest.raises(ValueError):  # NumPy itself rejects these shapes
        fn(*args)
    with pytest.raises(SHAPE_ERROR) as info:
        symdiff.grad(fn, argnums=0, target=target)(*args)
    message = str(info.value)
    location = SHAPE_ERROR_LOCATION.format(
        file=re.escape(Path(corpus.__file__).name), line=corpus_line(snippet)
    )
    assert re.search(location, message), f"no {location!r} in:\n{message}"


def largest(x):
    return np.max(x) * 1.0


def row_minima(X):
    return np.sum(np.min(X**2 + 1.0, axis=1))


@pytest.mark.parametrize("target", ["python", "cpu", "parallel"])
def test_max_and_min_of_an_array_with_nan_are_nan_as_in_numpy(target):
    """Wherever the NaN is (first, inside, last), as ``np.max`` says."""
    n = np.nan
    for x in ([1.0, n, 2.0], [n, 1.0, 2.0], [1.0, 2.0, n], [3.0, 1.0, 2.0]):
        x = np.array(x)
        got = symdiff.jit(largest, target=target)(x)
        np.testing.assert_array_equal(got, largest(x))
    X = np.array([[1.0, n, 2.0], [3.0, 0.5, 1.0]])
    for data in (X, np.nan_to_num(X)):
        got = symdiff.jit(row_minima, target=target)(data)
        np.testing.assert_array_equal(got, row_minima(data))


def second_differences(x):
    return np.sum((x[2:] - 2.0 * x[1:-1] + x[:-2]) ** 2) + np.sum(x * x)


def shifted_products(x, y):
    # adjoints at offsets 0..3 of x, 0..1 of y, with same-shape terms beside them
    return (
        np.sum(np.sin(x[3:]) * x[:-3]) + np.sum(x[1:] * y[:-1]) + np.sum(np.exp(x) * y)
    )


@pytest.mark.parametrize("target", ["python", "cpu", "parallel"])
def test_sums_of_shifted_slices_carry_their_terms_ahead(target):
    """The adjoint of ``x[1:]`` and ``x[:-1]`` in one loop adds each element
    once and carries the next one's term in a variable (no dependence through
    memory from one iteration to the next); every length, empty ones too."""
    rng = np.random.default_rng(5)
    second = symdiff.grad(second_differences, target=target)
    shifted = symdiff.grad(shifted_products, argnums=(0, 1), target=target)
    for n in (3, 4, 5, 6, 17):  # x[3:] is empty at n = 3
        x, y = rng.normal(size=n), rng.normal(size=n)
        got = second(x)
        want = autograd.grad(
            lambda v: anp.sum((v[2:] - 2.0 * v[1:-1] + v[:-2]) ** 2) + anp.sum(v * v)
        )(x)
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
        got = shifted(x, y)
        want = autograd.grad(
            lambda v, w: (
                anp.sum(anp.sin(v[3:]) * v[:-3])
                + anp.sum(v[1:] * w[:-1])
                + anp.sum(anp.exp(v) * w)
            ),
            (0, 1),
        )(x, y)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)
    if target == "cpu":
        assert "x_bar[i] += carry + t" in shifted.source
        assert "carry_1 = carry_2" in shifted.source  # offsets 0 to 3


def relu_total(x):
    return np.sum(np.maximum(x, 0.0) + np.minimum(x, 0.5))


def extremes(x, y):
    return np.maximum(x, y), np.minimum(x, y), np.fmax(x, y), np.fmin(x, y), max(x, y)


@pytest.mark.parametrize("target", ["python", "cpu", "parallel"])
def test_elementwise_extremes_treat_nan_as_numpy_does(target):
    """``np.maximum``/``np.minimum`` pass a NaN on (a ReLU must not hide one),
    ``np.fmax``/``np.fmin`` drop it, builtin ``max`` keeps its first operand
    unless the second is larger: as NumPy and Python do, on arrays and numbers."""
    n = np.nan
    x = np.array([1.0, n, -2.0, n, 0.25])
    y = np.array([0.5, 3.0, n, n, 0.25])
    got = symdiff.jit(relu_total, target=target)(x)
    assert np.isnan(got)
    clean = np.nan_to_num(x)
    np.testing.assert_allclose(
        symdiff.jit(relu_total, target=target)(clean), relu_total(clean)
    )
    run = symdiff.jit(extremes, target=target)
    for a, b in zip(x, y):
        a, b = float(a), float(b)
        np.testing.assert_array_equal(run(a, b), extremes(a, b))
    grad = symdiff.grad(mixed_extremes, argnums=(0, 1), target=target)
    assert grad(2.0, 1.0) == (3.0, -3.0)
    assert grad(1.0, 2.0) == (-3.0, 3.0)
    # the derivative goes to the operand returned, a NaN one too; rows:
    # np.maximum, np.minimum, np.fmax, np.fmin, builtin max
    jacobian = symdiff.jacobian(extremes, argnums=(0, 1), target=target)
    first, second = (1.0, 0.0), (0.0, 1.0)
    assert jacobian(n, 2.0) == (first, first, second, second, first)
    assert jacobian(2.0, n) == (second, second, first, first, first)
    assert jacobian(2.0, 1.0) == (first, second, first, second, first)


def mixed_extremes(a, b):
    # each operand's share goes to the larger (smaller) one
    return (
        np.fmax(a, b)
        + 2.0 * np.maximum(a, b)
        - 3.0 * np.fmin(a, b)
        + np.minimum(a, b) * 0.0
    )


if __name__ == "__main__":  # the coverage table of the corpus
    for op, names in coverage(CASES, REQUIRED_OPS, corpus).items():
        print(f"{op:32} {len(names):3}  {', '.join(names[:4])}")
    print(f"{len(CASES)} functions, {len(ARRAY_CASES)} with array outputs")


def row_products(A):
    return np.sum(np.prod(A, axis=1) * np.arange(1, A.shape[0] + 1))


def _others(row, skip):
    """The product of ``row`` without the positions in ``skip``."""
    return float(np.prod([v for k, v in enumerate(row) if k not in skip]))


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_products_with_zero_elements(target):
    """d prod / d x_i is the product of the others, also where elements are 0
    (``prod / x_i`` was 0/0: NaN); the Hessian, forward over this rule, too.
    The oracle multiplies the other elements one by one (autograd divides,
    as the old rule did)."""
    A = np.array(
        [
            [0.0, 2.0, 3.0, -1.5],  # one zero
            [0.0, 0.0, 3.0, 2.0],  # two
            [0.0, 0.0, 0.0, 0.5],  # three
            [1.5, -2.0, 0.5, 3.0],  # none
        ]
    )
    grad = symdiff.grad(row_products, target=target)(A)
    hess = symdiff.hessian(row_products, target=target)(A)
    for r, row in enumerate(A):
        for i in range(4):
            assert grad[r, i] == (r + 1) * _others(row, {i})
            for j in range(4):
                want = 0.0 if i == j else (r + 1) * _others(row, {i, j})
                assert hess[r, i, r, j] == pytest.approx(want, abs=1e-12)
    assert not np.any(hess[0, :, 1:, :]) and not np.any(hess[1:, :, 0, :])
    t = np.arange(16.0).reshape(4, 4) - 3.0
    _, tangent = symdiff.jvp(row_products, (A,), (t,), target=target)
    assert tangent == pytest.approx(float(np.sum(grad * t)), rel=1e-13)


def masked_projection(w, X, flag):
    return np.sum((X @ w) ** 2) * float(flag) + float(flag)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_bool_data_in_products_and_float(target):
    """A bool matrix in ``@`` and ``float(flag)`` (Numba has no ``float(bool)``)."""
    X = np.array([[True, False, True], [False, True, True]])
    w = np.array([0.5, -1.0, 2.0])
    value, grad = symdiff.value_and_grad(masked_projection, target=target)(w, X, True)
    assert value == masked_projection(w, X, True)
    np.testing.assert_allclose(grad, 2.0 * X.T.astype(float) @ (X @ w), rtol=1e-15)


def length_of(x):
    return x.shape[0]


def length_and_scaled_sum(x):
    return len(x), np.sum(x) * x.shape[0]


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_a_length_returned_as_it_is(target):
    out = symdiff.jit(length_and_scaled_sum, target=target)(np.ones(4))
    assert out == (4, 16.0) and type(out[0]) is int
    assert symdiff.jit(length_of, target=target)(np.ones((5, 2))) == 5


def projected_energy(A, x):
    return np.sum((A @ x) ** 2)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_float32_data_is_computed_in_float64(target):
    """float32 arrays not differentiated are float64 data in the kernel, as the
    differentiated ones are: a float32 matrix beside a float64 vector in ``@``
    had no ``np.dot`` in Numba, and ``jit`` rounded to float32 on "python" only."""
    A = (np.arange(15, dtype=np.float32).reshape(3, 5) / 7).astype(np.float32)
    x = np.linspace(0.0, 1.0, 5).astype(np.float32)
    A64, x64 = A.astype(np.float64), x.astype(np.float64)
    want = 2.0 * A64.T @ (A64 @ x64)
    np.testing.assert_allclose(
        symdiff.grad(projected_energy, argnums=1, target=target)(A, x), want, rtol=1e-14
    )
    gA = symdiff.grad(projected_energy, argnums=0, target=target)(A, x64)
    np.testing.assert_allclose(gA, 2.0 * np.outer(A64 @ x64, x64), rtol=1e-14)
    value = symdiff.jit(projected_energy, target=target)(A, x)
    assert value == pytest.approx(projected_energy(A64, x64), rel=1e-15)
