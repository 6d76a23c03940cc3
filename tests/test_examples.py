"""Run every script in examples/ and check what it prints.

Each example checks itself (it raises on a mismatch and prints ``OK``) and
prints its headline numbers as ``RESULT <label> = <repr(float)>`` lines.  Here
those numbers are compared with values derived independently, by hand.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from tests.checks import load_example, with_modules

ROOT = Path(__file__).resolve().parents[1]
# every script but the module they share (examples/_support.py)
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py") if p.name[0] != "_")


def _quickstart():
    x, y = 1.3, 0.5
    v = x * x
    z = math.exp(math.sin(v) * math.log(v))
    dz_dv = z * (math.cos(v) * math.log(v) + math.sin(v) / v)
    return {"df/dx": (dz_dv + y) * 2 * x, "df/dy": v}


def _seed004():
    u = 1.5
    v = u * u
    z = math.exp(math.sin(v) * math.log(v))
    dz_du = z * (math.cos(v) * math.log(v) + math.sin(v) / v) * 2 * u
    return {"z(1.5)": z, "dz/du(1.5)": dz_du}


def _polar():
    r, t = 1.2, 0.7
    x, y = r * math.cos(t), r * math.sin(t)
    fx = 2 * x * y + y * math.cos(x * y)
    fy = x * x + x * math.cos(x * y)
    return {
        "df/dr(1.2, 0.7)": fx * math.cos(t) + fy * math.sin(t),
        "df/dtheta(1.2, 0.7)": -fx * r * math.sin(t) + fy * r * math.cos(t),
    }


def _sigmoid():
    s = 1 / (1 + math.exp(-0.3))
    return {"s'(0)": 0.25, "s'(0.3)": s * (1 - s)}


def _rosenbrock():
    import numpy as np
    from scipy.optimize import rosen, rosen_der

    x = np.random.default_rng(0).uniform(-1.5, 1.5, 10**6)
    g = rosen_der(x)
    return {"f(x)": rosen(x), "df/dx[0]": g[0], "df/dx[-1]": g[-1]}


def _by_autograd(example, fn, make_args, argnums, labels):
    """Gradient norms of an example's function, by HIPS autograd on the same code."""
    import autograd
    import autograd.numpy as anp
    import numpy as np

    module = load_example(example)
    oracle = with_modules(getattr(module, fn), np=anp)  # its helpers too
    args = make_args(module)
    value, grads = autograd.value_and_grad(oracle, argnums)(*args)
    out = {labels[0]: float(value)}
    for label, g in zip(labels[1:], grads, strict=True):
        out[label] = float(np.linalg.norm(g))
    return out


def _mlp():
    def args(m):
        params, X, Y = m.make_data()
        return (*params, X, Y)

    labels = ["loss"] + [f"|dL/d{p}|" for p in ("W1", "b1", "W2", "b2", "W3", "b3")]
    return _by_autograd("mlp", "mlp_loss", args, tuple(range(6)), labels)


def _gmm():
    def args(m):
        params, x = m.make_data()
        return (*params, x, m.unpack_matrix(m.D))

    labels = ["objective", "|d/dalphas|", "|d/dmeans|", "|d/dicf|"]
    return _by_autograd("gmm", "gmm_objective", args, (0, 1, 2), labels)


def _seed000():
    # a = (1, -2, 3), b = 0.5: u = a.a = 14, y = u + b|a|, z = 2u, l = sum(y) + z
    a, b, n = (1.0, -2.0, 3.0), 0.5, 3
    u = sum(t * t for t in a)
    l_ = n * u + b * sum(abs(t) for t in a) + 2 * u
    out = {"l": l_, "dl/db": sum(abs(t) for t in a)}
    for i, t in enumerate(a):
        out[f"dl/da[{i}]"] = (n + 2) * 2 * t + b * math.copysign(1.0, t)
    return out


def _pendulum():
    """autograd on the example's own code, with math.sin/cos bound to autograd's."""
    import autograd
    import autograd.numpy as anp

    module = load_example("pendulum_rk4")
    shim = types.SimpleNamespace(sin=anp.sin, cos=anp.cos)
    energy = with_modules(module.pendulum_energy, np=anp, math=shim)
    value, grads = autograd.value_and_grad(energy, (0, 1, 2))(*module.POINT)
    out = {"E": float(value)}
    for name, g in zip(("damping", "length", "theta0"), grads, strict=True):
        out[f"dE/d{name}"] = float(g)
    return out


def _lennard_jones():
    """Energy and forces of the example's particles, by hand in NumPy."""
    import numpy as np

    module = load_example("lennard_jones")
    X, eps, sigma = module.make_positions(), module.EPS, module.SIGMA
    D = X[:, None, :] - X[None, :, :]
    r2 = np.sum(D * D, axis=2)
    np.fill_diagonal(r2, np.inf)
    s = (sigma**2 / r2) ** 3
    F = np.sum((24 * eps * (2 * s**2 - s) / r2)[:, :, None] * D, axis=1)
    return {
        "E": 0.5 * np.sum(4 * eps * (s**2 - s)),
        "|F|": np.linalg.norm(F),
        "F[0, 0]": F[0, 0],
    }


def _rnn():
    def args(m):
        (W, U, b), _, xs, _ = m.make_data()
        return (W, U, b, xs)

    labels = ["rnn loss", "|d/dW|", "|d/dU|", "|d/db|"]
    out = _by_autograd("rnn", "rnn_loss", args, (0, 1, 2), labels)
    module = load_example("rnn")  # the other two losses, run by NumPy
    (W, U, b), V, xs, ys = module.make_data()
    lstm_params, lstm_xs = module.make_lstm_data()
    out["readout loss"] = module.rnn_readout_loss(W, U, b, V, xs, ys)
    out["lstm loss"] = module.lstm_loss(*lstm_params, lstm_xs)
    return out


def _dask_batched():
    # z(u) = exp(sin(u^2) log(u^2)) and dz/du by the chain rule, NumPy on the same
    # 2 million points the example builds with Dask
    import numpy as np

    n = 2_000_000
    u = 0.1 + 2.9 / n * np.arange(n)
    v = u * u
    z = np.exp(np.sin(v) * np.log(v))
    dz = z * (np.cos(v) * np.log(v) + np.sin(v) / v) * 2.0 * u
    return {"mean z": float(np.mean(z)), "mean dz/du": float(np.mean(dz))}


EXPECTED: dict[str, dict[str, float]] = {
    "dask_batched.py": _dask_batched(),
    "quickstart.py": _quickstart(),
    "seed001_partial.py": {"df/dx(2, 3)": 11.0, "df/dy(2, 3)": -12.0},
    "seed004_chain.py": _seed004(),
    "polar_chain.py": _polar(),
    "sigmoid.py": _sigmoid(),
    "rosenbrock.py": _rosenbrock(),
    "mlp.py": _mlp(),
    "gmm.py": _gmm(),
    "seed000_block.py": _seed000(),
    "pendulum_rk4.py": _pendulum(),
    "lennard_jones.py": _lennard_jones(),
    "rnn.py": _rnn(),
    # w1, b1, w2, b2, w3, b3 = 0.5, 0.1, -1.2, 0.9, 2.0, -0.4 at x = 0.5, y = 1:
    # a1 = 0.35, a2 = 0.48, f = 0.56, dL/df = -0.44, dL/da2 = -0.88,
    # dL/da1 = -0.88 * -1.2 = 1.056
    "relu_network.py": {
        "dL/dw1": 0.528,
        "dL/db1": 1.056,
        "dL/dw2": -0.308,
        "dL/db2": -0.88,
        "dL/dw3": -0.2112,
        "dL/db3": -0.44,
    },
}

# Printed numbers that are checked against a bound rather than a value: the
# cheap gradient principle (seed note 003) asks for at most ~4-5x the forward
# pass's operations.
UPPER_BOUNDS: dict[str, dict[str, float]] = {
    "seed004_chain.py": {"op ratio": 5.0},
}

RESULT = re.compile(r"^RESULT (.+?) = (\S+)", re.MULTILINE)


def test_every_example_has_expectations():
    assert {p.name for p in EXAMPLES} == set(EXPECTED)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path: Path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [env.get("PYTHONPATH")])]
    )
    proc = subprocess.run(
        [sys.executable, str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout
    assert proc.returncode == 0, f"{path.name} failed:\n{out}\n{proc.stderr}"
    assert "\nOK" in out, out
    assert "def " in out, "the example should print the generated source"

    results = {label: float(value) for label, value in RESULT.findall(out)}
    expected = EXPECTED[path.name]
    bounds = UPPER_BOUNDS.get(path.name, {})
    assert set(results) == set(expected) | set(bounds), results
    for label, bound in bounds.items():
        assert results[label] <= bound, (label, results[label], bound)
    for label, want in expected.items():
        assert math.isclose(results[label], want, rel_tol=1e-12, abs_tol=1e-12), (
            label,
            results[label],
            want,
        )
