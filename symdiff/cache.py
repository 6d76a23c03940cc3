"""The on-disk kernel cache: generated modules and Numba's machine code.

A kernel is keyed by its generated source (which is a function of the user's
function, every helper it calls and the transform), symdiff's and Numba's versions,
the Python version and the JIT options.  The source is written as a real module
(atomically: a temporary file, then ``os.replace``), and Numba compiles it with
``cache=True``, so its machine code lands beside it and a new process loads it
instead of compiling.  A module whose text does not match what it should hold
(truncated, edited, corrupt) is rewritten, never trusted.  On a hit, the first
calls of a straight-line kernel of floats run as plain Python while Numba loads the
machine code in the background (:mod:`symdiff.backend.warm`).

The folder is ``$SYMDIFF_CACHE_DIR``, else ``$XDG_CACHE_HOME/symdiff``, else
``~/.cache/symdiff``; ``SYMDIFF_CACHE=0`` turns the disk cache off.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from symdiff import __version__


def cache_root() -> Path:
    """The cache folder (not created)."""
    env = os.environ.get("SYMDIFF_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return Path(base).expanduser() / "symdiff"


def enabled() -> bool:
    return os.environ.get("SYMDIFF_CACHE", "1").lower() not in ("0", "false", "no")


@functools.cache
def _numba_version() -> str:
    """Numba's version, read from the ``numba-*.dist-info`` folder beside the
    package when there is one: neither Numba nor ``importlib.metadata`` (30-50 ms
    with the ``email`` package it imports) is imported on a warm start."""
    spec = importlib.util.find_spec("numba")
    if spec is not None and spec.origin is not None:
        found = list(Path(spec.origin).parent.parent.glob("numba-*.dist-info"))
        if len(found) == 1:
            try:
                with open(found[0] / "METADATA", encoding="utf-8") as handle:
                    for line in handle:
                        if line.startswith("Version:"):
                            return line.split(":", 1)[1].strip()
                        if not line.strip():
                            break  # end of the headers
            except OSError:
                pass
    from importlib.metadata import version

    return version("numba")


def kernel_key(source: str, name: str, options: dict[str, Any]) -> str:
    """A digest of everything the compiled kernel depends on."""
    parts = [
        source,
        name,
        __version__,
        _numba_version(),
        sys.version,
        repr(sorted(options.items())),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".py")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def cached_module_path(source: str, name: str, options: dict[str, Any]) -> Path:
    """The module file holding ``source``, written (or repaired) if needed."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"{name}_{kernel_key(source, name, options)[:20]}.py"
    try:
        current = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        current = None
    if current != source:
        _write_atomically(path, source)
    return path


def has_machine_code(path: Path, name: str) -> bool:
    """Whether Numba's index for function ``name`` of the module at ``path`` is
    there and not older than the module (a cache hit, unless the index turns out
    not to hold this signature or to be unreadable: then Numba compiles)."""
    try:
        module = path.stat().st_mtime
        indexes = (path.parent / "__pycache__").glob(f"{path.stem}.{name}-*.nbi")
        return any(index.stat().st_mtime >= module for index in indexes)
    except OSError:
        return False


def discard_unreadable_machine_code(path: Path) -> None:
    """Delete Numba's cache files for the module at ``path`` if any is unreadable.

    Numba trusts its index and data files and fails on a truncated one; reading
    them first (as Numba does: a pickled version, then a pickled payload) lets a
    corrupt entry be rebuilt instead.
    """
    import pickle

    folder = path.parent / "__pycache__"
    if not folder.is_dir():
        return
    files = sorted(folder.glob(f"{path.stem}.*"))
    try:
        for file in files:
            with open(file, "rb") as handle:
                if file.suffix == ".nbi":
                    pickle.load(handle)
                    pickle.loads(handle.read())
                else:
                    pickle.loads(handle.read())
    except Exception:  # any unreadable file: drop the whole entry
        for file in files:
            file.unlink(missing_ok=True)


def load_function(path: Path, name: str) -> Callable[..., Any]:
    """Import the module at ``path`` and return its function ``name``."""
    module_name = f"symdiff_cache_{path.stem}"
    module = sys.modules.get(module_name)
    if module is None or getattr(module, "__file__", None) != str(path):
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[module_name] = module
    fn = getattr(module, name)
    assert callable(fn)
    return fn  # type: ignore[no-any-return]


#: A cached module's file name: the kernel's name and 20 hex digits of its key
#: (:func:`cached_module_path`), or a temporary file being written.
_MODULE = re.compile(r"(?:.+_[0-9a-f]{20}|\.tmp-.+)\.py")


def _cache_files(root: Path) -> list[Path]:
    """The files of ``root`` that the cache wrote: its modules and, in
    ``__pycache__``, Numba's index and data files and Python's bytecode of them.
    Nothing else in the folder is the cache's, so nothing else is counted or
    deleted (``SYMDIFF_CACHE_DIR`` may name a folder that holds other files)."""
    if not root.is_dir():
        return []
    modules = sorted(
        p for p in root.iterdir() if p.is_file() and _MODULE.fullmatch(p.name)
    )
    stems = {p.stem for p in modules}
    out = list(modules)
    folder = root / "__pycache__"
    if folder.is_dir():
        out.extend(
            p
            for p in sorted(folder.iterdir())
            if p.is_file() and p.name.split(".", 1)[0] in stems
        )
    return out


def info() -> dict[str, Any]:
    """Where the cache is, how many kernels it holds and their size on disk."""
    root = cache_root()
    files = _cache_files(root)
    return {
        "path": str(root),
        "enabled": enabled(),
        "kernels": sum(
            1 for p in files if p.parent == root and not p.name.startswith(".")
        ),
        "files": len(files),
        "bytes": sum(p.stat().st_size for p in files),
    }


def clear() -> int:
    """Delete the cached kernels (the cache's own files only; the folder too when
    nothing else is left in it); returns the number of files removed."""
    root = cache_root()
    removed = 0
    for p in _cache_files(root):
        try:
            p.unlink()
            removed += 1
        except FileNotFoundError:
            pass  # another process cleared it first
    for folder in (root / "__pycache__", root):
        try:
            folder.rmdir()  # only if empty
        except OSError:
            pass
    return removed
