"""copy_async -> ldgsts: global -> shared with ``cp.async`` (LDGSTS).

PTX ISA §9.7.9.25 (``cp.async``): each thread issues an asynchronous copy of 4, 8 or 16
bytes from global to shared memory; ``cp.async.cg`` (16 bytes) bypasses L1. Completion is
tracked by cp.async groups (``commit_group`` / ``wait_group``), which are the caller's.

Algorithm:

1. Accept only a global -> shared / shared.dyn copy of one dtype, on sm_80+, in scope
   thread / warp / warpgroup / cta with every thread of each scope instance active
   (a partially active warp declines), without ``mbar=`` (cp.async groups cannot signal an
   mbarrier; that needs a TMA variant); ``cache_hint=`` and ``predicate=`` are declined
   by name (not implemented yet, never silently ignored).
2. Partition the tile ``[outer, threads, vec]`` with the global side driving the order
   (:mod:`tilewise.tile.partition`), vector candidates 128 / 64 / 32 bits only
   (``cp_size`` 16 / 8 / 4 bytes), limited by the alignment and contiguity of both
   sides (a swizzled shared layout keeps 16-byte chunks whole). The element count must be
   a multiple of ``threads * vec``.
3. Emit, per outer step (``for f in range(outer)`` when ``outer > 1``), one
   ``T.ptx.cp_async(dst, src, cp_size)`` per thread, addresses at the thread's vector;
   ``prefetch_size=`` becomes the ``.L2::<N>B`` prefetch hint of each cp.async. A global
   source of symbolic size is guarded per vector: past its end the cp.async reads no
   source bytes (``ignore_src``) and zero-fills the destination.
4. Emit no commit, wait or barrier: completion is the caller's.
"""

from __future__ import annotations

from tilewise.ir.expr import AddressOf, UnaryOp
from tilewise.ir.stmt import Evaluate
from tilewise.ptx.table import PTX_OPS
from tilewise.tile import options as O
from tilewise.tile import predicates as P
from tilewise.tile.partition import Side, emit, plan_partition
from tilewise.tile.registry import predicate, register_dispatch

PAIRS = (("shared*", "global"),)  # (dst, src): cp.async is unidirectional
VEC_BYTES = (16, 8, 4)
SCOPES = ("thread", "warp", "warpgroup", "cta")


def _emit(ctx):
    dst, src = Side("dst", ctx.dst), Side("src", ctx.src)
    plan = plan_partition(dst, src, src, ctx.thread_count, VEC_BYTES)
    ctx.info.append(plan.describe() + f", cp_size {plan.vec_bytes}")
    op = PTX_OPS["ptx.cp_async"]
    prefetch = ctx.option("prefetch_size")
    if prefetch is not None:
        ctx.info.append(f"L2 prefetch {prefetch} B")

    def make(dc, sc, src_ok):
        # past the end of a source of symbolic size, cp.async reads no source bytes and
        # zero-fills its destination (ignore-src)
        ignore = None if src_ok is None else UnaryOp("not", src_ok)
        call = op.call([AddressOf(dst.buffer, dc), AddressOf(src.buffer, sc),
                        plan.vec_bytes], {"prefetch": prefetch, "ignore_src": ignore},
                       span=ctx.span)
        return Evaluate(call, span=ctx.span)

    return emit(plan, ctx.scope_tid, dst, src, make, source_guard_operand=True)


@register_dispatch("copy_async", "cuda", variant="ldgsts", priority=20,
                   options=(O.PREFETCH_SIZE,), declines={
    "mbar": "completion by mbarrier needs a TMA variant; cp.async groups cannot signal an "
            "mbarrier",
    "cache_hint": "ldgsts does not implement cache_hint= (cp.async .L2::cache_hint) yet",
    "predicate": "ldgsts does not implement predicate= (zero-fill by src-size) yet",
    "cta_group": "cta_group= is for TMA and tcgen05 copies; cp.async has no CTA pair"},
                   when=[
    predicate("target has cp.async", P.has_feature, feature="cp_async",
              what="cp.async"),
    predicate("operands are regions", P.operands_are_regions),
    predicate("global -> shared", P.direction, pairs=PAIRS),
    predicate("scope", P.scope_in, scopes=SCOPES),
    predicate("all threads active", P.all_active),
    predicate("same dtype", P.same_dtype),
    predicate("same size", P.same_size),
])
def ldgsts(ctx):
    return _emit(ctx)
