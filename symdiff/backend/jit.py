"""JIT policy and compilation of generated source, in one place (DESIGN.md 11).

No ``nnan``/``ninf`` fast-math: gradient checks and piecewise rules rely on IEEE
semantics.  ``error_model="numpy"`` makes ``1/0`` give ``inf`` (as NumPy does)
instead of raising, which if-converted code needs: both arms of a branch are
evaluated, and the untaken one may divide by zero.
"""

from __future__ import annotations

import hashlib
import linecache
from collections.abc import Callable
from typing import Any

#: Options for every CPU kernel.
NJIT_OPTIONS: dict[str, Any] = {
    "fastmath": False,
    "error_model": "numpy",
    "cache": False,
}


def synthetic_filename(name: str, source: str) -> str:
    digest = hashlib.sha1(source.encode()).hexdigest()[:10]
    return f"<symdiff:{name}:{digest}>"


def load_source(source: str, name: str) -> Callable[..., Any]:
    """Execute generated module ``source`` and return its function ``name``.

    The source is registered in :mod:`linecache` under a synthetic file name, so
    ``inspect.getsource``, tracebacks and Numba's messages show the generated line.
    """
    filename = synthetic_filename(name, source)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"__name__": f"symdiff_generated_{name}"}
    exec(compile(source, filename, "exec"), namespace)
    fn = namespace[name]
    assert callable(fn)
    return fn  # type: ignore[no-any-return]


def njit(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``fn`` with Numba under symdiff's JIT policy (compiled on first call)."""
    import numba  # imported here: `import symdiff` must stay light

    return numba.njit(**NJIT_OPTIONS)(fn)  # type: ignore[no-any-return]
