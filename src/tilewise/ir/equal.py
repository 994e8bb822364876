"""Structural equality of IR nodes.

Two programs are equal when they have the same shape, constants, types and layouts and
their variables and buffers correspond one to one (names may differ). Source spans are
ignored.
"""

from __future__ import annotations

from .expr import Node, Var
from .stmt import Buffer
from .visitor import child_fields


class _Eq:
    def __init__(self):
        self.fwd: dict[int, object] = {}
        self.back: dict[int, object] = {}

    def bind(self, a, b) -> bool:
        fa, fb = self.fwd.get(id(a)), self.back.get(id(b))
        if fa is None and fb is None:
            self.fwd[id(a)], self.back[id(b)] = b, a
            return True
        return fa is b and fb is a

    def eq(self, a, b) -> bool:
        if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
            return (isinstance(a, (tuple, list)) and isinstance(b, (tuple, list))
                    and len(a) == len(b) and all(self.eq(x, y) for x, y in zip(a, b)))
        if isinstance(a, Node) or isinstance(b, Node):
            return self.node(a, b)
        if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
            return True  # NaN constants are the same constant
        return a == b and type(a) is type(b) or (a is None and b is None)

    def node(self, a, b) -> bool:
        if type(a) is not type(b):
            return False
        if isinstance(a, Var):
            return a.type == b.type and self.bind(a, b)
        if isinstance(a, Buffer):
            if id(a) in self.fwd or id(b) in self.back:
                return self.bind(a, b)
            same = self.fields(a, b, skip=("name",))
            return same and self.bind(a, b)
        return self.fields(a, b)

    def fields(self, a, b, skip=()) -> bool:
        for name in child_fields(type(a)):
            if name in skip:
                continue
            if not self.eq(getattr(a, name), getattr(b, name)):
                return False
        return True


def structural_equal(a, b) -> bool:
    """True when ``a`` and ``b`` are the same program up to renaming."""
    return _Eq().eq(a, b)
