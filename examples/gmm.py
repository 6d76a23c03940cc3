"""The Gaussian mixture objective of Microsoft's ADBench (d = 10, k = 25, n = 1000).

The log-likelihood of n points under k Gaussians with a Wishart prior, as
ADBench defines it (``gmm_objective`` in its Python modules):

    Q_k   = diag(exp(q_k)) + L_k            (q_k = icf[k, :d], L_k strictly lower)
    inner = alphas_k + sum(q_k) - 0.5 |Q_k (x_n - mu_k)|^2
    f     = sum_n logsumexp_k(inner) - n logsumexp(alphas) + prior + constant
    prior = sum_k 0.5 gamma^2 (|exp(q_k)|^2 + |L_k|^2) - m sum(q_k)

``icf[k, d:]`` holds the strictly lower triangle of ``L_k`` column by column
(ADBench's ``constructL``).  The gradient is taken with respect to ``alphas``,
``means`` and ``icf`` and checked against JAX's (and autograd's, when installed)
on the *same* Python function: the check runs ``gmm_objective``'s own code with
``np`` bound to ``jax.numpy`` (see `_support.with_modules`).

How Q is unpacked: slicing with constant bounds, ``np.concatenate``, one product
with a constant 0/1 matrix ``unpack`` (built once, below, with ordinary NumPy),
``reshape`` and ``.T``.  No index arrays (the product is one BLAS call where a
gather would be a loop), no writes into arrays, no einsum, no batched matmul:

* ``packed = [exp(q_k), icf[k, d:]]`` per component, one row of a (k, d(d+1)/2)
  array; ``packed @ unpack`` puts every entry at its place in Q_k flattened row
  by row, so ``Q`` is a (k d, d) stack of the k triangular matrices.  (The
  reverse rule of that product, ``packed_bar = Q_bar @ unpack.T``, is the gather
  that unpacking by index would need.)
* ``Q_k (x_n - mu_k) = Q_k x_n - Q_k mu_k``: because the points do not depend on
  k, one (n, d) @ (d, k d) product ``x @ Q.T`` gives ``Q_k x_n`` for every pair,
  and ``Q_k mu_k`` is a (k, d, d) broadcast and a sum.  That replaces ADBench's
  per-component loop (or JAX's ``einsum``) with a plain 2-D BLAS product.

`gmm_objective_adbench` is a literal transcription of ADBench's loop version
(``constructL`` with ``column_stack``, one component at a time); it checks that
the reformulation computes the same number.

The times printed depend on how many threads BLAS uses for the matrix products:
on a busy machine several threads can make a small product many times slower.
``OPENBLAS_NUM_THREADS=1 python examples/gmm.py`` measures on one
thread, as ``benchmarks/run.py`` does.
"""

import math
import time

import numpy as np
from _support import median_time, with_modules

import symdiff

D, K, N = 10, 25, 1000
WISHART_GAMMA, WISHART_M = 1.0, 0


def log_gamma_distrib(a, p):
    """log of the multivariate gamma function Gamma_p(a)."""
    return p * (p - 1) / 4 * math.log(math.pi) + sum(
        math.lgamma(a + 0.5 * (1 - j)) for j in range(1, p + 1)
    )


def wishart_log_normaliser(d, gamma, m):
    dof = d + m + 1
    return dof * d * (math.log(gamma) - 0.5 * math.log(2.0)) - log_gamma_distrib(
        0.5 * dof, d
    )


#: Everything in the log-likelihood that depends on no parameter.
CONSTANT = -N * D * 0.5 * math.log(2 * math.pi) - K * wishart_log_normaliser(
    D, WISHART_GAMMA, WISHART_M
)


def unpack_matrix(d):
    """The constant (d(d+1)/2, d*d) 0/1 matrix that scatters one packed row
    ``[diagonal (d), strictly lower part column by column (d(d-1)/2)]`` into the
    d x d matrix flattened row by row: row p has its 1 at the place of entry p."""
    places = [i * d + i for i in range(d)]  # the diagonal
    places += [i * d + j for j in range(d) for i in range(j + 1, d)]  # ADBench order
    return np.eye(d * d)[places]


def logsumexp(a, axis):
    mx = np.max(a, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(a - mx), axis=axis, keepdims=True)) + mx


def gmm_objective(alphas, means, icf, x, unpack):
    """ADBench's GMM log-likelihood; ``x`` (N, D) are the points, ``unpack`` is
    ``unpack_matrix(D)``.  Gradients are wanted for alphas, means and icf."""
    log_diag = icf[:, :D]  # (K, D)
    diag = np.exp(log_diag)
    packed = np.concatenate((diag, icf[:, D:]), axis=1)  # (K, D(D+1)/2)
    Q = (packed @ unpack).reshape(K * D, D)  # row k*D + i is row i of Q_k
    Qx = x @ Q.T  # (N, K*D): Q_k x_n for every point and component
    Qmu = np.sum(Q.reshape(K, D, D) * means.reshape(K, 1, D), axis=2)  # Q_k mu_k
    y = Qx - Qmu.reshape(1, K * D)  # Q_k (x_n - mu_k)
    mahalanobis = np.sum((y * y).reshape(N, K, D), axis=2)  # (N, K)
    inner = alphas + np.sum(log_diag, axis=1) - 0.5 * mahalanobis
    prior = 0.5 * WISHART_GAMMA**2 * (
        np.sum(diag * diag) + np.sum(icf[:, D:] ** 2)
    ) - WISHART_M * np.sum(log_diag)
    return (
        CONSTANT
        + np.sum(logsumexp(inner, 1))
        - N * np.sum(logsumexp(alphas, 0))
        + prior
    )


def gmm_objective_adbench(alphas, means, icf, x):
    """ADBench's own formulation, one component at a time (the reference value)."""

    def construct_l(icf_k):
        columns, start = [], D
        for i in range(D):
            width = D - i - 1
            columns.append(
                np.concatenate((np.zeros(i + 1), icf_k[start : start + width]))
            )
            start += width
        return np.column_stack(columns)

    def lse(v):
        mx = np.max(v)
        return math.log(np.sum(np.exp(v - mx))) + mx

    inner = np.empty((N, K))
    prior = 0.0
    for k in range(K):
        q = icf[k, :D]
        Qk = np.diag(np.exp(q)) + construct_l(icf[k])
        xc = x - means[k]
        inner[:, k] = alphas[k] + q.sum() - 0.5 * np.sum((xc @ Qk.T) ** 2, axis=1)
        frobenius = np.sum(np.exp(q) ** 2) + np.sum(icf[k, D:] ** 2)
        prior += 0.5 * WISHART_GAMMA**2 * frobenius - WISHART_M * q.sum()
    slse = sum(lse(inner[i]) for i in range(N))
    return CONSTANT + slse - N * lse(alphas) + prior


def make_data(seed=2018):
    rng = np.random.default_rng(seed)
    alphas = rng.normal(0.0, 1.0, K)
    means = rng.uniform(0.0, 1.0, (K, D))
    icf = rng.normal(0.0, 0.5, (K, D * (D + 1) // 2))
    x = rng.uniform(0.0, 1.0, (N, D))
    return (alphas, means, icf), x


def reference_gradients(params, x, unpack):
    """autograd.grad (and jax.grad, when JAX is installed) of `gmm_objective`'s own
    code."""
    import autograd
    import autograd.numpy

    objective = with_modules(gmm_objective, np=autograd.numpy)
    out = {"autograd": autograd.grad(objective, (0, 1, 2))(*params, x, unpack)}
    try:
        import jax
    except ImportError:
        return out
    jax.config.update("jax_enable_x64", True)
    objective = with_modules(gmm_objective, np=jax.numpy)
    grads = jax.grad(objective, argnums=(0, 1, 2))(*params, x, unpack)
    out["jax"] = tuple(np.asarray(g) for g in grads)
    return out


def main():
    params, x = make_data()
    unpack = unpack_matrix(D)

    value_numpy = gmm_objective(*params, x, unpack)
    value_adbench = gmm_objective_adbench(*params, x)
    print(
        f"GMM d={D} k={K} n={N}: objective {float(value_numpy)!r} (NumPy), "
        f"{float(value_adbench)!r} (ADBench's loop form)"
    )
    if not math.isclose(value_numpy, value_adbench, rel_tol=1e-12):
        raise AssertionError("the reformulated objective differs from ADBench's")
    references = reference_gradients(params, x, unpack)

    grad_gmm = symdiff.grad(gmm_objective, argnums=(0, 1, 2))
    gmm_jit = symdiff.jit(gmm_objective)
    t0 = time.perf_counter()
    grads = grad_gmm(*params, x, unpack)  # first call: trace, differentiate, compile
    first_grad = time.perf_counter() - t0
    value = gmm_jit(*params, x, unpack)
    if not math.isclose(value, value_numpy, rel_tol=1e-12):
        raise AssertionError(f"symdiff.jit gives {value!r}, NumPy {value_numpy!r}")

    names = ("alphas", "means", "icf")
    for tool, want in references.items():
        for name, p, got, ref in zip(names, params, grads, want, strict=True):
            if np.shape(got) != p.shape:
                raise AssertionError(f"d/d{name}: shape {np.shape(got)} != {p.shape}")
            err = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
            print(
                f"  d/d{name:6} {p.shape!s:8} max rel. error vs {tool}.grad {err:.1e}"
            )
            if not err <= 1e-10:
                raise AssertionError(f"d/d{name} differs from {tool} by {err:.1e}")

    t_grad = median_time(grad_gmm, *params, x, unpack)
    t_fwd = median_time(gmm_jit, *params, x, unpack)
    print(f"first gradient call (build + compile + run): {first_grad:.2f} s")
    print(
        f"median call: gradient {t_grad * 1e3:.3g} ms, forward (symdiff.jit) "
        f"{t_fwd * 1e3:.3g} ms; gradient / forward = {t_grad / t_fwd:.2f}x"
    )

    print(f"RESULT objective = {float(value)!r}")
    for name, got in zip(names, grads, strict=True):
        print(f"RESULT |d/d{name}| = {float(np.linalg.norm(got))!r}")

    print("\n--- generated kernel: grad ---")
    print(grad_gmm.source)
    print("OK: symdiff matches autograd (and JAX) on ADBench's GMM objective")


if __name__ == "__main__":
    main()
