"""symdiff benchmarks: every workload with every tool, in one process.

    python benchmarks/run.py [--quick] [--only WORKLOAD[:CASE]] [--tools a,b]
                             [--json out.json]

Prints a plain-text table of medians (see benchmarks/README.md for the columns),
then where each target stands.  Tools that are not installed are skipped with a
note; install them with ``pip install -e ".[bench]"``.
"""

from __future__ import annotations

import os

# Every tool runs on one thread.  These must be set before NumPy, Numba, JAX or
# PyTorch are imported (below), or the thread pools are already sized.
PINNED = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
    "JAX_PLATFORMS": "cpu",
    "JAX_ENABLE_X64": "1",  # float64 everywhere
}
os.environ.update(PINNED)

# The variables are requests: XLA's CPU client keeps a thread pool of its own
# whatever XLA_FLAGS says (jit(a @ b) measured 2.6 ms wall for 3.9 ms of CPU
# time on 2 cores).  Binding the process to one core holds every tool to one.
CPU: int | None = None
if hasattr(os, "sched_setaffinity"):
    CPU = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {CPU})

# On-disk compile caches start empty, so that "first call" is a cold compile:
# symdiff's kernel cache (the "symdiff (cached)" rows then show a second build
# hitting it) and PyTensor's (its Numba backend caches machine code there).
import shutil  # noqa: E402
import tempfile  # noqa: E402

CACHE_DIR = tempfile.mkdtemp(prefix="symdiff-bench-")
os.environ["SYMDIFF_CACHE_DIR"] = os.path.join(CACHE_DIR, "symdiff")
os.environ["PYTENSOR_FLAGS"] = (
    f"floatX=float64,base_compiledir={os.path.join(CACHE_DIR, 'pytensor')}"
)

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the sibling modules
sys.path.insert(1, str(HERE.parent))  # symdiff from this checkout

import array_cases  # noqa: E402
import harness  # noqa: E402
import report  # noqa: E402
import scalar_cases  # noqa: E402
import startup  # noqa: E402

WORKLOADS = ("latency", "nested", "from_sympy", "arrays", "startup", "cuda")
# Reported apart, each from a fresh process: start-up costs, and the GPU.
APART = ("startup", "cuda")


def cases_for(workload: str, quick: bool) -> list[harness.Case]:
    if workload == "latency":
        return scalar_cases.latency_cases()
    if workload == "nested":
        depths = (5, 10, 20, 40) if quick else (5, 10, 15, 20, 30, 40)
        return scalar_cases.nested_cases(depths)
    if workload == "from_sympy":
        return [scalar_cases.from_sympy_case()]
    if workload == "arrays":
        return array_cases.array_cases()
    if workload in APART:
        return []  # fresh processes, reported apart (startup.py, cuda_bench.py)
    raise ValueError(workload)


def machine() -> dict[str, str]:
    model = ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False)
        for line in out.stdout.splitlines():
            if line.startswith("Model name"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "nproc": str(os.cpu_count()),
        "cpu": model or platform.processor(),
    }


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer rounds and sizes")
    p.add_argument(
        "--only",
        action="append",
        metavar="WORKLOAD[:CASE]",
        help=f"run only this workload ({', '.join(WORKLOADS)}), or only the cases "
        "whose name starts with CASE; repeatable",
    )
    p.add_argument(
        "--tools",
        help=f"comma-separated subset of: {', '.join(harness.TOOLS)} (default all)",
    )
    p.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    return p.parse_args(argv)


def selected_cases(only: list[str] | None, quick: bool) -> list[harness.Case]:
    wanted: dict[str, list[str]] = {}
    for item in only or WORKLOADS:
        workload, _, case = item.partition(":")
        if workload not in WORKLOADS:
            raise SystemExit(f"unknown workload {workload!r}: one of {WORKLOADS}")
        wanted.setdefault(workload, []).append(case)
    cases = []
    for workload, prefixes in wanted.items():
        for case in cases_for(workload, quick):
            if quick and case.full_only:
                continue
            if any(case.name.startswith(p) for p in prefixes):
                cases.append(case)
    return cases


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    tools = harness.TOOLS
    if args.tools:
        tools = tuple(t.strip() for t in args.tools.split(",") if t.strip())
        unknown = set(tools) - set(harness.TOOLS)
        if unknown:
            raise SystemExit(f"unknown tools {sorted(unknown)}: {harness.TOOLS}")
    cases = selected_cases(args.only, args.quick)
    asked = {i.partition(":")[0] for i in args.only or WORKLOADS}
    apart = [w for w in APART if w in asked]
    with_startup = "startup" in apart
    if not cases and not apart:
        raise SystemExit(f"no case matches --only {' '.join(args.only or [])}")
    started = time.perf_counter()
    ctx = harness.Context(harness.Settings.make(args.quick), tools)
    info = machine()
    info["mode"] = "quick" if args.quick else "full"
    versions = harness.versions_of(ctx.modules)
    rows: list[harness.Row] = []
    for case in cases:
        harness._progress(f"[{case.workload}] {case.name}")
        rows.extend(harness.run_case(ctx, case, tools))
    elapsed = time.perf_counter() - started

    print(f"symdiff benchmarks ({info['mode']}), {info['date']}")
    print(f"machine: {info['nproc']} cpu(s), {info['cpu']}; python {info['python']}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    sd = ctx.modules.get("symdiff")
    if sd is not None:
        print(f"symdiff from: {Path(sd.__file__).parent}")
    print("threads: " + ", ".join(f"{k}={v}" for k, v in PINNED.items()))
    print(
        f"process bound to cpu {CPU} (os.sched_setaffinity)"
        if CPU is not None
        else "process not bound to one cpu (no os.sched_setaffinity here)"
    )
    print(f"compile caches: empty at start, in {CACHE_DIR} (deleted at the end)")
    warm = ", ".join(f"{k} {v:.2g} s" for k, v in ctx.warm_up_s.items())
    print(f"one-off warm-up per tool (not in the table): {warm}")
    for tool, why in ctx.missing.items():
        print(f"skipped tool: {tool} (not installed: {why})")
    summary = report.summary(rows) if rows else ""
    if rows:
        print()
        print(report.table(rows))
        print()
        print(summary)
    if with_startup:
        startup_text = startup.startup_report(repeats=2 if args.quick else 3)
        print()
        print(startup_text)
        summary += "\n" + startup_text
    if "cuda" in apart:
        sizes = "1e6,1e7" if args.quick else "1e6,1e7,1e8"
        gpu = subprocess.run(
            [sys.executable, str(HERE / "cuda_bench.py"), "--sizes", sizes],
            capture_output=True,
            text=True,
        )
        gpu_text = gpu.stdout.strip() or f"cuda: failed\n{gpu.stderr[-2000:]}"
        print()
        print(gpu_text)
        summary += "\n" + gpu_text
    print(f"\ntotal time: {elapsed:.0f} s")
    if args.json:
        payload = {
            "machine": info,
            "versions": versions,
            "threads": PINNED,
            "missing": ctx.missing,
            "warm_up_s": ctx.warm_up_s,
            "elapsed_s": elapsed,
            "rows": report.rows_as_json(rows),
            "summary": summary.splitlines(),
        }
        Path(args.json).write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    try:
        status = main()
    finally:
        shutil.rmtree(CACHE_DIR, ignore_errors=True)
    sys.exit(status)
