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


class Visitor:
    def visit(self, node):
        if isinstance(node, (tuple, list)):
            for x in node:
                self.visit(x)
            return None
        if not isinstance(node, Node):
            return None
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is not None:
            return method(node)
        return self.generic_visit(node)

    def generic_visit(self, node):
        if _is_leaf(node):
            return None
        for name in child_fields(type(node)):
            self.visit(getattr(node, name))
        return None


class Mutator:
    def visit(self, node):
        if isinstance(node, tuple):
            new = tuple(self.visit(x) for x in node)
            return node if all(a is b for a, b in zip(new, node)) else new
        if not isinstance(node, Node):
            return node
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is not None:
            return method(node)
        return self.generic_visit(node)

    def generic_visit(self, node):
        if _is_leaf(node):
            return node
        changes = {}
        for name in child_fields(type(node)):
            old = getattr(node, name)
            new = self.visit(old)
            if new is not old:
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


def walk(node, fn) -> None:
    """Call ``fn`` on every node below ``node`` (pre-order, Buffers/Vars included)."""

    class _W(Visitor):
        def visit(self, n):
            if isinstance(n, Node):
                fn(n)
            return super().visit(n)

    _W().visit(node)


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
    from .stmt import Break, Continue, For, While

    found = []

    class _J(Visitor):
        def visit(self, n):
            if found or isinstance(n, (For, While)):
                return None
            if isinstance(n, (Break, Continue)):
                found.append(n)
                return None
            return super().visit(n)

    _J().visit(stmt)
    return bool(found)
