"""What a Python expression can stand for while a function is lowered."""

from __future__ import annotations

from dataclasses import dataclass

from symdiff.ir.node import Node


@dataclass(frozen=True)
class Static:
    """A compile-time Python object: a module, a function, a string."""

    obj: object


@dataclass(frozen=True)
class Undefined:
    """A variable assigned on only some paths through an ``if``."""

    name: str
    line: int


Value = Node | tuple["Value", ...] | Static | Undefined
