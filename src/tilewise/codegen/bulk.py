"""LLVM lowerings of the bulk (non-tensor) TMA copies, their groups, the async-proxy fence
and the blocking mbarrier parity wait (PTX ISA 9.7.9.25.4, 9.7.12.4, 9.7.13.15.16).

Signatures are the LLVM 22.1 ones of ``/work/shared/reference/nvptx-llvm22-compat.md``
(rows "tma-bulk", "fence"). Everything here needs the table's ``tma`` (sm_90+, PTX 8.0) or
``mbarrier_tx`` feature, which ``passes/check_targets.py`` has checked before code generation,
so only forms that select at PTX 8.0 on sm_90 are emitted:

* g2s uses the ``.shared::cluster`` destination form (PTX 8.0); the ``.shared::cta`` form
  needs PTX 8.6, which sm_90a kernels do not get. A CTA's own shared address is a valid
  ``shared::cluster`` address of the executing CTA, so the destination is an
  ``addrspacecast`` from ``addrspace(3)`` to ``addrspace(7)``. No multicast, no cache hint
  (both flags false, their operands zero).
* s2g, commit, wait and wait.read map one to one; the wait counts are immediates.
* ``mbarrier.wait_parity`` is a loop around ``mbarrier.try_wait.parity`` (the intrinsic the
  ``try_wait_parity`` lowering uses) that branches back while it returns false.
"""

from __future__ import annotations

from llvmlite import ir

from ..ir import dtype as dt
from . import types as ty
from .registry import lowering, register_direct

SHARED_CLUSTER = 7  # NVPTX address space of shared::cluster addresses
_TRY_WAIT_PARITY = "llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta"



register_direct({
    "ptx.cp_async.bulk.commit_group": "llvm.nvvm.cp.async.bulk.commit.group",
    "ptx.cp_async.bulk.wait_group": "llvm.nvvm.cp.async.bulk.wait.group",
    "ptx.cp_async.bulk.wait_group_read": "llvm.nvvm.cp.async.bulk.wait.group.read",
    "ptx.fence.proxy_async": "llvm.nvvm.fence.proxy.async.shared_cta",
})


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


@lowering("ptx.mbarrier.wait_parity")
def _mbar_wait_parity(em, c):
    """``wait: p = try_wait.parity(mbar, parity); br p, done, wait``. The operands are
    computed once, before the loop; try_wait may return false spuriously, hence the loop."""
    bar, _ = em.address(c.args[0], ty.SHARED)
    parity = em.typed(c.args[1], dt.int32)
    loop = em.fn.append_basic_block("mbar_wait")
    done = em.fn.append_basic_block("mbar_wait_done")
    em.b.branch(loop)
    em.b.position_at_end(loop)
    ok = em.call(_TRY_WAIT_PARITY, ty.I1, [bar, parity])
    em.b.cbranch(ok, done, loop)
    em.b.position_at_end(done)
