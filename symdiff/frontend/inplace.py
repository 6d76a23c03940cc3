"""NumPy calls that write into an array argument, as statements: ``np.add.at(K,
(rows, cols), ke)`` (a scatter-add: a position given twice gets both values, as
finite-element assembly needs), ``np.subtract.at``, ``np.copyto(dst, src)``,
``np.fill_diagonal(A, v)``, ``a.fill(v)`` and ``a.sort()``.

Each computes the array after the write and binds it to the written variable, as
an item assignment does (``statements.set_item``): a view's write reaches the
array it views (``views.py``), and in a loop the array becomes the loop's state.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

import numpy as np

from symdiff.frontend import arrays as AR
from symdiff.frontend.values import Static, Value
from symdiff.frontend.views import AMBIGUOUS
from symdiff.ir import arrays as A
from symdiff.ir import build as B
from symdiff.ir import shapes as S
from symdiff.ir.node import Node

if TYPE_CHECKING:
    from symdiff.frontend.lower import Frame

#: ``ufunc.at`` of these: a scatter of the values, added (subtracted: negated)
_AT = {np.add: 1.0, np.subtract: -1.0}


class InPlaceLowering:
    """Mixin of the Lowerer: in-place NumPy calls made as statements."""

    frame: Frame
    poison: Node
    hints: dict[Node, str]
    expr: Any
    error: Any
    wrote_in_place: Any
    _static_object: Any
    view_chain: Any
    _stmt_Assign: Any

    def inplace_call(self, stmt: ast.Expr, call: ast.Call) -> bool:
        """Lower ``call`` if it is an in-place NumPy call (else False)."""
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr in ("fill", "sort")
            and isinstance(func.value, ast.Name)
            and isinstance(self.frame.env.get(func.value.id), Node)
            and self.frame.env[func.value.id].shape  # type: ignore[union-attr]
        ):
            return self._method(stmt, call, func.value.id, func.attr)
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "fill"
            and isinstance(func.value, ast.Subscript)
            and len(call.args) == 1
            and not call.keywords
            and self.view_chain(func.value) not in (None, AMBIGUOUS)
        ):
            # Y[1].fill(v): the view filled, which is `Y[1] = v`
            assign = ast.copy_location(
                ast.Assign(targets=[func.value], value=call.args[0]), stmt
            )
            self._stmt_Assign(ast.fix_missing_locations(assign))
            return True
        obj = self._static_object(func)
        if obj is None:
            return False
        owner = getattr(obj, "__self__", None)
        if getattr(obj, "__name__", "") == "at" and isinstance(owner, np.ufunc):
            name = f"np.{owner.__name__}.at"
            if owner not in _AT:
                self.error(
                    call,
                    f"`{name}` is not supported",
                    "np.add.at and np.subtract.at are; for another operation, "
                    "loop over the positions and write `a[i] = ...`",
                )
                return True
            return self._write(stmt, call, name, lambda a, args: _at(a, args, owner))
        if obj is np.copyto:
            return self._write(stmt, call, "np.copyto", _copyto)
        if obj is np.fill_diagonal:
            return self._write(stmt, call, "np.fill_diagonal", _fill_diagonal)
        return False

    def _method(self, stmt: ast.Expr, call: ast.Call, name: str, method: str) -> bool:
        a: Node = self.frame.env[name]  # type: ignore[assignment]
        args = [self.expr(v) for v in call.args]
        kwargs = {k.arg: self.expr(k.value) for k in call.keywords if k.arg}
        if any(v is self.poison for v in (*args, *kwargs.values())):
            return True
        try:
            if method == "fill":
                if len(args) != 1 or kwargs:
                    raise AR.Unsupported(
                        "`fill` takes one value", f"write `{name}.fill(0.0)`"
                    )
                new = _filled(a, args[0])
            else:
                axis = kwargs.pop("axis", args[0] if args else None)
                if kwargs or len(args) > 1:
                    raise AR.Unsupported(
                        "`sort` takes only `axis` here",
                        f"write `{name}.sort()` or `{name}.sort(axis=0)`",
                    )
                k = -1 if axis is None else AR.static_int(axis, "the axis")
                if not -len(a.shape) <= k < len(a.shape):
                    raise AR.Unsupported(
                        f"axis {k} is out of bounds for an array of dimension "
                        f"{len(a.shape)}"
                    )
                new = A.sort(a, k % len(a.shape), f"{name}.sort")
        except (AR.Unsupported, S.ShapeMismatch) as exc:
            self.error(call, exc.args[0], getattr(exc, "hint", ""))
            return True
        self._rebind_written(stmt, name, new)
        return True

    def _write(self, stmt: ast.Expr, call: ast.Call, what: str, make: Any) -> bool:
        """``what(a, ...)`` writing into ``a``, its first argument: ``make`` gives
        the array after the write from ``a`` and the other arguments."""
        if not call.args or not isinstance(call.args[0], ast.Name):
            self.error(
                call,
                f"`{what}` writes into its first argument: it must be a variable",
                f"name the array first: `a = ...`, then `{what}(a, ...)`",
            )
            return True
        name = call.args[0].id
        a = self.expr(call.args[0])
        args = [self.expr(v) for v in call.args[1:]]
        if isinstance(call.args[1], ast.List) if len(call.args) > 1 else False:
            args[0] = (args[0],)  # np.add.at(a, [0, 2, 2], v): positions
        if call.keywords:
            self.error(call, f"`{what}` takes positional arguments here")
            return True
        if a is self.poison or any(v is self.poison for v in args):
            return True
        if not (isinstance(a, Node) and a.shape):
            self.error(
                call.args[0],
                f"`{what}` writes into an array: `{name}` is not one",
                f"create it first, e.g. `{name} = np.zeros(n)`",
            )
            return True
        try:
            new = make(a, args)
        except (AR.Unsupported, S.ShapeMismatch) as exc:
            self.error(call, exc.args[0], getattr(exc, "hint", ""))
            return True
        self._rebind_written(stmt, name, new)
        return True

    def _rebind_written(self, stmt: ast.Expr, name: str, new: Node) -> None:
        self.hints.setdefault(new, name)
        self.frame.env[name] = new
        self.wrote_in_place(name, stmt)


def _value(value: Value, dtype: str, what: str) -> Node:
    node = AR.array(value, what)
    return AR._cast(node, dtype) if node.dtype != dtype else node


def _filled(a: Node, value: Value) -> Node:
    v = _value(value, a.dtype, "the fill value")
    if v.shape:
        raise AR.Unsupported("`fill` takes a number", "write `a[...] = values`")
    return B.broadcast_to(v, a.shape)


def _copyto(a: Node, args: list[Value]) -> Node:
    if len(args) != 1:
        raise AR.Unsupported(
            "`np.copyto` takes the destination and the source here",
            "write `np.copyto(dst, src)`, or `dst[mask] = src[mask]` for `where=`",
        )
    src = _value(args[0], a.dtype, "the source")
    if S.broadcast([a.shape, src.shape], lambda: "in np.copyto") != a.shape:
        raise AR.Unsupported(
            f"could not broadcast an array of shape {S.format_shape(src.shape)} "
            f"into one of shape {S.format_shape(a.shape)}"
        )
    return B.broadcast_to(src, a.shape) if src.shape != a.shape else src


def _fill_diagonal(a: Node, args: list[Value]) -> Node:
    if len(args) != 1:
        raise AR.Unsupported(
            "`np.fill_diagonal` takes the array and a value here",
            "write `np.fill_diagonal(A, v)`",
        )
    if len(a.shape) != 2:
        raise AR.Unsupported(
            "`np.fill_diagonal` of an array that is not 2-D is not supported",
            "write the diagonal in a loop: `a[i, i, i] = v`",
        )
    rows, cols = a.shape
    if rows == cols:
        n = rows
    elif isinstance(rows, int) and isinstance(cols, int):
        n = min(rows, cols)
    else:
        raise AR.Unsupported(
            "`np.fill_diagonal` of a matrix that may not be square",
            "write the diagonal in a loop: `for i in range(min(n, m)): A[i, i] = v`",
        )
    v = _value(args[0], a.dtype, "the diagonal's value")
    if len(v.shape) > 1:
        raise AR.Unsupported("`np.fill_diagonal` takes a number or a 1-D array")
    positions = A.arange(n)
    if v.shape:
        S.unify(v.shape[0], n, "np.fill_diagonal: one value per diagonal element")
    return AR.advanced_update(a, (positions, positions), v, "set")


def _at(a: Node, args: list[Value], ufunc: np.ufunc) -> Node:
    """``np.add.at(a, key, b)``: ``b`` (broadcast to ``a[key]``) added at the
    positions, each time a position is given."""
    if len(args) != 2:
        raise AR.Unsupported(
            f"`np.{ufunc.__name__}.at` takes the array, the positions and the values",
            f"write `np.{ufunc.__name__}.at(a, idx, v)`",
        )
    key, b = args
    items = list(key) if isinstance(key, tuple) else [key]
    if isinstance(key, Static):
        items = [key]
    value = _value(b, a.dtype, "the values")
    if _AT[ufunc] < 0:
        value = B.neg(value)
    if not any(AR.is_array_index(i) for i in items):
        # np.add.at(a, 3, v), a[1:3]: distinct positions, an ordinary `+=`
        spec, index = AR.dynamic_spec(a, key, f"np.{ufunc.__name__}.at")
        region = A.region(a, spec)
        if value.shape and value.shape != region:
            S.broadcast([region, value.shape], lambda: "in np.add.at")
        return A.index_update(a, value, spec, index, "add")
    return AR.add_at(a, items, value, f"np.{ufunc.__name__}.at")
