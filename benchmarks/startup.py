"""Start-up costs, measured in fresh processes: ``import symdiff`` and the time to
the first gradient value after it, with an empty and with a warm kernel cache."""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = textwrap.dedent(
    """
    import time
    t0 = time.perf_counter()
    import symdiff
    t1 = time.perf_counter()
    import model
    g = symdiff.grad(model.z)
    g(1.5)
    t2 = time.perf_counter()
    print(t1 - t0, t2 - t1)
    """
)

MODEL = textwrap.dedent(
    """
    import math

    def z(u):
        return math.exp(math.sin(u**2) * math.log(u**2))
    """
)


def _run(work: Path, env: dict[str, str]) -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, str(work / "run.py")],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    first, second = out.stdout.split()
    return float(first), float(second)


def _importtime(env: dict[str, str]) -> float:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import symdiff"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    last = [ln for ln in out.stderr.splitlines() if re.search(r"\|\s*symdiff$", ln)]
    return int(last[-1].split("|")[1]) / 1e6


def startup_report(repeats: int = 3) -> str:
    """Medians over ``repeats`` fresh processes, as text lines."""
    with tempfile.TemporaryDirectory(prefix="symdiff-startup-") as tmp:
        work = Path(tmp)
        (work / "run.py").write_text(PROGRAM)
        (work / "model.py").write_text(MODEL)
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + str(work))
        cold, warm, off, imports = [], [], [], []
        for k in range(repeats):
            env["SYMDIFF_CACHE_DIR"] = str(work / f"cache{k}")
            cold.append(_run(work, env))  # empty cache
            warm.append(_run(work, env))  # same cache, now populated
            off.append(_run(work, dict(env, SYMDIFF_CACHE="0")))
            imports.append(_importtime(env))
    med = statistics.median
    lines = [
        f"startup (fresh processes, medians of {repeats}; seed004 grad):",
        f"  import symdiff: {med(t for t, _ in cold + warm + off):.3f} s wall, "
        f"{med(imports):.3f} s by -X importtime (Numba and SymPy not imported)",
        f"  first gradient after import, cold cache:  {med(t for _, t in cold):.3f} s",
        f"  first gradient after import, warm cache:  {med(t for _, t in warm):.3f} s "
        "(target <= 0.3 s)",
        f"  first gradient after import, cache off:   {med(t for _, t in off):.3f} s",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(startup_report())
