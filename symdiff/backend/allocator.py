"""Array temporaries without page faults: glibc's malloc settings for array kernels.

An array kernel allocates its outputs and temporaries on every call (Numba's
runtime calls ``malloc``).  glibc serves a block of 128 KiB or more with a fresh
``mmap`` unless its *dynamic* threshold has grown past that size, and gives the
top of the heap back to the system once more than twice that is free.  Which of
the two happens depends on the process's allocation history, so the same call can
touch every page of every temporary anew (a page fault per 4 KiB) or reuse
memory already mapped.  Measured on the GMM benchmark (d=10, k=25, n=1000): 1414
page faults and 4.6-6 ms per gradient call against 0 faults and 1.2 ms, in the
same process, depending only on what was allocated before.

The first time a loop kernel is compiled or loaded, :func:`keep_freed_memory`
fixes both thresholds (``mallopt``): blocks up to 32 MiB (the largest mmap
threshold glibc accepts on 64-bit systems) come from the heap, and up to 128 MiB
of freed heap stays mapped for the next call.  This is what XLA's and PyTorch's
caching allocators achieve for their own buffers; here it applies to the whole
process, NumPy included, and costs at most that much resident memory kept after
the arrays are freed.

Nothing is changed where the user has chosen: ``SYMDIFF_TUNE_MALLOC=0``, or the
``MALLOC_MMAP_THRESHOLD_``/``MALLOC_TRIM_THRESHOLD_`` variables, or a
``GLIBC_TUNABLES`` setting of either threshold.  Other C libraries (macOS,
Windows, musl) are left alone.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable

#: glibc's ``mallopt`` parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

#: Blocks below this size come from the heap (glibc's maximum on 64-bit).
MMAP_THRESHOLD = 32 << 20
#: Freed memory at the top of the heap kept mapped, up to this size.
TRIM_THRESHOLD = 128 << 20

_USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
_TUNABLES = ("glibc.malloc.mmap_threshold", "glibc.malloc.trim_threshold")


def _user_chose() -> bool:
    if os.environ.get("SYMDIFF_TUNE_MALLOC", "1").strip() == "0":
        return True
    if any(name in os.environ for name in _USER_SETTINGS):
        return True
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    return any(name in tunables for name in _TUNABLES)


def _mallopt() -> Callable[[int, int], int] | None:
    """glibc's ``mallopt``, or None where the C library is not glibc."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # here: `import symdiff` must stay light

    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    if not hasattr(libc, "gnu_get_libc_version"):  # glibc's own (musl lacks it)
        return None
    mallopt = libc.mallopt
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt  # type: ignore[no-any-return,unused-ignore]


@functools.cache
def keep_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds, once per process (see the module
    docstring); True if they are set."""
    mallopt = None if _user_chose() else _mallopt()
    return mallopt is not None and all(
        mallopt(option, value) == 1
        for option, value in (
            (M_MMAP_THRESHOLD, MMAP_THRESHOLD),
            (M_TRIM_THRESHOLD, TRIM_THRESHOLD),
        )
    )
