"""Derivatives of loops: a loop's tangent and adjoint are loops.

Forward mode (:func:`loop_jvp`) carries tangents beside the state: one loop whose
body is the body's JVP.

Reverse mode (:func:`loop_vjp`) differentiates the body with the same adjoint table
as any graph, then splits the work between two loops in the kernel:

* the *forward* loop also writes a **tape**: for each iteration, the values of the
  body that the backward body needs and cannot compute itself.  Those are found by
  walking the backward body from its outputs and stopping at the first forward
  value on each path (a *frontier*): ``t2`` for the adjoint ``g * cos(t2)`` of
  ``sin(t2)``, never ``cos(t2)`` itself, which the backward body computes.  Values
  that depend only on the iteration number and on what the loop captures are
  recomputed, not stored.  A tape is an array with one row per iteration,
  allocated once from the trip count;
* the *backward* loop runs the iterations from the last to the first: it reads the
  tape rows, carries the adjoints of the state, and adds up the adjoints of the
  captured values (``x_bar[i] += ...`` for an array read as ``x[i]``).

The taping loop *extends* the original one (:func:`symdiff.ir.loops.merge_extensions`
then runs it instead of running both).  A ``while`` loop's trip count is known only
after it ran: its taping loop is a ``for`` loop over that count.

Checkpointing (:data:`CHECKPOINT`, every ``K`` iterations) bounds the tape: the
forward loop keeps only the state at the start of each segment of ``K`` iterations,
and the backward loop, segment by segment from the last, recomputes the segment's
tape from its saved state, then runs the segment's backward iterations.  Memory is
``count / K`` states plus one segment's tape; the price is one more forward pass.
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence

from symdiff.ir import arrays as A
from symdiff.ir import loops as L
from symdiff.ir import shapes as S
from symdiff.ir.build import add, apply, broadcast_to, select
from symdiff.ir.node import Node, constant, topological

#: Every-K checkpointing for the loops differentiated in reverse mode (None: tape
#: every iteration).  Set by the transforms (``grad(f, checkpoint=K)``).
CHECKPOINT: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "symdiff_checkpoint", default=None
)


def count_dim(count: Node) -> S.Length:
    """The trip count as a length (the number of tape rows)."""
    if count.op == "const":
        return max(0, int(count.value))
    return S.atom("node", count)


def _active_state(
    body: L.Body, init_active: Sequence[bool], captured_active: Sequence[bool]
) -> list[bool]:
    """Which carried values depend on an active input, through any number of
    iterations (a fixed point over the body)."""
    active = list(init_active)
    while True:
        sources = {v for v, a in zip(body.carried, active, strict=True) if a}
        sources |= {v for v, a in zip(body.captured, captured_active, strict=True) if a}
        reach = set(sources)
        for n in topological(body.outputs):
            if n not in reach and any(a in reach for a in n.args):
                reach.add(n)
        new = [a or (out in reach) for a, out in zip(active, body.outputs, strict=True)]
        if new == active:
            return active
        active = new


# -- forward mode ---------------------------------------------------------------------
def loop_jvp(node: Node, dots: Sequence[Node | None]) -> dict[int, Node]:
    """Tangents of a loop's results (by result index) given its operands'."""
    from symdiff.ad.forward import jvp_graph

    body = L.body_of(node)
    count, init, captured = L.operands(node)
    n = len(init)
    init_dots = list(dots[1 : 1 + n])
    cap_dots = list(dots[1 + n :])
    active = _active_state(
        body, [d is not None for d in init_dots], [d is not None for d in cap_dots]
    )
    state = [k for k in range(n) if active[k]]
    if not state:
        return {}
    t_carried = [L.var(v.attrs[1] + "_dot", v.shape, "float64") for v in body.carried]
    t_captured = {
        j: L.var(v.attrs[1] + "_dot", v.shape, "float64")
        for j, v in enumerate(body.captured)
        if cap_dots[j] is not None
    }
    seeds = [(body.carried[k], t_carried[k]) for k in state]
    seeds += [(body.captured[j], t) for j, t in t_captured.items()]
    outs, _ = jvp_graph([body.outputs[k] for k in state], seeds)
    outs = tuple(_like(t, body.carried[k]) for t, k in zip(outs, state, strict=True))
    new_body = L.Body(
        body.index,
        (*body.carried, *(t_carried[k] for k in state)),
        (*body.captured, *t_captured.values()),
        (*body.outputs, *outs),
        body.test,
        body.stop,
        body.bounded,
        body.reverse,
        body.label,
        _extension(body, n, len(init) + len(state)),
        body.tapes,
    )
    t_init: list[Node] = []
    for k in state:
        d = init_dots[k]
        t_init.append(
            broadcast_to(d, init[k].shape)
            if d is not None
            else L.zeros(init[k].shape, "float64")
        )
    t_cap: list[Node] = [d for d in cap_dots if d is not None]
    tangent = L.loop(count, [*init, *t_init], [*captured, *t_cap], new_body)
    return {k: L.result(tangent, n + m) for m, k in enumerate(state)}


def _extension(
    base: L.Body, n_state: int, n_state_new: int
) -> tuple[L.Body, tuple[int, ...], tuple[int, ...]]:
    """Where a base loop's operands and results sit in a loop that appends
    ``n_state_new - n_state`` carried values (operands: count, init..., captured...)."""
    n_cap = len(base.captured)
    where = (
        0,
        *range(1, 1 + n_state),
        *range(1 + n_state_new, 1 + n_state_new + n_cap),
    )
    results = (*range(n_state), n_state_new)  # the trip count comes after the state
    return base, where, results


# -- reverse mode ---------------------------------------------------------------------
def loop_vjp(
    node: Node, cotangents: dict[int, Node], active_args: Sequence[bool]
) -> list[Node | None]:
    """Adjoints of a loop's operands given its results' (``cotangents`` by index)."""
    from symdiff.ad.reverse import vjp_graph

    body = L.body_of(node)
    _count, init, captured = L.operands(node)
    n = len(init)
    init_active = list(active_args[1 : 1 + n])
    cap_active = list(active_args[1 + n :])
    active = _active_state(body, init_active, cap_active)
    state = [k for k in range(n) if active[k] and body.carried[k].dtype == "float64"]
    caps = [
        j
        for j in range(len(captured))
        if cap_active[j] and body.captured[j].dtype == "float64"
    ]
    if not state and not caps:
        return [None] * len(node.args)
    # the body's adjoint: the state's adjoints in, the state's and the captured
    # values' contributions out
    c_bar = {
        k: L.var(body.carried[k].attrs[1] + "_bar", body.carried[k].shape)
        for k in state
    }
    z_bar = {
        j: L.var(body.captured[j].attrs[1] + "_bar", body.captured[j].shape)
        for j in caps
    }
    wrt = [body.carried[k] for k in state] + [body.captured[j] for j in caps]
    adj = vjp_graph([(body.outputs[k], c_bar[k]) for k in state], wrt)
    new_state = [
        _like(g, body.carried[k]) for g, k in zip(adj.grads, state, strict=False)
    ]
    contributions = [
        _like(g, body.captured[j])
        for j, g in zip(caps, adj.grads[len(state) :], strict=True)
    ]
    back_outputs = _accumulate_into(new_state, [z_bar[j] for j in caps], contributions)
    # the tape: the frontier of forward values the backward body reads
    forward = set(body.nodes())
    available = _recomputable(body, forward)
    frontier: list[Node] = []
    seen: set[Node] = set()
    stack = list(reversed(back_outputs))
    while stack:
        top = stack.pop()
        if top in seen:
            continue
        seen.add(top)
        # a result of a loop of the body counts as computed there, even when the
        # forward body does not use it (an inner while loop's trip count)
        computed = top in forward or (top.op == "item" and top.args[0] in forward)
        if computed and top not in available and top.op != "const":
            frontier.append(top)
            continue
        stack.extend(reversed(top.args))
    frontier.sort(key=_order_key(body))
    checkpoint = CHECKPOINT.get()
    if (
        checkpoint is not None
        and body.bounded
        and body.stop is None
        and not body.reverse  # a backward loop: its state is the adjoints
        and not body.tapes  # it writes tapes, which checkpoints would copy
    ):
        return _checkpointed(
            node,
            cotangents,
            state,
            caps,
            c_bar,
            z_bar,
            back_outputs,
            frontier,
            checkpoint,
        )
    taping, rows = _taping_loop(node, frontier)
    tapes = [L.result(taping, n + m) for m in range(len(frontier))]
    # shaped as allocated: a loop that can `break` has as many rows as it may
    # run, of which the backward loop reads the `rows` it ran (differentiating
    # the backward loop again gives the tapes' adjoints that shape too)
    tape_vars = [
        L.var("tape_" + _hint(r), t.shape, r.dtype)
        for r, t in zip(frontier, tapes, strict=True)
    ]
    reads = {r: _row(t, body.index) for r, t in zip(frontier, tape_vars, strict=True)}
    back_outputs = L.substitute(back_outputs, reads)
    used = set(topological(back_outputs))
    cap_used = [j for j, v in enumerate(body.captured) if v in used]
    back_body = L.Body(
        body.index,
        (*(c_bar[k] for k in state), *(z_bar[j] for j in caps)),
        (*(body.captured[j] for j in cap_used), *tape_vars),
        tuple(back_outputs),
        reverse=not body.reverse,  # a backward loop's adjoint runs forwards
        label="backward: " + body.label,
        accumulators=tuple(range(len(state), len(state) + len(caps))),
    )
    back_init = _backward_init(body, cotangents, state, caps)
    backward = L.loop(
        rows,
        back_init,
        [*(captured[j] for j in cap_used), *tapes],
        back_body,
    )
    return _operand_adjoints(node, backward, state, caps)


def _like(g: Node, v: Node) -> Node:
    """``g`` with ``v``'s shape: lengths that the kernel checks are equal
    (``W.shape[1]`` and 2) may be spelled differently in the two."""
    if g.shape == v.shape:
        return g
    if len(g.shape) != len(v.shape):
        return broadcast_to(g, v.shape)
    return A.reshape(g, v.shape)


def _accumulate_into(
    state: list[Node], accumulators: list[Node], contributions: list[Node]
) -> list[Node]:
    """The backward body's outputs: the state's adjoints, then each accumulator
    plus its contribution.  Where a contribution is what an inner backward loop
    accumulated from zero, that loop starts from the accumulator instead (no
    zeroed array per iteration, no array addition after it): the outputs are
    rebuilt over the new inner loop."""
    sums: list[Node] = []
    starts: dict[Node, dict[int, Node]] = {}
    # a contribution read anywhere else (the adjoint of ``v = 0.5 * w + x`` is
    # ``x``'s and, halved, ``w``'s) must stay what the inner loop accumulated
    uses: dict[Node, int] = {}
    for root in [*state, *contributions]:
        uses[root] = uses.get(root, 0) + 1
    for node in topological([*state, *contributions]):
        for a in node.args:
            uses[a] = uses.get(a, 0) + 1
    for acc, g in zip(accumulators, contributions, strict=True):
        inner = g.args[0] if g.op == "item" else None
        if (
            inner is not None
            and uses[g] == 1
            and g.attrs[0] in L.body_of(inner).accumulators
            and A.is_zero_fill(inner.args[1 + g.attrs[0]])
            and g.attrs[0] not in starts.get(inner, {})
        ):
            starts.setdefault(inner, {})[g.attrs[0]] = acc
            sums.append(g)
        else:
            sums.append(add(acc, g))
    if not starts:
        return [*state, *sums]
    mapping = {}
    for inner, by_k in starts.items():
        args = list(inner.args)
        for k, acc in by_k.items():
            args[1 + k] = acc
        count, *rest = args
        n = len(L.body_of(inner).carried)
        mapping[inner] = L.loop(count, rest[:n], rest[n:], L.body_of(inner))
    return L.substitute([*state, *sums], mapping)


def _row(tape: Node, k: Node) -> Node:
    """Row ``k`` of a tape (``tape[k]``)."""
    return A.take(tape, A.row_spec(len(tape.shape)), (k,))


def _set_row(tape: Node, k: Node, value: Node) -> Node:
    """The tape with row ``k`` set to ``value`` (``tape[k] = value``)."""
    return A.index_update(tape, value, A.row_spec(len(tape.shape)), (k,), "set")


def _backward_init(
    body: L.Body, cotangents: dict[int, Node], state: list[int], caps: list[int]
) -> list[Node]:
    """A backward loop's start: the results' adjoints, then zero accumulators."""
    adjoints = [_cotangent(cotangents.get(k), body.carried[k]) for k in state]
    return adjoints + [L.zeros(body.captured[j].shape, "float64") for j in caps]


def _operand_adjoints(
    node: Node, backward: Node, state: list[int], caps: list[int]
) -> list[Node | None]:
    """The adjoints of ``node``'s operands (count, init..., captured...) from the
    results of its backward loop (the state's adjoints, then the accumulators)."""
    n = len(L.body_of(node).carried)
    out: list[Node | None] = [None] * len(node.args)
    for m, k in enumerate(state):
        out[1 + k] = L.result(backward, m)
    for m, j in enumerate(caps):
        out[1 + n + j] = L.result(backward, len(state) + m)
    return out


def _cotangent(g: Node | None, v: Node) -> Node:
    if g is None:
        return L.zeros(v.shape, "float64")
    return broadcast_to(g, v.shape)


def _hint(node: Node) -> str:
    if node.op == "var":
        return str(node.attrs[1])
    return node.op


def _order_key(body: L.Body):  # type: ignore[no-untyped-def]
    position = {n: i for i, n in enumerate(body.nodes())}
    return lambda n: position.get(n, -1)


def _recomputable(body: L.Body, forward: set[Node]) -> set[Node]:
    """Forward values the backward body computes again rather than reading from
    the tape: those that depend only on the iteration number, the captured values
    and constants (``c * dt``, ``x[i]`` of a captured ``x``)."""
    free = {body.index, *body.captured}
    out: set[Node] = set()
    for n in topological(body.roots()):
        if n in free or n.op in ("const", "dim"):
            out.add(n)
        elif n.args and n.op not in ("loop", "item") and all(a in out for a in n.args):
            out.add(n)
    return out


def _taping_loop(node: Node, frontier: list[Node]) -> tuple[Node, Node]:
    """A loop computing ``node``'s results and a tape row per iteration of each
    value in ``frontier``; and the number of rows (the iterations run)."""
    body = L.body_of(node)
    count = node.args[0]
    if body.bounded:
        rows_count, test, stop, ext = count, body.test, body.stop, True
    else:  # a while loop: run it, then tape as many iterations as it ran
        rows_count, test, stop, ext = L.trips(node), None, None, False
    rows = count_dim(rows_count)
    tape_vars = [L.var("tape_" + _hint(r), (rows, *r.shape), r.dtype) for r in frontier]
    writes = [
        _set_row(t, body.index, r) for t, r in zip(tape_vars, frontier, strict=True)
    ]
    taping = _with_tapes(node, rows_count, tape_vars, writes, test, stop, ext)
    trips = L.trips(taping) if body.bounded else rows_count
    return taping, trips


def _with_tapes(
    node: Node,
    count: Node,
    tapes: list[Node],
    writes: list[Node],
    test: Node | None,
    stop: Node | None,
    extends: bool,
) -> Node:
    """``node``'s loop, run ``count`` times, also carrying ``tapes`` (starting as
    zeros, each updated by its entry of ``writes``); with ``extends``, the kernel
    runs it instead of ``node``."""
    body = L.body_of(node)
    _, init, captured = L.operands(node)
    n = len(init)
    new_body = L.Body(
        body.index,
        (*body.carried, *tapes),
        body.captured,
        (*body.outputs, *writes),
        test,
        stop,
        True,
        body.reverse,
        body.label,
        _extension(body, n, n + len(tapes)) if extends else None,
        tuple(range(n, n + len(tapes))),
    )
    zeros = [L.zeros(t.shape, t.dtype) for t in tapes]
    return L.loop(count, [*init, *zeros], captured, new_body)


def _checkpointed(
    node: Node,
    cotangents: dict[int, Node],
    state: list[int],
    caps: list[int],
    c_bar: dict[int, Node],
    z_bar: dict[int, Node],
    back_outputs: list[Node],
    frontier: list[Node],
    every: int,
) -> list[Node | None]:
    """The adjoint with every-``every`` checkpointing (see the module docstring)."""
    body = L.body_of(node)
    count, init, captured = L.operands(node)
    n = len(init)
    K = constant(every)
    segments = apply("floordiv", add(count, constant(every - 1)), K)
    seg_dim = count_dim(segments)
    # forward: the state at the start of each segment, saved by the loop itself
    saves = [
        L.var("saved_" + _hint(v), (seg_dim, *v.shape), v.dtype) for v in body.carried
    ]
    at_start = apply("eq", apply("mod", body.index, K), constant(0))
    seg_of = apply("floordiv", body.index, K)
    writes = [
        _set_row(s, seg_of, select(at_start, v, _row(s, seg_of)))
        for s, v in zip(saves, body.carried, strict=True)
    ]
    forward = _with_tapes(node, count, saves, writes, None, None, True)
    saved = [L.result(forward, n + k) for k in range(n)]
    # backward, segment by segment: restore, re-tape K iterations, run them back
    s_index = L.var("segment", (), "int64")
    s_saved = [
        L.var(_hint(v) + "_saved", (seg_dim, *v.shape), v.dtype) for v in body.carried
    ]
    s_caps = [L.var(_hint(v), v.shape, v.dtype) for v in body.captured]
    s_state = [L.var(_hint(c_bar[k]), c_bar[k].shape) for k in state]
    s_acc = [L.var(_hint(z_bar[j]), z_bar[j].shape) for j in caps]
    start = apply("mul", s_index, K)
    s_count = L.var("count", (), "int64")
    seg_len = apply("min", K, apply("sub", s_count, start))
    # the inner forward loop: iteration j of the segment is iteration start + j
    j_var = L.var("j", (), "int64")
    inner_state = [L.var(_hint(v), v.shape, v.dtype) for v in body.carried]
    inner_caps = [L.var(_hint(v), v.shape, v.dtype) for v in body.captured]
    start_var = L.var("start", (), "int64")
    shift = {body.index: apply("add", start_var, j_var)}
    shift.update(zip(body.carried, inner_state, strict=True))
    shift.update(zip(body.captured, inner_caps, strict=True))
    # frontier values and outputs of the body, re-expressed on the inner loop's inputs
    moved = L.substitute([*body.outputs, *frontier], shift)
    rows = S.atom("node", seg_len)
    tape_vars = [L.var("tape_" + _hint(r), (rows, *r.shape), r.dtype) for r in frontier]
    writes = [_set_row(t, j_var, r) for t, r in zip(tape_vars, moved[n:], strict=True)]
    inner_fwd_body = L.Body(
        j_var,
        (*inner_state, *tape_vars),
        (*inner_caps, start_var),
        (*moved[:n], *writes),
        label="recompute a segment: " + body.label,
        tapes=tuple(range(n, n + len(frontier))),
    )
    restored = [_row(s, s_index) for s in s_saved]
    inner_fwd = L.loop(
        seg_len,
        [*restored, *(L.zeros(t.shape, t.dtype) for t in tape_vars)],
        [*s_caps, start],
        inner_fwd_body,
    )
    tapes = [L.result(inner_fwd, n + m) for m in range(len(frontier))]
    # the inner backward loop: the body's adjoint at iteration start + j
    b_state = [L.var(_hint(c_bar[k]), c_bar[k].shape) for k in state]
    b_acc = [L.var(_hint(z_bar[j]), z_bar[j].shape) for j in caps]
    b_tapes = [L.var(_hint(t), t.shape, t.dtype) for t in tape_vars]
    b_caps = [L.var(_hint(v), v.shape, v.dtype) for v in body.captured]
    b_start = L.var("start", (), "int64")
    reads: dict[Node, Node] = {
        r: _row(t, j_var) for r, t in zip(frontier, b_tapes, strict=True)
    }
    reads[body.index] = apply("add", b_start, j_var)
    reads.update(zip(body.captured, b_caps, strict=True))
    reads.update((c_bar[k], v) for k, v in zip(state, b_state, strict=True))
    reads.update((z_bar[j], v) for j, v in zip(caps, b_acc, strict=True))
    inner_back_outputs = L.substitute(back_outputs, reads)
    inner_back_body = L.Body(
        j_var,
        (*b_state, *b_acc),
        (*b_caps, *b_tapes, b_start),
        tuple(inner_back_outputs),
        reverse=True,
        label="backward over a segment: " + body.label,
    )
    inner_back = L.loop(
        seg_len, [*s_state, *s_acc], [*s_caps, *tapes, start], inner_back_body
    )
    outer_body = L.Body(
        s_index,
        (*s_state, *s_acc),
        (*s_saved, *s_caps, s_count),
        tuple(L.results(inner_back)),
        reverse=True,
        label=f"backward by segments of {every} (checkpoints): " + body.label,
    )
    back_init = _backward_init(body, cotangents, state, caps)
    outer = L.loop(segments, back_init, [*saved, *captured, count], outer_body)
    return _operand_adjoints(node, outer, state, caps)
