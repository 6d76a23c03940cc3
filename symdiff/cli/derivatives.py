"""``symdiff grad``, ``jacobian`` and ``hessian``: show a derivative kernel, or
evaluate it at points.

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

import symdiff
from symdiff.cli.kinds import (
    arg_option,
    describe,
    infer_option,
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
    Target,
    Value,
    argument_kinds,
    format_point,
    load_target,
    parse_point,
    parse_wrt,
    point_json,
    wrt_names,
)
from symdiff.compiled import Compiled
from symdiff.kernel import Kernel

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
    "formulas, or everything as JSON (same as --json).",
)
at_option = click.option(
    "--at",
    "points",
    metavar="POINT",
    multiple=True,
    help="Evaluate at x=1.0,y=2.0 (or 1.0,2.0) instead of printing the kernel; "
    "repeat for several points.  Values of i64 parameters are integers, of bool "
    "ones true or false; an array is written as nested lists, X=[[1,2],[3,4]] "
    "(its kind and shape follow).",
)


def kind_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--arg`` and ``--infer-kinds``, for commands that take ``--at``."""
    return arg_option(infer_option(command))


def _sympy_lines(compiled: Compiled) -> dict[str, str]:
    exprs = list(flat(compiled.to_sympy()))
    names = compiled.kernel.output_names
    return {name: str(expr) for name, expr in zip(names, exprs, strict=True)}


def _evaluate(
    compiled: Compiled,
    kernel: Kernel,
    target: Target,
    points: Sequence[tuple[Value, ...]],
) -> list[dict[str, Any]]:
    names = kernel.output_names
    results = []
    for point in points:
        # The API picks the kernel by the arguments' types: ints and bools for
        # i64 and bool parameters give the kernel that was built for them.
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
    target = load_target(target_spec)
    kinds = argument_kinds(target, arg_kinds, points, infer_kinds)
    argnums = parse_wrt(target, wrt, kinds)
    parsed = [parse_point(target, text, kinds) for text in points]
    compiled = build(target.fn, argnums)
    kernel = select_kernel(compiled, kinds)  # build it now: errors before any output
    results = _evaluate(compiled, kernel, target, parsed) if parsed else None
    select_kernel(compiled, kinds)  # `compiled.kernel` (latex, sympy) is this one
    if as_json or emit == "json":
        payload = _payload(kind, compiled, target, argnums, emit, kinds)
        if results is not None:
            payload["results"] = results
        write_json(payload)
    elif results is not None:
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
    elif emit == "source":
        source = kernel.source
        if is_typed(kinds):
            dtypes = kernel_dtypes(compiled, kinds)
            source = with_signature(source, target.params, dtypes)
        echo_source(source)
    elif emit == "ir":
        click.echo(compiled.ir)
    elif emit == "latex":
        click.echo(compiled.latex())
    else:
        lines = _sympy_lines(compiled)
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
        payload["latex"] = compiled.latex()
    if emit == "sympy":
        payload["sympy"] = _sympy_lines(compiled)
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

    \b
    Examples:
      symdiff jacobian model.py:to_cartesian
      symdiff jacobian model.py:f --mode forward --emit ir
      symdiff jacobian model.py:f --at r=1.0,theta=0.5
      symdiff jacobian model.py:f --arg k=i64 --at r=1.0,theta=0.5,k=2
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

    \b
    Examples:
      symdiff hessian examples/seed001_partial.py:f
      symdiff hessian model.py:f --wrt x,y --at x=1.0,y=2.0
      symdiff hessian model.py:f --emit latex
      symdiff hessian model.py:power --arg n=i64 --at x=2,n=3
    """

    def build(fn: Callable[..., Any], argnums: Any) -> Compiled:
        return symdiff.hessian(fn, argnums=argnums, target="python")  # type: ignore[no-any-return]

    show("hessian", build, target, wrt, emit, points, as_json, arg_kinds, infer_kinds)
