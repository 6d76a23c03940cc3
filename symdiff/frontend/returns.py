"""``return`` inside a loop, rewritten into a ``break`` and a ``return`` after it.

Each loop whose body returns (``for``/``while``, innermost first) becomes::

    returned = False                   # fresh names, unused in the function
    result = 0
    for ...:
        ...
        result = value                 # was: return value
        returned = True
        break
    if returned:                       # `return result` alone after `while True`
        return result

which the loop machinery lowers like any loop with a ``break`` (state, flags,
if-conversion).  A returned tuple ``return a, b`` gets one variable per item.
``result`` starts as the int 0 and is widened to the returned value's dtype and
shape by the loop machinery.  A loop nested in another returns through it: the
``if returned: return result`` after the inner loop is a return inside the outer
loop, rewritten in turn.  Returns in nested ``def``s and lambdas belong to them;
returns in a loop's ``else`` belong to the code around the loop.  The rewrite
walks the tree with stacks (no recursion) and keeps the original positions, so
messages still point at the user's ``return``.
"""

from __future__ import annotations

import ast

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.While)


#: The variables the rewrite made, per id of the function's tree.
GENERATED: dict[int, set[str]] = {}


def rewrite_loop_returns(tree: ast.FunctionDef) -> ast.FunctionDef:
    """``tree`` (freshly parsed) with every ``return`` inside a loop rewritten in
    place; a loop with a bare ``return`` among its returns is left for the
    lowering to report."""
    if not any(_returns_in(loop) for loop in _loops(tree)):
        return tree
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    taken |= {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
    for loop in reversed(_loops(tree)):  # innermost first
        returns = _returns_in(loop)
        if returns and all(r.value is not None for r in returns):
            _rewrite(tree, loop, returns, taken)
    return tree


def _loops(tree: ast.AST) -> list[ast.For | ast.While]:
    """The loops of every scope in ``tree``, outer before inner (pre-order)."""
    found: list[ast.For | ast.While] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, _LOOPS):
            found.append(node)
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return found


def _returns_in(loop: ast.For | ast.While) -> list[ast.Return]:
    """The returns that leave ``loop`` from its body: not those of nested
    scopes, nor of the bodies of nested loops (rewritten before it)."""
    found: list[ast.Return] = []
    stack: list[ast.AST] = list(loop.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            found.append(node)
        elif isinstance(node, _SCOPES):
            continue
        elif isinstance(node, _LOOPS):
            stack.extend(node.orelse)  # its body returns through itself
        else:
            stack.extend(ast.iter_child_nodes(node))
    return found


def _fresh(stem: str, taken: set[str]) -> str:
    name, k = stem, 1
    while name in taken:
        name, k = f"{stem}_{k}", k + 1
    taken.add(name)
    return name


def _rewrite(
    root: ast.AST,
    loop: ast.For | ast.While,
    returns: list[ast.Return],
    taken: set[str],
) -> None:
    widths = {
        len(r.value.elts) if isinstance(r.value, ast.Tuple) else 0 for r in returns
    }  # type: ignore[union-attr]
    width = widths.pop() if len(widths) == 1 else 0  # mixed kinds: one value
    flag = _fresh("returned", taken)
    ours: set[int] = set()  # the breaks that stand for returns
    results = [_fresh("result", taken) for _ in range(width or 1)]
    # (the result starts as 0, read only once a return set it: its branches may
    # differ in shape, GENERATED tells the lowering)
    GENERATED.setdefault(id(root), set()).update((flag, *results))
    for ret in returns:
        value = ret.value
        assert value is not None
        if width:
            assigns = [
                ast.Assign([ast.Name(name, ast.Store())], item)
                for name, item in zip(results, value.elts, strict=True)  # type: ignore[attr-defined]
            ]
        else:
            assigns = [ast.Assign([ast.Name(results[0], ast.Store())], value)]
        leave = ast.Break()
        ours.add(id(leave))
        block = [
            *assigns,
            ast.Assign([ast.Name(flag, ast.Store())], ast.Constant(True)),
            leave,
        ]
        for stmt in block:
            ast.copy_location(stmt, ret)
        _replace(loop, ret, block)
    first = returns[0]
    before = [ast.Assign([ast.Name(flag, ast.Store())], ast.Constant(False))]
    before += [ast.Assign([ast.Name(r, ast.Store())], ast.Constant(0)) for r in results]
    loaded = [ast.Name(r, ast.Load()) for r in results]
    after: ast.stmt = ast.Return(ast.Tuple(loaded, ast.Load()) if width else loaded[0])
    forever = isinstance(loop, ast.While) and _always_true(loop.test)
    if not (forever and not _breaks_of(loop, ours)):
        after = ast.If(ast.Name(flag, ast.Load()), [after], [])
    for stmt in (*before, after):
        ast.copy_location(stmt, first)
    ast.fix_missing_locations(after)
    for stmt in before:
        ast.fix_missing_locations(stmt)
    _insert_around(root, loop, before, [after])


def _always_true(test: ast.expr) -> bool:
    return isinstance(test, ast.Constant) and bool(test.value)


def _breaks_of(loop: ast.For | ast.While, ours: set[int]) -> bool:
    """Whether ``loop`` has a ``break`` of its own, not one of ``ours`` (the
    returns'); a ``break`` in a nested loop's ``else`` leaves ``loop`` too."""
    stack: list[ast.AST] = list(loop.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Break) and id(node) not in ours:
            return True
        if isinstance(node, _LOOPS):
            stack.extend(node.orelse)
        elif not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))
    return False


def _replace(loop: ast.AST, old: ast.stmt, new: list[ast.stmt]) -> None:
    """Replace statement ``old`` by ``new`` in the statement list holding it."""
    stack = [loop]
    while stack:
        node = stack.pop()
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if isinstance(block, list) and any(s is old for s in block):
                k = next(i for i, s in enumerate(block) if s is old)
                block[k : k + 1] = new
                return
        stack.extend(ast.iter_child_nodes(node))
    raise AssertionError("return statement not found in its loop")


def _insert_around(
    root: ast.AST, loop: ast.stmt, before: list[ast.stmt], after: list[ast.stmt]
) -> None:
    """Put ``before`` and ``after`` around ``loop`` in the block holding it."""
    stack = [root]
    while stack:
        node = stack.pop()
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and any(s is loop for s in block):
                k = next(i for i, s in enumerate(block) if s is loop)
                block[k : k + 1] = [*before, loop, *after]
                return
        stack.extend(ast.iter_child_nodes(node))
    raise AssertionError("loop not found in the function")
