"""glibc's malloc thresholds: array kernels reuse freed memory instead of
faulting in fresh pages on every call (symdiff/backend/allocator.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from symdiff.backend import allocator
from tests import fresh_process

pytestmark = pytest.mark.skipif(
    allocator._mallopt() is None, reason="glibc's mallopt is not available"
)

MODEL = """
import numpy as np

def scaled(x):
    return x * 2.0, x * 3.0, x * 4.0

def scalar(x):
    return x * x
"""

#: Three 16 MB outputs alive at once, then freed: glibc's dynamic thresholds
#: give the 48 MB back to the system after each call, and the next call faults
#: every page in again.
PROBE = """
import resource
import numpy as np
import symdiff, model
from symdiff.backend import allocator

symdiff.grad(model.scalar)(1.0)
scalar_only = allocator.keep_freed_memory.cache_info().currsize  # 0: not decided
f = symdiff.jit(model.scaled)
x = np.ones(2_000_000)
f(x); f(x)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    f(x)
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5
print(scalar_only, allocator.keep_freed_memory(), faults)
"""


def _probe(tmp_path, **env):
    work, base = fresh_process.project(tmp_path, {"model.py": MODEL})
    for name in (*allocator._USER_SETTINGS, "GLIBC_TUNABLES", "SYMDIFF_TUNE_MALLOC"):
        base.pop(name, None)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=work,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    scalar_only, state, faults = proc.stdout.strip().rsplit(" ", 2)[-3:]
    return scalar_only, state, float(faults)


def test_array_kernels_reuse_freed_memory(tmp_path):
    scalar_only, state, faults = _probe(tmp_path)
    assert scalar_only == "0"  # scalar kernels allocate nothing: no setting
    assert state == "True"
    assert faults < 100  # 16 MB arrays: 3900 pages each if mapped anew


def test_without_the_setting_every_call_faults_its_pages_in(tmp_path):
    """The check above can fail: glibc's defaults fault in every output."""
    _, state, faults = _probe(tmp_path, SYMDIFF_TUNE_MALLOC="0")
    assert state == "False"
    assert faults > 5000


@pytest.mark.parametrize(
    "name, value",
    [
        ("SYMDIFF_TUNE_MALLOC", "0"),
        ("MALLOC_MMAP_THRESHOLD_", "131072"),
        ("MALLOC_TRIM_THRESHOLD_", "0"),
        ("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=0"),
    ],
)
def test_the_users_own_settings_win(monkeypatch, name, value):
    for other in (*allocator._USER_SETTINGS, "GLIBC_TUNABLES", "SYMDIFF_TUNE_MALLOC"):
        monkeypatch.delenv(other, raising=False)
    assert not allocator._user_chose()
    monkeypatch.setenv(name, value)
    assert allocator._user_chose()
