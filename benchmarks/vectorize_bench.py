"""symdiff.vectorize vs hand-written Numba loops: a batched gradient.

    NUMBA_NUM_THREADS=2 python benchmarks/vectorize_bench.py [--n 1000000]
        [--rounds 15] [--threads 2]

The workload is the gradient of seed 004's z(u) = exp(sin(u**2) * log(u**2)) at
``--n`` points, each call returning a new array:

- ``symdiff.vectorize(symdiff.grad(z), target=...)`` for "cpu" and "parallel";
- a hand-written ``@njit`` loop and a hand-written ``@njit(parallel=True)``
  ``prange`` loop, each allocating its output with ``np.empty_like``.

Every round times each variant once, in an order rotated from round to round
(so that drift on a shared machine hits them alike); the table shows medians
and the ratio of symdiff to the hand-written loop of the same target.
"""

from __future__ import annotations

import argparse
import os
import sys

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--n", type=int, default=10**6, help="points per call")
parser.add_argument("--rounds", type=int, default=15, help="timed rounds")
parser.add_argument("--repeat", type=int, default=3, help="calls per timing")
parser.add_argument(
    "--threads", type=int, default=None, help="NUMBA_NUM_THREADS (default: as set)"
)
opts = parser.parse_args()
if opts.threads is not None:
    os.environ["NUMBA_NUM_THREADS"] = str(opts.threads)

import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from scalar_cases import z_grad_by_hand  # noqa: E402
from scalar_cases import z_math as z  # noqa: E402

import symdiff  # noqa: E402

hand_point = numba.njit(z_grad_by_hand)  # inlined into the loops below by LLVM


@numba.njit
def hand_cpu(u):
    out = np.empty_like(u)
    for i in range(u.shape[0]):
        out[i] = hand_point(u[i])
    return out


@numba.njit(parallel=True)
def hand_parallel(u):
    out = np.empty_like(u)
    for i in numba.prange(u.shape[0]):
        out[i] = hand_point(u[i])
    return out


def main() -> None:
    rng = np.random.default_rng(4)
    u = rng.uniform(0.1, 3.0, opts.n)
    grad = symdiff.grad(z)
    variants = {
        "symdiff cpu": symdiff.vectorize(grad, target="cpu"),
        "hand @njit": hand_cpu,
        "symdiff parallel": symdiff.vectorize(grad, target="parallel"),
        "hand @njit(parallel)": hand_parallel,
    }
    want = np.array([grad(float(x)) for x in u[:1000]])
    for name, fn in variants.items():  # compile, and check against the scalar grad
        got = fn(u)
        np.testing.assert_allclose(got[:1000], want, rtol=1e-12, err_msg=name)

    times: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for r in range(opts.rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            fn = variants[name]
            t0 = time.perf_counter()
            for _ in range(opts.repeat):
                fn(u)
            times[name].append((time.perf_counter() - t0) / opts.repeat)

    med = {name: statistics.median(ts) for name, ts in times.items()}
    base = {
        "symdiff cpu": "hand @njit",
        "symdiff parallel": "hand @njit(parallel)",
    }
    print(
        f"gradient of z(u) at {opts.n} points; NUMBA_NUM_THREADS="
        f"{numba.config.NUMBA_NUM_THREADS}; median of {opts.rounds} rounds "
        f"x {opts.repeat} calls"
    )
    print(f"{'variant':<22}{'median ms':>10}{'min ms':>9}{'ns/pt':>8}  vs hand")
    for name, ts in times.items():
        ratio = f"{med[name] / med[base[name]]:.3f}x" if name in base else ""
        print(
            f"{name:<22}{med[name] * 1e3:>10.2f}{min(ts) * 1e3:>9.2f}"
            f"{med[name] / opts.n * 1e9:>8.2f}  {ratio}"
        )


if __name__ == "__main__":
    main()
