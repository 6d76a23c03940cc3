"""Quickstart: the README's main example.

symdiff reads the *source* of an ordinary Python function, differentiates it
symbolically in reverse mode and compiles the forward + backward pass into one
Numba kernel.  The compiled object is callable and can be inspected:

* ``f.source``  - the generated kernel, as readable Python
* ``f.ir``      - the same kernel as a numbered SSA listing
* ``f.latex()`` - the gradient as formulas

Run it with ``python examples/quickstart.py`` from the repository root.
"""

import math

import symdiff


# ``argnums=(0, 1)`` asks for the gradient with respect to both x and y; the
# decorated function then returns the tuple (df/dx, df/dy).
@symdiff.grad(argnums=(0, 1))
def f(x, y):
    v = x * x
    return math.exp(math.sin(v) * math.log(v)) + y * v


def f_grad_by_hand(x, y):
    """The same gradient derived on paper (the independent reference)."""
    v = x * x
    z = math.exp(math.sin(v) * math.log(v))
    # dz/dv = z * (cos(v) log(v) + sin(v) / v); d(y v)/dv = y; dv/dx = 2x
    dz_dv = z * (math.cos(v) * math.log(v) + math.sin(v) / v)
    return (dz_dv + y) * 2.0 * x, v


x, y = 1.3, 0.5
dfdx, dfdy = f(x, y)  # first call: parse, differentiate, compile (about 1 s)
print(f"f'(x={x}, y={y}) = ({dfdx!r}, {dfdy!r})")
print(f"RESULT df/dx = {dfdx!r}")
print(f"RESULT df/dy = {dfdy!r}")

print("\n--- f.source: the generated Numba kernel ---")
print(f.source)
print("--- f.ir: the SSA listing ---")
print(f.ir)
print("\n--- f.latex(): the gradient as formulas ---")
print(f.latex())

# Check against the hand-derived gradient.
ref = f_grad_by_hand(x, y)
for name, got, want in zip(("df/dx", "df/dy"), (dfdx, dfdy), ref, strict=True):
    if not math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12):
        raise AssertionError(f"{name}: symdiff {got!r} != by hand {want!r}")
print("\nOK: symdiff matches the hand-derived gradient")
