"""Loops and control flow written as users write them: the corpus the loop tests check
(tests/test_loops.py).

Scientific code with ``for`` and ``while``: time stepping (Euler, leapfrog, RK4),
recurrences (Horner, continued fractions, Newton iterations, linear recurrences),
cumulative sums and products, particle pair interactions, a tanh RNN, filters that
write ``out[i]`` from neighbours, a Kalman filter, an HMM forward pass; with
``if``/``else``, ``break`` and ``continue`` inside the loops, ``enumerate`` and
``zip``, trip counts from ``int`` arguments, loops carrying scalars and arrays, and
in-place writes to arrays the function creates.

Each function is registered as a :class:`LoopCase` that describes its arguments
(shapes and domains of the float arguments, fixed values of the ``int`` ones) and
names its oracle:

* ``"autograd"``: the module is loaded a second time with ``np`` rebound to
  ``autograd.numpy`` and ``math`` to a namespace of the same functions from
  ``autograd.numpy``, which turns every function (and every helper it calls) into
  its own autograd oracle;
* ``"fd"``: central finite differences of the plain function, for what autograd
  cannot differentiate: writes into arrays (``out[i] = ...``, ``acc[i, :] += ...``,
  ``C += ...`` on an array from ``np.zeros``).

The functions at the end, after ``BY_NAME``, are *not* in the corpus: they are the
fixed-length loops of the "not unrolled" tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Int:
    """An ``int`` argument (a trip count, a bound, a step): never differentiated.

    Attributes
    ----------
    value : int
        The value the tests call the function with.
    other : int or None
        Another value, for the test that two trip counts share one kernel.
    """

    value: int
    other: int | None = None


@dataclass(frozen=True)
class LoopCase:
    """One corpus function and how to call it.

    Attributes
    ----------
    name : str
        The function's name (also its name in the autograd copy of this module).
    fn : callable
        The function.
    args : tuple
        One entry per positional argument: a shape (``()`` is a Python ``float``)
        or an :class:`Int`.
    argnums : tuple of int or None
        The arguments to differentiate; ``None`` means every float argument.
    domain : str or tuple of str
        Where the float values are drawn, for all float arguments or one entry per
        float argument (``Int`` arguments have none): ``"real"`` (standard normal),
        ``"small"`` (normal, standard deviation 0.3), ``"positive"`` (uniform on
        [0.5, 2]), ``"unit"`` (uniform on [-0.9, 0.9]), ``"prob"`` (uniform on
        [0.1, 0.9]), ``"rate"`` (uniform on [0.1, 0.4]), ``"large"`` (uniform on
        [3, 50]), ``"chain"`` (an (N, 3) array of points 1.1 apart along x, moved by
        noise of standard deviation 0.05).
    oracle : str
        ``"autograd"`` or ``"fd"`` (central finite differences).
    output : str
        ``"scalar"`` (a grad target) or ``"array"`` (for jvp, vjp and jacobian).
    tags : tuple of str
        What the function is an example of, beyond what its source shows.
    """

    name: str
    fn: Callable
    args: tuple
    argnums: tuple | None = None
    domain: str | tuple = "real"
    oracle: str = "autograd"
    output: str = "scalar"
    tags: tuple = ()

    @property
    def float_argnums(self) -> tuple[int, ...]:
        return tuple(i for i, a in enumerate(self.args) if not isinstance(a, Int))

    @property
    def int_argnums(self) -> tuple[int, ...]:
        return tuple(i for i, a in enumerate(self.args) if isinstance(a, Int))

    @property
    def diff_argnums(self) -> tuple[int, ...]:
        if self.argnums is None:
            return self.float_argnums
        return self.argnums

    def domains(self) -> tuple[str, ...]:
        """One domain per float argument."""
        if isinstance(self.domain, str):
            return (self.domain,) * len(self.float_argnums)
        return self.domain

    @property
    def has_other_trip_count(self) -> bool:
        return any(isinstance(a, Int) and a.other is not None for a in self.args)


CASES: list[LoopCase] = []


def case(*args, **options):
    """Register the decorated function as a corpus case."""

    def register(fn):
        CASES.append(LoopCase(fn.__name__, fn, tuple(args), **options))
        return fn

    return register


# -- helpers (called from loop bodies; inlined by symdiff) ------------------------------
def pendulum_rhs(theta, omega, c):
    return omega, -c * math.sin(theta)


def softplus(z):
    return math.log(1.0 + math.exp(z))


def soft_pair_potential(d):
    r2 = np.sum(d * d)
    return 1.0 / np.sqrt(r2 + 0.5) + 0.1 * r2


def gravity_forces(X):
    n = X.shape[0]
    F = np.zeros((n, 3))
    for i in range(n):
        for j in range(n):
            if i != j:
                d = X[j] - X[i]
                F[i, :] += d / (np.sum(d * d) + 0.1) ** 1.5
    return F


def spring_field(y, c):
    return np.array([y[1], -y[0] - c * y[1]])


# -- time stepping ------------------------------------------------------------------------
@case((), (), Int(50, other=7), domain="positive", tags=("Euler", "int trip count"))
def euler_decay(y0, k, n):
    dt = 0.01
    y = y0
    for _ in range(n):
        y = y - dt * k * y
    return y


@case((), (), Int(20, other=5), domain=("prob", "positive"), tags=("Euler",))
def logistic_euler(y0, r, n):
    dt = 1.0 / n
    y = y0
    for _ in range(n):
        y += dt * r * y * (1.0 - y)
    return y


@case(
    (),
    (),
    (),
    domain=("unit", "unit", "positive"),
    tags=("RK4", "pendulum", "helper in loop", "tuple-returning helper"),
)
def pendulum_rk4(theta0, omega0, c):
    dt = 0.05
    theta, omega = theta0, omega0
    for _ in range(40):
        k1t, k1w = pendulum_rhs(theta, omega, c)
        k2t, k2w = pendulum_rhs(theta + 0.5 * dt * k1t, omega + 0.5 * dt * k1w, c)
        k3t, k3w = pendulum_rhs(theta + 0.5 * dt * k2t, omega + 0.5 * dt * k2w, c)
        k4t, k4w = pendulum_rhs(theta + dt * k3t, omega + dt * k3w, c)
        theta = theta + dt / 6.0 * (k1t + 2.0 * k2t + 2.0 * k3t + k4t)
        omega = omega + dt / 6.0 * (k1w + 2.0 * k2w + 2.0 * k3w + k4w)
    return theta * theta + 0.5 * omega * omega


@case((), (), (), domain=("unit", "unit", "positive"), tags=("leapfrog", "1000 steps"))
def leapfrog_oscillator(x0, v0, omega):
    dt = 0.01
    x, v = x0, v0
    v = v - 0.5 * dt * omega**2 * x
    for _ in range(1000):
        x = x + dt * v
        v = v - dt * omega**2 * x
    v = v + 0.5 * dt * omega**2 * x
    return 0.5 * v * v + 0.5 * omega**2 * x * x


@case(
    (2,),
    (),
    domain=("real", "positive"),
    output="array",
    tags=("midpoint method", "array carried", "helper in loop"),
)
def damped_spring_state(y, c):
    dt = 0.1
    for _ in range(30):
        half = y + 0.5 * dt * spring_field(y, c)
        y = y + dt * spring_field(half, c)
    return y


@case(
    (5,),
    (5,),
    Int(30, other=11),
    domain=("unit", "positive"),
    tags=("Euler", "array carried", "int trip count"),
)
def oscillator_bank_euler(x0, omega, n):
    x = x0
    v = np.zeros(len(x0))
    dt = 0.02
    for _ in range(n):
        a = -omega * omega * x
        x = x + dt * v
        v = v + dt * a
    return np.sum(x * x + v * v)


@case(
    (3, 3),
    (3, 3),
    Int(5, other=2),
    domain=("chain", "small"),
    oracle="fd",
    tags=("N-body", "helper with loops and writes", "nested loops", "array carried"),
)
def nbody_euler(X, V, n_steps):
    dt = 0.05
    for _ in range(n_steps):
        V = V + dt * gravity_forces(X)
        X = X + dt * V
    return np.sum(X * X) + 0.5 * np.sum(V * V)


@case((8,), (), domain=("real", "rate"), oracle="fd", tags=("heat equation",))
def heat_explicit(u0, alpha):
    n = len(u0)
    u = u0
    for _ in range(20):
        lap = np.zeros(n)
        for i in range(1, n - 1):
            lap[i] = u[i - 1] - 2.0 * u[i] + u[i + 1]
        u = u + alpha * lap
    return np.sum(u**2)


# -- recurrences --------------------------------------------------------------------------
@case((), (6,), domain=("unit", "real"), tags=("Horner", "for over array"))
def horner(x, coeffs):
    p = 0.0
    for c in coeffs:
        p = p * x + c
    return p


@case((7,), (), domain=("real", "unit"), tags=("Horner", "negative step"))
def horner_backward_range(a, x):
    n = len(a)
    p = a[n - 1]
    for i in range(n - 2, -1, -1):
        p = p * x + a[i]
    return p


@case((4,), (6,), domain=("real", "unit"), tags=("Horner", "array carried"))
def horner_on_array(coeffs, x):
    y = np.zeros(x.shape[0])
    for c in coeffs:
        y = y * x + c
    return np.sum(y**2)


@case((5,), (), domain=("real", "unit"), tags=("polynomial",))
def polynomial_power_sum(coeffs, x):
    p = 0.0
    xk = 1.0
    for c in coeffs:
        p += c * xk
        xk *= x
    return p


@case((), (5,), domain=("unit", "real"), tags=("Chebyshev", "three-term recurrence"))
def chebyshev_series(x, c):
    t_prev, t = 1.0, x
    s = c[0] + c[1] * x
    for k in range(2, len(c)):
        t_prev, t = t, 2.0 * x * t - t_prev
        s = s + c[k] * t
    return s


@case(
    (),
    Int(30, other=5),
    domain="unit",
    tags=("continued fraction", "int bound", "negative step"),
)
def tan_continued_fraction(x, n):
    t = 2.0 * n + 1.0
    for k in range(n, 0, -1):
        t = (2 * k - 1) - x * x / t
    return x / t


@case((), domain="positive", tags=("Newton", "fixed count"))
def newton_sqrt(a):
    x = a
    for _ in range(8):
        x = 0.5 * (x + a / x)
    return x


@case((), domain="positive", tags=("Newton", "tolerance", "data-dependent while"))
def newton_cbrt_tolerance(a):
    x = 1.0
    step = 1.0
    while abs(step) > 1e-12:
        step = (x**3 - a) / (3.0 * x * x)
        x = x - step
    return x


@case((), (), Int(12, other=3), tags=("Fibonacci-like", "tuple swap"))
def linear_recurrence(a, b, n):
    for _ in range(n):
        a, b = b, 0.6 * b + 0.3 * a
    return b


@case((), Int(25, other=4), domain="unit", tags=("series", "int accumulator"))
def log1p_series(x, n):
    s = 0
    p = 1.0
    for k in range(1, n + 1):
        p = -p * x
        s += -p / k
    return s


@case((), domain="real", tags=("series", "data-dependent break"))
def exp_taylor_break(x):
    term = 1.0
    s = 1.0
    for k in range(1, 100):
        term = term * x / k
        s = s + term
        if abs(term) < 1e-16 * abs(s):
            break
    return s


@case((), Int(13, other=6), domain="unit", tags=("int while", "int ops in loop"))
def power_by_squaring(x, n):
    result = 1.0
    while n > 0:
        if n % 2 == 1:
            result = result * x
        x = x * x
        n = n // 2
    return result


@case((), (), domain="positive", tags=("augmented assignment",))
def augmented_ops_loop(x, y):
    a = 1.0
    for k in range(1, 5):
        a *= x
        a -= y / k
        a /= 1.0 + y * y
        a += 0.5
    return a


@case(
    (),
    (),
    Int(40, other=9),
    domain=("unit", "positive"),
    tags=("quadrature", "int trip count"),
)
def trapezoid_gaussian(a, b, n):
    h = (b - a) / n
    s = 0.5 * (math.exp(-a * a) + math.exp(-b * b))
    for i in range(1, n):
        t = a + i * h
        s += math.exp(-t * t)
    return s * h


# -- while loops --------------------------------------------------------------------------
@case((), domain="large", tags=("data-dependent while", "int counter"))
def halve_until_below_one(x):
    k = 0
    while x > 1.0:
        x = x / 2.0
        k += 1
    return x * x + k


@case((), domain="positive", tags=("bisection", "data-dependent branch", "Newton"))
def bisection_cube_root(a):
    lo, hi = 0.0, 2.0
    while hi - lo > 1e-3:
        mid = 0.5 * (lo + hi)
        if mid**3 > a:
            hi = mid
        else:
            lo = mid
    # the bracket is piecewise constant in a; Newton steps make the result smooth
    x = 0.5 * (lo + hi)
    for _ in range(4):
        x = x - (x**3 - a) / (3.0 * x * x)
    return x


@case((), (), domain="positive", tags=("data-dependent while", "Euler"))
def growth_until_threshold(y0, r):
    dt = 0.05
    t = 0.0
    y = y0
    while y < 4.0:
        y = y + dt * r * y
        t += dt
    return y * (1.0 + t)


@case((), Int(20, other=3), domain="real", tags=("counter while",))
def fixed_point_counter_while(x, n):
    k = 0
    while k < n:
        x = x - 0.1 * math.sin(x) + 0.05
        k += 1
    return x


@case((8,), tags=("while with and", "data-dependent while", "dynamic index"))
def while_until_total(x):
    i = 0
    total = 0.0
    while i < len(x) and total < 3.0:
        total += np.exp(x[i])
        i += 1
    return total / i


# -- nested loops, branches, break, continue ----------------------------------------------
@case(
    (),
    Int(4, other=2),
    Int(3, other=5),
    domain="unit",
    tags=("nested loops", "int bounds"),
)
def nested_int_bounds(x, n, m):
    s = 0.0
    for i in range(n):
        for j in range(m):
            s += math.sin((i + 1) * x + j) / (1 + i + j)
    return s


@case((), domain="unit", tags=("nested loops", "triangular"))
def triangular_nested(x):
    s = 0.0
    for i in range(1, 6):
        for j in range(i):
            s = s + math.cos(x * i - j) * x**j
    return s


@case((), Int(15, other=4), domain="prob", tags=("if/else in loop",))
def piecewise_map_iterate(x, n):
    for _ in range(n):
        if x < 0.5:
            x = 1.8 * x * (1.0 - x) + 0.1
        else:
            x = 0.9 - 0.4 * x * x
    return x


@case((7,), tags=("if/else in loop", "online logsumexp", "dynamic index"))
def online_logsumexp(x):
    m = x[0]
    s = 1.0
    for i in range(1, len(x)):
        if x[i] > m:
            s = s * np.exp(m - x[i]) + 1.0
            m = x[i]
        else:
            s = s + np.exp(x[i] - m)
    return m + np.log(s)


@case((8,), tags=("continue", "for over array"))
def skip_negatives_continue(x):
    s = 0.0
    for v in x:
        if v < 0.0:
            continue
        s += v * v * np.exp(-v)
    return s


@case((8,), tags=("data-dependent break", "dynamic index"))
def energy_until_budget_break(x):
    s = 0.0
    for i in range(len(x)):
        s += x[i] ** 2
        if s > 2.0:
            break
    return s


@case((9,), tags=("int accumulator", "if in loop"))
def mean_of_positives(x):
    s = 0
    count = 0
    for v in x:
        if v > 0.0:
            s += v
            count += 1
    return s / (count + 1)


# -- zero trips and odd ranges ------------------------------------------------------------
@case((), Int(0, other=4), domain="real", tags=("zero trips", "int trip count"))
def zero_trip_loop(x, n):
    y = x * x + 1.0
    for _ in range(n):
        y = math.log(1.0 + y)
    return y


@case((), Int(7, other=0), domain="real", tags=("identity adjoint", "zero trips"))
def shifted_phase(phi, n):
    # the loop adds a constant: its backward pass passes the adjoint through
    for _ in range(n):
        phi += 0.25
    return math.sin(phi) * phi


@case((), domain="real", tags=("zero trips", "constant empty range"))
def constant_empty_range(x):
    y = math.sin(x)
    for k in range(5, 2):
        y = y * k
    for k in range(3, 3):
        y = y + k
    return y + x


@case((), domain="unit", tags=("range step",))
def range_with_step(x):
    s = 0.0
    for k in range(2, 20, 3):
        s += math.cos(k * x) / k
    return s


@case(
    (12,),
    Int(1, other=0),
    Int(11, other=12),
    tags=("range(a, b, step) with int-argument bounds", "dynamic index"),
)
def strided_sum_int_bounds(x, lo, hi):
    s = 0.0
    for i in range(lo, hi, 3):
        s += x[i] * x[i] + np.sin(x[i])
    return s


@case((), (), Int(10, other=3), domain="unit", tags=("helper in loop",))
def helper_in_loop(a, b, n):
    s = 0.0
    for k in range(n):
        t = k / (n + 1.0)
        s += softplus(a * t - b)
    return s


# -- enumerate, zip, iteration over arrays -------------------------------------------------
@case((6,), (6,), tags=("zip over arrays",))
def zip_weighted_sum(x, y):
    s = 0.0
    for a, b in zip(x, y):
        s += a * np.sin(b) + 0.5 * a * a
    return s


@case((8,), Int(5, other=8), tags=("zip range and array", "int trip count"))
def zip_range_prefix(x, n):
    s = 0.0
    for k, v in zip(range(n), x):
        s += np.exp(-0.1 * k * v * v) * v
    return s


@case((7,), tags=("enumerate",))
def enumerate_weighted(x):
    s = 0.0
    for k, v in enumerate(x):
        s += (k + 1) * v * v - np.cos(v) / (k + 1)
    return s


@case((5, 3), tags=("for row in X",))
def row_loop_norms(X):
    s = 0.0
    for row in X:
        s += np.sqrt(np.sum(row * row) + 1.0)
    return s


@case((4, 3), (3,), tags=("X[i, :]", "logistic loss"))
def row_index_dot(X, w):
    s = 0.0
    for i in range(X.shape[0]):
        z = np.dot(X[i, :], w)
        s += np.log(1.0 + np.exp(z))
    return s


@case(
    (10,),
    (),
    (),
    domain=("real", "positive", "positive"),
    tags=("Kalman filter", "for over array"),
)
def kalman_filter_1d(zs, q, r):
    x = 0.0
    p = 1.0
    loglik = 0.0
    for z in zs:
        p = p + q
        s = p + r
        k = p / s
        innovation = z - x
        loglik -= 0.5 * (np.log(2.0 * np.pi * s) + innovation**2 / s)
        x = x + k * innovation
        p = (1.0 - k) * p
    return loglik


# -- pairs of rows: particles and kernels -------------------------------------------------
@case((5, 3), tags=("particle pairs", "X[i] - X[j]", "helper in loop"))
def pair_energy(X):
    n = X.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            e += soft_pair_potential(X[i] - X[j])
    return e


@case((5, 3), domain="chain", tags=("particle pairs", "Lennard-Jones"))
def lennard_jones_cluster(X):
    n = len(X)
    e = 0.0
    for i in range(n - 1):
        for j in range(i + 1, n):
            d = X[i] - X[j]
            inv6 = 1.0 / np.sum(d * d) ** 3
            e += 4.0 * (inv6 * inv6 - inv6)
    return e


@case((4, 3), oracle="fd", tags=("particle pairs", "acc[i, :] +=", "forces"))
def pair_forces(X):
    n = X.shape[0]
    F = np.zeros((n, 3))
    for i in range(n):
        for j in range(i + 1, n):
            d = X[i, :] - X[j, :]
            f = np.exp(-np.sum(d * d))
            F[i, :] += f * d
            F[j, :] -= f * d
    return np.sum(F * F)


@case((6,), tags=("nested loops", "x[i] - x[j]"))
def pairwise_kernel_sum(x):
    n = len(x)
    s = 0.0
    for i in range(n):
        for j in range(n):
            s += np.exp(-((x[i] - x[j]) ** 2))
    return s


# -- sequences and matrices carried through loops -----------------------------------------
@case(
    (4, 4),
    (4, 3),
    (4,),
    (6, 3),
    argnums=(0, 1, 2),
    domain=("small", "small", "small", "real"),
    tags=("RNN", "for row in X", "data arguments"),
)
def rnn_tanh(W, U, b, xs):
    h = np.zeros(W.shape[0])
    for x_t in xs:
        h = np.tanh(W @ h + U @ x_t + b)
    return np.sum(h * h)


@case(
    (3, 3),
    (3, 2),
    (5, 2),
    (5,),
    argnums=(0, 1),
    domain=("small", "small", "real", "real"),
    tags=("RNN", "enumerate", "data arguments"),
)
def rnn_sequence_loss(W, U, xs, ys):
    h = np.zeros(3)
    loss = 0.0
    for t, x_t in enumerate(xs):
        h = np.tanh(W @ h + U @ x_t)
        loss = loss + (np.sum(h) - ys[t]) ** 2
    return loss / len(xs)


@case((4, 4), tags=("power iteration", "array carried"))
def power_iteration(A):
    S = A @ A.T + np.eye(A.shape[0])
    v = np.ones(A.shape[0])
    for _ in range(30):
        v = S @ v
        v = v / np.linalg.norm(v)
    return v @ S @ v


@case(
    (3,),
    (5, 3),
    (5,),
    domain=("real", "small", "real"),
    tags=("unrolled optimiser", "array carried"),
)
def gradient_descent_unrolled(x0, A, b):
    x = x0
    for _ in range(25):
        r = A @ x - b
        x = x - 0.1 * (A.T @ r)
    return np.sum((A @ x - b) ** 2)


@case(
    (4, 4),
    (4,),
    Int(6, other=2),
    domain=("small", "real"),
    tags=("array carried", "int trip count"),
)
def iterate_tanh_map(A, v, n):
    for _ in range(n):
        v = np.tanh(A @ v) + 0.5 * v
    return np.sum(v**2)


@case(
    (3, 3),
    (6, 3),
    domain=("small", "real"),
    tags=("HMM forward algorithm", "array carried", "dynamic row index"),
)
def hmm_forward(T_logits, log_emit):
    E = np.exp(T_logits)
    T = E / np.sum(E, axis=1, keepdims=True)
    K = T.shape[0]
    alpha = np.ones(K) / K * np.exp(log_emit[0])
    c = np.sum(alpha)
    log_z = np.log(c)
    alpha = alpha / c
    for t in range(1, log_emit.shape[0]):
        alpha = (alpha @ T) * np.exp(log_emit[t])
        c = np.sum(alpha)
        log_z += np.log(c)
        alpha = alpha / c
    return log_z


# -- in-place writes to arrays the function creates ---------------------------------------
@case((6,), oracle="fd", tags=("out[i] =", "cumulative sum"))
def cumsum_loop(x):
    out = np.zeros(len(x))
    s = 0.0
    for i in range(len(x)):
        s += x[i]
        out[i] = s
    return np.sum(out * out)


@case((6,), domain="positive", oracle="fd", tags=("out[i] = out[i-1] *", "cumprod"))
def cumprod_recurrence(x):
    n = x.shape[0]
    out = np.zeros(n)
    out[0] = x[0]
    for i in range(1, n):
        out[i] = out[i - 1] * x[i]
    return np.sum(np.log(1.0 + out))


@case((6,), oracle="fd", output="array", tags=("out[i] =", "enumerate"))
def running_mean(x):
    out = np.zeros(x.shape[0])
    s = 0.0
    for i, v in enumerate(x):
        s += v
        out[i] = s / (i + 1)
    return out


@case((8,), oracle="fd", output="array", tags=("smoothing filter", "out[i] ="))
def smoothing_filter(x):
    n = len(x)
    out = np.zeros(n)
    out[0] = x[0]
    out[n - 1] = x[n - 1]
    for i in range(1, n - 1):
        out[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]
    return out


@case((9,), (3,), oracle="fd", tags=("smoothing filter", "out[i] ="))
def smoothing_filter_loss(x, w):
    n = len(x)
    out = np.zeros(n - 2)
    for i in range(1, n - 1):
        out[i - 1] = w[0] * x[i - 1] + w[1] * x[i] + w[2] * x[i + 1]
    return np.sum((out - x[1:-1]) ** 2)


@case(
    (7,),
    (),
    domain=("real", "unit"),
    oracle="fd",
    output="array",
    tags=("IIR filter", "out[i] = out[i-1] *"),
)
def iir_filter(x, a):
    y = np.zeros(len(x))
    y[0] = x[0]
    for i in range(1, len(x)):
        y[i] = x[i] + a * y[i - 1]
    return y


@case(
    (8,),
    (),
    domain=("real", "prob"),
    oracle="fd",
    tags=("discounted returns", "negative step", "out[i] ="),
)
def discounted_returns(r, gamma):
    n = len(r)
    returns = np.zeros(n)
    g = 0.0
    for t in range(n - 1, -1, -1):
        g = r[t] + gamma * g
        returns[t] = g
    return np.sum(returns**2) / n


@case((6, 3), (6,), oracle="fd", tags=("C += (array from np.zeros)", "np.outer"))
def weighted_scatter_matrix(X, w):
    d = X.shape[1]
    C = np.zeros((d, d))
    for i in range(X.shape[0]):
        C += w[i] * np.outer(X[i], X[i])
    return np.trace(C @ C)


@case((5, 3), (4, 3), oracle="fd", tags=("acc[i, :] +=", "X[i, :]"))
def row_features_accumulate(X, W):
    n = X.shape[0]
    H = np.zeros((n, W.shape[0]))
    for i in range(n):
        H[i, :] += np.tanh(W @ X[i, :])
        H[i, :] += 0.5 * X[i, 0]
    return np.sum(H**2)


BY_NAME = {c.name: c for c in CASES}
assert len(BY_NAME) == len(CASES), "corpus names must be unique"


# -- not in the corpus: fixed-length loops for the "not unrolled" tests -------------------
def damped_oscillator_10_steps(x0, v0):
    dt = 0.01
    x, v = x0, v0
    for _ in range(10):
        a = -x - 0.1 * v + 0.2 * math.sin(x)
        x = x + dt * v
        v = v + dt * a
    return x * x + v * v


def damped_oscillator_1000_steps(x0, v0):
    dt = 0.01
    x, v = x0, v0
    for _ in range(1000):
        a = -x - 0.1 * v + 0.2 * math.sin(x)
        x = x + dt * v
        v = v + dt * a
    return x * x + v * v


def damped_oscillator_while_1000(x0, v0):
    dt = 0.01
    x, v = x0, v0
    k = 0
    while k < 1000:
        a = -x - 0.1 * v + 0.2 * math.sin(x)
        x = x + dt * v
        v = v + dt * a
        k += 1
    return x * x + v * v


def decay_chain_1000(x):
    # x = (rate, source), rate in (0, 1)
    out = np.zeros(1000)
    for i in range(1, 1000):
        out[i] = out[i - 1] * x[0] + x[1]
    return np.sum(out) / 1000.0
