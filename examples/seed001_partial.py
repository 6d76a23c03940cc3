"""Partial derivatives of f(x, y) = 5 x^2 - x y^2 (seed note 001).

The note works the partials out on paper, treating the other variable as a
constant:

    df/dx = 10 x - y^2        df/dy = -2 x y

symdiff gets both from a single reverse sweep when asked for ``argnums=(0, 1)``.
"""

import math

import symdiff


@symdiff.grad(argnums=(0, 1))
def f(x, y):
    return 5.0 * x**2 - x * y**2


def partials_by_hand(x, y):
    return 10.0 * x - y**2, -2.0 * x * y


points = [(2.0, 3.0), (-1.5, 0.25), (0.0, 4.0)]
for x, y in points:
    got = f(x, y)
    want = partials_by_hand(x, y)
    print(f"grad f({x}, {y}) = {got}   (by hand: {want})")
    if not all(
        math.isclose(g, w, rel_tol=1e-12, abs_tol=1e-12)
        for g, w in zip(got, want, strict=True)
    ):
        raise AssertionError(f"mismatch at ({x}, {y}): {got} != {want}")

dfdx, dfdy = f(2.0, 3.0)
print(f"RESULT df/dx(2, 3) = {dfdx!r}")
print(f"RESULT df/dy(2, 3) = {dfdy!r}")

print("\n--- generated kernel ---")
print(f.source)
print("OK: symdiff matches 10x - y^2 and -2xy")
