"""The object a transform returns: callable, inspectable, specialised per signature."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from symdiff.backend.cuda import is_device_array
from symdiff.backend.warm import WarmStart
from symdiff.custom import custom_vjp, is_module_global
from symdiff.errors import (
    SHAPE_MARK,
    ArgumentError,
    OutputError,
    ShapeError,
    SymdiffError,
    TranslationError,
)
from symdiff.frontend.lower import Lowerer, Traced, restructure, trace
from symdiff.frontend.source import (
    ShippedSource,
    function_source,
    portable_source,
    restore_source,
    signature,
)
from symdiff.frontend.values import (
    NAMEDTUPLE,
    TREE,
    is_namedtuple,
    namedtuple_kind,
    static_kind,
    static_value,
    tree_structure,
)
from symdiff.ir.loops import tape_arrays
from symdiff.ir.node import Node, topological
from symdiff.kernel import Kernel, build_kernel
from symdiff.transforms import PLANNERS, Spec, choose_mode, leaves, rebuild

TARGETS = ("cpu", "parallel", "cuda", "python")

_FLOAT_TYPES = (float, np.float64)


def _dtype_of(value: object) -> str | None:
    if isinstance(value, np.ndarray) or is_device_array(value):
        kind = value.dtype.kind
        dtype = {"b": "bool", "i": "int64", "u": "int64", "f": "float64"}.get(kind)
        if dtype is None or len(value.shape) == 0:
            # A 0-d host array is the number it holds (as NumPy's scalars are).
            return dtype if isinstance(value, np.ndarray) else None
        axes = ",".join("1" if d == 1 else ":" for d in value.shape)
        return f"{dtype}[{axes}]"
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int64"
    if isinstance(value, (float, np.floating)):
        return "float64"
    return None


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _unsupported(value: object, name: str, differentiated: bool) -> str | None:
    """What makes an argument that passes for a number or an array one that
    compiled code cannot take (ending with a help line), or None: a masked array
    (Numba has no masked arrays, and the mask would be ignored), an int that does
    not fit in int64 (or, differentiated and so made a float, in a float64)."""
    if isinstance(value, np.ma.MaskedArray):
        return (
            "is a masked array (numpy.ma.MaskedArray): compiled code takes plain "
            "arrays, and would ignore the mask\n  help: pass a plain ndarray: "
            f"`{name}.filled(v)` puts v where the mask is set, `np.asarray({name})` "
            "keeps the data under the mask"
        )
    if isinstance(value, np.unsignedinteger) and not differentiated:
        value = int(value)  # np.uint64(2**63) would wrap to a negative int64
    if not isinstance(value, int) or isinstance(value, (bool, np.integer)):
        return None
    if differentiated:  # made a float64
        try:
            float(value)
        except OverflowError:
            return (
                f"is an int with {len(str(abs(value)))} digits, too large for a "
                f"float64 (the type it is differentiated as)\n  help: pass a "
                "number below 1.8e308"
            )
        return None
    if _INT64_MIN <= value <= _INT64_MAX:
        return None
    shown = (
        str(value) if len(str(value)) <= 40 else f"an int of {len(str(value))} digits"
    )
    return (
        f"is {shown}, which does not fit in int64: compiled ints are 64-bit, as in "
        "NumPy and Numba\n  help: pass an int from -2**63 to 2**63 - 1, or a float "
        f"(float({name})) where a real number will do"
    )


def _int64_of(what: str, value: Any) -> int:
    """An unsigned int as the int64 a kernel takes, or a clear error (NumPy's
    conversion would wrap 2**63 to -2**63)."""
    number = int(value)
    if number > _INT64_MAX:
        raise ArgumentError(
            f"argument {what} is {number}, which does not fit in int64: compiled "
            "ints are 64-bit, as in NumPy and Numba\n  help: pass an int from "
            "-2**63 to 2**63 - 1, or a float where a real number will do"
        )
    return number


def annotated_dtype(param: inspect.Parameter) -> str:
    """The dtype a parameter has before any call: int64 or bool where it is
    annotated or defaults so (``def f(x, n: int)``, ``def f(x, n=3)``), else
    float64."""
    ann, default = param.annotation, param.default
    static = static_kind(default) if default is not param.empty else None
    if static is not None and ann in (param.empty, str, "str"):
        return static  # ``reduction="mean"``, ``w=None``: as the default is
    if ann in (int, "int") or (type(default) is int and ann is param.empty):
        return "int64"
    if ann in (bool, "bool") or (type(default) is bool and ann is param.empty):
        return "bool"
    return "float64"


_MISSING = object()


def _placeholder(value: object) -> int:
    """What a kernel takes for an argument it was specialised to (a string)."""
    return 0


def _a(noun: str) -> str:
    return ("an " if noun[:1] in "aeiouAEIOU" else "a ") + f"`{noun}`"


class _Omitted:
    """The default of a transform's function: none given, so the call returns a
    decorator (``@symdiff.grad(argnums=1)``); an explicit ``None`` is an error."""

    def __repr__(self) -> str:
        return "<omitted>"


OMITTED: Any = _Omitted()


def reject_symdiff_function(fun: Any, transform: str) -> None:
    """Raise :class:`ArgumentError` for one of symdiff's own functions
    (``symdiff.hvp``, a decorator from ``symdiff.grad()``): their source would be
    read as the user's, and an error would point into symdiff."""
    if not inspect.isfunction(fun):
        return
    # By where its code is, not its __module__: a doctest's functions have one
    # of symdiff's module names.
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    if not os.path.abspath(fun.__code__.co_filename).startswith(package):
        return
    name = f"{fun.__module__}.{fun.__qualname__}"
    if getattr(sys.modules["symdiff"], fun.__name__, None) is fun:
        name = f"symdiff.{fun.__name__}"
    if "<locals>" in name:  # the decorator that symdiff.grad() and co. return
        name = "a decorator returned by a symdiff transform called without a function"
    else:
        name = f"`{name}`, one of symdiff's own functions"
    raise ArgumentError(
        f"{transform} expects a function you wrote or a transform of one; got "
        f"{name}\n  help: pass a transform (symdiff.{transform}(symdiff.grad(f)), "
        f"...) or a user function (symdiff.{transform}(f))"
    )


def _key(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """What selects a kernel: the argument types, and for arrays their dtype, rank
    and which axes have length 1 (not their sizes); a string or a function
    argument itself (the kernel is specialised to it)."""
    return tuple(
        (type(a), a.dtype.char, tuple(d == 1 for d in a.shape))
        if isinstance(a, np.ndarray)
        or (type(a) not in _NUMBER_TYPES and is_device_array(a))
        else _tree_key(a)
        if _is_container(a)
        else (str, a)
        if type(a) is str
        else (type(a), id(a))
        if static_kind(a) is not None
        else type(a)
        for a in args
    )


_NUMBER_TYPES = frozenset((float, int, bool, np.float64, np.int64, np.bool_))
_CONTAINERS = (tuple, list, dict)


def _has_dict(tree: Any) -> bool:
    """Whether an output tree (:func:`symdiff.frontend.lower.restructure`) has a
    dict in it (else only namedtuples and tuples)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        kind, items = node
        if kind == "dict":
            return True
        stack.extend(items if kind != "dict" else ())
    return False


def _is_container(value: Any) -> bool:
    """A tuple, list, dict or namedtuple argument (a pytree, as JAX has them).
    A namedtuple holding anything but numbers and arrays (a string: a config,
    ``Cfg(scale=2.0, mode="sq")``) is a static object, as before namedtuples
    were pytrees."""
    if type(value) in _CONTAINERS:
        return True
    return is_namedtuple(value) and all(
        _dtype_of(leaf) is not None or _is_container(leaf) for leaf in value
    )


def _items(value: Any) -> list[tuple[Any, Any]]:
    """A container argument's (key, item) pairs: a dict's in its order (JAX sorts
    them; here the kernel's parameters follow the dict as written), a
    namedtuple's by field."""
    if isinstance(value, dict):
        return list(value.items())
    if is_namedtuple(value):
        return list(zip(value._fields, value, strict=True))
    return list(enumerate(value))


def _tree_key(value: Any) -> tuple[Any, ...]:
    """A container argument's part of a kernel's key: its structure and its
    leaves' keys."""
    out: list[Any] = []
    stack: list[Any] = [value]
    while stack:  # iterative: the user's nesting
        v = stack.pop()
        if _is_container(v):
            pairs = _items(v)
            out.append((type(v), tuple(k for k, _ in pairs)))
            stack.extend(item for _, item in reversed(pairs))
        else:
            out.append(_key((v,))[0])
    return tuple(out)


def _leaves_of(value: Any) -> list[Any]:
    """A container argument's leaves, left to right."""
    out: list[Any] = []
    stack: list[Any] = [value]
    while stack:
        v = stack.pop()
        if _is_container(v):
            stack.extend(item for _, item in reversed(_items(v)))
        else:
            out.append(v)
    return out


def _structure(value: Any, leaf_kind: Callable[[str, Any], str]) -> Any:
    """A container argument as the literal a TREE kind holds."""
    if not _is_container(value):
        return leaf_kind("", value)
    # ``("dict", ((key, sub), ...))``; built bottom-up without recursion
    order: list[tuple[str, Any]] = []
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, v = stack.pop()
        order.append((path, v))
        if _is_container(v):
            stack.extend((f"{path}[{k!r}]", item) for k, item in _items(v))
    built: dict[str, Any] = {}
    for path, v in reversed(order):
        if _is_container(v):
            items = tuple((k, built[f"{path}[{k!r}]"]) for k, _ in _items(v))
            kind = namedtuple_kind(type(v)) if is_namedtuple(v) else type(v).__name__
            built[path] = (kind, items)
        else:
            built[path] = leaf_kind(path, v)
    return built[""]


def _leaf_kinds(structure: Any) -> list[str]:
    out: list[str] = []
    stack = [structure]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            out.append(node)
        else:
            stack.extend(sub for _, sub in reversed(node[1]))
    return out


def _rebuild_tree(structure: Any, leaves: Any) -> Any:
    """Values shaped as a TREE kind's structure (a gradient shaped as its
    argument), from an iterator over the leaves' values."""
    if isinstance(structure, str):
        return next(leaves)
    container, items = structure
    values = [(k, _rebuild_tree(sub, leaves)) for k, sub in items]
    if container == "dict":
        return dict(values)
    if container.startswith(NAMEDTUPLE):
        return static_value(container)(*(v for _, v in values))  # type: ignore[operator]
    return (list if container == "list" else tuple)(v for _, v in values)


def _count_leaves(kind: str) -> int:
    return len(_leaf_kinds(tree_structure(kind))) if kind.startswith(TREE) else 1


def _call_without_missing(
    self: Compiled, values: tuple[Any, ...], extra: tuple[Any, ...]
) -> Any:
    """The generic call, for arguments that missed the fast path."""
    if all(v is not _MISSING for v in values):
        return Compiled.__call__(self, *values, *extra)
    # Some parameters were not given: pass the others by name, so that the
    # generic path reports exactly which are missing.
    names = list(self._signature.parameters)
    given = {n: v for n, v in zip(names, values, strict=True) if v is not _MISSING}
    return Compiled.__call__(self, **given)


def _binding_problem(
    signature: inspect.Signature,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    exc: TypeError,
) -> str:
    """What is wrong with a call's arguments: unknown keywords first (``inspect``
    reports a missing argument first and stops there, so ``f(1.0, z=2.0)`` read
    "missing 'y'" and never named ``z``), then what binding the rest finds."""
    unknown = [k for k in kwargs if k not in signature.parameters]
    if not unknown:
        return str(exc)
    which = (
        "unexpected keyword arguments"
        if unknown[1:]
        else "an unexpected keyword argument"
    )
    problem = f"got {which} {', '.join(map(repr, unknown))}"
    known = {k: v for k, v in kwargs.items() if k in signature.parameters}
    try:
        signature.bind(*args, **known)
    except TypeError as rest:
        problem += f"; also {rest}"
    return problem


def _unit_directions(
    shapes: list[tuple[int, ...]], i: int
) -> Iterator[tuple[tuple[int, ...], list[Any]]]:
    """For each position ``e`` of value ``i``: one direction per value (an array
    of ``shapes[k]``, a float for ``()``), zero everywhere but a 1 at ``e`` of
    value ``i``.  Jacobians and Hessians of arrays are a sweep per direction."""
    zeros: list[Any] = [np.zeros(s) if s else 0.0 for s in shapes]
    for e in np.ndindex(*shapes[i]):
        directions = list(zeros)
        unit = np.zeros(shapes[i]) if shapes[i] else 1.0
        if shapes[i]:
            unit[e] = 1.0
        directions[i] = unit
        yield e, directions


def _argument_error(
    compiled: Compiled, args: tuple[Any, ...], exc: Exception | None
) -> Exception:
    """The :class:`ArgumentError` for an argument a kernel could not take
    (an int beyond int64 reaching a kernel built for int64s raises
    OverflowError in Numba), else ``exc`` (an overflow of the computation)."""
    try:
        compiled._dtypes(args)
    except ArgumentError as error:
        return error
    return exc if exc is not None else ArgumentError("an argument does not fit")


def _shape_error(exc: ValueError) -> ValueError:
    """A kernel's shape check as a :class:`ShapeError`; other errors unchanged."""
    message = str(exc)
    if SHAPE_MARK in message and not isinstance(exc, ShapeError):
        return ShapeError(message)
    return exc


def _cast(value: Any) -> Any:
    """An argument converted to float64 (differentiated, or float32/float16
    data)."""
    if isinstance(value, np.ndarray) and value.ndim:
        return value.astype(np.float64)
    return float(value)


class _Composed:
    """A transform used as the function of another (``grad(grad(f))``): its
    planned outputs become the traced outputs the outer transform works on."""

    def __init__(self, inner: Compiled):
        self.inner = inner
        self.__name__ = self.__qualname__ = f"{inner.__name__}_{inner._spec.kind}"
        self.__signature__ = inner._signature

    def __call__(self, *args: Any) -> Any:
        return self.inner(*args)

    def __symdiff_trace__(
        self, dtypes: tuple[str, ...], same: dict[Any, Any] | None = None
    ) -> Traced:
        """``same``: the lengths of the arguments' axes, where the transform is
        called inside another function (:meth:`Compiled.__symdiff_inline__`)."""
        inner = self.inner
        wrt = {i % len(dtypes) for i in inner._spec.wrt}
        dtypes = tuple(
            "float64" + d[d.index("[") :]
            if i in wrt and "[" in d
            else "float64"
            if i in wrt
            else d
            for i, d in enumerate(dtypes)
        )
        tracer = getattr(inner._fun, "__symdiff_trace__", None)
        if tracer is not None:
            traced = tracer(dtypes)
        elif same is not None:
            traced = Lowerer().trace(inner._fun, dtypes, same)
        else:
            traced = trace(inner._fun, dtypes)
        plan = PLANNERS[inner._spec.kind](traced, inner._spec)
        return Traced(
            self.__name__,
            traced.params,
            plan.returns,
            plan.hints,
            traced.location,
            traced.checks,
            traced.raises,
        )


class Compiled:
    """A compiled transform of a Python function.

    Calling it runs a Numba kernel specialised to the argument types (Python
    ``float``, ``int``, ``bool`` and NumPy scalars); kernels are built on first use of
    a signature and reused.  The generated code can be read (:attr:`source`), the IR
    listed (:attr:`ir`) and the result shown symbolically (:meth:`latex`).
    """

    def __init__(self, fun: Callable[..., Any], spec: Spec, target: str = "cpu"):
        if isinstance(fun, Compiled):
            if fun._spec.kind in ("jvp", "vjp", "hvp"):
                raise ArgumentError(
                    f"cannot apply {spec.kind} to the {fun._spec.kind} of "
                    f"`{fun.__name__}`; transform `{fun.__name__}` itself instead"
                )
            fun = fun._fun if fun._spec.kind == "jit" else _Composed(fun)
        if fun is None:
            raise ArgumentError(
                f"{spec.kind} expects a function, got None\n  help: pass one, "
                f"symdiff.{spec.kind}(f, ...), or decorate it with "
                f"@symdiff.{spec.kind} or @symdiff.{spec.kind}(...)"
            )
        if not callable(fun):
            raise ArgumentError(
                f"{spec.kind} expects a function, got a `{type(fun).__name__}`"
            )
        reject_symdiff_function(fun, spec.kind)
        if target not in TARGETS:
            raise ArgumentError(
                f"unknown target {target!r}: choose one of {', '.join(TARGETS)}"
            )
        self._fun = fun
        self._spec = spec
        self._target = target
        self._kernels: dict[tuple[Any, ...], Callable[..., Any]] = {}
        self._by_dtypes: dict[tuple[str, ...], Kernel] = {}
        self._last: Kernel | None = None
        self._signature = self._check_function(fun)
        self._nparams = len(self._signature.parameters)
        #: the kinds of arguments a bound transform always passes (``self``)
        self.fixed_kinds: dict[int, str] = {}
        # calls with this many positional arguments and no keywords need no
        # binding (-1: keyword-only parameters are always bound by name)
        self._positional = (
            -1
            if any(
                p.kind is p.KEYWORD_ONLY for p in self._signature.parameters.values()
            )
            else self._nparams
        )
        functools.update_wrapper(self, fun)
        if spec.kind == "jit":
            # Calls to a jitted helper inside another symdiff function are inlined.
            self.__symdiff_function__ = fun

    def _check_function(self, fun: Callable[..., Any]) -> inspect.Signature:
        if not hasattr(fun, "__symdiff_trace__"):
            # A clear error now if there is no source to read.
            function_source(fun.fun if isinstance(fun, custom_vjp) else fun)
        sig = signature(fun)
        if any(
            p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            for p in sig.parameters.values()
        ):
            trace(fun, ("float64",) * len(sig.parameters))  # type: ignore[arg-type]
        n = len(sig.parameters)
        if self._spec.kind == "jit":
            return sig  # no argnums: a function of no parameters compiles too
        if n == 0 and self._spec.wrt:
            raise ArgumentError(
                f"{self._spec.kind} of `{fun.__name__}`: it takes no arguments, so "
                "there is nothing to differentiate with respect to\n  help: give "
                f"`{fun.__name__}` the parameters to differentiate, or compile it "
                "as it is with symdiff.jit"
            )
        for i in self._spec.wrt:
            if not -n <= i < n:
                raise ArgumentError(
                    f"argnums {self._spec.argnums!r} is out of range for "
                    f"`{fun.__name__}`, which takes {n} argument{'s' * (n != 1)}"
                )
        return sig

    # -- calling --------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) < self._nparams and any(a < 0 for a in self._spec.wrt):
            # argnums=-1 counts the call's positional arguments, as in JAX (not
            # the parameters with defaults after them)
            return self._counting_from(len(args))(*args, **kwargs)
        if kwargs or len(args) != self._positional:
            args = self._bind(args, kwargs)
        fn = self._kernels.get(_key(args))
        if fn is None:
            fn = self._specialise(args)
        try:
            return fn(*args)
        except ValueError as exc:
            raise _shape_error(exc) from None
        except OverflowError as exc:
            raise _argument_error(self, args, exc) from None

    def _counting_from(self, given: int) -> Compiled:
        """This transform with its negative ``argnums`` counted from the last of
        ``given`` positional arguments (made once per count)."""
        by_count: dict[int, Compiled] = self.__dict__.setdefault("_by_count", {})
        compiled = by_count.get(given)
        if compiled is None:
            argnums = self._spec.argnums
            wrt = [a + given if a < 0 else a for a in self._spec.wrt]
            if any(a < 0 for a in wrt):
                raise ArgumentError(
                    f"argnums {argnums!r} is out of range for a call of "
                    f"`{self.__name__}` with {given} positional argument"
                    f"{'s' * (given != 1)}"
                )
            spec = dataclasses.replace(
                self._spec, argnums=wrt[0] if isinstance(argnums, int) else tuple(wrt)
            )
            compiled = Compiled(self._fun, spec, self._target)
            compiled.fixed_kinds = dict(self.fixed_kinds)
            by_count[given] = compiled
        return compiled

    def call_extended(self, primals: tuple[Any, ...], extras: tuple[Any, ...]) -> Any:
        """Call a kernel that takes extra float parameters after the primals
        (tangents for jvp/hvp, cotangents for vjp)."""
        if len(primals) != self._positional:
            primals = self._bind(primals, {})
        fn = self._kernels.get(_key(primals))
        if fn is None:
            fn = self._specialise(primals)
        try:
            floats = tuple(
                np.asarray(e, dtype=np.float64)
                if isinstance(e, np.ndarray) and e.ndim
                else e
                if self._target == "cuda" and is_device_array(e)
                else float(e)
                for e in extras
            )
        except (TypeError, ValueError, OverflowError):
            kinds = ", ".join(type(e).__name__ for e in extras)
            raise ArgumentError(
                f"tangents and cotangents must be numbers; got {kinds}"
            ) from None
        try:
            return fn(*primals, *floats)
        except ValueError as exc:
            raise _shape_error(exc) from None
        except OverflowError as exc:
            raise _argument_error(self, primals, exc) from None

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            problem = _binding_problem(self._signature, args, kwargs, exc)
            raise ArgumentError(
                f"{self.__name__}{self._signature}: {problem}"
            ) from None
        bound.apply_defaults()
        return tuple(bound.arguments.values())

    def _cast_to_float(self, n: int) -> set[int]:
        """The positions of the differentiated arguments, made float64 (an int
        too).  jvp/vjp/hvp take every argument as a primal; ints among them stay
        ints (range bounds and indices work), and their tangents and adjoints
        flow through the arithmetic they take part in (transforms._seeds)."""
        if self._spec.kind in ("jit", "jvp", "vjp", "hvp"):
            return set()
        return {i % n for i in self._spec.wrt}

    def _dtypes(
        self, args: tuple[Any, ...]
    ) -> tuple[tuple[str, ...], dict[int, Callable[[Any], Any]]]:
        """The IR dtype per argument, and the conversion of the arguments that need
        one, by position: a float cast, or a 0-d array to its number."""
        names = list(self._signature.parameters)
        wrt = self._cast_to_float(len(args))
        dtypes: list[str] = []
        casts: dict[int, Callable[[Any], Any]] = {}
        for i, value in enumerate(args):
            if _is_container(value):
                dtypes.append(self._tree_kind(value, names[i], i in wrt))
                continue
            problem = _unsupported(value, names[i], i in wrt)
            if problem is not None:
                raise ArgumentError(
                    f"argument `{names[i]}` of `{self.__name__}` {problem}"
                )
            dtype = _dtype_of(value)
            if isinstance(value, np.ndarray) and value.ndim == 0 and dtype:
                casts[i] = np.ndarray.item  # a 0-d array: the number it holds
            if type(value) is np.uint64 and i not in wrt:
                # (the kernel is reused for every np.uint64: each is checked)
                casts[i] = functools.partial(
                    _int64_of, f"`{names[i]}` of `{self.__name__}`"
                )
            static = static_kind(value) if dtype is None else None
            if static is not None:
                # a string, None or a function: the kernel is specialised to it
                # and takes a placeholder in its place
                if i in wrt:
                    raise ArgumentError(
                        f"cannot differentiate with respect to `{names[i]}`: it is "
                        f"{_a(type(value).__name__)}, not a number or an array"
                    )
                casts[i] = _placeholder
                dtypes.append(static)
                continue
            if dtype is None:
                kind = type(value).__name__
                if isinstance(value, np.ndarray):
                    kind = f"{value.ndim}-d array of {value.dtype}"
                raise ArgumentError(
                    f"argument `{names[i]}` of `{self.__name__}` is a `{kind}`; "
                    "symdiff compiles functions of numbers and NumPy arrays: pass a "
                    "float, an int, a bool or an array of floats, ints or bools (or "
                    "a tuple, list or dict of them; strings, None, functions and "
                    "objects of your own classes are constants of the kernel)"
                )
            device = not isinstance(value, np.ndarray) and "[" in dtype
            if device and self._target != "cuda":
                raise ArgumentError(
                    f"argument `{names[i]}` of `{self.__name__}` is a CUDA device "
                    f"array, and its target is {self._target!r}: use "
                    "target='cuda', or copy it to the host (.copy_to_host())"
                )
            if i in wrt:
                if device and not dtype.startswith("float64"):
                    raise ArgumentError(
                        f"device array `{names[i]}` holds {value.dtype}: "  # type: ignore[attr-defined]
                        "differentiating needs float64 (convert it on the device)"
                    )
                if dtype == "bool":
                    raise ArgumentError(
                        f"cannot differentiate with respect to `{names[i]}`: it is a "
                        "bool"
                    )
                if "[" in dtype:
                    if value.dtype != np.float64:  # type: ignore[attr-defined]
                        casts[i] = _cast
                    dtype = "float64" + dtype[dtype.index("[") :]
                    dtypes.append(dtype)
                    continue
                if not isinstance(value, _FLOAT_TYPES):
                    casts[i] = _cast
                dtype = "float64"
            elif dtype.startswith("float64") and not device and i not in casts:
                # float32 (float16) data is computed in float64 like the rest: a
                # float32 array beside float64 ones has no np.dot in Numba
                if getattr(value, "dtype", np.float64) != np.float64:
                    casts[i] = _cast
            dtypes.append(dtype)
        return tuple(dtypes), casts

    def _tree_kind(self, value: Any, name: str, differentiated: bool) -> str:
        """The kind of a tuple, list or dict argument: its structure and each
        leaf's kind (a float64 where it is differentiated)."""

        def leaf_kind(path: str, leaf: Any) -> str:
            where = f"`{name}{path}`"
            dtype = _dtype_of(leaf)
            if dtype is None or ("[" in dtype and not isinstance(leaf, np.ndarray)):
                kind = type(leaf).__name__
                raise ArgumentError(
                    f"argument {where} of `{self.__name__}` is a `{kind}`; the "
                    "items of a tuple, list or dict argument must be numbers or "
                    "NumPy arrays"
                )
            if differentiated and dtype.startswith("bool"):
                raise ArgumentError(
                    f"cannot differentiate with respect to {where}: it is a bool"
                )
            if differentiated or dtype.startswith("float64"):
                return (
                    "float64" + dtype[dtype.index("[") :] if "[" in dtype else "float64"
                )
            return dtype

        return TREE + repr(_structure(value, leaf_kind))

    def _tree_call(
        self, dtypes: tuple[str, ...], casts: dict[int, Callable[[Any], Any]]
    ) -> Callable[..., Any]:
        """The call of a kernel whose arguments include tuples, lists or dicts:
        their leaves are its parameters; gradients come back shaped as the
        arguments (a dict of arrays for a dict of arrays, as in JAX)."""
        kind = self._spec.kind
        if (
            kind not in ("grad", "value_and_grad", "jit", "vjp")
            or self._target == "cuda"
        ):
            raise ArgumentError(
                f"{kind} of `{self.__name__}` with target {self._target!r}: tuple, "
                "list and dict arguments work with grad, value_and_grad, jit and "
                "vjp on the cpu, parallel and python targets; pass the arrays one "
                "by one"
            )
        counts = [_count_leaves(d) for d in dtypes]
        starts = [sum(counts[:i]) for i in range(len(counts))]
        n = len(dtypes)
        wrt = [i % n for i in self._spec.wrt]
        spec = self._spec
        if kind != "jit":
            argnums = tuple(
                j for i in wrt for j in range(starts[i], starts[i] + counts[i])
            )
            if not argnums:
                raise ArgumentError(
                    f"{kind} of `{self.__name__}`: the arguments to differentiate "
                    "hold no numbers"
                )
            spec = dataclasses.replace(spec, argnums=argnums)
        kernel = self._kernel(dtypes, spec)
        entry = self._restructuring(kernel.entry, kernel.traced.output_tree)
        trees = {
            i: tree_structure(d) for i, d in enumerate(dtypes) if d.startswith(TREE)
        }
        float_leaves = {
            i: [
                k == "float64" or k.startswith("float64[")
                for k in _leaf_kinds(trees[i])
            ]
            for i in trees
        }

        def regroup(grads: tuple[Any, ...]) -> Any:
            it = iter(grads)
            out = [_rebuild_tree(trees[i], it) if i in trees else next(it) for i in wrt]
            return out[0] if isinstance(self._spec.argnums, int) else tuple(out)

        def call(*args: Any) -> Any:
            flat: list[Any] = []
            for i, value in enumerate(args):
                if i not in trees:
                    flat.append(casts[i](value) if i in casts else value)
                    continue
                for leaf, to_float in zip(
                    _leaves_of(value), float_leaves[i], strict=True
                ):
                    if isinstance(leaf, np.ndarray) and leaf.ndim == 0:
                        leaf = leaf.item()
                    if (
                        to_float
                        and not (
                            isinstance(leaf, np.ndarray) and leaf.dtype == np.float64
                        )
                        and not isinstance(leaf, _FLOAT_TYPES)
                    ):
                        leaf = _cast(leaf)
                    flat.append(leaf)
            out = entry(*flat)
            if kind == "jit":
                return out
            if kind == "vjp":  # one cotangent per primal, shaped as it
                return regroup(out if isinstance(out, tuple) else (out,))
            if kind == "grad":
                return (regroup(out[0]), out[1]) if self._spec.has_aux else regroup(out)
            return (out[0], regroup(out[1]))

        return call

    def _specialise(self, args: tuple[Any, ...]) -> Callable[..., Any]:
        dtypes, casts = self._dtypes(args)
        if any(d.startswith(TREE) for d in dtypes):
            fn = self._tree_call(dtypes, casts)
            self._kernels[_key(args)] = fn
            return fn
        if self._spec.kind == "jacobian" and self._array_jacobian_needed(dtypes):
            fn = self._array_jacobian(dtypes)
        elif self._spec.kind == "hessian" and any("[" in d for d in dtypes):
            fn = self._array_hessian(dtypes)
        elif self._target == "cuda":
            fn = self._cuda_call(dtypes)
        else:
            kernel = self._kernel(dtypes)
            fn = self._restructuring(kernel.entry, kernel.traced.output_tree)
        entry = fn
        if self._target == "python":
            # Plain Python computes with any int: reject those a compiled kernel
            # cannot take (Numba raises OverflowError: _argument_error), alike.
            fn = self._checking_ints(fn, args)
        if casts:
            inner = fn

            def fn(*a: Any) -> Any:
                return inner(
                    *(casts[i](v) if i in casts else v for i, v in enumerate(a))
                )

        self._kernels[_key(args)] = fn
        if (
            not casts
            and self._target != "cuda"
            and type(self) is Compiled
            and self._spec.kind
            not in (
                "jacobian",
                "hessian",
            )
        ):
            self._install_fast_path(args, fn)
        if isinstance(entry, WarmStart):
            entry.when_loaded(lambda _: self._respecialise(args))
        return fn

    def _restructuring(self, fn: Callable[..., Any], tree: Any) -> Callable[..., Any]:
        """``fn`` giving back the dicts the function returns (``return loss,
        {"acc": acc}``), which the kernel returns as tuples: of ``jit``'s
        result and of the aux value of ``grad`` and ``value_and_grad``."""
        if tree is None:
            return fn
        kind = self._spec.kind
        if kind == "jit":
            return lambda *a: restructure(tree, fn(*a))
        if self._spec.has_aux and kind in ("grad", "value_and_grad"):
            aux = tree[1][1]
            if kind == "grad":
                return lambda *a: _with_aux(fn(*a), aux)
            return lambda *a: (lambda r: (_with_aux(r[0], aux), r[1]))(fn(*a))
        if not _has_dict(tree):
            return fn  # namedtuples: the derivatives of their fields, as tuples
        raise ArgumentError(
            f"{kind} of `{self.__name__}`: a dict output works with jit and as the "
            "aux value of grad and value_and_grad (has_aux=True)"
        )

    def _checking_ints(
        self, fn: Callable[..., Any], args: tuple[Any, ...]
    ) -> Callable[..., Any]:
        """``fn``, checking that the Python ints it is called with where ``args``
        has them (not made floats) fit in int64."""
        floats = self._cast_to_float(len(args))
        ints = [
            i
            for i, a in enumerate(args)
            if type(a) is int and i not in floats  # bool, np.int64: not int
        ]
        if not ints:
            return fn

        def checked(*a: Any) -> Any:
            if not all(_INT64_MIN <= a[i] <= _INT64_MAX for i in ints):
                raise _argument_error(self, a[: self._nparams], None)
            return fn(*a)

        return checked

    def _respecialise(self, args: tuple[Any, ...]) -> None:
        """Numba has loaded a warm-started kernel (:mod:`symdiff.backend.warm`):
        calls with ``args``' types go straight to its dispatcher from now on."""
        key = _key(args)
        self._kernels.pop(key, None)
        if getattr(self, "_fast_key", None) == key:
            self.__class__ = Compiled  # the fast path is rebuilt around Numba's
        self._specialise(args)

    def _install_fast_path(self, args: tuple[Any, ...], fn: Callable[..., Any]) -> None:
        """Give this object a ``__call__`` with the function's own parameters that
        checks the argument types of the first signature and calls its kernel.

        The generic path costs a ``*args`` tuple, a ``tuple(map(type, args))`` key
        and a dict lookup per call (~0.6 us, three times the kernel for a small
        function); the generated one costs one frame and an ``is`` per argument
        (for an array: its dtype, rank and which axes have length 1, the rest of
        its kernel's key).  ``__call__`` is looked up on the type, hence the
        per-object subclass.
        """
        params = list(self._signature.parameters.values())
        names = [p.name for p in params]
        reserved = {"self", "_kernel", "_generic", "_missing", "_extra"}
        reserved |= {f"_t{i}" for i in range(len(names))}
        reserved |= {f"_d{i}" for i in range(len(names))}
        reserved |= {"_shape_error", "_argument_error"}
        if any(p.default is not p.empty or p.kind is p.KEYWORD_ONLY for p in params):
            return
        if reserved & set(names):
            return
        # Missing or extra arguments fail the checks and reach the generic path,
        # which reports them; an unknown keyword is Python's own TypeError.
        arglist = ", ".join(names)
        tests = []
        for i, (n, a) in enumerate(zip(names, args, strict=True)):
            tests.append(f"type({n}) is _t{i}")
            if isinstance(a, np.ndarray):
                tests.append(f"{n}.dtype is _d{i} and {n}.ndim == {a.ndim}")
                tests += [
                    f"{n}.shape[{k}] {'==' if d == 1 else '!='} 1"
                    for k, d in enumerate(a.shape)
                ]
        checks = " and ".join(tests)
        name = self.__name__ if str(self.__name__).isidentifier() else "f"
        parameters = ", ".join(["self", *(f"{n}=_missing" for n in names), "*_extra"])
        values = "".join(f"{n}, " for n in names)  # a tuple's items: () for none
        source = (
            f"def {name}({parameters}):\n"
            f"    if {checks or 'True'} and not _extra:\n"
            f"        try:\n"
            f"            return _kernel({arglist})\n"
            f"        except ValueError as exc:\n"
            f"            raise _shape_error(exc) from None\n"
            f"        except OverflowError as exc:\n"
            f"            raise _argument_error(self, ({values}), exc) from None\n"
            f"    return _generic(self, ({values}), _extra)\n"
        )
        namespace: dict[str, Any] = {
            "_kernel": fn,
            "_generic": _call_without_missing,
            "_missing": _MISSING,
            "_shape_error": _shape_error,
            "_argument_error": _argument_error,
        }
        namespace.update({f"_t{i}": type(a) for i, a in enumerate(args)})
        namespace.update(
            {f"_d{i}": a.dtype for i, a in enumerate(args) if isinstance(a, np.ndarray)}
        )
        exec(
            compile(source, f"<symdiff fast path of {name}>", "exec"),
            namespace,
        )
        fast_call = namespace[name]
        fast = type(
            "Compiled",
            (Compiled,),
            {"__call__": fast_call, "__module__": Compiled.__module__},
        )
        self.__class__ = fast
        self._fast_key = _key(args)

    def _cuda_loop(self, kernel: Kernel) -> Any:
        """The CUDA kernel running ``kernel`` (see :mod:`symdiff.backend.cuda`),
        one element per argument array."""
        from symdiff.vectorize import cuda_loop

        names = [kernel.schedule.names[p] for p in kernel.plan.params]
        return cuda_loop(kernel, names)

    def _cuda_call(self, dtypes: tuple[str, ...]) -> Callable[..., Any]:
        """A call on the GPU with numbers: one thread (batches of numbers go
        through :func:`symdiff.vectorize`)."""
        from symdiff.backend import cuda

        kernel = self._kernel(dtypes)
        if kernel.device:  # an array program: a host function launching kernels
            return kernel.compiled
        loop = self._cuda_loop(kernel)
        in_types, out_types = io_dtypes(kernel)

        def run(*args: Any) -> Any:
            ins = [
                cuda.to_device(np.array([a], t))
                for a, t in zip(args, in_types, strict=True)
            ]
            outs = loop.run(1, ins, out_types)
            values = iter([o.copy_to_host()[0].item() for o in outs])
            return rebuild(kernel.returns, lambda _: next(values))

        return run

    def ptx(self, cc: tuple[int, int] | None = None) -> str:
        """The CUDA kernel of a ``target="cuda"`` transform compiled to PTX for
        compute capability ``cc`` (numba-cuda's default if None), for the last
        argument types called, else the annotated ones (float64 by default).
        Needs numba-cuda, not a GPU."""
        if self._target != "cuda":
            raise ArgumentError(
                f"PTX is generated for target='cuda'; `{self.__name__}` has "
                f"target={self._target!r}"
            )
        from symdiff.backend import cuda

        kernel = self.kernel
        if kernel.device:  # an array program: each kernel as it was launched
            return cuda.program_ptx(kernel.python, cc)
        in_types, out_types = io_dtypes(kernel)
        loop = self._cuda_loop(kernel)
        return str(loop.ptx(cuda.signature([*in_types, *out_types]), cc))

    def _array_jacobian_needed(self, dtypes: tuple[str, ...]) -> bool:
        if any("[" in d for d in dtypes):
            return True
        tracer = getattr(self._fun, "__symdiff_trace__", None)
        traced = tracer(dtypes) if tracer is not None else trace(self._fun, dtypes)
        return any(getattr(o, "shape", ()) for o in leaves(traced.output))

    def _array_jacobian(self, dtypes: tuple[str, ...]) -> Callable[..., Any]:
        """The Jacobian of an array function, one column (forward: a jvp per input
        element) or one row (reverse: a vjp per output element) at a time, the
        side with fewer sweeps unless ``mode`` says which."""
        spec = self._spec
        n = self._nparams
        wrt = [i % n for i in spec.wrt]
        swept = tuple(dict.fromkeys(wrt))  # what the jvp and vjp kernels take
        everything = tuple(range(n))
        build = functools.partial(
            build_kernel,
            self._fun,
            dtypes=dtypes,
            jit=self._target != "python",
            parallel=self._target == "parallel",
            device=self._target == "cuda",
        )
        kernels: dict[str, Kernel] = {}

        def kernel(kind: str) -> Kernel:
            if kind not in kernels:
                which = everything if kind == "jit" else swept
                kernels[kind] = build(spec=Spec(kind, which))
            self._last = kernels[kind]
            return kernels[kind]

        def run(*args: Any) -> Any:
            out = kernel("jit").compiled(*args)
            outs = [np.asarray(o, dtype=np.float64) for o in leaves(out)]
            shapes = [np.shape(a) for a in args]
            n_in = sum(int(np.prod(shapes[i])) for i in wrt)
            n_out = sum(o.size for o in outs)
            mode = choose_mode(spec.mode, n_in, n_out)
            self._array_mode = mode
            blocks = [[np.zeros(o.shape + shapes[i]) for i in wrt] for o in outs]
            if mode == "forward":
                jvp = kernel("jvp").compiled
                for col, i in enumerate(wrt):
                    for e, tangents in _unit_directions(shapes, i):
                        _, dots = jvp(*args, *(tangents[j] for j in swept))
                        for k, d in enumerate(leaves(dots)):
                            blocks[k][col][(..., *e)] = d
            else:
                vjp = kernel("vjp").compiled
                out_shapes = [o.shape for o in outs]
                for k in range(len(outs)):
                    for e, cotangents in _unit_directions(out_shapes, k):
                        grads = vjp(*args, *cotangents)
                        for col, i in enumerate(wrt):
                            blocks[k][col][e] = grads[swept.index(i)]
            cells = iter(
                b[0] if isinstance(spec.argnums, int) else tuple(b) for b in blocks
            )
            return rebuild(out, lambda _: next(cells))

        return run

    def _array_hessian(self, dtypes: tuple[str, ...]) -> Callable[..., Any]:
        """The Hessian blocks ``H[i][j]`` (shape ``x_i.shape + x_j.shape``) of a
        function of arrays: one Hessian-vector product (forward over reverse, never
        the whole matrix at once) per element of ``x_j``."""
        spec = self._spec
        n = self._nparams
        wrt = [i % n for i in spec.wrt]
        built: list[Kernel] = []

        def run(*args: Any) -> Any:
            if not built:
                try:
                    kernel = build_kernel(
                        self._fun,
                        Spec("hvp", tuple(range(n))),
                        dtypes,
                        jit=self._target != "python",
                        parallel=self._target == "parallel",
                        device=self._target == "cuda",
                    )
                except OutputError as exc:  # built from hvp: named as asked for
                    message = str(exc).replace("hvp needs", "hessian needs", 1)
                    raise OutputError(message) from None
                built.append(kernel)
            self._last = built[0]
            hvp = built[0].compiled
            shapes = [np.shape(a) for a in args]
            blocks = [[np.zeros(shapes[i] + shapes[j]) for j in wrt] for i in wrt]
            for col, j in enumerate(wrt):
                for e, vs in _unit_directions(shapes, j):
                    products = hvp(*args, *vs)
                    for row, i in enumerate(wrt):
                        blocks[row][col][(..., *e)] = products[i]
            if isinstance(spec.argnums, int):
                return blocks[0][0]
            return tuple(tuple(r) for r in blocks)

        return run

    def _kernel(
        self, dtypes: tuple[str, ...] | None = None, spec: Spec | None = None
    ) -> Kernel:
        if dtypes is None:
            if self._last is not None:
                return self._last
            assumed = self._annotated_dtypes()
            try:
                return self._kernel(assumed)
            except TranslationError as exc:
                raise self._needs_arrays(exc, assumed) from None
        kernel = self._by_dtypes.get(dtypes)
        if kernel is None:
            kernel = build_kernel(
                self._fun,
                spec or self._spec,
                dtypes,  # type: ignore[arg-type]
                jit=self._target != "python",
                parallel=self._target == "parallel",
                device=self._target == "cuda",
            )
            self._by_dtypes[dtypes] = kernel
        self._last = kernel
        return kernel

    def _needs_arrays(
        self, exc: TranslationError, assumed: tuple[str, ...]
    ) -> TranslationError:
        """``exc``, raised building the kernel that ``.source`` shows before any
        call, for float arguments.  When the function translates with arrays in
        their place, the floats were the problem (``X @ W`` of numbers): then
        the help says so, and to call the function with its arrays first."""
        floats = [i for i, d in enumerate(assumed) if d == "float64"]
        tracer = getattr(self._fun, "__symdiff_trace__", None)
        for axes in (":", ":,:", ":,:,:"):
            dtypes = tuple(
                f"float64[{axes}]" if i in floats else d for i, d in enumerate(assumed)
            )
            try:
                tracer(dtypes) if tracer is not None else trace(self._fun, dtypes)
            except (SymdiffError, ValueError):
                continue
            break
        else:
            return exc
        names = [n for i, n in enumerate(self._signature.parameters) if i in floats]
        hint = (
            f"before its first call, `.source` (.ir, .kernel) compiles "
            f"`{self.__name__}` for float arguments ({', '.join(names)}), and this "
            f"needs an array: call `{self.__name__}` once with its arrays, then "
            "`.source` shows the kernel of that call"
        )
        fixed = [dataclasses.replace(d, hint=hint) for d in exc.diagnostics]
        return TranslationError(exc.function, fixed)

    def _annotated_dtypes(self) -> tuple[str, ...]:
        """The signature ``.source`` shows before any call: float64, except for
        parameters annotated ``int`` or ``bool`` (or defaulting to one), so that
        ``def f(x, n: int)`` shows its loop over ``range(n)``."""
        return tuple(
            self.fixed_kinds.get(i) or annotated_dtype(p)
            for i, p in enumerate(self._signature.parameters.values())
        )

    # -- inspection -----------------------------------------------------------------
    def tape_bytes(self, *args: Any) -> int:
        """Bytes of tape a call with ``args`` allocates for its loops.

        Reverse mode through a loop stores, per iteration, the values its
        backward loop reads (``symdiff.grad(..., checkpoint=K)``: the loop state
        every ``K`` iterations, plus one segment's tape).  0 when the kernel has
        no tape.

        Raises
        ------
        ValueError
            When a ``while`` loop is taped: its size is known only once it ran
            (the message gives the bytes per iteration).
        """
        if len(args) != self._nparams:
            args = self._bind(args, {})
        kernel = self._kernel(self._dtypes(args)[0])
        total = 0
        for tape in tape_arrays(kernel.outputs):
            per_row = _ITEMSIZE[tape.dtype]
            rows = None
            for k, d in enumerate(tape.shape):
                size = _length_value(d, args)
                if size is None and k == 0:
                    rows = d
                    continue
                if size is None:
                    raise ValueError("a tape's size depends on values inside a loop")
                per_row *= size
            if rows is not None:
                raise ValueError(
                    f"the tape of a `while` loop grows with its trip count: "
                    f"{per_row} bytes per iteration"
                )
            total += per_row
        return total

    @property
    def kernel(self) -> Kernel:
        """The most recently used kernel (built for float arguments if none yet)."""
        return self._kernel()

    @property
    def mode(self) -> str | None:
        """For a jacobian: ``"forward"`` or ``"reverse"``, the mode used."""
        array_mode = getattr(self, "_array_mode", None)
        return array_mode if array_mode is not None else self.kernel.mode

    @property
    def source(self) -> str:
        """The generated Python/Numba source of the kernel (for ``target="cuda"``:
        of the CUDA kernel, which holds it as an inner function; for an array
        program, the module of its host function and CUDA kernels)."""
        if self._target == "cuda" and not self.kernel.device:
            return str(self._cuda_loop(self.kernel).source)
        return self.kernel.source

    @property
    def ir(self) -> str:
        """The kernel's DAG as a numbered SSA listing."""
        return self.kernel.ir

    @property
    def op_counts(self) -> dict[str, int]:
        """Operations in the kernel by kind; ``total`` = arithmetic + transcendental."""
        return self.kernel.op_counts

    @property
    def python(self) -> Callable[..., Any]:
        """The generated function, not compiled by Numba (for debugging)."""
        return self.kernel.python

    def to_sympy(self) -> Any:
        """The kernel's outputs as SymPy expressions (same structure as the result)."""
        from symdiff.symbolic import to_sympy

        kernel = self.kernel
        return to_sympy(kernel.returns)

    def latex(self) -> str:
        """The outputs in LaTeX, one ``name = expression`` per line."""
        import sympy

        from symdiff.symbolic import to_sympy

        kernel = self.kernel
        exprs = to_sympy(kernel.outputs)
        fname = kernel.traced.name if kernel.traced.name.isidentifier() else "f"
        if "_" in fname:  # upright: `my_loss` is not `my` with a subscript
            fname = rf"\mathrm{{{fname.replace('_', chr(92) + '_')}}}"

        def tex(name: str) -> str:
            return str(sympy.latex(sympy.Symbol(name)))

        # Output names follow the planners' patterns: x_bar, dout_dx, d2_dx_dy.
        labels: dict[str, str] = {}
        for a in kernel.plan.wrt:
            labels[f"{a}_bar"] = rf"\frac{{\partial {fname}}}{{\partial {tex(a)}}}"
            for b in kernel.plan.wrt:
                labels[f"d2_d{a}_d{b}"] = (
                    rf"\frac{{\partial^{{2}} {fname}}}"
                    rf"{{\partial {tex(a)}\,\partial {tex(b)}}}"
                )
        lines = []
        for name, expr in zip(kernel.output_names, exprs, strict=True):
            label = labels.get(name)
            if label is None:
                wrt = [w for w in kernel.plan.wrt if name.endswith(f"_d{w}")]
                if name.startswith("d") and wrt:
                    out = name[1 : -len(wrt[0]) - 2]
                    label = rf"\frac{{\partial {tex(out)}}}{{\partial {tex(wrt[0])}}}"
                else:
                    label = rf"\mathrm{{{name.replace('_', chr(92) + '_')}}}"
            lines.append(f"{label} = {sympy.latex(expr)}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<symdiff {self._spec.kind} of {self.__name__}>"

    def __symdiff_inline__(
        self, dtypes: tuple[str, ...], same: dict[Any, Any]
    ) -> Traced:
        """This transform's graph for a call of it inside a function symdiff
        lowers (``slope = grad(f)`` called in ``g``): arguments of ``dtypes``
        whose axes have the lengths ``same`` gives."""
        if self._spec.kind in ("jvp", "vjp", "hvp"):
            raise ArgumentError(
                f"`{self.__name__}` ({self._spec.kind}) cannot be called inside a "
                "function symdiff differentiates"
            )
        return _Composed(self).__symdiff_trace__(dtypes, same)

    def __reduce__(self) -> str | tuple[Any, ...]:
        """Pickled by reference when it is its module's global (a decorated
        function), else as the function, the transform and the target: kernels
        are built again where it is unpickled (a Dask worker, say), from the
        function's source."""
        if is_module_global(self):
            return str(self.__qualname__)
        shipped = portable_source(self._fun)
        if shipped is None:
            return (Compiled, (self._fun, self._spec, self._target))
        return (_unpickle, (self._fun, self._spec, self._target, shipped))

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)


def _with_aux(pair: Any, tree: Any) -> Any:
    """``(first, aux)`` with the aux value's dicts given back."""
    first, aux = pair
    return first, restructure(tree, aux)


def _unpickle(
    fun: Callable[..., Any], spec: Spec, target: str, shipped: ShippedSource
) -> Compiled:
    """A transform of a function pickled by value, with its file's lines."""
    restore_source(fun, shipped)
    return Compiled(fun, spec, target)


_ITEMSIZE = {"float64": 8, "int64": 8, "bool": 1}
_NUMPY_DTYPES = {"float64": np.float64, "int64": np.int64, "bool": np.bool_}


def io_dtypes(kernel: Kernel) -> tuple[list[type], list[type]]:
    """The NumPy dtypes of a scalar kernel's parameters and of its outputs: the
    element types of the arrays a batched loop over it takes."""
    return (
        [_NUMPY_DTYPES[p.dtype] for p in kernel.plan.params],
        [_NUMPY_DTYPES[n.dtype] for n in kernel.outputs],
    )


def _length_value(d: Any, args: tuple[Any, ...]) -> int | None:
    """The value of a length at a call with ``args``; None when it is known only
    while the kernel runs (a ``while`` loop's trip count)."""
    if isinstance(d, int):
        return d
    total = 0
    for monomial, coeff in d.terms:
        term = coeff
        for a in monomial:
            if a[0] == "shape":
                v: int | None = int(np.shape(args[a[1]])[a[2]])
            elif a[0] == "value":
                v = int(args[a[1]])
            elif a[0] == "node":
                v = _node_value(a[1], args)
            elif a[0] in ("amax", "amin"):
                v = None  # an array's extreme: only checks use it
            else:  # ("cdiv", d, k): ceil(d / k); ("div", d, e): d // e; "mod": d % e
                inner = _length_value(a[1], args)
                divisor = _length_value(a[2], args)
                if inner is None or divisor is None or divisor == 0:
                    v = None
                elif a[0] == "cdiv":
                    v = -(-inner // divisor)
                else:
                    v = inner // divisor if a[0] == "div" else inner % divisor
            if v is None:
                return None
            term *= v
        total += term
    return total


def _node_value(root: Node, args: tuple[Any, ...]) -> int | None:
    """An integer node's value at a call with ``args`` (None: not known before
    the kernel runs); ``min`` with an unknown side is its known side (inside a
    loop body, ``min(K, n - start)`` counts as ``K``: one checkpointing segment)."""
    values: dict[Node, int | None] = {}
    for n in topological([root]):
        a = [values.get(x) for x in n.args]
        if n.op == "const":
            values[n] = int(n.value)
        elif n.op == "param":
            values[n] = int(args[n.attrs[0]])
        elif n.op == "dim":
            values[n] = _length_value(n.attrs[0], args)
        elif n.op == "min" and (a[0] is None) != (a[1] is None):
            values[n] = a[0] if a[0] is not None else a[1]
        elif any(v is None for v in a) or n.op not in _INT_OPS:
            values[n] = None
        else:
            values[n] = int(_INT_OPS[n.op](*a))
    return values[root]


_INT_OPS: dict[str, Callable[..., int]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
    "max": max,
    "min": min,
    "maximum": max,
    "minimum": min,
    "fmax": max,
    "fmin": min,
    "neg": lambda a: -a,
}
