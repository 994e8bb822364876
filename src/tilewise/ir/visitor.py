"""Generic traversal of IR nodes.

``Visitor.visit(node)`` calls ``visit_<ClassName>`` when defined, else walks the node's
fields. ``Mutator.visit(node)`` returns a node, rebuilding a parent only when a child
changed (identity preserved otherwise). Buffers and Vars are leaves for both: a pass that
rewrites buffers maps them explicitly.
"""

from __future__ import annotations

import dataclasses

from .expr import Node, Var
from .stmt import Buffer

_FIELDS_CACHE: dict[type, tuple[str, ...]] = {}


def child_fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS_CACHE.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls) if f.name != "span")
        _FIELDS_CACHE[cls] = names
    return names


def _is_leaf(node) -> bool:
    return isinstance(node, (Var, Buffer))


_NOT_A_NODE = object()  # a visitor's answer for a value that is not an IR node


_WALKED: dict[type, tuple[str, ...]] = {}


def _walked_fields(cls: type) -> tuple[str, ...]:
    """The fields the generic walks descend into: none for leaves (Buffers, Vars)."""
    names = _WALKED.get(cls)
    if names is None:
        names = _WALKED[cls] = () if issubclass(cls, (Var, Buffer)) else child_fields(cls)
    return names


class _Dispatch:
    """Per visitor class, per node class: the ``visit_<ClassName>`` function, or the fields
    to walk when there is none. A pass visits hundreds of thousands of nodes per kernel;
    looking the method up by name and the fields by dataclass introspection each time was
    most of the lowering's time."""

    _table: dict

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._table = {}

    @classmethod
    def _entry(cls, ncls: type):
        if not issubclass(ncls, Node):
            e = _NOT_A_NODE
        else:
            e = getattr(cls, "visit_" + ncls.__name__, None) or _walked_fields(ncls)
        cls._table[ncls] = e
        return e


class Visitor(_Dispatch):
    def visit(self, node):
        ncls = type(node)
        if ncls is tuple or ncls is list:
            for x in node:
                self.visit(x)
            return None
        e = self._table.get(ncls)
        if e is None:
            e = self._entry(ncls)
        if e is _NOT_A_NODE:
            return None
        if type(e) is tuple:
            return self.generic_visit(node)
        return e(self, node)

    def generic_visit(self, node):
        visit = self.visit
        for name in _walked_fields(type(node)):
            visit(getattr(node, name))
        return None


class Mutator(_Dispatch):
    def visit(self, node):
        ncls = type(node)
        if ncls is tuple:
            new = tuple([self.visit(x) for x in node])
            for a, b in zip(new, node):
                if a is not b:
                    return new
            return node
        e = self._table.get(ncls)
        if e is None:
            e = self._entry(ncls)
        if e is _NOT_A_NODE:
            return node
        if type(e) is tuple:
            return self.generic_visit(node)
        return e(self, node)

    def generic_visit(self, node):
        changes = None
        visit = self.visit
        for name in _walked_fields(type(node)):
            old = getattr(node, name)
            new = visit(old)
            if new is not old:
                if changes is None:
                    changes = {}
                changes[name] = new
        return dataclasses.replace(node, **changes) if changes else node


def deepest(node) -> tuple[int, object]:
    """``(depth, span)``: how deeply IR nodes nest below ``node`` and the user's place of the
    deepest one (the nearest span on its way down). Iterative, so it answers for trees the
    recursive passes could not walk."""
    best, best_span = 0, getattr(node, "span", None)
    stack = [(node, 1, best_span)]
    while stack:
        n, d, span = stack.pop()
        if isinstance(n, (tuple, list)):
            stack.extend((x, d, span) for x in n)
            continue
        if not isinstance(n, Node) or _is_leaf(n):
            continue
        span = n.span or span
        if d > best:
            best, best_span = d, span
        stack.extend((getattr(n, f), d + 1, span) for f in child_fields(type(n)))
    return best, best_span


class _Walker(Visitor):
    def __init__(self, fn):
        self.fn = fn

    def visit(self, n):
        if isinstance(n, Node):
            self.fn(n)
        return super().visit(n)


def walk(node, fn) -> None:
    """Call ``fn`` on every node below ``node`` (pre-order, Buffers/Vars included)."""
    _Walker(fn).visit(node)


class SpanVisitor(Visitor):
    """A Visitor that keeps ``self.span``: the innermost user source place seen so far, so an
    error about an expression without a span of its own points at its statement."""

    span = None

    def visit(self, node):
        old = self.span
        self.span = getattr(node, "span", None) or old
        try:
            return super().visit(node)
        finally:
            self.span = old


def jumps_out(stmt) -> bool:
    """Whether ``stmt`` may ``break`` or ``continue`` a loop around it (a jump inside a loop
    nested in ``stmt`` stays there)."""
    j = _Jumps()
    j.visit(stmt)
    return bool(j.found)


class _Jumps(Visitor):
    """Finds a Break or Continue not inside a loop of its own (for :func:`jumps_out`)."""

    def __init__(self):
        self.found = []

    def visit(self, n):
        from .stmt import Break, Continue, For, While

        if self.found or isinstance(n, (For, While)):
            return None
        if isinstance(n, (Break, Continue)):
            self.found.append(n)
            return None
        return super().visit(n)
