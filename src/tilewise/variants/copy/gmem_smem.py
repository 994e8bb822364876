"""copy -> gmem_smem: a synchronous vectorised copy between global and shared memory.

Directions: global -> shared, shared -> global, global -> global and shared -> shared.
Each vector is one ``T.ptx.ld_st(dst, src, nbytes)`` (PTX ISA §9.7.9.8 ``ld`` and
§9.7.9.10 ``st`` with ``.v2``/``.v4``: one vector load, one vector store); a one-element
vector is a plain scalar load and store.

Algorithm:

1. Accept a copy of one dtype between global / shared / shared.dyn buffers, in scope
   thread / warp / warpgroup / cta with every thread of each scope instance active.
2. Partition ``[outer, threads, vec]`` exactly as ldgsts (:mod:`tilewise.tile.partition`):
   the global side drives the order (the source when both are global or both shared);
   vector candidates 128, 64, 32, 16 and 8 bits, limited by alignment and contiguity of
   both sides; the threads need not divide the tile (the last step is guarded), symbolic
   strides are checked at run time (:mod:`tilewise.tile.clip`).
3. Emit per outer step one ``ld_st`` of ``vec * element bytes`` (or a scalar store when
   ``vec == 1``) at the thread's vector, guarded on a partial tile (a source vector outside
   its buffer stores ``fill=`` instead, a destination vector outside is skipped). No
   barrier: the caller synchronises.
"""

from __future__ import annotations

from tilewise.ir.expr import AddressOf, BufferLoad
from tilewise.ir.stmt import BufferStore, Evaluate
from tilewise.ptx.table import PTX_OPS
from tilewise.tile import options as O
from tilewise.tile import predicates as P
from tilewise.tile.clip import guarded_dims
from tilewise.tile.partition import Side, emit, plan_partition
from tilewise.tile.registry import predicate, register_dispatch

MEMORIES = ("global", "shared*")
PAIRS = tuple((d, s) for d in MEMORIES for s in MEMORIES)
VEC_BYTES = (16, 8, 4, 2, 1)
SCOPES = ("thread", "warp", "warpgroup", "cta")


def _driver(dst: Side, src: Side) -> Side:
    if dst.buffer.scope == "global" and src.buffer.scope != "global":
        return dst
    return src


def _emit(ctx):
    dst, src = Side("dst", ctx.dst, stand_in=True), Side("src", ctx.src, stand_in=True)
    guards = {"dst": guarded_dims(ctx.dst, ctx), "src": guarded_dims(ctx.src, ctx)}
    plan = plan_partition(dst, src, _driver(dst, src), ctx.thread_count, VEC_BYTES, guards)
    ctx.info.append(plan.describe())
    op = PTX_OPS["ptx.ld_st"]

    def make(plan, dc, sc):
        if plan.vec == 1:
            return BufferStore(dst.buffer, dc, BufferLoad(src.buffer, sc), span=ctx.span)
        call = op.call([AddressOf(dst.buffer, dc), AddressOf(src.buffer, sc),
                        plan.vec_bytes], {}, span=ctx.span)
        return Evaluate(call, span=ctx.span)

    return emit(plan, ctx, dst, src, make)


@register_dispatch("copy", "cuda", variant="gmem_smem", options=(O.FILL,), priority=20, when=[
    predicate("operands are regions", P.operands_are_regions),
    predicate("global/shared", P.direction, pairs=PAIRS),
    predicate("scope", P.scope_in, scopes=SCOPES),
    predicate("all threads active", P.all_active),
    predicate("same dtype", P.same_dtype),
    predicate("whole bytes", P.whole_bytes),
    predicate("same size", P.same_size),
])
def gmem_smem(ctx):
    return _emit(ctx)
