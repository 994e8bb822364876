"""What the front end's evaluated values are: an IR expression (a run-time value) or a
compile-time Python value, how one is named in a message, and the range a ``for`` loop
iterates over. Shared by the parser and the builtins (neither imports the other's
privates)."""

from __future__ import annotations

from ..errors import ScriptError
from ..ir.expr import Expr, as_int
from ..ir.stmt import Buffer


def is_ir(v) -> bool:
    return isinstance(v, Expr)


class LoopRange:
    """What ``range``/``T.serial``/``T.unroll`` evaluate to in a for statement."""

    def __init__(self, start, extent, kind):
        self.start, self.extent, self.kind = start, extent, kind

    def __iter__(self):  # used in comprehensions over compile-time ranges
        s, e = as_int(self.start), as_int(self.extent)
        if s is None or e is None:
            raise ScriptError("a comprehension must iterate over a compile-time range")
        return iter(range(s, s + e))


def describe(v) -> str:
    if isinstance(v, Buffer):
        return f"buffer {v.name!r}"
    if isinstance(v, Expr):
        return f"a run-time {v.dtype} value"
    if isinstance(v, (int, float, str, bool)):
        return repr(v)
    return type(v).__name__
