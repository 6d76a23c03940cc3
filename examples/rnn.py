"""Backpropagation through time: a tanh RNN and an LSTM written as Python loops.

`rnn_loss` runs the Elman recurrence over a sequence of T inputs,

    h_0 = 0,   h_{t+1} = tanh(W h_t + U x_t + b),   loss = sum(h_T^2),

with the hidden state carried from one iteration to the next.
`rnn_readout_loss` also writes every state into an array it created,
``hs[t] = h`` (an in-place write inside the loop), and scores a linear readout
of all of them against targets.  `lstm_loss` is a small LSTM cell: two
loop-carried arrays (h, c), gates sliced out of one pre-activation vector and a
helper `sigmoid` called in the loop body.

symdiff's gradients (backpropagation through time, as a reversed loop over a
tape of the states) are checked against HIPS autograd run on the *same* code
with ``np`` bound to ``autograd.numpy`` (see `_support.with_modules`).  autograd cannot
trace a write into an array, so `rnn_readout_loss` is checked against
`rnn_readout_loss_stacked`, the same model written with a list and ``np.stack``.
"""

import time

import numpy as np
from _support import median_time, with_modules

import symdiff

T = 100  # sequence length
D_IN = 8  # input size
H = 32  # hidden size
D_OUT = 4  # readout size (rnn_readout_loss)
H_LSTM = 16  # hidden size of the LSTM


def rnn_loss(W, U, b, xs):
    """Sum of squares of the last hidden state of a tanh RNN over xs (T, D_IN)."""
    h = np.zeros(H)
    for t in range(T):
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h**2)


def rnn_readout_loss(W, U, b, V, xs, ys):
    """Mean squared error of the readout V h_t against ys[t], over every step."""
    hs = np.zeros((T, H))
    h = np.zeros(H)
    for t in range(T):
        h = np.tanh(W @ h + U @ xs[t] + b)
        hs[t] = h
    return 0.5 * np.sum((hs @ V.T - ys) ** 2) / T


def rnn_readout_loss_stacked(W, U, b, V, xs, ys):
    """`rnn_readout_loss` with the states collected in a list (for autograd)."""
    hs = []
    h = np.zeros(H)
    for t in range(T):
        h = np.tanh(W @ h + U @ xs[t] + b)
        hs.append(h)
    return 0.5 * np.sum((np.stack(hs) @ V.T - ys) ** 2) / T


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def lstm_loss(Wx, Wh, b, xs):
    """Sum of squares of the last hidden state of an LSTM; the gates are the
    four H_LSTM-blocks (input, forget, output, candidate) of one pre-activation."""
    h = np.zeros(H_LSTM)
    c = np.zeros(H_LSTM)
    for t in range(T):
        z = Wx @ xs[t] + Wh @ h + b
        i = sigmoid(z[:H_LSTM])
        f = sigmoid(z[H_LSTM : 2 * H_LSTM])
        o = sigmoid(z[2 * H_LSTM : 3 * H_LSTM])
        g = np.tanh(z[3 * H_LSTM :])
        c = f * c + i * g
        h = o * np.tanh(c)
    return np.sum(h**2)


def make_data(seed=3):
    """Weights scaled so the states neither saturate nor vanish over T steps."""
    rng = np.random.default_rng(seed)
    W = rng.normal(0.0, 0.9 / np.sqrt(H), (H, H))
    U = rng.normal(0.0, 1.0 / np.sqrt(D_IN), (H, D_IN))
    b = rng.normal(0.0, 0.1, H)
    V = rng.normal(0.0, 1.0 / np.sqrt(H), (D_OUT, H))
    xs = rng.normal(0.0, 1.0, (T, D_IN))
    ys = rng.normal(0.0, 1.0, (T, D_OUT))
    return (W, U, b), V, xs, ys


def make_lstm_data(seed=4):
    rng = np.random.default_rng(seed)
    Wx = rng.normal(0.0, 1.0 / np.sqrt(D_IN), (4 * H_LSTM, D_IN))
    Wh = rng.normal(0.0, 1.0 / np.sqrt(H_LSTM), (4 * H_LSTM, H_LSTM))
    b = rng.normal(0.0, 0.1, 4 * H_LSTM)
    b[H_LSTM : 2 * H_LSTM] += 1.0  # the usual forget-gate bias
    xs = rng.normal(0.0, 1.0, (T, D_IN))
    return (Wx, Wh, b), xs


def autograd_value_and_grad(fn, argnums, *args):
    """autograd.value_and_grad of ``fn``'s own code."""
    import autograd
    import autograd.numpy

    same_code = with_modules(fn, np=autograd.numpy)
    value, grads = autograd.value_and_grad(same_code, argnums)(*args)
    return float(value), tuple(np.asarray(g) for g in grads)


def max_rel_error(got, want):
    """max |got - want| / max |want|."""
    return float(np.max(np.abs(np.asarray(got) - want)) / np.max(np.abs(want)))


def check(title, fn, ref_fn, names, args, argnums, tol=1e-10, forward=False):
    """symdiff's value and gradient of ``fn`` against autograd's of ``ref_fn``;
    with ``forward``, also time the forward pass alone (symdiff.jit)."""
    want_value, want = autograd_value_and_grad(ref_fn, argnums, *args)
    value_and_grad = symdiff.value_and_grad(fn, argnums=argnums)
    t0 = time.perf_counter()
    value, grads = value_and_grad(*args)  # first call: trace, differentiate, compile
    first = time.perf_counter() - t0
    print(f"{title}: loss {float(value)!r} (autograd {want_value!r})")
    if not np.isclose(value, want_value, rtol=1e-12, atol=0.0):
        raise AssertionError(f"{title}: loss {value!r} != autograd {want_value!r}")
    for name, i, got, ref in zip(names, argnums, grads, want, strict=True):
        if np.shape(got) != np.shape(args[i]):
            raise AssertionError(
                f"d/d{name}: shape {np.shape(got)} != {np.shape(args[i])}"
            )
        err = max_rel_error(got, ref)
        print(f"  d/d{name:2} {np.shape(got)!s:8} max rel. error vs autograd {err:.1e}")
        if not err <= tol:
            raise AssertionError(f"{title}: d/d{name} differs by {err:.1e}")
    t_grad = median_time(value_and_grad, *args)
    line = (
        f"  first call (build + compile + run) {first:.2f} s; median call: "
        f"value and gradient {t_grad * 1e6:.4g} us"
    )
    if forward:
        t_fwd = median_time(symdiff.jit(fn), *args)
        line += (
            f", forward (symdiff.jit) {t_fwd * 1e6:.4g} us, "
            f"gradient / forward = {t_grad / t_fwd:.2f}x"
        )
    print(line)
    return value, grads, value_and_grad


def main():
    (W, U, b), V, xs, ys = make_data()
    print(f"sequences of T = {T} steps, inputs of size {D_IN}")

    loss, grads, rnn_grad = check(
        f"tanh RNN (H = {H}), sum(h_T^2)",
        rnn_loss,
        rnn_loss,
        ("W", "U", "b"),
        (W, U, b, xs),
        (0, 1, 2),
        forward=True,
    )
    readout_loss, _, _ = check(
        f"tanh RNN + readout ({D_OUT}) at every step, states written to hs[t]",
        rnn_readout_loss,
        rnn_readout_loss_stacked,
        ("W", "U", "b", "V"),
        (W, U, b, V, xs, ys),
        (0, 1, 2, 3),
    )
    lstm_params, lstm_xs = make_lstm_data()
    lstm, _, _ = check(
        f"LSTM (H = {H_LSTM}), sum(h_T^2)",
        lstm_loss,
        lstm_loss,
        ("Wx", "Wh", "b"),
        (*lstm_params, lstm_xs),
        (0, 1, 2),
    )

    print(f"RESULT rnn loss = {float(loss)!r}")
    for name, g in zip(("W", "U", "b"), grads, strict=True):
        print(f"RESULT |d/d{name}| = {float(np.linalg.norm(g))!r}")
    print(f"RESULT readout loss = {float(readout_loss)!r}")
    print(f"RESULT lstm loss = {float(lstm)!r}")

    print("\n--- generated kernel: value_and_grad of rnn_loss ---")
    print(rnn_grad.source)
    print("OK: backpropagation through time by symdiff matches autograd")


if __name__ == "__main__":
    main()
