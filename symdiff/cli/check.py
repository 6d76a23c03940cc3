"""``symdiff check``: symdiff's gradient against central finite differences.

The reference is the user's own Python function, run by Python, not symdiff's
translation of it: a wrong translation shows up as a mismatch too.  Differences
use the fourth-order central stencil

    D(h) = (f(x - 2h) - 8 f(x - h) + 8 f(x + h) - f(x + 2h)) / 12h

at ``h = step * max(0.1, |x|)`` and ``h/2``, combined as ``(16 D(h/2) - D(h)) / 15``
(Richardson extrapolation: the error is O(h^6)).  With the default step (1e-3)
smooth functions agree to about 1e-10 relative, well inside the default
tolerance.  Where the stencil straddles a kink, a branch switch or a singularity
the finite difference is meaningless; that shows as D(h) and D(h/2) disagreeing,
and such rows are reported as ``unstable`` rather than as mismatches.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import click
import numpy as np

import symdiff
from symdiff.cli.derivatives import kind_options, target_argument, wrt_option
from symdiff.cli.kinds import (
    BOOL,
    FLOAT,
    INT,
    array_shape,
    base_kind,
    describe,
    is_array,
    is_static,
    sample,
    select_kernel,
)
from symdiff.cli.report import json_option, reports_errors, table, write_json
from symdiff.cli.target import (
    Failure,
    Target,
    Value,
    argument_kinds,
    format_point,
    load_target,
    parse_domains,
    parse_point,
    parse_wrt,
    point_json,
    users_errors,
)

DEFAULT_DOMAIN = (-2.0, 2.0)
#: The step is ``step * max(MIN_SCALE, |x|)``: relative, but not vanishing at 0.
MIN_SCALE = 0.1
MAX_TRIES_PER_SAMPLE = 50


OK, MISMATCH, UNSTABLE = "ok", "MISMATCH", "unstable"


@dataclass(frozen=True)
class Row:
    """One partial derivative at one point, and the verdict."""

    point: tuple[Value, ...]
    arg: str
    symdiff: float
    finite_diff: float
    abs_err: float
    rel_err: float
    status: str


@dataclass(frozen=True)
class Difference:
    """A finite-difference derivative and how much it moved when the step halved."""

    value: float
    spread: float


def central_difference(
    fn: Callable[..., Any],
    point: Sequence[Value],
    i: int,
    step: float,
    element: tuple[int, ...] | None = None,
) -> Difference:
    """d fn / d arg_i at ``point`` (d fn / d arg_i[element] for an array):
    fourth-order central differences with steps ``h`` and ``h/2``,
    Richardson-extrapolated (sixth order).  An int argument is differentiated as a
    real number: ``fn`` gets floats near it."""
    x0 = point[i] if element is None else point[i][element]
    h = step * max(MIN_SCALE, abs(x0))

    def at(offset: float) -> float:
        args = list(point)
        if element is None:
            args[i] = point[i] + offset
        else:
            moved = np.array(point[i], dtype=np.float64)
            moved[element] += offset
            args[i] = moved
        return float(fn(*args))

    def stencil(h: float) -> float:
        return (at(-2 * h) - 8 * at(-h) + 8 * at(h) - at(2 * h)) / (12 * h)

    coarse, fine = stencil(h), stencil(h / 2)
    return Difference((16 * fine - coarse) / 15, abs(fine - coarse))


def compare(
    point: tuple[Value, ...],
    arg: str,
    exact: float,
    approx: Difference,
    rtol: float,
    atol: float,
) -> Row:
    """ok within ``atol + rtol * scale``; otherwise a mismatch, unless the finite
    difference itself is not settled (it moved by more than the tolerance when
    the step halved, or it is not finite: a kink, a branch switch or a
    singularity within the step).  A derivative that is infinite or NaN (at a
    singularity: ``1/x`` at 0) is never ok; it is a mismatch only where the
    finite difference settled on a finite value."""
    err = abs(exact - approx.value)
    scale = max(abs(exact), abs(approx.value))
    tol = atol + rtol * scale
    if not (math.isfinite(exact) and math.isfinite(approx.value)):
        fd_tol = atol + rtol * abs(approx.value)
        settled = math.isfinite(approx.value) and approx.spread <= fd_tol
        status, rel = MISMATCH if settled else UNSTABLE, math.nan
    else:
        rel = err / scale if scale > 0 else 0.0
        status = OK if err <= tol else UNSTABLE if approx.spread > tol else MISMATCH
    return Row(point, arg, exact, approx.value, err, rel, status)


class Checker:
    """Gradient and finite differences of one target at one point at a time."""

    def __init__(
        self,
        target: Target,
        argnums: tuple[int, ...],
        backend: str,
        step: float,
        kinds: Sequence[str],
    ):
        self.target = target
        self.argnums = argnums
        self.step = step
        self.kinds = tuple(kinds)
        self.gradient = symdiff.grad(target.fn, argnums=argnums, target=backend)
        # Translate now (errors before any output): the kernel for these kinds,
        # the one that calls with ints and bools for i64 and bool parameters run.
        select_kernel(self.gradient, self.kinds)

    def rows(self, point: tuple[Value, ...], rtol: float, atol: float) -> list[Row]:
        """One row per scalar argument, and per checked element of an array
        argument (all of them up to ``MAX_ELEMENTS``, else that many spread evenly);
        raises whatever the user's function raises."""
        grads = self.gradient(*point)
        if not isinstance(grads, tuple):
            grads = (grads,)
        fn = self.target.fn
        out = []
        for i, g in zip(self.argnums, grads, strict=True):
            name = self.target.params[i]
            if np.ndim(g) == 0:
                approx = central_difference(fn, point, i, self.step)
                out.append(compare(point, name, float(g), approx, rtol, atol))
                continue
            for e in _elements(np.shape(g)):
                approx = central_difference(fn, point, i, self.step, e)
                label = f"{name}[{','.join(map(str, e))}]"
                out.append(compare(point, label, float(g[e]), approx, rtol, atol))
        return out

    def defined(self, point: tuple[Value, ...]) -> bool:
        """The function and its gradient are finite here (for random points)."""
        try:
            value = float(self.target.fn(*point))
        except (ArithmeticError, ValueError, TypeError):
            return False
        grads = self.gradient(*point)
        grads = grads if isinstance(grads, tuple) else (grads,)
        return math.isfinite(value) and all(bool(np.all(np.isfinite(g))) for g in grads)


#: The most elements of one array argument that a point checks (evenly spread).
MAX_ELEMENTS = 24


def _elements(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    size = int(np.prod(shape))
    picks = (
        range(size)
        if size <= MAX_ELEMENTS
        else np.linspace(0, size - 1, MAX_ELEMENTS).astype(int)
    )
    return [tuple(int(k) for k in np.unravel_index(p, shape)) for p in picks]


def _draw(rng: random.Random, kind: str, domain: tuple[float, float] | None) -> Value:
    """A random value of a parameter: uniform in its domain, an integer in it for
    an int64 parameter, true or false for a bool; an array of such for an array
    kind; a static parameter's own value (it configures the function)."""
    if is_static(kind):
        return sample(kind)
    if is_array(kind):
        base = base_kind(kind)
        shape = array_shape(kind)
        items = [_draw(rng, base, domain) for _ in range(int(np.prod(shape)))]
        dtype = {FLOAT: np.float64, INT: np.int64, BOOL: np.bool_}[base]
        return np.array(items, dtype=dtype).reshape(shape)
    if kind == BOOL or domain is None:
        return rng.random() < 0.5
    if kind == INT:
        return rng.randint(math.ceil(domain[0]), math.floor(domain[1]))
    return rng.uniform(*domain)


def _random_points(
    checker: Checker,
    domains: dict[str, tuple[float, float]],
    samples: int,
    seed: int,
) -> tuple[list[tuple[Value, ...]], int]:
    rng = random.Random(seed)
    points: list[tuple[Value, ...]] = []
    skipped = 0
    params = checker.target.params
    for _ in range(samples * MAX_TRIES_PER_SAMPLE):
        if len(points) == samples:
            break
        point = tuple(
            _draw(rng, kind, domains.get(p))
            for p, kind in zip(params, checker.kinds, strict=True)
        )
        if checker.defined(point):
            points.append(point)
        else:
            skipped += 1
    if not points:
        ranges = ", ".join(
            f"{p} in [{lo:g}, {hi:g}]" for p, (lo, hi) in domains.items()
        )
        raise Failure(
            f"{checker.target.label} is not finite at any of {skipped} random points "
            f"({ranges}); pass --domain NAME=LOW:HIGH or --at"
        )
    return points, skipped


def _rows_at(
    checker: Checker, points: Sequence[tuple[Value, ...]], rtol: float, atol: float
) -> list[Row]:
    rows = []
    for point in points:
        try:
            rows += checker.rows(point, rtol, atol)
        except symdiff.ShapeError as exc:
            raise Failure(
                f"the arguments do not fit `{checker.target.name}`: {exc}"
            ) from None
        except (ArithmeticError, ValueError, TypeError) as exc:
            where = format_point(checker.target.params, point)
            raise Failure(
                f"`{checker.target.name}` raised {type(exc).__name__}: {exc} "
                f"near {where} (finite differences evaluate it within "
                f"{2 * checker.step:g} * max(1, |x|) of the point)"
            ) from None
    return rows


def _fmt(value: float) -> str:
    return f"{value:.15g}"


def _report_text(params: Sequence[str], rows: Sequence[Row]) -> str:
    header = ["point", "arg", "symdiff", "finite diff", "abs err", "rel err", "status"]
    body = [
        [
            format_point(params, r.point),
            r.arg,
            _fmt(r.symdiff),
            _fmt(r.finite_diff),
            f"{r.abs_err:.1e}",
            f"{r.rel_err:.1e}",
            r.status,
        ]
        for r in rows
    ]
    return table(header, body)


@click.command("check")
@target_argument
@wrt_option
@click.option(
    "--at",
    "points",
    metavar="POINT",
    multiple=True,
    help="A point to check, x=1.0,y=2.0 (or 1.0,2.0); repeat for several. "
    "Default: random points.  Values of i64 parameters are integers, of bool "
    "ones true or false; an array is written as nested lists, X=[[1,2],[3,4]] "
    "(its kind and shape follow).  A parameter whose default is a string or None "
    "is static: not drawn, its value a Python literal (mode=lin is 'lin').",
)
@click.option(
    "--samples",
    type=click.IntRange(1, 100_000),
    default=5,
    show_default=True,
    help="How many random points (without --at).",
)
@click.option(
    "--domain",
    "domains",
    metavar="NAME=LOW:HIGH",
    multiple=True,
    help="Where to draw a parameter's random values, e.g. x=0.1:2,y=-1:1 "
    "(default -2:2; integers in it for an i64 parameter; true or false for a "
    "bool). Points where the function is not finite are redrawn.",
)
@click.option(
    "--rtol",
    type=click.FloatRange(min=0),
    default=1e-6,
    show_default=True,
    help="Relative tolerance.",
)
@click.option(
    "--atol",
    type=click.FloatRange(min=0),
    default=1e-8,
    show_default=True,
    help="Absolute tolerance.",
)
@click.option(
    "--step",
    type=click.FloatRange(min=0, min_open=True),
    default=1e-3,
    show_default=True,
    help="Finite-difference step, relative to max(0.1, |x|).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option(
    "--target",
    "backend",
    type=click.Choice(["cpu", "python"]),
    default="cpu",
    show_default=True,
    help="Check the Numba kernel (cpu) or the same source run as Python.",
)
@kind_options
@json_option
@reports_errors
def check_command(
    target: str,
    wrt: str | None,
    points: tuple[str, ...],
    samples: int,
    domains: tuple[str, ...],
    rtol: float,
    atol: float,
    step: float,
    seed: int,
    backend: str,
    arg_kinds: tuple[str, ...],
    infer_kinds: bool,
    as_json: bool,
) -> None:
    """Compare the gradient of FUNC in FILE.py with finite differences.

    Prints one row per point and argument and exits with status 1 if any
    derivative differs by more than ATOL + RTOL * max(|symdiff|, |finite diff|).
    The reference is FUNC run by Python itself, differenced with central
    stencils at two steps (Richardson-extrapolated).  Where those two disagree
    (a kink, a branch switch or a singularity within the step, such as 1/x at
    0, where symdiff's derivative is infinite) the row says "unstable" and does
    not count as a mismatch.

    With --arg n=i64 or flag=bool, those parameters are ints and bools (random
    integers in the domain, random true/false); without --wrt only the float64
    parameters are checked.  An i64 parameter named in --wrt is differentiated
    as a real number, and FUNC is run with floats near it.

    \b
    Examples:
      symdiff check examples/seed004_chain.py:z
      symdiff check model.py:loss --at w=0.5,b=0.1 --at w=-1,b=2
      symdiff check model.py:loss --samples 100 --domain w=0.1:2 --rtol 1e-8
      symdiff check model.py:power --arg n=i64,flag=bool --domain x=0.5:2,n=0:4
    """
    spec = load_target(target)
    kinds = argument_kinds(spec, arg_kinds, points, infer_kinds)
    argnums = parse_wrt(spec, wrt, kinds)
    indices = (argnums,) if isinstance(argnums, int) else argnums
    fixed = [parse_point(spec, text, kinds) for text in points]
    ranges = parse_domains(spec, domains, DEFAULT_DOMAIN, kinds)
    with users_errors(spec, kinds):
        checker = Checker(spec, indices, backend, step, kinds)
    skipped = 0
    if fixed:
        chosen = fixed
    else:
        chosen, skipped = _random_points(checker, ranges, samples, seed)
    rows = _rows_at(checker, chosen, rtol, atol)
    bad = [r for r in rows if r.status == MISMATCH]
    summary = _summary(rows, len(chosen), rtol, atol)
    if as_json:
        settings = {"rtol": rtol, "atol": atol, "step": step}
        write_json(_payload(spec, indices, kinds, rows, settings, skipped))
    else:
        click.echo(_report_text(spec.params, rows))
        if skipped:
            click.echo(f"({skipped} random points skipped: not finite there)")
        if not bad:
            click.echo(f"ok: {summary}")
    if bad:
        if as_json:
            click.get_current_context().exit(1)
        raise Failure(f"mismatch: only {summary}")


def _summary(rows: Sequence[Row], points: int, rtol: float, atol: float) -> str:
    bad = sum(r.status == MISMATCH for r in rows)
    unsure = sum(r.status == UNSTABLE for r in rows)
    text = (
        f"{len(rows) - bad - unsure} of {len(rows)} partial derivatives at {points} "
        f"point{'s' * (points != 1)} agree with finite differences "
        f"(rtol={rtol:g}, atol={atol:g})"
    )
    if unsure:
        text += (
            f"; {unsure} not checked: the finite difference is unstable there "
            "(a kink, branch switch or singularity within the step)"
        )
    return text


def _payload(
    spec: Target,
    indices: Sequence[int],
    kinds: Sequence[str],
    rows: Sequence[Row],
    settings: dict[str, float],
    skipped: int,
) -> dict[str, Any]:
    return {
        "ok": all(r.status != MISMATCH for r in rows),
        "command": "check",
        "target": spec.spec,
        "function": spec.name,
        "wrt": [spec.params[i] for i in indices],
        "kinds": describe(spec.params, kinds),
        **settings,
        "skipped_points": skipped,
        "rows": [
            {
                "point": {
                    p: point_json(v) for p, v in zip(spec.params, r.point, strict=True)
                },
                "arg": r.arg,
                "symdiff": r.symdiff,
                "finite_diff": r.finite_diff,
                "abs_err": r.abs_err,
                "rel_err": r.rel_err,
                "status": r.status.lower(),
            }
            for r in rows
        ],
    }
