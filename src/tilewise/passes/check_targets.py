"""Check that the target has every instruction the kernel calls, and collect the target
features they need.

Each ``Call`` names an entry of the PTX table; an entry with a ``feature`` the target
lacks is a :class:`TargetError` at the user's line (``cp.async needs sm_80 or newer;
target is sm_75``). The pipeline runs it once, after dispatch, on the user's calls and
what the variants emitted together (a variant must only emit what its predicates
checked), and keeps the features in ``Lowered.features``: the code generator picks the
PTX version from them and the simulator trusts the check.
"""

from __future__ import annotations

from ..errors import CompileError, did_you_mean
from ..ir.expr import Call
from ..ir.stmt import PrimFunc
from ..ir.visitor import SpanVisitor
from ..ptx.table import PTX_OPS


class _Check(SpanVisitor):
    def __init__(self, target):
        self.target = target
        self.features: set[str] = set()
        self.math = False

    def visit_Call(self, e: Call):
        op = PTX_OPS.get(e.op)
        if op is None:
            raise CompileError(f"T.{e.op} is not an instruction the code generator knows",
                               e.span or self.span, hint=did_you_mean(e.op, PTX_OPS))
        for feature in op.features_of(e.args):
            self.target.require(feature, what=f"T.{e.op} ({op.ptx.split()[0]})",
                                span=e.span or self.span)
            self.features.add(feature)
        self.math = self.math or op.math
        self.generic_visit(e)


def check_targets(func: PrimFunc, target) -> tuple[frozenset[str], bool]:
    """The target features the kernel's calls need, and whether it uses libdevice math.
    Raises TargetError at the first instruction ``target`` cannot run."""
    check = _Check(target)
    check.visit(func.body)
    return frozenset(check.features), check.math
