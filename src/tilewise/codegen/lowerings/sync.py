"""Hand-written lowerings of the barriers and warp primitives: ``bar.sync``,
``elect.sync``, the blocking ``mbarrier.try_wait`` loop and the (possibly remote)
``mbarrier.arrive.expect_tx`` (PTX ISA 9.7.13.15; LLVM 22.1 signatures of
``/work/shared/reference/nvptx-llvm22-compat.md`` §2, rows "barrier", "elect", "mbarrier",
"mapa")."""

from __future__ import annotations

from llvmlite import ir

from ...ir import dtype as dt
from .. import types as ty
from ..registry import lowering
from .args import i32

_TRY_WAIT_PARITY = "llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta"


@lowering("cuda.cta_sync")
def _cta_sync(em, c):
    em.call("llvm.nvvm.barrier.cta.sync.aligned.all", ty.VOID, [i32(0)])


@lowering("ptx.elect_sync")
def _elect_sync(em, c):
    """``elect.sync %r|%p, -1``: the intrinsic returns ``{i32 lane, i1 elected}``."""
    pair = em.call("llvm.nvvm.elect.sync", ir.LiteralStructType([ty.I32, ty.I1]), [i32(-1)])
    return em.b.extract_value(pair, 1)


@lowering("ptx.mbarrier.try_wait")
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
