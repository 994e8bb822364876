"""Check that the target has every instruction the kernel calls.

Each ``Call`` names an entry of the PTX table; an entry with a ``feature`` the target
lacks is a :class:`TargetError` at the user's line (``cp.async needs sm_80 or newer;
target is sm_75``). Run before dispatch on the user's calls and after it on what the
variants emitted (a variant must only emit what its predicates checked).
"""

from __future__ import annotations

from ..ir.expr import Call
from ..ir.stmt import PrimFunc
from ..ir.visitor import Visitor
from ..ptx.table import PTX_OPS


class _Check(Visitor):
    def __init__(self, target):
        self.target = target
        self.span = None

    def visit(self, node):
        old = self.span
        self.span = getattr(node, "span", None) or old
        try:
            return super().visit(node)
        finally:
            self.span = old

    def visit_Call(self, e: Call):
        op = PTX_OPS.get(e.op)
        if op is not None and op.feature is not None:
            self.target.require(op.feature, what=f"T.{e.op} ({op.ptx.split()[0]})",
                                span=e.span or self.span)
        self.generic_visit(e)


def check_targets(func: PrimFunc, target) -> PrimFunc:
    """Raise TargetError at the first instruction ``target`` cannot run."""
    _Check(target).visit(func.body)
    return func
