"""Lowerings generated from the table: every entry whose row names an intrinsic
(``llvm="llvm.nvvm.cp.async.wait.group"``) or inline PTX (``llvm=Asm(...)``) gets one
here, the way llvmlite's builder generates its thin methods from the opcode.

* ``{operand}`` fields of the name or the PTX text take the static operand's spelling
  (``llvm.nvvm.tcgen05.alloc.shared.cg{cta_group}`` -> ``...cg1``); those operands are
  not passed;
* every other operand is passed in table order, converted by its kind (:mod:`.args`);
  optional operands left out are not passed;
* the result is the row's ``returns`` type (``bool`` as ``i1``), or nothing;
* inline PTX is ``asm sideeffect``; a ``regs_inout`` register vector is returned as a
  struct of i32 (outputs ``=r``) with each register tied to its input, then stored back.
"""

from __future__ import annotations

import string

from llvmlite import ir

from ...ptx.table import ROWS, Asm, PtxOp
from .. import types as ty
from ..registry import lowering
from .args import arg


def _fields(template: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


def _ret_type(op: PtxOp) -> ir.Type:
    return ty.VOID if op.returns is None else ty.value_type(op.returns)


def _spellings(op: PtxOp, c, names: set[str]) -> dict[str, str]:
    out = {}
    for p, a in zip(op.params, c.args):
        if p.name in names:
            out[p.name] = p.spelt(getattr(a, "value", a))
    return out


def _operands(em, op: PtxOp, c, names: set[str]) -> list:
    return [arg(em, p, a) for p, a in zip(op.params, c.args)
            if p.name not in names and a is not None]


def intrinsic_lowering(op: PtxOp):
    """``fn(em, call)`` calling the intrinsic the row names."""
    names = _fields(op.llvm)

    def lower(em, c):
        name = op.llvm.format(**_spellings(op, c, names))
        return em.call(name, _ret_type(op), _operands(em, op, c, names))

    lower.__name__ = "lower_" + op.name.replace(".", "_")
    return lower


def asm_lowering(op: PtxOp):
    """``fn(em, call)`` emitting the row's inline PTX."""
    names = _fields(op.llvm.text)

    def lower(em, c):
        text = op.llvm.text.format(**_spellings(op, c, names))
        args = _operands(em, op, c, names)
        regs = c.args[len(op.params):]
        if op.writes_regs:
            return _asm_regs(em, c, op, text, args, regs)
        if op.reads_regs:
            args += [em.expr(r) for r in regs]
        fnty = ir.FunctionType(_ret_type(op), [a.type for a in args])
        return em.b.call(ir.InlineAsm(fnty, text, op.llvm.constraints, side_effect=True), args)

    lower.__name__ = "asm_" + op.name.replace(".", "_")
    return lower


def _asm_regs(em, c, op: PtxOp, text: str, args: list, regs) -> None:
    """Registers read and written: outputs ``=r`` first, each tied to its input."""
    n = len(regs)
    ptrs = [em.element_ptr(r.buffer, r.indices, c) for r in regs]
    ins = [em.b.load(p, typ=ty.I32, align=4) for p in ptrs] if op.reads_regs else []
    ties = ",".join(str(k) for k in range(len(ins)))
    cons = ",".join(["=r"] * n + ([ties] if ties else []) + ([op.llvm.constraints]
                                                              if op.llvm.constraints else []))
    out_t = ty.I32 if n == 1 else ir.LiteralStructType([ty.I32] * n)
    fnty = ir.FunctionType(out_t, [a.type for a in ins + args])
    res = em.b.call(ir.InlineAsm(fnty, text, cons, side_effect=True), ins + args)
    for k, p in enumerate(ptrs):
        em.b.store(res if n == 1 else em.b.extract_value(res, k), p, align=4)


def register_generated() -> None:
    """Register a generated lowering for every row with ``llvm=`` (once per row)."""
    for op in ROWS:
        if isinstance(op.llvm, Asm):
            lowering(op.name)(asm_lowering(op))
        elif op.llvm is not None:
            lowering(op.name)(intrinsic_lowering(op))


register_generated()
