"""What the test modules share: loading the examples and second copies of a corpus,
finite differences, and comparisons of derivatives."""

from __future__ import annotations

import functools
import importlib.util
import inspect
import re
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

REL = 1e-9  # norm-wise relative error allowed between symdiff and an exact oracle
FLOOR = 1e-6  # ... relative to max(|expected|, FLOOR)


# -- modules ----------------------------------------------------------------------------
def load_example(name: str) -> types.ModuleType:
    """``examples/<name>.py`` as a module (it imports symdiff and ``_support``)."""
    spec = importlib.util.spec_from_file_location(
        f"example_{name}", EXAMPLES / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    paths = [str(ROOT), str(EXAMPLES)]
    sys.path[:0] = paths
    try:
        spec.loader.exec_module(module)
    finally:
        for p in paths:
            sys.path.remove(p)
    return module


@functools.cache
def _support() -> types.ModuleType:
    return load_example("_support")


def with_modules(fn: Callable[..., Any], **modules: Any) -> Callable[..., Any]:
    """``fn`` and the functions of its module it calls, with module names rebound
    (``np=autograd.numpy``, ``math=cmath``): the same code run on other numbers
    (examples/_support.py's)."""
    rebound: Callable[..., Any] = _support().with_modules(fn, **modules)
    return rebound


def load_copy(module: types.ModuleType, name: str, **names: Any) -> types.ModuleType:
    """A second copy of ``module`` with some of its globals rebound (a corpus
    whose ``np`` is ``autograd.numpy``: every function is its own oracle)."""
    spec = importlib.util.spec_from_file_location(name, module.__file__)
    assert spec is not None and spec.loader is not None
    copy = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = copy  # as importlib's recipe does (dataclasses need it)
    spec.loader.exec_module(copy)
    for key, value in names.items():
        setattr(copy, key, value)
    return copy


def source_with_helpers(fn: Callable[..., Any], module: types.ModuleType) -> str:
    """The source of ``fn`` and of every function of ``module`` it calls,
    transitively."""
    seen: set[str] = set()
    todo, parts = [fn], []
    while todo:
        f = todo.pop()
        if f.__name__ in seen:
            continue
        seen.add(f.__name__)
        parts.append(inspect.getsource(f))
        for name in f.__code__.co_names:
            obj = vars(module).get(name)
            if inspect.isfunction(obj) and obj.__module__ == module.__name__:
                todo.append(obj)
    return "\n".join(parts)


def coverage(
    cases: Any, patterns: dict[str, str], module: types.ModuleType
) -> dict[str, list[str]]:
    """For each feature, the corpus cases whose source (helpers included) matches
    its regular expression."""
    sources = {c.name: source_with_helpers(c.fn, module) for c in cases}
    return {
        feature: [
            name for name, src in sources.items() if re.search(pattern, src, re.M)
        ]
        for feature, pattern in patterns.items()
    }


# -- references -------------------------------------------------------------------------
def fd_derivative(
    fn: Callable[..., Any], args: tuple[Any, ...], i: int, step: float = 1e-6
) -> np.ndarray:
    """d fn / d args[i] by central differences: an array of out.shape + arg.shape."""
    x = np.asarray(args[i], dtype=float)
    out_shape = np.shape(fn(*args))
    d = np.zeros(out_shape + x.shape)
    for e in np.ndindex(*x.shape):
        plus, minus = x.copy(), x.copy()
        plus[e] += step
        minus[e] -= step
        moved_plus, moved_minus = list(args), list(args)
        if x.shape == ():
            moved_plus[i], moved_minus[i] = float(plus), float(minus)
        else:
            moved_plus[i], moved_minus[i] = plus, minus
        f_plus = np.asarray(fn(*moved_plus), dtype=float)
        f_minus = np.asarray(fn(*moved_minus), dtype=float)
        d[(..., *e)] = (f_plus - f_minus) / (2 * step)
    return d


def contract(d: np.ndarray, t: Any, rank_in: int) -> np.ndarray:
    """Derivative d (out.shape + in.shape) applied to a tangent t of in.shape."""
    return np.tensordot(d, np.asarray(t, dtype=float), axes=rank_in)


# -- comparisons ------------------------------------------------------------------------
def rel_err(got: Any, want: Any) -> float:
    got = np.asarray(got, dtype=float)
    want = np.asarray(want, dtype=float)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), FLOOR))


def assert_close(got: Any, want: Any, what: str, tol: float = REL) -> None:
    shape, want_shape = np.shape(got), np.shape(want)
    assert shape == want_shape, f"{what}: shape {shape}, expected {want_shape}"
    err = rel_err(got, want)
    assert err <= tol, (
        f"{what}: relative error {err:.3g} > {tol:g}\n"
        f"got:\n{np.asarray(got)}\nexpected:\n{np.asarray(want)}"
    )


def assert_like_argument(g: Any, arg: Any, what: str) -> None:
    """A gradient has its argument's shape: an ndarray of float64 for an array
    argument, a float for a Python float."""
    if np.ndim(arg) == 0:
        assert np.ndim(g) == 0, f"{what}: expected a scalar, got shape {np.shape(g)}"
        assert isinstance(g, (float, np.floating)), f"{what}: got {type(g).__name__}"
    else:
        assert isinstance(g, np.ndarray), f"{what}: got {type(g).__name__}"
        assert g.shape == np.shape(arg), f"{what}: shape {g.shape} != {arg.shape}"
        assert g.dtype == np.float64, f"{what}: dtype {g.dtype}"
