"""Hand-written lowerings of the copies: ``cp.async`` (PTX ISA 9.7.9.25), the synchronous
vector move, the store into another CTA's shared memory (``st.shared::cluster``), and the
bulk (non-tensor) TMA copies (9.7.9.25.4).

Signatures are the ones LLVM 22.1 accepts (``/work/shared/reference/nvptx-llvm22-compat.md``
§2). The bulk copies need the table's ``tma`` feature (sm_90+, PTX 8.0), so only forms
that select at PTX 8.0 on sm_90 are emitted: g2s uses the ``.shared::cluster``
destination form (the ``.shared::cta`` form needs PTX 8.6, which sm_90a kernels do not
get); a CTA's own shared address is a valid ``shared::cluster`` address of the executing
CTA, so the destination is an ``addrspacecast`` from ``addrspace(3)`` to ``addrspace(7)``.
No multicast, no cache hint (both flags false, their operands zero).
"""

from __future__ import annotations

from llvmlite import ir

from ...ir import dtype as dt
from .. import types as ty
from ..registry import lowering
from .args import i32, imm

SHARED_CLUSTER = 7  # NVPTX address space of shared::cluster addresses


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
        ss = em.typed(src_size, dt.int32) if src_size is not None else i32(n)
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
    ops = [em.b.ptrtoint(args[0], ty.I64), em.b.ptrtoint(args[1], ty.I64)] + args[2:]
    tail = ", $2" if len(args) == 3 else ""
    text = f"cp.async.{cache}.shared.global.L2::{prefetch}B [$0], [$1], {n}{tail};"
    fnty = ir.FunctionType(ty.VOID, [o.type for o in ops])
    asm = ir.InlineAsm(fnty, text, "l,l" + (",r" if tail else ""), side_effect=True)
    em.b.call(asm, ops)


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


@lowering("ptx.st_cluster")
def _st_cluster(em, c):
    """``mapa.shared::cluster`` of this CTA's address into CTA ``rank``, then a plain store
    through the ``addrspace(7)`` pointer (``st.shared::cluster.b32``)."""
    dst, value, rank = c.args
    d, _ = em.address(dst, ty.SHARED)
    peer = em.call("llvm.nvvm.mapa.shared.cluster", ty.ptr(SHARED_CLUSTER),
                   [d, em.typed(rank, dt.int32)])
    em.b.store(em.expr(value), peer, align=4)


@lowering("ptx.st_async")
def _st_async(em, c):
    """Inline PTX: both shared::cta addresses (32-bit window offsets) mapped into CTA
    ``rank`` with ``mapa.shared::cluster.u32``, then ``st.async.shared::cluster
    .mbarrier::complete_tx::bytes.b32 [a], value, [b]`` (LLVM 22 has no intrinsic for it)."""
    dst, value, rank, mbar = c.args
    d, _ = em.address(dst, ty.SHARED)
    bar, _ = em.address(mbar, ty.SHARED)
    v = em.expr(value)
    if v.type != ty.I32:
        v = em.b.bitcast(v, ty.I32)
    ops = [em.b.trunc(em.b.ptrtoint(d, ty.I64), ty.I32), v,
           em.b.trunc(em.b.ptrtoint(bar, ty.I64), ty.I32), em.typed(rank, dt.int32)]
    text = ("{ .reg .b32 a, b; mapa.shared::cluster.u32 a, $0, $3; "
            "mapa.shared::cluster.u32 b, $2, $3; "
            "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [a], $1, [b]; }")
    fnty = ir.FunctionType(ty.VOID, [o.type for o in ops])
    em.b.call(ir.InlineAsm(fnty, text, "r,r,r,r,~{memory}", side_effect=True), ops)


@lowering("ptx.cp_async.bulk.g2s")
def _bulk_g2s(em, c):
    """``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src],
    size, [mbar]`` through ``llvm.nvvm.cp.async.bulk.global.to.shared.cluster``."""
    dst, src, nbytes, mbar = c.args
    d, _ = em.address(dst, ty.SHARED)
    d = em.b.addrspacecast(d, ty.ptr(SHARED_CLUSTER))
    bar, _ = em.address(mbar, ty.SHARED)
    s, _ = em.address(src, ty.GLOBAL)
    size = em.typed(nbytes, dt.int32)
    em.call("llvm.nvvm.cp.async.bulk.global.to.shared.cluster", ty.VOID,
            [d, bar, s, size, ir.Constant(ty.I16, 0), ir.Constant(ty.I64, 0),
             ir.Constant(ty.I1, 0), ir.Constant(ty.I1, 0)])


@lowering("ptx.cp_async.bulk.s2g")
def _bulk_s2g(em, c):
    """``cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size`` (no cache hint)."""
    dst, src, nbytes = c.args
    d, _ = em.address(dst, ty.GLOBAL)
    s, _ = em.address(src, ty.SHARED)
    size = em.typed(nbytes, dt.int32)
    em.call("llvm.nvvm.cp.async.bulk.shared.cta.to.global", ty.VOID,
            [d, s, size, ir.Constant(ty.I64, 0), ir.Constant(ty.I1, 0)])
