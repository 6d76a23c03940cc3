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


def _attrs(node: Node, names: Any, number: Mapping[Node, int] | None = None) -> str:
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
    if op in ("take", "index_update"):
        spec = node.attrs[-1]
        first = 1 if op == "take" else 2
        at = [
            f"%{(number or {}).get(node.args[first + e[1]], '?')}"
            if e[0] == "at"
            else ":"
            if e[0] == "all"
            else f"{format_dim(e[1], names)}:{format_dim(add(e[1], e[2]), names)}"
            for e in spec
        ]
        mode = f"{node.attrs[0]} " if op == "index_update" else ""
        return f"{mode}[{', '.join(at)}]"
    if op == "item":
        return f"#{node.attrs[0]}"
    if op == "loop":
        return f"({body_label(node)})"
    return ""


def body_label(node: Node) -> str:
    from symdiff.ir.loops import body_of

    return body_of(node).label or "loop"


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
        User-facing names shown as trailing comments.  An output is labelled
        with what it is returned as when its hint names something else (the
        gradient ``x_bar`` that is also a Hessian entry ``d2_dx_dx``).
    params : sequence of Node, optional
        Listed first, in this order (the kernel's signature).
    """
    returned: dict[Node, list[str]] = {}
    for name, out in zip(output_names, outputs, strict=True):
        returned.setdefault(out, []).append(name)
    hints = {
        node: ", ".join(returned[node])
        if node in returned and hint not in returned[node]
        else hint
        for node, hint in (hints or {}).items()
    }
    by_index = {p.attrs[0]: str(p.attrs[1]) for p in params}

    def names(i: int) -> str:
        return by_index.get(i, f"p{i}")

    number: dict[Node, int] = {}
    lines: list[str] = []
    _block([*params, *outputs], number, lines, hints, names, "")
    for name, out in zip(output_names, outputs, strict=True):
        lines.append(f"return {name} = %{number[out]}")
    return "\n".join(lines)


def _block(
    roots: Sequence[Node],
    number: dict[Node, int],
    lines: list[str],
    hints: Mapping[Node, str],
    names: Any,
    indent: str,
) -> None:
    """List the nodes reaching ``roots`` that are not numbered yet; a loop's body
    follows its line, indented (nesting is as deep as the user's loops)."""
    from symdiff.ir.loops import body_of

    for node in topological(roots):
        if node in number:
            continue
        k = number[node] = len(number)
        if node.op == "const":
            body = f"const {node.value!r}"
        elif node.op == "param":
            body = f"param {node.attrs[1]}"
        elif node.op == "var":
            body = f"var {node.attrs[1]}"
        else:
            body = node.op + " " + ", ".join(f"%{number[a]}" for a in node.args)
            extra = _attrs(node, names, number)
            body = f"{body} {extra}" if extra else body
        tag = "loop" if node.op == "loop" else _dtype_tag(node, names)
        line = f"{indent}%{k} = {body} : {tag}"
        if node in hints and node.op not in ("param", "var"):
            line = f"{line:<40} # {hints[node]}"
        lines.append(line)
        if node.op != "loop":
            continue
        loop = body_of(node)
        inner = indent + "    "
        inputs = [loop.index, *loop.carried, *loop.captured]
        _block(inputs, number, lines, hints, names, inner)
        kinds = "reversed, " if loop.reverse else ""
        lines.append(
            f"{inner}# {kinds}index %{number[loop.index]}; state "
            + ", ".join(f"%{number[v]}" for v in loop.carried)
            + "; captured "
            + (", ".join(f"%{number[v]}" for v in loop.captured) or "-")
        )
        _block(loop.roots(), number, lines, hints, names, inner)
        if loop.test is not None:
            lines.append(f"{inner}while %{number[loop.test]}")
        if loop.stop is not None:
            lines.append(f"{inner}break if %{number[loop.stop]}")
        lines.append(
            f"{inner}next state = " + ", ".join(f"%{number[o]}" for o in loop.outputs)
        )
