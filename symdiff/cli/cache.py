"""``symdiff cache``: where compiled kernels are kept, and clearing them."""

from __future__ import annotations

import click

from symdiff import cache
from symdiff.cli.report import json_option, write_json


@click.group("cache")
def cache_command() -> None:
    """The on-disk kernel cache (SYMDIFF_CACHE_DIR; SYMDIFF_CACHE=0 disables it).

    \b
    Examples:
      symdiff cache info
      symdiff cache clear
    """


@cache_command.command("info")
@json_option
def info_command(as_json: bool) -> None:
    """Show the cache folder, its kernels and their size."""
    details = cache.info()
    if as_json:
        write_json({"ok": True, **details})
        return
    state = "on" if details["enabled"] else "off (SYMDIFF_CACHE=0)"
    click.echo(f"cache:   {details['path']} ({state})")
    click.echo(
        f"kernels: {details['kernels']} ({details['files']} files, "
        f"{details['bytes'] / 1024:.1f} KiB)"
    )


@cache_command.command("clear")
@json_option
def clear_command(as_json: bool) -> None:
    """Delete every cached kernel."""
    removed = cache.clear()
    if as_json:
        write_json({"ok": True, "removed_files": removed})
        return
    click.echo(
        f"removed {removed} file{'s' * (removed != 1)} from {cache.cache_root()}"
    )
