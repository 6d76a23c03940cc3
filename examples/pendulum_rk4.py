"""A damped pendulum integrated by 1000 classical Runge-Kutta (RK4) steps.

    theta'' = -(g / length) sin(theta) - damping * theta'

is written as the first-order system ``(theta, omega)' = (omega, ...)`` with a
helper `pendulum_rhs`; `pendulum_energy` starts at rest from ``theta0``, takes
``N_STEPS`` steps of ``DT`` in an ordinary ``for _ in range(N_STEPS)`` loop and
returns the mechanical energy per unit mass,

    E = 0.5 length^2 omega^2 + g length (1 - cos(theta)).

symdiff differentiates the loop itself: the gradient kernel runs the loop
forward, keeping what the backward pass needs on a tape, then runs it in
reverse.  ``checkpoint=K`` keeps the loop state every K steps only and
recomputes the steps in between during the reverse loop.

The gradient with respect to (damping, length, theta0) is checked against two
references that share no code with symdiff:

* HIPS autograd (operator overloading) on the *same* Python code, with ``math``
  and ``np`` bound to autograd's functions (see `_support.with_modules`);
* the complex step ``Im f(p + i h e_k) / h`` on the same code run with complex
  numbers: no subtraction, so it is exact to rounding for any small ``h``;

and, more loosely, against central finite differences.
"""

import cmath
import math
import time
import types

import numpy as np
from _support import median_time, with_modules

import symdiff

G = 9.81  # m/s^2
N_STEPS = 1000
DT = 0.01  # s: 1000 steps = 10 s of motion
POINT = (0.1, 1.5, 0.3)  # damping (1/s), length (m), theta0 (rad)
NAMES = ("damping", "length", "theta0")
CHECKPOINT = 32  # steps between stored loop states in the checkpointed gradient


def pendulum_rhs(theta, omega, damping, length):
    """(theta', omega') of the damped pendulum."""
    return omega, -(G / length) * math.sin(theta) - damping * omega


def pendulum_energy(damping, length, theta0):
    """Energy per unit mass after N_STEPS RK4 steps from rest at theta0."""
    theta = theta0
    omega = 0.0
    for _ in range(N_STEPS):
        k1t, k1w = pendulum_rhs(theta, omega, damping, length)
        k2t, k2w = pendulum_rhs(
            theta + 0.5 * DT * k1t, omega + 0.5 * DT * k1w, damping, length
        )
        k3t, k3w = pendulum_rhs(
            theta + 0.5 * DT * k2t, omega + 0.5 * DT * k2w, damping, length
        )
        k4t, k4w = pendulum_rhs(theta + DT * k3t, omega + DT * k3w, damping, length)
        theta = theta + DT / 6.0 * (k1t + 2.0 * k2t + 2.0 * k3t + k4t)
        omega = omega + DT / 6.0 * (k1w + 2.0 * k2w + 2.0 * k3w + k4w)
    return 0.5 * length**2 * omega**2 + G * length * (1.0 - math.cos(theta))


# --- references ---------------------------------------------------------------


def autograd_gradient(point=POINT):
    """autograd.value_and_grad of `pendulum_energy`'s own code."""
    import autograd
    import autograd.numpy as anp

    shim = types.SimpleNamespace(sin=anp.sin, cos=anp.cos)
    energy = with_modules(pendulum_energy, math=shim, np=anp)
    value, grads = autograd.value_and_grad(energy, (0, 1, 2))(*point)
    return float(value), np.array([float(g) for g in grads])


def complex_step_gradient(point=POINT, h=1e-30):
    """d/dp_k = Im f(p + i h e_k) / h, on `pendulum_energy`'s own code."""
    energy = with_modules(pendulum_energy, math=cmath)
    grads = []
    for k in range(len(point)):
        p = [complex(v) for v in point]
        p[k] += 1j * h
        grads.append(energy(*p).imag / h)
    return np.array(grads)


def central_difference_gradient(point=POINT, rel_step=1e-6):
    """(f(p + h e_k) - f(p - h e_k)) / 2h with h = rel_step * |p_k|."""
    grads = []
    for k in range(len(point)):
        h = rel_step * abs(point[k])
        up, down = list(point), list(point)
        up[k] += h
        down[k] -= h
        grads.append((pendulum_energy(*up) - pendulum_energy(*down)) / (2 * h))
    return np.array(grads)


def max_rel_error(got, want):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    return float(np.max(np.abs(got - want) / np.abs(want)))


def loop_lines(source):
    """The ``for`` lines of a generated kernel, with the comments that name the
    loop of the user's code they come from."""
    return [
        line
        for line in source.splitlines()
        if line.lstrip().startswith(("for ", "# for ", "# backward"))
    ]


def main():
    value_python = pendulum_energy(*POINT)
    value_ad, want = autograd_gradient()
    want_cs = complex_step_gradient()
    want_fd = central_difference_gradient()
    print(
        f"damped pendulum, {N_STEPS} RK4 steps of {DT} s from rest, "
        f"(damping, length, theta0) = {POINT}"
    )
    print(f"energy: {value_python!r} (plain Python), {value_ad!r} (autograd)")
    print(
        "references agree: autograd vs complex step "
        f"{max_rel_error(want, want_cs):.1e}, "
        f"central differences vs autograd {max_rel_error(want_fd, want):.1e}"
    )

    grad_energy = symdiff.grad(pendulum_energy, argnums=(0, 1, 2))
    energy_and_grad = symdiff.value_and_grad(pendulum_energy, argnums=(0, 1, 2))
    energy_jit = symdiff.jit(pendulum_energy)

    t0 = time.perf_counter()
    g = np.array(grad_energy(*POINT))  # first call: trace, differentiate, compile
    first_grad = time.perf_counter() - t0
    value = energy_jit(*POINT)
    value2, g2 = energy_and_grad(*POINT)

    print(f"symdiff energy {float(value)!r}")
    for name, got, ref, fd in zip(NAMES, g, want, want_fd, strict=True):
        print(
            f"  dE/d{name:8} symdiff {got: .15e}  autograd {ref: .15e}  "
            f"central diff. {fd: .6e}"
        )
    err = max_rel_error(g, want)
    err_cs = max_rel_error(g, want_cs)
    err_fd = max_rel_error(g, want_fd)
    print(
        f"max relative error: vs autograd {err:.1e}, vs complex step {err_cs:.1e}, "
        f"vs central differences {err_fd:.1e}"
    )
    if not math.isclose(value, value_python, rel_tol=1e-12):
        raise AssertionError(f"symdiff.jit gives {value!r}, Python {value_python!r}")
    if not (err <= 1e-10 and err_cs <= 1e-10 and err_fd <= 1e-5):
        raise AssertionError("symdiff's gradient differs from the references")
    if not (
        math.isclose(value2, value_python, rel_tol=1e-12)
        and max_rel_error(g2, g) <= 1e-14
    ):
        raise AssertionError("value_and_grad differs from jit and grad")

    grad_checkpointed = symdiff.grad(
        pendulum_energy, argnums=(0, 1, 2), checkpoint=CHECKPOINT
    )
    g_ckpt = np.array(grad_checkpointed(*POINT))
    err_ckpt = max_rel_error(g_ckpt, g)
    tape = grad_energy.tape_bytes(*POINT)
    tape_ckpt = grad_checkpointed.tape_bytes(*POINT)
    print(
        f"checkpoint={CHECKPOINT}: max relative difference {err_ckpt:.1e}; tape "
        f"{tape} bytes -> {tape_ckpt} bytes"
    )
    if not err_ckpt <= 1e-14:
        raise AssertionError("the checkpointed gradient differs from the taped one")
    if not 0 < tape_ckpt < tape:
        raise AssertionError("checkpointing did not shrink the tape")

    t_grad = median_time(grad_energy, *POINT)
    t_ckpt = median_time(grad_checkpointed, *POINT)
    t_fwd = median_time(energy_jit, *POINT)
    t_python = median_time(pendulum_energy, *POINT, repeat=5)
    print(f"first gradient call (build + compile + run): {first_grad:.2f} s")
    print(
        f"median call: gradient {t_grad * 1e6:.4g} us, checkpointed "
        f"{t_ckpt * 1e6:.4g} us, forward (symdiff.jit) {t_fwd * 1e6:.4g} us, "
        f"plain Python forward {t_python * 1e6:.4g} us"
    )
    print(f"gradient / forward = {t_grad / t_fwd:.2f}x")

    print(f"RESULT E = {float(value)!r}")
    for name, got in zip(NAMES, g, strict=True):
        print(f"RESULT dE/d{name} = {float(got)!r}")

    print("\n--- generated kernel: grad, its loop lines ---")
    for line in loop_lines(grad_energy.source):
        print(line)
    print(f"\n--- generated kernel: grad with checkpoint={CHECKPOINT}, loop lines ---")
    for line in loop_lines(grad_checkpointed.source):
        print(line)
    print("\n--- generated kernel: grad ---")
    print(grad_energy.source)
    print("OK: symdiff differentiates 1000 RK4 steps as autograd does")


if __name__ == "__main__":
    main()
