"""The CUDA form of an array program: a host function that launches kernels.

:class:`~symdiff.backend.loops.ArrayKernel` prints an array program as one
function of loop nests.  With ``target="cuda"`` the same plan is printed as a
*host* function (plain Python) and one ``@cuda.jit`` kernel per loop nest, in one
module::

    @cuda.jit
    def rosen_grad_k1(x, x_bar):
        for i in range(cuda.grid(1), x.shape[0] - 1, cuda.gridsize(1)):
            t0 = 200.0 * (x[i + 1] - x[i] ** 2)
            cuda.atomic.add(x_bar, i, -(2 * (1 - x[i])) - t0 * (2 * x[i]))
            cuda.atomic.add(x_bar, i + 1, t0)


    def rosen_grad(x):
        x_bar = full((x.shape[0],), 0.0, np.float64)
        launch(rosen_grad_k1, x.shape[0] - 1, x, x_bar)
        return x_bar

* A loop nest becomes a grid-stride kernel over its flattened index space; its
  parameters are the names its body reads from the host function (found by
  parsing the body, so nothing is passed that is not used).
* Element-wise values are written at the thread's own position.  Sums into one
  place (a full reduction, ``x_bar[i + 1] += ...`` scatters, sums of shifted
  slices) are atomic adds; maxima and minima are atomic too.  A nest with a
  product reduction (no atomic exists) runs on one thread.
* Whole-array statements get kernels of their own (``np.dot``: one thread per
  result element; concatenation and indexed updates: one per element written).
* Scalars, shape checks, loops with a carried state (their bodies launch the
  kernels of each iteration) and the array allocations run on the host.  Scalar
  results of reductions are read back (``s = s[0]``) where the host needs them.

The module is deterministic text, like every generated kernel; ``THREADS`` and
``BLOCKS`` set the launch grid (smaller in Numba's CUDA simulator).
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterable, Sequence

from symdiff.backend.printer import CUDA_HELPERS, TEMPLATES
from symdiff.errors import ArgumentError
from symdiff.opt.schedule import _Namer

#: The module's own globals, which no host function may be named.
MODULE_NAMES = frozenset(("cuda", "np", "math", "THREADS", "BLOCKS"))

#: numba-cuda's dtype spelling on the host.
DTYPE = {"float64": "np.float64", "int64": "np.int64", "bool": "np.bool_"}

#: Threads per block and the most blocks of a launch (a grid-stride loop covers
#: the rest), as the module's ``THREADS`` and ``BLOCKS``.
THREADS = 256
BLOCKS = 4096

_GLOBALS = frozenset(dir(builtins)) | {"cuda", "math", "np"}

_HOST_HELPERS = {
    "launch": '''def {launch}(kernel, size, *args):
    """Run ``kernel`` over ``size`` elements (each thread strides through them)."""
    if size > 0:
        kernel[min(-(-size // THREADS), BLOCKS), THREADS](*args)''',
    "full": '''@cuda.jit
def {full}_kernel(out, value):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        out[i] = value


def {full}(shape, value, dtype):
    """A new device array of ``shape`` with every element ``value``."""
    out = cuda.device_array(shape, dtype)
    if out.size:
        {launch}({full}_kernel, out.size, out.reshape(out.size), value)
    return out''',
    "copy": '''def {copy}(a):
    """A new device array with the elements of device array ``a``."""
    out = cuda.device_array(a.shape, a.dtype)
    out.copy_to_device(a)
    return out''',
}
_NEEDS = {"launch": (), "full": ("launch",), "copy": ()}


class DeviceProgram:
    """What printing an array program for CUDA collects besides the host
    function: its kernels, in launch order, and the helpers the host uses."""

    def __init__(self, namer: _Namer) -> None:
        self.namer = namer
        namer.taken.update(("cuda", "THREADS", "BLOCKS"))
        self.base = "kernel"
        self.kernels: list[str] = []
        self.helpers: dict[str, str] = {}  # helper -> its name in the module
        self.math = False

    def helper(self, which: str) -> str:
        """The module name of host helper ``which`` (``launch``, ``full``,
        ``copy``), added to the module on first use."""
        for dep in _NEEDS[which]:
            self.helper(dep)
        if which not in self.helpers:
            name = self.namer.fresh(which)
            while which == "full" and f"{name}_kernel" in self.namer.taken:
                name = self.namer.fresh(which)
            if which == "full":
                self.namer.taken.add(f"{name}_kernel")
            self.helpers[which] = name
        return self.helpers[which]

    def empty(self, shape: str, dtype: str) -> str:
        return f"cuda.device_array({shape}, {DTYPE[dtype]})"

    def full(self, shape: str, value: str, dtype: str) -> str:
        return f"{self.helper('full')}({shape}, {value}, {DTYPE[dtype]})"

    def copy(self, array: str) -> str:
        return f"{self.helper('copy')}({array})"

    def kernel(
        self,
        loops: Sequence[tuple[str, str]],
        body: Sequence[str],
        serial: str | None = None,
        where: str = "",
    ) -> str:
        """A kernel running ``body`` once per position of ``loops`` (index name,
        length text; outermost first) and the host statement launching it.
        ``serial``: why the positions must run one after another, on one thread.
        ``where``: what the kernel computes, for its comment."""
        name = self.namer.fresh(f"{self.base}_k{len(self.kernels) + 1}")
        ind = "    "
        lines: list[str] = []
        depth = 1
        if len(loops) == 1:
            size = loops[0][1]
        else:
            size = " * ".join(_paren(d) for _, d in loops) or "1"
        if serial is not None or not loops:
            lines.append(f"{ind}if cuda.grid(1) == 0:")
            depth = 2
            for var, dim in loops:
                lines.append(f"{ind * depth}for {var} in range({dim}):")
                depth += 1
            size = "1"
        elif len(loops) == 1:
            var, dim = loops[0]
            stride = f"range(cuda.grid(1), {dim}, cuda.gridsize(1))"
            lines.append(f"{ind}for {var} in {stride}:")
            depth = 2
        else:
            flat = self.namer.fresh("flat")
            lines.append(
                f"{ind}for {flat} in range(cuda.grid(1), {size}, cuda.gridsize(1)):"
            )
            depth = 2
            for k, (var, _) in enumerate(loops):
                inner = " * ".join(_paren(d) for _, d in loops[k + 1 :])
                text = flat if not inner else f"{flat} // {_paren(inner)}"
                if k > 0:
                    text = f"{text} % {_paren(loops[k][1])}"
                lines.append(f"{ind * depth}{var} = {text}")
        lines += [f"{ind * depth}{line}" for line in body]
        text = "\n".join(lines)
        params = _free_names(text, self.helpers.values())
        text, helpers = self._device_helpers(text, name, where)
        head = ["@cuda.jit", f"def {name}({', '.join(params)}):"]
        if where or serial:
            note = where + (f" (one thread: {serial})" if serial else "")
            head.append(f"{ind}# {note.strip()}")
        self.kernels.append("\n".join([*head, *helpers, text]))
        return f"{self.helper('launch')}({', '.join([name, size, *params])})"

    def _device_helpers(
        self, text: str, name: str, where: str
    ) -> tuple[str, list[str]]:
        """NumPy calls in a kernel body become inner helper functions (numba-cuda
        compiles no NumPy function); any other NumPy call is an error."""
        taken = set(self.namer.taken)
        text, defs, left = numpy_helpers(text, taken)
        helpers = [f"    {line}" for line in defs if line]
        self.math = self.math or any("math." in line for line in defs)
        if left:
            raise ArgumentError(
                f"cannot run on CUDA: the kernel {name} ({where}) calls "
                f"{', '.join(f'np.{f}' for f in left)}, which numba-cuda does not "
                "compile. Use target='cpu' or 'parallel'"
            )
        if "math." in text:
            self.math = True
        return text, helpers

    def module(self, header: Sequence[str], host: str) -> str:
        """The module: header comments, imports, launch settings, helpers,
        kernels, then the host function ``host`` (its text)."""
        imports = ["import numpy as np", "from numba import cuda"]
        if self.math or "math." in host:
            imports.insert(0, "import math")
        parts = [f"THREADS = {THREADS}\nBLOCKS = {BLOCKS}"]
        for which in ("launch", "full", "copy"):
            if which in self.helpers:
                parts.append(_HOST_HELPERS[which].format(**self.helpers))
        parts += self.kernels
        parts.append(host.rstrip("\n"))
        top = [f"# {h}" for h in header] + imports
        return "\n".join(top) + "\n\n\n" + "\n\n\n".join(parts) + "\n"


def numpy_helpers(text: str, taken: set[str]) -> tuple[str, list[str], list[str]]:
    """``text`` (code for a CUDA kernel) with each NumPy call numba-cuda cannot
    compile replaced by an inner helper (``printer.CUDA_HELPERS``; its name is not
    in ``taken`` nor in ``text``, and is added to ``taken``): the new text, the
    helpers' lines (``def sign(x): ...``, blank-separated) and the NumPy functions
    still called (to report)."""
    helpers: list[str] = []
    used = set(re.findall(r"[A-Za-z_]\w*", text))
    for op, (params, body) in CUDA_HELPERS.items():
        call = TEMPLATES[op][0].split("{")[0]  # "np.sign("
        if call not in text:
            continue
        name = op
        while name in taken or name in used:
            name += "_"
        taken.add(name)
        text = text.replace(call, f"{name}(")
        helpers += [f"def {name}({params}):  # {call[:-1]}", f"    {body}", ""]
    left = sorted(set(re.findall(r"\bnp\.([A-Za-z_]\w*)", text)))
    return text, helpers, left


def _paren(text: str) -> str:
    return text if re.fullmatch(r"[\w.\[\]]+", text) else f"({text})"


def _free_names(text: str, module: Iterable[str] = ()) -> list[str]:
    """The names a kernel body reads but does not assign (its parameters), in
    order of first use."""
    tree = ast.parse("def _k():\n" + text)
    stored: set[str] = set()
    loads: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store):
                stored.add(node.id)
            else:
                loads.append((node.lineno, node.col_offset, node.id))
    skip = _GLOBALS | set(module)
    out: list[str] = []
    for _, _, name in sorted(loads):
        if name not in stored and name not in skip and name not in out:
            out.append(name)
    return out


__all__ = [
    "BLOCKS",
    "DTYPE",
    "MODULE_NAMES",
    "THREADS",
    "DeviceProgram",
    "numpy_helpers",
]
