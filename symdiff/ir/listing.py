"""The DAG as a numbered SSA listing (``Compiled.ir``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from symdiff.ir.node import Node, topological
from symdiff.ir.shapes import Length, add, format_dim, mul


def _dtype_tag(node: Node, names: Any) -> str:
    tag = {"float64": "f64", "int64": "i64", "bool": "bool"}[node.dtype]
    if node.shape:
        tag += "[" + ", ".join(format_dim(d, names) for d in node.shape) + "]"
    return tag


def _attrs(node: Node, names: Any) -> str:
    """The static part of an array op: ``X.shape[0]``, ``axes=(1,)``, ``[1:n]``."""
    op = node.op
    if op == "dim":
        return format_dim(node.attrs[0], names)
    if op in ("sum", "prod", "amax", "amin"):
        return f"axes={node.attrs[0]}"
    if op == "transpose":
        return f"perm={node.attrs[0]}"
    if op in ("concat", "iota"):
        return f"axis={node.attrs[0]}"
    if op in ("getitem", "scatter"):
        return "[" + ", ".join(_index(e, names) for e in node.attrs[0]) + "]"
    return ""


def _index(entry: tuple[Any, ...], names: Any) -> str:
    if entry[0] == "new":
        return "None"
    if entry[0] == "int":
        return format_dim(entry[1], names)
    _, start, length, step = entry
    stop: Length = add(start, mul(length, step))
    text = f"{format_dim(start, names)}:{format_dim(stop, names)}"
    return text if step == 1 else f"{text}:{step}"


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
    by_index = {p.attrs[0]: str(p.attrs[1]) for p in params}

    def names(i: int) -> str:
        return by_index.get(i, f"p{i}")

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
            extra = _attrs(node, names)
            body = f"{body} {extra}" if extra else body
        line = f"%{k} = {body} : {_dtype_tag(node, names)}"
        if node in hints and node.op != "param":
            line = f"{line:<40} # {hints[node]}"
        lines.append(line)
    for name, out in zip(output_names, outputs, strict=True):
        lines.append(f"return {name} = %{number[out]}")
    return "\n".join(lines)
