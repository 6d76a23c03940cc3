"""What each transform asks of a traced function: the kernel's parameters, its
return structure and the names of its outputs.

Every transform is planned from the same two sweeps (``ad.vjp_graph`` and
``ad.jvp_graph``) over the same derivative table; the kernel pipeline
(:mod:`symdiff.kernel`) then schedules, prints and compiles whatever is planned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from symdiff.ad import jvp_graph, vjp_graph
from symdiff.errors import OutputError
from symdiff.frontend.lower import Traced, param_node
from symdiff.frontend.values import Static, Value
from symdiff.ir import shapes as S
from symdiff.ir.build import ONE, ZERO, to_float
from symdiff.ir.node import Node

MODES = ("auto", "forward", "reverse")


@dataclass(frozen=True)
class Spec:
    """What to build.

    ``kind`` is one of :data:`PLANNERS`; ``mode`` matters for ``jacobian`` only.
    """

    kind: str
    argnums: int | tuple[int, ...] = 0
    has_aux: bool = False
    mode: str = "auto"
    #: reverse mode through loops: keep the loop state every ``checkpoint``
    #: iterations and recompute the rest (None: a tape row per iteration)
    checkpoint: int | None = None

    @property
    def wrt(self) -> tuple[int, ...]:
        return (self.argnums,) if isinstance(self.argnums, int) else self.argnums


@dataclass
class Plan:
    """A kernel to build: parameters, return structure, output names, hints."""

    params: tuple[Node, ...]
    returns: Any
    names: Any  # same structure as ``returns``, strings at the leaves
    hints: dict[Node, str]
    primal: list[Node] = field(default_factory=list)
    wrt: tuple[str, ...] = ()
    mode: str | None = None
    checks: tuple[S.Check, ...] = ()


# -- structure helpers ----------------------------------------------------------------
def describe(value: Value) -> str:
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} values"
    if isinstance(value, Static):
        return f"a `{type(value.obj).__name__}`"
    if isinstance(value, Node) and value.dtype == "bool":
        return "a bool"
    return "a number"


def leaves(value: Any, traced: Traced | None = None) -> list[Any]:
    """The leaves of a nested tuple, left to right (iteratively).

    With ``traced``, ``value`` is that function's output and every leaf must be a
    node: anything else (a string, a module) is the user's error.
    """
    out: list[Any] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):
            stack.extend(reversed(item))
        elif traced is not None and not isinstance(item, Node):
            where = f"`{traced.name}` ({traced.location})"
            raise OutputError(
                f"{where} returns {describe(item)}; a compiled function returns "
                "numbers or tuples of numbers"
            )
        else:
            out.append(item)
    return out


def rebuild(value: Any, fn: Callable[[Any], Any]) -> Any:
    """``value`` with each leaf replaced by ``fn(leaf)`` (structure kept)."""
    if isinstance(value, tuple):
        return tuple(rebuild(v, fn) for v in value)
    return fn(value)


def _name(traced: Traced, node: Node, default: str) -> str:
    if node.op == "param":
        return str(node.attrs[1])
    return traced.hints.get(node, default)


def _leaf_names(traced: Traced, value: Value, one: str = "value") -> Any:
    outs = leaves(value, traced)
    if len(outs) == 1 and not isinstance(value, tuple):
        return _name(traced, outs[0], one)
    return rebuild(value, _counting(lambda i: _name(traced, outs[i], f"out{i}")))


def scalar_output(traced: Traced, spec: Spec) -> tuple[Node, Value]:
    """The one number a scalar transform differentiates, and the aux value."""
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
        # The value, not the pair, is what must be one number.
        needs = (
            f"{spec.kind} with has_aux=True needs the value that {name} returns "
            "first, in `(value, aux)`, to be one number, but the value is"
        )
        several = "differentiate one of them, and return the others in aux"
    else:
        needs = f"{spec.kind} needs {name} to return one number, but it returns"
        several = (
            "differentiate one of them, or return `(value, aux)` and pass has_aux=True"
        )
    if isinstance(out, Node) and out.shape and out.dtype != "bool":
        from symdiff.ir.shapes import format_shape

        raise OutputError(
            f"{needs} an array of shape "
            f"{format_shape(out.shape, lambda i: _param_name(traced, i))}"
            "\n  help: reduce it to a number (np.sum, np.mean, a norm), or use "
            "jacobian/vjp for array outputs"
        )
    if not isinstance(out, Node) or out.dtype == "bool":
        help_ = (
            several
            if isinstance(out, tuple)
            else "return a float computed from the arguments"
        )
        what = describe(out)
        if getattr(traced, "output_tree", None) is not None and not spec.has_aux:
            what = "a dict"  # flattened to a tuple of its values
        elif isinstance(out, tuple) and len(out) == 1:
            what = "a tuple of 1 value"
        raise OutputError(f"{needs} {what}\n  help: {help_}")
    return to_float(out), aux


def _float_outputs(traced: Traced, spec: Spec) -> list[Node]:
    outs = leaves(traced.output, traced)
    for out in outs:
        if out.dtype == "bool":
            raise OutputError(
                f"{spec.kind} of `{traced.name}` ({traced.location}): an output is a "
                "bool, which has no derivative"
            )
    return [to_float(o) for o in outs]


def _name_derivatives(
    traced: Traced, table: dict[Node, Node], hints: dict[Node, str], suffix: str
) -> None:
    """Name derivative nodes after the values they belong to (``v_bar``, ``v_dot``).

    Parameters are named first: their derivatives are what kernels return.
    """
    ordered = sorted(table.items(), key=lambda item: item[0].op != "param")
    for node, deriv in ordered:
        base = node.attrs[1] if node.op == "param" else traced.hints.get(node)
        if base and deriv not in hints and deriv.op not in ("param", "const"):
            hints[deriv] = f"{base}{suffix}"


def _param_name(traced: Traced, i: int) -> str:
    return str(traced.params[i].attrs[1])


# -- one planner per transform ---------------------------------------------------
def plan_jit(traced: Traced, spec: Spec) -> Plan:
    leaves(traced.output, traced)  # reject non-numbers now
    return Plan(
        traced.params,
        traced.output,
        _leaf_names(traced, traced.output),
        dict(traced.hints),
    )


def plan_grad(traced: Traced, spec: Spec) -> Plan:
    out, aux = scalar_output(traced, spec)
    wrt = [traced.params[i] for i in spec.wrt]
    adjoints = vjp_graph([(out, ONE)], wrt)
    hints = dict(traced.hints)
    _name_derivatives(traced, adjoints.table, hints, "_bar")
    grad_names = tuple(f"{_param_name(traced, i)}_bar" for i in spec.wrt)
    grads: Any = adjoints.grads
    if isinstance(spec.argnums, int):
        grads, grad_names = grads[0], grad_names[0]
    aux_names = _leaf_names(traced, aux, "aux") if aux != () else ()
    if spec.kind == "grad":
        returns: Any = (grads, aux) if spec.has_aux else grads
        names: Any = (grad_names, aux_names) if spec.has_aux else grad_names
    else:
        value: Any = (out, aux) if spec.has_aux else out
        value_names: Any = ("value", aux_names) if spec.has_aux else "value"
        returns, names = (value, grads), (value_names, grad_names)
    wrt_names = tuple(_param_name(traced, i) for i in spec.wrt)
    return Plan(traced.params, returns, names, hints, [out], wrt_names)


def _extra_param(
    index: int, name: str, shape: S.Shape, like: str
) -> tuple[Node, list[S.Check]]:
    """A tangent or cotangent parameter with the shape of ``like``'s value, and the
    checks (made when the kernel runs) that the caller passed that shape."""
    node = param_node(index, name, "float64", shape)
    checks = [
        S.Check(
            S.atom("shape", index, k),
            d,
            f"`{name}` must have the shape of {like}: its axis {k} differs",
        )
        for k, d in enumerate(shape)
    ]
    return node, checks


def _chosen(traced: Traced, spec: Spec) -> list[int]:
    """The parameters a jvp, vjp or hvp kernel takes tangents for or returns
    adjoints of: ``spec.wrt``, each once (the API's jvp, vjp and hvp name the
    parameters the caller gave primals for, the others keep their defaults; an
    array Jacobian's sweeps only those differentiated)."""
    n = len(traced.params)
    return list(dict.fromkeys(i % n for i in spec.wrt))


def _seeds(params: list[Node], tangents: tuple[Node, ...]) -> list[tuple[Node, Node]]:
    """The ``(param, tangent)`` pairs forward mode starts from: an int parameter
    is a real number there, as grad, vjp and hessian differentiate it (its
    tangent flows through the arithmetic it takes part in, not through range
    bounds or indices); a bool has no derivative and its tangent is ignored."""
    return [(p, t) for p, t in zip(params, tangents, strict=True) if p.dtype != "bool"]


def plan_jvp(traced: Traced, spec: Spec) -> Plan:
    outs = _float_outputs(traced, spec)
    n = len(traced.params)
    chosen = _chosen(traced, spec)
    params = [traced.params[i] for i in chosen]
    made = [
        _extra_param(n + k, f"{p.attrs[1]}_dot", p.shape, f"`{p.attrs[1]}`")
        for k, p in enumerate(params)
    ]
    dots = tuple(d for d, _ in made)
    checks = tuple(c for _, cs in made for c in cs)
    seeds = _seeds(params, dots)
    tangents, table = jvp_graph(outs, seeds)
    hints = dict(traced.hints)
    _name_derivatives(traced, table, hints, "_dot")
    out_dots = rebuild(traced.output, _counting(lambda i: tangents[i]))
    names = _leaf_names(traced, traced.output)
    returns = (rebuild(traced.output, to_float), out_dots)
    dot_names = rebuild(names, lambda s: f"{s}_dot")
    wrt = tuple(_param_name(traced, i) for i in chosen)
    return Plan(
        traced.params + dots,
        returns,
        (names, dot_names),
        hints,
        outs,
        wrt,
        checks=checks,
    )


def plan_vjp(traced: Traced, spec: Spec) -> Plan:
    outs = _float_outputs(traced, spec)
    n = len(traced.params)
    out_names = leaves(_leaf_names(traced, traced.output))
    made = [
        _extra_param(n + i, f"{name}_bar", out.shape, f"the output `{name}`")
        for i, (name, out) in enumerate(zip(out_names, outs, strict=True))
    ]
    cts = tuple(c for c, _ in made)
    chosen = _chosen(traced, spec)
    wrt = [traced.params[i] for i in chosen]
    adjoints = vjp_graph(list(zip(outs, cts, strict=True)), wrt)
    hints = dict(traced.hints)
    _name_derivatives(traced, adjoints.table, hints, "_bar")
    names = tuple(f"{_param_name(traced, i)}_bar" for i in chosen)
    wrt_names = tuple(_param_name(traced, i) for i in chosen)
    return Plan(
        traced.params + cts,
        adjoints.grads,
        names,
        hints,
        outs,
        wrt_names,
        checks=tuple(c for _, cs in made for c in cs),
    )


def choose_mode(mode: str, n_in: int, n_out: int) -> str:
    """Forward mode costs a sweep per input, reverse a sweep per output (seed 001
    section 14): pick the side with fewer sweeps; ties go to reverse, like JAX."""
    if mode != "auto":
        return mode
    return "forward" if n_in < n_out else "reverse"


def _no_array_matrix(
    traced: Traced, spec: Spec, wrt: list[Node], outs: list[Node]
) -> None:
    """Jacobians and Hessians of array functions are computed a sweep at a time
    (``Compiled``): there is no single kernel for them to plan."""
    if any(n.shape for n in (*wrt, *outs)):
        sweep = {"jacobian": "a jvp or vjp", "hessian": "a Hessian-vector product"}
        raise OutputError(
            f"the {spec.kind} of `{traced.name}` ({traced.location}) has array "
            f"arguments or outputs: it is computed one sweep at a time "
            f"({sweep[spec.kind]} per element), so no single kernel computes it"
            "\n  help: call symdiff."
            f"{spec.kind}(...) from Python, or print the sweep's kernel: "
            f"`symdiff grad` (reverse) or symdiff.jvp / symdiff.hvp"
        )


def plan_jacobian(traced: Traced, spec: Spec) -> Plan:
    outs = _float_outputs(traced, spec)
    wrt = [traced.params[i] for i in spec.wrt]
    _no_array_matrix(traced, spec, wrt, outs)
    mode = choose_mode(spec.mode, len(wrt), len(outs))
    rows: list[list[Node]] = [[ZERO] * len(wrt) for _ in outs]
    hints = dict(traced.hints)
    if mode == "forward":
        for j, p in enumerate(wrt):
            column, _ = jvp_graph(outs, [(p, ONE)])
            for i, entry in enumerate(column):
                rows[i][j] = entry
    else:
        for i, out in enumerate(outs):
            adjoints = vjp_graph([(out, ONE)], wrt)
            rows[i] = list(adjoints.grads)
            if len(outs) == 1:
                _name_derivatives(traced, adjoints.table, hints, "_bar")
    out_names = leaves(_leaf_names(traced, traced.output))
    wrt_names = [_param_name(traced, i) for i in spec.wrt]

    def cells(i: int) -> Any:
        return rows[i][0] if isinstance(spec.argnums, int) else tuple(rows[i])

    def labels(i: int) -> Any:
        names = tuple(f"d{out_names[i]}_d{w}" for w in wrt_names)
        return names[0] if isinstance(spec.argnums, int) else names

    returns = rebuild(traced.output, _counting(cells))
    names = rebuild(traced.output, _counting(labels))
    return Plan(traced.params, returns, names, hints, outs, tuple(wrt_names), mode)


def _counting(fn: Callable[[int], Any]) -> Callable[[Any], Any]:
    """A leaf function that calls ``fn`` with 0, 1, 2... in leaf order."""
    counter = iter(range(1 << 62))
    return lambda _: fn(next(counter))


def plan_hessian(traced: Traced, spec: Spec) -> Plan:
    out, _ = scalar_output(traced, spec)
    wrt = [traced.params[i] for i in spec.wrt]
    _no_array_matrix(traced, spec, wrt, [out])
    adjoints = vjp_graph([(out, ONE)], wrt)
    hints = dict(traced.hints)
    _name_derivatives(traced, adjoints.table, hints, "_bar")
    columns = [jvp_graph(adjoints.grads, [(p, ONE)])[0] for p in wrt]
    names = [_param_name(traced, i) for i in spec.wrt]
    matrix = tuple(
        tuple(columns[j][i] for j in range(len(wrt))) for i in range(len(wrt))
    )
    labels = tuple(tuple(f"d2_d{a}_d{b}" for b in names) for a in names)
    if isinstance(spec.argnums, int):
        return Plan(
            traced.params, matrix[0][0], labels[0][0], hints, [out], tuple(names)
        )
    return Plan(traced.params, matrix, labels, hints, [out], tuple(names))


def plan_hvp(traced: Traced, spec: Spec) -> Plan:
    out, _ = scalar_output(traced, spec)
    n = len(traced.params)
    wrt = [traced.params[i] for i in _chosen(traced, spec)]
    adjoints = vjp_graph([(out, ONE)], wrt)
    hints = dict(traced.hints)
    _name_derivatives(traced, adjoints.table, hints, "_bar")
    made = [
        _extra_param(n + i, f"{p.attrs[1]}_dot", p.shape, f"`{p.attrs[1]}`")
        for i, p in enumerate(wrt)
    ]
    vs = tuple(v for v, _ in made)
    seeds = _seeds(wrt, vs)
    products, _ = jvp_graph(adjoints.grads, seeds)
    names = tuple(f"hvp_{p.attrs[1]}" for p in wrt)
    wrt_names = tuple(str(p.attrs[1]) for p in wrt)
    return Plan(
        traced.params + vs,
        products,
        names,
        hints,
        [out],
        wrt_names,
        checks=tuple(c for _, cs in made for c in cs),
    )


PLANNERS: dict[str, Callable[[Traced, Spec], Plan]] = {
    "jit": plan_jit,
    "grad": plan_grad,
    "value_and_grad": plan_grad,
    "jvp": plan_jvp,
    "vjp": plan_vjp,
    "jacobian": plan_jacobian,
    "hessian": plan_hessian,
    "hvp": plan_hvp,
}
