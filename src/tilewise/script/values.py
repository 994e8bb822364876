"""What the parser's values are: compile-time Python values or IR expressions, and the
helpers both the parser and the builtins use to describe and type them."""

from __future__ import annotations

from ..errors import ScriptError
from ..ir import dtype as dt
from ..ir.expr import Expr, as_int
from ..ir.stmt import Buffer


def is_ir(v) -> bool:
    return isinstance(v, Expr)


def is_scalar(v) -> bool:
    """A compile-time Python number (a candidate for a run-time local)."""
    import numpy as np

    return isinstance(v, (bool, int, float, np.number, np.bool_))


def literal_type(v) -> dt.DataType:
    """The IR type a compile-time number takes when it must become a run-time value:
    bool, int32 (int64 when it does not fit), float32; numpy scalars keep their dtype."""
    import numpy as np

    if isinstance(v, (bool, np.bool_)):
        return dt.bool_
    if isinstance(v, np.number):
        return dt.from_numpy(v.dtype)
    if isinstance(v, int):
        if -(2**31) <= v < 2**31:
            return dt.int32
        if -(2**63) <= v < 2**63:
            return dt.int64
        raise ScriptError(f"the integer {v} does not fit in 64 bits")
    return dt.float32


def unify_literal_types(a: dt.DataType, b: dt.DataType) -> dt.DataType:
    """bool < int32 < int64 < float32: the type that holds both literals' values."""
    order = [dt.bool_, dt.int32, dt.int64, dt.float32]
    if a in order and b in order:
        return max(a, b, key=order.index)
    return a


def describe(v) -> str:
    if isinstance(v, Buffer):
        return f"buffer {v.name!r}"
    if isinstance(v, Expr):
        return f"a run-time {v.dtype} value"
    if isinstance(v, (int, float, str, bool)):
        return show_number(v)
    return type(v).__name__


def show_number(v) -> str:
    """``v`` for a message: an integer too long to print (Python converts none of more than
    4300 digits) is described by its size."""
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10 ** 30:
        digits = int(abs(v).bit_length() * 0.30103) + 1
        return f"{'-' if v < 0 else ''}<an integer of about {digits} digits>"
    return repr(v)


class LoopRange:
    """What ``range``/``T.serial``/``T.unroll`` evaluate to in a for statement."""

    def __init__(self, start, extent, kind, first=None, step: int = 1):
        self.start, self.extent, self.kind = start, extent, kind
        # with a step the loop counts k from 0 and the name reads first + k * step
        self.first, self.step = first, step

    def __bool__(self) -> bool:
        return True

    def __len__(self) -> int:  # compile-time extents only (0 when symbolic)
        e = as_int(self.extent)
        return max(e, 0) if e is not None else 0

    def __iter__(self):  # used in comprehensions over compile-time ranges
        s, e = as_int(self.start), as_int(self.extent)
        if s is None or e is None:
            raise ScriptError("a comprehension must iterate over a compile-time range")
        if self.step != 1:
            f = as_int(self.first)
            if f is None:
                raise ScriptError("a comprehension must iterate over a compile-time range")
            return iter(range(f, f + e * self.step, self.step))
        return iter(range(s, s + e))


def check_arity(p, name, args, kwargs, lo, hi=None, allowed=()):
    """``T.<name>`` takes ``lo`` to ``hi`` positional arguments and only the keywords
    ``allowed``: a ScriptError at the call (through the parser ``p``) otherwise."""
    hi = lo if hi is None else hi
    if not lo <= len(args) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        raise p.error(f"T.{name} takes {want} positional argument(s), got {len(args)}")
    for k in kwargs:
        if k not in allowed:
            raise p.error(f"T.{name} has no keyword {k!r}",
                          f"its keywords are: {', '.join(allowed)}" if allowed else
                          "it takes no keywords")
