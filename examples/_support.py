"""What the examples share (not an example itself): timing a call, and running a
function's own code on other numbers (``np`` bound to ``autograd.numpy``, ``math`` to
``cmath``) to get an independent reference from the very same source."""

from __future__ import annotations

import time
import types
from collections.abc import Callable
from typing import Any

import numpy as np


def median_time(fn: Callable[..., Any], *args: Any, repeat: int = 15) -> float:
    """Median wall time of one call, over ``repeat`` calls (after a first one)."""
    fn(*args)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def with_modules(fn: Callable[..., Any], **modules: Any) -> Callable[..., Any]:
    """``fn``, and every function of its module that it calls, with module names
    rebound (``np=autograd.numpy``, ``math=cmath``): the same code, run by another
    library."""
    names = dict(fn.__globals__, **modules)
    for name, obj in list(names.items()):
        if isinstance(obj, types.FunctionType) and obj.__globals__ is fn.__globals__:
            names[name] = types.FunctionType(
                obj.__code__, names, obj.__name__, obj.__defaults__, obj.__closure__
            )
    return names[fn.__name__]
