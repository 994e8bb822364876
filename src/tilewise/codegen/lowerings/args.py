"""Run-time and immediate operands of a bound call as LLVM values, by operand kind
(:mod:`tilewise.ptx.operands`): one conversion per kind, shared by the generated and the
hand-written lowerings. The operands were checked when the call was bound."""

from __future__ import annotations

from llvmlite import ir

from ...ir import dtype as dt
from ...ir.expr import as_int
from ...ptx import tcgen05
from .. import types as ty

#: ``ptr`` operand space -> the NVPTX address space it is passed in (None: its own).
PTR_SPACE = {"shared": ty.SHARED, "global": ty.GLOBAL, "any": None}


def imm(em, e) -> int:
    """The value of an immediate operand (a CompileError at the user's line otherwise)."""
    v = as_int(e)
    if v is None:
        raise em.error("this operand must be a compile-time constant", e)
    return v


def i32(v: int) -> ir.Constant:
    return ir.Constant(ty.I32, v)


def tmem_ptr(em, taddr, row: int = 0, col: int = 0) -> ir.Value:
    """A ``ptr addrspace(6)`` from the 32-bit tensor-memory address (lane << 16 | column)."""
    v = em.typed(taddr, dt.int32)
    off = tcgen05.address(row, col)
    if off:
        v = em.b.add(v, i32(off))
    return em.b.inttoptr(v, ty.ptr(ty.TMEM))


def _ptr(em, p, e):
    return em.address(e, PTR_SPACE[p.space])[0]


def bits32(em, e) -> ir.Value:
    """A 32-bit operand as an ``i32`` holding its bits (a float is reinterpreted)."""
    v = em.expr(e)
    return em.b.bitcast(v, ty.I32) if e.dtype.is_float else v


CONVERT = {
    "reg32": lambda em, p, e: bits32(em, e),
    "ptr": _ptr,
    "value": lambda em, p, e: em.typed(e, p.dtype),
    "rank": lambda em, p, e: em.typed(e, dt.int32),
    "desc64": lambda em, p, e: em.typed(e, dt.uint64),
    "taddr": lambda em, p, e: tmem_ptr(em, e),
    "imm": lambda em, p, e: ir.Constant(ty.value_type(p.dtype), imm(em, e)),
    "flag": lambda em, p, e: ir.Constant(ty.I1, imm(em, e)),
}


def arg(em, p, e) -> ir.Value:
    """Operand ``e`` of parameter ``p`` as the LLVM value its kind is passed as."""
    return CONVERT[p.kind](em, p, e)
