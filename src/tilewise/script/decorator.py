"""``@T.prim_func``: parse a Python function into a PrimFunc."""

from __future__ import annotations

import inspect

from ..errors import ScriptError, api_boundary
from .inline import python_scope, read_function


@api_boundary
def prim_func(fn):
    """Parse a Python function into a tilewise ``PrimFunc`` (the kernel as IR)."""
    from .parser import parse_function

    if not inspect.isfunction(fn):
        raise ScriptError(f"@T.prim_func decorates a Python function, not "
                          f"{type(fn).__name__} {fn!r:.60}",
                          hint="write the kernel as `@T.prim_func` over `def kernel(...):`")
    fdef, file, lines, line0, col0 = read_function(fn, "@T.prim_func")
    return parse_function(fdef, python_scope(fn), file, lines, line0, col0)
