"""Every op: declared in every table, and its partials checked against SymPy.

The op-spec table below gives each differentiable op a domain to sample; a new op
without a spec here fails ``test_every_op_has_a_spec``.
"""

import math
import random

import pytest
import sympy

from symdiff.backend.printer import TEMPLATES
from symdiff.ir import build as B
from symdiff.ir.node import make
from symdiff.ir.ops import ARRAY_OPS, CONTROL_OPS, LEAF, OPS, evaluate
from symdiff.rules import PARTIALS, partials
from symdiff.rules.arrays import JVPS, VJPS
from symdiff.symbolic import SYMPY, to_sympy

NON_LEAF = {
    name for name, spec in OPS.items() if spec.kind != LEAF and name not in ARRAY_OPS
}
#: Array ops with operands: a VJP and a JVP each (checked in tests/test_arrays.py).
ARRAY_NON_LEAF = {
    name for name in ARRAY_OPS if OPS[name].kind != LEAF and name not in CONTROL_OPS
}

# op -> domain of each float argument (low, high); None: no derivative to check.
SPECS = {
    "float": [(-3, 3)],
    "int": None,  # piecewise constant
    "add": [(-3, 3), (-3, 3)],
    "sub": [(-3, 3), (-3, 3)],
    "mul": [(-3, 3), (-3, 3)],
    "div": [(-3, 3), (0.5, 3)],
    "floordiv": [(0.1, 5), (0.7, 3)],
    "mod": [(0.1, 5), (0.7, 3)],
    "pow": [(0.2, 3), (-2, 2)],
    "neg": [(-3, 3)],
    "abs": [(0.1, 3)],
    "sign": [(0.1, 3)],
    "floor": [(0.1, 3)],
    "ceil": [(0.1, 3)],
    "max": [(-3, 3), (-3, 3)],
    "min": [(-3, 3), (-3, 3)],
    "maximum": [(-3, 3), (-3, 3)],
    "minimum": [(-3, 3), (-3, 3)],
    "fmax": [(-3, 3), (-3, 3)],
    "fmin": [(-3, 3), (-3, 3)],
    "copysign": [(0.1, 3), (-3, 3)],
    "exp": [(-3, 3)],
    "expm1": [(-3, 3)],
    "log": [(0.1, 5)],
    "log1p": [(-0.9, 5)],
    "log2": [(0.1, 5)],
    "log10": [(0.1, 5)],
    "sqrt": [(0.1, 5)],
    "sin": [(-3, 3)],
    "cos": [(-3, 3)],
    "tan": [(-1.4, 1.4)],
    "asin": [(-0.95, 0.95)],
    "acos": [(-0.95, 0.95)],
    "atan": [(-3, 3)],
    "sinh": [(-3, 3)],
    "cosh": [(-3, 3)],
    "tanh": [(-3, 3)],
    "asinh": [(-3, 3)],
    "acosh": [(1.1, 5)],
    "atanh": [(-0.95, 0.95)],
    "erf": [(-3, 3)],
    "erfc": [(-3, 3)],
    "atan2": [(-3, 3), (0.2, 3)],
    "hypot": [(-3, 3), (0.2, 3)],
    # negative arguments too: the digamma's reflection branch
    "lgamma": [(-3.9, 9)],
    "gamma": [(-2.9, 5)],
    "logaddexp": [(-3, 3), (-3, 3)],
    "cbrt": [(0.1, 5)],
    "ldexp": None,  # an int exponent: tests/test_scalar_builtins.py
    "gcd": None,
    "bitand": None,
    "bitor": None,
    "bitxor": None,
    "lshift": None,
    "rshift": None,
    "invert": None,
    "sigmoid": [(-3, 3)],
    "softplus": [(-3, 3)],
    "lt": None,
    "le": None,
    "gt": None,
    "ge": None,
    "eq": None,
    "ne": None,
    "and": None,
    "or": None,
    "not": None,
    "select": None,
    # Pass-through ops: tested through symdiff.stop_gradient / custom_vjp.
    "stop_gradient": None,
    "custom": None,
}


def test_every_op_is_in_every_table():
    assert set(PARTIALS) == NON_LEAF
    assert set(TEMPLATES) == NON_LEAF
    assert set(SYMPY) == NON_LEAF


def test_every_array_op_has_a_vjp_and_a_jvp():
    assert set(VJPS) == ARRAY_NON_LEAF
    assert set(JVPS) == ARRAY_NON_LEAF


def test_loop_ops_are_differentiated_as_a_whole():
    """``loop``/``item`` have no table rule: reverse and forward mode hand a loop
    all its results' derivatives at once (ad/loops.py)."""
    assert CONTROL_OPS == {"loop", "item"}
    assert not CONTROL_OPS & (set(VJPS) | set(JVPS))


def test_every_array_op_has_a_code_generator():
    """The array ops' print table (backend/loops.py) covers exactly the op table's
    array ops, and every reduction has an initial value and an update."""
    from symdiff.backend.loops import _ACCUMULATE, _INIT, ARRAY_KINDS

    assert set(ARRAY_KINDS) == set(ARRAY_OPS)
    reductions = {op for op, k in ARRAY_KINDS.items() if k == "reduce"}
    assert reductions == {op for op in ARRAY_OPS if OPS[op].kind == "reduce"}
    assert set(_INIT) == set(_ACCUMULATE) == reductions


def test_every_op_has_a_spec():
    assert set(SPECS) == NON_LEAF


def test_declared_arity_matches_the_rule_and_the_spec():
    for op, spec in OPS.items():
        if spec.kind == LEAF or spec.arity < 0 or op in ARRAY_OPS:
            continue
        args = _params(spec.arity) if spec.arity <= 3 else None
        node = make(op, args, shape=(), dtype="float64")
        assert len(partials(node)) == spec.arity, op
        if SPECS[op] is not None:
            assert len(SPECS[op]) == spec.arity, op


def _params(n):
    names = "abc"
    return [make("param", (), (i, names[i])) for i in range(n)]


CHECKED = sorted(op for op, spec in SPECS.items() if spec is not None)


@pytest.mark.parametrize("op", CHECKED)
def test_partials_match_sympy(op):
    rng = random.Random(op)
    spec = SPECS[op]
    args = _params(len(spec))
    out = make(op, args, shape=(), dtype="float64")
    expr = to_sympy(out)
    symbols = [sympy.Symbol(a.attrs[1], real=True) for a in args]
    parts = partials(out)
    for _ in range(5):
        point = [rng.uniform(lo, hi) for lo, hi in spec]
        subs = dict(zip(symbols, point, strict=True))
        for i, part in enumerate(parts):
            # SymPy leaves d/dx floor(x) unevaluated: it is zero almost everywhere.
            derivative = sympy.diff(expr, symbols[i]).replace(
                lambda e: isinstance(e, (sympy.Derivative, sympy.Subs)),
                lambda e: sympy.Integer(0),
            )
            expected = float(derivative.subs(subs).evalf(30))
            if part is None:
                assert expected == 0.0, f"{op}: partial {i} should be {expected}"
                continue
            got = float(to_sympy(part).subs(subs).evalf(30))
            assert got == pytest.approx(expected, rel=1e-12, abs=1e-12), (op, i, point)


@pytest.mark.parametrize("op", CHECKED)
def test_partials_match_finite_differences(op):
    """The reference implementation (NumPy) against the rule, numerically."""
    rng = random.Random(op + "fd")
    spec = SPECS[op]
    args = _params(len(spec))
    out = make(op, args, shape=(), dtype="float64")
    parts = partials(out)
    for _ in range(5):
        point = [rng.uniform(lo, hi) for lo, hi in spec]
        env = dict(zip(args, point, strict=True))
        for i, part in enumerate(parts):
            h = 1e-6 * max(1.0, abs(point[i]))
            hi_pt, lo_pt = list(point), list(point)
            hi_pt[i] += h
            lo_pt[i] -= h
            fd = (float(evaluate(op, hi_pt)) - float(evaluate(op, lo_pt))) / (2 * h)
            got = 0.0 if part is None else _eval(part, env)
            assert got == pytest.approx(fd, rel=1e-5, abs=1e-6), (op, i, point)


def _eval(node, env):
    from symdiff.ir.node import topological

    values = {}
    for n in topological([node]):
        if n.op == "param":
            values[n] = env[n]
        elif n.op == "const":
            values[n] = n.value
        else:
            values[n] = evaluate(n.op, [values[a] for a in n.args])
    return float(values[node])


def test_constants_are_keyed_by_bits():
    assert B.constant(0.0) is not B.constant(-0.0)
    assert B.constant(math.nan) is B.constant(math.nan)
    assert B.constant(1.0) is not B.constant(1)
    assert B.constant(2.5) is B.constant(2.5)


def test_hash_consing_and_identities():
    x, y = _params(2)
    assert B.mul(x, y) is B.mul(x, y)
    assert B.add(x, B.ZERO) is x
    assert B.mul(x, B.ONE) is x
    assert B.neg(B.neg(x)) is x
    assert B.pow_(x, B.constant(1)) is x
    assert B.add(B.constant(2.0), B.constant(3.0)) is B.constant(5.0)
    # x * 0 is not folded: inf * 0 is NaN under IEEE.
    assert B.mul(x, B.ZERO).op == "mul"


def test_select_arm_pushing_keeps_untaken_branch_exactly_zero():
    x, y = _params(2)
    c = B.apply("gt", x, B.ZERO)
    guarded = B.select(c, y, B.ZERO)
    pushed = B.mul(guarded, B.apply("log", x))
    assert pushed.op == "select" and pushed.args[0] is c
    assert pushed.args[2] is B.ZERO
