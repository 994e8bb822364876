"""LLVM lowerings of the PTX-table instructions (everything but libdevice math).

Signatures are the ones LLVM 22.1 accepts (``/work/shared/reference/nvptx-llvm22-compat.md``
§2); where the NVPTX guide disagrees, the compat table wins (tcgen05.st's offset before the
registers, ``relinq`` in the relinquish intrinsic's name, the legacy mbarrier.arrive that also
selects on sm_80). Immediates reach LLVM as constants, never as run-time values.
"""

from __future__ import annotations

from llvmlite import ir

from ..ir import dtype as dt
from ..ir.expr import BufferLoad
from . import types as ty
from .registry import i32, imm, lowering, register_direct




def _value32(em, e) -> ir.Value:
    return em.typed(e, dt.int32)


# ---------------------------------------------------------------- cp.async (PTX ISA 9.7.9.25)
@lowering("ptx.cp_async")
def _cp_async(em, c):
    """``cp.async.ca`` for 4/8 bytes, ``.cg`` (bypass L1) for 16; ``.s`` with a source size.
    ``ignore_src`` has no intrinsic: it becomes a source size of 0 (the destination is
    zero-filled, which is what ignore-src means). An L2 prefetch size has no intrinsic
    either: that form is emitted as inline PTX (PTX ISA 7.4, sm_80+)."""
    dst, src, size, src_size, ignore, prefetch = c.args
    n = imm(em, size)
    d, _ = em.address(dst, ty.SHARED)
    s, _ = em.address(src, ty.GLOBAL)
    cache = "cg" if n == 16 else "ca"
    args = [d, s]
    if src_size is not None or ignore is not None:
        ss = _value32(em, src_size) if src_size is not None else i32(n)
        if ignore is not None:
            ss = em.b.select(em.truth(ignore), i32(0), ss)
        args.append(ss)
    if prefetch is not None:
        _cp_async_asm(em, cache, n, imm(em, prefetch), args)
        return
    name = f"llvm.nvvm.cp.async.{cache}.shared.global.{n}" + (".s" if len(args) == 3 else "")
    em.call(name, ty.VOID, args)


def _cp_async_asm(em, cache: str, n: int, prefetch: int, args):
    """``cp.async.<cache>.shared.global.L2::<prefetch>B [dst], [src], n{, src_size}``."""
    i64 = ir.IntType(64)
    ops = [em.b.ptrtoint(args[0], i64), em.b.ptrtoint(args[1], i64)] + args[2:]
    tail = ", $2" if len(args) == 3 else ""
    text = f"cp.async.{cache}.shared.global.L2::{prefetch}B [$0], [$1], {n}{tail};"
    fnty = ir.FunctionType(ir.VoidType(), [o.type for o in ops])
    asm = ir.InlineAsm(fnty, text, "l,l" + (",r" if tail else ""), side_effect=True)
    em.b.call(asm, ops)


@lowering("ptx.cp_async.mbarrier_arrive")
def _cp_async_mbar(em, c):
    mbar, _ = em.address(c.args[0], ty.SHARED)
    em.call("llvm.nvvm.cp.async.mbarrier.arrive.noinc.shared", ty.VOID, [mbar])


# ---------------------------------------------------------------- synchronous vector move
_VECTOR = {1: ty.I8, 2: ty.I16, 4: ty.I32, 8: ir.VectorType(ty.I32, 2),
           16: ir.VectorType(ty.I32, 4)}


@lowering("ptx.ld_st")
def _ld_st(em, c):
    """One naturally aligned vector load and one vector store (``ld.v4.b32``/``st.v4.b32``
    for 16 bytes); the address spaces come from the operands' buffers."""
    dst, src, nbytes = c.args
    n = imm(em, nbytes)
    s, _ = em.address(src)
    d, _ = em.address(dst)
    v = em.b.load(s, typ=_VECTOR[n], align=n)
    em.b.store(v, d, align=n)


# ---------------------------------------------------------------- barriers, warp primitives
@lowering("cuda.cta_sync")
def _cta_sync(em, c):
    em.call("llvm.nvvm.barrier.cta.sync.aligned.all", ty.VOID, [i32(0)])


@lowering("ptx.elect_sync")
def _elect_sync(em, c):
    ret = ir.LiteralStructType([ty.I32, ty.I1])
    pair = em.call("llvm.nvvm.elect.sync", ret, [i32(-1)])
    return em.b.extract_value(pair, 1)


# ---------------------------------------------------------------- mbarrier (PTX ISA 9.7.13.15)
@lowering("ptx.mbarrier.init")
def _mbar_init(em, c):
    mbar, _ = em.address(c.args[0], ty.SHARED)
    em.call("llvm.nvvm.mbarrier.init.shared", ty.VOID, [mbar, _value32(em, c.args[1])])


@lowering("ptx.mbarrier.arrive")
def _mbar_arrive(em, c):
    mbar, _ = em.address(c.args[0], ty.SHARED)
    return em.call("llvm.nvvm.mbarrier.arrive.shared", ty.I64, [mbar])


@lowering("ptx.mbarrier.arrive_expect_tx")
def _mbar_arrive_tx(em, c):
    mbar, _ = em.address(c.args[0], ty.SHARED)
    return em.call("llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta", ty.I64,
                   [mbar, _value32(em, c.args[1])])


@lowering("ptx.mbarrier.expect_tx")
def _mbar_expect_tx(em, c):
    mbar, _ = em.address(c.args[0], ty.SHARED)
    em.call("llvm.nvvm.mbarrier.expect.tx.scope.cta.space.cta", ty.VOID,
            [mbar, _value32(em, c.args[1])])


@lowering("ptx.mbarrier.try_wait_parity")
def _mbar_try_wait(em, c):
    mbar, _ = em.address(c.args[0], ty.SHARED)
    return em.call("llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta", ty.I1,
                   [mbar, _value32(em, c.args[1])])


# ---------------------------------------------------------------- tcgen05 (PTX ISA 9.7.16)
def _tmem_ptr(em, taddr_expr, row: int = 0, col: int = 0) -> ir.Value:
    """A ``ptr addrspace(6)`` from the 32-bit tensor-memory address (lane << 16 | column)."""
    v = _value32(em, taddr_expr)
    off = (row << 16) + col
    if off:
        v = em.b.add(v, i32(off))
    return em.b.inttoptr(v, ty.ptr(ty.TMEM))


@lowering("ptx.tcgen05.alloc")
def _tc_alloc(em, c):
    dst, n_cols, group = c.args
    p, space = em.address(dst)
    cg = imm(em, group)
    if space == ty.SHARED:
        name = f"llvm.nvvm.tcgen05.alloc.shared.cg{cg}"
    else:
        name = f"llvm.nvvm.tcgen05.alloc.cg{cg}"
        p = em.b.addrspacecast(p, ty.ptr(ty.GENERIC)) if space != ty.GENERIC else p
    em.call(name, ty.VOID, [p, i32(imm(em, n_cols))])


@lowering("ptx.tcgen05.dealloc")
def _tc_dealloc(em, c):
    taddr, n_cols, group = c.args
    em.call(f"llvm.nvvm.tcgen05.dealloc.cg{imm(em, group)}", ty.VOID,
            [_tmem_ptr(em, taddr), i32(imm(em, n_cols))])


@lowering("ptx.tcgen05.relinquish_alloc_permit")
def _tc_relinquish(em, c):
    em.call(f"llvm.nvvm.tcgen05.relinq.alloc.permit.cg{imm(em, c.args[0])}", ty.VOID, [])


_REGS_PER_NUM = {"32x32b": 1, "16x64b": 1, "16x32bx2": 1, "16x128b": 2, "16x256b": 4}


def _ldst_parts(em, c):
    taddr, row, col, shape, num, flag = c.args[:6]
    regs = c.args[6:]
    shape_s, n = shape.value, imm(em, num)
    want = _REGS_PER_NUM[shape_s] * n
    if want > 128:
        raise em.error(f"tcgen05 {shape_s}.x{n} does not exist (more than 128 registers)", c)
    if len(regs) != want:
        raise em.error(f"tcgen05 {shape_s}.x{n} moves {want} 32-bit registers per thread; "
                       f"the call passes {len(regs)}", c)
    ptr = _tmem_ptr(em, taddr, imm(em, row), imm(em, col))
    name = f"{shape_s}.x{n}"
    offset = [ir.Constant(ty.I64, 0)] if shape_s == "16x32bx2" else []
    return ptr, name, offset, ir.Constant(ty.I1, imm(em, flag)), regs, want


def _vec(n: int) -> ir.Type:
    return ty.I32 if n == 1 else ir.VectorType(ty.I32, n)


@lowering("ptx.tcgen05.ld")
def _tc_ld(em, c):
    """One ``<n x i32>`` load; each lane goes to its register lvalue (a 32-bit local element;
    float32 elements are written bit for bit)."""
    ptr, name, offset, pack, regs, n = _ldst_parts(em, c)
    v = em.call(f"llvm.nvvm.tcgen05.ld.{name}", _vec(n), [ptr, *offset, pack])
    for i, r in enumerate(regs):
        if not isinstance(r, BufferLoad) or r.buffer.dtype.bits != 32:
            raise em.error("tcgen05.ld registers must be 32-bit buffer elements", c)
        cell = v if n == 1 else em.b.extract_element(v, i32(i))
        em.b.store(cell, em.element_ptr(r.buffer, r.indices, c), align=4)


@lowering("ptx.tcgen05.st")
def _tc_st(em, c):
    ptr, name, offset, unpack, regs, n = _ldst_parts(em, c)
    cells = [_bits32(em, r) for r in regs]
    if n == 1:
        vec = cells[0]
    else:
        vec = ir.Constant(_vec(n), ir.Undefined)
        for i, cell in enumerate(cells):
            vec = em.b.insert_element(vec, cell, i32(i))
    em.call(f"llvm.nvvm.tcgen05.st.{name}", ty.VOID, [ptr, *offset, vec, unpack])


def _bits32(em, e) -> ir.Value:
    if e.dtype.bits != 32:
        raise em.error(f"tcgen05.st registers must be 32-bit values, got {e.dtype}", e)
    v = em.expr(e)
    return em.b.bitcast(v, ty.I32) if e.dtype.is_float else v


register_direct({
    "ptx.cp_async.commit_group": "llvm.nvvm.cp.async.commit.group",
    "ptx.cp_async.wait_group": "llvm.nvvm.cp.async.wait.group",
    "ptx.cp_async.wait_all": "llvm.nvvm.cp.async.wait.all",
    "ptx.tcgen05.wait.ld": "llvm.nvvm.tcgen05.wait.ld",
    "ptx.tcgen05.wait.st": "llvm.nvvm.tcgen05.wait.st",
    "ptx.tcgen05.fence.before_thread_sync": "llvm.nvvm.tcgen05.fence.before.thread.sync",
    "ptx.tcgen05.fence.after_thread_sync": "llvm.nvvm.tcgen05.fence.after.thread.sync",
})
