"""One transform of one function for one argument signature: IR to kernel.

This is the pipeline in one place: trace (frontend) -> differentiate (ad) ->
schedule (opt) -> print (backend) -> compile (backend.jit).
"""

from __future__ import annotations

import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from symdiff import __version__
from symdiff.ad import vjp_graph
from symdiff.backend.jit import load_source, njit, python_kernel
from symdiff.backend.printer import Printer
from symdiff.errors import OutputError
from symdiff.frontend.lower import Traced, trace
from symdiff.frontend.values import Static, Value
from symdiff.ir.build import ONE, to_float
from symdiff.ir.listing import listing
from symdiff.ir.node import Node, topological
from symdiff.opt.schedule import Schedule, schedule


@dataclass(frozen=True)
class Spec:
    """What to build: ``kind`` is ``"jit"``, ``"grad"`` or ``"value_and_grad"``."""

    kind: str
    argnums: int | tuple[int, ...] = 0
    has_aux: bool = False

    @property
    def wrt(self) -> tuple[int, ...]:
        return (self.argnums,) if isinstance(self.argnums, int) else self.argnums


@dataclass
class Kernel:
    """A generated kernel and everything about how it was made."""

    name: str
    source: str
    traced: Traced
    schedule: Schedule
    returns: Any
    outputs: list[Node]
    output_names: list[str]
    hints: dict[Node, str]
    python: Callable[..., Any]
    compiled: Callable[..., Any]
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def ir(self) -> str:
        return listing(self.outputs, self.output_names, self.hints, self.traced.params)

    @property
    def op_counts(self) -> dict[str, int]:
        return self.schedule.op_counts()


def _describe(value: Value) -> str:
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} values"
    if isinstance(value, Static):
        return f"a `{type(value.obj).__name__}`"
    if isinstance(value, Node) and value.dtype == "bool":
        return "a bool"
    return "a number"


def _flatten(value: Value, out: list[Node], traced: Traced) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Node):
            out.append(item)
        elif isinstance(item, tuple):
            stack.extend(reversed(item))
        else:
            raise OutputError(
                f"`{traced.name}` ({traced.location}) returns {_describe(item)}; "
                "a compiled function returns numbers or tuples of numbers"
            )


def _scalar_output(traced: Traced, spec: Spec) -> tuple[Node, Value]:
    out: Value = traced.output
    aux: Value = ()
    name = f"`{traced.name}` ({traced.location})"
    if spec.has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise OutputError(
                f"{spec.kind} with has_aux=True needs {name} to return a pair "
                "`(value, aux)`; it returns "
                + (f"a tuple of {len(out)}" if isinstance(out, tuple) else "one value")
            )
        out, aux = out
    if not isinstance(out, Node) or out.dtype == "bool":
        help_ = (
            "differentiate one of them, or return `(value, aux)` and pass has_aux=True"
            if isinstance(out, tuple)
            else "return a float computed from the arguments"
        )
        raise OutputError(
            f"{spec.kind} needs {name} to return one number, but it returns "
            f"{_describe(out)}\n  help: {help_}"
        )
    return to_float(out), aux


def _differentiate(traced: Traced, spec: Spec) -> tuple[Any, dict[Node, str], Node]:
    """The kernel's return structure, its naming hints, and the primal output."""
    out, aux = _scalar_output(traced, spec)
    wrt = [traced.params[i] for i in spec.wrt]
    adjoints = vjp_graph([(out, ONE)], wrt)
    hints = dict(traced.hints)
    # The requested inputs' adjoints are named first (`b_bar`, not `a_bar` when
    # `a = w * x + b`): they are what the kernel returns.
    named = sorted(adjoints.table.items(), key=lambda item: item[0].op != "param")
    for node, adj in named:
        base = node.attrs[1] if node.op == "param" else traced.hints.get(node)
        if base and adj not in hints and adj.op not in ("param", "const"):
            hints[adj] = f"{base}_bar"
    grads: Any = adjoints.grads[0] if isinstance(spec.argnums, int) else adjoints.grads
    value: Any = (out, aux) if spec.has_aux else out
    if spec.kind == "grad":
        returns = (grads, aux) if spec.has_aux else grads
    else:
        returns = (value, grads)
    return returns, hints, out


def build_kernel(
    fun: types.FunctionType, spec: Spec, dtypes: tuple[str, ...], jit: bool = True
) -> Kernel:
    """Trace, differentiate, schedule, print and (lazily) compile one kernel."""
    t0 = time.perf_counter()
    traced = trace(fun, dtypes)
    t1 = time.perf_counter()
    sections: dict[int, str] = {}
    if spec.kind == "jit":
        returns: Any = traced.output
        hints = dict(traced.hints)
    else:
        returns, hints, primal = _differentiate(traced, spec)
    outputs: list[Node] = []
    _flatten(returns, outputs, traced)
    names = _output_names(traced, spec, outputs)
    first = [primal] if spec.kind != "jit" else []
    sched = schedule(traced.params, outputs, hints, names, first=first)
    t2 = time.perf_counter()
    base = traced.name if traced.name.isidentifier() else "f"
    name = base if spec.kind == "jit" else f"{base}_{spec.kind}"
    if spec.kind != "jit":
        forward = set(topological([primal]))
        backward = [i for i, (_, n) in enumerate(sched.statements) if n not in forward]
        if backward:
            sections[backward[0]] = "backward"
    header = [
        f"generated by symdiff {__version__}: {spec.kind} of `{traced.name}` "
        f"({traced.location})"
    ]
    if spec.kind != "jit":
        wrt = ", ".join(traced.params[i].attrs[1] for i in spec.wrt)
        header.append(f"with respect to: {wrt}")
    source = Printer().function(name, sched, returns, header, sections)
    python = load_source(source, name)
    t3 = time.perf_counter()
    if jit:
        compiled = njit(python)
    else:
        compiled = python_kernel(load_source(source, name, ieee_math=True))
    timings = {"trace": t1 - t0, "differentiate+schedule": t2 - t1, "print": t3 - t2}
    return Kernel(
        name,
        source,
        traced,
        sched,
        returns,
        outputs,
        names,
        hints,
        python,
        compiled,
        timings,
    )


def _output_names(traced: Traced, spec: Spec, outputs: list[Node]) -> list[str]:
    if spec.kind == "jit":
        return (
            ["value"] if len(outputs) == 1 else [f"out{i}" for i in range(len(outputs))]
        )
    names: list[str] = []
    if spec.kind == "value_and_grad":
        names.append("value")
    wrt_names = [f"{traced.params[i].attrs[1]}_bar" for i in spec.wrt]
    if spec.kind == "value_and_grad" and spec.has_aux:
        n_aux = len(outputs) - 1 - len(wrt_names)
        names += [f"aux{i}" for i in range(n_aux)] + wrt_names
    else:
        names += wrt_names
        names += [f"aux{i}" for i in range(len(outputs) - len(names))]
    return names
