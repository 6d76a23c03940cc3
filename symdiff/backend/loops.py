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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from symdiff.backend.printer import P_ATOM, Printer
from symdiff.ir.node import Node, topological
from symdiff.ir.shapes import Check, Length, Shape, format_dim, format_shape
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
    "sum": "reduce",
    "prod": "reduce",
    "amax": "reduce",
    "amin": "reduce",
}
VIEWS = frozenset(op for op, k in ARRAY_KINDS.items() if k == "view")
_LOOP_VARS = ("i", "j", "k", "l")

_DTYPE_ARG = {"float64": "", "int64": ", np.int64", "bool": ", np.bool_"}


def has_arrays(nodes: Sequence[Node]) -> bool:
    return any(n.shape for n in nodes)


def _squeeze_only(node: Node) -> bool:
    """A reshape that only adds or removes axes of length 1: an index map."""
    return [d for d in node.shape if d != 1] == [
        d for d in node.args[0].shape if d != 1
    ]


def kind(node: Node) -> str:
    """How ``node`` is generated: an ``ARRAY_KINDS`` entry, or ``leaf``,
    ``scalar`` or ``elementwise`` for the scalar ops."""
    op = node.op
    if op in ("param", "const"):
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
    ):
        self.parallel = parallel
        self.params = list(params)
        self.outputs = list(outputs)
        # one check per condition, however many lines assume it
        seen: set[tuple[Any, ...]] = set()
        unique = []
        for c in checks:
            key = (c.left, c.right, c.kind)
            if key not in seen:
                seen.add(key)
                unique.append(c)
        self.checks = unique
        needed = set(topological(outputs))
        self.order = [
            n
            for n in topological([*first, *outputs])
            if n in needed and kind(n) != "leaf"
        ]
        self.forward = set(topological(first)) if first else set()
        self.consumers: dict[Node, list[Node]] = {}
        for n in self.order:
            for a in n.args:
                self.consumers.setdefault(a, []).append(n)
        self.kinds = {n: kind(n) for n in self.order}
        self._needs_arrays()
        self.into: dict[Node, Node] = {}
        self._scatter_sums()
        self.namer = _Namer()
        self.names: dict[Node, str] = {}
        by_index = {}
        for p in self.params:
            self.names[p] = self.namer.fresh(p.attrs[1])
            by_index[p.attrs[0]] = self.names[p]
        self.param_name = lambda i: by_index[i]
        self.loop_vars = [self.namer.fresh(v) for v in _LOOP_VARS]
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
    def _needs_arrays(self) -> None:
        """Views that something needs as a whole array become copies (element-wise)."""
        wants: list[Node] = [o for o in self.outputs if o.shape]
        for n in self.order:
            k = self.kinds[n]
            if k == "statement" and n.op != "pack":
                for a in n.args:
                    if n.op == "dot" and a.op == "transpose" and len(a.shape) == 2:
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

    def _sources(self, node: Node) -> list[Node]:
        """What reading ``node`` at some position really reads (through views)."""
        out: list[Node] = []
        stack = [node]
        seen = set()
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            k = self.kinds.get(n, "leaf")
            if k == "view":
                stack.extend(n.args)
            elif k != "leaf":
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
            if k == "scatter_sum":
                self.position[n] = max(
                    self.position[s] for s, t in self.into.items() if t is n
                )
                continue
            if k in ("scalar", "statement"):
                self.units.append(Unit(node=n))
                self.position[n] = len(self.units) - 1
                continue
            shape = loop_shape(n)
            direct = {a for a in n.args if self.kinds.get(a) == "elementwise"}
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
                    and len(uses) == 1
                    and not uses[0].shape
                    and self.kinds.get(uses[0]) == "scalar"
                    and small <= MAX_INLINE
                ):
                    self.inlined.add(n)
                    size[n] = small
                continue
            if k in ("reduce", "scatter", "statement", "scatter_sum"):
                self.stored.add(n)
                continue
            if k != "elementwise":
                continue
            if n in self.into:
                continue  # added into its sum's buffer where it is computed
            g = self.group_of[n]
            uses = self.consumers.get(n, [])
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

    def _liveness(self) -> None:
        """The last unit that reads each stored array (seed 002 section 4.2: a
        forward value's buffer is free once nothing needs it), so that a later
        array of the same shape and dtype is written into it instead of a new
        allocation.  Views keep their source alive; outputs are never freed."""
        self.last_use: dict[Node, int] = {}
        for k, unit in enumerate(self.units):
            members = self._unit_nodes(unit)
            for m in members:
                for a in m.args:
                    for src in self._sources(a):
                        self.last_use[src] = max(self.last_use.get(src, -1), k)
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

    def _buffer(self, m: Node, unit: int, ind: str) -> str:
        """The allocation of ``m``'s array: a dead buffer of its shape, or new."""
        shape, dt = self.shape_text(m.shape), _DTYPE_ARG[m.dtype]
        pool = self.free.get((shape, m.dtype), [])
        for k, (dead_after, owner) in enumerate(pool):
            if dead_after < unit:
                del pool[k]
                return (
                    f"{ind}{self._name(m)} = {self.names[owner]}"
                    f"  # {self.names[owner]} is dead: reuse its memory"
                )
        return f"{ind}{self._name(m)} = np.empty({shape}{dt})"

    def _release(self, m: Node) -> None:
        """``m``'s buffer may be taken once its last reader has run."""
        last = self.last_use.get(m, 1 << 30)
        if last < 1 << 30:
            key = (self.shape_text(m.shape), m.dtype)
            self.free.setdefault(key, []).append((last, m))

    # -- printing ---------------------------------------------------------------------
    def dim(self, d: Length) -> str:
        return format_dim(d, self.param_name)

    def shape_text(self, shape: Shape) -> str:
        return format_shape(shape, self.param_name)

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
            if not node.shape and k != "view":
                return self._scalar_text(node, env)
            if node.op == "param" or (node in self.stored and node.shape):
                name = self.names[node]
                return f"{name}[{', '.join(idx)}]" if idx else name
            if k != "view":
                if node in env:
                    return env[node]
                raise AssertionError(f"no way to read {node!r}")
            node, idx = self._through(node, idx)

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
        return env

    def source(
        self,
        name: str,
        returns: Any,
        header: Sequence[str],
        sections: Mapping[str, str],
    ) -> str:
        printer = Printer()
        env = self._scalar_env()
        for n in topological(self.order):
            if n.op == "dim":
                env[n] = self._paren(self.dim(n.attrs[0]))
        body: list[str] = []
        ind = printer.indent
        if self.checks:
            body.append(f"{ind}# shapes must agree (NumPy's rules)")
        for check in self.checks:
            left, right = self.dim(check.left), self.dim(check.right)
            test = "!=" if check.kind == "eq" else ">="
            body.append(f"{ind}if {left} {test} {right}:")
            got = f'" (got " + str({left}) + " and " + str({right}) + ")"'
            body.append(f"{ind}{ind}raise ValueError({check.message!r} + {got})")
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
            if sections and k == last_forward + 1 and 0 <= last_forward:
                body.append(f"{ind}# {next(iter(sections.values()))}")
            if unit.node is not None:
                body.extend(self._statement(unit.node, env, printer))
            else:
                body.extend(self._group(unit.group, env, printer))  # type: ignore[arg-type]
        ret = self._returns(returns, env, printer)
        body.append(f"{ind}return {ret}")
        params = ", ".join(self.names[p] for p in self.params)
        lines = [f"# {h}" for h in header]
        printer.imports.add("import numpy as np")
        lines += sorted(printer.imports)
        lines += ["", "", f"def {name}({params}):", *body]
        return "\n".join(lines) + "\n"

    @staticmethod
    def _unit_nodes(unit: Unit) -> list[Node]:
        if unit.node is not None:
            return [unit.node]
        return unit.group.members if unit.group is not None else []

    def _returns(self, returns: Any, env: dict[Node, str], printer: Printer) -> str:
        def text(v: Any) -> str:
            if isinstance(v, Node):
                if v in self.names:
                    return self.names[v]
                return printer.expr(v, env)[0]
            items = [text(x) for x in v]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

        if isinstance(returns, tuple) and len(returns) > 1:
            return ", ".join(text(v) for v in returns)
        return text(returns)

    def _statement(self, n: Node, env: dict[Node, str], printer: Printer) -> list[str]:
        ind = printer.indent
        if n in self.inlined:
            return []
        target = self._name(n)
        if n.op == "dot":
            a, b = (self._array_text(x) for x in n.args)
            text = f"np.dot({a}, {b})"
        elif n.op == "concat":
            parts = ", ".join(self._array_text(x) for x in n.args)
            text = f"np.concatenate(({parts},), axis={n.attrs[0]})"
        elif n.op == "pack":
            parts = ", ".join(printer.expr(x, env)[0] for x in n.args)
            text = f"np.array([{parts}])"
        elif n.op == "reshape":
            src = self._array_text(n.args[0])
            text = f"np.ascontiguousarray({src}).reshape({self.shape_text(n.shape)})"
        else:  # a scalar; scalar reads of arrays (x[0]) are filled in by env
            text = printer.definition(n, env)[0]
        env[n] = target
        return [f"{ind}{target} = {text}"]

    def _array_text(self, node: Node) -> str:
        if node.op == "transpose" and self.kinds.get(node) == "view":
            return f"{self._array_text(node.args[0])}.T"
        return self.names[node]

    def _group(self, g: Group, env: dict[Node, str], printer: Printer) -> list[str]:
        ind = printer.indent
        lines: list[str] = []
        rank = len(g.shape)
        idx = (
            list(self.loop_vars[:rank])
            if rank <= len(self.loop_vars)
            else [f"i{k}" for k in range(rank)]
        )
        # allocations and accumulators, before the nest
        for m in g.members:
            k = self.kinds[m]
            dt = _DTYPE_ARG[m.dtype]
            if m in self.into and self.into[m] not in self.names:
                target = self.into[m]
                shape = self.shape_text(target.shape)
                lines.append(f"{ind}{self._name(target)} = np.zeros({shape})")
            if k == "elementwise" and m in self.stored:
                lines.append(self._buffer(m, g.position, ind))
                self._release(m)
            elif k == "scatter" and m in self.into:
                pass  # allocated above
            elif k == "scatter":
                lines.append(
                    f"{ind}{self._name(m)} = np.zeros({self.shape_text(m.shape)}{dt})"
                )
            elif k == "reduce":
                init = _INIT[m.op](m.dtype)
                if m.shape:
                    lines.append(
                        f"{ind}{self._name(m)} = "
                        f"np.full({self.shape_text(m.shape)}, {init}{dt})"
                    )
                else:
                    lines.append(f"{ind}{self._name(m)} = {init}")
        depth = 0
        outer = next((k for k, d in enumerate(g.shape) if d != 1), None)
        threads = self.parallel and outer is not None and self._independent(g, outer)
        for k, d in enumerate(g.shape):
            if d == 1:
                idx[k] = "0"  # no loop over an axis of length 1
                continue
            depth += 1
            loop = "numba.prange" if threads and k == outer else "range"
            lines.append(f"{ind * depth}for {idx[k]} in {loop}({self.dim(d)}):")
        if threads:
            printer.imports.add("import numba")
        inner = ind * (depth + 1)
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

        for m in g.members:
            k = self.kinds[m]
            names = reads(m)
            if k == "reduce":
                value = (
                    printer.expr(m.args[0], names)[0]
                    if m.args[0] not in names
                    else names[m.args[0]]
                )
                acc = self.names[m]
                if m.shape:
                    kept = [i for a, i in enumerate(idx) if a not in m.attrs[0]]
                    acc = f"{acc}[{', '.join(kept)}]"
                lines.append(f"{inner}{_ACCUMULATE[m.op].format(acc=acc, v=value)}")
                continue
            if k == "scatter":
                value = (
                    names[m.args[0]]
                    if m.args[0] in names
                    else printer.expr(m.args[0], names)[0]
                )
                spot = ", ".join(self._scatter_index(m, idx))
                if m in self.into:
                    lines.append(
                        f"{inner}{self.names[self.into[m]]}[{spot}] += {value}"
                    )
                else:
                    lines.append(f"{inner}{self.names[m]}[{spot}] = {value}")
                continue
            if m in self.inlined:
                continue
            if m in self.into:
                text = printer.definition(m, names)[0]
                target = self.names[self.into[m]]
                lines.append(f"{inner}{target}[{', '.join(idx)}] += {text}")
                continue
            if m.op in VIEWS or m.op == "reshape":
                src, at = self._through(m, list(idx))
                text = self._iota(m, idx) if m.op == "iota" else self.read(src, at, env)
            else:
                text = printer.definition(m, names)[0]
            if m in self.stored:
                cell = f"{self.names[m]}[{', '.join(idx)}]"
                lines.append(f"{inner}{cell} = {text}")
                local[m] = cell
            else:
                tmp = self.namer.fresh(self.hints.get(m))
                lines.append(f"{inner}{tmp} = {text}")
                local[m] = tmp
        for m in g.members:
            if m in self.stored and not m.shape:
                env[m] = self.names[m]
        return lines

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
        g: Group,
        idx: list[str],
        env: Mapping[Node, str],
    ) -> str:
        """``a`` read at the nest's position (broadcast against the nest's shape)."""
        if not a.shape:
            return self._scalar_text(a, env)
        lead = len(g.shape) - len(a.shape)
        at = [
            "0" if d == 1 and g.shape[lead + k] != 1 else idx[lead + k]
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
        text, prec = Printer().expr(a, env)
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


def _init_max(dtype: str) -> str:
    return "-np.inf" if dtype == "float64" else "np.iinfo(np.int64).min"


def _init_min(dtype: str) -> str:
    return "np.inf" if dtype == "float64" else "np.iinfo(np.int64).max"


_INIT = {
    "sum": lambda dt: "0.0" if dt == "float64" else "0",
    "prod": lambda dt: "1.0" if dt == "float64" else "1",
    "amax": _init_max,
    "amin": _init_min,
}

_ACCUMULATE = {
    "sum": "{acc} += {v}",
    "prod": "{acc} *= {v}",
    "amax": "{acc} = max({acc}, {v})",
    "amin": "{acc} = min({acc}, {v})",
}
