"""What a Python expression can stand for while a function is lowered."""

from __future__ import annotations

import ast
import inspect
import os
import sys
import sysconfig
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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


@dataclass(frozen=True)
class Conflict(Undefined):
    """A variable whose shape after an ``if`` depends on the branch taken (a
    number in one, an array in the other): an error where it is read."""

    message: str = ""
    hint: str = ""


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


@dataclass(frozen=True)
class Masked:
    """``x[mask]``, a boolean-mask selection (:mod:`symdiff.frontend.masks`):
    ``data``, the whole array, of the mask's shape on its first axes, and
    ``mask``.  The selection's first axis stands for the mask's axes; its other
    axes are ``data``'s after them."""

    data: Node
    mask: Node
    #: for a slice with a run-time length (``x[:i]``, ``x[lag:]``): its length,
    #: start and stop as written (``masks.window``); ``data`` is then shifted
    #: to start at the slice's first element, and two such slices of one
    #: length pair up element by element, as in NumPy
    window: tuple[Node, Node, Node | None] | None = None

    @property
    def covered(self) -> int:
        """How many axes of ``data`` the mask covers."""
        return len(self.mask.shape)

    @property
    def rank(self) -> int:
        """The dimension of the selection (NumPy's ``x[mask].ndim``)."""
        return 1 + len(self.data.shape) - self.covered


@dataclass(frozen=True)
class MaskedMethod:
    """``x[mask].sum`` and the other reductions, as methods."""

    selection: Masked
    name: str


@dataclass(frozen=True)
class Maybe:
    """A variable that is None on some paths only: ``best = None`` before a
    loop whose body assigns it a number.  ``none`` holds where it is still
    None (``best is None``); any other use reads ``value`` (Python would fail
    on None there)."""

    none: Node
    value: Node


Value = Node | tuple["Value", ...] | Static | Undefined | Masked | Maybe


@dataclass(frozen=True)
class Raise:
    """``if cond: raise exception(message)`` in a kernel: a ``raise`` of the
    user's that runs only for some values (``if sigma <= 0: raise ...``).
    ``exception`` is a builtin exception's name (Numba raises those)."""

    cond: Node
    exception: str
    message: str


#: Arrays that stand for Python lists of numbers (``dp = [0] * (n + 1)``, a list
#: of rows, a list comprehension): a float written into one of ints makes it a
#: list of floats (statements.set_item), where a NumPy int array truncates.
LIST_ARRAYS: weakref.WeakSet[Node] = weakref.WeakSet()


def as_list(node: Node) -> Node:
    """``node``, marked as a Python list of numbers (:data:`LIST_ARRAYS`)."""
    LIST_ARRAYS.add(node)
    return node


# -- arguments that are Python objects, not numbers ------------------------------------
#: The prefix of a parameter kind (a dtype string) that stands for a Python object
#: passed as an argument: the function is lowered with the object in the
#: parameter's place, as a constant, and the kernel specialised to it.
STATIC = "static:"
_OBJECTS: dict[str, object] = {}


class Bound:
    """An object a transform passes as its function's first argument, as a
    constant: ``self`` of a bound method, a callable object."""

    __slots__ = ("obj",)

    def __init__(self, obj: object):
        self.obj = obj


def static_kind(value: object) -> str | None:
    """The kind of an argument that is a configuration object rather than data: a
    string (``reduction="mean"``), ``None`` (``w=None``), a function
    (``activation=np.tanh``), a :class:`Bound` object or an object of the user's
    own class (a config, a model: its attributes are read while tracing, and the
    kernel is specialised to the object); None for anything else."""
    if value is None or isinstance(value, str):
        return STATIC + repr(None if value is None else str(value))  # np.str_ too
    if isinstance(value, Bound):
        kind = f"{STATIC}{type(value.obj).__qualname__} object#{id(value)}"
        _OBJECTS[kind] = value.obj
        return kind
    if inspect.isfunction(value) or inspect.isbuiltin(value) or _is_ufunc(value):
        name = getattr(value, "__qualname__", None) or getattr(value, "__name__", "")
        kind = f"{STATIC}{name}#{id(value)}"
        _OBJECTS[kind] = value  # kept alive: the id stays this object's
        return kind
    if _user_object(value):  # a config object, a model: read while tracing
        kind = f"{STATIC}{type(value).__qualname__} object#{id(value)}"
        _OBJECTS[kind] = value
        return kind
    return None


_LIBRARY_DIRS = tuple(
    os.path.realpath(p) + os.sep
    for key in ("stdlib", "platstdlib", "purelib", "platlib")
    if (p := sysconfig.get_paths().get(key))
)


def _user_object(value: object) -> bool:
    """An instance of a class the user defined (in ``__main__`` or a module
    outside the standard library and installed packages)."""
    module_name = type(value).__module__ or ""
    if module_name == "__main__":
        return True
    if module_name.split(".")[0] in ("builtins", "symdiff"):
        return False
    path = getattr(sys.modules.get(module_name), "__file__", None)
    return bool(path) and not os.path.realpath(path).startswith(_LIBRARY_DIRS)


def static_value(kind: str) -> object:
    """The object a :func:`static_kind` stands for."""
    if kind in _OBJECTS:
        return _OBJECTS[kind]
    return ast.literal_eval(kind[len(STATIC) :])


#: The prefix of a container kind in a TREE structure that is a namedtuple class
#: (:func:`namedtuple_kind`); the class itself is :func:`static_value` of it.
NAMEDTUPLE = "namedtuple:"


def is_namedtuple(value: object) -> bool:
    """An instance of a ``collections.namedtuple`` (or ``typing.NamedTuple``)."""
    return isinstance(value, tuple) and isinstance(
        getattr(type(value), "_fields", None), tuple
    )


def namedtuple_kind(cls: type) -> str:
    """The name of a namedtuple class in a TREE structure (registered, so that
    :func:`static_value` gives the class back)."""
    kind = f"{NAMEDTUPLE}{cls.__qualname__}#{id(cls)}"
    _OBJECTS[kind] = cls
    return kind


def _is_ufunc(value: object) -> bool:
    import numpy as np

    return isinstance(value, np.ufunc)


#: The prefix of a parameter kind that stands for a tuple, list or dict of
#: numbers and arrays (a JAX pytree): ``tree:`` and the Python literal of its
#: structure, ``("dict", (("W", "float64[:,:]"), ("b", "float64[:]")))``; each
#: leaf is a parameter of the kernel.
TREE = "tree:"


def tree_structure(kind: str) -> Any:
    """The structure a :data:`TREE` kind stands for: a leaf's kind (a string), or
    ``(container, ((key, structure), ...))``."""
    return ast.literal_eval(kind[len(TREE) :])
