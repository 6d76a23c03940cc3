"""symdiff on a GPU: the batched gradient's throughput against the GPU's memory
bandwidth, and against a hand-written numba-cuda kernel.

    python benchmarks/cuda_bench.py [--sizes 1e6,1e7,1e8] [--rounds 20]

The workload is the gradient of seed 004's z(u) = exp(sin(u**2) * log(u**2)), one
float64 read and one written per point (16 bytes), with the arrays already on the
device:

- ``symdiff.vectorize(symdiff.grad(z), target="cuda")`` called with a device
  array (it allocates its output, as a NumPy-style function does);
- a hand-written numba-cuda grid-stride kernel doing the same, also allocating
  its output per call;
- the same symdiff call with host (NumPy) arrays: copies in and out included;
- the same symdiff call with ``out=`` a preallocated device array (no allocation);
- the kernels alone: symdiff's generated kernel and the hand-written one
  launched into a preallocated output (no allocation, no Python wrapper), which
  separates the kernel's throughput from the per-call costs;
- the hand-written kernel in float32 at the largest size: where it is much faster
  than the float64 one, the float64 kernels are bound by the GPU's float64
  arithmetic (sin, cos, log, exp and a division per point), not by memory;
- the bandwidth: a copy kernel (``out[i] = a[i]``, 16 bytes per element) at each
  size; the largest size's figure is the GPU's measured bandwidth.

Then an array program: the gradient of Rosenbrock's function of a vector,
``symdiff.grad(rosen, target="cuda")`` (a host function launching a zero fill and
one kernel with atomic adds for ``x[1:]``/``x[:-1]``'s adjoints) against a
hand-written kernel that gathers each element's two terms (no atomics), both on
device arrays, 16 bytes per element at best.

Every timing ends with ``cuda.synchronize()``; medians of ``--rounds``.  Without
numba-cuda or a GPU (or under the simulator) it says so and exits 0.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scalar_cases import z_grad_by_hand
from scalar_cases import z_math as z

import symdiff


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def unavailable() -> str | None:
    """Why the GPU benchmark cannot run here, or None."""
    try:
        from numba import cuda
    except ImportError as exc:
        return f"numba-cuda is not installed ({exc})"
    if getattr(cuda.config, "ENABLE_CUDASIM", False):
        return "NUMBA_ENABLE_CUDASIM=1 (the simulator is no GPU)"
    try:
        if not cuda.is_available():
            return "no CUDA GPU found"
    except Exception as exc:  # a driver problem
        return f"no usable CUDA GPU ({exc})"
    return None


def kernels():
    global cuda
    from numba import cuda  # a global: the kernels read `cuda.grid` from it

    @cuda.jit
    def copy(a, out):
        for i in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
            out[i] = a[i]

    point = cuda.jit(device=True)(z_grad_by_hand)

    @cuda.jit
    def hand_grad(u, out):
        for i in range(cuda.grid(1), u.shape[0], cuda.gridsize(1)):
            out[i] = point(u[i])

    return copy, hand_grad


def hand_kernel_32():
    """The hand-written kernel in float32 (math.* of a float32 is float32 in
    numba-cuda): the float64 kernels' arithmetic cost, by contrast."""
    global cuda
    from numba import cuda, float32

    @cuda.jit(device=True)
    def point(u):
        v = u * u
        w = math.sin(v)
        x = math.log(v)
        z = math.exp(w * x)
        return (z * x * math.cos(v) + z * w / v) * float32(2.0) * u

    @cuda.jit
    def hand_grad_32(u, out):
        for i in range(cuda.grid(1), u.shape[0], cuda.gridsize(1)):
            out[i] = point(u[i])

    return hand_grad_32


def hand_rosen_kernel():
    global cuda
    from numba import cuda  # a global, as in kernels()

    @cuda.jit
    def hand_rosen(x, out):
        n = x.shape[0]
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            g = 0.0
            if i + 1 < n:  # the term of (x[i], x[i + 1])
                g += -400.0 * x[i] * (x[i + 1] - x[i] * x[i]) - 2.0 * (1.0 - x[i])
            if i > 0:  # the term of (x[i - 1], x[i])
                g += 200.0 * (x[i] - x[i - 1] * x[i - 1])
            out[i] = g

    return hand_rosen


def array_report(sizes: list[int], rounds: int, best_bw: float, sms: int) -> list[str]:
    """The array program's rows (Rosenbrock's gradient)."""
    from numba import cuda

    hand_rosen = hand_rosen_kernel()
    sym = symdiff.grad(rosen, target="cuda")
    cpu = symdiff.grad(rosen)
    rng = np.random.default_rng(5)
    lines = [
        "array program: grad of rosen(x), x on the device",
        f"{'points':>11} {'symdiff ms':>11} {'hand ms':>9} {'sd/hand':>8} "
        f"{'sd GB/s':>8} {'of bw':>6}",
    ]
    for n in sizes:
        host = rng.uniform(-1.0, 1.0, n)
        x = cuda.to_device(host)
        np.testing.assert_allclose(sym(x).copy_to_host(), cpu(host), rtol=1e-9)

        def hand(x=x, n=n):
            blocks = min(-(-n // 256), 32 * sms)
            hand_rosen[blocks, 256](x, cuda.device_array(n))

        t_sym = median_time(lambda x=x: sym(x), rounds)
        t_hand = median_time(hand, rounds)
        rate = 16 * n / t_sym
        lines.append(
            f"{n:>11} {t_sym * 1e3:>11.3f} {t_hand * 1e3:>9.3f} "
            f"{t_sym / t_hand:>7.2f}x {rate / 1e9:>8.0f} {rate / best_bw:>6.2f}"
        )
    return lines


def median_time(fn, rounds: int) -> float:
    from numba import cuda

    fn()
    cuda.synchronize()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def report(sizes: list[int], rounds: int) -> str:
    why = unavailable()
    if why is not None:
        return f"cuda: skipped: {why}"
    from numba import cuda

    device = cuda.get_current_device()
    sms = device.MULTIPROCESSOR_COUNT
    copy, hand_grad = kernels()
    threads = 256

    def launch(kernel, n, *arrays):
        blocks = min(-(-n // threads), 32 * sms)
        kernel[blocks, threads](*arrays)

    sym = symdiff.vectorize(symdiff.grad(z), target="cuda")
    cpu = symdiff.vectorize(symdiff.grad(z))
    rng = np.random.default_rng(4)
    name = device.name.decode() if isinstance(device.name, bytes) else device.name
    lines = [
        f"cuda: {name}, {sms} SMs; gradient of z(u), float64, arrays on the "
        f"device; median of {rounds}",
        "calls: as a NumPy function (output allocated per call); out=: the call "
        "writing into a preallocated output; kernels: launched into it",
        f"{'points':>11} {'copy GB/s':>10} {'symdiff ms':>11} {'hand ms':>9} "
        f"{'sd/hand':>8} {'sd GB/s':>8} {'of bw':>6} {'out= ms':>10} "
        f"{'out= of bw':>10} {'sd kernel ms':>13} "
        f"{'hand kernel ms':>15} {'kernel of bw':>13} {'host-arrays ms':>15}",
    ]
    best = 0.0
    rows = []
    for n in sizes:
        host = rng.uniform(0.1, 3.0, n)
        u = cuda.to_device(host)
        out = cuda.device_array(n)
        got = sym(u).copy_to_host()
        np.testing.assert_allclose(got[:1000], cpu(host[:1000]), rtol=1e-12)
        # the generated kernel itself (numba-cuda's dispatcher of the loop that
        # symdiff launched: a private attribute, read by this benchmark only)
        generated = sym._current()[1].dispatcher

        def hand(u=u, n=n):
            launch(hand_grad, n, u, cuda.device_array(n))

        bytes_moved = 16 * n
        t_copy = median_time(lambda u=u, out=out, n=n: launch(copy, n, u, out), rounds)
        t_sym = median_time(lambda u=u: sym(u), rounds)
        t_sym_out = median_time(lambda u=u, out=out: sym(u, out=out), rounds)
        t_hand = median_time(hand, rounds)
        t_sym_k = median_time(
            lambda u=u, out=out, n=n, k=generated: launch(k, n, u, out), rounds
        )
        t_hand_k = median_time(
            lambda u=u, out=out, n=n: launch(hand_grad, n, u, out), rounds
        )
        t_host = median_time(lambda host=host: sym(host), max(3, rounds // 4))
        bw = bytes_moved / t_copy
        best = max(best, bw)
        rows.append((n, bw, t_sym, t_hand, t_sym_out, t_sym_k, t_hand_k, t_host))
    for n, bw, t_sym, t_hand, t_sym_out, t_sym_k, t_hand_k, t_host in rows:
        rate = 16 * n / t_sym
        lines.append(
            f"{n:>11} {bw / 1e9:>10.0f} {t_sym * 1e3:>11.3f} {t_hand * 1e3:>9.3f} "
            f"{t_sym / t_hand:>7.2f}x {rate / 1e9:>8.0f} {rate / best:>6.2f} "
            f"{t_sym_out * 1e3:>10.3f} {16 * n / t_sym_out / best:>10.2f} "
            f"{t_sym_k * 1e3:>13.3f} {t_hand_k * 1e3:>15.3f} "
            f"{16 * n / t_sym_k / best:>13.2f} {t_host * 1e3:>15.2f}"
        )
    lines.append(
        f"measured bandwidth (copy kernel, largest size): {best / 1e9:.0f} GB/s; "
        "'of bw' = symdiff's bytes/s over it (goal >= 0.8)"
    )
    n = sizes[-1]
    u32 = cuda.to_device(rng.uniform(0.1, 3.0, n).astype(np.float32))
    out32 = cuda.device_array(n, dtype=np.float32)
    hand_32 = hand_kernel_32()
    t_32 = median_time(lambda: launch(hand_32, n, u32, out32), rounds)
    lines.append(
        f"the hand kernel in float32, {n} points: {t_32 * 1e3:.3f} ms "
        f"({8 * n / t_32 / best:.2f} of bw): the float64 kernels' time is their "
        "float64 arithmetic where this is much less"
    )
    lines += array_report([n for n in sizes if n <= 10**7], rounds, best, sms)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1e6,1e7,1e8", help="points per call")
    parser.add_argument("--rounds", type=int, default=20, help="timed calls")
    opts = parser.parse_args()
    sizes = [int(float(s)) for s in opts.sizes.split(",")]
    print(report(sizes, opts.rounds))


if __name__ == "__main__":
    main()
