"""Golden tests: the generated source of canonical functions, pinned.

Set SYMDIFF_UPDATE_GOLDEN=1 to rewrite the files after an intended change, then
read the diff before committing it.
"""

import os
import pathlib

import numpy as np
import pytest

import symdiff
from tests import golden_cases as G

GOLDEN = pathlib.Path(__file__).parent / "golden"


def _for_arrays(compiled, *shapes):
    """``compiled`` after one call on arrays of ``shapes`` (its kernel is then the
    array kernel; the Python target skips the Numba compile)."""
    rng = np.random.default_rng(0)
    compiled(*(rng.normal(size=s) for s in shapes))
    return compiled


CASES = {
    "seed004_value_and_grad": lambda: symdiff.value_and_grad(G.seed004),
    "seed004_jit": lambda: symdiff.jit(G.seed004),
    "quickstart_grad": lambda: symdiff.grad(G.quickstart, argnums=(0, 1)),
    "relu_net_grad": lambda: symdiff.grad(G.relu_net, argnums=(0, 1, 2, 3, 4, 5)),
    "sigmoid_value_and_grad": lambda: symdiff.value_and_grad(G.sigmoid),
    "branchy_grad": lambda: symdiff.grad(G.branchy, argnums=(0, 1)),
    "polar_grad": lambda: symdiff.grad(G.polar, argnums=(0, 1)),
    "mlp_grad": lambda: _for_arrays(
        symdiff.grad(G.mlp_loss, argnums=tuple(range(6)), target="python"),
        (4, 5),
        (5,),
        (5, 3),
        (3,),
        (3, 2),
        (2,),
        (6, 4),
        (6, 2),
    ),
    "rosenbrock_grad": lambda: _for_arrays(
        symdiff.grad(G.rosenbrock, target="python"), (7,)
    ),
    "softmax_xent_value_and_grad": lambda: _for_arrays(
        symdiff.value_and_grad(G.softmax_xent, target="python"), (4, 3), (5, 4), (5, 3)
    ),
    # loops: a taped forward loop then a reversed loop; in-place element writes
    # and their adjoints; a while loop; checkpointing
    "pendulum_grad": lambda: symdiff.grad(G.pendulum, argnums=(0, 1, 2)),
    "pendulum_checkpointed_grad": lambda: symdiff.grad(
        G.pendulum, argnums=(0, 1, 2), checkpoint=100
    ),
    "smoothing_grad": lambda: _for_arrays(
        symdiff.grad(G.smoothing, target="python"), (6,)
    ),
    "halve_value_and_grad": lambda: symdiff.value_and_grad(G.halve),
    # CUDA: the scalar kernel as an inner function of a grid-stride kernel
    "seed004_grad_cuda": lambda: symdiff.grad(G.seed004, target="cuda"),
    "quickstart_value_and_grad_vectorize_cuda": lambda: symdiff.vectorize(
        symdiff.value_and_grad(G.quickstart, argnums=(0, 1)), target="cuda"
    ),
    # CUDA array programs: a host function launching one kernel per loop nest
    # (atomic scatter-adds; matrix products; reductions read back; a host loop)
    "rosenbrock_grad_cuda": lambda: _for_arrays(
        symdiff.grad(G.rosenbrock, target="cuda"), (7,)
    ),
    "softmax_xent_value_and_grad_cuda": lambda: _for_arrays(
        symdiff.value_and_grad(G.softmax_xent, target="cuda"), (4, 3), (5, 4), (5, 3)
    ),
    "smoothing_grad_cuda": lambda: _for_arrays(
        symdiff.grad(G.smoothing, target="cuda"), (6,)
    ),
}


def _normalise(source: str) -> str:
    # The header names the defining file relative to the cwd; pin the body only.
    return source.split("\n", 1)[1]


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_source_is_pinned(name):
    source = _normalise(CASES[name]().source)
    path = GOLDEN / f"{name}.py.txt"
    update = os.environ.get("SYMDIFF_UPDATE_GOLDEN", "") not in ("", "0")
    if update or not path.exists():
        path.write_text(source)
        if not update:
            pytest.fail(f"wrote missing golden file {path.name}; rerun")
    assert source == path.read_text()


@pytest.mark.parametrize("name", sorted(CASES))
def test_generation_is_deterministic(name):
    assert CASES[name]().source == CASES[name]().source
