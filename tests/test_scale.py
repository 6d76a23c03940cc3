"""Large functions: no recursion over user graphs."""

import importlib.util
import math
import sys
import time

import pytest

import symdiff

N_STATEMENTS = 20_000


def _write_chain(tmp_path, n):
    lines = ["import math", "", "", "def chain(x, y):", "    a = x"]
    for i in range(n):
        lines.append(f"    a = a + 0.5 * math.sin(a) * y + {1.0 / (i + 1)!r}")
    lines.append("    return a")
    path = tmp_path / f"chain_{n}.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(f"chain_{n}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.chain


def _reference(x, y, n):
    a, da_dx, da_dy = x, 1.0, 0.0
    for i in range(n):
        s, c = math.sin(a), math.cos(a)
        a, da_dx, da_dy = (
            a + 0.5 * s * y + 1.0 / (i + 1),
            da_dx * (1 + 0.5 * c * y),
            da_dy * (1 + 0.5 * c * y) + 0.5 * s,
        )
    return a, (da_dx, da_dy)


@pytest.mark.slow
def test_twenty_thousand_statements(tmp_path, capsys):
    fn = _write_chain(tmp_path, N_STATEMENTS)
    limit = sys.getrecursionlimit()
    t0 = time.perf_counter()
    g = symdiff.value_and_grad(fn, argnums=(0, 1), target="python")
    source = g.source
    elapsed = time.perf_counter() - t0
    assert sys.getrecursionlimit() == limit
    assert source.count("\n") > 2 * N_STATEMENTS
    value, grads = g(0.3, 0.01)
    ref_value, ref_grads = _reference(0.3, 0.01, N_STATEMENTS)
    assert value == pytest.approx(ref_value, rel=1e-10)
    assert grads == pytest.approx(ref_grads, rel=1e-8)
    with capsys.disabled():
        stages = ", ".join(f"{k} {v:.2f} s" for k, v in g.kernel.timings.items())
        print(
            f"\n[scale] {N_STATEMENTS} statements: gradient source built and "
            f"printed in {elapsed:.2f} s ({len(source.splitlines())} lines; "
            f"{stages}; print includes Python's compile of the module)"
        )


def test_long_expression_is_lowered_iteratively(tmp_path, monkeypatch):
    # As long as CPython's own compiler accepts (it recurses on the AST).
    terms = " + ".join(f"{k}.0 * x" for k in range(1, 801))
    path = tmp_path / "longexpr.py"
    path.write_text(f"def f(x):\n    return {terms}\n")
    spec = importlib.util.spec_from_file_location("longexpr", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    g = symdiff.grad(module.f, target="python")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(300)  # the lowering itself must not recurse
    # (nor take the room kept for nested statements and helpers)
    monkeypatch.setattr("symdiff.frontend.lower._NESTING_FRAMES", 300)
    try:
        assert g.source
    finally:
        sys.setrecursionlimit(limit)
    assert g(1.0) == pytest.approx(sum(range(1, 801)))


def _write_helper_chain(tmp_path, depth):
    lines = ["import math", "", "", "def h0(x):", "    return math.sin(x)"]
    for k in range(1, depth):
        lines += ["", "", f"def h{k}(x):", f"    return h{k - 1}(x) * 0.5 + x"]
    path = tmp_path / f"helpers_{depth}.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(f"helpers_{depth}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, f"h{depth - 1}")


def test_helpers_calling_helpers_300_deep(tmp_path):
    """Inlining follows the calls (a few Python frames each): at the default
    recursion limit, 120 levels once raised RecursionError."""
    fn = _write_helper_chain(tmp_path, 300)
    limit = sys.getrecursionlimit()
    value, slope = symdiff.value_and_grad(fn, target="python")(0.3)
    assert sys.getrecursionlimit() == limit  # restored
    assert value == pytest.approx(fn(0.3), rel=1e-12)
    h = 1e-6
    assert slope == pytest.approx((fn(0.3 + h) - fn(0.3 - h)) / (2 * h), rel=1e-6)
