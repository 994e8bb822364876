"""copy_async -> ldgsts: global -> shared with ``cp.async`` (LDGSTS).

PTX ISA §9.7.9.25 (``cp.async``): each thread issues an asynchronous copy of 4, 8 or 16
bytes from global to shared memory; ``cp.async.cg`` (16 bytes) bypasses L1. Completion is
tracked by cp.async groups (``commit_group`` / ``wait_group``), which are the caller's.

Algorithm:

1. Accept only a global -> shared / shared.dyn copy of one dtype, on sm_80+, in scope
   thread / warp / warpgroup / cta with every thread of each scope instance active
   (a partially active warp declines), without ``mbar=`` (cp.async groups cannot signal an
   mbarrier; that needs a TMA variant); ``cache_hint=`` is declined by name (not
   implemented yet, never silently ignored); ``fill=`` other than 0 is declined (cp.async
   zero-fills).
2. Partition the tile ``[outer, threads, vec]`` with the global side driving the order
   (:mod:`tilewise.tile.partition`), vector candidates 128 / 64 / 32 bits only
   (``cp_size`` 16 / 8 / 4 bytes), limited by the alignment and contiguity of both
   sides (a swizzled shared layout keeps 16-byte chunks whole). When ``threads * vec``
   does not divide the element count, the last step is guarded. Symbolic strides are
   planned as multiples of the vector and checked at run time (``if N % 8 == 0:`` the
   vector plan, else the widest one that needs no check -- synchronous element copies when
   no cp.async size fits; :mod:`tilewise.tile.clip`).
3. Emit, per outer step (``for f in range(outer)`` when ``outer > 1``), one
   ``T.ptx.cp_async(dst, src, cp_size)`` per thread, addresses at the thread's vector;
   ``prefetch_size=`` becomes the ``.L2::<N>B`` prefetch hint of each cp.async. A partial
   tile (a source region past the end of its buffer, symbolic or not) is guarded per
   vector: outside, the cp.async reads no source bytes (``ignore_src``) and zero-fills the
   destination; so does ``predicate=`` where it is false. A destination vector outside
   its buffer is not issued.
4. Emit no commit, wait or barrier: completion is the caller's.
"""

from __future__ import annotations

from tilewise.ir.expr import AddressOf, BufferLoad, FloatImm, IntImm, UnaryOp
from tilewise.ir.stmt import BufferStore, Evaluate, IfThenElse
from tilewise.ptx.table import PTX_OPS
from tilewise.tile import options as O
from tilewise.tile import predicates as P
from tilewise.tile.clip import conjunction, guarded_dims
from tilewise.tile.partition import Side, emit, plan_partition
from tilewise.tile.registry import predicate, register_dispatch

PAIRS = (("shared*", "global"),)  # (dst, src): cp.async is unidirectional
VEC_BYTES = (16, 8, 4)
SCOPES = ("thread", "warp", "warpgroup", "cta")


def _emit(ctx):
    dst, src = Side("dst", ctx.dst, stand_in=True), Side("src", ctx.src, stand_in=True)
    guards = {"dst": guarded_dims(ctx.dst, ctx), "src": guarded_dims(ctx.src, ctx)}
    plan = plan_partition(dst, src, src, ctx.thread_count, VEC_BYTES, guards,
                          fallback_bytes=(2, 1))
    ctx.info.append(plan.describe() + f", cp_size {plan.vec_bytes}")
    op = PTX_OPS["ptx.cp_async"]
    prefetch = ctx.option("prefetch_size")
    if prefetch is not None:
        ctx.info.append(f"L2 prefetch {prefetch} B")

    pred = ctx.option("predicate")

    def make(plan, dc, sc, src_ok):
        ok = conjunction([src_ok, pred])
        if plan.vec_bytes < 4:  # the run-time strides allow no cp.async: copy elements
            return _element_copy(ctx, dst, src, dc, sc, ok)
        # past the end of the source (a partial tile) or where predicate= is false, cp.async
        # reads no source bytes and zero-fills its destination (ignore-src)
        ignore = None if ok is None else UnaryOp("not", ok)
        call = op.call([AddressOf(dst.buffer, dc), AddressOf(src.buffer, sc),
                        plan.vec_bytes], {"prefetch": prefetch, "ignore_src": ignore},
                       span=ctx.span)
        return Evaluate(call, span=ctx.span)

    return emit(plan, ctx, dst, src, make, source_guard_operand=True)


def _element_copy(ctx, dst, src, dc, sc, ok):
    """A synchronous element copy (zero where ``ok`` is false): what the run-time strides
    leave when they are not multiples of a cp.async size. Done when issued, so the caller's
    commit and wait cover it trivially."""
    t = dst.buffer.dtype
    store = BufferStore(dst.buffer, dc, BufferLoad(src.buffer, sc), span=ctx.span)
    if ok is None:
        return store
    zero = FloatImm(0.0, t) if t.is_float else IntImm(0, t)
    return IfThenElse(ok, store, BufferStore(dst.buffer, dc, zero, span=ctx.span))


def zero_fill(ctx):
    fill = ctx.option("fill")
    if fill is None or fill == 0:
        return True
    return False, (f"fill={fill!r}: cp.async fills the part of a partial tile outside its "
                   "source with zeros only (copy with Tx.copy into registers to fill other "
                   "values)")


@register_dispatch("copy_async", "cuda", variant="ldgsts", priority=20,
                   options=(O.PREFETCH_SIZE, O.PREDICATE, O.FILL), declines={
    "mbar": "completion by mbarrier needs a TMA variant; cp.async groups cannot signal an "
            "mbarrier",
    "cache_hint": "ldgsts does not implement cache_hint= (cp.async .L2::cache_hint) yet",
    "cta_group": "cta_group= is for TMA and tcgen05 copies; cp.async has no CTA pair"},
                   when=[
    predicate("target has cp.async", P.has_feature, feature="cp_async",
              what="cp.async"),
    predicate("operands are regions", P.operands_are_regions),
    predicate("zero fill", zero_fill),
    predicate("global -> shared", P.direction, pairs=PAIRS),
    predicate("scope", P.scope_in, scopes=SCOPES),
    predicate("all threads active", P.all_active),
    predicate("same dtype", P.same_dtype),
    predicate("same size", P.same_size),
])
def ldgsts(ctx):
    return _emit(ctx)
