"""The command line: every command, every error users can provoke, and the
standalone module ``symdiff compile`` writes.

Most tests go through :class:`click.testing.CliRunner` (in-process, fast); a few
run the installed ``symdiff`` console script, ``python cli.py`` and ``python -m
symdiff.cli`` in subprocesses, as users do.  The functions differentiated live
in ``cli_cases.py``, a real file that the CLI imports as it imports users' files
(it prints at import time on purpose).  What the CLI prints is compared with the
Python API's answers for the same function, and error messages word for word.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import cli_cases as cases
import click
import numba
import numpy as np
import pytest
from click.testing import CliRunner

import symdiff
from symdiff.cli import main
from symdiff.cli.report import highlight

ROOT = Path(__file__).resolve().parents[1]
CASES = "tests/cli_cases.py"
CASES_LINES = (ROOT / CASES).read_text().splitlines()
COMMANDS = ["grad", "jacobian", "hessian", "check", "compile", "graph"]
HAS_DOT = shutil.which("dot") is not None


@pytest.fixture(autouse=True)
def _in_repo_root(monkeypatch):
    """Messages name files relative to the working directory: run from the root."""
    monkeypatch.chdir(ROOT)


def run(*args: str, color: bool = False, env: dict | None = None, code: int = 0):
    """Invoke the CLI in-process; check the exit status."""
    result = CliRunner().invoke(
        main, list(args), color=color, env=env, prog_name="symdiff"
    )
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def line_of(snippet: str) -> int:
    hits = [i + 1 for i, text in enumerate(CASES_LINES) if snippet in text]
    assert len(hits) == 1, snippet
    return hits[0]


def api(transform, fn, **options):
    return getattr(symdiff, transform)(fn, target="python", **options)


# -- grad ---------------------------------------------------------------------------
def test_grad_prints_the_same_kernel_as_the_api():
    result = run("grad", f"{CASES}:poly")
    assert result.stdout == api("grad", cases.poly, argnums=(0, 1)).source
    assert result.stderr == ""


def test_one_parameter_gives_a_number_like_symdiff_grad():
    out = run("grad", f"{CASES}:chain").stdout
    assert out == api("grad", cases.chain).source
    assert "    return u_bar\n" in out


def test_wrt_by_name_and_by_position_agree():
    by_name = run("grad", f"{CASES}:poly", "--wrt", "y").stdout
    assert by_name == run("grad", f"{CASES}:poly", "--wrt", "1").stdout
    assert by_name == run("grad", f"{CASES}:poly", "--wrt", "-1").stdout
    assert by_name == api("grad", cases.poly, argnums=1).source
    assert "# with respect to: y\n" in by_name
    both = run("grad", f"{CASES}:poly", "--wrt", "y,x").stdout
    assert both == api("grad", cases.poly, argnums=(1, 0)).source


@pytest.mark.parametrize("emit", ["ir", "latex", "sympy"])
def test_emit(emit):
    out = run("grad", f"{CASES}:uses_helper", "--emit", emit).stdout
    compiled = api("grad", cases.uses_helper, argnums=(0, 1))
    if emit == "ir":
        assert out == compiled.ir + "\n"
    elif emit == "latex":
        assert out == compiled.latex() + "\n"
    else:
        x_bar, y_bar = compiled.to_sympy()
        assert out == f"x_bar = {x_bar}\ny_bar = {y_bar}\n"


@pytest.mark.parametrize(("command", "emit"), [("grad", "latex"), ("hessian", "sympy")])
def test_formulas_of_a_kernel_with_a_loop_say_what_to_do_instead(command, emit):
    args = (command, f"{CASES}:sine_loop", "--arg", "n=i64", "--emit", emit)
    message = (
        f"the {command} of `sine_loop` ({CASES}) runs a loop, and a loop has no "
        "formula (LaTeX or SymPy) form\n  help: print the kernel with --emit "
        "source (or its graph with --emit ir), or evaluate it with --at"
    )
    assert run(*args, code=1).stderr == f"Error: {message}\n"
    assert json.loads(run(*args, "--json", code=1).stdout)["error"] == message
    # JSON without formulas has nothing to refuse
    plain = json.loads(run(*args[:4], "--json").stdout)
    assert plain["ok"] is True and "latex" not in plain and "sympy" not in plain


def test_value_gives_the_fused_kernel():
    out = run("grad", f"{CASES}:poly", "--value").stdout
    assert out == api("value_and_grad", cases.poly, argnums=(0, 1)).source


def test_at_evaluates():
    out = run("grad", f"{CASES}:poly", "--value", "--at", "x=2,y=3", "--at", "1,1")
    assert out.stdout == (
        "value_and_grad of `poly` at x=2, y=3:\n"
        "  value = 2.0\n  x_bar = 11.0\n  y_bar = -12.0\n"
        "value_and_grad of `poly` at x=1, y=1:\n"
        "  value = 4.0\n  x_bar = 9.0\n  y_bar = -2.0\n"
    )


@pytest.mark.parametrize("emit", ["source", "ir", "latex", "sympy"])
def test_emit_and_at_together_are_a_usage_error_except_as_json(emit):
    result = run("grad", f"{CASES}:poly", "--emit", emit, "--at", "x=2,y=3", code=2)
    assert result.stderr == usage_error(
        "grad",
        f"--emit {emit} prints the derivative and --at evaluates it: give one of "
        "them (with --json, the output has both)",
    )
    both = json.loads(
        run("grad", f"{CASES}:poly", "--emit", emit, "--at", "x=2,y=3", "--json").stdout
    )
    assert both["results"][0]["values"] == {"x_bar": 11.0, "y_bar": -12.0}
    assert ("latex" in both) == (emit == "latex")


def test_at_takes_a_parameters_default_when_it_is_left_out():
    out = run("grad", f"{CASES}:scaled", "--at", "x=1.5").stdout
    assert out == "grad of `scaled` at x=1.5, y=2:\n  x_bar = 2.0\n  y_bar = 1.5\n"
    given = run("grad", f"{CASES}:scaled", "--at", "x=1.5,y=3").stdout
    assert given == "grad of `scaled` at x=1.5, y=3:\n  x_bar = 3.0\n  y_bar = 1.5\n"
    check = json.loads(run("check", f"{CASES}:scaled", "--at", "1.5", "--json").stdout)
    assert [r["point"] for r in check["rows"]] == [{"x": 1.5, "y": 2.0}] * 2
    not_a_bool = run(
        "grad", f"{CASES}:scaled", "--arg", "y=bool", "--at", "x=1", code=2
    )
    assert not_a_bool.stderr == usage_error(
        "grad",
        "Invalid value for '--at': no value for y, and its default (2.0) is not a "
        "bool value; give y=... too",
    )


def test_grad_json():
    payload = json.loads(run("grad", f"{CASES}:poly", "--json").stdout)
    compiled = api("grad", cases.poly, argnums=(0, 1))
    assert payload["ok"] is True
    assert payload["source"] == compiled.source
    assert payload["ir"] == compiled.ir
    assert payload["op_counts"] == compiled.op_counts
    assert payload["wrt"] == ["x", "y"]
    assert payload["outputs"] == ["x_bar", "y_bar"]
    assert payload["kernel"] == "poly_grad"
    assert payload["location"] == f"{CASES}:{line_of('def poly(')}"
    assert "latex" not in payload  # only on request: it can be large
    same = json.loads(run("grad", f"{CASES}:poly", "--emit", "json").stdout)
    assert same == payload
    with_at = json.loads(
        run("grad", f"{CASES}:poly", "--json", "--at", "x=2,y=3").stdout
    )
    assert with_at["results"] == [
        {"at": {"x": 2.0, "y": 3.0}, "values": {"x_bar": 11.0, "y_bar": -12.0}}
    ]
    latex = json.loads(run("grad", f"{CASES}:poly", "--json", "--emit", "latex").stdout)
    assert latex["latex"] == compiled.latex()


def test_a_decorated_function_is_differentiated_as_written():
    result = run("grad", f"{CASES}:decorated")
    assert (
        result.stdout == api("grad", cases.decorated.__wrapped__, argnums=(0, 1)).source
    )
    # in Python, grad of the decorated name is a second derivative: say which
    assert "note: `decorated` is decorated with symdiff.grad" in result.stderr
    assert "as written, without the decorator" in result.stderr


def test_a_module_on_the_path_works_too():
    out = run("grad", "cli_cases:poly").stdout
    assert out == api("grad", cases.poly, argnums=(0, 1)).source


def test_what_the_file_prints_at_import_is_kept_out():
    result = run("grad", f"{CASES}:poly", "--json")
    assert "cli_cases imported" not in result.output
    assert result.stderr == ""  # cli_cases.py prints to stderr too
    json.loads(result.stdout)


def test_what_the_file_prints_to_stderr_is_shown_only_if_importing_fails(tmp_path):
    path = tmp_path / "noisy.py"
    path.write_text(
        "import sys\n"
        'print("to stdout")\n'
        'print("to stderr", file=sys.stderr)\n\n\n'
        "def f(x):\n    return x * x\n"
    )
    result = run("grad", f"{path}:f")
    assert result.stderr == ""
    assert result.stdout.startswith("# generated by symdiff")
    path.write_text(
        "import sys\n"
        'print("to stdout")\n'
        'print("to stderr", file=sys.stderr)\n'
        "RATE = 1 / 0\n"
    )
    failed = run("grad", f"{path}:f", code=1)
    assert failed.stderr == (
        f"Error: {path}:4: importing the file raised ZeroDivisionError: division by "
        "zero\nits output before the error:\nto stdout\nto stderr\n"
    )


# -- highlighting ---------------------------------------------------------------------
def test_source_is_plain_off_a_terminal_and_highlighted_on_one():
    plain = run("grad", f"{CASES}:chain").stdout
    assert "\x1b[" not in plain
    colored = run("grad", f"{CASES}:chain", color=True).stdout
    assert "\x1b[" in colored
    assert click.unstyle(colored) == plain
    assert run("--no-color", "grad", f"{CASES}:chain", color=True).stdout == plain
    no_color = run("grad", f"{CASES}:chain", color=True, env={"NO_COLOR": "1"})
    assert no_color.stdout == plain


@pytest.mark.parametrize(
    "source",
    [
        api("hessian", cases.chain).source,
        api("jacobian", cases.polar, argnums=(0, 1)).source,
        'x = "a\\nb"  # comment\n\n\ndef f(a):\n    if a:\n        return 1e-3\n',
    ],
)
def test_highlighting_only_adds_colours(source):
    styled = highlight(source)
    assert click.unstyle(styled) == source
    assert "\x1b[" in styled


# -- jacobian and hessian ---------------------------------------------------------
@pytest.mark.parametrize("mode", ["auto", "forward", "reverse"])
def test_jacobian_modes(mode):
    out = run("jacobian", f"{CASES}:polar", "--mode", mode).stdout
    compiled = api("jacobian", cases.polar, argnums=(0, 1), mode=mode)
    assert out == compiled.source
    assert f"# mode: {compiled.mode}\n" in out
    payload = json.loads(
        run("jacobian", f"{CASES}:polar", "--mode", mode, "--json").stdout
    )
    assert payload["mode"] == compiled.mode


def test_jacobian_at():
    out = run("jacobian", f"{CASES}:polar", "--at", "r=2,theta=0.5").stdout
    c, s = math.cos(0.5), math.sin(0.5)
    assert out == (
        "jacobian of `polar` at r=2, theta=0.5:\n"
        f"  dout0_dr = {c!r}\n  dout0_dtheta = {-2 * s!r}\n"
        f"  dout1_dr = {s!r}\n  dout1_dtheta = {2 * c!r}\n"
    )


def test_hessian():
    out = run("hessian", f"{CASES}:poly").stdout
    assert out == api("hessian", cases.poly, argnums=(0, 1)).source
    at = run("hessian", f"{CASES}:poly", "--at", "x=2,y=3").stdout
    assert at == (
        "hessian of `poly` at x=2, y=3:\n"
        "  d2_dx_dx = 10.0\n  d2_dx_dy = -6.0\n  d2_dy_dx = -6.0\n  d2_dy_dy = -4.0\n"
    )


def test_the_hessians_ir_labels_its_entry_not_the_gradient():
    # d2/dx2 exp(x) is the gradient's own node: it was labelled `# x_bar`.
    out = run("hessian", f"{CASES}:smooth_exp", "--emit", "ir").stdout
    assert out.splitlines() == [
        "%0 = param x : f64",
        f"{'%1 = exp %0 : f64':<40} # d2_dx_dx",
        "return d2_dx_dx = %1",
    ]
    grad = run("grad", f"{CASES}:smooth_exp", "--emit", "ir").stdout
    assert f"{'%1 = exp %0 : f64':<40} # x_bar\n" in grad


def test_hessian_of_a_pair_says_what_to_do():
    result = run("hessian", f"{CASES}:polar", code=1)
    assert result.stderr == (
        f"Error: hessian needs `polar` ({CASES}:{line_of('def polar(')}) to return "
        "one number, but it returns a tuple of 2 values\n"
        "  help: `symdiff jacobian` differentiates every output\n"
    )


def test_jacobian_and_hessian_of_arrays_are_evaluated_at_points():
    x = np.array([1.0, 2.0, 3.0])
    jac = run("jacobian", f"{CASES}:total", "--arg", "x=f64[3]", "--at", "x=[1,2,3]")
    want = symdiff.jacobian(cases.total, target="python")(x)
    assert (
        jac.stdout
        == "jacobian of `total` at x=[1.,2.,3.]:\n  dvalue_dx = [2., 4., 6.]\n"
    )
    assert want.tolist() == [2.0, 4.0, 6.0]
    hess = run("hessian", f"{CASES}:total", "--at", "x=[1,2,3]").stdout
    assert hess == (
        "hessian of `total` at x=[1.,2.,3.]:\n"
        "  d2_dx_dx = [[2., 0., 0.],\n"
        "     [0., 2., 0.],\n"
        "     [0., 0., 2.]]\n"
    )
    at = "X=[[1,2],[3,4],[5,6]],w=[0.1,-0.2]"
    payload = json.loads(
        run("jacobian", f"{CASES}:product_tanh", "--at", at, "--json").stdout
    )
    X, w = np.array([[1.0, 2], [3, 4], [5, 6]]), np.array([0.1, -0.2])
    dX, dw = symdiff.jacobian(cases.product_tanh, argnums=(0, 1))(X, w)
    assert payload["outputs"] == ["dvalue_dX", "dvalue_dw"]
    (result,) = payload["results"]
    assert result["at"] == {"X": X.tolist(), "w": w.tolist()}
    assert result["values"] == {"dvalue_dX": dX.tolist(), "dvalue_dw": dw.tolist()}
    assert payload["mode"] == "reverse" and "source" not in payload
    # without a point there is no kernel to print, and the message says so
    for command in ("jacobian", "hessian"):
        result = run(command, f"{CASES}:total", "--arg", "x=f64[3]", code=1)
        assert result.stderr.endswith(
            "so no single kernel computes it\n  help: pass --at to compute its "
            "values (an array as nested lists: --at 'x=[1,2,3]'); `symdiff grad` "
            "prints the kernel of the gradient of a function returning one number\n"
        )


# -- check --------------------------------------------------------------------------
def test_check_at_given_points():
    result = run(
        "check", f"{CASES}:poly", "--at", "x=2,y=3", "--at", "1,1", "--target", "python"
    )
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "point",
        "arg",
        "symdiff",
        "finite",
        "diff",
        "abs",
        "err",
        "rel",
        "err",
        "status",
    ]
    rows = [line.split("  ") for line in lines[2:6]]
    assert [r[0] for r in rows] == ["x=2, y=3", "x=2, y=3", "x=1, y=1", "x=1, y=1"]
    assert [line.split()[-1] for line in lines[2:6]] == ["ok"] * 4
    assert lines[-1] == (
        "ok: 4 of 4 partial derivatives at 2 points agree with finite differences "
        "(rtol=1e-06, atol=1e-08)"
    )


def test_check_reports_a_wrong_gradient_and_exits_1():
    # stop_gradient makes symdiff's derivative of x*x half the true one.
    result = run("check", f"{CASES}:stopped", "--target", "python", code=1)
    rows = result.stdout.splitlines()[2:]
    assert len(rows) == 5
    assert all(row.endswith("MISMATCH") for row in rows)
    assert result.stderr == (
        "Error: mismatch: only 0 of 5 partial derivatives at 5 points agree with "
        "finite differences (rtol=1e-06, atol=1e-08)\n"
    )


def test_check_json():
    result = run(
        "check",
        f"{CASES}:stopped",
        "--at",
        "x=1.5",
        "--target",
        "python",
        "--json",
        code=1,
    )
    payload = json.loads(result.stdout)
    assert payload["ok"] is False
    (row,) = payload["rows"]
    assert row["point"] == {"x": 1.5}
    assert row["symdiff"] == 1.5
    assert row["finite_diff"] == pytest.approx(3.0, rel=1e-12)
    assert row["status"] == "mismatch"
    good = json.loads(
        run("check", f"{CASES}:chain", "--json", "--samples", "3").stdout
    )  # the Numba kernel (--target cpu, the default)
    assert good["ok"] is True and len(good["rows"]) == 3
    assert all(r["status"] == "ok" and r["rel_err"] < 1e-9 for r in good["rows"])


def test_check_random_points_respect_the_domain_and_skip_undefined_ones():
    result = run(
        "check",
        f"{CASES}:only_positive",
        "--samples",
        "4",
        "--target",
        "python",
        "--json",
    )
    payload = json.loads(result.stdout)
    assert payload["skipped_points"] > 0  # log(x) for x in [-2, 0]
    assert all(r["point"]["x"] > 0 for r in payload["rows"])
    inside = json.loads(
        run(
            "check",
            f"{CASES}:poly",
            "--domain",
            "x=5:6,y=-1:-0.5",
            "--json",
            "--target",
            "python",
            "--seed",
            "7",
        ).stdout
    )
    for r in inside["rows"]:
        assert 5 <= r["point"]["x"] <= 6 and -1 <= r["point"]["y"] <= -0.5


def test_check_calls_a_kink_unstable_not_a_mismatch():
    result = run("check", f"{CASES}:kink", "--at", "x=1e-5", "--target", "python")
    assert result.stdout.splitlines()[2].endswith("unstable")
    assert result.stdout.splitlines()[-1] == (
        "ok: 0 of 1 partial derivatives at 1 point agree with finite differences "
        "(rtol=1e-06, atol=1e-08); 1 not checked: the finite difference is unstable "
        "there (a kink, branch switch or singularity within the step)"
    )


def test_check_calls_an_infinite_derivative_at_a_singularity_unstable():
    result = run("check", f"{CASES}:reciprocal", "--at", "0", "--target", "python")
    row = result.stdout.splitlines()[2].split()
    assert row[:3] == ["x=0", "x", "-inf"] and row[-1] == "unstable"
    assert result.stdout.splitlines()[-1].endswith(
        "; 1 not checked: the finite difference is unstable there (a kink, branch "
        "switch or singularity within the step)"
    )
    # an infinite or NaN derivative where the finite difference settled is wrong
    from symdiff.cli.check import MISMATCH, UNSTABLE, Difference, compare

    settled = compare((1.0,), "x", math.inf, Difference(2.0, 1e-12), 1e-6, 1e-8)
    assert settled.status == MISMATCH
    nan = compare((1.0,), "x", math.nan, Difference(2.0, 1e-12), 1e-6, 1e-8)
    assert nan.status == MISMATCH
    unsettled = compare((0.0,), "x", 5.0, Difference(math.inf, math.nan), 1e-6, 1e-8)
    assert unsettled.status == UNSTABLE


def test_check_where_the_function_raises():
    result = run(
        "check", f"{CASES}:only_positive", "--at", "x=-1", "--target", "python", code=1
    )
    assert result.stderr == (
        "Error: `only_positive` raised ValueError: math domain error near x=-1 "
        "(finite differences evaluate it within 0.002 * max(1, |x|) of the point)\n"
    )
    nowhere = run(
        "check",
        f"{CASES}:only_positive",
        "--domain",
        "x=-2:-1",
        "--samples",
        "2",
        "--target",
        "python",
        code=1,
    )
    assert nowhere.stderr == (
        "Error: `only_positive` (tests/cli_cases.py) is not finite at any of 100 "
        "random points (x in [-2, -1]); pass --domain NAME=LOW:HIGH or --at\n"
    )


@pytest.mark.parametrize(
    ("domain", "message"),
    [
        ("x=2:1", "`x=2:1`: need finite LOW < HIGH"),
        ("x", "expected NAME=LOW:HIGH, got 'x'"),
        ("q=0:1", "`q` is not a parameter of `poly` (it takes x, y)"),
        ("x=a:1", "`x=a`: 'a' is not a number"),
    ],
)
def test_check_bad_domain(domain, message):
    result = run("check", f"{CASES}:poly", "--domain", domain, code=2)
    assert result.stderr.endswith(f"Error: Invalid value for '--domain': {message}\n")


# -- compile ------------------------------------------------------------------------
def _site_dirs() -> list[str]:
    """Where numpy, numba and llvmlite live (not their .pth hooks: with ``-S`` the
    editable install's finder is never loaded, so symdiff cannot be imported)."""
    import llvmlite

    return sorted({str(Path(m.__file__).parents[1]) for m in (np, numba, llvmlite)})


POINTS = [(2.0, 3.0), (-1.5, 0.25), (0.7, -2.0)]
STANDALONE = textwrap.dedent(
    """
    import json, sys
    try:
        import symdiff
    except ImportError:
        pass
    else:
        sys.exit("symdiff must not be importable here: " + symdiff.__file__)
    import poly_kernels as k
    points = json.loads(sys.argv[1])
    print(json.dumps({
        name: [getattr(k, name)(*p) for p in points]
        for name in ("forward", "grad", "value_and_grad", "jacobian", "hessian")
    }))
    """
)


def _expected(points) -> dict:
    opts = {"argnums": (0, 1)}
    transforms = {
        "forward": symdiff.jit(cases.poly),
        "grad": symdiff.grad(cases.poly, **opts),
        "value_and_grad": symdiff.value_and_grad(cases.poly, **opts),
        "jacobian": symdiff.jacobian(cases.poly, **opts),
        "hessian": symdiff.hessian(cases.poly, **opts),
    }
    as_json = json.dumps({n: [t(*p) for p in points] for n, t in transforms.items()})
    return json.loads(as_json)  # tuples become lists, as in the subprocess


def test_compile_writes_one_standalone_module(tmp_path):
    out = tmp_path / "poly_kernels.py"
    result = run("compile", f"{CASES}:poly", "-o", str(out), "--jacobian", "--hessian")
    assert result.stdout == (
        f"wrote {out}: forward, grad, value_and_grad, jacobian, hessian of `poly` "
        f"({CASES})\n"
    )
    text = out.read_text()
    digest = hashlib.sha256(inspect.getsource(cases.poly).encode()).hexdigest()
    assert text.startswith(
        f"# Generated by symdiff {symdiff.__version__} from {CASES}, function "
        f"`poly` (line {line_of('def poly(')}).\n"
        f"# sha256 of the function's source: {digest}\n"
        f"# Regenerate with: symdiff compile {CASES}:poly -o {out} --jacobian "
        "--hessian\n"
    )
    tree = ast.parse(text)
    imports = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Import)]
    assert set(imports) <= {"import math", "import numba", "import numpy as np"}
    assert not any(isinstance(n, ast.ImportFrom) for n in ast.walk(tree))
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert [d.name for d in defs] == [
        "forward",
        "grad",
        "value_and_grad",
        "jacobian",
        "hessian",
    ]
    for d in defs:
        assert [ast.unparse(x) for x in d.decorator_list] == [
            "numba.njit(error_model='numpy', fastmath=False)"
        ]
    # The kernels are the API's, renamed.
    grad_source = api("grad", cases.poly, argnums=(0, 1)).source
    body = grad_source[grad_source.index("def poly_grad(") :]
    assert body.replace("def poly_grad(", "def grad(") in text
    namespace: dict = {}
    exec(compile(text, str(out), "exec"), namespace)
    assert namespace["SOURCE_SHA256"] == digest
    assert namespace["FUNCTION"] == "poly" and namespace["WRT"] == ("x", "y")


def test_the_compiled_module_runs_without_symdiff(tmp_path):
    outdir = tmp_path / "out"
    outdir.mkdir()
    module = outdir / "poly_kernels.py"
    run("compile", f"{CASES}:poly", "-o", str(module), "--jacobian", "--hessian")
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    # -I: no PYTHONPATH, no user site, no cwd; -S: no site-packages .pth hooks
    # (symdiff is installed in editable mode through one).  numpy and numba are
    # put on the path by hand, and symdiff's checkout is not on it.
    boot = f"import sys; sys.path[:0] = {[str(outdir), *_site_dirs()]!r}\n"
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", boot + STANDALONE, json.dumps(POINTS)],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == _expected(POINTS)  # bit for bit


@pytest.mark.slow
def test_the_compiled_module_runs_in_a_fresh_venv(tmp_path):
    """The strongest isolation: a new virtual environment with only numpy and
    numba, installed from the package index (skipped when that is unreachable)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / ("Scripts" if os.name == "nt" else "bin") / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "numpy", "numba"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if install.returncode:
        pytest.skip(f"cannot install numpy and numba: {install.stderr[-500:]}")
    outdir = tmp_path / "out"
    outdir.mkdir()
    run(
        "compile",
        f"{CASES}:poly",
        "-o",
        str(outdir / "poly_kernels.py"),
        "--jacobian",
        "--hessian",
    )
    proc = subprocess.run(
        [str(python), "-c", STANDALONE, json.dumps(POINTS)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(outdir), "PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    got, want = json.loads(proc.stdout), _expected(POINTS)
    # Another numba/LLVM version may round differently in the last place.
    assert np.allclose(
        np.array(_flatten(got)), np.array(_flatten(want)), rtol=1e-14, atol=0
    )


def _flatten(value):
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in _flatten(value[k])]
    if isinstance(value, list):
        return [x for v in value for x in _flatten(v)]
    return [value]


def test_compile_to_stdout_and_json(tmp_path):
    text = run("compile", f"{CASES}:chain", "-o", "-").stdout
    assert text.startswith("# Generated by symdiff")
    assert "def value_and_grad(u):" in text
    payload = json.loads(
        run("compile", f"{CASES}:chain", "-o", str(tmp_path / "k.py"), "--json").stdout
    )
    assert payload["functions"] == ["forward", "grad", "value_and_grad"]
    assert payload["wrt"] == ["u"]
    assert (
        payload["sha256"]
        == hashlib.sha256(inspect.getsource(cases.chain).encode()).hexdigest()
    )


def test_compile_a_function_of_several_outputs(tmp_path):
    result = run("compile", f"{CASES}:polar", "-o", str(tmp_path / "p.py"), code=1)
    assert result.stderr == (
        "Error: `polar` (tests/cli_cases.py) returns 2 numbers, but grad and "
        "value_and_grad need one\n"
        "  help: pass --jacobian to compile `forward` and `jacobian`\n"
    )
    text = run("compile", f"{CASES}:polar", "-o", "-", "--jacobian", "--wrt", "theta")
    assert "def forward(r, theta):" in text.stdout
    assert "def jacobian(r, theta):" in text.stdout
    assert "def grad(" not in text.stdout


def test_compile_cannot_write(tmp_path):
    target = tmp_path / "missing" / "k.py"
    result = run("compile", f"{CASES}:chain", "-o", str(target), code=1)
    assert result.stderr == f"Error: cannot write {target}: No such file or directory\n"


def _load(path: Path) -> dict:
    """Run a compiled module's text (its kernels compile now, as on import);
    any warning is an error."""
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


def test_a_compiled_module_of_one_parameter_imports_and_runs(tmp_path):
    scalar = tmp_path / "chain_kernels.py"
    run("compile", f"{CASES}:chain", "--arg", "u=i64", "--wrt", "u", "-o", str(scalar))
    text = scalar.read_text()
    assert '@numba.njit("(int64,)", error_model=' in text  # forward
    assert '@numba.njit("(float64,)", error_model=' in text  # grad
    k = _load(scalar)
    assert k["forward"](2) == cases.chain(2)
    assert k["grad"](2) == symdiff.grad(cases.chain)(2.0)
    array = tmp_path / "total_kernels.py"
    run("compile", f"{CASES}:total", "--arg", "x=f64[3]", "-o", str(array))
    k = _load(array)
    x = np.array([1.0, 2.0, 3.0])
    assert k["forward"](x) == 14.0
    assert k["grad"](x).tolist() == [2.0, 4.0, 6.0]
    value, x_bar = k["value_and_grad"](x)
    assert value == 14.0 and x_bar.tolist() == [2.0, 4.0, 6.0]


def test_a_compiled_module_takes_strided_and_transposed_arrays(tmp_path):
    out = tmp_path / "product_kernels.py"
    run(
        "compile",
        f"{CASES}:product_tanh",
        *("--arg", "X=f64[3,2],w=f64[2]", "-o", str(out)),
    )
    text = out.read_text()
    assert "An array may have any layout (a slice, a transpose)" in text
    assert '["(float64[:, ::1], float64[::1])", "(float64[:, :], float64[:])"]' in text
    k = _load(out)  # no NumbaPerformanceWarning about np.dot at import
    grad = k["grad"]
    assert len(grad.signatures) == 2
    rng = np.random.default_rng(0)
    transposed = rng.normal(size=(2, 3)).T  # F-contiguous
    strided = rng.normal(size=4)[::2]
    want = symdiff.grad(cases.product_tanh, argnums=(0, 1))(
        np.ascontiguousarray(transposed), np.ascontiguousarray(strided)
    )
    for args in [
        (transposed, strided),
        (np.ascontiguousarray(transposed), strided),
        (np.ascontiguousarray(transposed), np.ascontiguousarray(strided)),
    ]:
        got = grad(*args)
        # BLAS may sum in another order for another layout (as in the API): the
        # last bit of np.dot's result can differ
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-14, atol=0)
        assert k["forward"](*args) == pytest.approx(cases.product_tanh(*args))
    contiguous = [np.ascontiguousarray(a) for a in (transposed, strided)]
    assert [g.tolist() for g in grad(*contiguous)] == [w.tolist() for w in want]
    one = tmp_path / "total_kernels.py"
    run("compile", f"{CASES}:total", "--arg", "x=f64[3]", "-o", str(one))
    total = _load(one)
    assert total["grad"](np.arange(6.0)[::2]).tolist() == [0.0, 4.0, 8.0]


def test_compile_mode_without_jacobian_is_a_usage_error(tmp_path):
    out = tmp_path / "k.py"
    result = run(
        "compile", f"{CASES}:polar", "--mode", "forward", "-o", str(out), code=2
    )
    assert result.stderr == usage_error(
        "compile", "--mode picks the sweeps of the Jacobian: pass --jacobian too"
    )
    assert not out.exists()
    run("compile", f"{CASES}:polar", "--mode", "forward", "--jacobian", "-o", str(out))
    assert "# mode: forward\n" in out.read_text()


# -- graph --------------------------------------------------------------------------
def test_graph_dot_text(tmp_path):
    out = tmp_path / "chain.dot"
    result = run("graph", f"{CASES}:chain", "-o", str(out))
    payload = json.loads(run("graph", f"{CASES}:chain", "--json").stdout)
    counts = payload["counts"]
    assert result.stdout == (
        f"wrote {out}: {counts['forward']} forward and {counts['adjoint']} adjoint "
        f"nodes, {counts['shared_edges']} edges from forward values into the "
        "backward pass\n"
    )
    dot = out.read_text()
    assert dot == payload["dot"] == run("graph", f"{CASES}:chain").stdout
    assert dot.startswith("digraph symdiff {")
    assert "subgraph cluster_forward {" in dot and "subgraph cluster_adjoint {" in dot
    forward = dot[dot.index("cluster_forward") : dot.index("cluster_adjoint")]
    adjoint = dot[dot.index("cluster_adjoint") : dot.index("anchor_forward ->")]
    # labels: the name in the generated source, then the op
    assert '[label="v\\npow"' in forward and '[label="u"' in forward
    assert '[label="u_bar\\nmul"' in adjoint and '[label="v_bar\\nmul"' in adjoint
    assert 'fillcolor="#f9cb9c"' in adjoint and 'fillcolor="#f9cb9c"' not in forward
    # forward values the backward pass reads: dashed edges into the adjoint side
    assert counts["shared_edges"] > 0
    assert dot.count("style=dashed]") == counts["shared_edges"]


def test_graph_json_agrees_with_the_kernel():
    payload = json.loads(run("graph", f"{CASES}:poly", "--json").stdout)
    compiled = api("grad", cases.poly, argnums=(0, 1))
    forward = set(symdiff.ir.node.topological(compiled.kernel.plan.primal))
    ops = [n for n in payload["nodes"] if n["role"] in ("op", "param")]
    assert payload["counts"]["forward"] == len(forward - _constants(forward))
    assert {n["side"] for n in ops if n["role"] == "param"} == {"forward"}
    by_id = {n["id"]: n for n in payload["nodes"]}
    for edge in payload["edges"]:
        source, target = by_id[edge["source"]], by_id[edge["target"]]
        crossing = source["side"] == "forward" and target["side"] == "adjoint"
        assert edge["shared"] == (crossing and source["role"] != "const")
    returns = sorted(n["label"] for n in payload["nodes"] if n["role"] == "output")
    assert returns == ["output", "return x_bar", "return y_bar"]
    assert payload["dot"].startswith("digraph")


def _constants(nodes):
    return {n for n in nodes if n.op == "const"}


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz dot is not installed")
def test_graph_svg(tmp_path):
    out = tmp_path / "chain.svg"
    payload = json.loads(
        run("graph", f"{CASES}:chain", "-o", str(out), "--json").stdout
    )
    assert payload["rendered"] is True and payload["output"] == str(out)
    svg = out.read_text()
    assert "<svg" in svg and "backward (adjoint)" in svg and "u_bar" in svg


def test_graph_without_graphviz_writes_dot_and_says_so(tmp_path):
    out = tmp_path / "chain.svg"
    result = run("graph", f"{CASES}:chain", "-o", str(out), env={"PATH": ""})
    written = tmp_path / "chain.dot"
    assert not out.exists()
    assert written.read_text().startswith("digraph symdiff {")
    assert result.stderr == (
        f"note: Graphviz `dot` is not on PATH, so {out} was not drawn; wrote the DOT "
        f"text to {written} (install Graphviz, then run `dot -Tsvg {written} -o "
        f"{out}`)\n"
    )


def test_graph_bad_suffix(tmp_path):
    result = run("graph", f"{CASES}:chain", "-o", str(tmp_path / "g.jpeg"), code=2)
    assert result.stderr.endswith(
        f"Error: Invalid value for '-o': cannot tell the format of "
        f"'{tmp_path / 'g.jpeg'}': use .svg, .png, .pdf, .dot or .gv\n"
    )


def test_graph_of_a_long_chain_needs_no_recursion(tmp_path):
    steps = 3 * sys.getrecursionlimit()
    body = "".join("    x = x * 0.5 + 1.0\n" for _ in range(steps))
    path = tmp_path / "long.py"
    path.write_text(f"def long(x):\n{body}    return x\n")
    payload = json.loads(run("graph", f"{path}:long", "--json").stdout)
    assert payload["counts"]["forward"] == 2 * steps + 1


# -- errors -------------------------------------------------------------------------
def usage_error(command: str, message: str) -> str:
    return (
        f"Usage: symdiff {command} [OPTIONS] FILE.py:FUNC\n"
        f"Try 'symdiff {command} --help' for help.\n\n"
        f"Error: {message}\n"
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_missing_file(command, tmp_path):
    extra = ["-o", str(tmp_path / "x.py")] if command == "compile" else []
    result = run(command, "nope.py:f", *extra, code=2)
    assert result.stderr == usage_error(
        command, "Invalid value for 'FILE.py:FUNC': no such file: nope.py"
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_unsupported_construct(command, tmp_path):
    extra = ["-o", str(tmp_path / "x.py")] if command == "compile" else []
    result = run(command, f"{CASES}:uses_try", *extra, code=1)
    line = line_of("    try:")
    kind = "jit" if command == "compile" else command
    assert result.stderr == (
        "Error: cannot translate `uses_try`: 1 problem found\n\n"
        f"{CASES}:{line}:5: `try` blocks are not supported\n"
        "    try:\n"
        "    ^~~~\n"
        "  help: remove it: differentiated code must be plain arithmetic\n"
    ), kind


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (
            f"{CASES}:nope",
            f"{CASES} has no function `nope` (functions defined there: branchy, "
            "chain, decorated, helper, kink, no_args, only_positive, polar, ...)",
        ),
        (f"{CASES}:pol", f"{CASES} has no function `pol`; did you mean `poly`?"),
        (
            f"{CASES}:NOT_A_FUNCTION",
            f"`NOT_A_FUNCTION` in {CASES} is a float, not a function",
        ),
        (
            CASES,
            f"expected FILE.py:FUNC (or module:FUNC), got '{CASES}'; for example "
            "examples/seed004_chain.py:z",
        ),
        ("tests:f", "tests is a directory; expected a Python file"),
        (
            "no_such_module_xyz:f",
            "cannot import module 'no_such_module_xyz': No module named 'no_such_module_xyz'",
        ),
        (
            f"{CASES}:poly:x",
            f"'{CASES}:poly:x' has too many colons: expected FILE.py:FUNC (or "
            "module:FUNC), for example examples/seed004_chain.py:z",
        ),
        (
            f"{CASES}:NotAFunction",
            f"`NotAFunction` in {CASES} is a class, not a function: name a function "
            "defined with `def` (or a static method, NotAFunction.method)",
        ),
        (
            "README.md:f",
            "README.md is not a .py file; expected FILE.py:FUNC (or module:FUNC)",
        ),
    ],
)
def test_bad_target(target, message):
    if target == "tests:f":
        target = "tests/:f"
        message = "tests/ is a directory; expected a Python file"
    result = run("grad", target, code=2)
    assert result.stderr == usage_error(
        "grad", f"Invalid value for 'FILE.py:FUNC': {message}"
    )


def test_syntax_error_in_the_users_file(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("import math\n\n\ndef f(x):\n    return x +* 2\n")
    result = run("grad", f"{path}:f", code=1)
    assert result.stderr == (
        f"Error: {path}:5:15: syntax error: invalid syntax\n"
        "    return x +* 2\n"
        "              ^\n"
    )
    path.write_text("def f(x):\n  y = 1\n    return y\n")
    result = run("grad", f"{path}:f", code=1)
    assert result.stderr.startswith(f"Error: {path}:3:")
    assert "indentation error: unexpected indent\n" in result.stderr


def test_error_while_importing_the_users_file(tmp_path):
    path = tmp_path / "boom.py"
    path.write_text('print("loading")\nRATE = 1 / 0\n\n\ndef f(x):\n    return x\n')
    result = run("grad", f"{path}:f", code=1)
    assert result.stderr == (
        f"Error: {path}:2: importing the file raised ZeroDivisionError: division by "
        "zero\nits output before the error:\nloading\n"
    )
    path.write_text("import sys\nsys.exit(3)\n")
    result = run("grad", f"{path}:f", code=1)
    assert result.stderr == (
        f"Error: {path}:2: the file called sys.exit(3) while being imported\n"
    )


def test_a_module_in_the_working_directory_and_a_file_with_a_colon(
    tmp_path, monkeypatch
):
    (tmp_path / "cwd_module_xyz.py").write_text("def f(x):\n    return x * x\n")
    (tmp_path / "a:b.py").write_text("def f(x):\n    return x * x\n")
    monkeypatch.chdir(tmp_path)
    # as the console script has it: neither "" nor the working directory
    monkeypatch.setattr(
        sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))]
    )
    try:
        out = run("grad", "cwd_module_xyz:f").stdout  # as `python -m` finds it
    finally:
        sys.modules.pop("cwd_module_xyz", None)
    kernel = (
        "\n\ndef f_grad(x):\n    # backward\n    x_bar = 2.0 * x\n    return x_bar\n"
    )
    assert out == (
        "# generated by symdiff 0.1.0: grad of `f` (cwd_module_xyz.py:1)\n"
        "# with respect to: x\n" + kernel
    )
    assert run("grad", "a:b.py:f").stdout == (
        "# generated by symdiff 0.1.0: grad of `f` (a:b.py:1)\n"
        "# with respect to: x\n" + kernel
    )


@pytest.mark.parametrize(
    ("wrt", "message"),
    [
        ("z", "`z` is not a parameter; `poly` takes x, y"),
        ("xx", "`xx` is not a parameter; `poly` takes x, y; did you mean `x`?"),
        ("2", "index 2 is out of range; `poly` takes x, y"),
        ("x,x", "`x` is given twice"),
        ("0,x", "`x` is given twice"),
        ("x,", "empty name in the list; `poly` takes x, y"),
    ],
)
@pytest.mark.parametrize("command", ["grad", "check", "graph"])
def test_bad_wrt(command, wrt, message):
    result = run(command, f"{CASES}:poly", "--wrt", wrt, code=2)
    assert result.stderr == usage_error(
        command, f"Invalid value for '--wrt': {message}"
    )


@pytest.mark.parametrize(
    ("at", "message"),
    [
        ("x=1", "no value for y in 'x=1'; give every parameter, e.g. x=1.0,y=2.0"),
        ("x=1,y=b", "`y=b`: 'b' is not a number"),
        ("x=1,y=2,z=3", "`z` is not a parameter of `poly` (it takes x, y)"),
        ("1,2,3", "3 values for `poly`, which takes 2 (x, y)"),
        ("x=1,x=2", "`x` is given twice"),
    ],
)
def test_bad_point(at, message):
    result = run("grad", f"{CASES}:poly", "--at", at, code=2)
    assert result.stderr == usage_error("grad", f"Invalid value for '--at': {message}")


def test_a_function_without_arguments():
    result = run("grad", f"{CASES}:no_args", code=1)
    assert result.stderr == (
        f"Error: `no_args` ({CASES}) takes no arguments: nothing to differentiate\n"
    )


def test_errors_as_json():
    result = run("grad", f"{CASES}:pol", "--json", code=2)
    assert json.loads(result.stdout) == {
        "ok": False,
        "error": f"Invalid value for 'FILE.py:FUNC': {CASES} has no function `pol`; "
        "did you mean `poly`?",
        "exit_code": 2,
    }
    emitted = run("grad", f"{CASES}:pol", "--emit", "json", code=2)
    assert json.loads(emitted.stdout) == json.loads(result.stdout)
    failed = json.loads(run("graph", f"{CASES}:uses_try", "--json", code=1).stdout)
    assert failed["exit_code"] == 1
    assert failed["error"].startswith("cannot translate `uses_try`")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_examples(command):
    out = run(command, "--help").stdout
    assert f"Usage: symdiff {command} [OPTIONS] FILE.py:FUNC" in out
    assert "\nExamples:\n" in out.replace("  Examples:", "Examples:")
    assert f"    symdiff {command} " in out
    assert "--json" in out


def test_version_and_group_help():
    assert run("--version").stdout == f"symdiff, version {symdiff.__version__}\n"
    out = run("--help").stdout
    for command in COMMANDS:
        assert f"\n  {command} " in out
    assert "planned" not in out
    assert "says i64, bool or an array such as f64[3,4]." in " ".join(out.split())


def test_the_readmes_command_line_section_is_current():
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Command line") : readme.index("## Compile cache")]
    assert "until array support lands" not in section
    assert "not supported yet" not in section
    # its error example is what the command prints today
    result = run("grad", "tests/errors_cases.py:uses_try", code=1)
    assert (
        f"$ symdiff grad tests/errors_cases.py:uses_try\n{result.stderr}```" in section
    )


# -- as users run it ----------------------------------------------------------------
def _shell(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.skipif(shutil.which("symdiff") is None, reason="not installed")
def test_the_console_script():
    proc = _shell("symdiff", "grad", f"{CASES}:poly")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == api("grad", cases.poly, argnums=(0, 1)).source
    assert "\x1b[" not in proc.stdout  # a pipe is not a terminal
    colored = _shell("symdiff", "--color", "grad", f"{CASES}:poly")
    assert "\x1b[" in colored.stdout and click.unstyle(colored.stdout) == proc.stdout
    bad = _shell("symdiff", "grad", f"{CASES}:uses_try")
    assert bad.returncode == 1 and bad.stdout == ""
    assert bad.stderr.startswith("Error: cannot translate `uses_try`")
    assert "Traceback" not in bad.stderr
    usage = _shell("symdiff", "grad", f"{CASES}:poly", "--wrt", "q")
    assert usage.returncode == 2 and "Traceback" not in usage.stderr


def test_python_cli_py_and_python_m():
    shim = _shell(sys.executable, "cli.py", "grad", f"{CASES}:chain", "--at", "u=1.5")
    assert shim.returncode == 0, shim.stderr
    want = float(symdiff.grad(cases.chain, target="python")(1.5))
    assert shim.stdout == f"grad of `chain` at u=1.5:\n  u_bar = {want!r}\n"
    module = _shell(sys.executable, "-m", "symdiff.cli", "--help")
    assert (
        module.returncode == 0 and "Usage: symdiff [OPTIONS] COMMAND" in module.stdout
    )


# -- cache ------------------------------------------------------------------------------
def test_cache_info_and_clear(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from symdiff.cli import main

    monkeypatch.setenv("SYMDIFF_CACHE_DIR", str(tmp_path / "kernels"))
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k_0123456789abcdef0123.py").write_text(
        "def k(x):\n    return x\n"
    )
    runner = CliRunner()
    result = runner.invoke(main, ["cache", "info"])
    assert result.exit_code == 0
    assert f"cache:   {tmp_path / 'kernels'} (on)" in result.output
    assert "kernels: 1 (1 files" in result.output
    result = runner.invoke(main, ["cache", "info", "--json"])
    assert json.loads(result.output)["kernels"] == 1
    result = runner.invoke(main, ["cache", "clear"])
    assert result.output.strip() == f"removed 1 file from {tmp_path / 'kernels'}"
    assert not (tmp_path / "kernels").exists()


# -- argument kinds (--arg, --infer-kinds) ----------------------------------------------
TYPED = ("float64", "int64", "bool")  # power(x, n, flag) with --arg n=i64,flag=bool
KIND_COMMANDS = ["grad", "jacobian", "hessian", "check", "compile", "graph"]


def typed_kernel(transform, dtypes=TYPED, **options):
    """The API's kernel of ``cases.power`` for one argument signature."""
    return api(transform, cases.power, **options)._kernel(dtypes)


def with_signature_line(source: str, signature: str) -> str:
    head, sep, rest = source.partition("\n\n\n")
    if "\nimport " in head:  # header comments, then imports
        comments, _, imports = head.partition("\nimport ")
        return f"{comments}\n# signature: ({signature})\nimport {imports}{sep}{rest}"
    return f"{head}\n# signature: ({signature}){sep}{rest}"


def test_arg_prints_the_kernel_for_that_signature():
    out = run("grad", f"{CASES}:power", "--arg", "n=i64,flag=bool").stdout
    kernel = typed_kernel("grad")
    assert out == with_signature_line(kernel.source, "x: float64, n: int64, flag: bool")
    assert "# signature: (x: float64, n: int64, flag: bool)\n" in out
    # flag is a bool there, not a float compared with 0.0 as by default
    assert "flag != 0.0" not in out
    assert "flag != 0.0" in run("grad", f"{CASES}:power", "--wrt", "x").stdout
    # repeated options and the long spellings name the same kinds
    for args in (
        ["--arg", "n=i64", "--arg", "flag=bool"],
        ["--arg", "flag=bool,n=int64"],
        ["--arg", "n=int,flag=BOOL,x=float"],
        ["--arg", " n = Int64 , flag=bool ,"],
    ):
        assert run("grad", f"{CASES}:power", *args).stdout == out, args
    ir = run("grad", f"{CASES}:power", "--arg", "n=i64,flag=bool", "--emit", "ir")
    assert ir.stdout == kernel.ir + "\n"
    assert "param n : i64" in ir.stdout and "param flag : bool" in ir.stdout


def test_a_float64_arg_changes_nothing():
    plain = run("grad", f"{CASES}:poly").stdout
    assert run("grad", f"{CASES}:poly", "--arg", "x=f64,y=float64").stdout == plain
    assert "# signature" not in plain


@pytest.mark.parametrize(
    ("command", "transform"),
    [("jacobian", "jacobian"), ("hessian", "hessian"), ("grad", "value_and_grad")],
)
def test_arg_on_jacobian_hessian_and_value(command, transform):
    extra = ["--value"] if transform == "value_and_grad" else []
    out = run(command, f"{CASES}:power", *extra, "--arg", "n=i64,flag=bool").stdout
    kernel = typed_kernel(transform, argnums=0)
    assert out == with_signature_line(kernel.source, "x: float64, n: int64, flag: bool")
    latex = run(
        command, f"{CASES}:power", *extra, "--arg", "n=i64,flag=bool", "--emit", "latex"
    )
    compiled = api(transform, cases.power, argnums=0)
    compiled._kernel(TYPED)
    assert latex.stdout == compiled.latex() + "\n"
    assert r"\neg flag" in latex.stdout  # a bool, not `flag = 0` as for a float


def test_at_passes_ints_and_bools():
    result = run(
        "grad",
        f"{CASES}:power",
        "--value",
        "--arg",
        "n=i64,flag=bool",
        "--at",
        "x=1.5,n=3,flag=false",
        "--at",
        "-2,5,TRUE",
    )
    fused = symdiff.value_and_grad(cases.power, target="python")
    value, x_bar = map(float, fused(1.5, 3, False))
    value2, x_bar2 = map(float, fused(-2.0, 5, True))
    assert result.stdout == (
        "value_and_grad of `power` at x=1.5, n=3, flag=false:\n"
        f"  value = {value!r}\n  x_bar = {x_bar!r}\n"
        "value_and_grad of `power` at x=-2, n=5, flag=true:\n"
        f"  value = {value2!r}\n  x_bar = {x_bar2!r}\n"
    )
    assert (value, x_bar) == (6.75, 13.5)
    payload = json.loads(
        run(
            "grad",
            f"{CASES}:power",
            "--arg",
            "n=i64,flag=bool",
            "--at",
            "x=1.5,n=3,flag=false",
            "--json",
        ).stdout
    )
    (at,) = payload["results"]
    assert at == {"at": {"x": 1.5, "n": 3, "flag": False}, "values": {"x_bar": 13.5}}
    assert isinstance(at["at"]["n"], int)


def test_json_gives_the_kinds_and_the_kernels_signature():
    payload = json.loads(
        run("grad", f"{CASES}:power", "--arg", "n=i64,flag=bool", "--json").stdout
    )
    assert payload["kinds"] == {"x": "float64", "n": "int64", "flag": "bool"}
    assert payload["signature"] == payload["kinds"]
    assert payload["wrt"] == ["x"]  # by default the float64 parameters only
    assert payload["source"] == typed_kernel("grad").source
    assert payload["ir"] == typed_kernel("grad").ir
    wrt_n = json.loads(
        run(
            "jacobian",
            f"{CASES}:power",
            "--arg",
            "n=i64,flag=bool",
            "--wrt",
            "x,n",
            "--json",
        ).stdout
    )
    assert wrt_n["kinds"] == payload["kinds"]
    # a differentiated int is a real number to the kernel, as in the API
    assert wrt_n["signature"] == {"x": "float64", "n": "float64", "flag": "bool"}
    default = json.loads(run("grad", f"{CASES}:poly", "--json").stdout)
    assert default["kinds"] == default["signature"] == {"x": "float64", "y": "float64"}


def test_wrt_an_int_parameter_differentiates_it_as_a_real_number():
    out = run("grad", f"{CASES}:power", "--arg", "n=i64,flag=bool", "--wrt", "x,n")
    kernel = typed_kernel("grad", ("float64", "float64", "bool"), argnums=(0, 1))
    assert out.stdout == with_signature_line(
        kernel.source, "x: float64, n: float64, flag: bool"
    )
    at = run(
        "grad",
        f"{CASES}:power",
        "--arg",
        "n=i64,flag=bool",
        "--wrt",
        "x,n",
        "--at",
        "x=1.5,n=3,flag=true",
    )
    gradient = symdiff.grad(cases.power, argnums=(0, 1), target="python")
    x_bar, n_bar = map(float, gradient(1.5, 3, True))
    assert at.stdout == (
        "grad of `power` at x=1.5, n=3, flag=true:\n"
        f"  x_bar = {x_bar!r}\n  n_bar = {n_bar!r}\n"
    )
    assert n_bar == pytest.approx(1.5**3 * math.log(1.5))


def test_infer_kinds_from_the_points():
    declared = run(
        "grad",
        f"{CASES}:power",
        "--arg",
        "n=i64,flag=bool",
        "--at",
        "x=2.0,n=3,flag=true",
    ).stdout
    inferred = run(
        "grad", f"{CASES}:power", "--infer-kinds", "--at", "x=2.0,n=3,flag=true"
    ).stdout
    assert (
        inferred
        == declared
        == "grad of `power` at x=2, n=3, flag=true:\n  x_bar = 13.0\n"
    )

    def kinds(*args):
        out = run("grad", f"{CASES}:power", "--infer-kinds", *args, "--json").stdout
        return json.loads(out)["kinds"]

    assert kinds("--at", "2.0,3,false") == {
        "x": "float64",
        "n": "int64",
        "flag": "bool",
    }
    # an exponent or a dot makes a float; an int and a float at two points: float
    assert kinds("--at", "2e0,3,false", "--at", "1.5,2.5,true")["n"] == "float64"
    assert kinds("--at", "2.,3,false", "--at", "1.5,-4,true")["n"] == "int64"
    # --arg wins over inference
    assert kinds("--arg", "n=f64", "--at", "2.0,3,false")["n"] == "float64"
    # without --infer-kinds every parameter stays a float64, and true is no number
    plain = run("grad", f"{CASES}:power", "--at", "x=2,n=3,flag=1", "--json").stdout
    assert json.loads(plain)["kinds"] == {
        "x": "float64",
        "n": "float64",
        "flag": "float64",
    }
    result = run("grad", f"{CASES}:power", "--at", "x=2,n=3,flag=true", code=2)
    assert result.stderr == usage_error(
        "grad",
        "Invalid value for '--at': `flag=true`: 'true' is not a number (flag is "
        "float64: pass --arg flag=bool or --infer-kinds)",
    )
    mixed = run(
        "grad",
        f"{CASES}:power",
        "--infer-kinds",
        "--at",
        "2.0,3,true",
        "--at",
        "2.0,3,1",
        code=2,
    )
    assert mixed.stderr == usage_error(
        "grad",
        "Invalid value for '--at': `flag` is true/false at one point and a number "
        "at another (1, true); give it one kind, e.g. --arg flag=bool",
    )
    # x=2 inferred an int too, so nothing is left to differentiate by default
    nothing = run("grad", f"{CASES}:power", "--infer-kinds", "--at", "2,3,true", code=2)
    assert nothing.stderr == usage_error(
        "grad",
        "`power` has no float64 parameter to differentiate by default (x: int64, "
        "n: int64, flag: bool); pass --wrt x,n to differentiate as real numbers",
    )


@pytest.mark.parametrize("command", KIND_COMMANDS)
@pytest.mark.parametrize(
    ("arg", "message"),
    [
        (
            "x=f64[0,4]",
            "`x=f64[0,4]`: an array kind is KIND[LENGTHS] with positive integer "
            "lengths, e.g. f64[3,4]",
        ),
        (
            "n=i64,x=f64[n]",
            "`x=f64[n]`: an array kind is KIND[LENGTHS] with positive integer "
            "lengths, e.g. f64[3,4]",
        ),
        (
            "n=int32",
            "`n=int32`: unknown kind 'int32'; the kinds are f64 (or float64, float), "
            "i64 (or int64, int) and bool; did you mean int?",
        ),
        (
            "n=",
            "`n=`: no kind given; the kinds are f64 (or float64, float), i64 (or "
            "int64, int) and bool",
        ),
        (
            "n",
            "expected NAME=KIND, got 'n'; KIND is f64 (or float64, float), i64 (or "
            "int64, int) and bool",
        ),
        (
            ",",
            "expected NAME=KIND, got ','; KIND is f64 (or float64, float), i64 (or "
            "int64, int) and bool",
        ),
        ("q=i64", "`q` is not a parameter of `power` (it takes x, n, flag)"),
        (
            "nn=i64",
            "`nn` is not a parameter of `power` (it takes x, n, flag); did you mean `n`?",
        ),
        ("n=i64,n=bool", "`n` is given twice"),
    ],
)
def test_bad_arg(command, arg, message, tmp_path):
    extra = ["-o", str(tmp_path / "k.py")] if command == "compile" else []
    result = run(command, f"{CASES}:power", "--arg", arg, *extra, code=2)
    assert result.stderr == usage_error(
        command, f"Invalid value for '--arg': {message}"
    )
    assert not (tmp_path / "k.py").exists()


def test_bad_arg_as_json():
    result = run("grad", f"{CASES}:power", "--arg", "x=f64[-3]", "--json", code=2)
    assert json.loads(result.stdout) == {
        "ok": False,
        "error": "Invalid value for '--arg': `x=f64[-3]`: an array kind is "
        "KIND[LENGTHS] with positive integer lengths, e.g. f64[3,4]",
        "exit_code": 2,
    }


@pytest.mark.parametrize("command", KIND_COMMANDS)
def test_wrt_a_bool_is_a_usage_error(command, tmp_path):
    extra = ["-o", str(tmp_path / "k.py")] if command == "compile" else []
    result = run(
        command,
        f"{CASES}:power",
        "--arg",
        "flag=bool",
        "--wrt",
        "x,flag",
        *extra,
        code=2,
    )
    assert result.stderr == usage_error(
        command,
        "Invalid value for '--wrt': cannot differentiate with respect to `flag`: "
        "it is a bool (only f64 and i64 parameters can be differentiated)",
    )


def test_no_float_parameter_left_to_differentiate():
    result = run("grad", f"{CASES}:power", "--arg", "x=bool,n=bool,flag=bool", code=2)
    assert result.stderr == usage_error(
        "grad",
        "`power` has no parameter to differentiate (x: bool, n: bool, flag: bool)",
    )

    ints = run("grad", f"{CASES}:total", "--arg", "x=i64[3]", code=2)
    assert ints.stderr == usage_error(
        "grad",
        "`total` has no float64 parameter to differentiate by default (x: int64[3]); "
        "pass --wrt x to differentiate as real numbers",
    )
    as_reals = run(
        "grad", f"{CASES}:total", "--arg", "x=i64[3]", "--wrt", "x", "--at", "x=[1,2,3]"
    )
    assert (
        as_reals.stdout == "grad of `total` at x=[1.,2.,3.]:\n  x_bar = [2., 4., 6.]\n"
    )


@pytest.mark.parametrize(
    ("at", "message"),
    [
        ("x=1,n=2.5,flag=true", "`n=2.5`: n is int64; expected an integer such as 3"),
        ("x=1,n=2e0,flag=true", "`n=2e0`: n is int64; expected an integer such as 3"),
        ("x=1,n=2,flag=yes", "`flag=yes`: flag is a bool; expected true or false"),
        ("x=1,n=2,flag=1", "`flag=1`: flag is a bool; expected true or false"),
        (
            "x=1",
            "no value for n, flag in 'x=1'; give every parameter, e.g. "
            "x=1.0,n=2,flag=true",
        ),
    ],
)
def test_bad_point_of_declared_kinds(at, message):
    result = run(
        "grad", f"{CASES}:power", "--arg", "n=i64,flag=bool", "--at", at, code=2
    )
    assert result.stderr == usage_error("grad", f"Invalid value for '--at': {message}")


def test_check_with_kinds():
    payload = json.loads(
        run(
            "check",
            f"{CASES}:power",
            "--arg",
            "n=i64,flag=bool",
            "--domain",
            "x=0.5:2,n=-3:4",
            "--samples",
            "12",
            "--target",
            "python",
            "--json",
        ).stdout
    )
    assert payload["ok"] is True
    assert payload["kinds"] == {"x": "float64", "n": "int64", "flag": "bool"}
    points = [r["point"] for r in payload["rows"]]
    assert len(points) == 12 and {r["arg"] for r in payload["rows"]} == {"x"}
    assert all(type(p["n"]) is int and -3 <= p["n"] <= 4 for p in points)
    assert {p["flag"] for p in points} == {True, False}
    assert all(0.5 <= p["x"] <= 2 for p in points)
    # given points, the Numba kernel, and n differentiated as a real number
    result = run(
        "check",
        f"{CASES}:power",
        "--infer-kinds",
        "--wrt",
        "x,n",
        "--at",
        "x=1.5,n=3,flag=true",
        "--at",
        "x=0.5,n=-2,flag=false",
    )
    lines = result.stdout.splitlines()
    assert [line.split("  ")[0] for line in lines[2:6]] == [
        "x=1.5, n=3, flag=true",
        "x=1.5, n=3, flag=true",
        "x=0.5, n=-2, flag=false",
        "x=0.5, n=-2, flag=false",
    ]
    assert lines[-1].startswith("ok: 4 of 4 partial derivatives at 2 points")


@pytest.mark.parametrize(
    ("domain", "message"),
    [
        ("flag=0:1", "`flag` is a bool: its random values are true and false"),
        ("n=0.2:0.8", "`n=0.2:0.8`: n is int64, but no integer lies in [LOW, HIGH]"),
    ],
)
def test_check_bad_domain_for_kinds(domain, message):
    result = run(
        "check",
        f"{CASES}:power",
        "--arg",
        "n=i64,flag=bool",
        "--domain",
        domain,
        code=2,
    )
    assert result.stderr == usage_error(
        "check", f"Invalid value for '--domain': {message}"
    )


def test_graph_with_kinds():
    payload = json.loads(
        run("graph", f"{CASES}:power", "--arg", "n=i64,flag=bool", "--json").stdout
    )
    params = [n["label"] for n in payload["nodes"] if n["role"] == "param"]
    assert params == ["x", "n: i64", "flag: bool"]
    assert payload["kinds"] == payload["signature"]
    assert payload["signature"] == {"x": "float64", "n": "int64", "flag": "bool"}
    assert "\\nsignature: (x: float64, n: int64, flag: bool)\\n" in payload["dot"]


def test_compile_with_kinds(tmp_path):
    out = tmp_path / "power_kernels.py"
    run(
        "compile",
        f"{CASES}:power",
        "--arg",
        "n=i64,flag=bool",
        "--hessian",
        "-o",
        str(out),
    )
    text = out.read_text()
    assert (
        f"# Regenerate with: symdiff compile {CASES}:power -o {out} --hessian "
        "--arg n=i64,flag=bool\n"
    ) in text
    assert "    grad(x: float64, n: int64, flag: bool)            -> x_bar\n" in text
    assert "Pass the types listed" in text and "Pass floats." not in text
    tree = ast.parse(text)
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    for d in defs:
        assert [ast.unparse(x) for x in d.decorator_list] == [
            "numba.njit('(float64, int64, boolean)', error_model='numpy', "
            "fastmath=False)"
        ]
    body = typed_kernel("grad").source
    assert (
        body[body.index("def power_grad(") :].replace("def power_grad(", "def grad(")
        in text
    )
    namespace: dict = {}
    exec(compile(text, str(out), "exec"), namespace)
    assert namespace["ARG_KINDS"] == {"x": "float64", "n": "int64", "flag": "bool"}
    grad = namespace["grad"]
    assert [str(s) for s in grad.signatures] == ["(float64, int64, bool)"]
    api_grad = symdiff.grad(cases.power)
    api_hessian = symdiff.hessian(cases.power)
    for x, n, flag in [(1.5, 3, False), (-2.0, 2, True), (0.5, -1, False)]:
        assert grad(x, n, flag) == api_grad(x, n, flag)
        assert namespace["hessian"](x, n, flag) == api_hessian(x, n, flag)
        assert namespace["forward"](x, n, flag) == cases.power(x, n, flag)
        assert grad(int(x) if x.is_integer() else x, n, flag) == api_grad(x, n, flag)


def test_compile_with_kinds_json_and_a_differentiated_int(tmp_path):
    out = tmp_path / "k.py"
    payload = json.loads(
        run(
            "compile",
            f"{CASES}:power",
            "--arg",
            "n=i64,flag=bool",
            "--wrt",
            "x,n",
            "-o",
            str(out),
            "--json",
        ).stdout
    )
    assert payload["kinds"] == {"x": "float64", "n": "int64", "flag": "bool"}
    assert payload["signatures"] == {
        "forward": {"x": "float64", "n": "int64", "flag": "bool"},
        "grad": {"x": "float64", "n": "float64", "flag": "bool"},
        "value_and_grad": {"x": "float64", "n": "float64", "flag": "bool"},
    }
    namespace: dict = {}
    exec(compile(out.read_text(), str(out), "exec"), namespace)
    # an int passed for n is converted to a float, as the API casts it
    want = symdiff.grad(cases.power, argnums=(0, 1))(1.5, 3, True)
    assert namespace["grad"](1.5, 3, True) == want
    plain = json.loads(run("compile", f"{CASES}:poly", "-o", str(out), "--json").stdout)
    assert plain["kinds"] == {"x": "float64", "y": "float64"}
    assert 'ARG_KINDS = {"x": "float64", "y": "float64"}\n' in out.read_text()


@pytest.mark.parametrize("command", KIND_COMMANDS)
def test_help_explains_arg(command):
    out = run(command, "--help").stdout
    assert "--arg NAME=KIND" in out
    assert ("--infer-kinds" in out) == (
        command in ("grad", "jacobian", "hessian", "check")
    )
    assert "--arg n=i64" in out  # an example


def test_a_parameter_defaulting_to_an_int_is_an_int(tmp_path):
    """As ``.source`` before a call shows it (README, Loops): ``n=3`` is an int
    exponent, not a float to differentiate, unless ``--arg n=f64`` says so."""
    path = tmp_path / "int_default.py"
    path.write_text("def power(x, n=3):\n    return x ** n\n")
    out = run("grad", f"{path}:power", "--at", "x=2").stdout
    assert "x_bar = 12.0" in out and "n_bar" not in out
    source = run("grad", f"{path}:power").stdout
    assert "# signature: (x: float64, n: int64)" in source
    as_float = run("grad", f"{path}:power", "--arg", "n=f64", "--at", "x=2").stdout
    assert "n_bar" in as_float
