"""One implementation per tool for a function of arrays (workload 4).

``generic(m, c, *params)`` returns a scalar, or with ``batched`` an array of
independent values (the gradient is then the elementwise derivative); ``m`` is the
tool's namespace of elementary functions (`harness.namespace`) and ``c`` holds the
constants, converted to the tool's array type.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np
from harness import Context, Row, Skip, namespace
from scalar_cases import pytensor_note


# -- converting constants and parameters to each tool's arrays -----------------------
def convert(ctx: Context, tool: str, value: Any) -> Any:
    if not isinstance(value, np.ndarray):
        return value
    if tool == "jax":
        return ctx.modules["jax"].numpy.asarray(value)
    if tool == "torch":
        return ctx.modules["torch"].from_numpy(value)
    if tool == "pytensor" and value.dtype.kind == "f":
        return __import__("pytensor.tensor").tensor.as_tensor_variable(value)
    return value


def constants(ctx: Context, tool: str, consts: dict[str, Any]) -> Any:
    return types.SimpleNamespace(
        **{k: convert(ctx, tool, v) for k, v in consts.items()}
    )


# -- one implementation per tool, for a function of arrays ---------------------------
# ``generic(m, c, *params)`` returns a scalar, or with ``batched`` an array of
# independent values (the gradient is then the elementwise derivative).


def jax_row(ctx: Context, generic, consts, params, batched=False) -> Row:
    jax = ctx.modules["jax"]
    m, c = namespace(ctx, "jax"), constants(ctx, "jax", consts)
    args = tuple(convert(ctx, "jax", p) for p in params)

    def f(*p):
        return generic(m, c, *p)

    def make():
        if batched:
            g, fw = jax.jit(jax.vmap(jax.grad(f))), jax.jit(jax.vmap(f))
        else:
            g = jax.jit(jax.grad(f, argnums=tuple(range(len(params)))))
            fw = jax.jit(f)
        return (
            lambda *a: jax.block_until_ready(g(*a)),
            lambda *a: jax.block_until_ready(fw(*a)),
        )

    note = "jax.jit(jax.vmap(jax.grad(f)))" if batched else "jax.jit(jax.grad(f))"
    return ctx.measure("jax", make, args, note)


def torch_row(ctx: Context, generic, consts, params, batched=False) -> Row:
    torch = ctx.modules["torch"]
    m, c = namespace(ctx, "torch"), constants(ctx, "torch", consts)
    args = tuple(
        convert(ctx, "torch", p)
        if isinstance(p, np.ndarray)
        else torch.tensor(p, dtype=torch.float64)
        for p in params
    )

    def grad(*ps):
        leaves = [p.detach().requires_grad_() for p in ps]
        out = generic(m, c, *leaves)
        return torch.autograd.grad(out.sum() if batched else out, leaves)

    def fwd(*ps):
        with torch.no_grad():
            return generic(m, c, *ps)

    return ctx.measure("torch", lambda: (grad, fwd), args, "eager autograd")


def autograd_row(ctx: Context, generic, consts, params, batched=False) -> Row:
    ag = ctx.modules["autograd"]
    m, c = namespace(ctx, "autograd"), constants(ctx, "autograd", consts)

    def f(*p):
        return generic(m, c, *p)

    def make():
        if batched:
            return ag.elementwise_grad(f), f
        return ag.grad(f, tuple(range(len(params)))), f

    return ctx.measure("autograd", make, tuple(params))


QUICK_PYTENSOR = (
    "not run with --quick: compiling an array graph with PyTensor's Numba backend "
    "takes 15-60 s here"
)


def pytensor_row(ctx: Context, generic, consts, params, batched=False) -> Row:
    if ctx.quick:
        raise Skip(QUICK_PYTENSOR)
    pytensor = ctx.modules["pytensor"]
    pt = __import__("pytensor.tensor").tensor
    m, c = namespace(ctx, "pytensor"), constants(ctx, "pytensor", consts)

    def make():
        xs = [
            pt.tensor(f"p{i}", dtype="float64", shape=(None,) * np.ndim(p))
            for i, p in enumerate(params)
        ]
        out = generic(m, c, *xs)
        grads = pytensor.grad(out.sum() if batched else out, xs)
        return pytensor.function(xs, grads), pytensor.function(xs, out)

    return ctx.measure("pytensor", make, tuple(params), pytensor_note(pytensor))


def hand_row(ctx: Context, tool, grad, fwd, params, note="hand-written") -> Row:
    if tool == "numba":
        nb = ctx.modules["numba"]
        return ctx.measure(
            "numba", lambda: (nb.njit(grad), nb.njit(fwd)), params, note + " @njit"
        )
    return ctx.measure(tool, lambda: (grad, fwd), params, note + " NumPy")


def baselines(generic, consts, params, batched=False) -> dict[str, Any]:
    """jax, torch, autograd and PyTensor rows for one case."""

    def bind(row_fn):
        return lambda ctx: row_fn(ctx, generic, consts, params, batched)

    return {
        "jax": bind(jax_row),
        "torch": bind(torch_row),
        "autograd": bind(autograd_row),
        "pytensor": bind(pytensor_row),
    }
