"""A function whose file changed after its module was imported: symdiff reads
the file, so it must notice when the text at the function's line is another
function (it compiled that one's body before), and must not mistake a wrapped
function for one."""

from __future__ import annotations

import functools
import importlib
import sys

import pytest

import symdiff


def test_a_file_edited_after_import_is_reported(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "edited_after_import.py"
    path.write_text(
        "def f(x):\n    return x * x\n\n\ndef g(x):\n    return x * x * x\n"
    )
    module = importlib.import_module("edited_after_import")
    try:
        # an import added at the top, saved without reloading: `def f` now sits
        # on the line Python recorded for `g`
        path.write_text(
            "import math\n\n\ndef f(x):\n    return x * x\n\n\n"
            "def g(x):\n    return x * x * x\n"
        )
        with pytest.raises(symdiff.SourceUnavailableError) as info:
            symdiff.grad(module.g, target="python")(2.0)
        text = str(info.value)
        assert "changed since it was imported" in text
        assert "line 5 now holds `def f(x)`" in text
        assert "importlib.reload" in text
        importlib.reload(module)
        assert symdiff.grad(module.g, target="python")(2.0) == 12.0
    finally:
        sys.modules.pop("edited_after_import", None)


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)

    return wrapper


@logged
def cube(x):
    return x * x * x


def test_a_wrapped_function_is_read_as_the_function_it_wraps():
    assert symdiff.grad(cube, target="python")(2.0) == 12.0
