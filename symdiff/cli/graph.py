"""``symdiff graph``: the forward graph and the adjoint graph, side by side.

The picture is the gradient kernel's DAG split in two Graphviz clusters: the
forward (primal) nodes, those the function's output depends on, and the adjoint
nodes the backward pass adds.  Edges from a forward node into the adjoint
cluster are the forward values the backward pass reuses.  Node labels carry the
op and the name the node has in the generated source (the user's variable,
``v_bar`` for an adjoint, ``t0`` for a temporary).  Constants are drawn once per
use, next to their consumer, so that they do not tie the picture in knots.
All walks are iterative (:func:`symdiff.ir.node.topological`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any

import click

import symdiff
from symdiff.cli.derivatives import target_argument, wrt_option
from symdiff.cli.kinds import (
    FLOAT,
    arg_option,
    describe,
    is_static,
    is_typed,
    kernel_dtypes,
    select_kernel,
    short,
    signature_text,
)
from symdiff.cli.report import json_option, reports_errors, write_json
from symdiff.cli.target import (
    Failure,
    argument_kinds,
    load_target,
    parse_wrt,
    wrt_names,
)
from symdiff.ir.node import Node, topological
from symdiff.kernel import Kernel

RENDERED = (".svg", ".png", ".pdf")
TEXT = (".dot", ".gv")

FORWARD, ADJOINT = "forward", "adjoint"
LEGEND = (
    "orange: adjoint nodes (the backward pass)\n"
    "bold, dashed edges: forward values the backward pass reuses"
)
_STYLE = {
    "param": 'shape=ellipse, style=filled, fillcolor="#cfe2f3", color="#3d6fa6"',
    FORWARD: 'shape=box, style="rounded,filled", fillcolor="#ffffff", color="#3d6fa6"',
    ADJOINT: 'shape=box, style="rounded,filled", fillcolor="#f9cb9c", color="#b45f06"',
    "const": 'shape=plain, fontsize=9, fontcolor="#666666"',
    "output": 'shape=plaintext, fontname="Helvetica-Bold"',
}
_CLUSTER = {
    FORWARD: 'label="forward (primal)"; color="#3d6fa6"; style=rounded;',
    ADJOINT: (
        'label="backward (adjoint)"; color="#b45f06"; style="rounded,filled"; '
        'fillcolor="#fdf1e6";'
    ),
}


@dataclass
class Graph:
    """Nodes (id, label, side, role) and edges (source, target, crossing)."""

    title: str
    nodes: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)

    def add_node(
        self, ident: str, label: str, side: str, role: str, **extra: Any
    ) -> None:
        self.nodes.append(
            {"id": ident, "label": label, "side": side, "role": role, **extra}
        )

    def add_edge(self, source: str, target: str, shared: bool = False) -> None:
        self.edges.append({"source": source, "target": target, "shared": shared})

    def counts(self) -> dict[str, int]:
        """Op and parameter nodes per side, and edges from forward into adjoint."""
        counts = {
            side: sum(
                n["side"] == side and n["role"] in ("op", "param") for n in self.nodes
            )
            for side in (FORWARD, ADJOINT)
        }
        counts["shared_edges"] = sum(e["shared"] for e in self.edges)
        return counts


def build_graph(
    kernel: Kernel, title: str, dtypes: dict[str, str] | None = None
) -> Graph:
    """The kernel's forward and adjoint nodes, with what connects them.  A
    parameter that is not a float64 (``dtypes``) says its kind: ``n: i64``; a
    static one is not drawn (the kernel takes a placeholder for it, and its
    value is a constant of the graph)."""
    dtypes = dtypes or {}
    plan = kernel.plan
    forward = set(topological([*plan.params, *plan.primal]))
    order = topological([*plan.params, *plan.primal, *kernel.outputs])
    ident = {node: f"n{k}" for k, node in enumerate(order)}
    reused = {
        arg
        for node in order
        if node not in forward
        for arg in node.args
        if arg in forward and arg.op != "const"
    }
    graph = Graph(title)
    names = kernel.schedule.names
    for node in order:
        if node.op == "const":
            continue
        if node.op == "param" and is_static(dtypes.get(node.attrs[1], FLOAT)):
            continue
        side = FORWARD if node in forward else ADJOINT
        name = names.get(node) or plan.hints.get(node)
        if node.op == "param":
            label, role = str(node.attrs[1]), "param"
            if dtypes.get(label, FLOAT) != FLOAT:
                label = f"{label}: {short(dtypes[label])}"
        else:
            label, role = (f"{name}\n{node.op}" if name else node.op), "op"
        graph.add_node(
            ident[node], label, side, role, op=node.op, name=name, reused=node in reused
        )
        for k, arg in enumerate(node.args):
            source = _source(graph, arg, ident, f"{ident[node]}_{k}", side)
            crossing = side == ADJOINT and arg in forward and arg.op != "const"
            graph.add_edge(source, ident[node], shared=crossing)
    _outputs(graph, kernel, ident, forward)
    return graph


def _source(
    graph: Graph, arg: Node, ident: dict[Node, str], slot: str, side: str
) -> str:
    """The id an edge into ``slot`` starts from: a fresh node for a constant."""
    if arg.op != "const":
        return ident[arg]
    graph.add_node(f"c_{slot}", repr(arg.value), side, "const")
    return f"c_{slot}"


def _outputs(
    graph: Graph, kernel: Kernel, ident: dict[Node, str], forward: set[Node]
) -> None:
    for k, node in enumerate(kernel.plan.primal):
        graph.add_node(f"out_f{k}", "output", FORWARD, "output")
        graph.add_edge(_source(graph, node, ident, f"out_f{k}", FORWARD), f"out_f{k}")
    for k, (name, node) in enumerate(
        zip(kernel.output_names, kernel.outputs, strict=True)
    ):
        graph.add_node(f"out_a{k}", f"return {name}", ADJOINT, "output")
        source = _source(graph, node, ident, f"out_a{k}", ADJOINT)
        graph.add_edge(
            source, f"out_a{k}", shared=node in forward and node.op != "const"
        )


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def to_dot(graph: Graph) -> str:
    """Graphviz text: two clusters side by side, adjoint nodes filled orange,
    forward values reused by the backward pass drawn bold with dashed edges."""
    lines = [
        "digraph symdiff {",
        "  graph [rankdir=TB, newrank=true, nodesep=0.25, ranksep=0.35, "
        'fontname="Helvetica", labelloc=t, '
        f"label={_quote(graph.title)}];",
        '  node [fontname="Helvetica", fontsize=11];',
        '  edge [color="#555555", arrowsize=0.6];',
    ]
    for side in (FORWARD, ADJOINT):
        lines.append(f"  subgraph cluster_{side} {{")
        lines.append(f"    {_CLUSTER[side]}")
        lines.append(f"    anchor_{side} [style=invis, shape=point, width=0];")
        for node in graph.nodes:
            if node["side"] != side:
                continue
            key = node["role"] if node["role"] in ("param", "const", "output") else side
            extra = ", penwidth=2.2" if node.get("reused") else ""
            label = _quote(node["label"])
            lines.append(f"    {node['id']} [label={label}, {_STYLE[key]}{extra}];")
        lines.append("  }")
    # A flat edge between invisible anchors on one rank keeps forward on the left.
    lines.append("  { rank=same; anchor_forward -> anchor_adjoint [style=invis]; }")
    for edge in graph.edges:
        style = ' [color="#b45f06", style=dashed]' if edge["shared"] else ""
        lines.append(f"  {edge['source']} -> {edge['target']}{style};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(dot_text: str, path: str, fmt: str) -> bool:
    """Run Graphviz ``dot``; False when it is not installed."""
    exe = shutil.which("dot")
    if exe is None:
        return False
    try:
        proc = subprocess.run(
            [exe, f"-T{fmt}", "-o", path],
            input=dot_text,
            text=True,
            capture_output=True,
            timeout=300,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Failure(f"running Graphviz dot failed: {exc}") from None
    if proc.returncode:
        raise Failure(f"Graphviz dot failed: {proc.stderr.strip()}")
    return True


@click.command("graph")
@target_argument
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Where to draw: .svg, .png, .pdf (rendered with Graphviz dot) or "
    ".dot/.gv (DOT text). Default: DOT text on stdout.",
)
@wrt_option
@arg_option
@json_option
@reports_errors
def graph_command(
    target: str,
    output: str | None,
    wrt: str | None,
    arg_kinds: tuple[str, ...],
    as_json: bool,
) -> None:
    """Draw the forward and adjoint graphs of FUNC's gradient.

    Forward nodes are white, adjoint (backward-pass) nodes orange; dashed
    edges carry forward values the backward pass reuses (those forward nodes
    are drawn bold).  Labels give the op and the name the value has in the
    generated source; a parameter declared i64 or bool with --arg says so
    (`n: i64`), and the title gives the signature.  Without Graphviz's `dot` on
    PATH, the DOT text is written next to the requested file instead (ending in
    .dot).

    \b
    Examples:
      symdiff graph examples/seed004_chain.py:z -o z.svg
      symdiff graph model.py:loss --wrt w -o loss.png
      symdiff graph model.py:loss | dot -Tpdf -o loss.pdf
      symdiff graph model.py:power --arg n=i64,flag=bool -o power.svg
    """
    suffix = os.path.splitext(output)[1].lower() if output else ".dot"
    if suffix not in RENDERED + TEXT:
        raise click.BadParameter(
            f"cannot tell the format of {output!r}: use .svg, .png, .pdf, .dot or .gv",
            param_hint="'-o'",
        )
    spec = load_target(target)
    kinds = argument_kinds(spec, arg_kinds)
    argnums = parse_wrt(spec, wrt, kinds)
    compiled = symdiff.grad(spec.fn, argnums=argnums, target="python")
    kernel = select_kernel(compiled, kinds)
    dtypes = describe(spec.params, kernel_dtypes(compiled, kinds))
    signature = ""
    if is_typed(kinds):
        signature = (
            f"\nsignature: ({signature_text(spec.params, list(dtypes.values()))})"
        )
    static = [p for p, d in dtypes.items() if is_static(d)]
    if static and not signature:
        fixed = signature_text(static, [dtypes[p] for p in static])
        signature = f"\nspecialised to: {fixed}"
    title = (
        f"grad of {spec.name} ({kernel.traced.location}) with respect to "
        f"{', '.join(wrt_names(spec, argnums))}{signature}\n{LEGEND}"
    )
    graph = build_graph(kernel, title, dtypes)
    dot_text = to_dot(graph)
    written, rendered = _deliver(dot_text, output, suffix)
    counts = graph.counts()
    if as_json:
        payload: dict[str, Any] = {
            "ok": True,
            "command": "graph",
            "target": spec.spec,
            "function": spec.name,
            "kinds": describe(spec.params, kinds),
            "signature": dtypes,
            "output": written,
            "rendered": rendered,
            "counts": counts,
            "nodes": graph.nodes,
            "edges": graph.edges,
        }
        if output is None:
            payload["dot"] = dot_text
        write_json(payload)
    elif output is None:
        click.echo(dot_text, nl=False)
    else:
        click.echo(
            f"wrote {written}: {counts[FORWARD]} forward and {counts[ADJOINT]} "
            f"adjoint nodes, {counts['shared_edges']} edges from forward values "
            "into the backward pass"
        )


def _deliver(dot_text: str, output: str | None, suffix: str) -> tuple[str | None, bool]:
    """Write or render the graph; the file written and whether it was drawn."""
    if output is None:
        return None, False
    if suffix in TEXT:
        _write(output, dot_text)
        return output, False
    if render(dot_text, output, suffix[1:]):
        return output, True
    written = os.path.splitext(output)[0] + ".dot"
    _write(written, dot_text)
    click.echo(
        f"note: Graphviz `dot` is not on PATH, so {output} was not drawn; "
        f"wrote the DOT text to {written} (install Graphviz, then run "
        f"`dot -T{suffix[1:]} {written} -o {output}`)",
        err=True,
    )
    return written, False


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise Failure(f"cannot write {path}: {exc.strerror}") from None
