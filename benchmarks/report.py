"""The results table and the summary of where each target stands."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from harness import Row


# -- the table -----------------------------------------------------------------------
def fmt_time(t: float | None) -> str:
    if t is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if t >= scale or unit == "ns":
            v = t / scale
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return "-"  # pragma: no cover


def fmt_ratio(r: float | None) -> str:
    if r is None or not math.isfinite(r):
        return "-"
    return f"{r:.3g}x" if r < 100 else f"{r:.0f}x"


COLUMNS = (
    "workload",
    "case",
    "tool",
    "setup",
    "first call",
    "grad call",
    "fwd call",
    "grad/fwd",
    "ops g/f",
    "symdiff/tool",
    "note",
)


def symdiff_ratio(row: Row, rows: list[Row]) -> float | None:
    """symdiff's steady gradient time over this row's, within the same case."""
    if row.tool == "symdiff":
        return None
    mine = [
        r
        for r in rows
        if r.workload == row.workload
        and r.case == row.case
        and r.tool == "symdiff"
        and r.grad_s is not None
    ]
    if not mine or row.grad_s is None:
        return None
    return mine[0].grad_s / row.grad_s


def table(rows: list[Row]) -> str:
    lines = []
    previous: tuple[str, str] | None = None
    cells = []
    for row in rows:
        ratio = symdiff_ratio(row, rows)
        key = (row.workload, row.case)
        cells.append(
            (
                row.workload if key != previous else "",
                row.case if key != previous else "",
                row.tool,
                fmt_time(row.setup_s),
                fmt_time(row.first_s),
                fmt_time(row.grad_s),
                fmt_time(row.fwd_s),
                fmt_ratio(row.grad_over_fwd),
                row.ops or "-",
                fmt_ratio(ratio),
                row.note,
            )
        )
        previous = key
    widths = [
        max(len(COLUMNS[i]), *(len(c[i]) for c in cells)) if cells else len(COLUMNS[i])
        for i in range(len(COLUMNS))
    ]
    right = {3, 4, 5, 6, 7, 8, 9}

    def render(values: tuple[str, ...]) -> str:
        out = []
        for i, v in enumerate(values):
            if i == len(values) - 1:
                out.append(v)
            else:
                out.append(v.rjust(widths[i]) if i in right else v.ljust(widths[i]))
        return "  ".join(out).rstrip()

    lines.append(render(COLUMNS))
    lines.append("  ".join("-" * w for w in widths[:-1]) + "  " + "-" * 4)
    for i, c in enumerate(cells):
        if c[0] and i:
            lines.append("")
        lines.append(render(c))
    return "\n".join(lines)


def rows_as_json(rows: list[Row]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        d = asdict(row)
        d["grad_over_fwd"] = row.grad_over_fwd
        d["symdiff_over_tool"] = symdiff_ratio(row, rows)
        out.append(d)
    return out


# -- where the targets stand ---------------------------------------------------------
def _find(rows: list[Row], workload: str, case: str, tool: str) -> Row | None:
    for r in rows:
        if (r.workload, r.case, r.tool) == (workload, case, tool):
            return r
    return None


def _cases(rows: list[Row], workload: str) -> list[str]:
    seen: list[str] = []
    for r in rows:
        if r.workload == workload and r.case not in seen:
            seen.append(r.case)
    return seen


def _latency_lines(rows: list[Row]) -> list[str]:
    lines = []
    for case in _cases(rows, "latency"):
        s = _find(rows, "latency", case, "symdiff")
        n = _find(rows, "latency", case, "numba")
        k = _find(rows, "latency", case, "symdiff (kernel)")
        if not (s and n and s.grad_s and n.grad_s):
            continue
        ratio = s.grad_s / n.grad_s
        verdict = "met" if ratio <= 2.0 else "NOT met"
        line = (
            f"  latency, {case}: symdiff {fmt_time(s.grad_s)} vs hand-written Numba "
            f"{fmt_time(n.grad_s)} = {ratio:.2f}x (target <= 2x: {verdict})"
        )
        if k and k.grad_s:
            line += f"; the kernel alone {k.grad_s / n.grad_s:.2f}x"
        mins = [r.extra.get("grad_min_s") for r in (s, n)]
        if all(mins):
            line += f"; best rounds {mins[0] / mins[1]:.2f}x"
        lines.append(line)
        pair = s.extra.get("paired_vs_numba")
        if pair:
            verdict = "met" if pair[0] <= 2.0 else "NOT met"
            line = (
                f"    interleaved rounds (paired, steadier): symdiff/Numba "
                f"{pair[0]:.2f}x (target: {verdict}), kernel alone/Numba {pair[1]:.2f}x"
            )
            lines.append(line)
    return lines


def _nested_lines(rows: list[Row]) -> list[str]:
    builds = []
    for case in _cases(rows, "nested"):
        s = _find(rows, "nested", case, "symdiff")
        if s is None or s.setup_s is None:
            continue
        depth = int(case.split()[-1])
        timings = s.extra.get("build_timings", {})
        builds.append((depth, s.setup_s, sum(timings.values()), s.first_s))
    if not builds:
        return []
    lines = ["  nested, symdiff build (trace+differentiate+print) and Numba compile:"]
    for depth, _, build, first in builds:
        lines.append(
            f"    depth {depth:3d}: build {fmt_time(build)} "
            f"({fmt_time(build / depth)} per level), first call incl. Numba "
            f"compile {fmt_time(first)}"
        )
    (d0, _, b0, _), (d1, _, b1, _) = builds[0], builds[-1]
    if d1 > d0 and b0 > 0:
        lines.append(
            f"    build grows {b1 / b0:.2g}x for {d1 / d0:.2g}x the depth "
            f"({'linear or better' if b1 / b0 <= 1.5 * d1 / d0 else 'SUPERLINEAR'})"
        )
    swell = []
    for case in _cases(rows, "nested"):
        for r in rows:
            if r.workload == "nested" and r.case == case and "diff_s" in r.extra:
                swell.append(f"{case}: sympy.diff {fmt_time(r.extra['diff_s'])}")
                break
            if r.workload == "nested" and r.case == case and r.tool == "sympy":
                swell.append(f"{case}: skipped (swell)")
                break
    if swell:
        lines.append("    SymPy: " + "; ".join(swell))
    return lines


def _from_sympy_lines(rows: list[Row]) -> list[str]:
    lines = []
    for case in _cases(rows, "from_sympy"):
        s = _find(rows, "from_sympy", case, "symdiff")
        if s is None or not s.grad_s:
            continue
        parts = []
        for tool in ("sympy lambdify", "sympy lambdify cse", "numba", "jax"):
            o = _find(rows, "from_sympy", case, tool)
            if o is not None and o.grad_s:
                parts.append(
                    f"{tool} {fmt_time(o.grad_s)} (symdiff/tool "
                    f"{s.grad_s / o.grad_s:.2g}x)"
                )
        lines.append(
            f"  from_sympy, {case}: symdiff gradient {fmt_time(s.grad_s)}; "
            + "; ".join(parts)
        )
        pair = s.extra.get("paired_vs_numba")
        if pair:
            lines.append(
                f"    interleaved rounds (paired): symdiff/numba.njit(lambdify cse) "
                f"{pair[0]:.2f}x, kernel alone {pair[1]:.2f}x"
            )
    return lines


def _paired_lines(rows: list[Row]) -> list[str]:
    lines = []
    for r in rows:
        pairs = r.extra.get("paired") if r.tool == "symdiff" else None
        if pairs:
            ratios = ", ".join(f"symdiff/{name} {x:.2f}x" for name, x in pairs.items())
            lines.append(
                f"  {r.workload}, {r.case}: interleaved rounds (paired): {ratios}"
            )
    return lines


def summary(rows: list[Row]) -> str:
    lines = ["Targets:"]
    lines += _latency_lines(rows)
    lines += _paired_lines(rows)
    lines += _nested_lines(rows)
    lines += _from_sympy_lines(rows)
    ratios = [
        f"    {r.workload}, {r.case}: ops {r.ops}, time {fmt_ratio(r.grad_over_fwd)}"
        for r in rows
        if r.tool == "symdiff" and r.grad_s is not None
    ]
    if ratios:
        lines.append("  symdiff gradient/forward, op counts and call time:")
        lines += ratios
    cannot = [
        f"{r.workload}/{r.case}"
        for r in rows
        if r.tool == "symdiff" and r.status == "cannot-run"
    ]
    if cannot:
        lines.append(f"  symdiff cannot run yet: {', '.join(cannot)}")
    bad = [
        f"{r.workload}/{r.case}/{r.tool}: {r.note}"
        for r in rows
        if r.status == "error" or "MISMATCH" in r.note
    ]
    if bad:
        lines.append("  errors and mismatches:")
        lines += [f"    {b}" for b in bad]
    return "\n".join(lines)
