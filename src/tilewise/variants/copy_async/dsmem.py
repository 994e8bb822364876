"""copy_async -> dsmem: shared memory of this CTA -> shared memory of another CTA of the
cluster (distributed shared memory), by the copy engine.

PTX ISA §9.7.9.25.4 (``cp.async.bulk.shared::cluster.shared::cta``): one thread hands the
engine a contiguous range (a multiple of 16 bytes, 16-byte aligned); the bytes land in the
destination CTA and ``complete_tx`` counts on an mbarrier *of the destination CTA*. Both
addresses are written as this CTA's (``dst`` and ``mbar`` name the buffer and mbarrier at
the same offsets in every CTA, as shared allocations are); the instruction maps them to
CTA ``remote_cta_id`` with ``mapa``. Completion is the caller's: the destination CTA
announces the bytes (``T.ptx.mbarrier.arrive.expect_tx``) and waits on its mbarrier; the
source must not be overwritten before that wait (a cluster barrier, or an mbarrier the
destination arrives on remotely, tells the source CTA).

Algorithm:

1. Accept shared -> shared copies of one dtype and size on targets with clusters (sm_90+),
   with ``remote_cta_id=`` (the destination's rank in the cluster) and ``mbar=``, scope
   thread / warp / warpgroup / cta whose first thread is active, memory-only layouts.
2. Cut the tile into runs contiguous on both sides (as the ``bulk`` variant does: one run
   length, a multiple of 16 bytes, every run 16-byte aligned on both sides).
3. Emit, on the scope's first thread, one ``T.ptx.cp_async.bulk.s2c`` per run.
4. Emit no expect_tx, wait or barrier.

Priority 11 (TIRx gives it 10, like ``tma``; here priorities are distinct, and the two
never accept the same call: shared -> shared against global <-> shared).
"""

from __future__ import annotations

from tilewise.ir.expr import AddressOf, IntImm, cmp
from tilewise.ir.stmt import Evaluate, IfThenElse
from tilewise.ptx.table import PTX_OPS
from tilewise.tile import options as O
from tilewise.tile import predicates as P
from tilewise.tile.partition import Side, emit
from tilewise.tile.registry import predicate, register_dispatch

from .bulk import ISSUED_BY_ONE_THREAD, NO_PREDICATE, plan_runs


def _options(ctx):
    if ctx.option("remote_cta_id") is None:
        return False, ("a shared -> shared copy between CTAs names the destination: pass "
                       "remote_cta_id=<rank in the cluster>")
    if ctx.option("mbar") is None:
        return False, ("the destination CTA learns of the copy through its mbarrier: pass "
                       "mbar=T.address_of(bar[i]) (the mbarrier at that offset in the "
                       "destination CTA receives complete_tx)")
    return True


def _memory_layouts(ctx):
    for r in (ctx.dst, ctx.src):
        layout = r.buffer.layout
        if layout is not None and layout.thread_axes():
            return False, f"shared buffer {r.buffer.name!r} has a thread-distributed layout"
    return True


def _emit(ctx):
    dst, src = Side("dst", ctx.dst), Side("src", ctx.src)
    plan = plan_runs(dst, src)
    nbytes = plan.vec * plan.elem_bytes
    ctx.info.append(f"{plan.outer} copies of {nbytes} bytes into CTA rank "
                    f"{ctx.option('remote_cta_id')!s}")
    op = PTX_OPS["ptx.cp_async.bulk.s2c"]
    rank, mbar = ctx.option("remote_cta_id"), ctx.option("mbar")

    def make(dc, sc):
        args = [AddressOf(dst.buffer, dc), AddressOf(src.buffer, sc), IntImm(nbytes), mbar,
                rank]
        return Evaluate(op.call(args, {}, span=ctx.span), span=ctx.span)

    body = emit(plan, IntImm(0), dst, src, make)
    if ctx.scope_kind == "thread":
        return body
    return IfThenElse(cmp("==", ctx.scope_tid, 0), body, span=ctx.span)


@register_dispatch("copy_async", "cuda", variant="dsmem", priority=11,
                   options=(O.REMOTE_CTA_ID, O.MBAR), declines={
    **NO_PREDICATE,
    "cache_hint": "dsmem does not implement cache_hint=",
    "prefetch_size": "prefetch_size= is a cp.async hint",
    "cta_group": "cta_group= is for TMA and tcgen05 copies"}, when=[
    predicate("target has clusters", P.has_feature, feature="cluster",
              what="distributed shared memory (clusters)"),
    predicate("operands are regions", P.operands_are_regions),
    predicate("shared -> shared", P.direction, pairs=(("shared*", "shared*"),)),
    predicate("options", _options),
    *ISSUED_BY_ONE_THREAD,
    predicate("memory layouts", _memory_layouts),
])
def dsmem(ctx):
    return _emit(ctx)
