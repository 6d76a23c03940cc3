"""The DAG as a numbered SSA listing (``Compiled.ir``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from symdiff.ir.node import Node, topological


def _dtype_tag(node: Node) -> str:
    tag = {"float64": "f64", "int64": "i64", "bool": "bool"}[node.dtype]
    if node.shape:
        tag += "[" + ",".join(map(str, node.shape)) + "]"
    return tag


def listing(
    outputs: Sequence[Node],
    output_names: Sequence[str],
    hints: Mapping[Node, str] | None = None,
    params: Sequence[Node] = (),
) -> str:
    """Render the graph reaching ``outputs`` as ``%k = op %i, %j`` lines.

    Parameters
    ----------
    outputs : sequence of Node
        The roots; they are listed last, as ``return`` lines.
    output_names : sequence of str
        A label per output (``"value"``, ``"x_bar"``).
    hints : mapping, optional
        User-facing names shown as trailing comments.
    params : sequence of Node, optional
        Listed first, in this order (the kernel's signature).
    """
    hints = hints or {}
    number: dict[Node, int] = {}
    lines = []
    for node in topological([*params, *outputs]):
        k = number[node] = len(number)
        if node.op == "const":
            body = f"const {node.value!r}"
        elif node.op == "param":
            body = f"param {node.attrs[1]}"
        else:
            body = node.op + " " + ", ".join(f"%{number[a]}" for a in node.args)
        line = f"%{k} = {body} : {_dtype_tag(node)}"
        if node in hints and node.op != "param":
            line = f"{line:<40} # {hints[node]}"
        lines.append(line)
    for name, out in zip(output_names, outputs, strict=True):
        lines.append(f"return {name} = %{number[out]}")
    return "\n".join(lines)
