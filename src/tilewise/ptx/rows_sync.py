"""The rows of synchronisation (:mod:`tilewise.ptx.table`): the cluster barrier and fences,
named barriers and the CTA barrier, warp election, ``setmaxnreg``, mbarriers; and, beside
them in the table's order, the synchronous vector copy ``ld_st`` and ``smem_addr``.
"""

from __future__ import annotations

from ..ir import dtype as dt
from .op import Asm, PtxOp
from .op import param as _p
from .op import shared_ptr as _shared
from .traits import blocking

_PROXY_SPACES = (("shared::cta", ".shared_cta"), ("shared::cluster", ".shared_cluster"),
                 ("global", ".global"))

ROWS = [
    # ---- clusters, PTX ISA §9.7.13.4 (barrier.cluster) and §9.7.13.15.18
    PtxOp("ptx.barrier.cluster.arrive",
          (_p("relaxed", "flag", False, spell=((1, ".relaxed"), (0, ""))),
           _p("aligned", "flag", False, spell=((1, ".aligned"), (0, "")))),
          "barrier.cluster.arrive{.relaxed}{.aligned}", "cluster",
          llvm="llvm.nvvm.barrier.cluster.arrive{relaxed}{aligned}",
          doc="arrive on the cluster barrier (release; relaxed=True: this thread releases "
              "nothing); "
              "aligned=True: every thread of the warp executes it"),
    PtxOp("ptx.barrier.cluster.wait",
          (_p("aligned", "flag", False, spell=((1, ".aligned"), (0, ""))),),
          "barrier.cluster.wait{.aligned}", "cluster",
          llvm="llvm.nvvm.barrier.cluster.wait{aligned}", traits=blocking(),
          doc="wait until every thread of every CTA of the cluster has arrived (acquire)"),
    PtxOp("cuda.cluster_sync", (), "barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned",
          "cluster", traits=blocking(),
          doc="all threads of the cluster: arrive, then wait (TIRx's spelling)"),
    PtxOp("ptx.fence.mbarrier_init", (), "fence.mbarrier_init.release.cluster", "cluster",
          llvm="llvm.nvvm.fence.mbarrier_init.release.cluster",
          doc="make this thread's mbarrier.init visible to the cluster (before the barrier "
              "that precedes remote arrivals or multicast copies)"),
    PtxOp("ptx.fence.proxy_async",
          (_p("space", "str", "shared::cta", [s for s, _ in _PROXY_SPACES],
              spell=_PROXY_SPACES),),
          "fence.proxy.async{.space}", "tma", llvm="llvm.nvvm.fence.proxy.async{space}",
          doc="order this thread's generic-proxy accesses of `space` (shared::cta, the "
              "default; shared::cluster; global) with the async proxy"),
    # ---- a synchronous vector move: ld.<space>.v{1,2,4}.b{8..32} then st.<space>...
    PtxOp("ptx.ld_st", (_p("dst", "ptr"), _p("src", "ptr"),
                        _p("nbytes", "imm", choices=(1, 2, 4, 8, 16))),
          "ld.<src-space>.v<n>.b32 {r..}, [src]; st.<dst-space>.v<n>.b32 [dst], {r..}", None,
          doc="copy nbytes (naturally aligned) as one vector load and one vector store"),
    # ---- barriers, warp primitives, registers
    PtxOp("cuda.cta_sync", (), "bar.sync 0", None, doc="__syncthreads()"),
    PtxOp("ptx.bar.sync", (_p("id"), _p("count")), "bar.sync id, count", None,
          traits=blocking(),
          doc="named barrier `id` (1..15; 0 is __syncthreads's): wait until `count` threads "
              "(a multiple of 32, whole warps) have arrived, this one included"),
    PtxOp("ptx.bar.arrive", (_p("id"), _p("count")), "bar.arrive id, count", None,
          doc="arrive on named barrier `id` without waiting (a producer signalling the "
              "`count` - k threads that bar.sync on it)"),
    PtxOp("ptx.elect_sync", (), "elect.sync %r|%p, 0xffffffff", "elect_sync", returns=dt.bool_,
          doc="true in one active lane of each warp (the lowest)"),
    PtxOp("ptx.setmaxnreg", (_p("inc", "flag", spell=((1, "inc"), (0, "dec"))),
                             _p("n", "imm", lo=24, hi=256, step=8)),
          "setmaxnreg.{inc|dec}.sync.aligned.u32 n", "setmaxnreg",
          llvm="llvm.nvvm.setmaxnreg.{inc}.sync.aligned.u32",
          doc="raise (inc=True) or lower the per-thread register limit of the warps of the "
              "warpgroup to n (24..256, a multiple of 8); the whole warpgroup executes it"),
    # ---- mbarrier, PTX ISA §9.7.13.15
    PtxOp("ptx.mbarrier.init", (_shared(), _p("count")),
          "mbarrier.init.shared.b64 [mbar], count", "cp_async",
          llvm="llvm.nvvm.mbarrier.init.shared"),
    PtxOp("ptx.mbarrier.arrive", (_shared(),), "mbarrier.arrive.shared.b64 state, [mbar]",
          "cp_async", returns=dt.uint64, llvm="llvm.nvvm.mbarrier.arrive.shared"),
    PtxOp("ptx.mbarrier.arrive_expect_tx", (_shared(), _p("tx_bytes")),
          "mbarrier.arrive.expect_tx.shared.b64 state, [mbar], tx", "mbarrier_tx",
          returns=dt.uint64, llvm="llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta"),
    PtxOp("ptx.mbarrier.arrive.expect_tx",
          (_shared(), _p("tx_bytes"), _p("remote", "rank", None),
           _p("pred", "value", None, dtype=dt.bool_),
           _p("scope", "str", None, choices=("cluster", "cta"))),
          "mbarrier.arrive.expect_tx{.release.cluster}{.shared::cluster}.b64 _, [mbar], tx",
          "mbarrier_tx",
          doc="expect_tx(tx_bytes) then arrive (TIRx's spelling; no state is returned): on "
              "this CTA's mbarrier, or with remote=rank on the mbarrier at the same shared "
              "offset in CTA `rank` of the cluster (a shared::cluster address, by mapa); "
              "pred: only the threads where it is true arrive. A remote arrive releases at "
              "cluster scope (a fence before it: the arriving thread's writes reach the "
              "other CTA first); scope=\"cta\" releases at CTA scope, no fence: for "
              "saying a buffer's reads are done (a consumer freeing a stage that a peer's "
              "multicast copy refills, as CUTLASS's ClusterBarrier::arrive does), not for "
              "publishing data written before it"),
    PtxOp("ptx.mbarrier.expect_tx", (_shared(), _p("tx_bytes")),
          "mbarrier.expect_tx.relaxed.cta.shared.b64 [mbar], tx", "mbarrier_tx",
          llvm="llvm.nvvm.mbarrier.expect.tx.scope.cta.space.cta"),
    PtxOp("ptx.mbarrier.try_wait_parity", (_shared(), _p("parity")),
          "mbarrier.try_wait.parity.shared.b64 p, [mbar], parity", "mbarrier_tx",
          returns=dt.bool_, llvm="llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta",
          traits=blocking("mbarrier"),
          doc="one try: true when the phase of parity `parity` has completed"),
    PtxOp("ptx.mbarrier.try_wait",
          (_shared(), _p("parity"), _p("scope", "str", None, choices=("cta", "cluster"))),
          "mbarrier.try_wait.parity{.acquire.cluster}.shared.b64 p, [mbar], parity (looped "
          "until p)",
          "mbarrier_tx", aliases=("ptx.mbarrier.wait_parity",), traits=blocking("mbarrier"),
          doc="block until the phase of parity `parity` has completed: a try_wait.parity "
              "loop (TIRx's spelling; also T.ptx.mbarrier.wait_parity). Its acquire is at "
              "CTA scope; scope=\"cluster\" acquires at cluster scope, which a phase "
              "completed by other CTAs' st.async (released at cluster scope) needs for "
              "their data"),
    # ---- flags between CTAs in global memory: PTX ISA §9.7.13.6 (red), §9.7.9.8 (ld.acquire)
    PtxOp("ptx.red.add", (_p("ptr", "ptr", space="global"), _p("value", dtype=dt.uint32)),
          "red.release.gpu.global.add.u32 [ptr], value", None,
          doc="atomically add `value` to the 32-bit word at ptr (global), with release "
              "semantics at GPU scope: this thread's earlier writes are visible to a thread "
              "that sees the sum through T.ptx.wait_flag. Each thread of the call adds"),
    PtxOp("ptx.wait_flag", (_p("ptr", "ptr", space="global"), _p("value", dtype=dt.uint32)),
          "ld.acquire.gpu.global.u32 v, [ptr] (looped until v >= value)", None,
          doc="spin until the 32-bit word at ptr (global) is at least `value` (acquire, GPU "
              "scope): what the threads that added to it with T.ptx.red.add wrote before "
              "is then visible to this thread. Wait only for CTAs with a lower index: the "
              "hardware starts CTAs in index order and does not preempt them, so waiting "
              "for a later CTA can hang (the simulator runs CTAs in index order and "
              "reports such a wait)"),
    # ---- programmatic dependent launch: PTX ISA §9.7.13.14 (griddepcontrol)
    PtxOp("ptx.griddepcontrol.wait", (), "griddepcontrol.wait", "griddepcontrol",
          llvm=Asm("griddepcontrol.wait;", "~{memory}"),
          doc="wait until the grids this one depends on programmatically (the kernel before "
              "it on its stream, when this one is launched with tw.compile(..., "
              "programmatic=True)) have completed and their memory is visible; returns at "
              "once in a launch without such a dependency. Call it before reading what "
              "the earlier kernel wrote"),
    PtxOp("ptx.griddepcontrol.launch_dependents", (), "griddepcontrol.launch_dependents",
          "griddepcontrol", llvm=Asm("griddepcontrol.launch_dependents;", "~{memory}"),
          doc="let the kernel launched programmatically after this one on its stream be "
              "scheduled once every CTA of this grid has called it (or exited); a hint "
              "that orders no memory: the dependent still waits with "
              "T.ptx.griddepcontrol.wait for this grid to complete"),
    PtxOp("ptx.smem_addr", (_shared("ptr"),), "mov.b64 a, ptr (its shared-window offset)", None,
          returns=dt.uint32,
          doc="the 32-bit shared-window address of a shared-memory location (what matrix "
              "descriptors and shared::cta operands hold)"),
]
