"""Hand-written lowerings of ``tcgen05.ld`` / ``tcgen05.st`` (PTX ISA 9.7.16.8.3-4): one
``<n x i32>`` intrinsic per call (``llvm.nvvm.tcgen05.{ld,st}.<shape>.x<num>``; the
``.16x32bx2`` forms take the half-split immediate of :func:`tilewise.ptx.tcgen05.half_split`
before the pack flag). The shape, num and register count were checked when the call was
bound; every register is a 32-bit value (st) or a 32-bit buffer element (ld)."""

from __future__ import annotations

from llvmlite import ir

from ...ir import dtype as dt
from ...ptx import tcgen05
from .. import types as ty
from ..registry import lowering
from .args import i32, imm, tmem_ptr


def _vec(n: int) -> ir.Type:
    return ty.I32 if n == 1 else ir.VectorType(ty.I32, n)


def _parts(em, c):
    taddr, row, col, shape, num, flag = c.args[:6]
    n, packed = imm(em, num), bool(imm(em, flag))
    ptr = tmem_ptr(em, taddr, imm(em, row), imm(em, col))
    split = [ir.Constant(ty.I64, tcgen05.half_split(shape.value, n, packed))] \
        if shape.value == "16x32bx2" else []
    return ptr, f"{shape.value}.x{n}", split, ir.Constant(ty.I1, packed), c.args[6:]


@lowering("ptx.tcgen05.ld")
def _tc_ld(em, c):
    """One ``<n x i32>`` load; each lane goes to its register (a 32-bit buffer element;
    float32 elements are written bit for bit)."""
    ptr, name, split, pack, regs = _parts(em, c)
    v = em.call(f"llvm.nvvm.tcgen05.ld.{name}", _vec(len(regs)), [ptr, *split, pack])
    for i, r in enumerate(regs):
        cell = v if len(regs) == 1 else em.b.extract_element(v, i32(i))
        em.b.store(cell, em.element_ptr(r.buffer, r.indices, c), align=4)


@lowering("ptx.tcgen05.st")
def _tc_st(em, c):
    ptr, name, split, unpack, regs = _parts(em, c)
    cells = [_bits32(em, r) for r in regs]
    vec = cells[0]
    if len(cells) > 1:
        vec = ir.Constant(_vec(len(cells)), ir.Undefined)
        for i, cell in enumerate(cells):
            vec = em.b.insert_element(vec, cell, i32(i))
    em.call(f"llvm.nvvm.tcgen05.st.{name}", ty.VOID, [ptr, *split, vec, unpack])


def _bits32(em, e) -> ir.Value:
    v = em.expr(e)
    return em.b.bitcast(v, ty.I32) if e.dtype.is_float else v


@lowering("ptx.tcgen05.mma", "ptx.tcgen05.mma.ts")
def _mma(em, c):
    """``llvm.nvvm.tcgen05.mma.{shared,tensor}`` (nvptx-llvm22-compat.md §2: d, a-desc or
    a-tmem, b-desc, idesc, enable-input-d, then the immediates kind, cta_group and the
    collector usage 0 = discard)."""
    d, a, b, idesc, enable, kind, group = c.args
    tensor = c.op == "ptx.tcgen05.mma.ts"
    a_val = tmem_ptr(em, a) if tensor else em.typed(a, dt.uint64)
    em.call(f"llvm.nvvm.tcgen05.mma.{'tensor' if tensor else 'shared'}", ty.VOID,
            [tmem_ptr(em, d), a_val, em.typed(b, dt.uint64), em.typed(idesc, dt.uint32),
             em.truth(enable), i32(tcgen05.KINDS[kind.value].llvm), i32(imm(em, group)),
             i32(0)])
