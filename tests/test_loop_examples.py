"""The loop examples (issue 4) checked piece by piece against independent references.

examples/pendulum_rk4.py, examples/lennard_jones.py and examples/rnn.py each
differentiate an ordinary Python ``for`` loop.  Here their functions are imported
and symdiff's gradients are compared with references that share no code with
symdiff:

* autograd (operator overloading) run on the examples' own code;
* the complex step, ``Im f(p + i h v) / h`` (exact to rounding, no subtraction);
* forces written by hand in vectorised NumPy (Lennard-Jones);
* central finite differences (loosely).

The ``*_references_agree`` tests check the references against each other first,
so that a failure below them points at symdiff, not at a reference.
"""

from __future__ import annotations

import cmath
import math
import types
from pathlib import Path

import numpy as np
import pytest

import symdiff
from tests.checks import load_example, with_modules

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("autograd")


def _autograd(fn, argnums, *args, **modules):
    import autograd
    import autograd.numpy as anp

    modules.setdefault("np", anp)
    value, grads = autograd.value_and_grad(with_modules(fn, **modules), argnums)(*args)
    return float(value), [np.asarray(g, dtype=float) for g in grads]


def _complex_step_directional(fn, args, directions, h=1e-30, **modules):
    """d/ds fn(args + s directions) at s = 0, by one complex evaluation."""
    complex_fn = with_modules(fn, **modules)
    shifted = [
        np.asarray(a, dtype=complex) + 1j * h * np.asarray(d) if d is not None else a
        for a, d in zip(args, directions, strict=True)
    ]
    return complex_fn(*shifted).imag / h


def _assert_close(got, want, rtol, what=""):
    """Entrywise ``rtol``, with an absolute floor of ``rtol`` times the largest
    entry (for entries that are zero up to rounding)."""
    got = np.asarray(got, dtype=float)
    want = np.asarray(want, dtype=float)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    floor = rtol * float(np.max(np.abs(want))) if want.size else 0.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=floor, err_msg=what)


# --- pendulum_rk4 -------------------------------------------------------------


@pytest.fixture(scope="module")
def pendulum():
    return load_example("pendulum_rk4")


def _pendulum_autograd(m, point):
    import autograd.numpy as anp

    shim = types.SimpleNamespace(sin=anp.sin, cos=anp.cos)
    value, grads = _autograd(m.pendulum_energy, (0, 1, 2), *point, math=shim)
    return value, np.array([float(g) for g in grads])


def _pendulum_complex_step(m, point, h=1e-30):
    energy = with_modules(m.pendulum_energy, math=cmath)
    out = []
    for k in range(3):
        p = [complex(v) for v in point]
        p[k] += 1j * h
        out.append(energy(*p).imag / h)
    return np.array(out)


def _pendulum_central(m, point, rel_step=1e-6):
    out = []
    for k in range(3):
        h = rel_step * abs(point[k])
        up, down = list(point), list(point)
        up[k] += h
        down[k] -= h
        out.append((m.pendulum_energy(*up) - m.pendulum_energy(*down)) / (2 * h))
    return np.array(out)


@pytest.fixture(scope="module")
def pendulum_reference(pendulum):
    """(value, gradient) at the example's point, by autograd."""
    return _pendulum_autograd(pendulum, pendulum.POINT)


def test_pendulum_references_agree(pendulum, pendulum_reference):
    m = pendulum
    value, by_autograd = pendulum_reference
    assert value == m.pendulum_energy(*m.POINT)
    _assert_close(by_autograd, _pendulum_complex_step(m, m.POINT), 1e-12)
    _assert_close(_pendulum_central(m, m.POINT), by_autograd, 1e-6)
    # the example's own complex step and central differences say the same
    _assert_close(m.complex_step_gradient(), by_autograd, 1e-12)
    _assert_close(m.central_difference_gradient(), by_autograd, 1e-6)


@pytest.fixture(scope="module")
def pendulum_grad(pendulum):
    return symdiff.grad(pendulum.pendulum_energy, argnums=(0, 1, 2))


def test_pendulum_grad_matches_autograd(pendulum, pendulum_grad, pendulum_reference):
    m = pendulum
    got = pendulum_grad(*m.POINT)
    assert isinstance(got, tuple) and len(got) == 3
    _, want = pendulum_reference
    _assert_close(got, want, 1e-6, "symdiff vs autograd")
    _assert_close(got, _pendulum_complex_step(m, m.POINT), 1e-6, "vs complex step")
    _assert_close(got, _pendulum_central(m, m.POINT), 1e-5, "vs central differences")


@pytest.mark.parametrize(
    "point",
    [(0.0, 0.7, 2.5), (1.3, 3.0, -0.05), (0.1, 1.5, 0)],
    ids=["undamped-large-swing", "heavily-damped", "int-theta0"],
)
def test_pendulum_grad_elsewhere(pendulum, pendulum_grad, point):
    """The same compiled gradient at other points (an int argument too)."""
    m = pendulum
    got = pendulum_grad(*point)
    want = _pendulum_complex_step(m, tuple(float(p) for p in point))
    _assert_close(got, want, 1e-6, f"at {point}")


def test_pendulum_value_and_jit(pendulum, pendulum_grad):
    m = pendulum
    want = m.pendulum_energy(*m.POINT)
    assert math.isclose(symdiff.jit(m.pendulum_energy)(*m.POINT), want, rel_tol=1e-12)
    value, grads = symdiff.value_and_grad(m.pendulum_energy, argnums=(0, 1, 2))(
        *m.POINT
    )
    assert math.isclose(value, want, rel_tol=1e-12)
    _assert_close(grads, pendulum_grad(*m.POINT), 1e-14)


@pytest.mark.parametrize("every", [1, 8, 7, 32, 1000, 1500])
def test_pendulum_checkpointed_grad(pendulum, pendulum_grad, every):
    """Checkpointing recomputes the same arithmetic, so the gradient is the taped
    one, whether K divides the 1000 steps (1, 8, 1000) or leaves a short last
    segment (7, 32), or exceeds them (1500)."""
    m = pendulum
    got = symdiff.grad(m.pendulum_energy, argnums=(0, 1, 2), checkpoint=every)(*m.POINT)
    _assert_close(got, pendulum_grad(*m.POINT), 1e-13, f"checkpoint={every}")


def test_pendulum_checkpointing_shrinks_the_tape(pendulum, pendulum_grad):
    m = pendulum
    taped = pendulum_grad.tape_bytes(*m.POINT)
    checkpointed = symdiff.grad(
        m.pendulum_energy, argnums=(0, 1, 2), checkpoint=m.CHECKPOINT
    ).tape_bytes(*m.POINT)
    # at least the two states (theta, omega) per step, against 1000 / 32 of them
    assert taped >= 1000 * 2 * 8
    assert 0 < checkpointed < taped / 10


def test_pendulum_generated_source_has_loops(pendulum_grad, pendulum):
    lines = pendulum.loop_lines(pendulum_grad.source)
    loops = [line for line in lines if line.lstrip().startswith("for ")]
    # a forward loop and a reversed one, not 1000 unrolled steps
    assert len(loops) >= 2, pendulum_grad.source
    assert any("range(1000)" in line for line in loops), loops
    assert any("-1, -1)" in line for line in loops), loops
    assert len(pendulum_grad.source.splitlines()) < 400


# --- lennard_jones -----------------------------------------------------------


@pytest.fixture(scope="module")
def lj():
    return load_example("lennard_jones")


@pytest.fixture(scope="module")
def lj_grad(lj):
    return symdiff.grad(lj.lj_energy)


def _lj_central(m, X, h=1e-6):
    out = np.zeros_like(X)
    for idx in np.ndindex(X.shape):
        up, down = X.copy(), X.copy()
        up[idx] += h
        down[idx] -= h
        out[idx] = (
            m.lj_energy_numpy(up, m.EPS, m.SIGMA)
            - m.lj_energy_numpy(down, m.EPS, m.SIGMA)
        ) / (2 * h)
    return out


def test_lj_references_agree(lj):
    m = lj
    X = m.make_positions()
    assert X.shape == (64, 3)
    assert m.min_distance(X) > 0.9
    forces = m.lj_forces_numpy(X, m.EPS, m.SIGMA)
    E_loop = m.lj_energy(X, m.EPS, m.SIGMA)
    assert math.isclose(E_loop, m.lj_energy_numpy(X, m.EPS, m.SIGMA), rel_tol=1e-13)
    value, (dE_dX,) = _autograd(m.lj_energy, (0,), X, m.EPS, m.SIGMA)
    assert value == E_loop
    _assert_close(-dE_dX, forces, 1e-12, "autograd vs forces by hand")
    _assert_close(-_lj_central(m, X), forces, 1e-6, "central diff. vs by hand")
    # Newton's third law and rotation invariance
    scale = float(np.max(np.abs(forces)))
    assert np.max(np.abs(forces.sum(axis=0))) <= 1e-13 * scale * len(X)
    assert np.max(np.abs(np.cross(X, forces).sum(axis=0))) <= 1e-12 * scale * len(X)


def test_lj_grad_is_minus_the_forces(lj, lj_grad):
    m = lj
    X = m.make_positions()
    dE_dX = lj_grad(X, m.EPS, m.SIGMA)
    assert np.shape(dE_dX) == X.shape
    F = -np.asarray(dE_dX)
    _assert_close(F, m.lj_forces_numpy(X, m.EPS, m.SIGMA), 1e-6)
    scale = float(np.max(np.abs(F)))
    assert np.max(np.abs(F.sum(axis=0))) <= 1e-12 * scale * len(X)
    assert np.max(np.abs(np.cross(X, F).sum(axis=0))) <= 1e-11 * scale * len(X)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 27])
def test_lj_other_sizes(lj, lj_grad, n):
    """One compiled kernel for every n: triangular bounds, empty inner loops."""
    m = lj
    X = m.make_positions(seed=n, cells=3)[:n] * 1.0
    got = lj_grad(X, 1.5, 0.9)
    assert np.shape(got) == (n, 3)
    if n < 2:
        assert np.all(np.asarray(got) == 0.0)
        assert symdiff.jit(m.lj_energy)(X, 1.5, 0.9) == 0.0
        return
    _assert_close(-np.asarray(got), m.lj_forces_numpy(X, 1.5, 0.9), 1e-6, f"n={n}")


def test_lj_value_and_grad_and_other_parameters(lj, lj_grad):
    m = lj
    X = m.make_positions(seed=11)
    eps, sigma = 0.7, 1.05
    value, dE_dX = symdiff.value_and_grad(m.lj_energy)(X, eps, sigma)
    assert math.isclose(value, m.lj_energy_numpy(X, eps, sigma), rel_tol=1e-12)
    assert math.isclose(symdiff.jit(m.lj_energy)(X, eps, sigma), value, rel_tol=1e-14)
    _assert_close(dE_dX, lj_grad(X, eps, sigma), 1e-14)
    _assert_close(-np.asarray(dE_dX), m.lj_forces_numpy(X, eps, sigma), 1e-6)
    # eps and sigma as well: dE/deps = E / eps; by autograd for sigma
    g_eps, g_sigma = symdiff.grad(m.lj_energy, argnums=(1, 2))(X, eps, sigma)
    _, (ag_eps, ag_sigma) = _autograd(m.lj_energy, (1, 2), X, eps, sigma)
    assert math.isclose(g_eps, value / eps, rel_tol=1e-12)
    assert math.isclose(g_eps, ag_eps, rel_tol=1e-6)
    assert math.isclose(g_sigma, ag_sigma, rel_tol=1e-6)


# --- rnn ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def rnn():
    return load_example("rnn")


def _rnn_cases(m):
    (W, U, b), V, xs, ys = m.make_data()
    lstm_params, lstm_xs = m.make_lstm_data()
    return {
        "rnn": (m.rnn_loss, m.rnn_loss, (W, U, b, xs), (0, 1, 2)),
        "readout": (
            m.rnn_readout_loss,
            m.rnn_readout_loss_stacked,
            (W, U, b, V, xs, ys),
            (0, 1, 2, 3),
        ),
        "lstm": (m.lstm_loss, m.lstm_loss, (*lstm_params, lstm_xs), (0, 1, 2)),
    }


CASES = ("rnn", "readout", "lstm")


@pytest.mark.parametrize("case", CASES)
def test_rnn_references_agree(rnn, case):
    """autograd's gradient, dotted with a random direction, against the complex
    step along that direction (on the code autograd runs)."""
    fn, ref_fn, args, argnums = _rnn_cases(rnn)[case]
    value, grads = _autograd(ref_fn, argnums, *args)
    assert math.isclose(value, fn(*args), rel_tol=1e-14)
    rng = np.random.default_rng(5)
    for _ in range(2):
        directions = [None] * len(args)
        for i in argnums:
            directions[i] = rng.normal(size=np.shape(args[i]))
        want = _complex_step_directional(ref_fn, args, directions)
        got = sum(
            float(np.sum(grads[k] * directions[i])) for k, i in enumerate(argnums)
        )
        assert math.isclose(got, want, rel_tol=1e-12), (got, want)


@pytest.mark.parametrize("case", CASES)
def test_rnn_value_and_grad_matches_autograd(rnn, case):
    fn, ref_fn, args, argnums = _rnn_cases(rnn)[case]
    want_value, want = _autograd(ref_fn, argnums, *args)
    value, grads = symdiff.value_and_grad(fn, argnums=argnums)(*args)
    assert math.isclose(value, want_value, rel_tol=1e-12)
    assert len(grads) == len(argnums)
    for k, i in enumerate(argnums):
        assert np.shape(grads[k]) == np.shape(args[i])
        _assert_close(grads[k], want[k], 1e-6, f"{case}: d/d(arg {i})")


def test_rnn_grad_and_jit(rnn):
    fn, _, args, argnums = _rnn_cases(rnn)["rnn"]
    _, want = _autograd(fn, argnums, *args)
    got = symdiff.grad(fn, argnums=argnums)(*args)
    for g, w in zip(got, want, strict=True):
        _assert_close(g, w, 1e-6)
    assert math.isclose(symdiff.jit(fn)(*args), fn(*args), rel_tol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["rnn", "readout"])
def test_rnn_checkpointed(rnn, case):
    """Loop-carried arrays (and an array written in the loop) under
    checkpointing: the same gradient as the full tape."""
    fn, _, args, argnums = _rnn_cases(rnn)[case]
    _, taped = symdiff.value_and_grad(fn, argnums=argnums)(*args)
    _, checkpointed = symdiff.value_and_grad(fn, argnums=argnums, checkpoint=9)(*args)
    for g, w in zip(checkpointed, taped, strict=True):
        _assert_close(g, w, 1e-13)
