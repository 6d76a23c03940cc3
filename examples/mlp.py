"""A 784-256-256-10 ReLU network on a batch of 256: seed notes 002 and 004.

Seed note 002 trains the scalar 2-layer ReLU network with squared error; seed
note 004 writes the same network for a minibatch with matrices, ``A = H W + b``
(examples in rows), and backpropagates with the matrix rules

    C = A B  ->  A_bar = C_bar B^T,  B_bar = A^T C_bar
    H = g(A) ->  A_bar = g'(A) * H_bar            (ReLU: a 0/1 mask)
    b broadcast over the batch -> b_bar = column sums of A_bar

Here the network is written as NumPy code and symdiff derives the backward pass;
the hand-written one below (the note's equations) is the reference.  The loss is
``0.5 * sum((F - Y)^2) / batch``.

The cheap gradient principle (seed note 003): the gradient should cost a small
constant times the forward pass; the example times both compiled kernels.

The times printed depend on how many threads BLAS uses for the matrix products:
on a busy machine several threads can make a small product many times slower.
``OPENBLAS_NUM_THREADS=1 python examples/mlp.py`` measures on one
thread, as ``benchmarks/run.py`` does.
"""

import itertools
import time

import numpy as np
from _support import median_time

import symdiff

SIZES = (784, 256, 256, 10)
BATCH = 256
PARAMS = ("W1", "b1", "W2", "b2", "W3", "b3")


def mlp_loss(W1, b1, W2, b2, W3, b3, X, Y):
    H1 = np.maximum(X @ W1 + b1, 0.0)
    H2 = np.maximum(H1 @ W2 + b2, 0.0)
    F = H2 @ W3 + b3
    return 0.5 * np.sum((F - Y) ** 2) / X.shape[0]


def mlp_backprop_by_hand(W1, b1, W2, b2, W3, b3, X, Y):
    """Forward pass keeping the activations, then seed note 004's rules."""
    A1 = X @ W1 + b1
    H1 = np.maximum(A1, 0.0)
    A2 = H1 @ W2 + b2
    H2 = np.maximum(A2, 0.0)
    F = H2 @ W3 + b3
    F_bar = (F - Y) / X.shape[0]
    A2_bar = (F_bar @ W3.T) * (A2 > 0.0)
    A1_bar = (A2_bar @ W2.T) * (A1 > 0.0)
    return (
        X.T @ A1_bar,
        A1_bar.sum(axis=0),
        H1.T @ A2_bar,
        A2_bar.sum(axis=0),
        H2.T @ F_bar,
        F_bar.sum(axis=0),
    )


def make_data(seed=2):
    """He-initialised weights, standard normal inputs, one-hot targets."""
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in itertools.pairwise(SIZES):
        params.append(rng.normal(0.0, np.sqrt(2.0 / fan_in), (fan_in, fan_out)))
        params.append(rng.normal(0.0, 0.1, fan_out))
    X = rng.normal(0.0, 1.0, (BATCH, SIZES[0]))
    Y = np.eye(SIZES[-1])[rng.integers(0, SIZES[-1], BATCH)]
    return tuple(params), X, Y


def main():
    params, X, Y = make_data()

    grad_loss = symdiff.grad(mlp_loss, argnums=(0, 1, 2, 3, 4, 5))
    loss_jit = symdiff.jit(mlp_loss)

    t0 = time.perf_counter()
    grads = grad_loss(*params, X, Y)  # first call: trace, differentiate, compile
    first_grad = time.perf_counter() - t0
    loss = loss_jit(*params, X, Y)

    want = mlp_backprop_by_hand(*params, X, Y)
    want_loss = mlp_loss(*params, X, Y)  # the same function, run by NumPy
    print(
        f"784-256-256-10 ReLU network, batch {BATCH}: loss = {float(loss)!r} "
        f"(NumPy: {float(want_loss)!r})"
    )
    if not np.isclose(loss, want_loss, rtol=1e-12, atol=0.0):
        raise AssertionError(f"loss {loss!r} != NumPy {want_loss!r}")
    if len(grads) != len(PARAMS):
        raise AssertionError(f"{len(grads)} gradients, want {len(PARAMS)}")
    for name, p, got, ref in zip(PARAMS, params, grads, want, strict=True):
        if np.shape(got) != p.shape:
            raise AssertionError(f"dL/d{name}: shape {np.shape(got)} != {p.shape}")
        err = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
        print(
            f"  dL/d{name:2} {p.shape!s:11} max rel. error vs backprop by hand "
            f"{err:.1e}"
        )
        if not err <= 1e-12:
            raise AssertionError(f"dL/d{name} differs from backprop by {err:.1e}")

    t_grad = median_time(grad_loss, *params, X, Y)
    t_fwd = median_time(loss_jit, *params, X, Y)
    t_hand = median_time(mlp_backprop_by_hand, *params, X, Y)
    print(f"first gradient call (build + compile + run): {first_grad:.2f} s")
    print(
        f"median call: gradient {t_grad * 1e3:.3g} ms, forward (symdiff.jit) "
        f"{t_fwd * 1e3:.3g} ms, NumPy backprop by hand {t_hand * 1e3:.3g} ms"
    )
    print(f"gradient / forward = {t_grad / t_fwd:.2f}x")

    print(f"RESULT loss = {float(loss)!r}")
    for name, got in zip(PARAMS, grads, strict=True):
        print(f"RESULT |dL/d{name}| = {float(np.linalg.norm(got))!r}")

    print("\n--- generated kernel: grad ---")
    print(grad_loss.source)
    print("OK: symdiff matches backprop by hand for all weights and biases")


if __name__ == "__main__":
    main()
