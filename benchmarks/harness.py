"""Timing, tool loading, correctness checks and the results table.

Every measurement follows the same protocol (`Context.measure`): build the callable
(*setup*), call it once (*first call*: lazy JIT compilation or tracing happens here),
then time the steady state in rounds of calls with the garbage collector off, and
keep the **median** per-call time over the rounds.
"""

from __future__ import annotations

import gc
import importlib
import math
import statistics
import time
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Tools in the order they appear in the table.  ``numba`` is the hand-written
#: ``@njit`` gradient (or a hand-written NumPy one where Numba adds nothing).
TOOLS = ("symdiff", "numba", "numpy", "jax", "torch", "autograd", "sympy", "pytensor")

#: The module each tool needs.
MODULES = {
    "symdiff": "symdiff",
    "numba": "numba",
    "numpy": "numpy",
    "jax": "jax",
    "torch": "torch",
    "autograd": "autograd",
    "sympy": "sympy",
    "pytensor": "pytensor",
}

CANNOT_RUN = "cannot run yet"


@dataclass
class Row:
    """One (workload, case, tool) measurement; times in seconds, None if not taken."""

    tool: str
    workload: str = ""
    case: str = ""
    setup_s: float | None = None
    first_s: float | None = None
    grad_s: float | None = None
    fwd_s: float | None = None
    ops: str = ""
    note: str = ""
    status: str = "ok"  # ok | skipped | cannot-run | error
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def grad_over_fwd(self) -> float | None:
        if self.grad_s is None or not self.fwd_s:
            return None
        return self.grad_s / self.fwd_s


class Skip(Exception):
    """Raised by a tool implementation that does not apply (the reason is shown)."""


@dataclass
class Settings:
    quick: bool
    round_s: float  # a timing round lasts at least this long
    budget_s: float  # time spent on the steady state of one callable, roughly
    min_rounds: int
    max_rounds: int

    @classmethod
    def make(cls, quick: bool) -> Settings:
        if quick:
            return cls(True, 0.005, 0.15, 3, 7)
        return cls(False, 0.02, 1.0, 5, 21)


def _one_round(fn: Callable[..., Any], args: tuple[Any, ...], number: int) -> float:
    enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(number):
            fn(*args)
        return time.perf_counter() - t0
    finally:
        if enabled:
            gc.enable()


def versions_of(modules: dict[str, types.ModuleType | None]) -> dict[str, str]:
    from importlib import metadata

    out = {}
    for name, mod in modules.items():
        if mod is None:
            out[name] = "not installed"
            continue
        try:
            out[name] = metadata.version(MODULES[name])
        except metadata.PackageNotFoundError:
            out[name] = getattr(mod, "__version__", "?")
    return out


def pin_threads(modules: dict[str, Any]) -> None:
    """What the environment variables set in run.py cannot: torch's pools, and
    float64 in torch and JAX."""
    torch = modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:  # already set in this process
            pass
        torch.set_default_dtype(torch.float64)
    jax = modules.get("jax")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)


def _warm_up(tool: str, mod: Any) -> None:
    """Pay each library's one-off start-up cost (first JIT compilation in the
    process, backend initialisation) before anything is timed."""
    if tool == "numba":
        mod.njit(lambda x: x + 1.0)(1.0)
    elif tool == "symdiff":
        mod.grad(_warm_up_function)(1.0)
    elif tool == "jax":
        mod.jit(mod.grad(lambda x: x * x))(1.0).block_until_ready()
    elif tool == "torch":
        t = mod.tensor(1.0, dtype=mod.float64, requires_grad=True)
        (t * t).backward()
    elif tool == "pytensor":
        pt = importlib.import_module("pytensor.tensor")
        x = pt.dscalar()
        mod.function([x], mod.grad(x * x, x))(1.0)
    elif tool == "sympy":
        x = mod.Symbol("x")
        mod.lambdify([x], mod.diff(mod.sin(x), x), cse=True)(1.0)
    elif tool == "autograd":
        mod.grad(lambda x: x * x)(1.0)


def _warm_up_function(x):
    return x * x


class Context:
    """What every workload gets: settings, the loaded tools, the timing protocol."""

    def __init__(self, settings: Settings, wanted: Iterable[str]):
        self.settings = settings
        self.modules: dict[str, types.ModuleType | None] = {}
        self.missing: dict[str, str] = {}
        for tool in wanted:
            try:
                self.modules[tool] = importlib.import_module(MODULES[tool])
            except Exception as exc:  # ImportError, or a broken install
                self.modules[tool] = None
                self.missing[tool] = f"{type(exc).__name__}: {exc}".splitlines()[0]
        pin_threads(self.modules)
        self.warm_up_s: dict[str, float] = {}
        for tool, mod in self.modules.items():
            if mod is None:
                continue
            t0 = time.perf_counter()
            try:
                _warm_up(tool, mod)
            except Exception as exc:
                self.modules[tool] = None
                self.missing[tool] = f"broken: {type(exc).__name__}: {exc}"[:200]
            self.warm_up_s[tool] = time.perf_counter() - t0
        self._reference: Any = None
        self.last_min = math.nan

    @property
    def quick(self) -> bool:
        return self.settings.quick

    def has(self, tool: str) -> bool:
        return self.modules.get(tool) is not None

    # -- timing -----------------------------------------------------------------------
    def _calibrate(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple:
        """Calls per round so that a round lasts at least ``round_s``."""
        number = 1
        t = _one_round(fn, args, number)
        while t < self.settings.round_s and number < 10**7:
            grow = self.settings.round_s / max(t, 1e-9) * 1.3
            number = int(number * min(max(grow, 2.0), 100.0))
            t = _one_round(fn, args, number)
        return number, t

    def steady(self, fn: Callable[..., Any], args: tuple[Any, ...] = ()) -> float:
        """Median per-call time of ``fn(*args)`` over several rounds."""
        s = self.settings
        number, t = self._calibrate(fn, args)
        rounds = int(s.budget_s / max(t, 1e-12))
        rounds = max(s.min_rounds, min(s.max_rounds, rounds))
        if t > 1.0:  # slow calls: a few rounds are enough
            rounds = min(rounds, 3)
        times = [_one_round(fn, args, number) / number for _ in range(rounds)]
        self.last_min = min(times)
        return statistics.median(times)

    def paired(
        self, fns: list[Callable[..., Any]], args: tuple[Any, ...]
    ) -> list[float]:
        """Each callable's time over the last one's, from interleaved rounds.

        The callables take turns, a round each, so a burst of load from other
        processes hits all of them alike; the ratio of each turn is kept and the
        median ratio returned.  Steadier than a ratio of two separate medians on a
        busy machine."""
        for fn in fns:
            fn(*args)  # compile first
        numbers = [self._calibrate(fn, args)[0] for fn in fns]
        ratios: list[list[float]] = [[] for _ in fns]
        for _ in range(self.settings.max_rounds):
            times = [
                _one_round(fn, args, n) / n for fn, n in zip(fns, numbers, strict=True)
            ]
            for i, t in enumerate(times):
                ratios[i].append(t / times[-1])
        return [statistics.median(r) for r in ratios]

    def measure(
        self,
        tool: str,
        make: Callable[[], tuple[Callable[..., Any], Callable[..., Any] | None]],
        args: tuple[Any, ...],
        note: str = "",
    ) -> Row:
        """Setup time of ``make()``, then first call and steady state of the gradient
        it returns (and of the forward pass, when it returns one)."""
        t0 = time.perf_counter()
        grad, fwd = make()
        setup = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = grad(*args)
        first = time.perf_counter() - t0
        row = Row(tool, setup_s=setup, first_s=first, note=note)
        row.grad_s = self.steady(grad, args)
        row.extra["grad_min_s"] = self.last_min
        if fwd is not None:
            fwd(*args)
            row.fwd_s = self.steady(fwd, args)
        self.check(row, out)
        return row

    # -- correctness ------------------------------------------------------------------
    def set_reference(self, value: Any) -> None:
        """The gradient every tool of the current case is compared with."""
        self._reference = None if value is None else flat(value)

    def check(self, row: Row, out: Any) -> None:
        got = flat(out)
        if self._reference is None:
            self._reference = got
            return
        want = self._reference
        if got.shape != want.shape:
            row.note = _join(row.note, f"MISMATCH: shape {got.shape} != {want.shape}")
            return
        scale = max(float(np.max(np.abs(want))), 1e-300) if want.size else 1.0
        err = float(np.max(np.abs(got - want))) / scale if want.size else 0.0
        if not err <= 1e-7:
            row.note = _join(row.note, f"MISMATCH: max rel. error {err:.1e}")


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b


def flat(value: Any) -> np.ndarray:
    """Any gradient (float, NumPy/JAX array, torch tensor, nested tuple/list/dict) as
    one float64 vector."""
    if isinstance(value, dict):
        value = [value[k] for k in sorted(value)]
    if isinstance(value, (tuple, list)):
        parts = [flat(v) for v in value]
        return np.concatenate(parts) if parts else np.zeros(0)
    if hasattr(value, "detach"):  # torch
        value = value.detach().cpu().numpy()
    return np.asarray(value, dtype=np.float64).ravel()


# -- cases and the driver ------------------------------------------------------------
#: A tool's implementation for one case: returns its row(s), or a string when the
#: tool cannot run the case (shown as a "cannot run yet" row, never dropped).
Impl = Callable[[Context], "Row | list[Row]"] | str


@dataclass
class Case:
    workload: str
    name: str
    tools: dict[str, Impl]
    reference: Callable[[], Any] | None = None  # the exact gradient, when cheap
    full_only: bool = False  # too slow for --quick


def _progress(message: str) -> None:
    import sys

    print(message, file=sys.stderr, flush=True)


def run_case(ctx: Context, case: Case, selected: Iterable[str]) -> list[Row]:
    """Every selected tool on one case, in table order; failures become rows."""
    selected = set(selected)
    ctx.set_reference(case.reference() if case.reference is not None else None)
    rows: list[Row] = []
    for tool in TOOLS:
        impl = case.tools.get(tool)
        if impl is None or tool not in selected:
            continue
        t0 = time.perf_counter()
        if isinstance(impl, str):
            new = [Row(tool, note=impl, status="cannot-run")]
        elif not ctx.has(tool):
            note = f"skipped: {tool} is not installed ({ctx.missing.get(tool, '')})"
            new = [Row(tool, note=note, status="skipped")]
        else:
            try:
                result = impl(ctx)
                new = result if isinstance(result, list) else [result]
            except Skip as exc:
                new = [Row(tool, note=f"skipped: {exc}", status="skipped")]
            except Exception as exc:
                message = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
                new = [Row(tool, note=f"error: {message}", status="error")]
        for row in new:
            row.workload, row.case = case.workload, case.name
        rows.extend(new)
        _progress(
            f"  {case.workload}/{case.name} {tool}: {time.perf_counter() - t0:.1f} s"
        )
    return rows


# -- one namespace of elementary functions per tool ----------------------------------
def namespace(ctx: Context | None, tool: str) -> types.SimpleNamespace:
    """exp, log, sin, cos, sqrt, relu, sum, sum_axis, max_keep, einsum for ``tool``,
    so that each function below is written once for every framework.  (``ctx`` may
    be None for NumPy.)"""
    if tool in ("numpy", "autograd", "jax"):
        if tool == "numpy":
            m: Any = np
        elif tool == "autograd":
            m = importlib.import_module("autograd.numpy")
        else:
            m = importlib.import_module("jax.numpy")
        return types.SimpleNamespace(
            exp=m.exp,
            log=m.log,
            sin=m.sin,
            cos=m.cos,
            sqrt=m.sqrt,
            relu=lambda a: m.maximum(a, 0.0),
            sum=m.sum,
            sum_axis=lambda a, axis: m.sum(a, axis=axis),
            max_keep=lambda a, axis: m.max(a, axis=axis, keepdims=True),
            einsum=m.einsum,
        )
    assert ctx is not None
    if tool == "torch":
        torch = ctx.modules["torch"]
        return types.SimpleNamespace(
            exp=torch.exp,
            log=torch.log,
            sin=torch.sin,
            cos=torch.cos,
            sqrt=torch.sqrt,
            relu=torch.relu,
            sum=torch.sum,
            sum_axis=lambda a, axis: torch.sum(a, dim=axis),
            max_keep=lambda a, axis: torch.amax(a, dim=axis, keepdim=True),
            einsum=torch.einsum,
        )
    if tool == "pytensor":
        pt = importlib.import_module("pytensor.tensor")
        return types.SimpleNamespace(
            exp=pt.exp,
            log=pt.log,
            sin=pt.sin,
            cos=pt.cos,
            sqrt=pt.sqrt,
            relu=lambda a: pt.maximum(a, 0.0),
            sum=pt.sum,
            sum_axis=lambda a, axis: pt.sum(a, axis=axis),
            max_keep=lambda a, axis: pt.max(a, axis=axis, keepdims=True),
            einsum=pt.einsum,
        )
    if tool == "sympy":
        sp = ctx.modules["sympy"]
        return types.SimpleNamespace(
            exp=sp.exp,
            log=sp.log,
            sin=sp.sin,
            cos=sp.cos,
            sqrt=sp.sqrt,
            relu=lambda a: sp.Max(a, 0),
        )
    raise ValueError(f"no namespace for {tool}")
