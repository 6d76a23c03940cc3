"""The errors users read: what symdiff says about input it cannot handle.

The product standard: bad input gets a clear error, never an internal traceback.
Unsupported syntax is reported with its name, ``file:line:col``, the source line with
a caret under the construct, and what to write instead; every problem in a function
is reported at once, in source order.  Argument, output and ``argnums`` errors are
clear :class:`symdiff.SymdiffError` subclasses too.

The functions differentiated here live in ``errors_cases.py`` (a real file, so that
``inspect.getsource`` works).  Expected positions are found by searching that file
for a snippet, never hard-coded.  Most tests use ``target="python"`` to skip Numba;
errors raised when arguments are checked use the default ``"cpu"`` target, since
they are raised before anything is compiled.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import errors_cases as cases
import numpy as np
import pytest

import symdiff
from symdiff.errors import Diagnostic

CASES_PATH = Path(cases.__file__).resolve()
CASES_LINES = CASES_PATH.read_text().splitlines()

UNKNOWN_FUNCTION_HINT = (
    "symdiff understands math/numpy functions (exp, log, sin, ...), min/max/abs/pow, "
    "and your own Python functions (also under @numba.njit); write this one in Python"
)
NO_SOURCE_HINT = (
    "  help: symdiff reads a function's source text; define it with `def` in a "
    "file (or a notebook cell) and pass the function itself"
)
SCALARS_ONLY = (
    "symdiff compiles functions of numbers and NumPy arrays: pass a float, an int, "
    "a bool or an array of floats, ints or bools (or a tuple, list or dict of them; "
    "strings, None, functions and objects of your own classes are constants of the "
    "kernel)"
)


# -- helpers ----------------------------------------------------------------------------
def display_file() -> str:
    """How messages name errors_cases.py: relative to the cwd when inside it."""
    rel = os.path.relpath(CASES_PATH)
    return str(CASES_PATH) if rel.startswith("..") else rel


def locate(
    line_snippet: str, target: str | None = None, *, line: int | None = None
) -> tuple[int, int]:
    """1-based (line, col) of ``target`` on the line of errors_cases.py that contains
    ``line_snippet`` (``target`` defaults to the snippet itself).  The snippet must
    occur on one line only, unless that ``line`` is given."""
    if line is None:
        hits = [i + 1 for i, text in enumerate(CASES_LINES) if line_snippet in text]
        assert len(hits) == 1, f"{line_snippet!r} must occur once in errors_cases.py"
        (line,) = hits
    text = CASES_LINES[line - 1]
    assert line_snippet in text, (line_snippet, text)
    target = line_snippet if target is None else target
    assert text.count(target) == 1, f"{target!r} must occur once on its line"
    return line, text.index(target) + 1


def def_line(name: str) -> int:
    return locate(f"def {name}(")[0]


def translation_error(fun, *args, kind="grad", call_kwargs=None, **options):
    """The TranslationError that ``kind(fun, **options)(*args, **call_kwargs)``
    raises (with ``target="python"``)."""
    transform = getattr(symdiff, kind)
    with pytest.raises(symdiff.TranslationError) as info:
        transform(fun, target="python", **options)(*args, **(call_kwargs or {}))
    err = info.value
    assert isinstance(err, symdiff.SymdiffError)
    return err


def check_caret(rendered: str, line: int, col: int, target: str, width: int | None):
    """In ``rendered``, the diagnostic at ``line:col`` shows its source line and puts
    the caret under the first character of ``target`` (underlining ``width``
    columns when given)."""
    lines = rendered.splitlines()
    where = f"{display_file()}:{line}:{col}: "
    heads = [i for i, text in enumerate(lines) if text.startswith(where)]
    assert heads, f"no diagnostic at {where!r} in:\n{rendered}"
    shown, caret = lines[heads[0] + 1], lines[heads[0] + 2]
    assert shown == "    " + CASES_LINES[line - 1].strip()
    assert caret.strip(" ^~") == "" and caret.count("^") == 1, caret
    start = caret.index("^")
    assert caret[:start].strip() == ""
    assert shown[start:].startswith(target), (shown, caret)
    underlined = len(caret.rstrip()) - start
    assert start + underlined <= len(shown)
    if width is not None:
        assert underlined == width, (shown, caret)


def check_diagnostic(
    err: symdiff.TranslationError,
    diag: Diagnostic,
    message: str,
    line_snippet: str,
    target: str | None = None,
    *,
    hint: str,
    notes: tuple[str, ...] = (),
    width: int | None = None,
    line: int | None = None,
) -> None:
    """``diag`` says ``message`` (word for word) at the snippet's position, with the
    right source line, hint and notes, and ``str(err)`` renders it with a caret."""
    line, col = locate(line_snippet, target, line=line)
    target = line_snippet if target is None else target
    assert diag.message == message
    assert (diag.filename, diag.line, diag.col) == (display_file(), line, col)
    assert diag.location == f"{display_file()}:{line}:{col}"
    assert diag.source_line.rstrip("\n") == CASES_LINES[line - 1]
    assert diag.hint == hint
    assert diag.notes == notes
    rendered = str(err)
    assert diag.render() in rendered
    check_caret(rendered, line, col, target, width)
    block = rendered[rendered.index(f"{diag.location}: {message}") :]
    if hint:
        assert f"\n  help: {hint}" in block
    for note in notes:
        assert f"\n  note: {note}" in block


def header(name: str, n: int) -> str:
    return f"cannot translate `{name}`: {n} problem{'s' if n != 1 else ''} found"


def single(err: symdiff.TranslationError, name: str) -> Diagnostic:
    assert str(err).startswith(header(name, 1) + "\n\n"), str(err)
    assert len(err.diagnostics) == 1, str(err)
    return err.diagnostics[0]


def inlined_from(caller: str, call_snippet: str) -> str:
    return f"inlined from `{caller}` at {display_file()}:{locate(call_snippet)[0]}"


# -- unsupported statements -------------------------------------------------------------
def test_while_loop_is_compiled_as_a_loop():
    grad = symdiff.grad(cases.uses_while)
    assert grad(3.0) == 0.25  # 3 -> 1.5 -> 0.75: x / 4
    assert grad(0.5) == 1.0
    assert "while True:" in grad.source


def test_try_block():
    err = translation_error(cases.uses_try, 2.0)
    check_diagnostic(
        err,
        single(err, "uses_try"),
        "`try` blocks are not supported",
        "try:",
        hint="remove it: differentiated code must be plain arithmetic",
        width=len("try:"),
        line=def_line("uses_try") + 1,
    )


def test_with_block():
    err = translation_error(cases.uses_with, 2.0)
    check_diagnostic(
        err,
        single(err, "uses_with"),
        "`with` blocks are not supported, except `np.errstate` and "
        "`warnings.catch_warnings`",
        "with contextlib.suppress(ValueError):",
        "with",
        hint="move it out of the function",
    )


def test_raise_depending_on_values_raises_when_the_kernel_runs():
    # tests/test_raises.py has more; a `raise` inside a loop is reported
    grad = symdiff.grad(cases.uses_raise)
    assert grad(4.0) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="x must be non-negative"):
        grad(-1.0)


def test_global_declaration():
    err = translation_error(cases.uses_global, 2.0)
    check_diagnostic(
        err,
        single(err, "uses_global"),
        "`global` declarations are not supported",
        "global SCALE",
        hint="pass the value as an argument",
        width=len("global SCALE"),
    )


def test_nonlocal_is_reported_once():
    # `nonlocal` is the problem; assigning and reading `total` afterwards must
    # not add a misleading "`total` is used before it is assigned".
    err = translation_error(cases.uses_nonlocal, 2.0)
    check_diagnostic(
        err,
        single(err, "uses_nonlocal"),
        "`nonlocal` declarations are not supported: a local function cannot "
        "change a variable of the function around it",
        "nonlocal total",
        hint="return the new value from the local function and assign it in the "
        "enclosing one (`y = g(y)`)",
        notes=(inlined_from("uses_nonlocal", "return bump(x) + total"),),
    )


def test_no_follow_on_errors_after_an_unsupported_try():
    # `guarded` is assigned inside the rejected `try`; reading it afterwards must
    # not add "`guarded` is used before it is assigned".
    err = translation_error(cases.try_then_use, 2.0)
    check_diagnostic(
        err,
        single(err, "try_then_use"),
        "`try` blocks are not supported",
        "try:",
        hint="remove it: differentiated code must be plain arithmetic",
        line=def_line("try_then_use") + 1,
    )


# -- unsupported expressions ------------------------------------------------------------
def test_lambda_returned_as_a_value():
    # a local function is inlined where it is called: it cannot be a result
    err = translation_error(cases.returns_lambda, 2.0)
    message = (
        "a lambda cannot be returned: symdiff inlines local functions where they "
        "are called"
    )
    hint = "call it here and use its value, or define it at module level"
    check_diagnostic(
        err,
        single(err, "returns_lambda"),
        message,
        "return sq",
        "sq",
        hint=hint,
    )
    line, col = locate("return sq", "sq")
    assert str(err) == (
        f"{header('returns_lambda', 1)}\n\n"
        f"{display_file()}:{line}:{col}: {message}\n"
        "    return sq\n"
        "           ^~\n"
        f"  help: {hint}"
    )


RAISE_MESSAGE = "`raise` inside a loop is not supported"
RAISE_HINT = (
    "set a flag in the loop and raise after it (`if failed: raise ...`), or use "
    "`for ... else: raise ...`"
)
SET_HINT = (
    "use a list comprehension `[... for ...]`: sets have no order to differentiate "
    "along"
)


def test_set_comprehension():
    err = translation_error(cases.uses_set_comprehension, 2.0)
    check_diagnostic(
        err,
        single(err, "uses_set_comprehension"),
        "a set comprehension is not supported",
        "terms = {x**k for k in range(3)}",
        "{x**k for k in range(3)}",
        hint=SET_HINT,
        width=len("{x**k for k in range(3)}"),
    )


def test_all_problems_are_reported_together_in_source_order():
    err = translation_error(cases.many_problems, 1.0, 2.0)
    assert len(err.diagnostics) == 3, str(err)
    assert str(err).startswith(header("many_problems", 3) + "\n\n")
    expected = [
        (
            RAISE_MESSAGE,
            'raise ValueError("too large")',
            "raise",
            RAISE_HINT,
            len('raise ValueError("too large")'),
        ),
        (
            "`*args` parameters are not supported",
            "cube = lambda *v: v[0] ** 3",
            "v:",
            "list the parameters one by one",
            len("v"),
        ),
        (
            "a set comprehension is not supported",
            "powers = {y**p for p in range(4)}",
            "{y**p for p in range(4)}",
            SET_HINT,
            len("{y**p for p in range(4)}"),
        ),
    ]
    for diag, (message, snippet, target, hint, width) in zip(
        err.diagnostics, expected, strict=True
    ):
        check_diagnostic(err, diag, message, snippet, target, hint=hint, width=width)
    # Source order, in the diagnostics list and in the rendered message.
    lines = [d.line for d in err.diagnostics]
    assert lines == sorted(lines) and len(set(lines)) == 3
    rendered = str(err)
    starts = [rendered.index(f"{d.location}: {d.message}") for d in err.diagnostics]
    assert starts == sorted(starts)
    assert rendered.count("\n  help: ") == 3


def test_yield_is_named():
    err = translation_error(cases.uses_yield, 2.0)
    check_diagnostic(
        err,
        single(err, "uses_yield"),
        "`yield` is not supported",
        "yield x * 2.0",
        hint="return a value instead",
        width=len("yield x * 2.0"),
    )


def test_is_none_of_a_number_is_decided_while_tracing():
    # a number is never None, as in Python: the conditional returns x
    assert symdiff.grad(cases.compares_with_is)(2.0) == 1.0


def test_attribute_assignment_message_reads_as_english():
    err = translation_error(cases.assigns_attribute, 2.0)
    diag = single(err, "assigns_attribute")
    line, col = locate("x.cached = 1.0")
    assert (diag.line, diag.col) == (line, col)
    assert diag.hint == "assign to a plain variable name"
    # Not the AST class name ("assigning to a Attribute ...").
    assert "Attribute" not in diag.message, diag.message
    assert "attribute" in diag.message and "not supported" in diag.message


# -- names and calls --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fun", "snippet", "name"),
    [
        (cases.calls_unknown_math, "return math.isqrt(x) * 2.0", "math.isqrt"),
        (cases.calls_unknown_numpy, "return np.spacing(x) + x", "np.spacing"),
    ],
)
def test_unknown_function(fun, snippet, name):
    err = translation_error(fun, 2.0)
    check_diagnostic(
        err,
        single(err, fun.__name__),
        f"unknown function `{name}`",
        snippet,
        name,
        hint=UNKNOWN_FUNCTION_HINT,
        width=len(name),
    )


def test_side_effect_call_is_named():
    # a call for its effect (print is skipped: tests/test_statements.py): the
    # message must name it, and must not suggest assigning its result
    err = translation_error(cases.seeds_the_generator, 2.0)
    diag = single(err, "seeds_the_generator")
    line, col = locate("np.random.seed(0)")
    assert (diag.filename, diag.line, diag.col) == (display_file(), line, col)
    assert "`np.random.seed`" in diag.message, diag.message
    assert "assign its value to a variable" not in diag.hint, diag.hint


def test_unknown_name():
    err = translation_error(cases.uses_unknown_name, 2.0)
    check_diagnostic(
        err,
        single(err, "uses_unknown_name"),
        "name `not_defined_anywhere` is not defined",
        "return x * not_defined_anywhere",
        "not_defined_anywhere",
        hint="define it at module level, or pass it as an argument",
        width=len("not_defined_anywhere"),
    )


def test_variable_used_before_assignment():
    err = translation_error(cases.uses_before_assignment, 2.0)
    check_diagnostic(
        err,
        single(err, "uses_before_assignment"),
        "`b_late` is used before it is assigned",
        "a = b_late + x",
        "b_late",
        hint="assign `b_late` before this line",
        width=len("b_late"),
    )


def test_variable_defined_in_one_branch_only():
    err = translation_error(cases.defined_in_one_branch, 2.0)
    if_line = locate("only_then = x * 2.0")[0] - 1
    assert CASES_LINES[if_line - 1].strip() == "if x > 0.0:"
    check_diagnostic(
        err,
        single(err, "defined_in_one_branch"),
        "`only_then` may be undefined here",
        "return only_then + 1.0",
        "only_then",
        hint=(
            f"it is assigned on only some paths through the `if` at line {if_line}; "
            "assign it before the `if` too"
        ),
        width=len("only_then"),
    )


# -- positions in indented, decorated and lambda definitions ----------------------------
def test_position_in_an_indented_method():
    err = translation_error(cases.Model.energy, 2.0)
    check_diagnostic(
        err,
        single(err, "Model.energy"),
        "unknown function `math.frexp`",
        "return x * math.frexp(x)[1]",
        "math.frexp",
        hint=UNKNOWN_FUNCTION_HINT,
        width=len("math.frexp"),
    )


def test_position_in_a_decorated_function():
    with pytest.raises(symdiff.TranslationError) as info:
        cases.decorated(2.0)
    err = info.value
    assert isinstance(err, symdiff.SymdiffError)
    check_diagnostic(
        err,
        single(err, "decorated"),
        "unknown function `math.frexp`",
        "return x * math.frexp(x)[0]",
        "math.frexp",
        hint=UNKNOWN_FUNCTION_HINT,
        width=len("math.frexp"),
    )


def test_position_in_a_module_level_lambda():
    err = translation_error(cases.module_lambda, 2.0, kind="jit")
    check_diagnostic(
        err,
        single(err, "<lambda>"),
        "a set is not supported",
        "module_lambda = lambda x: {x, x * 2.0}",
        "{x, x * 2.0}",
        hint="use a tuple",
        width=len("{x, x * 2.0}"),
    )


# -- functions without source -----------------------------------------------------------
def test_builtin_function_has_no_source():
    with pytest.raises(symdiff.SourceUnavailableError) as info:
        symdiff.grad(math.sin, target="python")(1.0)
    assert isinstance(info.value, symdiff.SymdiffError)
    assert str(info.value) == (
        "cannot read the source of `sin`: it is a builtin_function_or_method, not a "
        "Python function\n" + NO_SOURCE_HINT
    )


def test_function_made_by_exec_has_no_source():
    namespace: dict = {}
    exec("def made_by_exec(x):\n    return x * x\n", namespace)
    with pytest.raises(symdiff.SourceUnavailableError) as info:
        symdiff.grad(namespace["made_by_exec"], target="python")(1.0)
    assert isinstance(info.value, symdiff.SymdiffError)
    assert str(info.value) == (
        "cannot read the source of `made_by_exec`: it was defined in <string>, "
        "which keeps no source\n" + NO_SOURCE_HINT
    )
    # Not a chained internal error shown to the user as the cause.
    assert "Traceback" not in str(info.value)


# -- outputs ----------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["grad", "value_and_grad"])
def test_grad_of_a_tuple(kind):
    with pytest.raises(symdiff.OutputError) as info:
        getattr(symdiff, kind)(cases.returns_pair, target="python")(2.0)
    err = info.value
    assert isinstance(err, symdiff.SymdiffError) and isinstance(err, TypeError)
    where = f"{display_file()}:{def_line('returns_pair')}"
    assert str(err) == (
        f"{kind} needs `returns_pair` ({where}) to return one number, but it returns "
        "a tuple of 2 values\n"
        "  help: differentiate one of them, or return `(value, aux)` and pass "
        "has_aux=True"
    )


@pytest.mark.parametrize(
    ("fun", "what"),
    [(cases.returns_scalar, "one value"), (cases.returns_triple, "a tuple of 3")],
)
def test_has_aux_needs_a_pair(fun, what):
    with pytest.raises(symdiff.OutputError) as info:
        symdiff.grad(fun, has_aux=True, target="python")(2.0)
    err = info.value
    assert isinstance(err, symdiff.SymdiffError)
    where = f"{display_file()}:{def_line(fun.__name__)}"
    assert str(err) == (
        f"grad with has_aux=True needs `{fun.__name__}` ({where}) to return a pair "
        f"`(value, aux)`; it returns {what}"
    )


@pytest.mark.parametrize("kind", ["grad", "value_and_grad"])
def test_has_aux_with_a_tuple_as_the_value(kind):
    # has_aux=True was passed: the value, not the whole output, is what is wrong.
    with pytest.raises(symdiff.OutputError) as info:
        getattr(symdiff, kind)(cases.value_is_a_pair, has_aux=True, target="python")(
            2.0
        )
    where = f"{display_file()}:{def_line('value_is_a_pair')}"
    assert str(info.value) == (
        f"{kind} with has_aux=True needs the value that `value_is_a_pair` ({where}) "
        "returns first, in `(value, aux)`, to be one number, but the value is a "
        "tuple of 2 values\n"
        "  help: differentiate one of them, and return the others in aux"
    )


@pytest.mark.parametrize(
    ("fun", "kind_name"),
    [(cases.returns_string, "str"), (cases.returns_none, "NoneType")],
)
def test_grad_of_a_non_number_names_what_it_returns(fun, kind_name):
    with pytest.raises(symdiff.OutputError) as info:
        symdiff.grad(fun, target="python")(2.0)
    assert isinstance(info.value, symdiff.SymdiffError)
    message = str(info.value)
    assert f"`{fun.__name__}`" in message
    assert kind_name in message, message
    assert "tuple of 0" not in message, message


def test_jit_of_a_non_number_names_the_function_not_internals():
    with pytest.raises(symdiff.OutputError) as info:
        symdiff.jit(cases.returns_string, target="python")(2.0)
    message = str(info.value)
    assert "Static" not in message, message  # an internal class name
    assert "`returns_string`" in message, message
    assert "str" in message, message


def test_falling_off_the_end():
    # The diagnostic points at the last statement, here falls_off_end's `if`.
    err = translation_error(cases.falls_off_end, 2.0)
    check_diagnostic(
        err,
        single(err, "falls_off_end"),
        "`falls_off_end` can reach its end without returning a value",
        "if x > 0.0:",
        hint="end every path with `return ...`",
        line=def_line("falls_off_end") + 1,
    )


def test_no_return_at_all():
    err = translation_error(cases.never_returns, 2.0)
    check_diagnostic(
        err,
        single(err, "never_returns"),
        "`never_returns` can reach its end without returning a value",
        "y = x * 2.0",
        hint="end every path with `return ...`",
        width=len("y = x * 2.0"),
        line=def_line("never_returns") + 1,
    )


# -- arguments at call time (default cpu target: raised before compiling) ---------------
def test_too_few_arguments():
    f = symdiff.grad(cases.two_args)
    with pytest.raises(symdiff.ArgumentError) as info:
        f(1.0)
    assert isinstance(info.value, symdiff.SymdiffError)
    assert isinstance(info.value, TypeError)
    assert str(info.value) == "two_args(x, y): missing a required argument: 'y'"


def test_too_many_arguments():
    with pytest.raises(symdiff.ArgumentError) as info:
        symdiff.grad(cases.two_args)(1.0, 2.0, 3.0)
    assert isinstance(info.value, symdiff.SymdiffError)
    assert str(info.value) == "two_args(x, y): too many positional arguments"


def test_unexpected_keyword_argument():
    with pytest.raises(symdiff.ArgumentError) as info:
        symdiff.grad(cases.two_args)(1.0, 2.0, z=3.0)
    assert isinstance(info.value, symdiff.SymdiffError)
    assert str(info.value) == "two_args(x, y): got an unexpected keyword argument 'z'"


def test_unexpected_keyword_argument_and_a_missing_one():
    # inspect reports the missing `y` and stops: the unknown `z` must be named too.
    expected = (
        "two_args(x, y): got an unexpected keyword argument 'z'; also missing a "
        "required argument: 'y'"
    )
    with pytest.raises(symdiff.ArgumentError) as info:
        symdiff.grad(cases.two_args)(1.0, z=2.0)
    assert str(info.value) == expected
    vectorized = symdiff.vectorize(symdiff.grad(cases.two_args))
    with pytest.raises(symdiff.ArgumentError) as info:
        vectorized(np.ones(2), z=np.ones(2))
    assert str(info.value) == expected
    with pytest.raises(symdiff.ArgumentError) as info:
        symdiff.grad(cases.two_args)(1.0, z=2.0, w=3.0)
    assert str(info.value) == (
        "two_args(x, y): got unexpected keyword arguments 'z', 'w'; also missing a "
        "required argument: 'y'"
    )


@pytest.mark.parametrize(
    ("value", "kind_name"),
    [
        (b"2.0", "bytes"),
        (np.array([2.0j, 3.0]), "1-d array of complex128"),
        (np.array(2.0j), "0-d array of complex128"),
    ],
)
def test_argument_of_a_wrong_type(value, kind_name):
    with pytest.raises(symdiff.ArgumentError) as info:
        symdiff.grad(cases.square)(value)
    assert isinstance(info.value, symdiff.SymdiffError)
    assert str(info.value) == (
        f"argument `x` of `square` is a `{kind_name}`; {SCALARS_ONLY}"
    )


def test_a_string_where_a_number_is_needed():
    # strings configure a function (``reduction="mean"``): not differentiated...
    with pytest.raises(symdiff.ArgumentError) as info:
        symdiff.grad(cases.square)("2.0")
    assert str(info.value) == (
        "cannot differentiate with respect to `x`: it is a `str`, not a number or "
        "an array"
    )
    # ...and used as a number, reported where
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(cases.two_args)(1.0, "2.0")
    assert "the right operand is a `str`, where a number is needed" in str(info.value)


def test_array_output_of_grad():
    with pytest.raises(symdiff.OutputError) as info:
        symdiff.grad(cases.square)(np.array([2.0, 3.0]))
    assert str(info.value).endswith(
        f"errors_cases.py:{cases.square.__code__.co_firstlineno}) "
        "to return one number, but it returns an array of shape (x.shape[0],)\n"
        "  help: reduce it to a number (np.sum, np.mean, a norm), or use "
        "jacobian/vjp for array outputs"
    )


def test_wrong_type_after_a_compiled_call():
    # A kernel cached for floats must not let a later bad argument through.
    f = symdiff.grad(cases.square)
    assert f(3.0) == 6.0
    with pytest.raises(symdiff.ArgumentError) as info:
        f(b"3.0")
    assert isinstance(info.value, symdiff.SymdiffError)
    assert str(info.value) == f"argument `x` of `square` is a `bytes`; {SCALARS_ONLY}"
    with pytest.raises(symdiff.ArgumentError):
        f(3.0, 4.0)


def test_differentiating_a_bool_argument():
    with pytest.raises(symdiff.ArgumentError) as info:
        symdiff.grad(cases.flag_scale, argnums=1)(2.0, True)
    assert (
        str(info.value) == "cannot differentiate with respect to `flag`: it is a bool"
    )
    with pytest.raises(symdiff.ArgumentError) as info:
        symdiff.grad(cases.square)(np.bool_(True))
    assert str(info.value) == "cannot differentiate with respect to `x`: it is a bool"


@pytest.mark.parametrize("argnums", [2, -3, (0, 5)])
def test_argnums_out_of_range(argnums):
    with pytest.raises(symdiff.ArgumentError) as info:
        symdiff.grad(cases.two_args, argnums=argnums)
    assert isinstance(info.value, symdiff.SymdiffError)
    assert str(info.value) == (
        f"argnums {argnums!r} is out of range for `two_args`, which takes 2 arguments"
    )


@pytest.mark.parametrize(
    ("argnums", "message"),
    [
        (1.0, "argnums must be an int or a tuple of ints, got 1.0"),
        ("0", "argnums must be an int or a tuple of ints, got '0'"),
        (True, "argnums must be an int or a tuple of ints, got True"),
        ((), "argnums must be an int or a non-empty tuple of ints, got ()"),
        ((0, 1.0), "argnums must be an int or a non-empty tuple of ints, got (0, 1.0)"),
    ],
)
def test_argnums_of_a_bad_type(argnums, message):
    for transform in (symdiff.grad, symdiff.value_and_grad):
        with pytest.raises(symdiff.ArgumentError) as info:
            transform(cases.two_args, argnums=argnums)
        assert isinstance(info.value, symdiff.SymdiffError)
        assert str(info.value) == message


def test_checkpoint_of_a_bad_value_is_an_argument_error():
    for bad in (0, -1, "a"):
        with pytest.raises(symdiff.ArgumentError) as info:
            symdiff.grad(cases.two_args, checkpoint=bad)
        assert str(info.value) == (
            "checkpoint must be a positive int (iterations between saved loop "
            f"states), got {bad!r}"
        )


# -- what is passed as the function ------------------------------------------------------
@pytest.mark.parametrize("kind", ["grad", "value_and_grad", "jit", "jacobian"])
def test_none_as_the_function(kind):
    # Omitting the function gives a decorator; an explicit None is a mistake.
    with pytest.raises(symdiff.ArgumentError) as info:
        getattr(symdiff, kind)(None)
    assert str(info.value) == (
        f"{kind} expects a function, got None\n"
        f"  help: pass one, symdiff.{kind}(f, ...), or decorate it with "
        f"@symdiff.{kind} or @symdiff.{kind}(...)"
    )
    with pytest.raises(symdiff.ArgumentError, match="got None"):
        symdiff.vectorize(None)


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (
            lambda: symdiff.vectorize(symdiff.hvp),
            "vectorize expects a function you wrote or a transform of one; got "
            "`symdiff.hvp`, one of symdiff's own functions\n"
            "  help: pass a transform (symdiff.vectorize(symdiff.grad(f)), ...) or a "
            "user function (symdiff.vectorize(f))",
        ),
        (
            lambda: symdiff.grad(symdiff.jvp),
            "grad expects a function you wrote or a transform of one; got "
            "`symdiff.jvp`, one of symdiff's own functions\n"
            "  help: pass a transform (symdiff.grad(symdiff.grad(f)), ...) or a "
            "user function (symdiff.grad(f))",
        ),
        (
            lambda: symdiff.vectorize(symdiff.grad(argnums=1)),
            "vectorize expects a function you wrote or a transform of one; got a "
            "decorator returned by a symdiff transform called without a function\n"
            "  help: pass a transform (symdiff.vectorize(symdiff.grad(f)), ...) or a "
            "user function (symdiff.vectorize(f))",
        ),
    ],
    ids=["vectorize-hvp", "grad-jvp", "vectorize-decorator"],
)
def test_symdiffs_own_functions_are_not_user_functions(make, what):
    # Not a TranslationError pointing into symdiff/api.py.
    with pytest.raises(symdiff.ArgumentError) as info:
        make()
    assert str(info.value) == what


# -- .source before the first call -------------------------------------------------------
def test_source_of_an_array_function_before_any_call():
    # Before a call the arguments are taken to be floats, and `X @ W` of floats
    # fails: the help must say that, not "multiply by a number with `*`".
    f = symdiff.grad(cases.array_layer)
    with pytest.raises(symdiff.TranslationError) as info:
        f.source
    check_diagnostic(
        info.value,
        single(info.value, "array_layer"),
        "matmul: an operand is a scalar",
        "H = np.tanh(X @ W + b)",
        "X @ W",
        hint=(
            "before its first call, `.source` (.ir, .kernel) compiles `array_layer` "
            "for float arguments (W, b, X), and this needs an array: call "
            "`array_layer` once with its arrays, then `.source` shows the kernel of "
            "that call"
        ),
        width=len("X @ W"),
    )
    f(np.ones((3, 2)), np.ones(2), np.ones((4, 3)))
    assert "def array_layer_grad(W, b, X):" in f.source


def test_source_before_any_call_keeps_other_errors():
    # `yield` fails for arrays too: its own help stays.
    with pytest.raises(symdiff.TranslationError) as info:
        symdiff.grad(cases.uses_yield).source
    assert "help: return a value instead" in str(info.value)
    assert "before its first call" not in str(info.value)


# -- parameters symdiff cannot take -----------------------------------------------------
def test_star_args_parameter():
    err = translation_error(cases.star_args, 1.0, 2.0)
    check_diagnostic(
        err,
        single(err, "star_args"),
        "`*args` parameters are not supported",
        "def star_args(x, *rest):",
        "rest",
        hint="list the parameters one by one",
        width=len("rest"),
    )


def test_keyword_only_parameter():
    grad = symdiff.grad(cases.keyword_only)
    assert grad(1.0, scale=2.0) == 2.0
    with pytest.raises(symdiff.ArgumentError, match="too many positional arguments"):
        grad(1.0, 2.0)


# -- helpers ----------------------------------------------------------------------------
def test_recursion_in_a_helper():
    err = translation_error(cases.calls_recursive, 2.0)
    check_diagnostic(
        err,
        single(err, "calls_recursive"),
        "recursive call of `fact_like` cannot be inlined",
        "return x * fact_like(x - 1.0)",
        "fact_like(x - 1.0)",
        hint="rewrite the recursion as a loop",
        notes=(inlined_from("calls_recursive", "return fact_like(x) + x"),),
        width=len("fact_like(x - 1.0)"),
    )


def test_direct_recursion():
    err = translation_error(cases.fact_like, 2.0)
    check_diagnostic(
        err,
        single(err, "fact_like"),
        "recursive call of `fact_like` cannot be inlined",
        "return x * fact_like(x - 1.0)",
        "fact_like(x - 1.0)",
        hint="rewrite the recursion as a loop",
    )


def test_error_inside_an_inlined_helper():
    err = translation_error(cases.calls_bad_helper, 3.0)
    check_diagnostic(
        err,
        single(err, "calls_bad_helper"),
        RAISE_MESSAGE,
        'raise ValueError("negative")',
        "raise",
        hint=RAISE_HINT,
        notes=(inlined_from("calls_bad_helper", "return helper_with_while(x) * 2.0"),),
    )
    note_line = locate("return helper_with_while(x) * 2.0")[0]
    assert str(err).endswith(
        f"\n  note: inlined from `calls_bad_helper` at {display_file()}:{note_line}"
    )


def test_error_two_helpers_deep_lists_the_call_chain():
    err = translation_error(cases.calls_helper_twice_removed, 3.0)
    check_diagnostic(
        err,
        single(err, "calls_helper_twice_removed"),
        RAISE_MESSAGE,
        'raise ValueError("negative")',
        "raise",
        hint=RAISE_HINT,
        notes=(
            inlined_from("middle_helper", "return helper_with_while(u) + 1.0"),
            inlined_from("calls_helper_twice_removed", "return middle_helper(x) * x"),
        ),
    )


# -- each problem once ------------------------------------------------------------------
def test_problem_in_an_unrolled_loop_is_reported_once():
    err = translation_error(cases.lambda_in_unrolled_loop, 2.0)
    check_diagnostic(
        err,
        single(err, "lambda_in_unrolled_loop"),
        "`*args` parameters are not supported",
        "f = lambda *z: z[0] + i",
        "z:",
        hint="list the parameters one by one",
        width=len("z"),
    )


def test_helper_inlined_twice_on_one_line_is_reported_once():
    err = translation_error(cases.helper_twice_on_one_line, 2.0)
    check_diagnostic(
        err,
        single(err, "helper_twice_on_one_line"),
        RAISE_MESSAGE,
        'raise ValueError("negative")',
        "raise",
        hint=RAISE_HINT,
        notes=(
            inlined_from(
                "helper_twice_on_one_line",
                "return helper_with_while(x) + helper_with_while(x * 2.0)",
            ),
        ),
    )


def test_range_of_an_argument_is_a_loop_of_that_many_trips():
    grad = symdiff.grad(cases.range_of_argument)
    assert grad(2.0, 3) == 3.0
    assert grad(2.0, 0) == 0.0
    assert grad(2.0, 1000) == 1000.0
    assert "for i_1 in range(" in grad.source


# -- the exception hierarchy --------------------------------------------------------
def test_every_error_is_a_symdiff_error():
    for cls in (
        symdiff.TranslationError,
        symdiff.SourceUnavailableError,
        symdiff.ArgumentError,
        symdiff.OutputError,
    ):
        assert issubclass(cls, symdiff.SymdiffError)
    assert issubclass(symdiff.ArgumentError, TypeError)
    assert issubclass(symdiff.OutputError, TypeError)


def shrinking_sines(x):
    s = x
    for _ in range(20):  # a loop node: its gradient tapes `s`
        s = s * 0.9 + math.sin(s)
    return s


def test_latex_of_a_taped_loop_says_it_is_a_loop():
    with pytest.raises(symdiff.OutputError, match="this kernel runs a loop"):
        symdiff.grad(shrinking_sines).latex()


def repeats_x(x, n):
    s = 0.0
    for _ in range(n):
        s += x
    return s


def test_a_differentiated_int_as_a_range_bound_is_explained():
    err = translation_error(repeats_x, 1.0, 3, argnums=(0, 1))
    (diag,) = err.diagnostics
    assert diag.message == "`range` bounds must be integers"
    assert "(`n` is a float here; an int argument listed in argnums" in diag.hint
