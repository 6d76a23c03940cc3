"""Second-order transforms and the command line on array functions.

Hessians and Hessian-vector products of corpus functions against HIPS autograd;
the Rosenbrock Hessian against ``scipy.optimize.rosen_hess``; ``--arg X=f64[3,4]`` on
the command line, and a compiled module of an array gradient run without symdiff.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import autograd
import numpy as np
import pytest
from click.testing import CliRunner

import symdiff
from symdiff.cli import main
from tests.array_corpus import BY_NAME
from tests.test_arrays import assert_close, make_args, oracle

HESSIAN_CASES = [
    "rosenbrock",
    "quadratic_form",
    "least_squares",
    "seed000_block",
    "softmax_cross_entropy",
    "mlp_loss",
]


def _cases():
    names = [n for n in HESSIAN_CASES if n in BY_NAME]
    assert len(names) >= 4, sorted(BY_NAME)[:20]
    return names


@pytest.mark.parametrize("name", _cases())
def test_hessian_blocks_match_autograd(name):
    case = BY_NAME[name]
    args = make_args(case)
    argnums = case.diff_argnums[:2]
    got = symdiff.hessian(case.fn, argnums=argnums, target="python")(*args)
    for r, i in enumerate(argnums):
        for c, j in enumerate(argnums):
            want = autograd.jacobian(autograd.grad(oracle(case), i), j)(*args)
            assert_close(got[r][c], np.asarray(want, float), f"H[{i}][{j}] of {name}")


@pytest.mark.parametrize("name", _cases())
def test_hvp_matches_autograd(name):
    case = BY_NAME[name]
    args = make_args(case)
    rng = np.random.default_rng(3)
    # a direction in the differentiated arguments only (data gets zero)
    vs = tuple(
        (rng.normal(size=np.shape(a)) if np.ndim(a) else rng.normal())
        if k in case.diff_argnums
        else np.zeros(np.shape(a))
        if np.ndim(a)
        else 0.0
        for k, a in enumerate(args)
    )
    got = symdiff.hvp(case.fn, args, vs, target="python")
    for i in case.diff_argnums:
        want = sum(
            np.tensordot(
                np.asarray(
                    autograd.jacobian(autograd.grad(oracle(case), i), j)(*args), float
                ),
                vs[j],
                axes=np.ndim(vs[j]),
            )
            for j in case.diff_argnums
        )
        assert_close(got[i], want, f"hvp of {name}, argument {i}")


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_rosenbrock_hessian_is_scipys(target):
    from scipy.optimize import rosen_hess

    x = np.random.default_rng(0).uniform(-1.5, 1.5, 9)
    got = symdiff.hessian(rosenbrock, target=target)(x)
    assert got.shape == (9, 9)
    assert np.max(np.abs(got - rosen_hess(x))) <= 1e-12 * np.max(np.abs(got))


# -- the command line ---------------------------------------------------------------
MODEL = textwrap.dedent(
    """
    import numpy as np


    def loss(W, b, X):
        H = np.tanh(X @ W + b)
        return np.sum(H ** 2)
    """
)
ARRAYS = "W=f64[4,3],b=f64[3],X=f64[5,4]"
#: A point written out: the arrays' kinds and shapes follow from it.
POINT = (
    "W=[[0.1,0.2,0.3],[0.1,0.2,0.3],[0.1,0.2,0.3],[0.1,0.2,0.3]],b=[0,0.1,0.2],"
    "X=[[1,2,3,4],[0,1,0,1]]"
)


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    return path


def cli(*args, code=0):
    result = CliRunner().invoke(main, list(args), prog_name="symdiff")
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def test_cli_grad_of_arrays(model):
    out = cli("grad", f"{model}:loss", "--arg", ARRAYS).stdout
    assert "# signature: (W: float64[:,:], b: float64[:], X: float64[:,:])" in out
    assert "W_bar = np.dot(X.T, " in out
    assert "def loss_grad(W, b, X):" in out


def test_cli_bad_array_kind(model):
    result = cli("grad", f"{model}:loss", "--arg", "W=f64[4,x]", code=2)
    assert (
        "`W=f64[4,x]`: an array kind is KIND[LENGTHS] with positive integer "
        "lengths, e.g. f64[3,4]"
    ) in result.stderr


def test_cli_check_of_arrays_at_random_points(model):
    result = cli(
        "check", f"{model}:loss", "--arg", ARRAYS, "--wrt", "W,b", "--samples", "2"
    )
    rows = [line for line in result.stdout.splitlines() if line.endswith("  ok")]
    assert len(rows) == 2 * (12 + 3)  # every element of W and b, at both points
    assert any("  W[3,2]  " in row for row in rows)
    assert "ok: 30 of 30 partial derivatives at 2 points agree" in result.stdout


def test_cli_check_of_arrays_written_at_the_point(model):
    result = cli(
        "check",
        f"{model}:loss",
        "--at",
        POINT,
        "--wrt",
        "b",
        "--json",
    )
    payload = json.loads(result.stdout)
    assert payload["ok"] and payload["kinds"]["X"] == "float64[2,4]"
    assert [r["arg"] for r in payload["rows"]] == ["b[0]", "b[1]", "b[2]"]
    assert payload["rows"][0]["point"]["b"] == [0.0, 0.1, 0.2]


def test_cli_check_of_arrays_that_do_not_fit(model):
    at = "W=[[0.1,0.2,0.3]],b=[0,0.1,0.2],X=[[1,2,3,4],[0,1,0,1]]"
    result = cli("check", f"{model}:loss", "--at", at, "--wrt", "b", code=1)
    assert "the arguments do not fit `loss`: " in result.stderr
    assert "model.py:6:" in result.stderr and "(got 4 and 1)" in result.stderr


def test_cli_compiled_module_of_arrays_runs_without_symdiff(model, tmp_path):
    out = tmp_path / "loss_grad.py"
    cli("compile", f"{model}:loss", "--arg", ARRAYS, "--wrt", "W,b", "-o", str(out))
    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["symdiff"] = None  # importing it would fail
        sys.path.insert(0, {str(tmp_path)!r})
        import numpy as np
        import loss_grad
        rng = np.random.default_rng(0)
        W, b, X = rng.normal(size=(4, 3)), rng.normal(size=3), rng.normal(size=(7, 4))
        value, (gW, gb) = loss_grad.value_and_grad(W, b, X)
        np.save({str(tmp_path / "g.npy")!r}, np.concatenate([gW.ravel(), gb, [value]]))
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=300)
    rng = np.random.default_rng(0)
    W, b, X = rng.normal(size=(4, 3)), rng.normal(size=3), rng.normal(size=(7, 4))
    ns: dict = {}
    exec(compile(MODEL, str(model), "exec"), ns)
    value, (gW, gb) = symdiff.value_and_grad(
        ns["loss"], argnums=(0, 1), target="python"
    )(W, b, X)
    got = np.load(tmp_path / "g.npy")
    assert np.allclose(got, np.concatenate([gW.ravel(), gb, [value]]), rtol=1e-12)


# -- jacobian(mode="auto") picks the side with fewer sweeps -----------------------------
def wave(t):
    k = np.arange(1000) * 1.0
    return np.sin(t * k) / (1.0 + k)


def energy(x):
    return np.sum(np.sin(x) ** 2) + np.sum(x[1:] * x[:-1])


def test_auto_mode_is_forward_for_one_input_and_many_outputs():
    jac = symdiff.jacobian(wave, target="python")
    got = jac(0.3)
    assert jac.mode == "forward"  # one jvp sweep, not 1000 vjp sweeps
    k = np.arange(1000.0)
    assert np.allclose(got, np.cos(0.3 * k) * k / (1.0 + k), rtol=1e-13, atol=1e-15)
    reverse = symdiff.jacobian(wave, mode="reverse", target="python")
    assert np.allclose(reverse(0.3), got, rtol=1e-13, atol=1e-15)
    assert reverse.mode == "reverse"


def test_auto_mode_is_reverse_for_many_inputs_and_one_output():
    x = np.random.default_rng(0).normal(size=1000)
    jac = symdiff.jacobian(energy, target="python")
    got = jac(x)
    assert jac.mode == "reverse"  # one vjp sweep, not 1000 jvp sweeps
    want = 2 * np.sin(x) * np.cos(x) + np.r_[x[1:], 0.0] + np.r_[0.0, x[:-1]]
    assert np.allclose(got, want, rtol=1e-13, atol=1e-13)
    forward = symdiff.jacobian(energy, mode="forward", target="python")
    assert np.allclose(forward(x), got, rtol=1e-13, atol=1e-13)


def layer(W, b, X):
    return np.tanh(X @ W + b)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_an_array_jacobians_sweeps_differentiate_only_its_argnums(mode):
    """Each sweep's kernel takes tangents for (or returns adjoints of) the
    arguments asked for, not every one (X_bar was one more matmul a row)."""
    rng = np.random.default_rng(2)
    W, b, X = rng.normal(size=(3, 2)), rng.normal(size=2), rng.normal(size=(4, 3))
    jac = symdiff.jacobian(layer, argnums=(1, 0), mode=mode, target="python")
    Jb, JW = jac(W, b, X)
    for i in range(4):
        for j in range(2):
            s = 1.0 - np.tanh(X[i] @ W[:, j] + b[j]) ** 2
            assert Jb[i, j] == pytest.approx(np.eye(2)[j] * s, rel=1e-14)
            want = np.zeros((3, 2))
            want[:, j] = s * X[i]
            assert JW[i, j] == pytest.approx(want, rel=1e-14)
    kind = "jvp" if mode == "forward" else "vjp"
    assert f"{kind} of `layer`" in jac.source
    assert "# with respect to: b, W\n" in jac.source
    assert "X_bar" not in jac.source and "X_dot" not in jac.source


def test_cli_grad_at_an_array_point(model):
    result = cli(
        "grad",
        f"{model}:loss",
        "--at",
        POINT,
        "--wrt",
        "b",
        "--json",
    )
    (got,) = json.loads(result.stdout)["results"]
    W = np.full((4, 3), [0.1, 0.2, 0.3])
    b = np.array([0.0, 0.1, 0.2])
    X = np.array([[1.0, 2, 3, 4], [0, 1, 0, 1]])
    H = np.tanh(X @ W + b)
    assert np.allclose(got["values"]["b_bar"], (2 * H * (1 - H**2)).sum(0), rtol=1e-13)
    assert got["at"]["X"] == X.tolist()


@pytest.mark.parametrize(
    ("command", "sweep"),
    [("jacobian", "a jvp or vjp per element"), ("hessian", "a Hessian-vector product")],
)
def test_cli_matrix_of_arrays_says_there_is_no_single_kernel(model, command, sweep):
    result = cli(command, f"{model}:loss", "--arg", ARRAYS, "--wrt", "b", code=1)
    assert f"the {command} of `loss`" in result.stderr
    assert f"computed one sweep at a time ({sweep}" in result.stderr
