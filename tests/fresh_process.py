"""A small project of user modules for tests that run symdiff in new processes.

These tests cover the disk cache, the warm start, and settings read at import.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The checkout's root: new processes import this symdiff.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def project(tmp_path: Path, files: dict[str, str]) -> tuple[Path, dict[str, str]]:
    """Write ``files`` (name -> text) to ``tmp_path / "work"``.

    Returns that folder and the environment for a new Python process.  In it,
    this checkout's symdiff and the files are importable.  The disk cache is on,
    in ``tmp_path / "cache"``, and the warm start is at its default, whatever the
    test run itself sets.
    """
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    for name, text in files.items():
        (work / name).write_text(text)
    env = dict(
        os.environ,
        SYMDIFF_CACHE_DIR=str(tmp_path / "cache"),
        PYTHONPATH=os.pathsep.join([ROOT, str(work)]),
    )
    env.pop("SYMDIFF_CACHE", None)
    env.pop("SYMDIFF_WARM_START", None)
    return work, env
