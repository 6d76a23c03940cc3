"""The running example of seed note 004: z = exp(sin(u^2) log(u^2)).

The note breaks z into elementary steps and differentiates them by hand in
reverse mode ("bar" quantities are dz/d(quantity)):

    v = u^2       w = sin(v)      x = log(v)      y = w x      z = exp(y)
    y_bar = z     w_bar = y_bar x     x_bar = y_bar w
    v_bar = w_bar cos(v) + x_bar / v      u_bar = v_bar 2u

symdiff does the same sweep automatically.  The note also claims that the
derivatives cost "at most a small constant factor" more operations than the
function itself (seed note 003: about 4-5x); ``op_counts`` lets us check.
"""

import math

import symdiff


def z(u):
    return math.exp(math.sin(u**2) * math.log(u**2))


z_jit = symdiff.jit(z)  # forward pass only
z_vg = symdiff.value_and_grad(z)  # value and dz/du from one fused kernel


def reverse_sweep_by_hand(u):
    """The note's reverse-mode table, line by line."""
    v = u**2
    w = math.sin(v)
    x = math.log(v)
    y = w * x
    z_val = math.exp(y)
    y_bar = z_val
    w_bar = y_bar * x
    x_bar = y_bar * w
    v_bar = w_bar * math.cos(v) + x_bar / v
    u_bar = v_bar * 2.0 * u
    return z_val, u_bar


def central_difference(fun, u, h=1e-6):
    return (fun(u + h) - fun(u - h)) / (2.0 * h)


for u in (0.5, 1.5, 2.0, -1.1):
    value, dz_du = z_vg(u)
    want_value, want_grad = reverse_sweep_by_hand(u)
    fd = central_difference(z, u)
    print(
        f"u = {u:5}:  z = {value:.12f}  dz/du = {dz_du:.12f}  (by hand "
        f"{want_grad:.12f}, finite diff. {fd:.8f})"
    )
    if not math.isclose(value, want_value, rel_tol=1e-12):
        raise AssertionError(f"value {value!r} != {want_value!r}")
    if value != z_jit(u):
        raise AssertionError("jit and value_and_grad disagree on the value")
    if not math.isclose(dz_du, want_grad, rel_tol=1e-12, abs_tol=1e-12):
        raise AssertionError(f"dz/du {dz_du!r} != by hand {want_grad!r}")
    if not math.isclose(dz_du, fd, rel_tol=1e-6, abs_tol=1e-8):
        raise AssertionError(f"dz/du {dz_du!r} != finite difference {fd!r}")

value, dz_du = z_vg(1.5)
print(f"RESULT z(1.5) = {value!r}")
print(f"RESULT dz/du(1.5) = {dz_du!r}")

print("\n--- generated kernel: value_and_grad ---")
print(z_vg.source)
print("--- generated kernel: jit (forward only) ---")
print(z_jit.source)

# The cheap gradient principle: count operations in both kernels.
fwd, both = z_jit.op_counts, z_vg.op_counts
ratio = both["total"] / fwd["total"]
print(f"op counts, jit:            {fwd}")
print(f"op counts, value_and_grad: {both}")
print(f"RESULT op ratio = {ratio!r}  (value_and_grad / jit)")
if ratio > 5.0:
    raise AssertionError(f"gradient costs {ratio:.1f}x the forward pass (> 5x)")
print("OK: symdiff matches the note's reverse sweep and finite differences")
