"""The worked block of seed note 000, with a vector ``a``.

The note builds a small graph and reads its backward graph off it:

    u = a . a        v = b |a|        y = u + v        z = 2 u

``a`` is a vector and ``b`` a scalar, so ``v`` and ``y`` are vectors (``u`` is
broadcast into ``y``).  A downstream loss consumes both outputs; here it is
``l = sum(y) + z``.  ``u`` feeds both ``y`` and ``z``, so its adjoint collects
both paths, as the note says (``u' = sum(y') + 2 z'``), and reverse mode computes
``u`` once for both.  By hand, with ``n = len(a)``:

    l = n u + b sum|a| + 2 u
    dl/da = (n + 2) 2 a + b sign(a)        dl/db = sum|a|

(``sign(a)`` is the derivative of ``|a|`` away from 0; the example keeps every
entry of ``a`` non-zero.)
"""

import numpy as np

import symdiff


def block(a, b):
    u = a @ a
    v = b * np.abs(a)
    y = u + v
    z = 2 * u
    return np.sum(y) + z


def block_grad_by_hand(a, b):
    """The note's backward graph, node by node (``x_bar`` = dl/dx)."""
    y_bar = np.ones_like(a)  # l = sum(y) + z
    z_bar = 1.0
    u_bar = np.sum(y_bar) + 2.0 * z_bar  # u reaches l through y (broadcast) and z
    v_bar = y_bar
    a_bar = 2.0 * a * u_bar + b * np.sign(a) * v_bar  # u = a.a, v = b |a|
    b_bar = np.sum(np.abs(a) * v_bar)
    return a_bar, b_bar


def main():
    a = np.array([1.0, -2.0, 3.0])
    b = 0.5

    grad_block = symdiff.grad(block, argnums=(0, 1))
    value_and_grad_block = symdiff.value_and_grad(block, argnums=(0, 1))
    a_bar, b_bar = grad_block(a, b)
    value, (a_bar2, b_bar2) = value_and_grad_block(a, b)

    want_a, want_b = block_grad_by_hand(a, b)
    n = a.size
    closed_a = (n + 2) * 2.0 * a + b * np.sign(a)  # the formula in the docstring
    print(f"a = {a}, b = {b}")
    print(f"l = sum(y) + z = {value!r}  (plain NumPy: {float(block(a, b))!r})")
    print(f"dl/da = {a_bar}  (by hand {want_a}, closed form {closed_a})")
    print(f"dl/db = {b_bar!r}  (by hand {float(want_b)!r})")

    if not np.isclose(value, block(a, b), rtol=1e-14, atol=0.0):
        raise AssertionError(f"value {value!r} != NumPy {block(a, b)!r}")
    for got in (a_bar, a_bar2):
        if np.shape(got) != a.shape:
            raise AssertionError(f"dl/da has shape {np.shape(got)}, want {a.shape}")
        if not np.allclose(got, want_a, rtol=1e-14, atol=0.0):
            raise AssertionError(f"dl/da {got} != by hand {want_a}")
    if not np.allclose(want_a, closed_a, rtol=1e-14, atol=0.0):
        raise AssertionError("the backward graph and the closed form disagree")
    for got in (b_bar, b_bar2):
        if np.ndim(got) != 0 or not np.isclose(got, want_b, rtol=1e-14, atol=0.0):
            raise AssertionError(f"dl/db {got!r} != by hand {want_b!r}")

    print(f"RESULT l = {float(value)!r}")
    for i in range(n):
        print(f"RESULT dl/da[{i}] = {float(a_bar[i])!r}")
    print(f"RESULT dl/db = {float(b_bar)!r}")

    print("\n--- generated kernel: grad ---")
    print(grad_block.source)
    print("OK: symdiff matches the backward graph of seed note 000")


if __name__ == "__main__":
    main()
