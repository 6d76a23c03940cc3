"""Transforms of bound methods, callable objects and ``functools.partial``: they
pickle (as the callable and the options, kernels rebuilt where unpickled, with
the source of a ``__main__`` function shipped beside it, as Dask's workers need)
and :func:`symdiff.vectorize` batches them, the bound object and the partial's
arguments being constants of the loop."""

from __future__ import annotations

import ast
import copy
import functools
import pickle
import subprocess
import sys

import numpy as np
import pytest

import symdiff
from symdiff.api import BoundCompiled


def energy(x, k):
    return 0.5 * k * x * x


class Spring:
    def __init__(self, k):
        self.k = k

    def energy(self, x):
        return 0.5 * self.k * x * x

    def __call__(self, x, scale=1.0):
        return scale * self.k * x**3


def bound_transforms():
    """(transform, its gradient at x as a function of x) for each binding."""
    return [
        (symdiff.grad(functools.partial(energy, k=2.0)), lambda x: 2.0 * x),
        (symdiff.grad(Spring(3.0).energy), lambda x: 3.0 * x),
        (symdiff.grad(Spring(2.0)), lambda x: 6.0 * x**2),
        (symdiff.grad(functools.partial(energy, 1.5)), lambda k: 1.125 + 0 * k),
    ]


@pytest.mark.parametrize("index", range(4))
def test_bound_transforms_pickle(index):
    g, want = bound_transforms()[index]
    again = pickle.loads(pickle.dumps(g))
    assert isinstance(again, BoundCompiled)
    assert again(1.5) == g(1.5) == want(1.5)
    assert copy.copy(g)(0.5) == want(0.5)


def test_the_options_survive_a_pickle():
    g = symdiff.value_and_grad(
        functools.partial(energy, 1.5), argnums=0, target="python"
    )
    again = pickle.loads(pickle.dumps(g))
    assert again._compiled._target == "python"
    assert again(2.0) == g(2.0) == (0.5 * 2.0 * 1.5**2, 0.5 * 1.5**2)


def test_an_instance_made_without_init_does_not_recurse():
    empty = BoundCompiled.__new__(BoundCompiled)
    with pytest.raises(AttributeError):
        empty.source


@pytest.mark.parametrize("index", range(4))
@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_bound_transforms_vectorize(index, target):
    g, want = bound_transforms()[index]
    xs = np.array([0.5, 1.0, 2.0])
    vec = symdiff.vectorize(g, target=target)
    np.testing.assert_allclose(vec(xs), want(xs), rtol=1e-15)
    assert vec.transform is g
    again = pickle.loads(pickle.dumps(vec))
    np.testing.assert_allclose(again(xs), want(xs), rtol=1e-15)
    twice = symdiff.vectorize(vec)  # keeps what the transform binds
    np.testing.assert_allclose(twice(xs), want(xs), rtol=1e-15)


def test_the_bound_object_is_no_argument_of_the_loop():
    vec = symdiff.vectorize(symdiff.grad(Spring(3.0).energy))
    source = vec.source  # before any call: the bound object is known
    assert "def energy_grad_cpu(x, x_bar):" in source
    assert "energy_grad(0, x[i])" in source
    assert "# static (the kernel is specialised to it; 0 is passed" in source


def test_keywords_of_the_call_and_of_the_partial():
    vec = symdiff.vectorize(symdiff.grad(Spring(2.0)))
    xs = np.array([1.0, 2.0])
    np.testing.assert_allclose(vec(xs, scale=0.5), 3.0 * xs**2, rtol=1e-15)
    vec = symdiff.vectorize(symdiff.grad(functools.partial(energy, k=2.0)))
    np.testing.assert_allclose(vec(xs, k=4.0), 4.0 * xs, rtol=1e-15)


def test_dask_arrays():
    da = pytest.importorskip("dask.array")
    vec = symdiff.vectorize(symdiff.value_and_grad(Spring(3.0).energy))
    xs = np.arange(6.0)
    value, slope = vec(da.from_array(xs, chunks=2))
    np.testing.assert_allclose(value.compute(), 1.5 * xs**2, rtol=1e-15)
    np.testing.assert_allclose(slope.compute(), 3.0 * xs, rtol=1e-15)


MAIN_SCRIPT = """
import functools, sys
import cloudpickle
import symdiff

def energy(x, k):
    return 0.5 * k * x * x

class Spring:
    def __init__(self, k):
        self.k = k

    def energy(self, x):
        return 0.5 * self.k * x * x

g = symdiff.grad(functools.partial(energy, k=2.0))
h = symdiff.grad(Spring(3.0).energy)
vec = symdiff.vectorize(symdiff.grad(Spring(4.0).energy))
with open(sys.argv[1], "wb") as out:
    cloudpickle.dump((g, h, vec), out)
"""

LOAD_SCRIPT = """
import pickle, sys
import numpy as np
with open(sys.argv[1], "rb") as src:
    g, h, vec = pickle.load(src)
print(repr((g(1.5), h(1.5), vec(np.array([1.0, 2.0])).tolist())))
"""


def test_transforms_of_main_methods_and_partials_pickle_by_value(tmp_path):
    """cloudpickle carries a function and a class of ``__main__`` by value: the
    transform ships the source, so a process without the file builds it."""
    pytest.importorskip("cloudpickle")
    from tests.fresh_process import project

    work, env = project(
        tmp_path, {"main_script.py": MAIN_SCRIPT, "load.py": LOAD_SCRIPT}
    )
    blob = tmp_path / "transforms.pkl"
    run = functools.partial(
        subprocess.run, env=env, capture_output=True, text=True, timeout=120
    )
    made = run([sys.executable, str(work / "main_script.py"), str(blob)])
    assert made.returncode == 0, made.stderr
    (work / "main_script.py").unlink()  # the loading process cannot read it
    loaded = run([sys.executable, str(work / "load.py"), str(blob)], cwd=tmp_path)
    assert loaded.returncode == 0, loaded.stderr
    assert ast.literal_eval(loaded.stdout) == (3.0, 4.5, [4.0, 8.0])
