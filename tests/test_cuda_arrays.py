"""Array programs on the CUDA target: a host function launching one CUDA kernel per
loop nest (symdiff.backend.cuda_program), run in Numba's CUDA simulator (conftest.py
sets NUMBA_ENABLE_CUDASIM=1) or on a GPU (SYMDIFF_TEST_GPU=1).

The whole array corpus (tests/array_corpus.py) is checked against its autograd
oracle with target="cuda"; every transform on a sample; loops with a carried state
and tapes from the loop corpus; device arrays in and out; the errors; and every
kernel launched here compiled to PTX in a process without the simulator.
"""

from __future__ import annotations

import numpy as np
import pytest

import symdiff
from symdiff.backend import cuda as backend
from symdiff.transforms import leaves

cuda = pytest.importorskip("numba.cuda", reason="numba-cuda is not installed")

from tests import loop_corpus  # noqa: E402
from tests.checks import assert_close, assert_like_argument, contract  # noqa: E402
from tests.cuda_cases import compiled_in_subprocess  # noqa: E402
from tests.test_arrays import (  # noqa: E402
    ARRAY_CASES,
    BY_NAME,
    SCALAR_CASES,
    derivatives,
    ids,
    make_args,
    oracle_grads,
    oracle_jacobians,
    tangents_like,
)
from tests.test_loops import make_args as loop_args  # noqa: E402

pytestmark = pytest.mark.gpu
TOL = 1e-10  # the kernels add in another order (atomics) than the CPU loops

#: Every Compiled run here, for the PTX test at the end.
RUN: list[symdiff.Compiled] = []


def on_cuda(transform, *args, **options):
    compiled = transform(*args, target="cuda", **options)
    RUN.append(compiled)
    return compiled


# -- the array corpus against its oracle ----------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("case", SCALAR_CASES, ids=ids(SCALAR_CASES))
def test_grad(case):
    args = make_args(case)
    argnums = case.diff_argnums
    got = on_cuda(symdiff.grad, case.fn, argnums=argnums)(*args)
    assert isinstance(got, tuple) and len(got) == len(argnums)
    for i, g, want in zip(argnums, got, oracle_grads(case, args, argnums), strict=True):
        assert_like_argument(g, args[i], f"grad of {case.name} wrt argument {i}")
        assert_close(g, want, f"grad of {case.name} wrt argument {i}", TOL)


@pytest.mark.parametrize("case", ARRAY_CASES, ids=ids(ARRAY_CASES))
def test_jit_of_array_functions(case):
    args = make_args(case)
    got = on_cuda(symdiff.jit, case.fn)(*args)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64
    assert_close(got, case.fn(*args), f"jit({case.name})", TOL)


# -- every transform, on a sample -------------------------------------------------------
SAMPLE = ["mlp_loss", "softmax_xent", "rosenbrock", "max_min_reduce", "concat_axis1"]


@pytest.mark.parametrize("name", SAMPLE)
def test_value_and_grad_and_hvp(name):
    case = BY_NAME[name]
    args = make_args(case, seed=3)
    argnums = case.diff_argnums
    value, grads = on_cuda(symdiff.value_and_grad, case.fn, argnums=argnums)(*args)
    assert isinstance(value, float)
    assert_close(value, case.fn(*args), f"value of {name}", TOL)
    for g, want in zip(grads, oracle_grads(case, args, argnums), strict=True):
        assert_close(g, want, f"value_and_grad of {name}", TOL)
    # Hessian-vector products against the CPU target's
    vs = tangents_like(args, seed=6)
    got = symdiff.hvp(case.fn, args, vs, target="cuda")
    want = symdiff.hvp(case.fn, args, vs, target="python")
    for g, w in zip(leaves(got), leaves(want), strict=True):
        assert_close(g, w, f"hvp of {name}", TOL)


@pytest.mark.parametrize("name", ["mlp_loss", "rosenbrock", "affine_tanh"])
def test_jvp_and_vjp(name):
    case = BY_NAME[name]
    args = make_args(case)
    everything = tuple(range(len(args)))
    d = derivatives(case, args, everything)
    tangents = tangents_like(args, seed=4)
    out, out_dot = symdiff.jvp(case.fn, args, tangents, target="cuda")
    assert_close(out, case.fn(*args), f"jvp({name}) output", TOL)
    want = sum(contract(di, t, np.ndim(t)) for di, t in zip(d, tangents, strict=True))
    assert_close(out_dot, want, f"jvp({name}) tangent", TOL)
    out, pull = symdiff.vjp(case.fn, *args, target="cuda")
    (cotangent,) = tangents_like((out,), seed=5)
    for i, (got, di) in enumerate(zip(pull(cotangent), d, strict=True)):
        want = np.tensordot(np.asarray(cotangent), di, axes=np.ndim(cotangent))
        assert_close(got, want, f"vjp({name}) cotangent {i}", TOL)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("name", ["affine_tanh", "pairwise_sq_dists"])
def test_jacobian(name, mode):
    case = BY_NAME[name]
    args = make_args(case)
    argnums = case.diff_argnums
    got = on_cuda(symdiff.jacobian, case.fn, argnums=argnums, mode=mode)(*args)
    for g, want in zip(got, oracle_jacobians(case, args, argnums), strict=True):
        assert isinstance(g, np.ndarray)
        assert_close(g, want, f"jacobian({name}, {mode})", TOL)


def test_hessian():
    case = BY_NAME["quad_form"]
    args = make_args(case)
    got = on_cuda(symdiff.hessian, case.fn, argnums=0)(*args)
    want = symdiff.hessian(case.fn, argnums=0, target="python")(*args)
    assert_close(got, want, "hessian(quad_form)", TOL)


# -- loops: the host runs them, their bodies launch kernels -------------------------------
LOOPS = [
    "euler_decay",
    "horner_on_array",
    "online_logsumexp",
    "logistic_euler",
    "while_until_total",
    "horner_backward_range",
    "nested_int_bounds",
]


@pytest.mark.parametrize("name", LOOPS)
def test_loops(name):
    case = next(c for c in loop_corpus.CASES if c.name == name)
    args = loop_args(case)
    if case.output == "scalar":
        make = lambda t: symdiff.grad(case.fn, argnums=case.diff_argnums, target=t)  # noqa: E731
    else:
        make = lambda t: symdiff.jit(case.fn, target=t)  # noqa: E731
    compiled = make("cuda")
    RUN.append(compiled)
    got, want = compiled(*args), make("python")(*args)
    for g, w in zip(leaves(got), leaves(want), strict=True):
        assert_close(g, w, f"{name} on CUDA", TOL)


def _scalar_loop(x):
    s = x
    for _ in range(40):
        s = s - 0.1 * s * s
    return s


def test_a_loop_of_numbers_with_a_tape():
    """A function of numbers whose gradient tapes a loop: on CUDA called with
    numbers it is an array program (one thread could not allocate the tape)."""
    g = on_cuda(symdiff.grad, _scalar_loop)
    assert isinstance(g(0.7), float)
    assert g(0.7) == pytest.approx(
        symdiff.grad(_scalar_loop, target="python")(0.7), rel=1e-13
    )
    with pytest.raises(symdiff.SymdiffError, match="tape"):
        symdiff.vectorize(symdiff.grad(_scalar_loop), target="cuda")(np.ones(3))


# -- what the kernels are made of ---------------------------------------------------------
def _prod_of_logs(x):
    return np.prod(np.log(x))


def _two_rows(X):
    return np.sum(np.max(X, axis=0)[:3] * np.min(X, axis=1))


def test_atomic_sums_maxima_and_one_thread_products():
    x = np.linspace(1.5, 3.0, 40)
    g = on_cuda(symdiff.grad, _prod_of_logs)
    assert_close(g(x), symdiff.grad(_prod_of_logs, target="python")(x), "prod", TOL)
    assert "one thread: np.prod, which has no atomic update" in g.source
    X = np.random.default_rng(1).normal(size=(3, 50))
    v = on_cuda(symdiff.value_and_grad, _two_rows)
    got, want = v(X), symdiff.value_and_grad(_two_rows, target="python")(X)
    assert_close(got[0], want[0], "value", TOL)
    assert_close(got[1], want[1], "grad", TOL)
    source = v.source
    assert "cuda.atomic.max(" in source and "cuda.atomic.min(" in source


def _rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def test_the_module_is_one_readable_host_function_and_its_kernels():
    g = on_cuda(symdiff.grad, _rosen)
    x = np.linspace(-1, 1, 1000)
    assert_close(g(x), symdiff.grad(_rosen)(x), "rosen", TOL)
    source = g.source
    assert source.count("@cuda.jit") == 2  # the scatter-add nest, and the zero fill
    assert "cuda.atomic.add(x_bar, i + 1, t0)" in source
    assert source.rstrip().endswith("return x_bar")
    again = symdiff.grad(_rosen, target="cuda")
    again(x)
    assert again.source == source  # deterministic


# -- device arrays --------------------------------------------------------------------------
def _mlp(W, X):
    return np.sum(np.tanh(X @ W) ** 2)


def test_device_arrays_in_give_device_arrays_out():
    rng = np.random.default_rng(2)
    W, X = rng.normal(size=(4, 3)), rng.normal(size=(8, 4))
    g = on_cuda(symdiff.value_and_grad, _mlp, argnums=(0, 1))
    value, (gW, gX) = g(cuda.to_device(W), cuda.to_device(X))
    assert isinstance(value, float)
    assert hasattr(gW, "copy_to_host") and hasattr(gX, "copy_to_host")
    want = symdiff.value_and_grad(_mlp, argnums=(0, 1), target="python")(W, X)
    assert_close(value, want[0], "value", TOL)
    assert_close(gW.copy_to_host(), want[1][0], "grad W", TOL)
    assert_close(gX.copy_to_host(), want[1][1], "grad X", TOL)
    # host arrays in: host arrays out
    _, (hW, _) = g(W, X)
    assert isinstance(hW, np.ndarray)


def test_device_array_errors():
    W, X = np.ones((4, 3)), np.ones((8, 4))
    g = symdiff.grad(_mlp, target="cuda")
    with pytest.raises(symdiff.SymdiffError, match="not C-contiguous"):
        g(_strided(W), X)
    with pytest.raises(symdiff.SymdiffError, match="needs float64"):
        g(cuda.to_device(np.ones((4, 3), dtype=np.int64)), X)
    with pytest.raises(symdiff.SymdiffError, match=r"device array.*target='cuda'"):
        symdiff.grad(_mlp)(cuda.to_device(W), X)


def _strided(W):
    big = cuda.to_device(np.ones((W.shape[0], 2 * W.shape[1])))
    return big[:, ::2]


# -- found in review ----------------------------------------------------------------------
def _weighted(x, counts):
    return np.sum(x * counts)


def test_data_arrays_of_other_dtypes():
    """int32/uint8/float32 host arrays are converted to the kernel's dtype (as on
    the CPU targets); a device array of another dtype is a clear error."""
    x = np.linspace(0.0, 1.0, 5)
    g = on_cuda(symdiff.grad, _weighted)
    for counts in (np.arange(5, dtype=np.int32), np.arange(5, dtype=np.uint8)):
        np.testing.assert_array_equal(g(x, counts), np.arange(5.0))
    np.testing.assert_array_equal(g(x, np.arange(5, dtype=np.float32)), np.arange(5.0))
    with pytest.raises(
        symdiff.SymdiffError, match="holds int32; the kernel reads int64"
    ):
        g(x, cuda.to_device(np.arange(5, dtype=np.int32)))


def full(x):
    return np.sum(x[1:] * x[:-1])


def launch(x):
    return np.sum(x * x)


def THREADS(x):
    return np.sum(np.exp(x))


def test_functions_named_like_the_modules_helpers():
    x = np.linspace(0.5, 1.5, 7)
    for f in (full, launch, THREADS):
        got = on_cuda(symdiff.jit, f)(x)
        assert got == pytest.approx(f(x), rel=1e-13), f.__name__
        g = on_cuda(symdiff.grad, f)(x)
        assert_close(g, symdiff.grad(f, target="python")(x), f.__name__, TOL)


def _any_all(mask, x):
    return np.sum(x) * (1.0 + np.max(mask)) + np.sum(x * x) * np.min(mask)


def test_max_and_min_of_bools():
    x = np.linspace(0.0, 1.0, 40)
    for mask in (np.zeros(40, bool), np.ones(40, bool), np.arange(40) % 7 == 3):
        want = _any_all(mask, x)
        assert on_cuda(symdiff.jit, _any_all)(mask, x) == pytest.approx(want)
        assert symdiff.jit(_any_all)(mask, x) == pytest.approx(want)  # CPU too
        assert_close(
            on_cuda(symdiff.grad, _any_all, argnums=1)(mask, x),
            symdiff.grad(_any_all, argnums=1, target="python")(mask, x),
            "grad",
            TOL,
        )


# -- PTX ----------------------------------------------------------------------------------
def test_every_program_kernel_launched_compiles_to_ptx(tmp_path):
    """Each kernel the tests above launched, for the argument types it was launched
    with, compiled to PTX by numba-cuda's NVVM in a process without the simulator."""
    test_device_arrays_in_give_device_arrays_out()  # when run on its own
    test_atomic_sums_maxima_and_one_thread_products()
    test_max_and_min_of_bools()
    kernels = {}
    for compiled in RUN:
        for kernel in compiled._by_dtypes.values():
            if not kernel.device:
                continue
            for k in kernel.python.__globals__.values():
                if isinstance(k, backend.ProgramKernel):
                    for sig in k.signatures:
                        key = (kernel.source, k.name, sig)
                        kernels[key] = {
                            "source": kernel.source,
                            "host": kernel.name,
                            "name": k.name,
                            "signature": sig,
                        }
    assert len(kernels) >= 10
    compiled_in_subprocess("--program-ptx", list(kernels.values()), tmp_path)
