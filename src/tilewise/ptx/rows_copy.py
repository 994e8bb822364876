"""The rows of the asynchronous copies (:mod:`tilewise.ptx.table`): cp.async (LDGSTS), the
TMA unit's bulk copies, and its tensor copies (the tensor-map facts in :mod:`tilewise.ptx.tma`).
"""

from __future__ import annotations

from ..ir import dtype as dt
from . import tma
from .op import PtxOp
from .op import param as _p
from .op import shared_ptr as _shared
from .op import word_value
from .operands import Param
from .traits import async_op, completing

_DIM = _p("dim", "imm", lo=1, hi=tma.MAX_RANK)
_CACHE_HINT = _p("cache_hint", "str", None, tuple(tma.CACHE_POLICY))


def _coords() -> Param:
    return _p("coords", "coords", count=lambda v: v["dim"])


ROWS = [
    # ---- cp.async (LDGSTS), PTX ISA §9.7.9.25
    PtxOp("ptx.cp_async", (_shared("dst"), _p("src", "ptr", space="global"),
                           _p("cp_size", "imm", choices=(4, 8, 16)),
                           _p("src_size", "value", None), _p("ignore_src", "value", None),
                           _p("prefetch", "imm", None, (64, 128, 256))),
          "cp.async.{ca|cg}.shared.global{.L2::NB} [dst], [src], cp-size{, src-size}",
          "cp_async", traits=async_op("cp_async_group"),
          doc="asynchronous global->shared copy of 4/8/16 bytes; .cg when 16 bytes; "
              "prefetch: the L2 prefetch size hint in bytes"),
    PtxOp("ptx.cp_async.commit_group", (), "cp.async.commit_group", "cp_async",
          llvm="llvm.nvvm.cp.async.commit.group", traits=completing("cp_async_group")),
    PtxOp("ptx.cp_async.wait_group", (_p("n", "imm", 0, lo=0, hi=2**31 - 1),),
          "cp.async.wait_group n", "cp_async", llvm="llvm.nvvm.cp.async.wait.group",
          traits=completing("cp_async_group")),
    PtxOp("ptx.cp_async.wait_all", (), "cp.async.wait_all", "cp_async",
          llvm="llvm.nvvm.cp.async.wait.all", traits=completing("cp_async_group")),
    PtxOp("ptx.cp_async.mbarrier_arrive", (_shared(),),
          "cp.async.mbarrier.arrive.noinc.shared.b64 [mbar]", "cp_async",
          llvm="llvm.nvvm.cp.async.mbarrier.arrive.noinc.shared",
          traits=completing("cp_async_group")),
    # ---- bulk copies by the TMA unit (non-tensor), PTX ISA §9.7.9.25.4
    PtxOp("ptx.cp_async.bulk.g2s", (_shared("dst"), _p("src", "ptr", space="global"),
                                    _p("nbytes"), _shared()),
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], "
          "size, [mbar]", "tma", traits=async_op("mbarrier", "async"),
          doc="global -> shared copy of nbytes (a multiple of 16, both addresses 16-byte "
              "aligned) that performs complete_tx(nbytes) on mbar when the bytes have landed"),
    PtxOp("ptx.cp_async.bulk.s2g", (_p("dst", "ptr", space="global"), _shared("src"),
                                    _p("nbytes")),
          "cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size", "tma",
          traits=async_op("bulk_group", "async"),
          doc="shared -> global copy of nbytes, tracked by this thread's bulk async-groups"),
    PtxOp("ptx.cp_async.bulk.commit_group", (), "cp.async.bulk.commit_group", "tma",
          llvm="llvm.nvvm.cp.async.bulk.commit.group", traits=completing("bulk_group")),
    PtxOp("ptx.cp_async.bulk.wait_group", (_p("n", "imm", 0, lo=0, hi=2**31 - 1),),
          "cp.async.bulk.wait_group n", "tma", llvm="llvm.nvvm.cp.async.bulk.wait.group",
          traits=completing("bulk_group"),
          doc="wait until at most n of this thread's bulk groups are pending"),
    PtxOp("ptx.cp_async.bulk.wait_group_read", (_p("n", "imm", 0, lo=0, hi=2**31 - 1),),
          "cp.async.bulk.wait_group.read n", "tma",
          llvm="llvm.nvvm.cp.async.bulk.wait.group.read", traits=completing("bulk_group"),
          doc="wait until at most n bulk groups still read their shared-memory source"),
    # ---- tensor copies by the TMA unit, PTX ISA §9.7.9.25.5 (facts in ptx/tma.py)
    PtxOp("ptx.cp_async.bulk.tensor.g2c",
          (_DIM, _shared("dst"), _shared(), _p("tmap", "tensormap"),
           _p("cta_mask", "value", None, dtype=dt.DTYPES["uint16"]),
           _p("cta_group", "imm", 0, (0, 1, 2)), _CACHE_HINT),
          "cp.async.bulk.tensor.<dim>d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
          "{.multicast::cluster}{.cta_group::N}{.L2::cache_hint} [dst], [tmap, {coords}], "
          "[mbar]{, cta_mask}{, policy}", "tma", regs=_coords(),
          feature_by=("cta_group", {1: "tcgen05", 2: "tcgen05"}),
          traits=async_op("mbarrier", "async"),
          doc="global -> shared copy of the tensor map's box at `coords` (innermost first; "
              "out-of-bounds elements filled) that performs complete_tx(box bytes) on mbar; "
              "with cta_mask, into the same offsets of every CTA of the cluster in the mask "
              "and on their mbarriers at mbar's offset"),
    PtxOp("ptx.cp_async.bulk.tensor.s2g",
          (_DIM, _shared("src"), _p("tmap", "tensormap"), _CACHE_HINT),
          "cp.async.bulk.tensor.<dim>d.global.shared::cta.tile.bulk_group{.L2::cache_hint} "
          "[tmap, {coords}], [src]{, policy}", "tma", regs=_coords(),
          traits=async_op("bulk_group", "async"),
          doc="shared -> global copy of a box (elements out of bounds are not written), "
              "tracked by this thread's bulk async-groups"),
    PtxOp("ptx.cp_async.bulk.tensor.s2g_reduce",
          (_DIM, _shared("src"), _p("tmap", "tensormap"),
           _p("op", "str", choices=tma.REDUCE_OPS), _CACHE_HINT),
          "cp.reduce.async.bulk.tensor.<dim>d.global.shared::cta.<op>.tile.bulk_group"
          "{.L2::cache_hint} [tmap, {coords}], [src]{, policy}", "tma", regs=_coords(),
          traits=async_op("bulk_group", "async"),
          doc="shared -> global reduction (add, min or max) of a box into global memory"),
    PtxOp("ptx.prefetch_tensormap", (_p("tmap", "tensormap"),),
          "prefetch.param.tensormap [tmap]", "tma",
          doc="bring a tensor map into the cache ahead of the copies that use it"),
    PtxOp("ptx.cp_async.bulk.s2c",
          (_shared("dst"), _shared("src"), _p("nbytes"), _shared(), _p("rank", "rank")),
          "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [dst], "
          "[src], size, [mbar]", "tma", traits=async_op("mbarrier", "async"),
          doc="shared -> shared copy of nbytes (a multiple of 16, 16-byte aligned) into CTA "
              "`rank` of the cluster: dst and mbar are this CTA's addresses of the buffer and "
              "mbarrier, mapped to that CTA (mapa); complete_tx(nbytes) on its mbarrier"),
    # ---- a store into another CTA's shared memory, PTX ISA §9.7.9.10 (st) and §9.7.9.21
    PtxOp("ptx.st_cluster", (_shared("dst"), _p("value"), _p("rank", "rank")),
          "mapa.shared::cluster.u64 a, dst, rank; st.shared::cluster.b32 [a], value", "cluster",
          check=word_value("st_cluster stores one 32-bit value", "store"),
          doc="store a 32-bit value at dst, this CTA's address of a shared buffer, in CTA "
              "`rank` of the cluster (the same offset there; mapa). An ordinary weak store: "
              "the cluster barrier (T.cuda.cluster_sync, release then acquire) makes it "
              "visible to that CTA's threads, and every CTA of the cluster must have "
              "started (a cluster barrier before the first such store) and must not have "
              "exited"),
    PtxOp("ptx.st_async", (_shared("dst"), _p("value"), _p("rank", "rank"), _shared()),
          "mapa.shared::cluster.u32 a, dst, rank; mapa.shared::cluster.u32 b, mbar, rank; "
          "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [a], value, [b]",
          "st_async", check=word_value("st_async stores one 32-bit value", "store"),
          traits=async_op("mbarrier"),  # (the generic proxy, PTX ISA §9.7.9.12)
          doc="store a 32-bit value at dst, this CTA's address of a shared buffer, in CTA "
              "`rank` of the cluster (the same offset there), and complete_tx(4) on that "
              "CTA's mbarrier at mbar's offset: its threads see the value once they have "
              "waited for the mbarrier's phase (no cluster barrier, no fence). Every CTA of "
              "the cluster must have started (a cluster barrier first, after the "
              "mbarrier's init and fence.mbarrier_init) and must not have exited"),
]
