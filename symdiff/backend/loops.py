"""Array kernels: the graph as fused loop nests, BLAS calls and a few NumPy calls.

The plan, in one pass over the nodes in execution order:

* Element-wise nodes and reductions join a *loop group*: one loop nest over a shape.
  A node joins the latest group of its shape whose loop starts after everything
  it reads, except values the group itself computes at the same position; so a
  chain of element-wise ops, the reductions of it, and the element-wise parts of the
  backward pass that have the same shape run in one nest (``for i...: for j...:``).
* Inside a nest, a value used only there at the same position is a local scalar (or
  inlined into its one consumer); values needed elsewhere are written to an array
  allocated once before the nest.  Full reductions are scalar accumulators.
* Layout ops (broadcast, transpose, indexing, adding/removing axes of length 1,
  ``iota``) are not computed at all: reading them is index arithmetic on their
  source (``x[j, i]``, ``x[i + 1]``, ``b[j]``).
* Matrix products are ``np.dot`` (BLAS), with transposes as ``.T`` views;
  ``np.concatenate``/``np.array`` join arrays; general reshapes are views of
  contiguous buffers.

Every walk is over the node list, never recursive over the graph.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from symdiff.backend.cuda_program import DeviceProgram
from symdiff.backend.printer import P_ATOM, TEMPLATES, Printer
from symdiff.errors import ArgumentError
from symdiff.ir import linalg as LA
from symdiff.ir import loops as L
from symdiff.ir import shapes as S
from symdiff.ir.node import Node, topological
from symdiff.ir.shapes import Check, Length, Shape, format_dim
from symdiff.opt.schedule import MAX_INLINE, _Namer

#: How each array op is generated (ir/ops.py declares them; a test checks that
#: this table covers exactly ``ARRAY_OPS``): ``view`` ops are index arithmetic on
#: their source, ``statement`` ops are one NumPy call, reductions and scatters are
#: loop-nest members, ``leaf`` ops are names.  A reshape that only adds or removes
#: axes of length 1 is a view, any other a statement.
ARRAY_KINDS: dict[str, str] = {
    "dim": "leaf",
    "iota": "view",
    "broadcast": "view",
    "transpose": "view",
    "getitem": "view",
    "reshape": "view or statement",
    "scatter": "scatter",
    "concat": "statement",
    "pack": "statement",
    "dot": "statement",
    **dict.fromkeys(LA.FUNCTIONS, "statement"),  # np.linalg: one call each
    "take": "view",
    "index_update": "update",
    "argsort": "statement",  # np.argsort(x, kind="mergesort") of a 1-D array
    "loop": "loop",
    "item": "item",
    "sum": "reduce",
    "prod": "reduce",
    "amax": "reduce",
    "amin": "reduce",
}
VIEWS = frozenset(op for op, k in ARRAY_KINDS.items() if k == "view")
#: Ops printed as one call of a NumPy function that takes a matrix of any layout
#: (``np.dot``: BLAS; ``np.linalg``: Numba copies the operands for LAPACK), so a
#: transposed matrix is passed as a ``.T`` view, not copied first.
_ANY_LAYOUT = frozenset({"dot", *LA.FUNCTIONS})
_LOOP_VARS = ("i", "j", "k", "l")

_DTYPE_ARG = {"float64": "", "int64": ", np.int64", "bool": ", np.bool_"}


def has_arrays(nodes: Sequence[Node]) -> bool:
    """Whether a graph needs this generator (arrays or loops)."""
    return any(n.shape or n.op == "loop" for n in nodes)


def _refuse_on_device(nodes: Sequence[Node]) -> None:
    """``np.linalg`` calls have no CUDA kernel (numba-cuda compiles no LAPACK),
    nor has ``np.argsort``."""
    for n in nodes:
        if n.op == "argsort":
            raise ArgumentError(
                "cannot run on CUDA: np.sort and np.argsort have no CUDA "
                "kernel in symdiff. Use target='cpu' or 'parallel'"
            )
        if n.op in LA.FUNCTIONS:
            raise ArgumentError(
                f"cannot run on CUDA: {LA.FUNCTIONS[n.op]} has no CUDA kernel "
                "(numba-cuda compiles no LAPACK call). Use target='cpu' or "
                "'parallel'"
            )


def _squeeze_only(node: Node) -> bool:
    """A reshape that only adds or removes axes of length 1: an index map."""
    return [d for d in node.shape if d != 1] == [
        d for d in node.args[0].shape if d != 1
    ]


def kind(node: Node) -> str:
    """How ``node`` is generated: an ``ARRAY_KINDS`` entry, or ``leaf``,
    ``scalar`` or ``elementwise`` for the scalar ops."""
    op = node.op
    if op in ("param", "const", "var"):
        return "leaf"
    array_kind = ARRAY_KINDS.get(op)
    if array_kind == "view or statement":
        return "view" if _squeeze_only(node) else "statement"
    if array_kind is not None:
        return array_kind
    return "elementwise" if node.shape else "scalar"


@dataclass
class Group:
    """One loop nest over ``shape``; ``members`` computed in order inside it."""

    shape: Shape
    position: int
    members: list[Node] = field(default_factory=list)


@dataclass
class Unit:
    """A scalar statement, a whole-array statement, or a loop group."""

    node: Node | None = None
    group: Group | None = None


def loop_shape(node: Node) -> Shape:
    return node.args[0].shape if kind(node) in ("reduce", "scatter") else node.shape


class ArrayKernel:
    """Plans and prints one kernel that has array values."""

    def __init__(
        self,
        params: Sequence[Node],
        outputs: Sequence[Node],
        hints: Mapping[Node, str],
        output_hints: Sequence[str],
        first: Sequence[Node],
        checks: Sequence[Check],
        parallel: bool = False,
        parent: ArrayKernel | None = None,
        bound: Mapping[Node, str] | None = None,
        owned: frozenset[Node] = frozenset(),
        device: bool = False,
    ):
        self.parallel = parallel and parent is None and not device
        #: compiled with ``parallel=True`` (a loop body of such a kernel too)
        self.parallel_module: bool = (
            parent.parallel_module if parent is not None else self.parallel
        )
        self.owned = owned
        self.params = list(params)
        self.outputs = list(outputs)
        # one check per condition, however many lines assume it
        seen: set[tuple[Any, ...]] = set()
        unique = []
        for c in checks:
            key = (c.left, c.right, c.kind, c.when)
            if key not in seen:
                seen.add(key)
                unique.append(c)
        self.checks = unique
        needed = set(topological(outputs))
        self.forward = set(topological(first)) if first else set()
        order = [n for n in topological([*first, *outputs]) if n in needed]
        if any(n.op == "index_update" for n in order):
            order = _reads_first(order, self.forward)
        self.order = [n for n in order if kind(n) != "leaf"]
        self.consumers: dict[Node, list[Node]] = {}
        for n in self.order:
            for a in n.args:
                self.consumers.setdefault(a, []).append(n)
        self.kinds = {n: kind(n) for n in self.order}
        on_device = device or (parent is not None and parent.device is not None)
        if on_device:
            _refuse_on_device(self.order)
        self._needs_arrays(on_device)
        self.into: dict[Node, Node] = {}
        self._scatter_sums()
        self.names: dict[Node, str] = {}
        self.env: dict[Node, str] = {}
        self.device: DeviceProgram | None = None
        # the module's imports, from every printer of this kernel and its loops'
        self.imports: set[str] = parent.imports if parent is not None else set()
        if parent is None:
            self.namer = _Namer("__" if self.parallel else "_")
            if device:
                self.device = DeviceProgram(self.namer)
            by_index = {}
            for p in self.params:
                self.names[p] = self.namer.fresh(p.attrs[1])
                by_index[p.attrs[0]] = self.names[p]
            self.by_index = by_index
            self.loop_vars = [self.namer.fresh(v) for v in _LOOP_VARS]
        else:
            self.namer = parent.namer
            self.device = parent.device
            self.by_index = parent.by_index
            self.loop_vars = parent.loop_vars
            self.names.update(bound or {})
        self.hints = dict(hints)
        forward_outputs = set(self.forward)
        for node, hint in zip(outputs, output_hints, strict=False):
            if node not in forward_outputs or node in first:
                self.hints.setdefault(node, hint)
        self.units: list[Unit] = []
        self.position: dict[Node, int] = {}
        self.group_of: dict[Node, Group] = {}
        self._plan()
        self._decide_storage()
        self._liveness()

    # -- planning ---------------------------------------------------------------------
    def _needs_arrays(self, device: bool = False) -> None:
        """Views that something needs as a whole array become copies (element-wise);
        on CPUs a transposed matrix multiplied by ``np.dot`` stays a ``.T`` view."""
        wants: list[Node] = [o for o in self.outputs if o.shape]
        for n in self.order:
            k = self.kinds[n]
            if k == "loop":
                _, init, captured = L.operands(n)
                wants.extend(a for a in init if a.shape and not _const_fill(a))
                wants.extend(a for a in captured if a.shape)
                continue
            if k == "update":
                wants.extend(a for a in n.args[:2] if a.shape and not _const_fill(a))
                continue
            if k == "statement" and n.op != "pack":
                for a in n.args:
                    transposed = a.op == "transpose" and len(a.shape) == 2
                    if n.op in _ANY_LAYOUT and transposed and not device:
                        if self.kinds.get(a.args[0], "leaf") != "view":
                            continue  # printed as a `.T` view
                    wants.append(a)
        for a in wants:
            if self.kinds.get(a) == "view":
                self.kinds[a] = "elementwise"

    def _scatter_sums(self) -> None:
        """A sum whose terms include scatters (``x[1:]`` and ``x[:-1]`` both used:
        their adjoints land in shifted parts of ``x_bar``) is one zeroed buffer that
        every term adds into, each from its own loop: no buffer per term and no pass
        to add them up.  Other same-shape terms of the sum add into it too."""
        absorbed: set[Node] = set()
        for n in reversed(self.order):
            if n.op != "add" or not n.shape or n.dtype != "float64" or n in absorbed:
                continue
            leaves: list[Node] = []
            inner: list[Node] = []
            stack = list(n.args)
            ok = True
            while stack and ok:
                a = stack.pop()
                single = len(self.consumers.get(a, [])) == 1 and a not in self.outputs
                if not single or a.shape != n.shape or a.dtype != n.dtype:
                    ok = False
                elif a.op == "add" and self.kinds.get(a) == "elementwise":
                    inner.append(a)
                    stack.extend(a.args)
                elif a.op == "scatter" or self.kinds.get(a) == "elementwise":
                    leaves.append(a)
                else:
                    ok = False
            if not ok or not any(a.op == "scatter" for a in leaves):
                continue
            for leaf in leaves:
                self.into[leaf] = n
            for a in inner:
                self.kinds[a] = "absorbed"
                absorbed.add(a)
            self.kinds[n] = "scatter_sum"

    def _sources(self, node: Node, leaves: bool = False) -> list[Node]:
        """What reading ``node`` at some position really reads (through views);
        with ``leaves``, input arrays too."""
        out: list[Node] = []
        stack = [node]
        seen = set()
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            k = self.kinds.get(n, "leaf")
            if k in ("view", "virtual"):
                stack.extend(n.args)
            elif k != "leaf" or (leaves and n.shape):
                out.append(n)
        return out

    def _plan(self) -> None:
        groups: dict[Shape, list[Group]] = {}
        # Scalars computed from parameters only (``0.5 / X.shape[0]``) go first,
        # so that they separate no loop nests.
        early: set[Node] = set()
        for n in self.order:
            if self.kinds[n] == "scalar" and all(
                (self.kinds.get(a, "leaf") == "leaf" and not a.shape) or a in early
                for a in n.args
            ):
                early.add(n)
                self.units.append(Unit(node=n))
                self.position[n] = len(self.units) - 1
        for n in self.order:
            if n in early:
                continue
            k = self.kinds[n]
            if k in ("view", "absorbed"):
                continue
            if k == "item":
                self.position[n] = self.position[n.args[0]]
                continue
            if k == "scatter_sum":
                self.position[n] = max(
                    self.position[s] for s, t in self.into.items() if t is n
                )
                continue
            if k in ("scalar", "statement", "loop", "update"):
                self.units.append(Unit(node=n))
                self.position[n] = len(self.units) - 1
                continue
            shape = loop_shape(n)
            direct = {a for a in n.args if self.kinds.get(a) == "elementwise"}
            if n.op in VIEWS and n.op != "broadcast":
                # a copy of a view (``Q.T`` needed whole) reads its source at
                # other positions: the source must be complete before the nest
                direct = set()
            chosen = None
            for g in reversed(groups.get(shape, [])):
                if self._can_join(n, g, direct):
                    chosen = g
                    break
            if chosen is None:
                chosen = Group(shape, len(self.units))
                groups.setdefault(shape, []).append(chosen)
                self.units.append(Unit(group=chosen))
            chosen.members.append(n)
            self.group_of[n] = chosen
            self.position[n] = chosen.position

    def _can_join(self, n: Node, g: Group, direct: set[Node]) -> bool:
        for a in n.args:
            same_place = (
                a in direct and self.group_of.get(a) is g and a.shape == g.shape
            )
            if same_place:
                continue
            for src in self._sources(a):
                if self.position.get(src, -1) >= g.position:
                    return False
        return True

    def _decide_storage(self) -> None:
        """Which group members are arrays, local scalars, or inlined."""
        outputs = set(self.outputs)
        self.stored: set[Node] = set()
        self.inlined: set[Node] = set()
        size: dict[Node, int] = {}
        for n in self.order:
            k = self.kinds[n]
            if k == "scalar":
                uses = self.consumers.get(n, [])
                small = 1 + sum(size.get(a, 0) for a in n.args if a in self.inlined)
                if (
                    n not in outputs
                    and n not in self.hints
                    and not any(self.kinds.get(a) == "view" for a in n.args)
                    and len(uses) == 1
                    and not uses[0].shape
                    and self.kinds.get(uses[0]) == "scalar"
                    and small <= MAX_INLINE
                ):
                    self.inlined.add(n)
                    size[n] = small
                continue
            if k in ("reduce", "scatter", "statement", "scatter_sum", "update"):
                self.stored.add(n)
                continue
            if k == "item":
                if n.shape:
                    self.stored.add(n)
                continue
            if k != "elementwise":
                continue
            if n in self.into:
                continue  # added into its sum's buffer where it is computed
            g = self.group_of[n]
            uses = self.consumers.get(n, [])
            if self._virtual_ok(n, uses, outputs):
                # read element by element only (``d = X[i] - X[j]; d[0] ** 2``):
                # computed where read, never stored
                self.kinds[n] = "virtual"
                g.members.remove(n)
                continue
            local = n not in outputs and all(
                self.group_of.get(c) is g
                and self.kinds[c] in ("elementwise", "reduce", "scatter")
                and loop_shape(c) == n.shape
                for c in uses
            )
            if not local:
                self.stored.add(n)
            elif len(uses) == 1 and n not in self.hints:
                small = 1 + sum(size.get(a, 0) for a in n.args if a in self.inlined)
                if small <= MAX_INLINE and n.op not in VIEWS and n.op != "reshape":
                    self.inlined.add(n)
                    size[n] = small

    def _virtual_ok(self, n: Node, uses: list[Node], outputs: set[Node]) -> bool:
        """Whether ``n`` is only ever read one element at a time, a few times,
        from operands that are themselves readable anywhere."""
        return (
            n not in outputs
            and 0 < len(uses) <= 4
            and n.op not in VIEWS
            and n.op != "reshape"
            and all(
                self.kinds.get(c) == "view"
                and c.op in ("getitem", "take")
                and not c.shape
                for c in uses
            )
            and all(self._readable(a) for a in n.args)
        )

    def _readable(self, a: Node) -> bool:
        """Whether ``a`` can be read at any position from anywhere: a number, an
        input, a stored array, or a view of those."""
        if not a.shape:
            return True
        k = self.kinds.get(a, "leaf")
        if k == "view":
            return all(
                self.kinds.get(s) == "item" or s in self.stored
                for s in self._sources(a)
            )
        return k in ("leaf", "item") or a in self.stored

    def _liveness(self) -> None:
        """The last unit that reads each stored array (seed 002 section 4.2: a
        forward value's buffer is free once nothing needs it), so that a later
        array of the same shape and dtype is written into it instead of a new
        allocation.  Views keep their source alive; outputs are never freed."""
        self.last_use: dict[Node, int] = {}
        self.readers: dict[Node, list[tuple[int, Node]]] = {}
        for k, unit in enumerate(self.units):
            members = self._unit_nodes(unit)
            for m in members:
                for a in m.args:
                    for src in self._sources(a, leaves=True):
                        self.last_use[src] = max(self.last_use.get(src, -1), k)
                        self.readers.setdefault(src, []).append((k, m))
        for n in reversed(self.order):  # a reshape view extends its source's life
            if n.op == "reshape" and self.kinds.get(n) == "statement":
                for src in self._sources(n.args[0]):
                    self.last_use[src] = max(
                        self.last_use.get(src, -1), self.last_use.get(n, 1 << 30)
                    )
        for o in self.outputs:
            for src in self._sources(o) if self.kinds.get(o) == "view" else [o]:
                self.last_use[src] = 1 << 30
        self.free: dict[tuple[str, str], list[tuple[int, Node]]] = {}
        self._aliases()

    def _aliases(self) -> None:
        """Which array updates write in place (``out[i] = v`` into ``out`` itself)
        and which loops take their initial arrays without a copy: where nothing
        reads the old array afterwards.  An array that lives on under another
        name keeps its buffer until the last reader of every name."""
        self.in_place: set[Node] = set()
        self.no_copy: set[tuple[Node, int]] = set()
        root: dict[Node, Node] = {}
        for k, unit in enumerate(self.units):
            n = unit.node
            if n is None:
                continue
            if self.kinds[n] == "update" and self._owned_after(n.args[0], n, k):
                self.in_place.add(n)
                root[n] = root.get(n.args[0], n.args[0])
            elif self.kinds[n] == "loop":
                _count, init, captured = L.operands(n)
                for j, a in enumerate(init):
                    if a in captured:
                        continue  # the body also reads it unchanged: copy the state
                    if a.shape and not _const_fill(a) and self._owned_after(a, n, k):
                        if init.index(a) == j:  # the same array twice: copy the second
                            self.no_copy.add((n, j))
                            root[L.result(n, j)] = root.get(a, a)
        for alias, owner in root.items():
            self.last_use[owner] = max(
                self.last_use.get(owner, -1), self.last_use.get(alias, -1)
            )

    def _owned_after(self, a: Node, user: Node, k: int) -> bool:
        """Whether ``user`` (unit ``k``) may take over array ``a``: this kernel
        made it, and nothing reads it after ``k``."""
        if a.op == "param" or (a.op == "var" and a not in self.owned):
            return False
        if self.kinds.get(a) == "view" or a in self.outputs:
            return False
        if a.op == "reshape":
            # printed `np.ascontiguousarray(x).reshape(...)`: a view of x's memory
            # (an argument's, say) wherever x is contiguous, never this kernel's own
            return False
        if a.op != "var" and a not in self.stored:
            return False
        return all(pos < k or m is user for pos, m in self.readers.get(a, []))

    def _buffer(self, m: Node, unit: int, ind: str) -> str:
        """The allocation of ``m``'s array: a dead buffer of its shape, or new."""
        shape = self.shape_text(m.shape)
        pool = self.free.get((shape, m.dtype), [])
        for k, (dead_after, owner) in enumerate(pool):
            if dead_after < unit:
                del pool[k]
                return (
                    f"{ind}{self._name(m)} = {self.names[owner]}"
                    f"  # {self.names[owner]} is dead: reuse its memory"
                )
        return f"{ind}{self._name(m)} = {self._empty(shape, m.dtype)}"

    def _release(self, m: Node) -> None:
        """``m``'s buffer may be taken once its last reader has run."""
        last = self.last_use.get(m, 1 << 30)
        if last < 1 << 30:
            key = (self.shape_text(m.shape), m.dtype)
            self.free.setdefault(key, []).append((last, m))

    # -- printing ---------------------------------------------------------------------
    def param_name(self, i: int | Node) -> str:
        """The name of parameter ``i``, or the text of a run-time count node."""
        if isinstance(i, Node):
            if i.op == "dim":  # a length node (a trip count over an array's rows)
                return self.dim(i.attrs[0])
            return self._scalar_text(i, self.env)
        return self.by_index[i]

    def dim(self, d: Length) -> str:
        return format_dim(d, self.param_name)

    def shape_text(self, shape: Shape) -> str:
        """A shape as a tuple expression; a length that can be negative (``x[1:]``
        of an empty ``x``: ``x.shape[0] - 1``) is clipped at 0, as NumPy's slice
        of it is empty."""
        items = [
            f"max({self.dim(d)}, 0)" if _may_be_negative(d) else self.dim(d)
            for d in shape
        ]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

    def _name(self, n: Node) -> str:
        if n not in self.names:
            self.names[n] = self.namer.fresh(self.hints.get(n))
        return self.names[n]

    def read(self, node: Node, idx: list[str], env: Mapping[Node, str]) -> str:
        """Text reading ``node`` at position ``idx`` (one index per axis)."""
        steps = 0
        while True:
            steps += 1
            k = self.kinds.get(node, "leaf")
            if k == "virtual":
                return self._virtual_text(node, idx, env)
            if node.op == "iota" and k == "view":
                return idx[node.attrs[0]]  # reached through a view of it
            if not node.shape and k != "view":
                return self._scalar_text(node, env)
            if node.op in ("param", "var") or (node in self.stored and node.shape):
                name = self.names[node]
                return f"{name}[{', '.join(idx)}]" if idx else name
            if k != "view":
                if node in env:
                    return env[node]
                raise AssertionError(f"no way to read {node!r}")
            node, idx = self._through(node, idx)

    def _virtual_text(self, n: Node, idx: list[str], env: Mapping[Node, str]) -> str:
        """An element-wise value at one position, as an expression."""
        names: dict[Node, str] = {}
        for a in n.args:
            if not a.shape:
                names[a] = self._scalar_text(a, env)
                continue
            lead = len(n.shape) - len(a.shape)
            at = [
                "0" if d == 1 and n.shape[lead + k] != 1 else idx[lead + k]
                for k, d in enumerate(a.shape)
            ]
            text = self.read(a, at, env)
            names[a] = (
                text if text.endswith("]") or text.isidentifier() else f"({text})"
            )
        return f"({self._printer().definition(n, names)[0]})"

    def _through(self, node: Node, idx: list[str]) -> tuple[Node, list[str]]:
        """One view step: ``node`` at ``idx`` is its source at the returned index."""
        src = node.args[0] if node.args else node
        if node.op == "iota":
            return node, idx  # handled by the caller (env)
        if node.op == "broadcast" or node.op == "reshape":
            if node.op == "reshape":
                kept = [i for i, d in zip(idx, node.shape, strict=True) if d != 1]
                it = iter(kept)
                return src, ["0" if d == 1 else next(it) for d in src.shape]
            lead = len(node.shape) - len(src.shape)
            out = []
            for k, d in enumerate(src.shape):
                out.append(
                    "0" if d == 1 and node.shape[lead + k] != 1 else idx[lead + k]
                )
            return src, out
        if node.op == "take":
            out = []
            it = iter(idx)
            for axis, entry in enumerate(node.attrs[0]):
                if entry[0] == "at":
                    text = self._scalar_text(node.args[1 + entry[1]], self.env)
                    out.append(self._position(text, entry, src.shape[axis]))
                elif entry[0] == "all":
                    out.append(next(it))
                else:
                    i = next(it)
                    start = entry[1]
                    out.append(
                        i if start == 0 else f"{i} + {self._paren(self.dim(start))}"
                    )
            return src, out
        if node.op == "transpose":
            perm = node.attrs[0]
            out = [""] * len(perm)
            for k, p in enumerate(perm):
                out[p] = idx[k]
            return src, out
        # getitem
        out = []
        it = iter(idx)
        for entry in node.attrs[0]:
            if entry[0] == "new":
                next(it)
            elif entry[0] == "int":
                out.append(self.dim(entry[1]))
            else:
                _, start, _, step = entry
                i = next(it)
                if " " in i:
                    i = f"({i})"
                term = (
                    i if step == 1 else f"{step} * {i}" if step > 0 else f"{i} * {step}"
                )
                if step < 0:
                    term = f"{-step} * {i}" if step != -1 else i
                    out.append(f"{self._paren(self.dim(start))} - {term}")
                elif start == 0:
                    out.append(term)
                else:
                    out.append(f"{term} + {self._paren(self.dim(start))}")
        return src, out

    @staticmethod
    def _paren(text: str) -> str:
        """``text`` as an operand: bracketed unless it is one name or number."""
        return text if " " not in text else f"({text})"

    def _scalar_env(self) -> dict[Node, str]:
        env: dict[Node, str] = _Reads(self)
        for p in self.params:
            env[p] = self.names[p]
        for n, name in self.names.items():  # a body's inputs
            if n.op == "var" and not n.shape:
                env[n] = name
        self.env = env
        return env

    def _printer(self) -> Printer:
        """A printer whose imports (``math`` for ``math.inf``) reach the module."""
        printer = Printer()
        printer.imports = self.imports
        return printer

    def source(
        self,
        name: str,
        returns: Any,
        header: Sequence[str],
        sections: Mapping[int, str],
        raises: Sequence[Any] = (),
    ) -> str:
        printer = self._printer()
        env = self._scalar_env()
        if self.device is not None:
            self.device.base = name
            self.namer.taken.add(name)  # no helper or kernel may take its name
        body: list[str] = []
        ind = printer.indent
        if self.checks:
            body.append(f"{ind}# shapes must agree (NumPy's rules)")
        for check in self.checks:
            left, right = self.dim(check.left), self.dim(check.right)
            test = "!=" if check.kind == "eq" else ">="
            guard = "".join(
                TEMPLATES[op][0].format(self.dim(a), self.dim(b)) + " and "
                for op, a, b in check.when
            )  # the `if` around the code that assumes it
            body.append(f"{ind}if {guard}{left} {test} {right}:")
            if check.kind == "eq":  # the two lengths
                got = f'" (got " + str({left}) + " and " + str({right}) + ")"'
            else:  # an order: the value of each side that is not a constant
                shown = [t for t in (left, right) if not t.lstrip("-").isdigit()]
                shown = shown or [left, right]
                got = ' + ", " + '.join(f"{t + ' = '!r} + str({t})" for t in shown)
                got = f'" (got " + {got} + ")"'
            # the values go on the message's first line, before the quoted source
            head, newline, rest = check.message.partition("\n")
            tail = f" + {newline + rest!r}" if newline else ""
            body.append(f"{ind}{ind}raise ValueError({head!r} + {got}{tail})")
        section = next(iter(sections.values())) if sections else None
        body += self.lines(env, printer, section)
        body += printer.raise_lines(raises, env)
        ret = self._returns(returns, env, printer)
        body.append(f"{ind}return {ret}")
        params = ", ".join(self.names[p] for p in self.params)
        if self.device is not None:
            host = "\n".join([f"def {name}({params}):", *body])
            notes = [
                "CUDA: the host function at the end allocates device arrays and "
                "launches the kernels",
            ]
            return self.device.module([*header, *notes], host)
        lines = [f"# {h}" for h in header]
        printer.imports.add("import numpy as np")
        lines += sorted(printer.imports)
        lines += ["", "", f"def {name}({params}):", *body]
        return "\n".join(lines) + "\n"

    def lines(
        self, env: dict[Node, str], printer: Printer, section: str | None = None
    ) -> list[str]:
        """The statements of every unit, indented one level; ``section`` is a
        comment printed where the backward (or tangent) part starts."""
        self.env = env
        for n in topological([*self.order, *self.outputs]):  # `return len(x)`
            if n.op == "dim":
                env[n] = self._paren(self.dim(n.attrs[0]))
        ind = printer.indent
        body: list[str] = []
        # "# backward" goes after the last unit that computes a forward value
        # (fusion puts backward values into forward loops, never the reverse)
        last_forward = max(
            (
                k
                for k, unit in enumerate(self.units)
                if any(n in self.forward for n in self._unit_nodes(unit))
            ),
            default=-1,
        )
        for k, unit in enumerate(self.units):
            labelled = (
                unit.node is not None
                and unit.node.op == "loop"
                and L.body_of(unit.node).label.startswith(section or "-")
            )
            if section and k == last_forward + 1 and 0 <= last_forward and not labelled:
                body.append(f"{ind}# {section}")
            if unit.node is not None and self.kinds[unit.node] == "loop":
                body.extend(self._loop(unit.node, k, env, printer))
            elif unit.node is not None and self.kinds[unit.node] == "update":
                body.extend(self._update(unit.node, k, env, printer))
            elif unit.node is not None:
                body.extend(self._statement(unit.node, env, printer))
            else:
                body.extend(self._group(unit.group, env, printer))  # type: ignore[arg-type]
        return body

    @staticmethod
    def _unit_nodes(unit: Unit) -> list[Node]:
        if unit.node is not None:
            return [unit.node]
        return unit.group.members if unit.group is not None else []

    def _returns(self, returns: Any, env: dict[Node, str], printer: Printer) -> str:
        def text(v: Any) -> str:
            if isinstance(v, Node):
                if v.shape and v.op == "param":
                    # a result is never the caller's own array (`grad` of
                    # np.sum(w * X) is X's values, in an array of its own)
                    return self._copy(self._array_text(v))
                if v in self.names:
                    return self.names[v]
                return printer.expr(v, env)[0]
            items = [text(x) for x in v]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

        if isinstance(returns, tuple) and len(returns) > 1:
            return ", ".join(text(v) for v in returns)
        return text(returns)

    def _value(self, v: Node, env: Mapping[Node, str]) -> str:
        """A value as an operand: an array's name, a scalar's text."""
        if v.shape and v not in self.names and v.op == "broadcast":
            # a number stretched (`[0.0] * 3` written into a row): the number,
            # which the assignment broadcasts itself
            source = v.args[0]
            if not source.shape:
                return self._scalar_text(source, env)
        if v.shape:
            return self._array_text(v)
        return self._scalar_text(v, env)

    def _fill(self, a: Node) -> str:
        """A new array of a constant (``np.zeros((n, 3))``)."""
        return self._full(self.shape_text(a.shape), a.args[0].value, a.dtype)

    def _full(self, shape: str, value: Any, dtype: str) -> str:
        """A new array of ``shape`` (text) with every element ``value`` (a number
        or its text)."""
        text = value if isinstance(value, str) else repr(value)
        if isinstance(value, float) and not math.isfinite(value):
            # repr gives `inf`/`nan`, names no module defines
            text = (
                "np.nan" if value != value else ("np.inf" if value > 0 else "-np.inf")
            )
        if self.device is not None:
            return self.device.full(shape, text, dtype)
        if not isinstance(value, str) and value == 0:
            return f"np.zeros({shape}{_DTYPE_ARG[dtype]})"
        return f"np.full({shape}, {text}{_DTYPE_ARG[dtype]})"

    def _empty(self, shape: str, dtype: str) -> str:
        """A new array of ``shape`` (text), written before it is read."""
        if self.device is not None:
            return self.device.empty(shape, dtype)
        return f"np.empty({shape}{_DTYPE_ARG[dtype]})"

    def _copy(self, array: str) -> str:
        """A new array with the elements of ``array`` (text)."""
        if self.device is not None:
            return self.device.copy(array)
        return f"np.copy({array})"

    def _update(
        self, n: Node, k: int, env: dict[Node, str], printer: Printer
    ) -> list[str]:
        """``out[i] = v`` / ``acc[i, :] += v``: in place when the old array is
        not needed afterwards, else into a copy."""
        ind = printer.indent
        base, value, *index = n.args
        mode, spec = n.attrs
        lines = []
        if n in self.in_place:
            self.names[n] = target = self.names[base]
        elif _const_fill(base):
            target = self._name(n)
            lines.append(f"{ind}{target} = {self._fill(base)}")
        else:
            target = self._name(n)
            lines.append(f"{ind}{target} = {self._copy(self._array_text(base))}")
        at = []
        for axis, entry in enumerate(spec):
            if entry[0] == "at":
                text = self._scalar_text(index[entry[1]], env)
                at.append(self._position(text, entry, base.shape[axis]))
            elif entry[0] == "all":
                at.append(":")
            else:
                start = self.dim(entry[1])
                stop = self.dim(S.add(entry[1], entry[2]))
                at.append(f"{'' if start == '0' else start}:{stop}")
        op = "+=" if mode == "add" else "="
        if self.device is not None:
            lines.append(f"{ind}{self._device_update(n, target, op, env)}")
            return lines
        if self.parallel_module and any(e[0] != "at" for e in spec):
            # Numba's parallel lowering miscompiles a slice assignment after the
            # shape checks (``lap[1:n - 1] = t0`` wrote zeros): a loop instead
            loops, body = self._region_loop(n, target, op, env)
            for depth, (var, dim) in enumerate(loops, 1):
                lines.append(f"{ind * depth}for {var} in range({dim}):")
            lines.append(f"{ind * (len(loops) + 1)}{body}")
            return lines
        lines.append(f"{ind}{target}[{', '.join(at)}] {op} {self._value(value, env)}")
        return lines

    def _device_update(
        self, n: Node, target: str, op: str, env: dict[Node, str]
    ) -> str:
        """``target[at] op value`` on CUDA: a kernel over the part written (each
        thread writes one element; the positions are distinct)."""
        loops, body = self._region_loop(n, target, op, env)
        assert self.device is not None
        return self.device.kernel(loops, [body])

    def _region_loop(
        self, n: Node, target: str, op: str, env: dict[Node, str]
    ) -> tuple[list[tuple[str, str]], str]:
        """The loops over the part of ``target`` an update writes, and the
        statement that writes one element of it."""
        base, value, *index = n.args
        _mode, spec = n.attrs
        region: list[Length] = []
        for axis, entry in enumerate(spec):
            if entry[0] == "all":
                region.append(base.shape[axis])
            elif entry[0] != "at":
                region.append(entry[2])
        idx, loops = self._nest(region)
        at, axes = [], iter(idx)
        for axis, entry in enumerate(spec):
            if entry[0] == "at":
                text = self._scalar_text(index[entry[1]], env)
                at.append(self._position(text, entry, base.shape[axis]))
            elif entry[0] == "all":
                at.append(next(axes))
            else:
                i = next(axes)
                start = self.dim(entry[1])
                at.append(i if start == "0" else f"{i} + {self._paren(start)}")
        text = self._element(value, tuple(region), idx, env)
        return loops, f"{target}[{', '.join(at)}] {op} {text}"

    def _position(self, text: str, entry: tuple[Any, ...], length: Length) -> str:
        """A run-time index; one that only a branch's condition keeps inside the
        array (``if i + 1 < n: x[i + 1]``: both branches run) is clamped, so the
        discarded branch reads and writes inside the array."""
        if len(entry) < 3:
            return text
        n = self._paren(self.dim(length))
        return f"min(max({text}, -{n}), {n} - 1)"

    def _loop(
        self, n: Node, k: int, env: dict[Node, str], printer: Printer
    ) -> list[str]:
        """A loop node: the state's initial values, then ``for`` (or ``while``)
        with the body's statements inside (a kernel of its own, printed one
        level deeper), ending with the new state."""
        ind = printer.indent
        body = L.body_of(n)
        count, init, captured = L.operands(n)
        lines = [f"{ind}# {body.label}"] if body.label else []
        state = []
        # the results read after the loop, by index (their shapes may spell a
        # count differently from the body's, so match them by position)
        items: dict[int, list[Node]] = {}
        for c in self.consumers.get(n, []):
            if c.op == "item":
                items.setdefault(c.attrs[0], []).append(c)
        for j, (v, a) in enumerate(zip(body.carried, init, strict=True)):
            item = L.result(n, j)
            hint = next(
                (self.hints[i] for i in items.get(j, []) if i in self.hints), None
            )
            name = self.namer.fresh(hint or self._tape_hint(body, j, v))
            state.append(name)
            for it in [item, *items.get(j, [])]:
                self.names[it] = name
                if not v.shape:
                    env[it] = name
            if not v.shape:
                text = self._scalar_text(a, env)
            elif j in body.tapes and _const_fill(a):
                # every row a later reader reads is written first
                shape = self.shape_text(a.shape)
                text = self._empty(shape, a.dtype)
            elif _const_fill(a):
                text = self._fill(a)
            elif (n, j) in self.no_copy:
                text = self._array_text(a)
            else:
                text = self._copy(self._array_text(a))
            lines.append(f"{ind}{name} = {text}")
        counter = self.namer.fresh(
            _stem(body.index.attrs[1]) if body.index.attrs[1] != "_" else "it"
        )
        bound = {body.index: counter}
        bound.update(zip(body.carried, state, strict=True))
        for v, a in zip(body.captured, captured, strict=True):
            bound[v] = self._value(a, env)
        trips = None
        if not (body.bounded and body.test is None and body.stop is None):
            trips = self.namer.fresh("trips")
            for it in [L.trips(n), *items.get(len(body.carried), [])]:
                self.names[it] = trips
                env[it] = trips
            lines.append(f"{ind}{trips} = 0")
        total = self._scalar_text(count, env)
        if not body.bounded:
            lines.append(f"{ind}while True:")
            if body.index in set(body.nodes()):
                lines.append(f"{ind * 2}{counter} = {trips}")
        elif body.reverse:
            lines.append(f"{ind}for {counter} in range({_minus_one(total)}, -1, -1):")
        else:
            lines.append(f"{ind}for {counter} in range({total}):")
        inner = ind * 2
        if body.test is not None:
            test = ArrayKernel(
                [], [body.test], self.hints, (), (), (), parent=self, bound=bound
            )
            test_env = test._scalar_env()
            test_lines = test.lines(test_env, printer)
            lines += [ind + t for t in test_lines]
            cond = test._value(body.test, test_env)
            cond = cond if cond.isidentifier() or cond[0] == "(" else f"({cond})"
            lines.append(f"{inner}if not {cond}:")
            lines.append(f"{inner}{ind}break")
        roots = [*body.outputs, *([body.stop] if body.stop is not None else [])]
        sub = ArrayKernel(
            [],
            roots,
            self.hints,
            (),
            (),
            (),
            parent=self,
            bound=bound,
            owned=frozenset(body.carried),
        )
        sub_env = sub._scalar_env()
        lines += [ind + t for t in sub.lines(sub_env, printer)]
        stop_text = None
        if body.stop is not None:
            stop_text = sub._value(body.stop, sub_env)
            if " " in stop_text or stop_text in state:
                flag = self.namer.fresh("stop")
                lines.append(f"{inner}{flag} = {stop_text}")
                stop_text = flag
        targets, values = [], []
        seen: set[str] = set()
        for name, v, out in zip(state, body.carried, body.outputs, strict=True):
            text = sub._value(out, sub_env)
            if out.shape and (text in seen or (out.op == "var" and out is not v)):
                text = self._copy(text)  # two names must not share one array
            seen.add(text)
            if text != name:
                targets.append(name)
                values.append(text)
        if len(targets) == 1:
            lines.append(f"{inner}{targets[0]} = {values[0]}")
        elif targets:
            lines.append(f"{inner}{', '.join(targets)} = {', '.join(values)}")
        if trips is not None:
            lines.append(f"{inner}{trips} += 1")
        if stop_text is not None:
            lines.append(f"{inner}if {stop_text}:")
            lines.append(f"{inner}{ind}break")
        if not lines[-1].startswith(inner):
            lines.append(f"{inner}pass  # the state is the same in every iteration")
        return lines

    def _tape_hint(self, body: L.Body, j: int, v: Node) -> str:
        """A tape is named after the value it stores (``theta_1_tape``)."""
        out = body.outputs[j]
        if j in body.tapes and out.op == "index_update":
            hint = self.hints.get(out.args[1])
            if hint:
                return f"{hint}_tape"
        return _stem(v.attrs[1])

    def _statement(self, n: Node, env: dict[Node, str], printer: Printer) -> list[str]:
        ind = printer.indent
        if n in self.inlined:
            return []
        target = self._name(n)
        if self.device is not None and n.op in ("dot", "concat", "reshape"):
            env[n] = target
            return [f"{ind}{line}" for line in self._device_statement(n, target)]
        if n.op == "dot":
            a, b = (self._array_text(x) for x in n.args)
            text = f"np.dot({a}, {b})"
        elif n.op in LA.FUNCTIONS:
            operands = ", ".join(self._array_text(x) for x in n.args)
            text = f"{LA.FUNCTIONS[n.op]}({operands})"
            if n.op == "slogdet":
                text += f"[{n.attrs[0]}]"  # (sign, logabsdet)
        elif n.op == "argsort":
            # stable, as NumPy's kind="stable" (Numba's quicksort orders ties
            # otherwise); NaNs last, as NumPy puts them
            text = f'np.argsort({self._array_text(n.args[0])}, kind="mergesort")'
        elif n.op == "concat":
            parts = ", ".join(self._array_text(x) for x in n.args)
            text = f"np.concatenate(({parts},), axis={n.attrs[0]})"
        elif n.op == "pack":
            parts = ", ".join(printer.expr(x, env)[0] for x in n.args)
            text = f"np.array([{parts}])"
            if self.device is not None:
                text = f"cuda.to_device({text})"
        elif n.op == "reshape":
            src = self._array_text(n.args[0])
            text = f"np.ascontiguousarray({src}).reshape({self.shape_text(n.shape)})"
        else:  # a scalar; scalar reads of arrays (x[0]) are filled in by env
            text = printer.definition(n, env)[0]
        env[n] = target
        return [f"{ind}{target} = {text}"]

    def _device_statement(self, n: Node, target: str) -> list[str]:
        """A whole-array statement on CUDA (host lines): ``np.dot`` as a kernel
        with one thread per result element (a dot product of vectors: one per
        term, added atomically), ``np.concatenate`` as one copy kernel per part,
        a reshape as a view of the (always contiguous) source."""
        device = self.device
        assert device is not None
        if n.op == "reshape":
            src = self._array_text(n.args[0])
            return [f"{target} = {src}.reshape({self.shape_text(n.shape)})"]
        if n.op == "concat":
            axis = n.attrs[0]
            lines = [f"{target} = {self._empty(self.shape_text(n.shape), n.dtype)}"]
            offset: list[str] = []
            for part in n.args:
                idx, loops = self._nest(part.shape)
                at = list(idx)
                if offset:
                    at[axis] = f"{at[axis]} + {self._paren(' + '.join(offset))}"
                value = self._element(part, part.shape, idx, self.env)
                body = [f"{target}[{', '.join(at)}] = {value}"]
                where = f"part {len(offset) + 1} of {target} = np.concatenate(...)"
                lines.append(device.kernel(loops, body, where=where))
                offset.append(self._paren(self.dim(part.shape[axis])))
            return lines
        # dot: (m, k) or (k,) times (k, n) or (k,)
        a, b = n.args
        left, right = self._array_text(a), self._array_text(b)
        idx, loops = self._nest(n.shape)
        term = self.namer.fresh("k")
        a_at = [idx[0], term] if len(a.shape) == 2 else [term]
        b_at = [term, idx[-1]] if len(b.shape) == 2 else [term]
        product = f"{left}[{', '.join(a_at)}] * {right}[{', '.join(b_at)}]"
        length = self.dim(a.shape[-1])
        if not n.shape:  # vector . vector: every term on its own thread
            return [
                f"{target} = {self._full('(1,)', 0, n.dtype)}",
                device.kernel(
                    [(term, length)],
                    [_ATOMIC["sum"].format(acc=target, at="0", v=product)],
                    where=f"{target} = np.dot({left}, {right})",
                ),
                f"{target} = {target}[0]",
            ]
        acc = self.namer.fresh("acc")
        body = [
            f"{acc} = {'0.0' if n.dtype == 'float64' else '0'}",
            f"for {term} in range({length}):",
            f"    {acc} += {product}",
            f"{target}[{', '.join(idx)}] = {acc}",
        ]
        return [
            f"{target} = {self._empty(self.shape_text(n.shape), n.dtype)}",
            device.kernel(loops, body, where=f"{target} = np.dot({left}, {right})"),
        ]

    def _array_text(self, node: Node) -> str:
        if node.op == "transpose" and self.kinds.get(node) == "view":
            return f"{self._array_text(node.args[0])}.T"
        return self.names[node]

    def _index_names(self, rank: int) -> list[str]:
        if rank <= len(self.loop_vars):
            return list(self.loop_vars[:rank])
        return [f"i{k}" for k in range(rank)]

    def _nest(self, shape: Sequence[Length]) -> tuple[list[str], list[tuple[str, str]]]:
        """A loop nest over ``shape``: the index of each axis (``"0"`` for an axis
        of length 1, which gets no loop) and the loops (index, length text)."""
        idx = self._index_names(len(shape))
        loops = []
        for k, d in enumerate(shape):
            if d == 1:
                idx[k] = "0"
            else:
                loops.append((idx[k], self.dim(d)))
        return idx, loops

    def _group(self, g: Group, env: dict[Node, str], printer: Printer) -> list[str]:
        ind = printer.indent
        if not g.members:
            return []  # every member is read element by element where it is used
        device = self.device
        lines: list[str] = []
        after: list[str] = []  # on the host after the nest (CUDA: read results back)
        idx = self._index_names(len(g.shape))
        # allocations and accumulators, before the nest
        for m in g.members:
            k = self.kinds[m]
            if m in self.into and self.into[m] not in self.names:
                target = self.into[m]
                shape = self.shape_text(target.shape)
                zeros = self._full(shape, 0.0, "float64")
                lines.append(f"{ind}{self._name(target)} = {zeros}")
            if k == "elementwise" and m in self.stored:
                owner = self._take_over(m, g)
                if owner is not None:  # acc = acc + ...: into acc's own memory
                    self.names[m] = self.names[owner]
                    continue
                lines.append(self._buffer(m, g.position, ind))
                self._release(m)
            elif k == "scatter" and m in self.into:
                pass  # allocated above
            elif k == "scatter":
                zeros = self._full(self.shape_text(m.shape), 0, m.dtype)
                lines.append(f"{ind}{self._name(m)} = {zeros}")
            elif k == "reduce":
                init = _INIT[m.op](m.dtype)
                name = self._name(m)
                if m.shape:
                    full = self._full(self.shape_text(m.shape), init, m.dtype)
                    lines.append(f"{ind}{name} = {full}")
                elif device is not None:  # one element, read back after the nest
                    lines.append(f"{ind}{name} = {self._full('(1,)', init, m.dtype)}")
                    after.append(f"{ind}{name} = {name}[0]")
                else:
                    lines.append(f"{ind}{name} = {init}")
        loops: list[tuple[str, str]] = []
        outer = next((k for k, d in enumerate(g.shape) if d != 1), None)
        threads = self.parallel and outer is not None and self._independent(g, outer)
        for k, d in enumerate(g.shape):
            if d == 1:
                idx[k] = "0"  # no loop over an axis of length 1
                continue
            loops.append((idx[k], self.dim(d)))
        body = self._nest_body(g, idx, env, printer)
        tail: list[str] = []
        if device is None and len(loops) == 1 and not threads:
            sums = {self.names[self.into[m]] for m in g.members if m in self.into}
            length = next(d for d in g.shape if d != 1)
            for array in sorted(sums):
                body, init, end = _carry_shifted_sums(
                    body,
                    array,
                    loops[0][0],
                    lambda k, d=length: self.dim(S.add(d, k)),
                    self.namer,
                )
                lines += [f"{ind}{line}" for line in init]
                tail += [f"{ind}{line}" for line in end]
        if device is not None:
            serial = next(
                (
                    f"np.{m.op}, which has no atomic update"
                    for m in g.members
                    if self.kinds[m] == "reduce" and _atomic(m) is None
                ),
                None,
            )
            written = [self.names[m] for m in g.members if m in self.names]
            what = f"computes {', '.join(written)}" if written else ""
            launch = device.kernel(loops, body, serial, what)
            lines.append(f"{ind}{launch}")
        else:
            for depth, (var, dim) in enumerate(loops, 1):
                loop = "numba.prange" if threads and depth == 1 else "range"
                lines.append(f"{ind * depth}for {var} in {loop}({dim}):")
            if threads:
                printer.imports.add("import numba")
            inner = ind * (len(loops) + 1)
            lines += [f"{inner}{line}" for line in body]
        for m in g.members:
            if m in self.stored and not m.shape:
                env[m] = self.names[m]
        return lines + tail + after

    def _nest_body(
        self, g: Group, idx: list[str], env: dict[Node, str], printer: Printer
    ) -> list[str]:
        """The statements inside ``g``'s loop nest (not indented); on CUDA sums
        into shared places are atomic adds (so are maxima and minima)."""
        device = self.device is not None
        lines: list[str] = []
        local: dict[Node, str] = {}

        def reads(m: Node) -> dict[Node, str]:
            out = env.copy()
            out.update(local)
            stack = list(m.args)
            while stack:
                a = stack.pop()
                if a in local or a.op == "const":
                    continue
                if a in self.inlined and self.group_of.get(a) is g:
                    stack.extend(a.args)
                    continue
                if a.shape or a not in out:
                    out[a] = self._element(a, g, idx, env)
            return out

        def add(array: str, at: list[str], value: str) -> str:
            """``array[at] += value``; atomic on CUDA (other threads may add to
            the same element)."""
            if device:
                return _ATOMIC["sum"].format(acc=array, at=_at_tuple(at), v=value)
            return f"{array}[{', '.join(at)}] += {value}"

        for m in g.members:
            k = self.kinds[m]
            view = m.op in VIEWS or m.op == "reshape"
            # a view member is index arithmetic on its source (``_through``), not
            # an expression of its operands read at the nest's position
            names = env if view else reads(m)
            if k == "reduce":
                value = (
                    printer.expr(m.args[0], names)[0]
                    if m.args[0] not in names
                    else names[m.args[0]]
                )
                acc = self.names[m]
                kept = [i for a, i in enumerate(idx) if a not in m.attrs[0]]
                atomic = _atomic(m)
                if device and atomic is not None:
                    at = _at_tuple(kept) if m.shape else "0"
                    lines += atomic.format(acc=acc, at=at, v=value).split("\n")
                    continue
                if m.shape:
                    acc = f"{acc}[{', '.join(kept)}]"
                elif device:
                    acc = f"{acc}[0]"  # one thread (no atomic): a 1-element array
                if m.op in _EXTREME and m.dtype == "float64":
                    if not _SIMPLE.match(value):  # read once, compared twice
                        name = self.namer.fresh("v")
                        lines.append(f"{name} = {value}")
                        value = name
                    lines += _EXTREME[m.op].format(acc=acc, v=value).split("\n")
                    continue
                table = _BOOL_ACCUMULATE if m.dtype == "bool" else _ACCUMULATE
                lines.append(table[m.op].format(acc=acc, v=value))
                continue
            if k == "scatter":
                value = (
                    names[m.args[0]]
                    if m.args[0] in names
                    else printer.expr(m.args[0], names)[0]
                )
                spot = self._scatter_index(m, idx)
                if m in self.into:
                    lines.append(add(self.names[self.into[m]], spot, value))
                else:
                    lines.append(f"{self.names[m]}[{', '.join(spot)}] = {value}")
                continue
            if m in self.inlined:
                continue
            if view:
                src, at = self._through(m, list(idx))
                text = self._iota(m, idx) if m.op == "iota" else self.read(src, at, env)
            else:
                text = printer.definition(m, names)[0]
            if m in self.into:
                lines.append(add(self.names[self.into[m]], idx, text))
                continue
            if m in self.stored:
                cell = f"{self.names[m]}[{', '.join(idx)}]"
                lines.append(f"{cell} = {text}")
                local[m] = cell
            else:
                tmp = self.namer.fresh(self.hints.get(m))
                lines.append(f"{tmp} = {text}")
                local[m] = tmp
        return lines

    def _take_over(self, m: Node, g: Group) -> Node | None:
        """A loop state array ``m`` may overwrite element by element: it is read
        at ``m``'s own position by ``m`` and earlier members of the nest only, and
        by nothing after the nest (``W_bar = W_bar + outer(g, h)``)."""
        members = g.members
        at = members.index(m)
        for a in m.args:
            if not (
                a.op == "var"
                and a in self.owned
                and a.shape == m.shape == g.shape
                and a.dtype == m.dtype
                and a not in self.outputs
            ):
                continue
            if any(pos > g.position for pos, _ in self.readers.get(a, [])):
                continue
            clean = True
            for j, c in enumerate(members):
                for b in c.args:
                    if b is a and j > at:
                        clean = False
                    elif b is not a and a in self._sources(b, leaves=True):
                        clean = False  # read through a view: another position
            if clean:
                return a
        return None

    def _independent(self, g: Group, outer: int) -> bool:
        """Whether the iterations of ``g``'s outer loop touch disjoint memory, so
        that ``numba.prange`` may run them on threads: every array it writes is
        indexed by the outer position, and its full reductions are sums or
        products (which Numba reduces per thread).  Scatters and sums of shifted
        slices (``x_bar[i] += ...; x_bar[i + 1] += ...``) are not."""
        for m in g.members:
            k = self.kinds[m]
            if m in self.into or k == "scatter":
                return False
            if k == "reduce":
                if not m.shape:
                    if m.op not in ("sum", "prod"):
                        return False
                elif outer in m.attrs[0]:
                    return False  # out[j] += ... over the threads' axis: a race
        return True

    def _iota(self, node: Node, idx: list[str]) -> str:
        lead = len(idx) - len(node.shape)
        return idx[lead + node.attrs[0]]

    def _scatter_index(self, m: Node, idx: list[str]) -> list[str]:
        out = []
        it = iter(idx)
        for entry in m.attrs[0]:
            if entry[0] == "int":
                out.append(self.dim(entry[1]))
            else:
                _, start, _, step = entry
                i = next(it)
                if step == 1:
                    out.append(
                        i if start == 0 else f"{i} + {self._paren(self.dim(start))}"
                    )
                elif step > 0:
                    base = f"{step} * {i}"
                    out.append(
                        base
                        if start == 0
                        else f"{base} + {self._paren(self.dim(start))}"
                    )
                else:
                    out.append(f"{self._paren(self.dim(start))} - {-step} * {i}")
        return out

    def _element(
        self,
        a: Node,
        g: Group | Shape,
        idx: list[str],
        env: Mapping[Node, str],
    ) -> str:
        """``a`` read at the position ``idx`` of a nest (broadcast against the
        nest's shape: ``g``'s, or ``g`` itself)."""
        if not a.shape:
            return self._scalar_text(a, env)
        shape = g.shape if isinstance(g, Group) else g
        lead = len(shape) - len(a.shape)
        at = [
            "0" if d == 1 and shape[lead + k] != 1 else idx[lead + k]
            for k, d in enumerate(a.shape)
        ]
        node = a
        while self.kinds.get(node) == "view" and node.op != "iota":
            node, at = self._through(node, at)
        if node.op == "iota" and self.kinds.get(node) == "view":
            return at[node.attrs[0]]
        return self.read(node, at, env)

    def _scalar_text(self, a: Node, env: Mapping[Node, str]) -> str:
        if a in env:
            return env[a]
        if a in self.names:
            return self.names[a]
        text, prec = self._printer().expr(a, env)
        return text if prec >= P_ATOM else f"({text})"


class _Reads(dict):  # type: ignore[type-arg]
    """Names of values, where a scalar read of an array (``x[0]``) is looked up
    when first needed (the array may be computed after the dict is made)."""

    def __init__(self, kernel: ArrayKernel):
        super().__init__()
        self.kernel = kernel

    def _fill(self, key: object) -> bool:
        k = self.kernel
        if isinstance(key, Node) and not key.shape and k.kinds.get(key) == "view":
            self[key] = k.read(key, [], self)
            return True
        return False

    def __contains__(self, key: object) -> bool:
        return super().__contains__(key) or self._fill(key)

    def __missing__(self, key: Node) -> str:
        if self._fill(key):
            return str(super().__getitem__(key))
        raise KeyError(key)

    def copy(self) -> _Reads:
        new = _Reads(self.kernel)
        new.update(self)
        return new


def _reads_first(order: list[Node], forward: set[Node]) -> list[Node]:
    """``order`` rescheduled so that array updates run as late as they can: the
    reads of an array's old values come before it is written in place.  Forward
    values still come first; ties keep ``order``'s order.

    An update (or a loop, which may take over its initial arrays) waits (once)
    while a reader of the array it overwrites is still to come, where the reader
    does not need the update; a reader through a view (``v_bar[p] +=
    out_bar[j]`` reads ``out_bar`` through the scalar ``take``) is the node that
    prints the read, the first one past the views.  An update placed before
    such a reader must copy the whole array so that the reader sees the old
    values: in a loop body, a copy per iteration."""
    position = {n: i for i, n in enumerate(order)}
    waiting = {n: len({a for a in n.args if a in position}) for n in order}
    users: dict[Node, list[Node]] = {}
    for n in order:
        for a in set(n.args):
            if a in position:
                users.setdefault(a, []).append(n)
    readers = {}
    for n in order:
        if n.op == "index_update":
            owned = [n.args[0]]
        elif n.op == "loop":  # it may take over its initial arrays
            owned = [a for a in L.operands(n)[1] if a.shape]
        else:
            continue
        found = [
            r for a in owned if a in position for r in _readers(n, a, users, position)
        ]
        if found:
            readers[n] = found

    def key(n: Node, deferred: bool = False) -> tuple[int, int, int, int]:
        return (n not in forward, deferred, n.op == "index_update", position[n])

    ready = [key(n) for n in order if waiting[n] == 0]
    heapq.heapify(ready)
    out: list[Node] = []
    done: set[Node] = set()
    while ready:
        item = heapq.heappop(ready)
        n = order[item[3]]
        if not item[1] and any(r not in done for r in readers.get(n, ())):
            heapq.heappush(ready, key(n, deferred=True))
            continue
        out.append(n)
        done.add(n)
        for u in users.get(n, []):
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, key(u))
    return out


def _readers(
    update: Node, array: Node, users: dict[Node, list[Node]], position: dict[Node, int]
) -> list[Node]:
    """The nodes that read ``array``, which ``update`` may overwrite (through
    views: the first node past them), and do not depend on ``update`` itself."""
    out: list[Node] = []
    stack = [c for c in users.get(array, []) if c is not update]
    seen: set[Node] = set()
    while stack:
        c = stack.pop()
        if c in seen:
            continue
        seen.add(c)
        if c.op in VIEWS and c.op != "iota":
            stack.extend(users.get(c, []))
        elif c is not update and not _depends(c, update, users, position):
            out.append(c)
    return out


def _depends(
    b: Node, a: Node, users: dict[Node, list[Node]], position: dict[Node, int]
) -> bool:
    """Whether ``b`` depends on ``a`` (in a topological ``position``, nothing
    placed after ``b`` leads to it)."""
    limit = position[b]
    if limit < position[a]:
        return False
    stack, seen = [a], {a}
    while stack:
        n = stack.pop()
        for c in users.get(n, []):
            if c is b:
                return True
            if c not in seen and position[c] < limit:
                seen.add(c)
                stack.append(c)
    return False


def _const_fill(a: Node) -> bool:
    """An array that is one constant everywhere (zeros for a tape or adjoint)."""
    return a.op == "broadcast" and a.args[0].op == "const"


def _stem(name: str) -> str:
    """A variable name for generated code from a hint (``"x_bar"``, ``"tape_t2"``)."""
    return name if name.isidentifier() else "v"


def _minus_one(text: str) -> str:
    return str(int(text) - 1) if text.isdigit() else f"{text} - 1"


def _init_max(dtype: str) -> str:
    if dtype == "bool":
        return "False"
    return "-np.inf" if dtype == "float64" else "np.iinfo(np.int64).min"


def _init_min(dtype: str) -> str:
    if dtype == "bool":
        return "True"
    return "np.inf" if dtype == "float64" else "np.iinfo(np.int64).max"


_INIT = {
    "sum": lambda dt: "0.0" if dt == "float64" else "0",
    "prod": lambda dt: "1.0" if dt == "float64" else "1",
    "amax": _init_max,
    "amin": _init_min,
}

#: Reductions as numba-cuda atomics (a product has none: its nest runs on one
#: thread).
_ATOMIC = {
    "sum": "cuda.atomic.add({acc}, {at}, {v})",
    "amax": "cuda.atomic.max({acc}, {at}, {v})",
    "amin": "cuda.atomic.min({acc}, {at}, {v})",
}


#: On bools ``np.max`` is "any" and ``np.min`` "all": every thread that changes
#: the result writes the same value, so plain stores are safe.
_BOOL_ATOMIC = {
    "amax": "if {v}:\n    {acc}[{at}] = True",
    "amin": "if not ({v}):\n    {acc}[{at}] = False",
}


def _atomic(m: Node) -> str | None:
    """The CUDA update of reduction ``m`` by several threads at once, if any."""
    if m.dtype == "bool":
        return _BOOL_ATOMIC.get(m.op)
    return _ATOMIC.get(m.op)


def _at_tuple(at: list[str]) -> str:
    """An atomic's index: one position, or a tuple of them."""
    return at[0] if len(at) == 1 else f"({', '.join(at)})"


_ACCUMULATE = {
    "sum": "{acc} += {v}",
    "prod": "{acc} *= {v}",
    "amax": "{acc} = max({acc}, {v})",
    "amin": "{acc} = min({acc}, {v})",
}
#: Float maxima and minima as NumPy's: a NaN anywhere makes the result NaN (``max``
#: would keep the accumulator when the new value is NaN).  Ties keep the first
#: value.
_EXTREME = {
    "amax": "if {v} > {acc} or {v} != {v}:\n    {acc} = {v}",
    "amin": "if {v} < {acc} or {v} != {v}:\n    {acc} = {v}",
}
#: An accumulated value that may be written twice: a name or an array element.
_SIMPLE = re.compile(r"[A-Za-z_]\w*(\[[^\[\]]*\])?$")


def _carry_shifted_sums(
    body: list[str],
    array: str,
    var: str,
    length: Callable[[int], str],
    namer: Any,
) -> tuple[list[str], list[str], list[str]]:
    """A loop over ``var`` that adds into ``array`` at shifted places (the adjoints
    of ``x[1:]`` and ``x[:-1]``: ``x_bar[i] += a; x_bar[i + 1] += b``) carries
    what it adds ahead in variables instead, and adds each element once, when no
    later iteration adds to it::

        x_bar[i] += carry + a
        carry = b

    The next iteration no longer reads what this one stored (a dependence through
    memory that keeps every iteration waiting on the last one's store).
    ``length(k)``: the text of the loop's trip count plus ``k``.  Returns the new
    body, the lines before the loop and the lines after it; the body unchanged
    (and no lines) unless ``array`` is only added to, at two or more offsets from
    ``var``."""
    pattern = re.compile(
        rf"{re.escape(array)}\[{re.escape(var)}(?: ([+-]) (\d+))?\] \+= (.+)$"
    )
    found: list[tuple[int, int, str]] = []  # (line, offset, value)
    for k, line in enumerate(body):
        m = pattern.match(line)
        if m is not None and not re.search(rf"\b{re.escape(array)}\b", m.group(3)):
            offset = int(m.group(2) or 0) * (-1 if m.group(1) == "-" else 1)
            found.append((k, offset, m.group(3)))
        elif re.search(rf"\b{re.escape(array)}\b", line):
            return body, [], []  # read or written otherwise
    if len({offset for _, offset, _ in found}) < 2:
        return body, [], []
    # Each term is still evaluated where its addition was (a later line may
    # write what it reads); the additions move to the last one's place.
    adds: dict[int, list[str]] = {}
    new_body = list(body)
    for k, offset, value in found:
        if not _SIMPLE.match(value):
            name = namer.fresh(None)
            new_body[k] = f"{name} = {value}"
            value = name
        else:
            new_body[k] = ""
        adds.setdefault(offset, []).append(value)
    base, top = min(adds), max(adds)
    carries = [namer.fresh("carry") for _ in range(top - base)]
    at = var if base == 0 else f"{var} {'+' if base > 0 else '-'} {abs(base)}"
    merged = [f"{array}[{at}] += {' + '.join([carries[0], *adds[base]])}"]
    for d, carry in enumerate(carries, 1):
        parts = ([carries[d]] if d < len(carries) else []) + adds.get(base + d, [])
        merged.append(f"{carry} = {' + '.join(parts) if parts else '0.0'}")
    last = found[-1][0]
    new_body[last + 1 : last + 1] = merged
    new_body = [line for line in new_body if line]
    init = [f"{carry} = 0.0" for carry in carries]
    end = [f"if {length(0)} > 0:"]
    for d, carry in enumerate(carries, 1):
        end.append(f"    {array}[{length(base + d - 1)}] += {carry}")
    return new_body, init, end


#: On bools ``max`` is ``or`` and ``min`` is ``and`` (Numba types no max of bools).
_BOOL_ACCUMULATE = {
    **_ACCUMULATE,
    "amax": "{acc} = {acc} or {v}",
    "amin": "{acc} = {acc} and {v}",
}


def _may_be_negative(d: Length) -> bool:
    """Whether a length has a negative term (``n - 1``): negative for small
    ``n``, where the slice it measures is empty."""
    return not isinstance(d, int) and any(c < 0 for _, c in d.terms)
