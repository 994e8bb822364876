"""``@T.prim_func``: parse a Python function into a PrimFunc."""

from __future__ import annotations

import ast
import inspect
import textwrap

from ..errors import ScriptError, Span, api_boundary


def _python_scope(fn) -> dict:
    scope = dict(fn.__globals__)
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                scope[name] = cell.cell_contents
            except ValueError:  # an unfilled cell
                pass
    return scope


@api_boundary
def prim_func(fn):
    """Parse a Python function into a tilewise ``PrimFunc`` (the kernel as IR)."""
    from .parser import parse_function

    if not inspect.isfunction(fn):
        raise ScriptError(f"@T.prim_func decorates a Python function, not "
                          f"{type(fn).__name__} {fn!r:.60}",
                          hint="write the kernel as `@T.prim_func` over `def kernel(...):`")
    where = Span(fn.__code__.co_filename, fn.__code__.co_firstlineno)
    if fn.__name__ == "<lambda>":
        raise ScriptError("@T.prim_func needs a `def` function, not a lambda", where,
                          hint="write the kernel as `@T.prim_func` over `def kernel(...):`")
    try:
        lines, first = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn) or "<unknown>"
    except (OSError, TypeError) as e:
        raise ScriptError(f"cannot read the source of {fn.__name__!r}: {e}",
                          hint="define kernels in a file or pass the text to "
                               "tilewise.script.from_source") from None
    raw = "".join(lines)
    src = textwrap.dedent(raw)
    shift = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    try:
        tree = ast.parse(src)
        fdef = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    except (SyntaxError, StopIteration, RecursionError, MemoryError):
        raise ScriptError(f"cannot find the definition of {fn.__name__!r} in its source", where,
                          hint="define the kernel with `def` at the start of a line of a "
                          "file, or pass the text to tilewise.script.from_source") from None
    return parse_function(fdef, _python_scope(fn), file, src.splitlines(), first - 1, shift)
