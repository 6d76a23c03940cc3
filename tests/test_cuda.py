"""The CUDA target (numba-cuda): every transform with target="cuda" and
vectorize(..., target="cuda"), run in Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1,
set by conftest.py) or on a GPU (SYMDIFF_TEST_GPU=1), against the CPU target; and
every kernel launched compiled to PTX in a process without the simulator.

Every test here is marked ``gpu``: ``SYMDIFF_TEST_GPU=1 pytest -m gpu`` runs them on
a GPU; the ones decorated ``needs_gpu`` are skipped without one.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import symdiff
from symdiff.backend import cuda as backend
from symdiff.transforms import leaves

cuda = pytest.importorskip("numba.cuda", reason="numba-cuda is not installed")

from cuda_cases import (  # noqa: E402
    CASES,
    POS,
    YS,
    compiled_in_subprocess,
    kinks,
    launched_kernels,
    record_launches,
    smooth,
)

HERE = Path(__file__).resolve().parent
ON_GPU = os.environ.get("SYMDIFF_TEST_GPU") == "1"
needs_gpu = pytest.mark.skipif(not ON_GPU, reason="needs a GPU (SYMDIFF_TEST_GPU=1)")
pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True, scope="module")
def _record_every_launch():
    """Every kernel this module launches is compiled to PTX at its end."""
    undo = record_launches()
    yield
    undo()


def host(value):
    return value.copy_to_host() if hasattr(value, "copy_to_host") else value


def assert_same(got, want, rtol=1e-13):
    got_leaves, want_leaves = leaves(got), leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        g = host(g)
        if isinstance(w, (bool, int, float)):  # a call with numbers: Python numbers
            assert type(g) is type(w), (type(g), type(w))
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(
            np.asarray(g, float), np.asarray(w, float), rtol=rtol, atol=1e-300
        )


def test_the_simulator_is_on_unless_a_gpu_is_asked_for():
    assert backend.simulated() is not ON_GPU


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_cuda_matches_cpu(case):
    """Each transform and vectorized form on CUDA gives the CPU target's values
    (same structure and types: Python numbers for calls with numbers)."""
    assert_same(case.run("cuda"), case.run("cpu"))


def test_results_match_the_analytic_gradient():
    gx, gy = symdiff.vectorize(symdiff.grad(smooth, argnums=(0, 1)), target="cuda")(
        POS, YS
    )
    v = POS * POS
    zv = np.exp(np.sin(v) * np.log(v))
    dv = zv * (np.cos(v) * np.log(v) + np.sin(v) / v) + YS
    np.testing.assert_allclose(gx, dv * 2 * POS, rtol=1e-12)
    np.testing.assert_allclose(gy, v, rtol=1e-15)


def test_calls_with_numbers_return_python_numbers():
    g = symdiff.grad(smooth, argnums=(0, 1), target="cuda")
    gx, gy = g(1.3, 0.4)
    assert type(gx) is float and type(gy) is float
    flag, size = symdiff.jit(lambda x, y: (x > y, abs(x - y)), target="cuda")(1.0, 3.0)
    assert flag is False and size == 2.0


def test_int_arguments_are_cast_for_differentiation():
    g = symdiff.grad(smooth, argnums=(0, 1), target="cuda")
    assert g(2, 1) == pytest.approx(
        symdiff.grad(smooth, argnums=(0, 1))(2.0, 1.0), rel=1e-15
    )


# -- device arrays ----------------------------------------------------------------------
def test_device_arrays_in_give_device_arrays_out():
    vec = symdiff.vectorize(
        symdiff.value_and_grad(smooth, argnums=(0, 1)), target="cuda"
    )
    x = POS[:36].reshape(6, 6)
    value, (gx, gy) = vec(cuda.to_device(x), cuda.to_device(YS[:36].reshape(6, 6)))
    assert all(hasattr(a, "copy_to_host") for a in (value, gx, gy))
    assert value.shape == gx.shape == (6, 6)
    want = symdiff.vectorize(symdiff.value_and_grad(smooth, argnums=(0, 1)))(
        x, YS[:36].reshape(6, 6)
    )
    assert_same((value, (gx, gy)), want)


def test_device_arrays_mix_with_host_arrays_and_numbers():
    vec = symdiff.vectorize(symdiff.grad(smooth, argnums=(0, 1)), target="cuda")
    gx, gy = vec(cuda.to_device(POS), 0.5)
    assert hasattr(gx, "copy_to_host")
    assert_same(
        (gx, gy), symdiff.vectorize(symdiff.grad(smooth, argnums=(0, 1)))(POS, 0.5)
    )
    gx, _ = vec(cuda.to_device(POS), YS)  # a host array is copied over
    assert_same(gx, symdiff.vectorize(symdiff.grad(smooth, argnums=(0, 1)))(POS, YS)[0])


def test_out_device_arrays_are_written_in_place():
    """out= with device arrays: the kernel writes them (no allocation), and they
    are the results; host arrays in out= get the results copied into them."""
    vec = symdiff.vectorize(symdiff.grad(smooth, argnums=(0, 1)), target="cuda")
    want = symdiff.vectorize(symdiff.grad(smooth, argnums=(0, 1)))(POS, 0.5)
    x = cuda.to_device(POS)
    gx, gy = cuda.device_array(POS.shape), cuda.device_array(POS.shape)
    got = vec(x, 0.5, out=(gx, gy))
    assert got[0] is gx and got[1] is gy
    assert_same((gx, gy), want)
    host_gy = np.empty(POS.shape)
    got = vec(x, 0.5, out=(gx, host_gy))  # one on the device, one on the host
    assert got[1] is host_gy
    assert_same((gx, host_gy), want)
    # the argument itself as out (each element is read before it is written)
    one = symdiff.vectorize(symdiff.grad(smooth), target="cuda")
    same = cuda.to_device(POS)
    assert one(same, 0.5, out=same) is same
    assert_same(same, want[0])


def test_out_device_arrays_are_checked():
    vec = symdiff.vectorize(symdiff.grad(smooth), target="cuda")
    x = cuda.to_device(POS)
    with pytest.raises(
        symdiff.ArgumentError, match="device array out= of `smooth` has dtype float32"
    ):
        vec(x, 0.5, out=cuda.device_array(POS.shape, np.float32))
    with pytest.raises(symdiff.ArgumentError, match="but the arguments broadcast"):
        vec(x, 0.5, out=cuda.device_array(5))
    both = cuda.to_device(np.concatenate([POS, [1.0]]))
    with pytest.raises(symdiff.ArgumentError, match="overlaps an argument"):
        vec(both[1:], 0.5, out=both[:-1])
    with pytest.raises(symdiff.ArgumentError, match="holds a device array"):
        symdiff.vectorize(symdiff.grad(smooth))(POS, 0.5, out=cuda.device_array(37))


def test_device_arrays_are_not_converted_or_broadcast():
    vec = symdiff.vectorize(symdiff.grad(smooth, argnums=(0, 1)), target="cuda")
    with pytest.raises(
        symdiff.ArgumentError, match=r"device array `x` of `smooth` has dtype float32"
    ):
        vec(cuda.to_device(POS.astype(np.float32)), 1.0)
    with pytest.raises(symdiff.ArgumentError, match=r"broadcast shape \(5, 37\)"):
        vec(cuda.to_device(POS), np.ones((5, 1)))


def test_empty_and_zero_dimensional_inputs():
    vec = symdiff.vectorize(symdiff.grad(smooth, argnums=(0, 1)), target="cuda")
    gx, gy = vec(np.empty(0), 1.0)
    assert gx.shape == gy.shape == (0,)
    gx, gy = vec(1.3, np.array(0.4))
    assert isinstance(gx, np.float64)
    assert (gx, gy) == pytest.approx(
        symdiff.grad(smooth, argnums=(0, 1))(1.3, 0.4), rel=1e-15
    )


# -- source -------------------------------------------------------------------------------
def test_source_holds_the_scalar_kernel_as_an_inner_function():
    g = symdiff.grad(smooth, argnums=(0, 1))
    vec = symdiff.vectorize(g, target="cuda")
    src = vec.source
    assert src.startswith(
        f"# generated by symdiff {symdiff.__version__}: CUDA kernel of `smooth_grad`\n"
    )
    assert "from numba import cuda\n" in src and "import math\n" in src
    assert (
        "def smooth_grad_cuda(x, y, x_bar, y_bar):\n    def smooth_grad(x, y):\n" in src
    )
    body = g.source.split("\n\n\n")[1]
    assert "\n".join("    " + line if line else "" for line in body.splitlines()) in src
    assert (
        "    for i in range(cuda.grid(1), x_bar.shape[0], cuda.gridsize(1)):\n"
        "        x_bar[i], y_bar[i] = smooth_grad(x[i], y[i])\n"
    ) in src
    again = symdiff.vectorize(symdiff.grad(smooth, argnums=(0, 1)), target="cuda")
    assert again.source == src
    # a transform with target="cuda" shows the same kernel
    assert symdiff.grad(smooth, argnums=(0, 1), target="cuda").source == src


def shadow(math, cuda):
    return math**cuda  # its derivative calls math.log


def test_names_the_inner_function_reads_are_not_shadowed():
    # `math` and `cuda` as parameters would hide the modules from the inner function
    vec = symdiff.vectorize(symdiff.grad(shadow, argnums=(0, 1)), target="cuda")
    assert "def shadow_grad_cuda(math_, cuda_, math_bar, cuda_bar)" in vec.source
    assert_same(vec(POS, YS), (YS * POS ** (YS - 1), POS**YS * np.log(POS)), rtol=1e-12)


def test_vectorize_takes_the_transforms_target():
    assert symdiff.vectorize(symdiff.grad(smooth, target="cuda")).target == "cuda"
    assert (
        symdiff.vectorize(symdiff.grad(smooth, target="parallel")).target == "parallel"
    )
    assert symdiff.vectorize(symdiff.grad(smooth, target="python")).target == "cpu"
    assert (
        symdiff.vectorize(symdiff.grad(smooth, target="cuda"), target="cpu").target
        == "cpu"
    )


# -- errors -------------------------------------------------------------------------------
def loop_with_tape(x, n: int):
    s = x
    for _ in range(n):
        s = math.sin(s) * x
    return s


def test_vectorize_reports_taped_loops():
    """A CUDA thread cannot allocate: vectorize reports a gradient that tapes a
    loop; the transform itself runs it (and array programs) as a host function
    launching kernels (tests/test_cuda_arrays.py)."""
    with pytest.raises(
        symdiff.ArgumentError,
        match=r"`loop_with_tape` \(\S*test_cuda.py:\d+\) cannot run .*tape.*without vectorize",
    ):
        symdiff.vectorize(symdiff.grad(loop_with_tape, target="cuda"))(np.ones(3), 4)
    assert symdiff.grad(total, target="cuda")(np.ones(3)) == pytest.approx(
        [2.0, 2.0, 2.0]
    )
    assert symdiff.grad(loop_with_tape, target="cuda")(0.5, 4) == pytest.approx(
        symdiff.grad(loop_with_tape)(0.5, 4), rel=1e-13
    )
    # the forward pass needs no tape: one thread
    assert symdiff.jit(loop_with_tape, target="cuda")(0.5, 4) == pytest.approx(
        symdiff.jit(loop_with_tape)(0.5, 4), rel=1e-15
    )


def total(x):
    return np.sum(x * x)


def rounded(x, y):
    return (
        np.floor(x) + np.ceil(y),
        np.sign(x),
        np.maximum(x, y),
        np.fmin(x, y),
        np.logaddexp(x, y),
    )


def test_numpy_helpers_keep_numpys_special_values():
    """The CUDA helpers give NumPy's values (NaN and infinities as NumPy says),
    and the CPU kernel's bit for bit: zeros keep their sign (``np.ceil(-0.5)``
    is ``-0.0``; at a tie of zeros ``np.maximum`` takes its first operand, as
    Numba does, where NumPy's own choice depends on its SIMD loop)."""
    specials = [-0.5, -0.0, 0.0, 0.5, -1.5, 2.5, math.inf, -math.inf, math.nan, 1e300]
    x, y = (a.ravel() for a in np.meshgrid(specials, specials))
    got = symdiff.vectorize(symdiff.jit(rounded), target="cuda")(x, y)
    cpu = symdiff.vectorize(symdiff.jit(rounded), target="cpu")(x, y)
    for g, c, w in zip(got, cpu, rounded(x, y)):
        g = np.asarray(g)
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(c, w)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(c))


def test_a_numpy_call_cuda_cannot_compile_is_reported(monkeypatch):
    # every NumPy template has a CUDA helper; one without would be reported
    from symdiff.backend import printer

    assert {op for op, (t, *_) in printer.TEMPLATES.items() if "np." in t} == set(
        printer.CUDA_HELPERS
    )
    monkeypatch.delitem(printer.CUDA_HELPERS, "floor")
    with pytest.raises(
        symdiff.ArgumentError,
        match=r"`kinks` \(\S*cuda_cases.py:\d+\) cannot run on CUDA: its kernel calls np.floor.*target='cpu'",
    ):
        symdiff.jit(kinks, target="cuda")(1.5, 2.5)


def test_device_arrays_must_be_contiguous():
    vec = symdiff.vectorize(symdiff.grad(smooth, argnums=(0, 1)), target="cuda")
    grid = cuda.to_device(np.ones((4, 6)))[:, ::2]
    if grid.is_c_contiguous():
        pytest.skip("this numba-cuda keeps the strided view contiguous")
    with pytest.raises(
        symdiff.ArgumentError, match="device array `x` is not C-contiguous"
    ):
        vec(grid, 1.0)


def test_without_numba_cuda_the_target_says_what_to_install(monkeypatch):
    import numba

    monkeypatch.delattr(numba, "cuda")
    monkeypatch.setitem(sys.modules, "numba.cuda", None)
    with pytest.raises(
        backend.CudaUnavailableError,
        match=r"needs numba-cuda.*pip install 'symdiff\[cuda\]'",
    ):
        symdiff.grad(smooth, target="cuda")(1.0, 2.0)


@pytest.mark.skipif(ON_GPU, reason="there is a GPU")
def test_without_a_gpu_the_target_says_so():
    program = (
        "import symdiff, cuda_cases\n"
        "try:\n"
        "    symdiff.grad(cuda_cases.z, target='cuda')(0.7)\n"
        "except symdiff.ArgumentError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), str(HERE)])
    proc = subprocess.run(
        [sys.executable, "-c", program],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "CudaUnavailableError target='cuda' found no usable GPU" in proc.stdout
    assert "NUMBA_ENABLE_CUDASIM=1" in proc.stdout


def test_foreign_device_arrays_in_the_simulator_are_reported():
    if not backend.simulated():
        pytest.skip("the simulator only")

    class Foreign:  # like a CuPy array or a CUDA torch tensor
        __cuda_array_interface__ = ()

    vec = symdiff.vectorize(symdiff.grad(smooth), target="cuda")
    with pytest.raises(
        backend.CudaUnavailableError,
        match="simulator cannot use arrays of other libraries",
    ):
        vec(Foreign(), 1.0)


def test_ptx_is_for_the_cuda_target_only():
    with pytest.raises(
        symdiff.ArgumentError, match="PTX is generated for target='cuda'"
    ):
        symdiff.grad(smooth).ptx()
    with pytest.raises(
        symdiff.ArgumentError, match="PTX is generated for target='cuda'"
    ):
        symdiff.vectorize(symdiff.grad(smooth)).ptx()
    if backend.simulated():
        with pytest.raises(backend.CudaUnavailableError, match="simulator"):
            symdiff.grad(smooth, target="cuda").ptx()


# -- PTX ----------------------------------------------------------------------------------
def test_every_kernel_launched_compiles_to_ptx(tmp_path):
    """The kernels of every case (and of the tests above, when they ran first), each
    for the argument types it was launched with, compiled to PTX by numba-cuda's NVVM
    in a process without the simulator (no GPU needed)."""
    for case in CASES:
        case.run("cuda")
    kernels = launched_kernels()
    # (some cases share a kernel: the gradient called with numbers or vectorized)
    assert len({k["source"] for k in kernels}) >= 20
    compiled_in_subprocess("--ptx", kernels, tmp_path)


def test_kernels_compile_with_a_numpy_without_row_stack(tmp_path):
    """NumPy 2.5 removed ``np.row_stack``, which numba-cuda (0.30) names when it
    loads its registries: every CUDA compile failed.  In a process where NumPy has
    no such alias, a gradient kernel and an array program still compile to PTX,
    and NumPy is left without the alias."""
    script = """
import numpy as np
if hasattr(np, "row_stack"):
    del np.row_stack
import symdiff

def z(u):
    return np.exp(np.sin(u**2) * np.log(u**2))

def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

print(len(symdiff.grad(z, target="cuda").ptx()))
print(len(symdiff.vectorize(symdiff.grad(z), target="cuda").ptx()))
print(hasattr(np, "row_stack"))
"""
    path = tmp_path / "without_row_stack.py"
    path.write_text(script)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    proc = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    *sizes, alias = proc.stdout.split()
    assert all(int(n) > 1000 for n in sizes) and alias == "False"


# -- on a GPU -------------------------------------------------------------------------------
def assert_like_the_cpu(got, want):
    """The GPU's libdevice sin/log/exp differ from the CPU's libm in the last bit
    or so (and NVVM contracts a*b + c into an FMA): relative to the values'
    scale, not to each element, which near a zero of the gradient has an
    unbounded relative error (seen on an H200: 5e-11 where |g| ~ 2e-5)."""
    got, want = np.asarray(got), np.asarray(want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14 * np.abs(want).max())


@needs_gpu
def test_a_million_points_on_the_gpu():
    rng = np.random.default_rng(0)
    u = rng.uniform(0.1, 3.0, 10**6)
    g = symdiff.grad(smooth, argnums=(0, 1))
    got = symdiff.vectorize(g, target="cuda")(u, 0.5)
    want = symdiff.vectorize(g)(u, 0.5)
    for a, b in zip(got, want, strict=True):
        assert_like_the_cpu(a, b)


@needs_gpu
def test_device_arrays_stay_on_the_device():
    u = cuda.to_device(np.linspace(0.5, 2.0, 10**5))
    gx = symdiff.vectorize(symdiff.grad(smooth), target="cuda")(u, 1.0)
    assert type(gx).__name__ == "DeviceNDArray"
    assert_like_the_cpu(
        gx.copy_to_host(),
        symdiff.vectorize(symdiff.grad(smooth))(u.copy_to_host(), 1.0),
    )


def test_out_device_arrays_strided_or_overlapping_a_strided_argument():
    vec = symdiff.vectorize(symdiff.grad(smooth), target="cuda")
    n = 64
    big = cuda.to_device(np.linspace(0.5, 2.0, 2 * n + 2))
    with pytest.raises(symdiff.ArgumentError, match="overlaps an argument"):
        vec(big[0 : 2 * n : 2], 0.5, out=big[n + 1 : 2 * n + 1])
    with pytest.raises(symdiff.ArgumentError, match="is not C-contiguous"):
        vec(cuda.to_device(POS[:32]), 0.5, out=big[0:64:2])
