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
from .memory import SHARED_CLUSTER

_TRY_WAIT_PARITY = "llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta"


@lowering("cuda.cta_sync")
def _cta_sync(em, c):
    em.call("llvm.nvvm.barrier.cta.sync.aligned.all", ty.VOID, [i32(0)])


@lowering("ptx.bar.sync")
def _bar_sync(em, c):
    _named_barrier(em, c, "bar.sync", "llvm.nvvm.barrier.cta.sync.aligned.count")


@lowering("ptx.bar.arrive")
def _bar_arrive(em, c):
    _named_barrier(em, c, "bar.arrive", "llvm.nvvm.barrier.cta.arrive.aligned.count")


def _named_barrier(em, c, what: str, intrinsic: str):
    """``barrier.cta.{sync,arrive}.aligned.count id, count``. A constant count that is not
    whole warps is refused here, at the call's line (ptxas would refuse the PTX; the
    simulator reports it as a hazard when it runs)."""
    ident, count = c.args
    n = em.constant(count)
    if n is not None and (n <= 0 or n % 32):
        raise em.error(f"{what} {em.constant(ident)}, {n}: the thread count of a named barrier "
                       "must be a positive multiple of 32 (whole warps)", c,
                       hint="count whole warps: 32, 64, ... up to the CTA's threads")
    em.call(intrinsic, ty.VOID, [em.typed(ident, dt.int32), em.typed(count, dt.int32)])


@lowering("ptx.elect_sync")
def _elect_sync(em, c):
    """``elect.sync %r|%p, -1``: the intrinsic returns ``{i32 lane, i1 elected}``."""
    pair = em.call("llvm.nvvm.elect.sync", ir.LiteralStructType([ty.I32, ty.I1]), [i32(-1)])
    return em.b.extract_value(pair, 1)


@lowering("ptx.mbarrier.try_wait")
def _mbar_wait_parity(em, c):
    """``wait: p = try_wait.parity(mbar, parity); br p, done, wait``. The operands are
    computed once, before the loop; try_wait may return false spuriously, hence the loop.
    ``scope="cluster"``: ``.acquire.cluster`` (the ``scope.cluster`` intrinsic)."""
    bar, _ = em.address(c.args[0], ty.SHARED)
    parity = em.typed(c.args[1], dt.int32)
    scope = c.args[2] if len(c.args) > 2 else None
    scope = getattr(scope, "value", scope) or "cta"
    intrinsic = _TRY_WAIT_PARITY.replace("scope.cta", f"scope.{scope}")
    loop = em.fn.append_basic_block("mbar_wait")
    done = em.fn.append_basic_block("mbar_wait_done")
    em.b.branch(loop)
    em.b.position_at_end(loop)
    ok = em.call(intrinsic, ty.I1, [bar, parity])
    em.b.cbranch(ok, done, loop)
    em.b.position_at_end(done)


@lowering("ptx.mbarrier.arrive.expect_tx")
def _mbar_arrive_tx(em, c):
    """Local: ``mbarrier.arrive.expect_tx.shared.b64`` (the state it returns is dropped).
    Remote: ``mapa.shared::cluster`` turns the CTA-local address into CTA ``remote``'s
    ``shared::cluster`` address, then ``mbarrier.arrive.expect_tx.release.cluster
    .shared::cluster.b64 _, [addr], tx`` (a remote arrive has no state; ``scope="cta"``
    drops ``.release.cluster``: a CTA-scope release, no fence). ``pred`` guards either
    with a branch (PTX's ``@p``)."""
    mbar, tx, remote, pred, scope = c.args
    scope = getattr(scope, "value", scope) or "cluster"
    if pred is None:
        _arrive_tx(em, mbar, tx, remote, scope)
        return
    with em.b.if_then(em.truth(pred)):
        _arrive_tx(em, mbar, tx, remote, scope)


def _arrive_tx(em, mbar, tx, remote, scope="cluster"):
    bar, _ = em.address(mbar, ty.SHARED)
    tx = em.typed(tx, dt.int32)
    if remote is None:
        em.call("llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta", ty.I64, [bar, tx])
        return
    peer = em.call("llvm.nvvm.mapa.shared.cluster", ty.ptr(SHARED_CLUSTER),
                   [bar, em.typed(remote, dt.int32)])
    em.call(f"llvm.nvvm.mbarrier.arrive.expect.tx.scope.{scope}.space.cluster", ty.VOID,
            [peer, tx])


@lowering("ptx.red.add")
def _red_add(em, c):
    """``red.release.gpu.global.add.u32 [ptr], value`` (inline PTX: LLVM's atomicrmw would
    return the old value, an atom where no value is wanted)."""
    ptr, value = c.args
    p, _ = em.address(ptr, ty.GLOBAL)
    ops = [em.b.ptrtoint(p, ty.I64), em.typed(value, dt.uint32)]
    fnty = ir.FunctionType(ty.VOID, [o.type for o in ops])
    em.b.call(ir.InlineAsm(fnty, "red.release.gpu.global.add.u32 [$0], $1;", "l,r",
                           side_effect=True), ops)


@lowering("ptx.wait_flag")
def _wait_flag(em, c):
    """``wait: v = ld.acquire.gpu.global.u32 [ptr]; br v >= value, done, wait`` (inline PTX
    for the load, which the loop must not hoist: the asm has side effects)."""
    ptr, value = c.args
    p, _ = em.address(ptr, ty.GLOBAL)
    addr = em.b.ptrtoint(p, ty.I64)
    want = em.typed(value, dt.uint32)
    load = ir.InlineAsm(ir.FunctionType(ty.I32, [ty.I64]),
                        "ld.acquire.gpu.global.u32 $0, [$1];", "=r,l", side_effect=True)
    loop = em.fn.append_basic_block("flag_wait")
    done = em.fn.append_basic_block("flag_wait_done")
    em.b.branch(loop)
    em.b.position_at_end(loop)
    v = em.b.call(load, [addr])
    em.b.cbranch(em.b.icmp_unsigned(">=", v, want), done, loop)
    em.b.position_at_end(done)
