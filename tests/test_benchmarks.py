"""Smoke test of benchmarks/run.py: one cheap symdiff workload, optional tools absent.

The benchmark runs in a subprocess in which jax, torch, autograd and pytensor cannot
be imported (whether or not they are installed), so the test checks the path CI
takes: the table is printed, symdiff and the hand-written Numba baseline are timed,
and every missing tool gets a "skipped" row instead of an error.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "run.py"
HIDDEN = ("jax", "torch", "autograd", "pytensor")

BLOCK_AND_RUN = textwrap.dedent(
    """
    import runpy, sys

    class Hide:
        # a meta-path finder that makes these packages look not installed
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {hidden!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}}")
            return None

    sys.meta_path.insert(0, Hide())
    sys.argv = [{run!r}, *{argv!r}]
    runpy.run_path({run!r}, run_name="__main__")
    """
)


def run_benchmark(tmp_path, *argv):
    code = BLOCK_AND_RUN.format(hidden=HIDDEN, run=str(RUN), argv=list(argv))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )


def test_quick_latency_table_without_optional_tools(tmp_path):
    out_json = tmp_path / "out.json"
    proc = run_benchmark(
        tmp_path, "--quick", "--only", "latency:seed004", "--json", str(out_json)
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout

    # the table, with its columns
    for column in ("workload", "tool", "setup", "first call", "grad call", "fwd call"):
        assert column in text
    assert "seed004 z(u)" in text
    assert "Targets:" in text and "target <= 2x" in text

    # missing tools: a note at the top and a skipped row each, never an error
    for tool in HIDDEN:
        assert f"skipped tool: {tool} (not installed" in text
        assert f"skipped: {tool} is not installed" in text
    assert "error:" not in text
    assert "MISMATCH" not in text

    payload = json.loads(out_json.read_text())
    rows = {r["tool"]: r for r in payload["rows"]}
    for tool in HIDDEN:
        assert rows[tool]["status"] == "skipped"
    for tool in ("symdiff", "symdiff (kernel)", "numba", "sympy lambdify cse"):
        assert rows[tool]["status"] == "ok", rows[tool]
        assert rows[tool]["grad_s"] > 0
    symdiff = rows["symdiff"]
    assert symdiff["ops"].startswith(f"{symdiff['extra']['op_counts_grad']['total']}/")
    assert symdiff["symdiff_over_tool"] is None
    assert rows["numba"]["symdiff_over_tool"] > 0
    assert payload["threads"]["OMP_NUM_THREADS"] == "1"


def test_unknown_workload_is_refused(tmp_path):
    proc = run_benchmark(tmp_path, "--quick", "--only", "no_such_workload")
    assert proc.returncode != 0
    assert "unknown workload" in proc.stderr
