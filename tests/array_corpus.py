"""Array functions written as users write them: the corpus the array tests check
(tests/test_arrays.py).

Every function is ordinary NumPy code: intermediate variables, helper functions,
broadcasting, reductions, indexing.  Each is registered as an :class:`ArrayCase` that
describes its arguments, so the tests can draw random inputs of the right shapes.

This module uses NumPy through the single global ``np`` and nothing else, on purpose:
the tests load it a second time with ``np`` rebound to ``autograd.numpy``, which turns
every function (and every helper it calls) into its own autograd oracle.

The functions ``mismatched_matmul``, ``mismatched_add`` and ``matmul_with_scalar`` at
the end are *not* in the corpus: they are wrong on purpose, for the error tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ArrayCase:
    """One corpus function and how to call it.

    Attributes
    ----------
    name : str
        The function's name (also its name in the autograd copy of this module).
    fn : callable
        The function.
    shapes : tuple of tuple of int
        One shape per positional argument; ``()`` means a Python ``float``.
    argnums : tuple of int or None
        The arguments to differentiate; ``None`` means all of them.  The others are
        data (inputs, labels) and get no gradient.
    domain : str or tuple of str
        Where the values are drawn, for all arguments or per argument: ``"real"``
        (standard normal), ``"positive"`` (uniform on [0.5, 2]), ``"unit"`` (uniform
        on [-0.9, 0.9]), ``"onehot"`` (rows of one-hot float vectors), ``"binary"``
        (0.0 or 1.0).
    output : str
        ``"scalar"`` (a grad target) or ``"array"`` (for jacobian, vjp and jvp).
    alt_shapes : tuple, None or False
        Shapes of the same ranks but other sizes, for the resize test.  ``None``
        derives them (every dimension >= 3 grows by one); ``False`` means the
        function hard-codes its sizes.
    tags : tuple of str
        What the function is an example of, beyond the ops visible in its source
        (e.g. ``"broadcast row-column"``, ``"MLP"``).
    """

    name: str
    fn: Callable
    shapes: tuple
    argnums: tuple | None = None
    domain: str | tuple = "real"
    output: str = "scalar"
    alt_shapes: tuple | bool | None = None
    tags: tuple = ()

    @property
    def diff_argnums(self) -> tuple[int, ...]:
        if self.argnums is None:
            return tuple(range(len(self.shapes)))
        return self.argnums

    def domains(self) -> tuple[str, ...]:
        if isinstance(self.domain, str):
            return (self.domain,) * len(self.shapes)
        return self.domain

    def resized_shapes(self) -> tuple | None:
        if self.alt_shapes is False:
            return None
        if self.alt_shapes is not None:
            return self.alt_shapes
        return tuple(tuple(d + 1 if d >= 3 else d for d in s) for s in self.shapes)


CASES: list[ArrayCase] = []


def case(*shapes, **options):
    """Register the decorated function as a corpus case."""

    def register(fn):
        CASES.append(ArrayCase(fn.__name__, fn, tuple(shapes), **options))
        return fn

    return register


# -- helpers (called from the corpus functions; inlined by symdiff) ----------------------
def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def logsumexp_rows(x):
    m = np.max(x, axis=1, keepdims=True)
    return m + np.log(np.sum(np.exp(x - m), axis=1, keepdims=True))


def softmax_rows(s):
    e = np.exp(s - np.max(s, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def relu(z):
    return np.maximum(z, 0.0)


def affine(W, x, b):
    return W @ x + b


def normalize(v):
    return v / np.linalg.norm(v)


def component_loglik(X, mean, log_diag, L_raw):
    D = X.shape[1]
    Q = np.tril(L_raw, -1) + np.eye(D) * np.exp(log_diag)
    Z = (X - mean) @ Q.T
    return np.sum(log_diag) - 0.5 * np.sum(Z * Z, axis=1)


# -- element-wise functions ---------------------------------------------------------------
@case((5,))
def exp_sum(x):
    return np.sum(np.exp(x))


@case((6,), domain="positive")
def log_sqrt(x):
    y = np.log(x) * np.sqrt(x)
    return np.sum(y)


@case((5,), (5,))
def trig_mix(x, y):
    t = np.sin(x) * np.cos(y) + np.tan(0.3 * x * y)
    return np.sum(t)


@case((4, 3))
def tanh_squared(A):
    return np.sum(np.tanh(A) ** 2)


@case((6,), domain="unit")
def inverse_trig(x):
    return np.sum(np.arcsin(x) + np.arccos(0.5 * x) + np.arctan(3.0 * x))


@case((5,), domain="unit")
def hyperbolic(x):
    a = np.sinh(x) * np.cosh(0.5 * x)
    b = np.arcsinh(2.0 * x) + np.arccosh(2.0 + x * x) + np.arctanh(0.5 * np.tanh(x))
    return np.sum(a + b)


@case((5,), domain="positive")
def log_family(x):
    y = np.log2(x) + np.log10(x * x) + np.log1p(x) + np.exp2(-x) + np.expm1(-x)
    return np.sum(y)


@case((4,), (4,), domain=("positive", "real"))
def powers(x, y):
    p = x**y + 2.0**y + np.power(x, 3) + np.square(y) + np.reciprocal(x)
    return np.sum(p)


@case((5,), (5,))
def hypot_atan2(x, y):
    return np.sum(np.hypot(x, y) * np.arctan2(y, x))


@case((6,))
def floor_ceil(x):
    # piecewise constant parts: zero derivative away from the jumps
    return np.sum(x * np.floor(2.0 * x) + np.ceil(x) * x**2)


@case((7,))
def abs_sign(x):
    return np.sum(np.abs(x) * x + np.sign(x) * x**2 + np.fabs(x - 0.25))


@case((5,), ())
def scalar_times_array(x, s):
    y = s * x + x / s - s
    return np.sum(y * y)


@case((4, 1), (1, 5), tags=("broadcast row-column",))
def row_column(a, b):
    d = a - b
    return np.sum(np.exp(-(d**2)))


@case((3, 4), (4,), tags=("broadcast trailing dims",))
def trailing_dims(A, v):
    B = (A * v + v) ** 2 / (1.0 + A * A)
    return np.sum(B)


@case((2, 3, 4), (3, 1), (4,), tags=("broadcast rank 3",))
def rank3_broadcast(T, M, v):
    return np.sum(np.sin(T + M) * v)


@case((6,), (6,))
def maximum_minimum(x, y):
    return np.sum(np.maximum(x, y) ** 2 - np.minimum(x, 0.5 * y))


@case((7,))
def clip_loss(x):
    c = np.clip(x, -0.5, 0.8)
    return np.sum(c * x)


@case((3, 4))
def leaky_relu_where(A):
    h = np.where(A > 0, A, 0.1 * A)
    return np.sum(h**2)


@case((6,), (), domain=("real", "positive"))
def huber(r, delta):
    a = np.abs(r)
    loss = np.where(a <= delta, 0.5 * r**2, delta * (a - 0.5 * delta))
    return np.sum(loss)


# -- reductions ---------------------------------------------------------------------------
@case((3, 4, 5))
def sum_axes(T):
    a = np.sum(T, axis=0)
    b = np.sum(T, axis=(0, 2))
    return np.sum(a**2) + np.sum(b**3)


@case((4, 5), tags=("keepdims feeding broadcasting",))
def sum_keepdims(A):
    s = np.sum(A**2, axis=1, keepdims=True)
    return np.sum(np.cos(A / (1.0 + s)))


@case((6, 3))
def mean_axis0(X):
    mu = np.mean(X, axis=0)
    return np.sum((X - mu) ** 2) + np.mean(X) ** 2


@case((2, 3, 4), tags=("keepdims feeding broadcasting",))
def mean_tuple_axis(T):
    m = np.mean(T, axis=(0, 2), keepdims=True)
    return np.mean((T - m) ** 2)


@case((5,), (3, 4), domain="positive")
def prod_reduce(x, A):
    return np.prod(x) + np.sum(np.prod(A, axis=1))


@case((6,), (4, 5), tags=("max/min without ties",))
def max_min_reduce(x, A):
    spread = np.max(x) - np.min(x)
    cols = np.sum(np.max(A, axis=0))
    rows = np.min(A, axis=1, keepdims=True)
    return spread + cols + np.sum(rows * A)


@case((2, 3, 4), tags=("max/min without ties",))
def max_tuple_axis(T):
    return np.sum(np.max(T, axis=(0, 2)) ** 2) + np.sum(np.min(T, axis=-1))


@case((5,), (3, 4))
def norms(x, A):
    return (
        np.linalg.norm(x) + 0.5 * np.linalg.norm(A) ** 2 + np.linalg.norm(A, ord="fro")
    )


@case((7,), tags=("logsumexp",))
def logsumexp_vec(x):
    return logsumexp(3.0 * x)


@case((4, 5))
def reduction_methods(A):
    return A.sum() + A.mean() * A.max() - A.min() + A.sum(axis=0).max()


@case((6,))
def norm_of_diffs(x):
    d = x[1:] - x[:-1]
    return np.linalg.norm(d)


# -- linear algebra -----------------------------------------------------------------------
@case((4,), (4, 4), tags=("quadratic form",))
def quad_form(x, A):
    return x @ A @ x


@case((6, 3), (3,), (6,), argnums=(1,), tags=("least squares",))
def least_squares(A, x, b):
    r = A @ x - b
    return r @ r


@case((4, 3), (3,), (4,), (4,))
def dot_forms(A, x, u, v):
    y = np.dot(A, x)
    return np.dot(y, u) * np.dot(u, v) + np.sum(np.dot(A.T, A))


@case((3, 4), (4, 5), (3, 5))
def matmul_chain(A, B, C):
    P = np.matmul(A, B)
    return np.sum(np.tanh(P) * C)


@case((4, 3), (4,), (3,), tags=("outer product",))
def outer_update(A, u, v):
    M = A + np.outer(u, v)
    return np.sum(M * M)


@case((5,), (5,), (3, 4), (3, 4))
def inner_vdot(u, v, A, B):
    return np.inner(u, v) + np.vdot(A, B) + np.sum(np.inner(A, B) ** 2)


@case((4, 3), (3, 4), tags=("trace of products",))
def trace_products(A, B):
    C = B @ A
    return np.trace(A @ B) + np.trace(C @ C)


@case((3, 4))
def transpose_forms(A):
    G = A.T @ A
    return np.sum(G * G) + np.sum(np.transpose(A) * A.T)


@case((2, 3, 4), (4, 2, 3))
def transpose_axes(T, W):
    return np.sum(np.transpose(T, (2, 0, 1)) * W)


@case((3,), (3, 4))
def vector_matrix(x, A):
    return np.sum(np.exp(x @ A))


@case((2, 3, 4), (4,), tags=("batched matmul",))
def batched_matmul(T, x):
    y = T @ x
    return np.sum(y**2)


@case((5, 3))
def gram(X):
    G = X @ X.T
    return np.sum(G * G) / len(X)


# -- shapes as values ---------------------------------------------------------------------
@case((4, 3))
def shape_values(X):
    n, m = X.shape
    scale = X.ndim + X.size
    return np.sum(X) / (n * m) + len(X) * np.mean(X**2) + scale * np.max(X)


@case((6,))
def rms(x):
    return np.sqrt(np.sum(x**2) / x.size)


@case((7,))
def variance_by_len(x):
    n = len(x)
    c = x - np.sum(x) / n
    return c @ c / (n - 1)


@case((3, 5))
def shape_index(A):
    m = A.shape[1]
    return np.sum(A[:, m - 1] * A[:, 0]) / m


# -- reshape and ravel --------------------------------------------------------------------
@case((12,), alt_shapes=((15,),))
def reshape_roundtrip(x):
    A = x.reshape(3, -1)
    v = np.reshape(A.T, (-1,))
    w = np.arange(x.size) * 0.5
    return np.sum(v * w) + np.sum(A[0] * A[2])


@case((3, 4), alt_shapes=((5, 4),))
def ravel_ops(A):
    v = A.ravel()
    w = np.ravel(A.T)
    B = np.reshape(A, (2, -1))
    return v @ w + np.sum(np.sin(B) * B)


@case((4, 3), (12,), alt_shapes=((5, 3), (15,)))
def reshape_to_matrix(A, x):
    M = x.reshape(A.shape)
    return np.sum(M * A) + np.sum(x.reshape(-1, 3) @ A.T)


# -- triangular parts ---------------------------------------------------------------------
@case((4, 4))
def tril_triu(A):
    L = np.tril(A)
    U = np.triu(A, 1)
    return np.sum(L @ L.T) + np.sum(U * U) + np.sum(np.tril(A, -1) ** 3)


# -- indexing and slicing -----------------------------------------------------------------
@case((5,), (4, 3), tags=("negative indices",))
def int_index(x, A):
    return x[0] * x[-1] + A[1, 2] - A[-1, -2] * x[2]


@case((7,))
def smoothness(x):
    d = x[1:] - x[:-1]
    return np.sum(d**2)


@case((7,))
def step_slices(x):
    even = x[::2]
    odd = x[1::2]
    return np.sum(even**2) + np.sum(np.sin(odd)) + np.sum(x[1:6:2] * x[0:5:2])


@case((4, 5), (5, 3))
def rows_cols(A, B):
    return A[1, :] @ B[:, 2] + np.sum(A[0] * A[-1]) + np.sum(B[-1, :] ** 2)


@case((5,), (4,), tags=("broadcast row-column",))
def newaxis_outer(x, y):
    return np.sum(x[None, :] * y[:, None] + np.cos(x[None, :] - y[:, None]))


@case((6,), tags=("broadcast row-column",))
def pairwise_energy(x):
    D = x[:, None] - x[None, :]
    return np.sum(np.exp(-(D**2)))


@case((4, 5))
def submatrix(A):
    return np.sum(A[1:, :-1] * A[:-1, 1:])


@case((6,))
def reversed_slice(x):
    return x @ x[::-1] + np.sum(x[::-2])


@case((7,), tags=("Rosenbrock",))
def rosenbrock(x):
    a = x[1:] - x[:-1] ** 2
    b = 1.0 - x[:-1]
    return np.sum(100.0 * a**2 + b**2)


@case((5, 6), tags=("total variation",))
def total_variation(image):
    dx = image[1:, :] - image[:-1, :]
    dy = image[:, 1:] - image[:, :-1]
    return np.sum(np.sqrt(dx[:, :-1] ** 2 + dy[:-1, :] ** 2 + 1e-3))


# -- concatenate and stack ----------------------------------------------------------------
@case((4,), (4,))
def concat_features(x, y):
    z = np.concatenate([np.sin(x), y**2, x * y])
    return np.sum(z * np.arange(len(z)))


@case((5,), (5,))
def stack_rows(x, y):
    S = np.stack([x, 2.0 * y, x * y])
    C = np.stack([np.exp(x), y], axis=1)
    return np.sum(S @ S.T) + np.sum(C**2)


@case((3, 4), (3, 2))
def concat_axis1(A, B):
    C = np.concatenate([A, np.tanh(B)], axis=1)
    return np.sum(C.T @ C)


@case((3,), (4,), alt_shapes=((4,), (5,)))
def concat_different_lengths(a, b):
    z = np.concatenate([a, b, a * a])
    return np.sum(np.tanh(z) * z)


@case((3, 3), alt_shapes=False, tags=("a transposed intermediate joined whole",))
def concat_transposed(L):
    # Q.T is copied for the join, reading Q at transposed positions: Q must be
    # complete first (it once shared Q's loop nest and read unwritten elements)
    Q = np.exp(L)
    return np.sum(np.concatenate([Q.T, Q], axis=0) * np.arange(18).reshape(6, 3))


# -- constructors -------------------------------------------------------------------------
@case((6,))
def constants(x):
    n = len(x)
    z = np.zeros(n)
    o = np.ones(n)
    f = np.full(n, 0.5)
    return np.sum((x - z) * o + f * x**2)


@case((3, 4))
def zeros_ones_shaped(A):
    Z = np.zeros(A.shape)
    ones = np.ones((A.shape[0], 1))
    return np.sum((A - Z) ** 2 + ones * A) + np.sum(np.full((2, 2), 3.0))


@case((6,))
def arange_weights(x):
    w = np.arange(len(x)) + 1.0
    k = np.arange(1, 2 * len(x) + 1, 2)
    return np.sum(w * x**2) + np.sum(x / k)


@case((4, 4), (4,))
def eye_regularised(A, x):
    n = A.shape[0]
    M = A @ A.T + 2.0 * np.eye(n)
    return x @ M @ x


@case((3,), alt_shapes=False)
def array_literal(x):
    c = np.array([1.0, -2.0, 0.5])
    M = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 3.0], [2.0, 0.0, 1.0]])
    return c @ x + x @ M @ x


@case((5,), (4,))
def array_of_scalars(x, y):
    s = np.sum(x)
    t = np.max(y)
    v = np.array([s, t, s * t])
    P = np.array([[s, t], [t, -s]])
    return v @ v + np.sum(P @ P)


@case((), ())
def array_from_scalar_args(a, b):
    v = np.array([a, b, a * b])
    return np.sum(np.exp(v) * v)


# -- realistic compositions -----------------------------------------------------------------
@case(
    (4, 5),
    (5,),
    (5, 3),
    (3,),
    (6, 4),
    (6, 3),
    argnums=(0, 1, 2, 3),
    tags=("MLP", "ReLU", "data arguments"),
)
def mlp_loss(W1, b1, W2, b2, X, Y):
    h = relu(X @ W1 + b1)
    out = h @ W2 + b2
    err = out - Y
    return np.mean(err**2)


@case(
    (4, 3),
    (3,),
    (6, 4),
    (6, 3),
    argnums=(0, 1),
    domain=("real", "real", "real", "onehot"),
    tags=("softmax cross-entropy", "logsumexp", "data arguments"),
)
def softmax_xent(W, b, X, Y):
    logits = X @ W + b
    logp = logits - logsumexp_rows(logits)
    return -np.mean(np.sum(Y * logp, axis=1))


@case((4, 3), (5, 3), (5, 2), tags=("attention",))
def attention(Q, K, V):
    d = Q.shape[1]
    scores = Q @ K.T / np.sqrt(d)
    weights = softmax_rows(scores)
    out = weights @ V
    return np.sum(out**2)


@case(
    (6,),
    (4,),
    (6,),
    argnums=(1,),
    alt_shapes=((8,), (4,), (8,)),
    tags=("polynomial features",),
)
def poly_features(x, w, y):
    F = np.stack([np.ones(len(x)), x, x**2, x**3], axis=1)
    r = F @ w - y
    return 0.5 * (r @ r)


@case((5,), (5,), tags=("seed 000 block",))
def seed000_block(a, b):
    u = a @ a
    v = b * np.abs(a)
    y = u + v
    z = 2 * u
    return np.sum(y) + z


@case((3, 3), (3,), tags=("seed 000 block",))
def seed000_matrix(a, b):
    u = a @ a
    v = b * np.abs(a)
    y = u + v
    z = 2 * u
    return np.sum(y * z)


@case(
    (2,),
    (2, 3),
    (2, 3),
    (3, 3),
    (3, 3),
    (6, 3),
    argnums=(0, 1, 2, 3, 4),
    alt_shapes=((2,), (2, 4), (2, 4), (4, 4), (4, 4), (7, 4)),
    tags=("GMM", "logsumexp"),
)
def gmm_objective(alphas, means, log_diags, L0, L1, X):
    comp0 = component_loglik(X, means[0], log_diags[0], L0)
    comp1 = component_loglik(X, means[1], log_diags[1], L1)
    lik = np.stack([comp0, comp1], axis=1) + alphas - logsumexp(alphas)
    return -np.sum(logsumexp_rows(lik))


@case(
    (4,),
    (6, 4),
    (6,),
    argnums=(0,),
    domain=("real", "real", "binary"),
    tags=("logistic regression",),
)
def logistic_regression(w, X, y):
    z = X @ w
    loss = np.maximum(z, 0.0) - z * y + np.log1p(np.exp(-np.abs(z)))
    return np.mean(loss)


@case((6, 3), (3,), (3,), tags=("batch norm", "keepdims feeding broadcasting"))
def batchnorm_layer(X, gamma, beta):
    mu = np.mean(X, axis=0, keepdims=True)
    var = np.mean((X - mu) ** 2, axis=0, keepdims=True)
    Z = (X - mu) / np.sqrt(var + 1e-3)
    out = gamma * Z + beta
    return np.sum(np.tanh(out))


@case((5, 3), (5,), tags=("kernel ridge", "broadcast row-column"))
def rbf_kernel(X, alpha):
    sq = np.sum(X**2, axis=1)
    D = sq[:, None] + sq[None, :] - 2.0 * X @ X.T
    K = np.exp(-0.5 * D)
    return alpha @ K @ alpha


@case((4, 3), (4, 4), (3,), (4,), tags=("gated recurrent step",))
def gated_step(W, U, x, h):
    z = W @ x + U @ h
    gate = sigmoid(z)
    return np.sum(gate * np.tanh(z) + (1.0 - gate) * h)


@case((4, 4), (4,), tags=("loop over constant range",))
def unrolled_rnn(W, h0):
    h = h0
    for _ in range(3):
        h = np.tanh(W @ h + 0.1)
    return np.sum(h**2)


@case((5,), tags=("augmented assignment",))
def augmented_assign(x):
    acc = np.sin(x)
    acc *= 2.0
    acc -= x**2
    acc += 0.5 * x
    return np.sum(acc)


@case((4, 3), (3,), (4,), tags=("helpers",))
def helper_chain(W, x, b):
    y = affine(W, normalize(x), b)
    return np.sum(relu(y) ** 2) + np.sum(sigmoid(y))


@case((5,), (5,), tags=("cosine similarity",))
def cosine_similarity(u, v):
    return u @ v / (np.linalg.norm(u) * np.linalg.norm(v))


@case(
    (4,),
    (6, 4),
    (6,),
    (),
    argnums=(0, 3),
    domain=("real", "real", "real", "positive"),
    tags=("elastic net", "scalar argument"),
)
def elastic_net(w, X, y, lam):
    r = X @ w - y
    return np.sum(r**2) + lam * np.sum(np.abs(w)) + 0.5 * lam * (w @ w)


@case((5,), (), tags=("scalar argument",))
def scaled_softplus(x, beta):
    z = beta * x
    return np.sum(np.log1p(np.exp(-np.abs(z))) + np.maximum(z, 0.0)) / beta


@case((3, 4), (4, 3), tags=("trace of products",))
def frobenius_trace(A, B):
    return np.trace(A @ B @ A @ B) - np.sum((A @ B).T * (A @ B))


# -- functions with array outputs (jacobian, vjp, jvp) --------------------------------------
@case((5,), output="array", tags=("softmax",))
def softmax_vec(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


@case((4, 3), (3,), (4,), output="array")
def affine_tanh(W, x, b):
    return np.tanh(W @ x + b)


@case((5,), output="array", tags=("Rosenbrock",))
def rosen_residuals(x):
    return np.concatenate([10.0 * (x[1:] - x[:-1] ** 2), 1.0 - x[:-1]])


@case((3,), (4,), output="array")
def outer_product(u, v):
    return np.outer(np.sin(u), v) + u[:, None]


@case((5,), output="array")
def normalize_vec(x):
    return normalize(x)


@case((), (), output="array", domain=("positive", "real"))
def polar_to_cartesian(r, theta):
    return np.array([r * np.cos(theta), r * np.sin(theta)])


@case((4, 2), output="array", tags=("broadcast row-column",))
def pairwise_sq_dists(X):
    diff = X[:, None, :] - X[None, :, :]
    return np.sum(diff**2, axis=-1)


@case((3, 4), output="array", tags=("softmax", "keepdims feeding broadcasting"))
def row_softmax(A):
    return softmax_rows(A)


@case((5,), (), output="array", tags=("scalar argument",))
def scale_shift(x, s):
    return s * x + s**2


@case((4, 3), output="array")
def column_stats(A):
    return np.concatenate([np.mean(A, axis=0), np.max(A, axis=0), A.sum(axis=0)])


@case((6,), output="array")
def neighbour_products(x):
    return x[1:] * x[:-1] + x[::-1][1:]


@case((3, 3), output="array")
def matrix_square_tril(A):
    return np.tril(A @ A) + np.triu(A.T, 1)


# -- not in the corpus: wrong on purpose, for the error tests -----------------------------
def mismatched_matmul(X, W):
    H = X @ W
    return np.sum(H)


def mismatched_add(x, y):
    z = x + y
    return np.sum(z)


def matmul_with_scalar(x, s):
    y = x @ s
    return np.sum(y)


BY_NAME = {c.name: c for c in CASES}
assert len(BY_NAME) == len(CASES), "corpus names must be unique"
