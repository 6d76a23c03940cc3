"""One transform of one function for one argument signature: IR to kernel.

This is the pipeline in one place: trace (frontend) -> differentiate (ad) ->
schedule (opt) -> print (backend) -> compile (backend.jit).
"""

from __future__ import annotations

import dataclasses
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from symdiff import __version__
from symdiff.ad.loops import CHECKPOINT
from symdiff.backend.cuda_program import MODULE_NAMES
from symdiff.backend.jit import compile_kernel, load_source, python_kernel
from symdiff.backend.loops import ArrayKernel, has_arrays
from symdiff.backend.printer import Printer
from symdiff.backend.warm import WarmStart
from symdiff.frontend.lower import Traced, deep_nesting, trace
from symdiff.frontend.values import STATIC, static_value
from symdiff.ir.listing import listing
from symdiff.ir.loops import merge_extensions
from symdiff.ir.node import Node, topological
from symdiff.opt.schedule import Schedule, schedule
from symdiff.transforms import PLANNERS, Plan, Spec, leaves, rebuild


@dataclass
class Kernel:
    """A generated kernel and everything about how it was made."""

    name: str
    source: str
    traced: Traced
    plan: Plan
    schedule: Schedule
    outputs: list[Node]
    output_names: list[str]
    python: Callable[..., Any]
    #: What calls run: the compiled kernel, or on a warm start a
    #: :class:`~symdiff.backend.warm.WarmStart` until Numba has loaded it.
    entry: Callable[..., Any]
    timings: dict[str, float] = field(default_factory=dict)
    #: An array program printed for CUDA (a host function launching kernels).
    device: bool = False

    @property
    def compiled(self) -> Callable[..., Any]:
        """The compiled kernel (Numba's dispatcher for the CPU targets); on a warm
        start, waits for Numba to load it."""
        if isinstance(self.entry, WarmStart):
            return self.entry.dispatcher()
        return self.entry

    @property
    def returns(self) -> Any:
        return self.plan.returns

    @property
    def mode(self) -> str | None:
        return self.plan.mode

    @property
    def ir(self) -> str:
        return listing(
            self.outputs, self.output_names, self.plan.hints, self.plan.params
        )

    @property
    def op_counts(self) -> dict[str, int]:
        return self.schedule.op_counts()


def _one_loop_each(plan: Plan) -> Plan:
    """Where a derivative extends a loop (its tangent, its tape), run only the
    extended loop: the primal results are read from it too."""
    roots = [*leaves(plan.returns), *plan.primal]
    if not any(n.op == "loop" for n in topological(roots)):
        return plan
    hints = dict(plan.hints)
    merged = merge_extensions(roots, hints)
    if all(a is b for a, b in zip(roots, merged, strict=True)):
        return plan
    new = dict(zip(roots, merged, strict=True))

    def rebuild(value: Any) -> Any:
        if isinstance(value, tuple):
            return tuple(rebuild(v) for v in value)
        return new.get(value, value)

    return dataclasses.replace(
        plan,
        returns=rebuild(plan.returns),
        primal=[new.get(n, n) for n in plan.primal],
        hints=hints,
    )


def _shown(value: object) -> str:
    """A static argument as the header shows it: ``'mean'``, ``None``, ``np.tanh``."""
    if isinstance(value, str) or value is None:
        return repr(value)
    if not callable(value) or not hasattr(value, "__name__"):
        return f"<{type(value).__qualname__} object>"
    module = getattr(value, "__module__", None) or ""
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", "?")
    return (
        f"np.{name}" if module == "numpy" or type(value).__name__ == "ufunc" else name
    )


def build_kernel(
    fun: types.FunctionType,
    spec: Spec,
    dtypes: tuple[str, ...],
    jit: bool = True,
    parallel: bool = False,
    device: bool = False,
) -> Kernel:
    """Trace, differentiate, schedule, print and (lazily) compile one kernel.
    ``device``: for the CUDA target, where an array program is printed as a host
    function launching CUDA kernels (:mod:`symdiff.backend.cuda_program`); a
    function of numbers stays one scalar kernel (run per CUDA thread)."""
    with deep_nesting():
        return _build_kernel(fun, spec, dtypes, jit, parallel, device)


def _build_kernel(
    fun: types.FunctionType,
    spec: Spec,
    dtypes: tuple[str, ...],
    jit: bool,
    parallel: bool,
    device: bool,
) -> Kernel:
    t0 = time.perf_counter()
    tracer = getattr(fun, "__symdiff_trace__", None)
    traced = tracer(dtypes) if tracer is not None else trace(fun, dtypes)
    t1 = time.perf_counter()
    token = CHECKPOINT.set(spec.checkpoint)
    try:
        plan = _one_loop_each(PLANNERS[spec.kind](traced, spec))
    finally:
        CHECKPOINT.reset(token)
    outputs = leaves(plan.returns)
    names = leaves(plan.names)
    # the user's `raise`s that depend on values: their conditions are computed
    # with the rest, and tested before the kernel returns
    raises = [
        r for r in traced.raises if not (r.cond.op == "const" and not r.cond.value)
    ]
    roots = [*outputs, *(r.cond for r in raises)]
    sched = schedule(
        plan.params,
        roots,
        plan.hints,
        [*names, *("failed" for _ in raises)],
        first=[*plan.primal, *(r.cond for r in raises)],
    )
    t2 = time.perf_counter()
    base = traced.name if traced.name.isidentifier() else "f"
    name = base if spec.kind == "jit" else f"{base}_{spec.kind}"
    if name in MODULE_NAMES | {"numba"}:
        # the modules' globals (``math``, ``np``, ``numba``, CUDA's) keep their names
        name += "_host" if device else f"_{spec.kind}"
    sections: dict[int, str] = {}
    if plan.primal:
        forward = set(topological([*plan.primal, *(r.cond for r in raises)]))
        backward = [i for i, (_, n) in enumerate(sched.statements) if n not in forward]
        if backward:
            forward_mode = spec.kind == "jvp" or plan.mode == "forward"
            sections[backward[0]] = "tangents" if forward_mode else "backward"
    header = [
        f"generated by symdiff {__version__}: {spec.kind} of `{traced.name}` "
        f"({traced.location})"
    ]
    if plan.wrt:
        header.append(f"with respect to: {', '.join(plan.wrt)}")
    if plan.mode:
        header.append(f"mode: {plan.mode}")
    fixed = [
        f"{p.attrs[1]} = {_shown(static_value(d))}"
        for p, d in zip(plan.params, dtypes, strict=False)
        if d.startswith(STATIC)
    ]
    if fixed:  # the kernel takes a placeholder for these
        header.append(f"specialised to: {', '.join(fixed)}")
    graph = topological([*roots, *plan.primal])
    device = device and (
        any(p.shape for p in plan.params) or any(n.shape for n in graph)
    )
    # a length (``np.zeros(n)`` summed away into ``n * x``) is printed by the
    # array generator, which names lengths
    lengths = any(n.op == "dim" for n in graph)
    if (
        has_arrays(sched.nodes)
        or lengths
        or any(p.shape for p in plan.params)
        or device
        or traced.checks  # made when the kernel runs: by the array generator
        or plan.checks
    ):
        source = ArrayKernel(
            plan.params,
            roots,
            plan.hints,
            [*names, *("failed" for _ in raises)],
            plan.primal,
            traced.checks + plan.checks,
            parallel=parallel,
            device=device,
        ).source(
            name,
            plan.returns,
            header,
            {0: next(iter(sections.values()))} if sections else {},
            raises,
        )
        loops = True
    else:
        source = Printer().function(name, sched, plan.returns, header, sections, raises)
        loops = False
    if device:
        from symdiff.backend import cuda

        python = cuda.load(source, name)
        entry = cuda.host_call(python, [p.dtype for p in plan.params])
    elif jit:
        python, entry = compile_kernel(
            source,
            name,
            parallel=parallel and loops,  # straight-line code has no loop to share
            loops=loops,
            warm_types=None if loops else _output_types(plan),
        )
    else:
        python = load_source(source, name)
        entry = python_kernel(load_source(source, name, ieee_math=True))
    t3 = time.perf_counter()
    timings = {"trace": t1 - t0, "differentiate+schedule": t2 - t1, "print": t3 - t2}
    kernel = Kernel(
        name,
        source,
        traced,
        plan,
        sched,
        outputs,
        names,
        python,
        entry,
        timings,
        device,
    )
    if isinstance(entry, WarmStart):
        entry.when_loaded(lambda dispatcher: setattr(kernel, "entry", dispatcher))
    return kernel


_PYTHON_TYPES = {"float64": float, "bool": bool}


def _output_types(plan: Plan) -> Any:
    """For a kernel of floats: the Python type of each output as Numba returns it
    (the structure of the returns), None if a parameter or an output is not a
    float or a bool (no warm start: integers wrap in Numba, not in Python)."""
    if any(p.dtype != "float64" for p in plan.params):
        return None
    if any(n.dtype not in _PYTHON_TYPES for n in leaves(plan.returns)):
        return None
    return rebuild(plan.returns, lambda n: _PYTHON_TYPES[n.dtype])
