"""Warm start (symdiff/backend/warm.py, symdiff/backend/exact.py): on a cache hit a
straight-line kernel's first calls run as exact plain Python while Numba loads.

The process tests run user code in fresh processes against their own cache folder:
a warm hit returns its first value before Numba (or SciPy, or SymPy) is imported,
that value is the Numba kernel's, and later calls go through Numba.  The in-process
tests check the plain-Python version against the Numba kernel, bit for bit, on the
corpus and on the rewritten operations' edge cases.  No assertion is about time.
"""

import json
import math
import os
import random
import struct
import subprocess
import sys
import threading

import numba
import numpy as np
import pytest

import symdiff
from symdiff.backend import warm
from symdiff.backend.exact import ceil as exact_ceil
from symdiff.backend.exact import (
    exact_python,
    int_power,
    maximum,
    minimum,
    np_fmax,
    np_fmin,
    np_maximum,
    np_minimum,
    sign,
)
from symdiff.backend.exact import floor as exact_floor
from symdiff.kernel import _output_types
from tests import fresh_process
from tests.corpus import CORPUS

MODEL = """
import math
import numpy as np
from helper import inner

def f(x, y):
    v = x * x
    return math.exp(math.sin(v) * math.log(v)) + inner(y, v)

def g(x):
    return 2.0 * math.log(x) + x

def h(x, y):
    return x * y ** 3

def s(x):
    return np.sum(x * x)
"""

HELPER = """
def inner(y, v):
    return y * v
"""

PROGRAM = """
import json, os, sys, threading
import symdiff
from symdiff.backend import warm
import model

def loaded():
    return sorted(m for m in ("numba", "scipy", "sympy") if m in sys.modules)

report = {}
scenario = sys.argv[1]
g = symdiff.value_and_grad(model.f, argnums=(0, 1))
value = g(1.3, 0.5)
report["value"] = repr(value)
report["loaded_at_first_value"] = loaded()
report["entry"] = type(g.kernel.entry).__name__
thread = warm.LOADER._thread
report["daemon"] = thread is None or thread.daemon
if scenario == "later":
    dispatcher = g.kernel.compiled  # waits for Numba
    report["later"] = repr(g(1.3, 0.5))
    report["dispatcher"] = type(dispatcher).__name__
    report["entry_after"] = type(g.kernel.entry).__name__
    report["fast_path_calls_numba"] = type(g).__call__.__globals__["_kernel"] is dispatcher
    report["hits"] = sum(dispatcher.stats.cache_hits.values())
    report["misses"] = sum(dispatcher.stats.cache_misses.values())
elif scenario == "ieee":
    d = symdiff.grad(model.g)
    report["ieee"] = repr(d(0.0))  # 2 / 0: Python raises, Numba returns inf
    report["loaded_after_ieee"] = loaded()
elif scenario == "errors":
    messages = []
    for args in ((b"a", 1.0), (1.0,), (True, 1.0)):
        try:
            g(*args)
        except Exception as exc:
            messages.append(f"{type(exc).__name__}: {exc}")
    report["errors"] = messages
elif scenario == "power":
    p = symdiff.grad(model.h, argnums=(0, 1))
    report["power"] = [repr(p(x, y)) for x, y in ((1.1, 0.7), (-3.3, 1e-5), (2.0, 1e100))]
elif scenario == "array":
    import numpy as np
    # builds a kernel (importing Numba) while the thread may be importing it
    report["array"] = symdiff.grad(model.s)(np.array([1.0, 2.0])).tolist()
elif scenario == "exit_while_loading":
    while "numba" not in sys.modules:  # the thread has begun importing Numba
        threading.Event().wait(0.001)
elif scenario == "fork":
    pid = os.fork()
    if pid == 0:
        ok = g(0.7, 0.2) == g.kernel.compiled(0.7, 0.2)
        os._exit(0 if ok else 3)
    report["child"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
print(json.dumps(report))
"""


@pytest.fixture
def project(tmp_path):
    return fresh_process.project(
        tmp_path, {"model.py": MODEL, "helper.py": HELPER, "run.py": PROGRAM}
    )


def run(project, scenario="first", **environ):
    work, env = project
    out = subprocess.run(
        [sys.executable, str(work / "run.py"), scenario],
        env=dict(env, **environ),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=work,
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_warm_hit_answers_before_numba_is_imported(project):
    cold = run(project, "later")
    assert cold["entry"] == "CPUDispatcher"
    assert "numba" in cold["loaded_at_first_value"]
    assert cold["misses"] == 1 and cold["hits"] == 0

    warm_run = run(project, "later")
    assert warm_run["loaded_at_first_value"] == []  # no Numba, SciPy or SymPy
    assert warm_run["entry"] == "WarmStart" and warm_run["daemon"]
    assert warm_run["value"] == cold["value"]  # the Numba kernel's value, bit for bit
    # Later calls: Numba's dispatcher, machine code loaded from the cache.
    assert warm_run["later"] == cold["value"]
    assert warm_run["dispatcher"] == warm_run["entry_after"] == "CPUDispatcher"
    assert warm_run["fast_path_calls_numba"]
    assert warm_run["hits"] == 1 and warm_run["misses"] == 0


@pytest.mark.slow
def test_cache_off_and_warm_start_off_load_numba_first(project):
    off = run(project, "first", SYMDIFF_CACHE="0")
    assert "numba" in off["loaded_at_first_value"] and off["entry"] == "CPUDispatcher"
    run(project)  # fills the cache
    no_warm = run(project, "later", SYMDIFF_WARM_START="0")
    assert "numba" in no_warm["loaded_at_first_value"]
    assert no_warm["entry"] == "CPUDispatcher"
    assert no_warm["hits"] == 1 and no_warm["value"] == off["value"]


@pytest.mark.slow
def test_what_python_cannot_answer_waits_for_numba(project):
    cold = run(project, "ieee")
    warm_run = run(project, "ieee")
    assert warm_run["loaded_at_first_value"] == []
    assert warm_run["ieee"] == cold["ieee"] == "inf"
    assert "numba" in warm_run["loaded_after_ieee"]


@pytest.mark.slow
def test_integer_powers_and_errors_are_the_same_warm_and_cold(project):
    for scenario in ("power", "errors"):
        cold = run(project, scenario)
        warm_run = run(project, scenario)
        assert warm_run["entry"] == "WarmStart"
        assert {
            k: v
            for k, v in warm_run.items()
            if k not in ("entry", "loaded_at_first_value")
        } == {
            k: v for k, v in cold.items() if k not in ("entry", "loaded_at_first_value")
        }
    assert warm_run["errors"][0].startswith("ArgumentError: argument `x` of `f`")


@pytest.mark.slow
def test_editing_a_helper_is_a_cold_start(project):
    work, _ = project
    before = run(project)
    (work / "helper.py").write_text(HELPER.replace("y * v", "2.0 * y * v"))
    after = run(project)
    assert after["entry"] == "CPUDispatcher" and after["value"] != before["value"]
    assert run(project)["entry"] == "WarmStart"


def test_a_new_kernel_while_the_thread_imports_numba(project):
    """Both threads importing Numba at once used to end, about one run in three,
    in Python's ``_DeadlockError`` (Numba's package imports are circular)."""
    run(project)
    for _ in range(3):
        report = run(project, "array")
        assert report["entry"] == "WarmStart" and report["array"] == [2.0, 4.0]


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["first", "exit_while_loading"])
def test_exit_during_the_load_is_clean(project, scenario):
    run(project)
    # run() asserts exit status 0 and nothing on stderr
    assert run(project, scenario)["entry"] == "WarmStart"


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_after_a_warm_start(project):
    run(project)
    assert run(project, "fork")["child"] == 0


# -- the plain-Python version against the Numba kernel, in this process -------------
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 1e-300, 1e300, 700.0, -745.0, 3.0]
SPECIAL += [math.inf, -math.inf, math.nan, 1e16, -7.25]


def same(a, b):
    """Equal bit for bit, NaN payloads aside (LLVM does not define them either)."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            isinstance(a, tuple)
            and isinstance(b, tuple)
            and len(a) == len(b)
            and all(same(x, y) for x, y in zip(a, b))
        )
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    return a == b


TRANSFORMS = {
    "jit": lambda f, n: symdiff.jit(f),
    "grad": lambda f, n: symdiff.grad(f, argnums=tuple(range(n))),
    "value_and_grad": lambda f, n: symdiff.value_and_grad(f, argnums=tuple(range(n))),
    "hessian": lambda f, n: symdiff.hessian(f, argnums=tuple(range(n))),
    "jacobian": lambda f, n: symdiff.jacobian(f, argnums=tuple(range(n))),
}
FLOAT_CASES = {f: p for f, p in CORPUS.items() if all(type(v) is float for v in p)}


@pytest.mark.parametrize("kind", sorted(TRANSFORMS))
def test_exact_python_matches_the_numba_kernel_on_the_corpus(kind):
    rng = random.Random(kind)
    refused = set()
    for fn, point in FLOAT_CASES.items():
        compiled = TRANSFORMS[kind](fn, len(point))
        try:
            compiled(*point)
        except symdiff.SymdiffError:
            continue  # e.g. the gradient of a function with several outputs
        kernel = compiled.kernel
        types = _output_types(kernel.plan)
        python = exact_python(kernel.source, kernel.name, types)
        if python is None or types is None:
            refused.add(fn.__name__)
            continue
        points = [point]
        for _ in range(60):
            points.append(
                tuple(
                    rng.choice(SPECIAL) if rng.random() < 0.3 else rng.uniform(-5, 5)
                    for _ in point
                )
            )
        for args in points:
            try:
                got = python(*args)
            except Exception:
                continue  # Numba answers these calls
            assert same(got, kernel.compiled(*args)), (fn.__name__, args)
    # x ** 0.5, x ** y: Numba's pow; math.floor is an int, which wraps in Numba
    assert refused <= {"roots", "power_var", "copysign_floor"}


@pytest.mark.parametrize(
    "body",
    [
        "return x ** 0.5",
        "return x ** y",
        "return 2.0 ** x",
        "return x % y",
        "return x // y",
        "return math.hypot(x, y)",
        "return math.gamma(x)",
        "return 2 * 3 + x",
        "return -2 * 3 + x",
        "return 9007199254740993 * x",
        "return np.exp(x)",
        "return x if x > 0 else None",
    ],
)
def test_refused_where_python_could_differ(body):
    source = f"import math\nimport numpy as np\n\n\ndef k(x, y):\n    {body}\n"
    assert exact_python(source, "k") is None


def test_accepted_source_is_rewritten_to_numbas_operations():
    source = (
        "import math\nimport numpy as np\n\n\ndef k(x, y):\n"
        "    t0 = x ** 3 + max(x, 0) - np.sign(y)\n"
        "    return t0 * -2, math.inf if x < 1 else np.floor(y)\n"
    )
    python = exact_python(source, "k")
    assert python is not None
    assert python(-1.5, -0.0) == (
        ((-1.5) * (-1.5) * (-1.5) + 0.0 + 0.0) * -2.0,
        math.inf,
    )
    # max(x, 0) is Numba's float max; -0 stays an integer zero, as in Numba
    zeros = exact_python("def k(x):\n    return max(x, 0), -0 * x, -(x > 0)\n", "k")
    numba_zeros = _numba_of("max(x, 0), -0 * x, -(x > 0)", "x")
    for x in (-1.5, 2.0):
        assert same(zeros(x), numba_zeros(x))


def _numba_of(expression, *names):
    namespace = {"math": math, "np": np}
    exec(f"def k({', '.join(names)}):\n    return {expression}\n", namespace)
    return numba.njit(fastmath=False, error_model="numpy")(namespace["k"])


def test_integer_powers_are_numbas_products():
    rng = random.Random(0)
    xs = [rng.uniform(-3, 3) for _ in range(200)] + [v for v in SPECIAL if v == v]
    for n in [*range(-9, 10), 16, 17, 63, 1000]:
        kernel = _numba_of(f"x ** {n}", "x")
        for x in xs:
            try:
                got = int_power(x, n)
            except ZeroDivisionError:
                continue  # 0 ** -n: Numba answers
            assert same(got, kernel(x)), (x, n)


def test_extremes_sign_floor_ceil_are_numbas():
    values = [0.0, -0.0, 0.3, -0.3, 1.5, -1.5, 2.0, -2.0, math.inf, -math.inf, math.nan]
    values += [4503599627370497.0, -4503599627370497.5]
    pairs = [
        (minimum, _numba_of("min(x, y)", "x", "y")),
        (maximum, _numba_of("max(x, y)", "x", "y")),
        (np_maximum, _numba_of("np.maximum(x, y)", "x", "y")),
        (np_minimum, _numba_of("np.minimum(x, y)", "x", "y")),
        (np_fmax, _numba_of("np.fmax(x, y)", "x", "y")),
        (np_fmin, _numba_of("np.fmin(x, y)", "x", "y")),
    ]
    for x in values:
        for y in values:
            for ours, theirs in pairs:
                assert same(ours(x, y), theirs(x, y)), (ours.__name__, x, y)
    for ours, expression in (
        (sign, "np.sign(x)"),
        (exact_floor, "np.floor(x)"),
        (exact_ceil, "np.ceil(x)"),
    ):
        theirs = _numba_of(expression, "x")
        for x in values:
            assert same(ours(x), theirs(x)), (expression, x)
    assert same(maximum(-1.0, 0), 0.0)  # an int literal meets a float: Numba's float


def test_straight_line_kernels_call_scalar_libm_only():
    """The plain-Python version calls the libm functions the kernel calls: no
    vector library in straight-line kernels (symdiff/backend/jit.py), including
    when a vectorised loop compiled the kernel first."""
    import re

    def calls(dispatcher):
        ir = "".join(dispatcher.inspect_llvm(sig) for sig in dispatcher.signatures)
        return set(re.findall(r"call [^@]*@(_ZGV\w+)", ir))  # not declarations

    def pair(a, b):
        return math.exp(a * 2.0) * math.sin(b) + math.exp(b * 2.0) * math.cos(a)

    g = symdiff.value_and_grad(pair, argnums=(0, 1))
    symdiff.vectorize(g)(np.linspace(0.1, 1.0, 64), np.linspace(1.0, 2.0, 64))
    g(0.3, 0.4)
    assert calls(g.kernel.compiled) == set()


# -- WarmStart itself, with a stand-in for Numba -------------------------------------
def test_warm_start_switches_to_the_dispatcher_once_loaded():
    release = threading.Event()
    dispatcher_calls = []

    def dispatcher(*args):
        dispatcher_calls.append(args)
        return "numba"

    def load():
        release.wait(60)
        return dispatcher

    def python(x):
        return 1.0 / x

    start = warm.WarmStart(python, load)
    seen = []
    start.when_loaded(seen.append)
    assert start(2.0) == 0.5 and start(np.float64(4.0)) == 0.25
    assert not start.loaded and dispatcher_calls == []
    release.set()
    assert start(0.0) == "numba"  # 1 / 0 raises in Python: the dispatcher answers
    assert start.loaded and seen == [dispatcher]
    assert start(2.0) == "numba" and start(1) == "numba"
    start.when_loaded(seen.append)  # already loaded: called at once
    assert seen == [dispatcher, dispatcher] and len(dispatcher_calls) == 3


def test_a_failed_load_is_reported_at_the_call():
    def load():
        raise RuntimeError("no Numba here")

    start = warm.WarmStart(lambda x: x, load)
    with pytest.raises(RuntimeError, match="no Numba here"):
        start("not a float")
