"""copy -> fallback: a scalar loop run by the first thread of the scope.

Correct for any two global / shared regions of one size (dtype conversion included) but
slow: the dispatch log carries a warning. Lowest priority.

Algorithm:

1. Accept global / shared operands of equal element count in scope thread / warp /
   warpgroup / cta, when the first thread of every scope instance that reaches the call
   is active (or the active set is unknown: then the warning says so).
2. Emit ``if <thread index in scope> == 0: for i in range(N): dst[i] = src[i]``, the
   index ``i`` walked in row-major order of both regions; on buffers with symbolic sizes
   each element is guarded (not written past the destination's end, zero past the
   source's).
"""

from __future__ import annotations


from tilewise.ir.expr import BufferLoad, FloatImm, IntImm, Var, cast, cmp
from tilewise.ir.stmt import BufferStore, For, IfThenElse
from tilewise.tile import options as O
from tilewise.tile import predicates as P
from tilewise.tile.partition import Plan, Side, abs_coords, guarded
from tilewise.tile.registry import predicate, register_dispatch

MEMORIES = ("global", "shared*")
PAIRS = tuple((d, s) for d in MEMORIES for s in MEMORIES)
SCOPES = ("thread", "warp", "warpgroup", "cta")


def _loop(ctx):
    dst, src = Side("dst", ctx.dst), Side("src", ctx.src)
    n = ctx.dst.size
    plan = Plan(1, 1, n, tuple(range(len(dst.region.shape))), dst.region.shape, 1)
    i = Var("i")
    dc, sc = abs_coords(dst, plan, i), abs_coords(src, plan, i)
    value = cast(dst.buffer.dtype, BufferLoad(src.buffer, sc))
    t = dst.buffer.dtype
    zero = FloatImm(0.0, t) if t.is_float else IntImm(0, t)
    body = guarded(ctx, dst, src, dc, sc, BufferStore(dst.buffer, dc, value, span=ctx.span),
                   lambda: BufferStore(dst.buffer, dc, zero, span=ctx.span))
    loop = For(i, IntImm(0), IntImm(n), "serial", body, span=ctx.span)
    if ctx.scope_kind == "thread":
        return loop
    return IfThenElse(cmp("==", ctx.scope_tid, 0), loop, span=ctx.span)


@register_dispatch("copy", "cuda", variant="fallback", options=(O.FILL,), priority=0, when=[
    predicate("operands are regions", P.operands_are_regions),
    predicate("global/shared", P.direction, pairs=PAIRS),
    predicate("scope", P.scope_in, scopes=SCOPES),
    predicate("first thread active", P.first_thread_active),
    predicate("same size", P.same_size),
])
def fallback(ctx):
    why = ("it converts dtypes: Tx.cast does that on every thread" if
           ctx.dst.buffer.dtype != ctx.src.buffer.dtype else
           "see `tilewise explain` for why the other variants declined")
    ctx.slow_path(f"{ctx.call.op} falls back to a scalar loop on one thread of the "
                  f"{ctx.scope_kind} ({ctx.dst.size} elements); it is correct but slow ({why})")
    return _loop(ctx)
