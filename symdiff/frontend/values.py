"""What a Python expression can stand for while a function is lowered."""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING

from symdiff.ir.node import Node

if TYPE_CHECKING:
    from symdiff.frontend.lower import Frame


@dataclass(frozen=True)
class Static:
    """A compile-time Python object: a module, a function, a string."""

    obj: object


@dataclass(frozen=True)
class Undefined:
    """A variable assigned on only some paths through an ``if``."""

    name: str
    line: int


@dataclass(eq=False)
class LocalFunction:
    """A ``def`` or ``lambda`` inside the function being lowered, inlined at each
    call.  Its body reads the variables of ``scope`` (the frame that defined it)
    as they are at the call, as a Python closure does; the values of its defaults,
    computed where it is defined, are the variable ``defaults`` of that frame, so
    that a loop around a call captures them like any other variable."""

    tree: ast.FunctionDef | ast.Lambda
    name: str
    scope: Frame
    signature: inspect.Signature
    defaults: str = ""  # the name of the frame variable holding the defaults


Value = Node | tuple["Value", ...] | Static | Undefined
