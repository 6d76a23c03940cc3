"""The n-dimensional Rosenbrock function, written with slices, at n = 10^6.

    f(x) = sum_i 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2,   i = 0 .. n-2

``x[1:]`` and ``x[:-1]`` are two overlapping views of the same vector, so every
entry except the ends gets an adjoint from both slices; reverse mode adds them.
The gradient is checked against SciPy's hand-written ``scipy.optimize.rosen_der``,
and the value against ``scipy.optimize.rosen``.

The cheap gradient principle (seed note 003) says a gradient should cost a small
constant times the function; the example times both compiled kernels and prints
the ratio.
"""

import time

import numpy as np
from _support import median_time
from scipy.optimize import rosen, rosen_der

import symdiff

N = 10**6


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def main():
    x = np.random.default_rng(0).uniform(-1.5, 1.5, N)

    grad_rosenbrock = symdiff.grad(rosenbrock)
    rosenbrock_jit = symdiff.jit(rosenbrock)

    t0 = time.perf_counter()
    g = grad_rosenbrock(x)  # first call: trace, differentiate, compile
    first_grad = time.perf_counter() - t0
    t0 = time.perf_counter()
    value = rosenbrock_jit(x)
    first_fwd = time.perf_counter() - t0

    want = rosen_der(x)
    want_value = rosen(x)
    err = float(np.max(np.abs(g - want)) / np.max(np.abs(want)))
    print(f"n = {N}: f(x) = {float(value)!r}  (scipy: {float(want_value)!r})")
    print(f"gradient vs scipy.optimize.rosen_der: max relative error {err:.1e}")
    if np.shape(g) != x.shape:
        raise AssertionError(f"gradient has shape {np.shape(g)}, want {x.shape}")
    if not err <= 1e-12:
        raise AssertionError(f"gradient differs from rosen_der by {err:.1e}")
    # a sum of 10^6 positive terms: the order of the additions shows at ~1e-13
    if not np.isclose(value, want_value, rtol=1e-10, atol=0.0):
        raise AssertionError(f"value {value!r} != rosen {want_value!r}")
    # The optimum: f(1, ..., 1) = 0 with a zero gradient.
    ones = np.ones(N)
    if rosenbrock_jit(ones) != 0.0 or np.any(grad_rosenbrock(ones) != 0.0):
        raise AssertionError("f or its gradient is not 0 at the optimum x = 1")

    t_grad = median_time(grad_rosenbrock, x)
    t_fwd = median_time(rosenbrock_jit, x)
    t_numpy = median_time(rosenbrock, x)
    print(
        f"first calls (build + compile + run): grad {first_grad:.2f} s, "
        f"forward {first_fwd:.2f} s"
    )
    print(
        f"median call: gradient {t_grad * 1e3:.3g} ms, forward (symdiff.jit) "
        f"{t_fwd * 1e3:.3g} ms, plain NumPy forward {t_numpy * 1e3:.3g} ms"
    )
    print(f"gradient / forward = {t_grad / t_fwd:.2f}x")

    print(f"RESULT f(x) = {float(value)!r}")
    print(f"RESULT df/dx[0] = {float(g[0])!r}")
    print(f"RESULT df/dx[-1] = {float(g[-1])!r}")

    print("\n--- generated kernel: grad ---")
    print(grad_rosenbrock.source)
    print("OK: symdiff matches scipy.optimize.rosen_der at n = 10^6")


if __name__ == "__main__":
    main()
