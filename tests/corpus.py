"""Scalar functions written as users write them: the corpus every transform is
checked on (tests/test_transforms.py).  Each entry: (function, sample point)."""

import math

import numpy as np


def poly(x):
    return 3.0 * x**3 - 2.0 * x + 1.0


def rational(x, y):
    return (x * x + 1.0) / (y * y + 2.0)


def trig_mix(x, y):
    return math.sin(x) * math.cos(y) + math.tan(0.3 * x * y)


def exp_log(x):
    return math.log(1.0 + math.exp(x))


def softplus_np(x):
    return np.log1p(np.exp(-abs(x))) + max(x, 0.0)


def gaussian(x, mu, sigma):
    z = (x - mu) / sigma
    return math.exp(-0.5 * z * z) / (sigma * math.sqrt(2.0 * math.pi))


def rosen2(x, y):
    return (1.0 - x) ** 2 + 100.0 * (y - x * x) ** 2


def beale(x, y):
    a = 1.5 - x + x * y
    b = 2.25 - x + x * y**2
    c = 2.625 - x + x * y**3
    return a * a + b * b + c * c


def himmelblau(x, y):
    return (x * x + y - 11.0) ** 2 + (x + y * y - 7.0) ** 2


def inverse_trig(x):
    return math.asin(0.5 * x) + math.acos(0.3 * x) + math.atan(x)


def hyperbolic(x, y):
    return math.sinh(x) * math.cosh(y) - math.tanh(x * y)


def inverse_hyperbolic(x):
    return math.asinh(x) + math.acosh(2.0 + x * x) + math.atanh(0.5 * math.tanh(x))


def erf_family(x):
    return math.erf(x) * math.erfc(0.5 * x)


def logs(x):
    return math.log2(x) + math.log10(x * x) + math.log(x, 3.0)


def roots(x, y):
    return math.sqrt(x * x + y * y) + math.hypot(x, 2.0 * y)


def polar(r, theta):
    return math.atan2(r * math.sin(theta), r * math.cos(theta)) * r


def power_var(x, y):
    return x**y + 2.0**x


def expm1_log1p(x):
    return math.expm1(0.5 * x) * math.log1p(x * x)


def nested(x):
    return math.exp(math.sin(math.cos(math.exp(0.1 * x))))


def seed004(u):
    return math.exp(math.sin(u**2) * math.log(u**2))


def seed001(x, y):
    return 5.0 * x**2 - x * y**2


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def logistic_loss(w, b, x, y):
    p = sigmoid(w * x + b)
    return -(y * math.log(p) + (1.0 - y) * math.log(1.0 - p))


def relu(a):
    return max(a, 0.0)


def relu_net(w1, b1, w2, b2, x):
    h = relu(w1 * x + b1)
    return relu(w2 * h + b2)


def branch_return(x, y):
    if x > y:
        return x * y
    return math.sin(x) + y


def elif_chain(x):
    if x < -1.0:
        r = -x
    elif x < 1.0:
        r = 0.5 * (x * x + 1.0)
    else:
        r = x
    return r * math.exp(0.1 * x)


def ternary(x, y):
    s = math.sqrt(x) if x > 0.0 else 0.0
    return s * y + (x if y > 0 else -x)


def two_outputs(x, y):
    return x * y, x + math.sin(y)


def three_outputs(x):
    return x, x * x, math.exp(x)


def polar_to_cartesian(r, theta):
    return r * math.cos(theta), r * math.sin(theta)


def augmented(x, y):
    acc = x
    acc *= y
    acc += math.sin(acc)
    acc -= 0.5 * x
    acc /= 1.0 + y * y
    return acc


def unpacking(x, y):
    a, b = y, x
    a, b = a * b, a + b
    return a * math.cos(b)


def unrolled(x):
    acc = 0.0
    for k in range(1, 6):
        acc = acc + math.sin(k * x) / k
    return acc


def min_max_abs(x, y):
    return min(x, y) * max(x, 2.0 * y) + abs(x - y)


def copysign_floor(x, y):
    return math.copysign(x * x, y) + math.floor(y) * x


def int_param(x, n):
    return x**n + n * x


def closure_free(x):
    k = 3
    return x**k / k


def energy_helpers(q, p):
    return kinetic(p) + potential(q)


def kinetic(p):
    return 0.5 * p * p


def potential(q):
    return 1.0 - math.cos(q)


def lennard_jones(r):
    s6 = (1.0 / r) ** 6
    return 4.0 * (s6 * s6 - s6)


def michaelis(s, vmax, km):
    return vmax * s / (km + s)


def arrhenius(t, a, ea):
    return a * math.exp(-ea / (8.314 * t))


CORPUS = {
    poly: (0.7,),
    rational: (0.4, -1.3),
    trig_mix: (0.5, 1.1),
    exp_log: (0.3,),
    softplus_np: (-0.8,),
    gaussian: (0.3, 0.1, 1.4),
    rosen2: (0.4, 0.9),
    beale: (1.1, 0.6),
    himmelblau: (2.5, -1.7),
    inverse_trig: (0.4,),
    hyperbolic: (0.3, 0.6),
    inverse_hyperbolic: (0.7,),
    erf_family: (0.8,),
    logs: (1.7,),
    roots: (0.6, -0.8),
    polar: (1.3, 0.4),
    power_var: (1.3, 2.2),
    expm1_log1p: (0.9,),
    nested: (0.5,),
    seed004: (1.5,),
    seed001: (2.0, 3.0),
    sigmoid: (0.3,),
    logistic_loss: (0.5, -0.2, 1.5, 1.0),
    relu_net: (0.5, 0.1, -1.2, 0.9, 0.5),
    branch_return: (0.4, 1.2),
    elif_chain: (0.3,),
    ternary: (1.6, -0.4),
    two_outputs: (0.7, 1.9),
    three_outputs: (0.6,),
    polar_to_cartesian: (2.0, 0.3),
    augmented: (0.8, 0.5),
    unpacking: (1.2, 0.7),
    unrolled: (0.9,),
    min_max_abs: (0.3, 1.1),
    copysign_floor: (1.3, -2.6),
    int_param: (1.1, 3),
    closure_free: (1.4,),
    energy_helpers: (0.6, -1.1),
    lennard_jones: (1.2,),
    michaelis: (2.0, 1.5, 0.7),
    arrhenius: (350.0, 2.0, 1000.0),
}
