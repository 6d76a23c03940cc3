"""The ``symdiff`` command line, a thin layer over the Python API.

One module per command family: ``derivatives`` (grad, jacobian, hessian),
``bundle`` (compile), ``check`` and ``graph``; ``target`` reads ``FILE.py:FUNC``,
``--wrt`` and points, ``kinds`` the parameters' kinds (``--arg n=i64``), and
``report`` writes text, tables and JSON.  Exit status: 0 on success, 1 on a
failure (the user's code cannot be translated, a derivative does not match), 2
on a usage error (a missing file or function, a bad option).
"""

from __future__ import annotations

import click

from symdiff import __version__
from symdiff.cli.bundle import compile_command
from symdiff.cli.cache import cache_command
from symdiff.cli.check import check_command
from symdiff.cli.derivatives import grad_command, hessian_command, jacobian_command
from symdiff.cli.graph import graph_command
from symdiff.cli.target import load_target, parse_wrt

__all__ = ["load_target", "main", "parse_wrt"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="symdiff")
@click.option(
    "--color/--no-color",
    default=None,
    help="Highlight generated source (default: only on a terminal; NO_COLOR "
    "turns it off).",
)
@click.pass_context
def main(ctx: click.Context, color: bool | None) -> None:
    """Exact derivatives of numerical Python, as readable Numba kernels.

    FILE.py:FUNC names a function in a Python file (the file is imported;
    what it prints, to stdout or stderr, is hidden unless importing fails).  A
    module on the import path or in the working directory works too:
    package.module:FUNC.  Parameters are float64 unless --arg NAME=KIND says
    i64, bool or an array such as f64[3,4].

    \b
    Examples:
      symdiff grad examples/seed004_chain.py:z
      symdiff grad examples/seed001_partial.py:f --wrt x --emit latex
      symdiff jacobian model.py:polar --mode forward
      symdiff hessian examples/seed001_partial.py:f --at x=2,y=3
      symdiff grad model.py:power --arg n=i64,flag=bool --at x=2,n=3,flag=true
      symdiff check examples/seed004_chain.py:z --samples 20
      symdiff compile examples/seed004_chain.py:z -o z_kernels.py
      symdiff graph examples/seed004_chain.py:z -o z.svg
      symdiff cache info
    """
    if color is not None:
        ctx.color = color


for _command in (
    grad_command,
    jacobian_command,
    hessian_command,
    check_command,
    compile_command,
    graph_command,
    cache_command,
):
    main.add_command(_command)
