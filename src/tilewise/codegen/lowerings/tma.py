"""Hand-written lowerings of the TMA tensor copies, the shared -> shared (cluster) bulk copy
and the cluster barrier pair (PTX ISA §9.7.9.25.5, §9.7.13.4).

Signatures are LLVM 22.1's (``/work/shared/reference/nvptx-llvm22-compat.md`` §2, rows
"tma-tensor", "tma-bulk", "mapa", "barrier"):

* g2s: ``llvm.nvvm.cp.async.bulk.tensor.g2s.tile.<d>d(ptr addrspace(7) dst, ptr
  addrspace(3) mbar, ptr tmap, i32 x d, i16 mask, i64 policy, i1 multicast, i1 hint, i32
  cta_group)``: the ``.shared::cluster`` destination form (the ``.shared::cta`` one needs PTX
  8.6, which sm_90a kernels do not get); the CTA's own shared address cast to
  ``addrspace(7)`` is a valid ``shared::cluster`` address of the executing CTA. The two flags
  are immediates: the mask and the policy are passed (and spelt) only when set.
  ``cta_group`` 1/2 selects on tcgen05 targets only, which the table's ``feature_by``
  enforced before any LLVM was built.
* s2g / reduce: ``(ptr addrspace(3) src, ptr tmap, i32 x d, i64 policy, i1 hint)``.
* The tensor map is the kernel's ``byval`` ``"nvvm.grid_constant"`` parameter itself (a
  generic pointer to the parameter space: ``cvta.param``, no local copy).
* prefetch: ``llvm.nvvm.prefetch.tensormap.p101`` on the parameter cast to
  ``addrspace(101)`` (one ``prefetch.param.tensormap``; the ``.p0`` form emits two).
* s2c: ``mapa.shared::cluster`` of the destination and of the mbarrier (both in CTA
  ``rank``), then ``llvm.nvvm.cp.async.bulk.shared.cta.to.cluster(ptr addrspace(7) dst,
  ptr addrspace(3) mbar, ptr addrspace(3) src, i32 size)``; LLVM types the mbarrier operand
  as ``addrspace(3)`` but PTX reads it as a ``shared::cluster`` address, so the mapped
  address is passed through unchanged (``ptrtoint``/``inttoptr``, no ``cvta``).
"""

from __future__ import annotations

from llvmlite import ir

from ...ir import dtype as dt
from ...ptx import tma
from .. import types as ty
from ..registry import lowering
from .args import i32, imm
from .memory import SHARED_CLUSTER

PARAM = 101  # NVPTX address space of kernel parameters (prefetch.tensormap.p101)
_I16 = ir.IntType(16)


def _policy(hint) -> tuple[ir.Constant, ir.Constant]:
    """(i64 policy, i1 flag) of a ``cache_hint`` operand (None: no hint)."""
    if hint is None:
        return ir.Constant(ty.I64, 0), ir.Constant(ty.I1, 0)
    return ir.Constant(ty.I64, tma.CACHE_POLICY[hint.value]), ir.Constant(ty.I1, 1)


def _coords(em, coords) -> list[ir.Value]:
    return [em.typed(c, dt.int32) for c in coords]


@lowering("ptx.cp_async.bulk.tensor.g2c")
def _g2c(em, c):
    dim, dst, mbar, tmap, mask, cta_group, hint, *coords = c.args
    d, _ = em.address(dst, ty.SHARED)
    d = em.b.addrspacecast(d, ty.ptr(SHARED_CLUSTER))
    bar, _ = em.address(mbar, ty.SHARED)
    mc = em.typed(mask, dt.DTYPES["uint16"]) if mask is not None else ir.Constant(_I16, 0)
    policy, has_hint = _policy(hint)
    em.call(f"llvm.nvvm.cp.async.bulk.tensor.g2s.tile.{imm(em, dim)}d", ty.VOID,
            [d, bar, em.expr(tmap), *_coords(em, coords), mc, policy,
             ir.Constant(ty.I1, int(mask is not None)), has_hint, i32(imm(em, cta_group))])


@lowering("ptx.cp_async.bulk.tensor.s2g")
def _s2g(em, c):
    dim, src, tmap, hint, *coords = c.args
    s, _ = em.address(src, ty.SHARED)
    policy, has_hint = _policy(hint)
    em.call(f"llvm.nvvm.cp.async.bulk.tensor.s2g.tile.{imm(em, dim)}d", ty.VOID,
            [s, em.expr(tmap), *_coords(em, coords), policy, has_hint])


@lowering("ptx.cp_async.bulk.tensor.s2g_reduce")
def _s2g_reduce(em, c):
    dim, src, tmap, op, hint, *coords = c.args
    s, _ = em.address(src, ty.SHARED)
    policy, has_hint = _policy(hint)
    em.call(f"llvm.nvvm.cp.async.bulk.tensor.reduce.{op.value}.tile.{imm(em, dim)}d",
            ty.VOID, [s, em.expr(tmap), *_coords(em, coords), policy, has_hint])


@lowering("ptx.prefetch_tensormap")
def _prefetch(em, c):
    p = em.b.addrspacecast(em.expr(c.args[0]), ty.ptr(PARAM))
    em.call("llvm.nvvm.prefetch.tensormap.p101", ty.VOID, [p])


def mapa(em, ptr, rank) -> ir.Value:
    """CTA ``rank``'s ``shared::cluster`` address of this CTA's shared pointer ``ptr``."""
    return em.call("llvm.nvvm.mapa.shared.cluster", ty.ptr(SHARED_CLUSTER),
                   [ptr, em.typed(rank, dt.int32)])


@lowering("ptx.cp_async.bulk.s2c")
def _s2c(em, c):
    dst, src, nbytes, mbar, rank = c.args
    d = mapa(em, em.address(dst, ty.SHARED)[0], rank)
    bar = mapa(em, em.address(mbar, ty.SHARED)[0], rank)
    bar = em.b.inttoptr(em.b.ptrtoint(bar, ty.I64), ty.ptr(ty.SHARED))
    s, _ = em.address(src, ty.SHARED)
    em.call("llvm.nvvm.cp.async.bulk.shared.cta.to.cluster", ty.VOID,
            [d, bar, s, em.typed(nbytes, dt.int32)])


@lowering("cuda.cluster_sync")
def _cluster_sync(em, c):
    em.call("llvm.nvvm.barrier.cluster.arrive.aligned", ty.VOID, [])
    em.call("llvm.nvvm.barrier.cluster.wait.aligned", ty.VOID, [])
