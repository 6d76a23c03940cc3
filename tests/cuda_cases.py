"""The CUDA kernels the tests build: every transform with target="cuda" (called with
numbers: one thread) and every vectorizable transform under
``vectorize(..., target="cuda")``.

``tests/test_cuda.py`` runs each in Numba's CUDA simulator (or on a GPU) against
the CPU target, and compiles each to PTX in a process without the simulator
(``python tests/cuda_cases.py --ptx``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import symdiff


def smooth(x, y):
    v = x * x
    return math.exp(math.sin(v) * math.log(v)) + y * v


def z(u):
    return math.exp(math.sin(u**2) * math.log(u**2))


def piecewise(x, y):
    if x > 1.0:
        return math.log(x - 1.0) * y
    elif x < -1.0:
        return y / (x + 1.0)
    return x * x * y


def safe_sqrt(x):
    # the untaken branch is sqrt of a negative number: NaN if it leaked
    return math.sqrt(x) if x > 0 else 0.0


def polar(r, t):
    return r * math.cos(t), r * math.sin(t)


def powered(x, n: int):
    # an int parameter and a loop with a run-time trip count (no tape: the
    # body recomputes from the index)
    s = 0.0
    for k in range(n):
        s += math.sin(x * k) / (k + 1)
    return s + x**n


def relu_net(x, y):
    # seed 002's scalar 2-layer ReLU network
    h1 = max(0.0, 0.5 * x - 0.3 * y + 0.1)
    h2 = max(0.0, -0.2 * x + 0.8 * y - 0.4)
    h3 = max(0.0, 0.7 * x + 0.6 * y)
    return math.tanh(1.2 * h1 - 0.7 * h2 + 0.4 * h3 + 0.05)


def sign_and_size(x, y):
    return x > y, abs(x - y)


def kinks(x, y):
    # abs's derivative prints np.sign, and np.floor/np.ceil: NumPy calls that
    # numba-cuda cannot compile, replaced by inner helpers on CUDA
    return abs(x) * y + np.floor(x) * np.ceil(y) + math.copysign(x, y)


def extremes(x, y):
    # np.maximum/np.minimum pass a NaN on, np.fmax/np.fmin drop it: NumPy calls
    # that become inner helpers on CUDA
    return np.maximum(x, y), np.minimum(x, y), np.fmax(x, y), np.fmin(x, y)


def special(x, y):
    # lgamma/gamma print as math calls; their derivative (the digamma) is built
    # from other ops; np.logaddexp becomes an inner helper on CUDA
    return math.lgamma(x) * y + math.gamma(0.5 * y + 3.0) + np.logaddexp(x, y)


def truncated(x, y):
    # int(x): toward zero, slope 0 (NaN is left out: the CPU gives the x86
    # "integer indefinite", a GPU 0)
    return int(x) * y + x * y


def names(x, abs, range, cuda):
    # parameters named like builtins and the CUDA module
    return math.fabs(x) * abs + range * cuda if x > 0 else x * range


def numba(x):
    # a function named like a module the loop imports
    return x * x


RNG = np.random.default_rng(11)
XS = RNG.uniform(-3.0, 3.0, 37)
YS = RNG.uniform(-2.0, 2.0, 37)
POS = RNG.uniform(0.2, 2.5, 37)
XS_NAN = np.where(np.arange(37) % 3 == 0, np.nan, XS)
YS_NAN = np.where(np.arange(37) % 4 == 0, np.nan, YS)


@dataclass(frozen=True)
class Case:
    """A call of a CUDA transform, its CPU twin, and the transform holding the
    CUDA kernel (for PTX)."""

    id: str
    run: Callable[[str], Any]  # target -> the result of the call
    transform: Callable[[], Any]  # the object whose .ptx() is the kernel


def _call(make: Callable[[str], Any], *args: Any) -> Case:
    """A case calling ``make(target)(*args)``."""
    return Case("", lambda t: make(t)(*args), lambda: make("cuda"))


def _vec(make: Callable[[str], Any], *args: Any) -> Case:
    """A case calling ``vectorize(make(target), target=target)(*args)``."""

    def vec(t: str) -> Any:
        return symdiff.vectorize(make(t), target=t)

    return Case("", lambda t: vec(t)(*args), lambda: vec("cuda"))


def _functional(kind: str, fun: Callable[..., Any], run: Callable[[str], Any]) -> Case:
    """A case for jvp/vjp/hvp: the API caches the transform it runs."""
    from symdiff.api import _cached, _given_args
    from symdiff.transforms import Spec

    every = _given_args(fun, fun.__code__.co_argcount)  # the cases give them all
    return Case("", run, lambda: _cached(fun, Spec(kind, every), "cuda"))


def _named(**cases: Case) -> list[Case]:
    return [Case(k, c.run, c.transform) for k, c in cases.items()]


grad_xy = lambda t: symdiff.grad(smooth, argnums=(0, 1), target=t)  # noqa: E731

CASES = _named(
    # -- transforms called with numbers (one CUDA thread) ---------------------------
    grad=_call(grad_xy, 1.3, 0.4),
    grad_int_argnums=_call(lambda t: symdiff.grad(z, target=t), 0.7),
    value_and_grad=_call(
        lambda t: symdiff.value_and_grad(piecewise, argnums=(0, 1), target=t), 2.5, -0.5
    ),
    jit_loop_int_argument=_call(lambda t: symdiff.jit(powered, target=t), 0.9, 6),
    grad_loop=_call(lambda t: symdiff.grad(powered, target=t), 0.9, 6),
    jacobian=_call(
        lambda t: symdiff.jacobian(polar, argnums=(0, 1), target=t), 1.5, 0.3
    ),
    hessian=_call(
        lambda t: symdiff.hessian(smooth, argnums=(0, 1), target=t), 1.3, 0.4
    ),
    bool_output=_call(lambda t: symdiff.jit(sign_and_size, target=t), 1.0, 2.0),
    jvp=_functional(
        "jvp", polar, lambda t: symdiff.jvp(polar, (1.5, 0.3), (1.0, 0.5), target=t)
    ),
    vjp=_functional(
        "vjp", smooth, lambda t: symdiff.vjp(smooth, 1.3, 0.4, target=t)[1](2.0)
    ),
    hvp=_functional(
        "hvp",
        smooth,
        lambda t: symdiff.hvp(smooth, (1.3, 0.4), (1.0, -1.0), target=t),
    ),
    # -- vectorize(target="cuda"): one thread per element -----------------------------
    vec_grad=_vec(grad_xy, POS, YS),
    vec_grad_broadcast_scalar=_vec(grad_xy, POS, 0.25),
    vec_grad_row_and_column=_vec(grad_xy, POS[:5, None], YS[None, :7]),
    vec_grad_seed004=_vec(lambda t: symdiff.grad(z), POS),
    vec_value_and_grad_branches=_vec(
        lambda t: symdiff.value_and_grad(piecewise, argnums=(0, 1)), XS, YS
    ),
    vec_grad_no_nan_from_untaken_branch=_vec(lambda t: symdiff.grad(safe_sqrt), XS),
    vec_grad_relu_network=_vec(
        lambda t: symdiff.grad(relu_net, argnums=(0, 1)), XS, YS
    ),
    vec_jit=_vec(lambda t: symdiff.jit(smooth), POS, YS),
    vec_plain_function=_vec(lambda t: polar, POS, XS),
    vec_jacobian=_vec(lambda t: symdiff.jacobian(polar, argnums=(0, 1)), POS, XS),
    vec_hessian=_vec(lambda t: symdiff.hessian(smooth, argnums=(0, 1)), POS, YS),
    vec_grad_loop_int_argument=_vec(
        lambda t: symdiff.grad(powered), POS, np.arange(37) % 5
    ),
    vec_bool_output=_vec(lambda t: symdiff.jit(sign_and_size), XS, YS),
    vec_grad_numpy_helpers=_vec(lambda t: symdiff.grad(kinks, argnums=(0, 1)), XS, YS),
    vec_jit_numpy_helpers=_vec(lambda t: symdiff.jit(kinks), XS * 2.5, YS * 2.5),
    grad_numpy_helpers=_call(
        lambda t: symdiff.grad(kinks, argnums=(0, 1), target=t), -1.5, 0.5
    ),
    vec_jit_nan_extremes=_vec(lambda t: symdiff.jit(extremes), XS_NAN, YS_NAN),
    vec_jacobian_extremes=_vec(
        lambda t: symdiff.jacobian(extremes, argnums=(0, 1)), XS, YS
    ),
    vec_grad_special_functions=_vec(
        lambda t: symdiff.grad(special, argnums=(0, 1)), XS, YS
    ),
    vec_jit_special_functions_nan=_vec(lambda t: symdiff.jit(special), XS_NAN, YS_NAN),
    vec_value_and_grad_int=_vec(
        lambda t: symdiff.value_and_grad(truncated, argnums=(0, 1)), XS * 3.0, YS
    ),
    vec_grad_parameter_names=_vec(
        lambda t: symdiff.grad(names, argnums=(0, 1, 2, 3)), XS, YS, POS, 2.0
    ),
    vec_function_named_numba=_vec(lambda t: symdiff.grad(numba), XS),
)


#: Every CUDA kernel launched while recording (see ``record_launches``):
#: (name, source, numba-cuda signature).
LAUNCHED: set[tuple[str, str, str]] = set()


def record_launches() -> Callable[[], None]:
    """Record each CUDA launch in LAUNCHED from now on; returns the undo."""
    from symdiff.backend.cuda import CudaLoop, signature

    run = CudaLoop.run

    def recording(
        self: CudaLoop,
        size: int,
        arrays: list[Any],
        out_dtypes: list[Any],
        given: list[Any] | None = None,
    ) -> list[Any]:
        types = [np.dtype(a.dtype) for a in arrays] + [np.dtype(t) for t in out_dtypes]
        LAUNCHED.add((self.name, self.source, signature(types)))
        return run(self, size, arrays, out_dtypes, given)

    CudaLoop.run = recording  # type: ignore[method-assign]

    def undo() -> None:
        CudaLoop.run = run  # type: ignore[method-assign]

    return undo


def launched_kernels() -> list[dict[str, str]]:
    """The recorded launches, once each, in a stable order."""
    return [
        {"name": n, "source": src, "signature": sig} for n, src, sig in sorted(LAUNCHED)
    ]


def compile_to_ptx(kernels: list[dict[str, str]]) -> list[tuple[str, str, int, str]]:
    """Each kernel compiled to PTX (numba-cuda, no GPU, no simulator):
    (name, signature, PTX length, its ``.target`` line)."""
    from symdiff.backend.cuda import CudaLoop, load

    out = []
    for k in kernels:
        loop = CudaLoop(k["name"], k["source"], load(k["source"], k["name"]))
        ptx = loop.ptx(k["signature"])
        assert ".entry" in ptx, k["name"]
        target = next(line for line in ptx.splitlines() if line.startswith(".target"))
        out.append((k["name"], k["signature"], len(ptx), target))
    return out


def compile_programs_to_ptx(
    kernels: list[dict[str, str]],
) -> list[tuple[str, str, int, str]]:
    """The kernels of array programs (tests/test_cuda_arrays.py), each compiled to
    PTX for a recorded signature: (name, signature, PTX length, ``.target`` line)."""
    from symdiff.backend.cuda import load

    out = []
    for k in kernels:
        host = load(k["source"], k["host"])
        ptx = host.__globals__[k["name"]].ptx(k["signature"])
        assert ".entry" in ptx, k["name"]
        target = next(line for line in ptx.splitlines() if line.startswith(".target"))
        out.append((k["name"], k["signature"], len(ptx), target))
    return out


def compiled_in_subprocess(
    mode: str, kernels: list[dict[str, str]], folder: Path
) -> None:
    """Compile ``kernels`` to PTX in a process without the simulator (``mode``:
    ``--ptx`` for vectorize's kernels, ``--program-ptx`` for array programs'), and
    check that each gave PTX for an ``sm_`` target."""
    import json
    import os
    import subprocess

    path = folder / "kernels.json"
    path.write_text(json.dumps(kernels))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    proc = subprocess.run(
        [sys.executable, __file__, mode, str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert len(report) == len(kernels)
    assert all(n > 1000 and t.startswith(".target sm_") for _, _, n, t in report)


if __name__ == "__main__":
    import json

    modes = {"--ptx": compile_to_ptx, "--program-ptx": compile_programs_to_ptx}
    if len(sys.argv) != 3 or sys.argv[1] not in modes:
        sys.exit("usage: python tests/cuda_cases.py --ptx|--program-ptx KERNELS.json")
    kernels = json.loads(Path(sys.argv[2]).read_text())
    print(json.dumps(modes[sys.argv[1]](kernels)))
