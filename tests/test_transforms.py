"""Every transform on every corpus function, against SymPy.

The oracle is independent of symdiff's differentiation: the forward kernel is first
checked against the Python function itself, then its expression is handed to
``sympy.diff``; jvp, vjp, jacobian (every mode), hessian and hvp must agree with it.
"""

import math

import pytest
import sympy

import symdiff
from symdiff.symbolic import to_sympy
from tests.corpus import CORPUS

NAMES = {fn.__name__: fn for fn in CORPUS}
REL = 1e-10


def _float_positions(point):
    return tuple(i for i, v in enumerate(point) if isinstance(v, float))


class Oracle:
    def __init__(self, fn, point):
        forward = symdiff.jit(fn, target="python")
        got = forward(*point)
        expected = fn(*point)
        outs = got if isinstance(got, tuple) else (got,)
        refs = expected if isinstance(expected, tuple) else (expected,)
        for a, b in zip(outs, refs, strict=True):
            assert a == pytest.approx(b, rel=1e-13, abs=1e-15)
        kernel = forward.kernel
        self.symbols = [
            sympy.Symbol(p.attrs[1], real=True) for p in kernel.traced.params
        ]
        exprs = to_sympy(kernel.traced.output)
        self.exprs = list(exprs) if isinstance(exprs, tuple) else [exprs]
        self.multi = isinstance(exprs, tuple)
        self.subs = {
            s: sympy.Float(v, 30) if isinstance(v, float) else sympy.Integer(v)
            for s, v in zip(self.symbols, point, strict=True)
        }
        self.point = point

    def _value(self, e):
        # SymPy leaves d/dx floor(x) unevaluated; it is zero almost everywhere.
        e = e.replace(
            lambda t: isinstance(t, (sympy.Derivative, sympy.Subs)),
            lambda t: sympy.Integer(0),
        )
        return float(e.evalf(30, subs=self.subs))

    def d(self, i, j):
        return self._value(sympy.diff(self.exprs[i], self.symbols[j]))

    def d2(self, j, k):
        return self._value(sympy.diff(self.exprs[0], self.symbols[j], self.symbols[k]))


def close(a, b):
    return a == pytest.approx(b, rel=REL, abs=1e-12)


@pytest.fixture(params=sorted(NAMES), scope="module")
def case(request):
    fn = NAMES[request.param]
    return fn, CORPUS[fn], Oracle(fn, CORPUS[fn])


def test_jvp(case):
    fn, point, oracle = case
    direction = tuple(
        0.3 + 0.2 * k if isinstance(v, float) else 0.0 for k, v in enumerate(point)
    )
    _out, out_dot = symdiff.jvp(fn, point, direction, target="python")
    dots = out_dot if oracle.multi else (out_dot,)
    for i, dot in enumerate(dots):
        expected = sum(oracle.d(i, j) * direction[j] for j in _float_positions(point))
        assert close(dot, expected)


def test_vjp(case):
    fn, point, oracle = case
    _out, pullback = symdiff.vjp(fn, *point, target="python")
    n_out = len(oracle.exprs)
    cotangent = tuple(1.0 + 0.5 * i for i in range(n_out))
    cts = pullback(cotangent if oracle.multi else cotangent[0])
    assert len(cts) == len(point)
    for j in _float_positions(point):
        expected = sum(cotangent[i] * oracle.d(i, j) for i in range(n_out))
        assert close(cts[j], expected)


@pytest.mark.parametrize("mode", ["forward", "reverse", "auto"])
def test_jacobian(case, mode):
    fn, point, oracle = case
    wrt = _float_positions(point)
    jac = symdiff.jacobian(fn, argnums=wrt, mode=mode, target="python")
    rows = jac(*point)
    rows = rows if oracle.multi else (rows,)
    for i, row in enumerate(rows):
        for k, j in enumerate(wrt):
            assert close(row[k], oracle.d(i, j))
    expected_mode = (
        mode
        if mode != "auto"
        else ("forward" if len(wrt) < len(oracle.exprs) else "reverse")
    )
    assert jac.mode == expected_mode


def test_hessian_and_hvp(case):
    fn, point, oracle = case
    if oracle.multi:
        pytest.skip("hessian is for scalar functions")
    wrt = _float_positions(point)
    h = symdiff.hessian(fn, argnums=wrt, target="python")(*point)
    for a, j in enumerate(wrt):
        for b, k in enumerate(wrt):
            assert close(h[a][b], oracle.d2(j, k))
    v = tuple(
        0.5 - 0.25 * k if isinstance(x, float) else 0.0 for k, x in enumerate(point)
    )
    hv = symdiff.hvp(fn, point, v, target="python")
    for j in wrt:
        assert close(hv[j], sum(oracle.d2(j, k) * v[k] for k in wrt))


def test_corpus_size():
    assert len(CORPUS) >= 40


# -- conventions, modes, and compiled kernels -----------------------------------------
def wide(x):
    a, b, c, d = math.sin(x), math.sin(2 * x), math.sin(3 * x), math.sin(4 * x)
    e, f, g, h = math.cos(x), math.cos(2 * x), math.cos(3 * x), math.cos(4 * x)
    return a, b, c, d, e, f, g, h, a * e, b * f, c * g, d * h


def tall(a, b, c, d, e, f, g, h, i, j):
    return a * b + c * d + e * f + g * h + i * j


def test_auto_mode_follows_the_shape():
    forward = symdiff.jacobian(wide)
    assert forward.mode == "forward"
    assert "mode: forward" in forward.source
    reverse = symdiff.jacobian(tall, argnums=tuple(range(10)))
    assert reverse.mode == "reverse"
    # the chosen mode is the cheaper one: compare with the other
    other = symdiff.jacobian(wide, mode="reverse")
    assert forward.op_counts["total"] <= other.op_counts["total"]


def test_compiled_transforms_match_python_target():
    for fn in (rosen := NAMES["rosen2"], NAMES["two_outputs"]):
        point = CORPUS[fn]
        cpu = symdiff.jacobian(fn, argnums=(0, 1))(*point)
        python = symdiff.jacobian(fn, argnums=(0, 1), target="python")(*point)
        cpu, python = (
            (cpu, python) if isinstance(cpu[0], tuple) else ((cpu,), (python,))
        )
        for row_cpu, row_python in zip(cpu, python, strict=True):
            assert row_cpu == pytest.approx(row_python, rel=1e-14)
    assert symdiff.hessian(rosen, argnums=(0, 1))(1.0, 1.0) == (
        (802.0, -400.0),
        (-400.0, 200.0),
    )
    assert symdiff.jvp(rosen, (1.0, 1.0), (1.0, 0.0)) == (0.0, 0.0)


def test_jax_conventions():
    out, pullback = symdiff.vjp(lambda x: x * x, 3.0)
    assert out == 9.0 and pullback(1.0) == (6.0,)
    assert symdiff.hessian(lambda x: x**3)(2.0) == 12.0
    assert symdiff.jacobian(lambda x: x**3)(2.0) == 12.0
    with pytest.raises(symdiff.ArgumentError, match="tuple or list"):
        symdiff.jvp(lambda x: x, 1.0, 1.0)
    with pytest.raises(symdiff.ArgumentError, match="2 primals but 1 tangents"):
        symdiff.jvp(lambda x, y: x, (1.0, 2.0), (1.0,))
    with pytest.raises(symdiff.ArgumentError, match="mode must be one of"):
        symdiff.jacobian(lambda x: x, mode="sideways")
    with pytest.raises(symdiff.ArgumentError, match="output's structure"):
        symdiff.vjp(lambda x: (x, x), 1.0)[1](1.0)


# -- stop_gradient and custom rules -----------------------------------------------------
def with_stop(x, y):
    return x * symdiff.stop_gradient(x * y) + y


@symdiff.custom_vjp
def clip_gradient(x):
    return x


def clip_fwd(x):
    return clip_gradient(x), ()


def clip_bwd(res, g):
    return (max(min(g, 0.5), -0.5),)


clip_gradient.defvjp(clip_fwd, clip_bwd)


@symdiff.custom_vjp
def safe_log(x):
    return math.log(x)


def safe_log_fwd(x):
    return safe_log(x), x


def safe_log_bwd(x, g):
    return (g / x if x > 1e-12 else 0.0,)


safe_log.defvjp(safe_log_fwd, safe_log_bwd)


def uses_custom(x):
    return 3.0 * clip_gradient(x) + safe_log(x * x)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_stop_gradient(target):
    g = symdiff.grad(with_stop, argnums=(0, 1), target=target)
    assert g(2.0, 3.0) == (6.0, 1.0)
    assert symdiff.jvp(with_stop, (2.0, 3.0), (1.0, 0.0), target=target)[1] == 6.0


def uses_safe_log(x):
    return 3.0 * safe_log(x * x) + x


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_custom_vjp_rule_at_the_cotangent(target):
    """bwd runs at the cotangent that reaches the call, as in JAX: clipping it
    at 0.5 gives 0.5 for 3 * clip_gradient(x), not 3 * 0.5 (a rule evaluated at
    g = 1 and scaled); a rule that is not linear in g has no forward mode."""
    g = symdiff.grad(uses_custom, target=target)
    assert g(2.0) == pytest.approx(0.5 + 2.0 / 2.0)
    assert symdiff.value_and_grad(uses_custom, target=target)(2.0)[1] == g(2.0)
    assert symdiff.vjp(uses_custom, 2.0, target=target)[1](0.1) == (
        pytest.approx(0.1 * 3.0 + 0.1 * 2.0 / 2.0),
    )
    assert symdiff.grad(clip_gradient, target=target)(5.0) == 0.5
    assert symdiff.jit(uses_custom, target=target)(2.0) == pytest.approx(
        6.0 + math.log(4.0)
    )
    with pytest.raises(symdiff.TranslationError, match="not linear in its cotangent"):
        symdiff.jvp(uses_custom, (2.0,), (1.0,), target=target)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_custom_vjp_linear_rule_in_both_modes(target):
    d = 3.0 * 2.0 / 2.0 + 1.0  # 3 * (2x / x**2) + 1 at x = 2
    assert symdiff.grad(uses_safe_log, target=target)(2.0) == pytest.approx(d)
    tangent = symdiff.jvp(uses_safe_log, (2.0,), (1.0,), target=target)[1]
    assert tangent == pytest.approx(d)
    assert symdiff.hessian(uses_safe_log, target=target)(2.0) == pytest.approx(-1.5)


@symdiff.custom_vjp
def cube(x):
    return x * x * x


def cube_fwd(x):
    return cube(x), x


def cube_bwd(x, g):
    return (3.0 * x * x * g,)


cube.defvjp(cube_fwd, cube_bwd)


@symdiff.custom_vjp
def clipped_sin(x):
    return math.sin(x)


def clipped_sin_fwd(x):
    return clipped_sin(x), x


def clipped_sin_bwd(x, g):
    c = max(min(g, 2.0), -2.0)
    return (cube(c * x) * math.cos(x) + 3.0 * clip_gradient(g),)


clipped_sin.defvjp(clipped_sin_fwd, clipped_sin_bwd)


@symdiff.custom_vjp
def ignores_g(x):
    return x * x


def ignores_g_fwd(x):
    return ignores_g(x), x


def ignores_g_bwd(x, g):
    return (2.0 * x,)  # wrong as a derivative, but what the user asked for


ignores_g.defvjp(ignores_g_fwd, ignores_g_bwd)


@symdiff.custom_vjp
def offset(x):
    return x * x


def offset_fwd(x):
    return offset(x), x


def offset_bwd(x, g):
    return (g + 1.0,)


offset.defvjp(offset_fwd, offset_bwd)


def uses_nested_rules(x):
    return 0.5 * clipped_sin(x * x) + 3.0 * ignores_g(x) + 3.0 * offset(x)


def uses_nested_rules_by_hand(x):
    """The gradient JAX computes from the same rules, written out."""
    c = max(min(0.5, 2.0), -2.0)
    inner = (c * x * x) ** 3 * math.cos(x * x) + 3.0 * 0.5  # clip_gradient(g) = g
    return 2.0 * x * inner + 2.0 * x + (3.0 + 1.0)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_custom_vjp_rules_that_are_not_derivatives(target):
    """A rule ignoring g or offset from it is used as written (as in JAX), not
    scaled by the cotangent; a rule calling custom_vjp functions itself, and
    the derivative of such a gradient, reverse over reverse."""
    g = symdiff.grad(uses_nested_rules, target=target)
    for x in (0.9, -0.4):
        assert g(x) == pytest.approx(uses_nested_rules_by_hand(x), rel=1e-13)
    gg = symdiff.grad(g, target=target)(0.9)
    assert gg == pytest.approx(symdiff.grad(uses_nested_rules_by_hand)(0.9), rel=1e-12)


@symdiff.custom_vjp
def no_rules(x):
    return x


def test_custom_vjp_without_rules_is_a_clear_error():
    with pytest.raises(symdiff.TranslationError, match="custom_vjp without rules"):
        symdiff.grad(lambda x: no_rules(x) * 2.0, target="python")(1.0)


# -- SymPy expressions as input ---------------------------------------------------------
def test_from_sympy():
    x, y, z = sympy.symbols("x y z", real=True)
    expr = (
        sympy.exp(x * y) * sympy.sin(z)
        + sympy.sqrt(x**2 + 1) / (y + 3)
        + sympy.Piecewise((x, y > 0), (-x, True))
        + sympy.Max(x, z)
        + sympy.atan2(y, x)
    )
    f = symdiff.from_sympy(expr, [x, y, z])
    point = {x: 0.7, y: 0.4, z: -1.2}
    args = (0.7, 0.4, -1.2)
    assert f(*args) == pytest.approx(float(expr.subs(point)), rel=1e-13)
    grads = f.grad(*args)
    for s, g in zip((x, y, z), grads, strict=True):
        assert g == pytest.approx(float(sympy.diff(expr, s).subs(point)), rel=1e-12)
    hess = f.hessian(*args)
    assert hess[0][1] == pytest.approx(
        float(sympy.diff(expr, x, y).subs(point)), rel=1e-12
    )
    vec = symdiff.from_sympy([x * y, y * z], [x, y, z])
    assert vec.jacobian(1.0, 2.0, 3.0) == ((2.0, 1.0, 0.0), (0.0, 3.0, 2.0))


def test_from_sympy_fifty_terms():
    xs = sympy.symbols("x0:5", real=True)
    expr = sum(
        sympy.sin((k + 1) * xs[k % 5]) * sympy.exp(xs[(k + 1) % 5] / (k + 1))
        for k in range(50)
    )
    f = symdiff.from_sympy(expr, xs)
    point = (0.1, 0.2, 0.3, 0.4, 0.5)
    subs = dict(zip(xs, point, strict=True))
    expected = [float(sympy.diff(expr, s).subs(subs)) for s in xs]
    assert f.grad(*point) == pytest.approx(expected, rel=1e-12)


# -- composing transforms -------------------------------------------------------------
def cubic_mix(x, y):
    return x**3 * y + math.sin(x) * y**2


def test_transforms_compose():
    x, y = 0.7, 1.3
    d2x = symdiff.grad(symdiff.grad(cubic_mix))
    assert d2x(x, y) == pytest.approx(6 * x * y - math.sin(x) * y**2, rel=1e-14)
    d3x = symdiff.grad(symdiff.grad(symdiff.grad(cubic_mix)))
    assert d3x(x, y) == pytest.approx(6 * y - math.cos(x) * y**2, rel=1e-14)
    jac_of_grad = symdiff.jacobian(
        symdiff.grad(cubic_mix, argnums=(0, 1)), argnums=(0, 1)
    )
    hess = symdiff.hessian(cubic_mix, argnums=(0, 1))
    for row_a, row_b in zip(jac_of_grad(x, y), hess(x, y), strict=True):
        assert row_a == pytest.approx(row_b, rel=1e-14)
    with pytest.raises(symdiff.ArgumentError, match="transform `cubic_mix` itself"):
        symdiff.grad(_vjp_compiled())


def _vjp_compiled():
    from symdiff.compiled import Compiled
    from symdiff.transforms import Spec

    return Compiled(cubic_mix, Spec("vjp", (0, 1)))


def test_from_sympy_errors():
    # Raised by from_sympy itself, not at the first call of what it returns.
    x, y = sympy.symbols("x y", real=True)
    with pytest.raises(symdiff.ArgumentError) as info:
        symdiff.from_sympy(x * y, [x])
    assert str(info.value) == (
        "from_sympy: symbol `y` is not among the function's symbols\n"
        "  help: add `y` to the symbols list, or substitute a value for it with "
        "expr.subs(...)"
    )
    with pytest.raises(symdiff.ArgumentError, match=r"`zeta` is not supported"):
        symdiff.from_sympy(sympy.zeta(x), [x])


SYMBOLS_HELP = "  help: from_sympy(expr, [x, y]) with x, y = sympy.symbols('x y')"
X = sympy.Symbol("x", real=True)


@pytest.mark.parametrize(
    ("expr", "symbols", "message"),
    [
        (
            None,
            [X],
            "from_sympy: expr must be a SymPy expression, or a list, tuple or Matrix "
            f"of them; got None\n{SYMBOLS_HELP}",
        ),
        (
            {1: X},
            [X],
            "from_sympy: expr must be a SymPy expression, or a list, tuple or Matrix "
            f"of them; got a `dict` ({{1: x}})\n{SYMBOLS_HELP}",
        ),
        (
            "x**",
            [X],
            "from_sympy: sympy.sympify cannot parse 'x**'\n"
            "  help: pass the SymPy expression itself (x**2 with x = sympy.Symbol('x'))",
        ),
        (
            X**2,
            [X, X],
            "from_sympy: symbol `x` appears more than once in symbols\n"
            "  help: list each argument once",
        ),
        (
            X,
            None,
            "from_sympy: symbols must be the arguments in order, a list or tuple of "
            f"sympy.Symbol; got None\n{SYMBOLS_HELP}",
        ),
        (
            X,
            {X},
            "from_sympy: symbols must be the arguments in order, a list or tuple of "
            f"sympy.Symbol; got a `set` ({{x}})\n{SYMBOLS_HELP}",
        ),
        (
            X,
            [X, 2],
            f"from_sympy: symbols must be sympy.Symbol; entry 1 is an `int` (2)\n"
            f"{SYMBOLS_HELP}",
        ),
        (
            sympy.Derivative(X**3, X),
            [X],
            "from_sympy: `Derivative` is not supported (Derivative(x**3, x))\n"
            "  help: evaluate it first: expr.doit()",
        ),
    ],
    ids=[
        "expr-none",
        "expr-dict",
        "expr-unparsable",
        "symbols-repeated",
        "symbols-none",
        "symbols-set",
        "symbols-int",
        "derivative",
    ],
)
def test_from_sympy_bad_arguments(expr, symbols, message):
    with pytest.raises(symdiff.ArgumentError) as info:
        symdiff.from_sympy(expr, symbols)
    assert str(info.value) == message


def test_from_sympy_symbols_with_any_name():
    # Keywords, names that are not identifiers, and names taken by another
    # symbol's stand-in all get a parameter name of their own.
    x = sympy.Symbol("x")
    odd = [sympy.Symbol("lambda"), sympy.Symbol("a b"), sympy.Symbol("x1"), x]
    expr = odd[0] ** 2 + 3 * odd[1] + 5 * odd[2] + 7 * x + sympy.Symbol("x", real=True)
    f = symdiff.from_sympy(expr, [*odd, sympy.Symbol("x", real=True)])
    assert f.grad(2.0, 1.0, 1.0, 1.0, 1.0) == (4.0, 3.0, 5.0, 7.0, 1.0)
    assert f(1.0, 1.0, 1.0, 1.0, 1.0) == 17.0


def test_from_sympy_strings():
    x, y = sympy.symbols("x y", real=True)
    assert symdiff.from_sympy("x**2", ["x"]).grad(3.0) == (6.0,)
    assert symdiff.from_sympy("x**2", "x").grad(3.0) == (6.0,)
    assert symdiff.from_sympy("x**2 * y", "x y").grad(3.0, 2.0) == (12.0, 9.0)
    # A name stands for the expression's symbol of that name, assumptions and all.
    assert symdiff.from_sympy(x**2 * y, ["x", "y"]).grad(3.0, 2.0) == (12.0, 9.0)
    assert symdiff.from_sympy("x**2 * y", [x, y]).grad(3.0, 2.0) == (12.0, 9.0)
    assert symdiff.from_sympy(x**2, x).grad(3.0) == (6.0,)


def test_from_sympy_nested_outputs():
    x, y = sympy.symbols("x y", real=True)
    f = symdiff.from_sympy([[x * y, x], [y]], [x, y])
    assert f(1.0, 2.0) == ((2.0, 1.0), (2.0,))
    assert f.jacobian(1.0, 2.0) == (((2.0, 1.0), (1.0, 0.0)), ((0.0, 1.0),))
    square = symdiff.from_sympy([[x, x], [x, x]], [x])
    assert square(3.0) == ((3.0, 3.0), (3.0, 3.0))


@symdiff.custom_vjp
def bad_fwd(x):
    return x


def bad_fwd_fwd(x):
    return x * 2.0


def bad_fwd_bwd(res, g):
    return (g,)


bad_fwd.defvjp(bad_fwd_fwd, bad_fwd_bwd)


@symdiff.custom_vjp
def bad_bwd(x, y):
    return x * y


def bad_bwd_fwd(x, y):
    return x * y, (x, y)


def bad_bwd_bwd(res, g):
    return (g,)


bad_bwd.defvjp(bad_bwd_fwd, bad_bwd_bwd)


def test_custom_vjp_rule_errors():
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(lambda x: bad_fwd(x), target="python")(1.0)
    assert "the fwd rule of `bad_fwd` must return `(output, residuals)`" in str(
        info.value
    )
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(lambda x: bad_bwd(x, 2.0), target="python")(1.0)
    assert "the bwd rule of `bad_bwd` must return a tuple of 2 cotangent(s)" in str(
        info.value
    )
