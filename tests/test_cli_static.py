"""The command line on functions with static parameters: a default that is a
string or None (``mode="sq"``, ``w=None``) configures the function, as in the
Python API.  Such a parameter is not differentiated, not drawn by ``check`` and
no parameter of a compiled module; ``--at mode=lin`` sets it (a Python literal,
a bare word being a string), and every command works with it."""

from __future__ import annotations

import importlib.util
import json
import textwrap

import pytest
from click.testing import CliRunner

import symdiff
from symdiff.cli import main
from symdiff.cli.kinds import split_items

CASES = textwrap.dedent(
    """
    def f(x, mode="sq"):
        return x * x if mode == "sq" else 2 * x


    def g(x, w=None):
        return x * x if w is None else w * x


    import functools
    import math


    def base(a, x):
        return a * math.sin(x)


    pos_partial = functools.partial(base, 2.0)


    class Cal:
        def __init__(self, k):
            self.k = k

        def __call__(self, x):
            return self.k * x * x

        def energy(self, x):
            return self.k * x**3


    obj = Cal(3.0)
    bound = obj.energy


    def kw(x, *, k=2.0):
        return k * x * x


    def kw_required(x, *, k):
        return k * x * x


    def h(x, y, mode="sq"):
        if mode not in ("sq", "lin", "a,b"):
            raise ValueError(f"unknown mode {mode!r}")
        return x * x * y if mode == "sq" else 2 * x + y


    def stub(x):
        raise NotImplementedError("todo")


    def pick(x, mode="sq"):
        if mode == "sq":
            return x * x
        raise KeyError(mode)


    def checked(x):
        if x < 0:
            raise RuntimeError("negative")
        return x * x
    """
)


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    """The folder of ``static_cases.py``, and the module as Python imports it."""
    folder = tmp_path_factory.mktemp("static")
    path = folder / "static_cases.py"
    path.write_text(CASES)
    spec = importlib.util.spec_from_file_location("static_cases_api", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return folder, module


@pytest.fixture(autouse=True)
def _in_cases_folder(cases, monkeypatch):
    monkeypatch.chdir(cases[0])


def run(*args: str, code: int = 0):
    result = CliRunner().invoke(main, list(args), prog_name="symdiff")
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def error(*args: str, code: int = 2) -> str:
    """The last line of the error message (usage errors end with it)."""
    return run(*args, code=code).stderr.strip().splitlines()[-1]


# -- every command ------------------------------------------------------------------
def test_grad_prints_the_kernel_of_the_default(cases):
    out = run("grad", "static_cases.py:f").stdout
    assert out == symdiff.grad(cases[1].f, target="python").source
    assert "# specialised to: mode = 'sq'" in out
    out = run("grad", "static_cases.py:g").stdout
    assert "# specialised to: w = None" in out


@pytest.mark.parametrize(
    "at, want",
    [
        ("x=1.5", "grad of `f` at x=1.5, mode='sq':\n  x_bar = 3.0\n"),
        ("x=1.5,mode=lin", "grad of `f` at x=1.5, mode='lin':\n  x_bar = 2.0\n"),
        ("x=1.5,mode='lin'", "grad of `f` at x=1.5, mode='lin':\n  x_bar = 2.0\n"),
        ('1.5,"lin"', "grad of `f` at x=1.5, mode='lin':\n  x_bar = 2.0\n"),
    ],
)
def test_grad_at_a_point_sets_the_static_value(at, want):
    assert run("grad", "static_cases.py:f", "--at", at).stdout == want


def test_none_true_false_and_numbers_are_python_literals():
    def value(at: str) -> str:
        return run("grad", "static_cases.py:g", "--at", at).stdout

    assert value("x=1.5") == "grad of `g` at x=1.5, w=None:\n  x_bar = 3.0\n"
    assert value("x=1.5,w=None") == "grad of `g` at x=1.5, w=None:\n  x_bar = 3.0\n"
    assert value("x=1.5,w=3") == "grad of `g` at x=1.5, w=3:\n  x_bar = 3.0\n"
    assert value("x=1.5,w=2.5") == "grad of `g` at x=1.5, w=2.5:\n  x_bar = 2.5\n"
    assert value("x=1.5,w=True") == "grad of `g` at x=1.5, w=true:\n  x_bar = 1.0\n"


def test_value_and_grad_at_a_point():
    out = run("grad", "static_cases.py:f", "--value", "--at", "x=1.5").stdout
    assert out == "value_and_grad of `f` at x=1.5, mode='sq':\n  value = 2.25\n" + (
        "  x_bar = 3.0\n"
    )


def test_several_points_with_several_values():
    out = run(
        "grad", "static_cases.py:f", "--at", "x=1.5", "--at", "x=1.5,mode=lin"
    ).stdout
    assert out.splitlines()[1::2] == ["  x_bar = 3.0", "  x_bar = 2.0"]


def test_a_comma_inside_quotes_belongs_to_the_string():
    assert split_items("x=1,mode='a,b',y=[1,2]") == ["x=1", "mode='a,b'", "y=[1,2]"]
    out = run("grad", "static_cases.py:h", "--at", "x=1,y=2,mode='a,b'").stdout
    assert out.startswith("grad of `h` at x=1, y=2, mode='a,b':\n")


def test_hessian_and_jacobian():
    assert run("hessian", "static_cases.py:f", "--at", "x=1.5").stdout == (
        "hessian of `f` at x=1.5, mode='sq':\n  d2_dx_dx = 2.0\n"
    )
    out = run("jacobian", "static_cases.py:f", "--at", "x=1.5,mode=lin").stdout
    assert out == "jacobian of `f` at x=1.5, mode='lin':\n  dvalue_dx = 2.0\n"
    for command in ("hessian", "jacobian"):
        assert (
            "# specialised to: mode = 'sq'" in run(command, "static_cases.py:f").stdout
        )


def test_json_gives_the_static_value():
    out = run("grad", "static_cases.py:f", "--json", "--at", "x=2,mode=lin").stdout
    payload = json.loads(out)
    assert payload["kinds"] == {"x": "float64", "mode": "static:'lin'"}
    assert payload["wrt"] == ["x"]
    assert payload["results"] == [
        {"at": {"x": 2.0, "mode": "lin"}, "values": {"x_bar": 2.0}}
    ]
    assert "# specialised to: mode = 'lin'" in payload["source"]


def test_check_does_not_draw_a_static_parameter():
    out = run("check", "static_cases.py:h", "--samples", "2", "--target", "python")
    lines = out.stdout.splitlines()
    assert all(row.split()[2] == "mode='sq'" for row in lines[2:6])
    assert [row.split()[3] for row in lines[2:6]] == ["x", "y", "x", "y"]
    assert lines[-1].startswith("ok: 4 of 4 partial derivatives at 2 points")
    out = run("check", "static_cases.py:f", "--at", "x=0.5,mode=lin").stdout
    assert "x=0.5, mode='lin'  x    2 " in out


def test_compile_drops_the_static_parameter(tmp_path):
    target = tmp_path / "f_kernels.py"
    run("compile", "static_cases.py:h", "-o", str(target))
    text = target.read_text()
    assert "def grad(x, y):" in text
    assert "The kernels are specialised to\nmode = 'sq' (static: not arguments)." in (
        text
    )
    assert 'ARG_KINDS = {"x": "float64", "y": "float64", "mode": "static:\'sq\'"}' in (
        text
    )
    spec = importlib.util.spec_from_file_location("f_kernels", target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.grad(1.5, 2.0) == (6.0, 2.25)
    assert module.value_and_grad(1.5, 2.0) == (4.5, (6.0, 2.25))


def test_compile_with_declared_kinds_signs_only_the_others(tmp_path):
    target = tmp_path / "h_kernels.py"
    run(
        "compile", "static_cases.py:h", "--arg", "y=i64", "--hessian", "-o", str(target)
    )
    text = target.read_text()
    assert '@numba.njit("(float64, int64)", error_model="numpy"' in text
    assert "# Regenerate with: symdiff compile static_cases.py:h -o " in text
    assert "--hessian --arg y=i64\n" in text
    spec = importlib.util.spec_from_file_location("h_kernels", target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.hessian(1.5, 2) == 4.0


def test_graph_has_no_node_for_a_static_parameter():
    payload = json.loads(run("graph", "static_cases.py:f", "--json").stdout)
    assert payload["signature"] == {"x": "float64", "mode": "static:'sq'"}
    labels = [node["label"] for node in payload["nodes"]]
    assert "x" in labels
    assert not any(label.startswith("mode") for label in labels)
    assert "\\nspecialised to: mode = 'sq'\\n" in payload["dot"]


# -- errors -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "at, message",
    [
        ("x=1,mode='lin", "`mode='lin`: not a string literal (is a quote missing?)"),
        ("x=1,mode=", "`mode=`: no value given (an empty string is mode='')"),
        (
            "x=1,mode=(1,2)",
            "`mode=(1,2)`: mode is static (its default is a string or None): its "
            "value is a string, None, true/false or a number, not a tuple",
        ),
    ],
)
def test_bad_values(at, message):
    got = error("grad", "static_cases.py:f", "--at", at)
    assert got == f"Error: Invalid value for '--at': {message}"


def test_a_static_parameter_is_not_differentiated():
    result = run("grad", "static_cases.py:f", "--wrt", "mode", code=2)
    assert result.stderr.strip().splitlines()[-2:] == [
        "Error: Invalid value for '--wrt': cannot differentiate with respect to "
        "`mode`: it is static (mode='sq'; a parameter whose default is a string or "
        "None configures the function)",
        "  help: to differentiate it, make it a number: --arg mode=f64",
    ]
    # a number given to it can be
    out = run("grad", "static_cases.py:g", "--wrt", "x,w", "--at", "x=1,w=2.5")
    assert out.stdout == "grad of `g` at x=1, w=2.5:\n  x_bar = 2.5\n  w_bar = 1.0\n"


def test_a_static_parameter_has_no_domain():
    got = error("check", "static_cases.py:f", "--domain", "mode=0:1")
    assert got == (
        "Error: Invalid value for '--domain': `mode` is static: it keeps its value, "
        "'sq', at every point (set it with --at mode=...)"
    )


@pytest.mark.parametrize("command", ["grad", "jacobian", "check"])
def test_what_the_function_raises_for_a_value_is_a_failure(command):
    got = error(command, "static_cases.py:h", "--at", "x=1,y=2,mode=bad", code=1)
    assert got == (
        "Error: `h` (static_cases.py) raised ValueError: unknown mode 'bad' "
        "(with mode='bad')"
    )


@pytest.mark.parametrize(
    ("args", "want"),
    [
        (
            ("static_cases.py:stub",),
            "Error: `stub` (static_cases.py) raised NotImplementedError: todo",
        ),
        (
            ("static_cases.py:pick", "--at", "x=1,mode=cube"),
            "Error: `pick` (static_cases.py) raised KeyError: 'cube' (with "
            "mode='cube')",
        ),
        (
            ("static_cases.py:checked", "--at", "x=-1"),
            "Error: `checked` (static_cases.py) raised RuntimeError: negative",
        ),
    ],
)
def test_any_exception_the_function_raises_is_a_failure(args, want):
    """Once a traceback: only ValueError, TypeError and ArithmeticError were the
    function's own."""
    assert error("grad", *args, code=1) == want


def test_keyword_only_parameters_take_their_defaults():
    out = run("grad", "static_cases.py:kw", "--at", "x=2").stdout
    assert "x_bar = 8.0" in out
    assert "def kw_grad(x, k):" in run("grad", "static_cases.py:kw").stdout
    message = error("grad", "static_cases.py:kw_required", "--at", "x=2")
    assert "keyword-only parameters without a default (k)" in message


@pytest.mark.parametrize(
    ("name", "want"),
    [("pos_partial", "1.0806046117362795"), ("bound", "9.0"), ("obj", "6.0")],
)
def test_partials_bound_methods_and_callable_objects(name, want):
    assert (
        f"x_bar = {want}"
        in run("grad", f"static_cases.py:{name}", "--at", "x=1").stdout
    )
    payload = json.loads(
        run("grad", f"static_cases.py:{name}", "--emit", "json").stdout
    )
    assert payload["signature"] == {"x": "float64"}
    assert "ok: 5 of 5" in run("check", f"static_cases.py:{name}").stdout


def test_compile_of_a_partial_binding_numbers_is_reported(tmp_path):
    out = tmp_path / "bundle.py"
    result = run("compile", "static_cases.py:pos_partial", "-o", str(out), code=1)
    assert "binds numbers to its function" in result.stderr
    run("compile", "static_cases.py:bound", "-o", str(out))
    spec = importlib.util.spec_from_file_location("bound_bundle", out)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.grad(1.0) == pytest.approx(9.0)


NORM = "import numpy as np\n\n\ndef norm(x):\n    return np.sqrt(np.sum(x ** 2))\n"


def test_points_with_arrays_of_other_lengths(tmp_path, monkeypatch):
    (tmp_path / "norms.py").write_text(NORM)
    monkeypatch.chdir(tmp_path)
    out = run("grad", "norms.py:norm", "--at", "x=[1,2,3]", "--at", "x=[3,4]").stdout
    assert "x_bar = [0.6, 0.8]" in out
    message = error("grad", "norms.py:norm", "--at", "x=[1,2,3]", "--at", "x=[[3,4]]")
    assert "give arrays of" in message
