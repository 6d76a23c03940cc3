"""Lennard-Jones forces as the gradient of a pair loop, for 64 particles.

    E(X) = sum_{i < j} 4 eps ((sigma / r_ij)^12 - (sigma / r_ij)^6),
    r_ij = |X[i] - X[j]|,   F = -dE/dX

`lj_energy` is the textbook double loop over pairs, ``for j in range(i + 1, n)``
(the inner bound depends on the outer index), with ``X[i] - X[j]`` indexed by
the loop variables.  symdiff's gradient of it is a kernel with the loop run
forward, then in reverse, adding each pair's contribution into the rows i and j
of the adjoint of X.

The reference is the force written by hand and vectorised in NumPy
(`lj_forces_numpy`): dE/dr^2 of every pair from an (n, n) distance matrix, no
loop and no autodiff, so it shares nothing with the code differentiated.
Newton's third law and rotation invariance give two more checks: the forces sum
to zero and so do the torques ``X[i] x F[i]``.

The particles sit on a jittered 4 x 4 x 4 cubic lattice with spacing 1.1 sigma
(near the pair potential's minimum at 2^(1/6) sigma ~ 1.12 sigma), so no two
are closer than about 0.9 sigma.
"""

import math
import time

import numpy as np
from _support import median_time

import symdiff

EPS = 1.0
SIGMA = 1.0
CELLS = 4  # particles per lattice edge: n = CELLS^3 = 64
SPACING = 1.1  # in units of sigma
JITTER = 0.05  # each coordinate moved by at most this much


def lj_energy(X, eps, sigma):
    """Lennard-Jones energy of the n particles at the rows of X (n, 3)."""
    n = X.shape[0]
    E = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = X[i] - X[j]
            r2 = d[0] ** 2 + d[1] ** 2 + d[2] ** 2
            inv6 = (sigma**2 / r2) ** 3
            E += 4.0 * eps * (inv6**2 - inv6)
    return E


def lj_energy_numpy(X, eps, sigma):
    """The same energy, vectorised over the (n, n) pair matrix."""
    r2 = _pair_r2(X)
    iu = np.triu_indices(X.shape[0], k=1)
    inv6 = (sigma**2 / r2[iu]) ** 3
    return float(np.sum(4.0 * eps * (inv6**2 - inv6)))


def lj_forces_numpy(X, eps, sigma):
    """F = -dE/dX by hand: with s = (sigma^2 / r^2)^3 and r^2 = |X[i] - X[j]|^2,

        dE/d(r^2) = 4 eps (-6 s^2 + 3 s) / r^2,   d(r^2)/dX[i] = 2 (X[i] - X[j]),

    so F[i] = sum_{j != i} 24 eps (2 s^2 - s) / r^2 (X[i] - X[j])."""
    D = X[:, None, :] - X[None, :, :]  # (n, n, 3): X[i] - X[j]
    r2 = _pair_r2(X)
    np.fill_diagonal(r2, np.inf)  # no self-interaction: s = 0 on the diagonal
    s = (sigma**2 / r2) ** 3
    scale = 24.0 * eps * (2.0 * s**2 - s) / r2  # (n, n)
    return np.sum(scale[:, :, None] * D, axis=1)


def _pair_r2(X):
    D = X[:, None, :] - X[None, :, :]
    return np.sum(D * D, axis=2)


def make_positions(seed=7, cells=CELLS, spacing=SPACING, jitter=JITTER):
    """A cubic lattice of cells^3 points, each coordinate jittered uniformly."""
    rng = np.random.default_rng(seed)
    axis = np.arange(cells) * spacing
    grid = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), axis=-1)
    X = grid.reshape(-1, 3)
    return X + rng.uniform(-jitter, jitter, X.shape)


def min_distance(X):
    r2 = _pair_r2(X)
    np.fill_diagonal(r2, np.inf)
    return float(np.sqrt(r2.min()))


def main():
    X = make_positions()
    n = X.shape[0]
    want_E = lj_energy_numpy(X, EPS, SIGMA)
    want_F = lj_forces_numpy(X, EPS, SIGMA)
    print(
        f"{n} Lennard-Jones particles ({n * (n - 1) // 2} pairs), jittered lattice, "
        f"closest pair at {min_distance(X):.3f} sigma"
    )

    grad_energy = symdiff.grad(lj_energy)
    energy_and_grad = symdiff.value_and_grad(lj_energy)
    energy_jit = symdiff.jit(lj_energy)

    t0 = time.perf_counter()
    dE_dX = grad_energy(X, EPS, SIGMA)  # first call: trace, differentiate, compile
    first_grad = time.perf_counter() - t0
    E = energy_jit(X, EPS, SIGMA)
    E2, dE_dX2 = energy_and_grad(X, EPS, SIGMA)
    F = -np.asarray(dE_dX)

    print(f"energy {float(E)!r} (symdiff.jit), {want_E!r} (NumPy, vectorised)")
    if np.shape(F) != X.shape:
        raise AssertionError(f"dE/dX has shape {np.shape(F)}, want {X.shape}")
    err = float(np.max(np.abs(F - want_F)) / np.max(np.abs(want_F)))
    net_force = float(np.max(np.abs(F.sum(axis=0))))
    net_torque = float(np.max(np.abs(np.cross(X, F).sum(axis=0))))
    scale = float(np.max(np.abs(want_F)))
    print(f"forces -dE/dX vs the hand-written NumPy forces: max rel. error {err:.1e}")
    print(
        f"sum of forces {net_force:.1e}, sum of torques {net_torque:.1e} "
        f"(largest force {scale:.3g})"
    )
    if not math.isclose(E, want_E, rel_tol=1e-12, abs_tol=1e-12):
        raise AssertionError(f"energy {E!r} != NumPy {want_E!r}")
    if not err <= 1e-12:
        raise AssertionError(f"forces differ from NumPy's by {err:.1e}")
    if not (net_force <= 1e-12 * scale * n and net_torque <= 1e-11 * scale * n):
        raise AssertionError("the forces do not sum to zero (or their torques)")
    if not (
        math.isclose(E2, E, rel_tol=1e-14)
        and np.array_equal(np.asarray(dE_dX2), np.asarray(dE_dX))
    ):
        raise AssertionError("value_and_grad differs from jit and grad")

    t_grad = median_time(grad_energy, X, EPS, SIGMA)
    t_fwd = median_time(energy_jit, X, EPS, SIGMA)
    t_numpy = median_time(lj_forces_numpy, X, EPS, SIGMA)
    print(f"first gradient call (build + compile + run): {first_grad:.2f} s")
    print(
        f"median call: gradient {t_grad * 1e6:.4g} us, forward (symdiff.jit) "
        f"{t_fwd * 1e6:.4g} us, NumPy forces by hand {t_numpy * 1e6:.4g} us"
    )
    print(f"gradient / forward = {t_grad / t_fwd:.2f}x")

    print(f"RESULT E = {float(E)!r}")
    print(f"RESULT |F| = {float(np.linalg.norm(F))!r}")
    print(f"RESULT F[0, 0] = {float(F[0, 0])!r}")

    print("\n--- generated kernel: grad ---")
    print(grad_energy.source)
    print("OK: -dE/dX from symdiff matches the Lennard-Jones forces by hand")


if __name__ == "__main__":
    main()
