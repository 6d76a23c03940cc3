"""The ``symdiff`` command line (a thin layer over the Python API)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from typing import Any

import click

from symdiff import __version__
from symdiff.api import grad, value_and_grad
from symdiff.errors import SymdiffError


def load_target(target: str) -> Callable[..., Any]:
    """Resolve ``path/to/file.py:func`` or ``package.module:func``."""
    if ":" not in target:
        raise click.UsageError(f"expected FILE.py:FUNC or module:FUNC, got {target!r}")
    where, _, name = target.rpartition(":")
    if where.endswith(".py"):
        if not os.path.exists(where):
            raise click.UsageError(f"no such file: {where}")
        module_name = os.path.splitext(os.path.basename(where))[0]
        spec = importlib.util.spec_from_file_location(module_name, where)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
        try:
            spec.loader.exec_module(module)
        except SyntaxError as exc:
            raise click.ClickException(
                f"{where}:{exc.lineno}:{exc.offset}: syntax error: {exc.msg}"
            ) from None
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise click.UsageError(f"cannot import {where}: {exc}") from None
    fn = getattr(module, name, None)
    if fn is None:
        raise click.UsageError(f"{where} has no function {name!r}")
    return getattr(fn, "__wrapped__", fn)


def _argnums(fn: Callable[..., Any], wrt: str | None) -> int | tuple[int, ...]:
    import inspect

    params = list(inspect.signature(fn).parameters)
    if not wrt:
        return tuple(range(len(params)))
    result = []
    for item in wrt.split(","):
        item = item.strip()
        if item.isdigit() and int(item) < len(params):
            result.append(int(item))
        elif item in params:
            result.append(params.index(item))
        else:
            raise click.UsageError(
                f"--wrt: {item!r} is not a parameter of {fn.__name__}"
                f" (parameters: {', '.join(params)})"
            )
    return tuple(result)


@click.group()
@click.version_option(__version__, prog_name="symdiff")
def main() -> None:
    """Exact derivatives of numerical Python, as readable Numba kernels."""


@main.command("grad")
@click.argument("target")
@click.option("--wrt", help="Parameters to differentiate by, e.g. x,y (default all).")
@click.option(
    "--emit",
    type=click.Choice(["source", "ir", "latex", "sympy"]),
    default="source",
    show_default=True,
    help="What to print.",
)
@click.option("--value", is_flag=True, help="Emit the fused value_and_grad kernel.")
def grad_command(target: str, wrt: str | None, emit: str, value: bool) -> None:
    """Print the gradient of FILE.py:FUNC.

    \b
    Examples:
      symdiff grad examples/seed004_chain.py:z
      symdiff grad model.py:loss --wrt w,b --emit latex
    """
    fn = load_target(target)
    transform = value_and_grad if value else grad
    try:
        compiled = transform(fn, argnums=_argnums(fn, wrt), target="python")
        if emit == "source":
            text = compiled.source
        elif emit == "ir":
            text = compiled.ir
        elif emit == "latex":
            text = compiled.latex()
        else:
            text = "\n".join(str(e) for e in _flat(compiled.to_sympy()))
    except SymdiffError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(text.rstrip("\n"))


def _flat(value: Any) -> list[Any]:
    return (
        [value]
        if not isinstance(value, tuple)
        else [v for item in value for v in _flat(item)]
    )


if __name__ == "__main__":  # pragma: no cover
    main()
