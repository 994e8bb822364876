"""Where kernel names are bound: the scopes of run-time constructs and the binding rules.

A kernel name holds either a compile-time Python value (a shape, a layout, a buffer, a
number) or a run-time local (an IR ``Var`` declared by ``LetStmt`` and re-assigned by
``Assign``). Compile-time constructs (an ``if`` decided while parsing, a
``T.static_range`` loop) are transparent: they bind in the scope around them. Each
run-time construct (a device loop body, a branch of a run-time ``if``) has a scope of its
own, and what it binds is settled when it ends:

* after an ``if``, a name the branches leave with different values becomes one run-time
  local (declared before the ``if``, assigned at the end of each branch that changed it);
  a name bound on one path only is *unassigned* on the other, and reading it is an error;
* a device loop first *probes* its body: a name bound before the loop to a compile-time
  number that the body changes is promoted to a run-time local before the loop, typed by
  what the body assigns (``s = 0.0`` then ``s = s + A[i]`` with ``A`` float16 makes ``s``
  a float16 local), and the body is parsed again; names first bound inside the loop are
  unassigned after it; a buffer or other compile-time value cannot be re-bound inside.

docs/ir.md ("Names and values") states the rules for users.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field


@dataclass
class Unassigned:
    """The value of a name on a path where it may not have been assigned. ``var``: the
    run-time local it is on the paths that did assign it (assigning again reuses it)."""

    why: str
    var: object = None


UNBOUND = Unassigned("it is not assigned before this line")


@dataclass
class Scope:
    """The names one construct bound: ``vals`` name -> value, ``where`` name -> the
    assignment node (for messages)."""

    kind: str  # function | loop | branch
    vals: dict = field(default_factory=dict)
    where: dict = field(default_factory=dict)

    def bind(self, name: str, value, node=None) -> None:
        self.vals[name] = value
        if node is not None:
            self.where[name] = node


def assigned_names(stmts) -> set[str]:
    """Names a statement list assigns anywhere (as Python sees it: assignments, augmented
    and annotated assignments, ``for`` targets), comprehension variables excluded."""
    out: set[str] = set()

    def targets(t):
        if isinstance(t, ast.Name):
            out.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                targets(e)
        elif isinstance(t, ast.Starred):
            targets(t.value)

    class _V(ast.NodeVisitor):
        def visit_Assign(self, n):
            for t in n.targets:
                targets(t)
            self.generic_visit(n)

        def visit_AugAssign(self, n):
            targets(n.target)
            self.generic_visit(n)

        def visit_AnnAssign(self, n):
            targets(n.target)
            self.generic_visit(n)

        def visit_For(self, n):
            targets(n.target)
            self.generic_visit(n)

        def _skip(self, n):
            pass

        visit_ListComp = visit_GeneratorExp = visit_SetComp = visit_DictComp = _skip
        visit_Lambda = visit_FunctionDef = _skip

    v = _V()
    for s in stmts:
        v.visit(s)
    return out


def line_of(node) -> str:
    return f"line {node.lineno}" if node is not None and hasattr(node, "lineno") else "here"
