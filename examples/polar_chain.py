"""The chain rule through polar coordinates (seed note 004).

Take a smooth function of the plane, f(x, y) = x^2 y + sin(x y), and feed it
polar coordinates x = r cos(theta), y = r sin(theta).  The note's chain rule:

    df/dr     = df/dx dx/dr     + df/dy dy/dr     = f_x cos(theta) + f_y sin(theta)
    df/dtheta = df/dx dx/dtheta + df/dy dy/dtheta = -f_x r sin(theta) + f_y r cos(theta)

symdiff applies exactly this rule mechanically: the helper ``f`` is inlined
into ``f_polar`` and the whole composition is differentiated in one sweep.
"""

import math

import symdiff


def f(x, y):
    """A smooth function of the plane."""
    return x**2 * y + math.sin(x * y)


@symdiff.grad(argnums=(0, 1))
def f_polar(r, theta):
    x = r * math.cos(theta)
    y = r * math.sin(theta)
    return f(x, y)  # helper calls are inlined


def chain_rule_by_hand(r, theta):
    x, y = r * math.cos(theta), r * math.sin(theta)
    f_x = 2.0 * x * y + y * math.cos(x * y)  # partial derivatives of f
    f_y = x**2 + x * math.cos(x * y)
    dx_dr, dy_dr = math.cos(theta), math.sin(theta)
    dx_dtheta, dy_dtheta = -r * math.sin(theta), r * math.cos(theta)
    return f_x * dx_dr + f_y * dy_dr, f_x * dx_dtheta + f_y * dy_dtheta


def central_difference(fun, args, i, h=1e-6):
    up, down = list(args), list(args)
    up[i] += h
    down[i] -= h
    return (fun(*up) - fun(*down)) / (2.0 * h)


def f_polar_plain(r, theta):
    return f(r * math.cos(theta), r * math.sin(theta))


for r, theta in [(1.2, 0.7), (0.5, -2.0), (2.0, math.pi / 3)]:
    got = f_polar(r, theta)
    want = chain_rule_by_hand(r, theta)
    fd = tuple(central_difference(f_polar_plain, (r, theta), i) for i in (0, 1))
    print(f"r = {r}, theta = {theta:.4f}")
    print(f"  symdiff      (df/dr, df/dtheta) = {got}")
    print(f"  chain rule                      = {want}")
    print(f"  finite diff.                    = {fd}")
    for g, w, d in zip(got, want, fd, strict=True):
        if not math.isclose(g, w, rel_tol=1e-12, abs_tol=1e-12):
            raise AssertionError(f"symdiff {g!r} != chain rule {w!r}")
        if not math.isclose(g, d, rel_tol=1e-6, abs_tol=1e-8):
            raise AssertionError(f"symdiff {g!r} != finite difference {d!r}")

dr, dtheta = f_polar(1.2, 0.7)
print(f"RESULT df/dr(1.2, 0.7) = {dr!r}")
print(f"RESULT df/dtheta(1.2, 0.7) = {dtheta!r}")

print("\n--- generated kernel ---")
print(f_polar.source)
print("OK: symdiff matches the chain rule and finite differences")
