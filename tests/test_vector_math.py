"""SIMD transcendentals in symdiff's loops (glibc's libmvec; backend/jit.py).

symdiff's loops (vectorize, array kernels) compile with their libm calls marked with
libmvec's variants, so `exp`/`log`/`sin`... in them run 2-8 points per call instead of one; the
user's own Numba functions are not affected, and SYMDIFF_VECTOR_MATH=0 turns it off.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import symdiff
from symdiff.backend.jit import vector_math_enabled
from tests import fresh_process

needs_libmvec = pytest.mark.skipif(
    not vector_math_enabled(),
    reason="SIMD math off here: needs x86-64 Linux with glibc's libmvec, and "
    "SYMDIFF_VECTOR_MATH not 0",
)


def z(u):
    return math.exp(math.sin(u**2) * math.log(u**2))


def vector_calls(dispatcher) -> set[str]:
    """The libmvec functions a compiled Numba function calls (not merely declares)."""
    ir = "".join(dispatcher.inspect_llvm(sig) for sig in dispatcher.signatures)
    return set(re.findall(r"call [^@\n]*@(_ZGV\w+)\(", ir))


MODEL = """
import math

def z(u):
    return math.exp(math.sin(u**2) * math.log(u**2))
"""


def run_fresh(tmp_path, program: str, **env_vars: str) -> str:
    """Run ``program`` in a new Python process that can import ``model`` (``z``)
    and this checkout's symdiff, with its own kernel cache; its standard output."""
    _, env = fresh_process.project(tmp_path, {"model.py": MODEL})
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(program)],
        env=dict(env, **env_vars),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def each(x):
    return math.exp(x), math.log(abs(x) + 1e-3), math.sin(x), math.cos(x), math.tanh(x)


@needs_libmvec
def test_vectorized_loops_call_simd_transcendentals():
    vec = symdiff.vectorize(symdiff.grad(z))
    vec(np.linspace(0.5, 2.0, 100))
    calls = vector_calls(vec._current()[1].compiled)
    for name in ("exp", "log", "sin", "cos"):
        assert any(c.endswith(f"_{name}") for c in calls), (name, calls)


@needs_libmvec
def test_array_kernels_call_simd_transcendentals():
    def total(x):
        return np.sum(np.exp(np.sin(x)))

    g = symdiff.grad(total)
    g(np.linspace(0.0, 1.0, 9))
    calls = vector_calls(g.kernel.compiled)
    assert any(c.endswith("_exp") for c in calls) and any(
        c.endswith("_cos") for c in calls
    )


@needs_libmvec
def test_the_users_own_numba_functions_are_not_affected():
    import numba

    symdiff.vectorize(symdiff.grad(z))(np.linspace(0.5, 2.0, 10))

    @numba.njit
    def mine(u, out):
        for i in range(u.shape[0]):
            out[i] = math.exp(u[i])

    mine(np.ones(10), np.empty(10))
    assert vector_calls(mine) == set()


def test_simd_results_are_within_a_few_ulp_of_scalar_libm():
    """libmvec promises at most 4 ulp; every elementary function, over wide ranges."""
    x = np.concatenate(
        [np.linspace(-40.0, 40.0, 40_001), np.geomspace(1e-300, 1e300, 2_001)]
    )
    scalar = symdiff.jit(each)  # scalar libm, with IEEE overflow to inf
    got = symdiff.vectorize(scalar)(x)
    want = np.array([scalar(float(v)) for v in x]).T
    for g, w, name in zip(got, want, ("exp", "log", "sin", "cos", "tanh"), strict=True):
        finite = np.isfinite(w) & (w != 0)
        ulps = np.abs(g[finite] - w[finite]) / np.spacing(np.abs(w[finite]))
        assert ulps.max() <= 4, (name, ulps.max())
        np.testing.assert_array_equal(g[~finite], w[~finite])


def test_turned_off_the_loops_give_the_scalar_kernels_bits(tmp_path):
    program = """
        import re
        import numpy as np
        import symdiff, model
        u = np.linspace(0.1, 3.0, 1001)
        g = symdiff.grad(model.z)
        vec = symdiff.vectorize(g)
        got = vec(u)
        assert np.array_equal(got, [g(float(x)) for x in u])
        loop = vec._current()[1].compiled
        assert not re.search("_ZGV", loop.inspect_llvm(loop.signatures[0]))
        print("same bits")
        """
    assert "same bits" in run_fresh(tmp_path, program, SYMDIFF_VECTOR_MATH="0")


@needs_libmvec
def test_a_scalar_kernel_from_the_disk_cache_still_vectorises_in_a_loop(tmp_path):
    """The vectorize loop inlines the scalar kernel: its calls carry their libmvec
    variants in the cached code too (a fresh process, the kernel loaded from disk)."""
    program = r"""
        import re
        import numpy as np
        import symdiff, model
        g = symdiff.grad(model.z)
        g(0.7)  # the scalar kernel compiles (or loads) before the loop
        vec = symdiff.vectorize(g)
        vec(np.linspace(0.5, 2.0, 100))
        loop = vec._current()[1].compiled
        ir = loop.inspect_llvm(loop.signatures[0])
        print(sorted(set(re.findall(r"call [^@\n]*@_ZGV\w+_(\w+)\(", ir))))
        """
    for _ in range(2):  # compiled and cached, then loaded from the cache
        out = run_fresh(tmp_path, program)
        assert out.strip() == "['cos', 'exp', 'log', 'sin']", out
