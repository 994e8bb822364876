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
from ..ir.expr import Call, as_int
from ..ir.stmt import PrimFunc
from ..ir.visitor import SpanVisitor
from ..ptx.table import PTX_OPS


class _Check(SpanVisitor):
    def __init__(self, target):
        self.target = target
        self.features: set[str] = set()
        self.math = False
        self.cta_group: tuple[int, object, str] | None = None  # the first: value, span, op

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
        self._one_cta_group(e, op)
        self.generic_visit(e)

    def _one_cta_group(self, e: Call, op) -> None:
        """ptxas refuses a kernel whose tcgen05 instructions (the rows of the tcgen05
        feature) mix cta_group::1 and ::2 (a TMA copy's optional ``.cta_group`` is no tcgen05
        instruction's)."""
        names = [p.name for p in op.params]
        if (op.feature != "tcgen05" or "cta_group" not in names
                or len(e.args) <= names.index("cta_group")):
            return
        value = as_int(e.args[names.index("cta_group")])
        span = e.span or self.span
        if self.cta_group is None:
            self.cta_group = (value, span, e.op)
        elif value is not None and value != self.cta_group[0]:
            first, where, what = self.cta_group
            raise CompileError(f"T.{e.op} uses cta_group={value} but T.{what} at {where} uses "
                               f"cta_group={first}: the tcgen05 instructions of one kernel "
                               "work for one CTA or for a CTA pair, not both", span,
                               hint="give every tcgen05 instruction of the kernel the same "
                               "cta_group")


def check_targets(func: PrimFunc, target) -> tuple[frozenset[str], bool]:
    """The target features the kernel's calls need, and whether it uses libdevice math.
    Raises TargetError at the first instruction ``target`` cannot run."""
    check = _Check(target)
    check.visit(func.body)
    return frozenset(check.features), check.math
