"""Backprop through a scalar 2-layer ReLU network (seed note 002, section 2).

Every quantity is a scalar, so the network and its squared-error loss read

    a1 = w1 x + b1      h1 = relu(a1)
    a2 = w2 h1 + b2     h2 = relu(a2)
    f  = w3 h2 + b3     L  = 1/2 (f - y)^2

We ask symdiff for dL/d(w1, b1, w2, b2, w3, b3).  The data x and y are
arguments too, but they are not in ``argnums``, so no derivative work is done
for them (seed note 002: gradients w.r.t. data can be skipped).
"""

import math

import symdiff


def relu(a):
    # A helper function: symdiff inlines it.  ``max`` is differentiated as a
    # select, so the backward pass masks the gradient where a < 0.  (An
    # if/else version, ``if a > 0.0: return a`` / ``else: return 0.0``, works
    # too.)
    return max(a, 0.0)


PARAMS = ("w1", "b1", "w2", "b2", "w3", "b3")


@symdiff.grad(argnums=(0, 1, 2, 3, 4, 5))
def loss(w1, b1, w2, b2, w3, b3, x, y):
    a1 = w1 * x + b1
    h1 = relu(a1)
    a2 = w2 * h1 + b2
    h2 = relu(a2)
    f = w3 * h2 + b3
    return 0.5 * (f - y) ** 2


def backprop_by_hand(w1, b1, w2, b2, w3, b3, x, y):
    """The note's equations (18): forward pass, then the chain rule backwards."""
    a1 = w1 * x + b1
    h1 = max(a1, 0.0)
    a2 = w2 * h1 + b2
    h2 = max(a2, 0.0)
    f = w3 * h2 + b3
    dL_df = f - y
    dL_dw3, dL_db3 = dL_df * h2, dL_df
    dL_dh2 = dL_df * w3
    dL_da2 = dL_dh2 * (1.0 if a2 > 0.0 else 0.0)  # relu'(a2)
    dL_dw2, dL_db2 = dL_da2 * h1, dL_da2
    dL_dh1 = dL_da2 * w2
    dL_da1 = dL_dh1 * (1.0 if a1 > 0.0 else 0.0)  # relu'(a1)
    dL_dw1, dL_db1 = dL_da1 * x, dL_da1
    return dL_dw1, dL_db1, dL_dw2, dL_db2, dL_dw3, dL_db3


params = (0.5, 0.1, -1.2, 0.9, 2.0, -0.4)  # w1, b1, w2, b2, w3, b3
# Three data points (x, y): both ReLUs active; the second ReLU off (everything
# before it gets zero gradient); the first ReLU off (w1 and b1 get zero).
data = [(0.5, 1.0), (1.5, 0.3), (-3.0, 0.5)]
for x, y in data:
    got = loss(*params, x, y)
    want = backprop_by_hand(*params, x, y)
    print(f"x = {x}, y = {y}")
    for name, g, w in zip(PARAMS, got, want, strict=True):
        print(f"  dL/d{name} = {g + 0.0: .12f}   (by hand {w + 0.0: .12f})")
        if not math.isclose(g, w, rel_tol=1e-12, abs_tol=1e-12):
            raise AssertionError(f"dL/d{name}: symdiff {g!r} != by hand {w!r}")

for name, g in zip(PARAMS, loss(*params, 0.5, 1.0), strict=True):
    print(f"RESULT dL/d{name} = {g!r}")

print("\n--- generated kernel ---")
print(loss.source)
print("OK: symdiff matches hand-derived backprop")
