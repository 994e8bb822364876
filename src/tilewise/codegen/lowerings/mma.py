"""Hand-written lowerings of the warp-level matrix instructions (PTX ISA §9.7.14): one LLVM
22 intrinsic each, whose operand and result types depend on the form
(:func:`tilewise.ptx.mma.llvm_name`), with the registers moved through memory operands:

* ``ldmatrix``: ``llvm.nvvm.ldmatrix.sync.aligned.m8n8.x<n>{.trans}.b16.p3(ptr addrspace(3))``
  returns ``i32`` (x1) or ``{i32 x n}``; each result is stored to its destination register;
* ``stmatrix``: ``llvm.nvvm.stmatrix.sync.aligned.m8n8.x<n>{.trans}.b16.p3(ptr addrspace(3),
  i32 x n)``;
* ``mma.sync``: ``llvm.nvvm.mma.m16n8k<K>.row.col.<sig>`` takes A and B as ``<2 x half>``
  (f16) or ``i32`` (bf16, tf32, s8/u8, fp8) and C as ``float`` / ``<2 x half>`` / ``i32``,
  and returns D as a struct of the C type; the accumulator registers are loaded as ``i32``,
  reinterpreted, and D is stored back in place (``regs_inout``).

Measured with llvmlite 0.50 / LLVM 22.1 and nvJitLink 13: every form selects and assembles
on each target of its feature; the fp8 form aborts the process on sm_80 and below PTX 8.4,
stmatrix below sm_90 — which the table's features rule out before any LLVM is built.
"""

from __future__ import annotations

from llvmlite import ir

from ...ptx import mma
from .. import types as ty
from ..registry import lowering
from .args import bits32, imm

_HALF2 = ir.VectorType(ir.HalfType(), 2)
_C_TYPE = {"float32": ir.FloatType(), "float16": _HALF2, "int32": ty.I32}


def _matrix_name(em, what: str, c) -> tuple[str, int]:
    n, trans = imm(em, c.args[1]), imm(em, c.args[2])
    return f"llvm.nvvm.{what}.sync.aligned.m8n8.x{n}{'.trans' if trans else ''}.b16.p3", n


@lowering("ptx.ldmatrix")
def _ldmatrix(em, c):
    name, n = _matrix_name(em, "ldmatrix", c)
    src, _ = em.address(c.args[0], ty.SHARED)
    ret = ty.I32 if n == 1 else ir.LiteralStructType([ty.I32] * n)
    res = em.call(name, ret, [src])
    for k, r in enumerate(c.args[3:]):
        word = res if n == 1 else em.b.extract_value(res, k)
        em.b.store(word, em.element_ptr(r.buffer, r.indices, c), align=4)


@lowering("ptx.stmatrix")
def _stmatrix(em, c):
    name, _ = _matrix_name(em, "stmatrix", c)
    dst, _ = em.address(c.args[0], ty.SHARED)
    em.call(name, ty.VOID, [dst, *(bits32(em, r) for r in c.args[3:])])


def _input(em, e, dtype: str) -> ir.Value:
    word = bits32(em, e)
    return _cast(em, word, _HALF2) if dtype == "float16" else word


@lowering("ptx.mma_sync", "ptx.mma_sync_fp8")
def _mma_sync(em, c):
    a_type, b_type, acc = (x.value for x in c.args[:3])
    a = [_input(em, x, a_type) for x in c.args[3:3 + mma.A_REGS]]
    b = [_input(em, x, b_type) for x in c.args[3 + mma.A_REGS:3 + mma.A_REGS + mma.B_REGS]]
    regs = c.args[3 + mma.A_REGS + mma.B_REGS:]
    ctype = _C_TYPE[acc]
    ptrs = [em.element_ptr(r.buffer, r.indices, c) for r in regs]
    cin = [_cast(em, em.b.load(p, typ=ty.I32, align=4), ctype) for p in ptrs]
    res = em.call(mma.llvm_name(a_type, b_type, acc),
                  ir.LiteralStructType([ctype] * len(regs)), a + b + cin)
    for k, p in enumerate(ptrs):
        em.b.store(_cast(em, em.b.extract_value(res, k), ty.I32), p, align=4)


def _cast(em, v: ir.Value, t: ir.Type) -> ir.Value:
    return v if v.type == t else em.b.bitcast(v, t)
