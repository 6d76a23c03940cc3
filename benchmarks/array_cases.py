"""Workload 4: functions of arrays, and loops.

symdiff runs the batched case through ``symdiff.vectorize``; Rosenbrock, the MLP
and the GMM through ``symdiff.grad`` and ``symdiff.jit`` on NumPy code.  The RK4
pendulum is a Python ``for`` loop that symdiff compiles as a loop (a taped forward
loop and a reversed loop): 1000 steps, plus 10 and (full run) 25 steps, and in the
1000-step case extra symdiff rows at 10², 10⁴ and 10⁶ steps and with
checkpointing (``rk4_cases.py``).

Every function is written once against a namespace ``m`` of elementary functions
and a namespace ``c`` of constants converted to the tool's array type.  symdiff
reads source, so it gets plain NumPy code: the same function with ``m = numpy``
where it can inline it (Rosenbrock), a NumPy twin (MLP: ``m.relu`` is a lambda and
the data are attributes of ``c``), or the function of ``examples/gmm.py`` (GMM).
"""

from __future__ import annotations

import itertools
import math
import time
import types
from typing import Any

import numpy as np
from array_tools import (
    baselines,
    example_module,
    first_line,
    hand_row,
    jax_row,
    symdiff_array_row,
    with_peak_memory,
)
from harness import Case, Context, Row, namespace
from rk4_cases import rk4_case
from scalar_cases import seed004, symdiff_info, z_math

# -- batched: seed 004's z(u) at 10^6 points -----------------------------------------
BATCH = 10**6


def batched_generic(m, c, u):
    return seed004(m, u)


def batched_numpy_grad(u):
    v = u * u
    w, x = np.sin(v), np.log(v)
    z = np.exp(w * x)
    return (z * x * np.cos(v) + z * w / v) * 2.0 * u


def batched_numba_grad(u):
    out = np.empty_like(u)
    for i in range(u.size):
        v = u[i] * u[i]
        w, x = math.sin(v), math.log(v)
        z = math.exp(w * x)
        out[i] = (z * x * math.cos(v) + z * w / v) * 2.0 * u[i]
    return out


def batched_numba_fwd(u):
    out = np.empty_like(u)
    for i in range(u.size):
        v = u[i] * u[i]
        out[i] = math.exp(math.sin(v) * math.log(v))
    return out


def batched_case() -> Case:
    u = np.linspace(0.5, 2.0, BATCH)

    def symdiff_impl(ctx: Context) -> list[Row]:
        sd = ctx.modules["symdiff"]
        g, f = sd.grad(z_math), sd.jit(z_math)
        rows = []
        for target in ("cpu", "parallel"):

            def make(target=target):
                return (
                    sd.vectorize(sd.grad(z_math), target=target),
                    sd.vectorize(sd.jit(z_math), target=target),
                )

            row = ctx.measure("symdiff", make, (u,))
            if target == "parallel":
                row.tool = "symdiff (parallel)"
                row.note = "symdiff.vectorize(..., target='parallel'), 1 thread here"
            else:
                row.note = "symdiff.vectorize(grad(z)): one kernel call per point"
            symdiff_info(row, g, f)
            rows.append(row)
        return rows

    def sympy_impl(ctx: Context) -> list[Row]:
        sp = ctx.modules["sympy"]
        x = sp.Symbol("u")
        expr = seed004(namespace(ctx, "sympy"), x)
        t0 = time.perf_counter()
        d = sp.diff(expr, x)
        diff_s = time.perf_counter() - t0
        rows = []
        for cse in (False, True):

            def make(cse=cse):
                g = sp.lambdify([x], d, modules="numpy", cse=cse)
                return g, sp.lambdify([x], expr, modules="numpy", cse=cse)

            row = ctx.measure("sympy", make, (u,), "lambdify(modules='numpy')")
            row.tool = "sympy lambdify" + (" cse" if cse else "")
            row.setup_s = (row.setup_s or 0.0) + diff_s
            rows.append(row)
        return rows

    tools = {
        "symdiff": symdiff_impl,
        "numba": lambda ctx: hand_row(
            ctx, "numba", batched_numba_grad, batched_numba_fwd, (u,)
        ),
        "numpy": lambda ctx: hand_row(
            ctx, "numpy", batched_numpy_grad, lambda a: seed004(np, a), (u,)
        ),
        **baselines(batched_generic, {}, (u,), batched=True),
        "sympy": sympy_impl,
    }
    return Case(
        "arrays", "batched z(u), 10^6 points", tools, lambda: batched_numpy_grad(u)
    )


# -- Rosenbrock ----------------------------------------------------------------------
def rosenbrock(m, c, x):
    return m.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_numpy(x):
    """`rosenbrock` with NumPy as ``m``: symdiff inlines it, so it differentiates
    the baselines' own function."""
    return rosenbrock(np, None, x)


def rosenbrock_numpy_grad(x):
    g = np.zeros_like(x)
    d = x[1:] - x[:-1] ** 2
    g[:-1] = -400.0 * x[:-1] * d - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * d
    return g


def rosenbrock_numba_grad(x):
    g = np.zeros_like(x)
    for i in range(x.size - 1):
        d = x[i + 1] - x[i] * x[i]
        g[i] += -400.0 * x[i] * d - 2.0 * (1.0 - x[i])
        g[i + 1] += 200.0 * d
    return g


def rosenbrock_numba_fwd(x):
    s = 0.0
    for i in range(x.size - 1):
        d = x[i + 1] - x[i] * x[i]
        s += 100.0 * d * d + (1.0 - x[i]) ** 2
    return s


def rosenbrock_case(n: int, label: str, memory: bool = False) -> Case:
    """With ``memory``, the symdiff, Numba and NumPy rows also give the peak
    memory of one gradient call (`array_tools.add_peak_memory`)."""
    x = np.random.default_rng(n).uniform(-1.5, 1.5, n)
    tools = {
        "symdiff": lambda ctx: symdiff_array_row(
            ctx,
            rosenbrock_numpy,
            0,
            (x,),
            "rosenbrock(np, None, x): the baselines' function, inlined",
            memory=memory,
        ),
        "numba": lambda ctx: hand_row(
            ctx, "numba", rosenbrock_numba_grad, rosenbrock_numba_fwd, (x,)
        ),
        "numpy": lambda ctx: hand_row(
            ctx,
            "numpy",
            rosenbrock_numpy_grad,
            lambda a: rosenbrock(np, None, a),
            (x,),
        ),
        **baselines(rosenbrock, {}, (x,)),
    }
    if memory:
        tools["numba"] = with_peak_memory(
            tools["numba"],
            lambda ctx: ctx.modules["numba"].njit(rosenbrock_numba_grad),
            (x,),
        )
        tools["numpy"] = with_peak_memory(
            tools["numpy"], lambda ctx: rosenbrock_numpy_grad, (x,)
        )
    return Case(
        "arrays", f"Rosenbrock n={label}", tools, lambda: rosenbrock_numpy_grad(x)
    )


# -- MLP 784-256-256-10, batch 256, softmax cross-entropy ----------------------------
MLP_SIZES = (784, 256, 256, 10)
MLP_BATCH = 256


def mlp_data() -> tuple[dict[str, Any], tuple[np.ndarray, ...]]:
    rng = np.random.default_rng(784)
    params = []
    for fan_in, fan_out in itertools.pairwise(MLP_SIZES):
        params.append(rng.normal(0.0, 1.0 / math.sqrt(fan_in), (fan_in, fan_out)))
        params.append(rng.normal(0.0, 0.1, fan_out))
    x = rng.normal(0.0, 1.0, (MLP_BATCH, MLP_SIZES[0]))
    y = np.eye(MLP_SIZES[-1])[rng.integers(0, MLP_SIZES[-1], MLP_BATCH)]
    return {"X": x, "Y": y}, tuple(params)


def mlp(m, c, w1, b1, w2, b2, w3, b3):
    h1 = m.relu(c.X @ w1 + b1)
    h2 = m.relu(h1 @ w2 + b2)
    z = h2 @ w3 + b3
    mx = m.max_keep(z, 1)
    lse = m.log(m.sum_axis(m.exp(z - mx), 1)) + mx[:, 0]
    return m.sum(lse - m.sum_axis(c.Y * z, 1)) / MLP_BATCH


def mlp_numpy(w1, b1, w2, b2, w3, b3, X, Y):
    """`mlp` as plain NumPy code, for symdiff: it cannot inline ``m.relu`` (a lambda
    in a namespace) or read the data from ``c``; they are arguments here, which it
    does not differentiate."""
    h1 = np.maximum(X @ w1 + b1, 0.0)
    h2 = np.maximum(h1 @ w2 + b2, 0.0)
    z = h2 @ w3 + b3
    mx = np.max(z, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(z - mx), axis=1)) + mx[:, 0]
    return np.sum(lse - np.sum(Y * z, axis=1)) / MLP_BATCH


def mlp_numpy_grad(x, y, w1, b1, w2, b2, w3, b3):
    a1 = x @ w1 + b1
    h1 = np.maximum(a1, 0.0)
    a2 = h1 @ w2 + b2
    h2 = np.maximum(a2, 0.0)
    z = h2 @ w3 + b3
    p = np.exp(z - z.max(axis=1)[:, None])
    p /= p.sum(axis=1)[:, None]
    dz = (p - y) / x.shape[0]
    da2 = (dz @ w3.T) * (a2 > 0.0)
    da1 = (da2 @ w2.T) * (a1 > 0.0)
    return (
        x.T @ da1,
        da1.sum(axis=0),
        h1.T @ da2,
        da2.sum(axis=0),
        h2.T @ dz,
        dz.sum(axis=0),
    )


def mlp_numba_grad(x, y, w1, b1, w2, b2, w3, b3):
    a1 = x @ w1 + b1
    h1 = np.maximum(a1, 0.0)
    a2 = h1 @ w2 + b2
    h2 = np.maximum(a2, 0.0)
    z = h2 @ w3 + b3
    dz = np.empty_like(z)
    for i in range(z.shape[0]):  # softmax row by row
        e = np.exp(z[i] - z[i].max())
        dz[i] = (e / e.sum() - y[i]) / x.shape[0]
    da2 = (dz @ np.ascontiguousarray(w3.T)) * (a2 > 0.0)
    da1 = (da2 @ np.ascontiguousarray(w2.T)) * (a1 > 0.0)
    return (
        np.ascontiguousarray(x.T) @ da1,
        da1.sum(axis=0),
        np.ascontiguousarray(h1.T) @ da2,
        da2.sum(axis=0),
        np.ascontiguousarray(h2.T) @ dz,
        dz.sum(axis=0),
    )


def mlp_numba_fwd(x, y, w1, b1, w2, b2, w3, b3):
    h1 = np.maximum(x @ w1 + b1, 0.0)
    h2 = np.maximum(h1 @ w2 + b2, 0.0)
    z = h2 @ w3 + b3
    total = 0.0
    for i in range(z.shape[0]):
        mx = z[i].max()
        total += math.log(np.exp(z[i] - mx).sum()) + mx - (y[i] * z[i]).sum()
    return total / x.shape[0]


def mlp_case() -> Case:
    consts, params = mlp_data()
    data = (consts["X"], consts["Y"])

    def numpy_fwd(x, y, *p):
        return mlp(namespace(None, "numpy"), types.SimpleNamespace(X=x, Y=y), *p)

    tools = {
        "symdiff": lambda ctx: symdiff_array_row(
            ctx,
            mlp_numpy,
            (0, 1, 2, 3, 4, 5),
            (*params, *data),
            "mlp_numpy: `mlp` as NumPy code, X and Y as arguments",
            paired={"NumPy by hand": lambda: mlp_numpy_grad(*data, *params)},
        ),
        "numba": lambda ctx: hand_row(
            ctx, "numba", mlp_numba_grad, mlp_numba_fwd, (*data, *params)
        ),
        "numpy": lambda ctx: hand_row(
            ctx, "numpy", mlp_numpy_grad, numpy_fwd, (*data, *params)
        ),
        **baselines(mlp, consts, params),
    }
    return Case(
        "arrays",
        "MLP 784-256-256-10, batch 256",
        tools,
        lambda: mlp_numpy_grad(*data, *params),
    )


# -- GMM, ADBench objective, d=10 k=25 n=1000 ----------------------------------------
GMM_D, GMM_K, GMM_N = 10, 25, 1000
WISHART_GAMMA, WISHART_M = 1.0, 0


def _multigammaln(a: float, p: int) -> float:
    return p * (p - 1) / 4 * math.log(math.pi) + sum(
        math.lgamma(a + (1 - j) / 2) for j in range(1, p + 1)
    )


def gmm_data() -> tuple[dict[str, Any], tuple[np.ndarray, ...]]:
    d, k, n = GMM_D, GMM_K, GMM_N
    rng = np.random.default_rng(2018)
    alphas = rng.normal(0.0, 1.0, k)
    means = rng.uniform(0.0, 1.0, (k, d))
    icf = rng.normal(0.0, 0.5, (k, d + d * (d - 1) // 2))
    x = rng.uniform(0.0, 1.0, (n, d))
    # icf[:, d:] holds the strictly lower triangle of L, column by column
    # (ADBench's order); tril_idx gathers it into a d x d matrix.
    tril_idx = np.zeros((d, d), dtype=np.int64)
    rows, cols = [], []
    p = d
    for j in range(d):
        for i in range(j + 1, d):
            tril_idx[i, j] = p
            rows.append(i)
            cols.append(j)
            p += 1
    mask = np.tril(np.ones((d, d)), -1)
    wn = d + WISHART_M + 1
    wishart_c = wn * d * (math.log(WISHART_GAMMA) - 0.5 * math.log(2.0))
    wishart_c -= _multigammaln(0.5 * wn, d)
    consts = {
        "x": x,
        "tril_idx": tril_idx,
        "tril_mask": mask,
        "rows": np.array(rows),
        "cols": np.array(cols),
        "const": -n * d * 0.5 * math.log(2 * math.pi) - k * wishart_c,
    }
    return consts, (alphas, means, icf)


def logsumexp(m, a, axis):
    mx = m.max_keep(a, axis)
    return m.log(m.sum_axis(m.exp(a - mx), axis)) + m.sum_axis(mx, axis)


def gmm(m, c, alphas, means, icf):
    d = GMM_D
    qlog = icf[:, :d]
    qdiag = m.exp(qlog)
    sum_qs = m.sum_axis(qlog, 1)
    lower = icf[:, c.tril_idx] * c.tril_mask  # k, d, d
    xc = c.x[:, None, :] - means[None, :, :]  # n, k, d
    y = qdiag[None, :, :] * xc + m.einsum("kij,nkj->nki", lower, xc)
    inner = alphas[None, :] + sum_qs[None, :] - 0.5 * m.sum_axis(y * y, 2)
    prior = 0.5 * WISHART_GAMMA**2 * (
        m.sum(qdiag * qdiag) + m.sum(icf[:, d:] ** 2)
    ) - WISHART_M * m.sum(sum_qs)
    return (
        c.const
        + m.sum(logsumexp(m, inner, 1))
        - GMM_N * logsumexp(m, alphas, 0)
        + prior
    )


def gmm_numpy_grad(c, alphas, means, icf):
    """The derivative of `gmm` by hand (responsibilities r, Q = diag + lower)."""
    d, ar = GMM_D, np.arange(GMM_D)
    qlog = icf[:, :d]
    qdiag = np.exp(qlog)
    q = icf[:, c.tril_idx] * c.tril_mask
    q[:, ar, ar] = qdiag
    xc = c.x[:, None, :] - means[None, :, :]
    y = np.einsum("kij,nkj->nki", q, xc)
    inner = alphas + qlog.sum(axis=1) - 0.5 * (y * y).sum(axis=2)
    r = np.exp(inner - inner.max(axis=1, keepdims=True))
    r /= r.sum(axis=1, keepdims=True)
    soft = np.exp(alphas - alphas.max())
    g_alphas = r.sum(axis=0) - GMM_N * soft / soft.sum()
    ry = r[:, :, None] * y
    g_q = -np.einsum("nki,nkj->kij", ry, xc)
    g_means = np.einsum("kij,nki->kj", q, ry)
    g_icf = np.empty_like(icf)
    g_icf[:, :d] = (
        r.sum(axis=0)[:, None]
        + g_q[:, ar, ar] * qdiag
        + WISHART_GAMMA**2 * qdiag**2
        - WISHART_M
    )
    g_icf[:, d:] = g_q[:, c.rows, c.cols] + WISHART_GAMMA**2 * icf[:, d:]
    return g_alphas, g_means, g_icf


def gmm_example() -> types.ModuleType:
    """examples/gmm.py, the objective symdiff runs, checked to be this case's."""
    example = example_module("gmm")
    theirs = (example.D, example.K, example.N, example.WISHART_GAMMA, example.WISHART_M)
    ours = (GMM_D, GMM_K, GMM_N, WISHART_GAMMA, WISHART_M)
    if theirs != ours:
        raise ValueError(
            f"examples/gmm.py has d, k, n, gamma, m = {theirs}, not {ours}"
        )
    return example


def gmm_symdiff(ctx: Context, x: np.ndarray, params) -> Row:
    example = gmm_example()
    args = (*params, x, example.unpack_matrix(GMM_D))
    note = "examples/gmm.py: Q = packed @ unpack (constant 0/1), one x @ Q.T"
    paired = {}
    if ctx.has("jax"):  # JAX on the same code: the fastest other tool here
        jax = ctx.modules["jax"]
        objective = example.with_modules(example.gmm_objective, np=jax.numpy)
        jax_grad = jax.jit(jax.grad(objective, argnums=(0, 1, 2)))
        jax_args = tuple(jax.numpy.asarray(a) for a in args)
        paired["JAX on examples/gmm.py"] = lambda: jax.block_until_ready(
            jax_grad(*jax_args)
        )
    return symdiff_array_row(
        ctx, example.gmm_objective, (0, 1, 2), args, note, paired=paired
    )


def gmm_jax_rows(ctx: Context, consts, params) -> list[Row]:
    """JAX on this module's `gmm` (einsum) and on examples/gmm.py's own code (the
    formulation symdiff runs), to tell the tool from the formulation."""
    rows = [jax_row(ctx, gmm, consts, params)]
    try:
        example = gmm_example()
        objective = example.with_modules(
            example.gmm_objective, np=ctx.modules["jax"].numpy
        )
        extra = {"x": consts["x"], "unpack": example.unpack_matrix(GMM_D)}

        def same_code(m, c, *p):
            return objective(*p, c.x, c.unpack)

        row = jax_row(ctx, same_code, extra, params)
        row.note += ", on the code symdiff runs"
    except Exception as exc:
        row = Row("jax", note=f"error: {first_line(exc)}", status="error")
    row.tool = "jax (examples/gmm.py)"
    rows.append(row)
    return rows


def gmm_case() -> Case:
    consts, params = gmm_data()
    c = types.SimpleNamespace(**consts)
    tools = {
        "symdiff": lambda ctx: gmm_symdiff(ctx, consts["x"], params),
        "numpy": lambda ctx: hand_row(
            ctx,
            "numpy",
            lambda *p: gmm_numpy_grad(c, *p),
            lambda *p: gmm(namespace(None, "numpy"), c, *p),
            params,
        ),
        **baselines(gmm, consts, params),
    }
    tools["jax"] = lambda ctx: gmm_jax_rows(ctx, consts, params)
    return Case(
        "arrays",
        f"GMM d={GMM_D} k={GMM_K} n={GMM_N}",
        tools,
        lambda: gmm_numpy_grad(c, *params),
    )


def array_cases() -> list[Case]:
    return [
        batched_case(),
        rosenbrock_case(10**3, "10^3"),
        rosenbrock_case(10**6, "10^6", memory=True),
        mlp_case(),
        gmm_case(),
        rk4_case(1000),
        rk4_case(10),
        rk4_case(25, full_only=True),
    ]
