"""The logistic sigmoid and its famous derivative (seed note 001, section 14).

    s(x) = 1 / (1 + exp(-x))        s'(x) = s(x) (1 - s(x))

symdiff differentiates the definition mechanically; this script checks the
result against the closed form s (1 - s).
"""

import math

import symdiff


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


# ``symdiff.grad`` also works as a plain function call, not only as a decorator.
dsigmoid = symdiff.grad(sigmoid)
# value_and_grad returns (s(x), s'(x)) from one fused kernel.
s_and_ds = symdiff.value_and_grad(sigmoid)

for x in (-4.0, -1.0, 0.0, 0.3, 2.5):
    s, ds = s_and_ds(x)
    closed_form = s * (1.0 - s)
    print(f"x = {x:5}:  s = {s:.12f}  s' = {ds:.12f}  s(1-s) = {closed_form:.12f}")
    if not math.isclose(ds, closed_form, rel_tol=1e-12, abs_tol=1e-15):
        raise AssertionError(f"s'({x}) = {ds!r} but s(1-s) = {closed_form!r}")
    if ds != dsigmoid(x):
        raise AssertionError("grad and value_and_grad disagree")

print(f"RESULT s'(0) = {dsigmoid(0.0)!r}")
print(f"RESULT s'(0.3) = {dsigmoid(0.3)!r}")

print("\n--- generated kernel (grad) ---")
print(dsigmoid.source)
print("--- generated kernel (value_and_grad) ---")
print(s_and_ds.source)
print("OK: the gradient equals s(1 - s)")
