"""``symdiff grad``, ``jacobian`` and ``hessian``: show a derivative kernel, or
evaluate it at points.  The Jacobian and Hessian of an array function have no
kernel (the API computes them a sweep at a time): they can only be evaluated.

Kernels are built with ``target="python"``: showing or evaluating them once does
not need Numba's compile time (the source is the same either way).  The kernel
shown is the one for the argument kinds of ``--arg`` (and ``--infer-kinds``); when
some parameter is not a float64, the printed source says so in a ``# signature:``
line, as its ``def`` cannot.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click
import numpy as np
from click.core import ParameterSource

import symdiff
from symdiff.cli.kinds import (
    arg_option,
    describe,
    infer_option,
    is_array,
    is_typed,
    kernel_dtypes,
    select_kernel,
    with_signature,
)
from symdiff.cli.report import (
    echo_source,
    flat,
    json_option,
    number,
    reports_errors,
    write_json,
)
from symdiff.cli.target import (
    Failure,
    Target,
    Value,
    argument_kinds,
    format_point,
    load_target,
    parse_point,
    parse_wrt,
    point_json,
    users_errors,
    wrt_names,
)
from symdiff.compiled import Compiled
from symdiff.ir.node import topological
from symdiff.ir.ops import CONTROL_OPS

EMITS = ("source", "ir", "latex", "sympy", "json")

target_argument = click.argument("target", metavar="FILE.py:FUNC")
wrt_option = click.option(
    "--wrt",
    metavar="NAMES",
    help="Parameters to differentiate by, as names (x,y) or positions (0,1); "
    "default: all of them, or the f64 ones when --arg declares i64 or bool.",
)
emit_option = click.option(
    "--emit",
    type=click.Choice(EMITS),
    default="source",
    show_default=True,
    help="What to print: the kernel's source, its IR listing, LaTeX or SymPy "
    "formulas (not for kernels with loops), or everything as JSON (same as "
    "--json).  Not with --at, except as JSON.",
)
at_option = click.option(
    "--at",
    "points",
    metavar="POINT",
    multiple=True,
    help="Evaluate at x=1.0,y=2.0 (or 1.0,2.0) instead of printing the kernel; "
    "repeat for several points.  Values of i64 parameters are integers, of bool "
    "ones true or false; an array is written as nested lists, X=[[1,2],[3,4]] "
    "(its kind and shape follow).  A parameter with a default may be left out; "
    "one whose default is a string or None is static, its value a Python literal "
    "(mode=lin is the string 'lin').",
)


def kind_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--arg`` and ``--infer-kinds``, for commands that take ``--at``."""
    return arg_option(infer_option(command))


def _no_loops(compiled: Compiled, target: Target, kind: str) -> None:
    """Formulas (``--emit latex``, ``--emit sympy``) exist for kernels without
    loops: a loop stays a loop in the kernel, whatever its trip count."""
    if any(node.op in CONTROL_OPS for node in topological(compiled.kernel.outputs)):
        raise Failure(
            f"the {kind} of {target.label} runs a loop, and a loop has no formula "
            "(LaTeX or SymPy) form\n  help: print the kernel with --emit source "
            "(or its graph with --emit ir), or evaluate it with --at"
        )


def _latex(compiled: Compiled, target: Target, kind: str) -> str:
    _no_loops(compiled, target, kind)
    return compiled.latex()


def _sympy_lines(compiled: Compiled, target: Target, kind: str) -> dict[str, str]:
    _no_loops(compiled, target, kind)
    exprs = list(flat(compiled.to_sympy()))
    names = compiled.kernel.output_names
    return {name: str(expr) for name, expr in zip(names, exprs, strict=True)}


def _evaluate(
    compiled: Compiled,
    names: Sequence[str],
    target: Target,
    points: Sequence[tuple[Value, ...]],
    kinds: Sequence[str],
) -> list[dict[str, Any]]:
    results = []
    for point in points:
        # The API picks the kernel by the arguments' types: ints and bools for
        # i64 and bool parameters give the kernel that was built for them (and
        # a static value the kernel specialised to it).
        with users_errors(target, kinds, point):
            values = [
                v.tolist() if isinstance(v, np.ndarray) else float(v)
                for v in flat(compiled(*point))
            ]
        results.append(
            {
                "at": {
                    p: point_json(v) for p, v in zip(target.params, point, strict=True)
                },
                "values": dict(zip(names, values, strict=True)),
            }
        )
    return results


def _by_sweeps(kind: str, compiled: Compiled, kinds: Sequence[str]) -> bool:
    """A Jacobian or Hessian that the API computes a sweep at a time (array
    arguments or outputs), so that no one kernel can be shown."""
    if kind == "hessian":
        return any(is_array(k) for k in kinds)
    if kind == "jacobian":
        return compiled._array_jacobian_needed(kernel_dtypes(compiled, kinds))
    return False


def _sweep_names(
    kind: str, target: Target, argnums: Any, kinds: Sequence[str]
) -> list[str]:
    """Names of the blocks of a swept Jacobian or Hessian, in the order the API
    returns them, as the scalar kernels name their entries."""
    wrt = wrt_names(target, argnums)
    if kind == "hessian":
        return [f"d2_d{a}_d{b}" for a in wrt for b in wrt]
    forward = symdiff.jit(target.fn, target="python")
    outs = select_kernel(forward, kinds).output_names
    return [f"d{out}_d{w}" for out in outs for w in wrt]


def _echo_results(
    kind: str,
    target: Target,
    parsed: Sequence[tuple[Value, ...]],
    results: Sequence[dict[str, Any]],
) -> None:
    for point, result in zip(parsed, results, strict=True):
        where = format_point(target.params, point)
        click.echo(f"{kind} of `{target.name}` at {where}:")
        for name, value in result["values"].items():
            if isinstance(value, list):
                text = np.array2string(
                    np.asarray(value), precision=8, separator=", ", threshold=50
                )
                click.echo(f"  {name} = " + text.replace("\n", "\n    "))
            else:
                click.echo(f"  {name} = {number(value)}")


def _check_emit(emit: str, points: Sequence[str], as_json: bool) -> None:
    """``--emit`` prints the kernel, ``--at`` its values: both at once only as
    JSON, which has room for the two."""
    given = click.get_current_context().get_parameter_source("emit")
    if points and emit != "json" and not as_json and given != ParameterSource.DEFAULT:
        raise click.UsageError(
            f"--emit {emit} prints the derivative and --at evaluates it: give one "
            "of them (with --json, the output has both)"
        )


def show(
    kind: str,
    build: Callable[[Callable[..., Any], Any], Compiled],
    target_spec: str,
    wrt: str | None,
    emit: str,
    points: Sequence[str],
    as_json: bool,
    arg_kinds: Sequence[str] = (),
    infer_kinds: bool = False,
) -> None:
    """Build one transform of the target and print what was asked for."""
    _check_emit(emit, points, as_json)
    target = load_target(target_spec)
    kinds = argument_kinds(target, arg_kinds, points, infer_kinds)
    argnums = parse_wrt(target, wrt, kinds)
    parsed = [parse_point(target, text, kinds) for text in points]
    compiled = build(target.fn, argnums)
    with users_errors(target, kinds):
        by_sweeps = bool(parsed) and _by_sweeps(kind, compiled, kinds)
    if by_sweeps:
        # No one kernel (select_kernel says so without --at): the API's values.
        names = _sweep_names(kind, target, argnums, kinds)
        swept = _evaluate(compiled, names, target, parsed, kinds)
        if as_json or emit == "json":
            write_json(_sweeps_payload(kind, compiled, target, argnums, kinds, swept))
        else:
            _echo_results(kind, target, parsed, swept)
        return
    with users_errors(target, kinds):
        kernel = select_kernel(compiled, kinds)  # build it now: errors before output
    results = None
    if parsed:
        results = _evaluate(compiled, kernel.output_names, target, parsed, kinds)
    select_kernel(compiled, kinds)  # `compiled.kernel` (latex, sympy) is this one
    if as_json or emit == "json":
        payload = _payload(kind, compiled, target, argnums, emit, kinds)
        if results is not None:
            payload["results"] = results
        write_json(payload)
    elif results is not None:
        _echo_results(kind, target, parsed, results)
    else:
        _echo_kernel(kind, emit, compiled, target, kinds)


def _echo_kernel(
    kind: str, emit: str, compiled: Compiled, target: Target, kinds: Sequence[str]
) -> None:
    """The kernel as ``--emit`` says: source, IR listing, LaTeX or SymPy."""
    if emit == "source":
        source = compiled.kernel.source
        if is_typed(kinds):
            dtypes = kernel_dtypes(compiled, kinds)
            source = with_signature(source, target.params, dtypes)
        echo_source(source)
    elif emit == "ir":
        click.echo(compiled.ir)
    elif emit == "latex":
        click.echo(_latex(compiled, target, kind))
    else:
        lines = _sympy_lines(compiled, target, kind)
        click.echo("\n".join(f"{name} = {expr}" for name, expr in lines.items()))


def _payload(
    kind: str,
    compiled: Compiled,
    target: Target,
    argnums: Any,
    emit: str,
    kinds: Sequence[str],
) -> dict[str, Any]:
    """The JSON object: the kernel and where it came from; LaTeX and SymPy only
    when asked for (``--emit``), as they can be large.  ``kinds`` are the
    parameters' kinds as given, ``signature`` the kernel's (a differentiated
    int64 parameter is a float64 to the kernel)."""
    kernel = compiled.kernel
    payload: dict[str, Any] = {
        "ok": True,
        "command": kind,
        "target": target.spec,
        "function": target.name,
        "location": kernel.traced.location,
        "wrt": wrt_names(target, argnums),
        "kinds": describe(target.params, kinds),
        "signature": describe(target.params, kernel_dtypes(compiled, kinds)),
        "kernel": kernel.name,
        "outputs": list(kernel.output_names),
        "source": kernel.source,
        "ir": kernel.ir,
        "op_counts": kernel.op_counts,
    }
    if kernel.mode:
        payload["mode"] = kernel.mode
    if emit == "latex":
        payload["latex"] = _latex(compiled, target, kind)
    if emit == "sympy":
        payload["sympy"] = _sympy_lines(compiled, target, kind)
    return payload


def _sweeps_payload(
    kind: str,
    compiled: Compiled,
    target: Target,
    argnums: Any,
    kinds: Sequence[str],
    results: list[dict[str, Any]],
) -> dict[str, Any]:
    """The JSON object of a Jacobian or Hessian computed a sweep at a time: the
    values, and no kernel (none computes them all)."""
    payload: dict[str, Any] = {
        "ok": True,
        "command": kind,
        "target": target.spec,
        "function": target.name,
        "location": compiled.kernel.traced.location,
        "wrt": wrt_names(target, argnums),
        "kinds": describe(target.params, kinds),
        "outputs": list(results[0]["values"]),
    }
    if compiled.mode:
        payload["mode"] = compiled.mode
    payload["results"] = results
    return payload


@click.command("grad")
@target_argument
@wrt_option
@emit_option
@click.option(
    "--value", is_flag=True, help="The fused value_and_grad kernel (value first)."
)
@at_option
@kind_options
@json_option
@reports_errors
def grad_command(
    target: str,
    wrt: str | None,
    emit: str,
    value: bool,
    points: tuple[str, ...],
    arg_kinds: tuple[str, ...],
    infer_kinds: bool,
    as_json: bool,
) -> None:
    """The gradient of a scalar function FUNC in FILE.py.

    Prints the generated kernel (the forward pass, then the backward pass), or
    with --at evaluates it.  With one parameter the gradient is a number, with
    several a tuple, as symdiff.grad returns them.

    Parameters are float64 unless --arg says otherwise (i64 or bool); without
    --wrt, the float64 ones are differentiated.  An i64 parameter named in --wrt
    is differentiated as a real number.

    \b
    Examples:
      symdiff grad examples/seed004_chain.py:z
      symdiff grad model.py:loss --wrt w,b --emit latex
      symdiff grad model.py:loss --value --at w=0.5,b=0.1,x=1.0
      symdiff grad model.py:power --arg n=i64,flag=bool --at x=2,n=3,flag=false
      symdiff grad model.py:power --infer-kinds --at x=2.0,n=3,flag=true
      symdiff grad model.py:loss --json | jq -r .source
    """
    transform = symdiff.value_and_grad if value else symdiff.grad
    kind = "value_and_grad" if value else "grad"

    def build(fn: Callable[..., Any], argnums: Any) -> Compiled:
        return transform(fn, argnums=argnums, target="python")  # type: ignore[no-any-return]

    show(kind, build, target, wrt, emit, points, as_json, arg_kinds, infer_kinds)


@click.command("jacobian")
@target_argument
@wrt_option
@click.option(
    "--mode",
    type=click.Choice(["auto", "forward", "reverse"]),
    default="auto",
    show_default=True,
    help="Sweeps: forward (one per input) or reverse (one per output); auto "
    "picks the fewer.",
)
@emit_option
@at_option
@kind_options
@json_option
@reports_errors
def jacobian_command(
    target: str,
    wrt: str | None,
    mode: str,
    emit: str,
    points: tuple[str, ...],
    arg_kinds: tuple[str, ...],
    infer_kinds: bool,
    as_json: bool,
) -> None:
    """The Jacobian of FUNC in FILE.py (which may return a tuple of numbers).

    J[i][j] is d out_i / d arg_j; the kernel's header says which mode was used.
    With array arguments or outputs it is computed a sweep at a time, by no
    single kernel: give --at to print its values.

    \b
    Examples:
      symdiff jacobian model.py:to_cartesian
      symdiff jacobian model.py:f --mode forward --emit ir
      symdiff jacobian model.py:f --at r=1.0,theta=0.5
      symdiff jacobian model.py:f --arg k=i64 --at r=1.0,theta=0.5,k=2
      symdiff jacobian model.py:norm --at 'x=[1,2,3]'
    """

    def build(fn: Callable[..., Any], argnums: Any) -> Compiled:
        return symdiff.jacobian(fn, argnums=argnums, mode=mode, target="python")  # type: ignore[no-any-return]

    show("jacobian", build, target, wrt, emit, points, as_json, arg_kinds, infer_kinds)


@click.command("hessian")
@target_argument
@wrt_option
@emit_option
@at_option
@kind_options
@json_option
@reports_errors
def hessian_command(
    target: str,
    wrt: str | None,
    emit: str,
    points: tuple[str, ...],
    arg_kinds: tuple[str, ...],
    infer_kinds: bool,
    as_json: bool,
) -> None:
    """The Hessian of a scalar function FUNC in FILE.py (forward-over-reverse).

    With array arguments it is computed a Hessian-vector product at a time, by
    no single kernel: give --at to print its values.

    \b
    Examples:
      symdiff hessian examples/seed001_partial.py:f
      symdiff hessian model.py:f --wrt x,y --at x=1.0,y=2.0
      symdiff hessian model.py:f --emit latex
      symdiff hessian model.py:power --arg n=i64 --at x=2,n=3
      symdiff hessian model.py:norm --at 'x=[1,2,3]'
    """

    def build(fn: Callable[..., Any], argnums: Any) -> Compiled:
        return symdiff.hessian(fn, argnums=argnums, target="python")  # type: ignore[no-any-return]

    show("hessian", build, target, wrt, emit, points, as_json, arg_kinds, infer_kinds)
