"""Hash-consed expression nodes.

A :class:`Node` is immutable and interned: building the same ``(op, args, attrs)``
twice returns the same object, so structural common-subexpression elimination is free
and node equality is object identity.  Nodes are only created through :func:`make`;
the smart constructors in :mod:`symdiff.ir.build` sit on top of it.
"""

from __future__ import annotations

import struct
import weakref
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from symdiff.ir.shapes import Shape

#: dtypes known to the IR, from narrowest to widest (promotion order).
DTYPES = ("bool", "int64", "float64")


class Node:
    """One value in the DAG: an op applied to argument nodes.

    Attributes
    ----------
    op : str
        Name of the op, a key of :data:`symdiff.ir.ops.OPS`.
    args : tuple of Node
        Operands.
    attrs : tuple
        Op-specific static data (a constant's value, a parameter's index and name).
    shape : tuple of int
        ``()`` for a scalar.
    dtype : str
        One of :data:`DTYPES`.
    """

    __slots__ = ("__weakref__", "args", "attrs", "dtype", "op", "shape")

    op: str
    args: tuple[Node, ...]
    attrs: tuple[Any, ...]
    shape: Shape
    dtype: str

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("symdiff IR nodes are immutable")

    def __repr__(self) -> str:
        if self.op == "const":
            return f"Const({self.attrs[0]!r})"
        if self.op == "param":
            return f"Param({self.attrs[1]})"
        return f"Node({self.op}, {len(self.args)} args)"

    @property
    def value(self) -> Any:
        """The Python value of a constant node."""
        if self.op != "const":
            raise TypeError(f"{self!r} is not a constant")
        return self.attrs[0]


# Interning table.  Values are held weakly so that graphs nobody references any more
# are freed; a key holds its argument nodes strongly only while its node lives.
_INTERN: weakref.WeakValueDictionary[tuple[Any, ...], Node] = (
    weakref.WeakValueDictionary()
)


def const_key(value: float | int | bool) -> tuple[str, Any]:
    """Key a constant by its exact bits.

    ``0.0 == -0.0`` and ``nan != nan`` in Python, but they are different constants
    (``1/-0.0`` is ``-inf``); keying floats by their IEEE bits keeps them apart and
    makes every NaN a constant equal to itself.
    """
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int64", value)
    return ("float64", struct.pack("<d", float(value)))


def make(
    op: str,
    args: Sequence[Node] = (),
    attrs: tuple[Any, ...] = (),
    *,
    shape: Shape = (),
    dtype: str = "float64",
) -> Node:
    """Return the unique node for ``(op, args, attrs)``, creating it if needed."""
    args = tuple(args)
    if op == "const":
        key: tuple[Any, ...] = (op, const_key(attrs[0]), shape)
    else:
        key = (op, args, attrs, shape, dtype)
    node = _INTERN.get(key)
    if node is not None:
        return node
    node = object.__new__(Node)
    object.__setattr__(node, "op", op)
    object.__setattr__(node, "args", args)
    object.__setattr__(node, "attrs", attrs)
    object.__setattr__(node, "shape", shape)
    object.__setattr__(node, "dtype", dtype)
    _INTERN[key] = node
    return node


def constant(value: float | int | bool) -> Node:
    """The constant node for a Python scalar (dtype from its Python type)."""
    kind = const_key(value)[0]
    if kind == "float64":
        value = float(value)
    return make("const", (), (value,), dtype=kind)


def is_zero(node: Node) -> bool:
    """True for a constant equal to zero (either sign)."""
    return node.op == "const" and node.attrs[0] == 0


def is_one(node: Node) -> bool:
    return node.op == "const" and node.attrs[0] == 1


def topological(
    outputs: Iterable[Node], stop: Collection[Node] = frozenset()
) -> list[Node]:
    """All nodes reachable from ``outputs``, each after its arguments.

    The walk is iterative (an explicit stack), so chains of 100 000 nodes are fine.
    The order is deterministic: arguments are visited left to right.  Nodes in
    ``stop`` are included but not walked into.
    """
    order: list[Node] = []
    done: set[Node] = set()
    for root in outputs:
        if root in done:
            continue
        stack: list[tuple[Node, int]] = [(root, 0)]
        entered = {root}
        while stack:
            node, i = stack[-1]
            if i < len(node.args) and node not in stop:
                stack[-1] = (node, i + 1)
                child = node.args[i]
                if child not in done and child not in entered:
                    entered.add(child)
                    stack.append((child, 0))
            else:
                stack.pop()
                done.add(node)
                order.append(node)
    return order


def use_counts(order: Sequence[Node]) -> dict[Node, int]:
    """How many times each node of ``order`` appears as an argument."""
    counts: dict[Node, int] = dict.fromkeys(order, 0)
    for node in order:
        for arg in node.args:
            counts[arg] = counts.get(arg, 0) + 1
    return counts
