"""permute_layout -> mem: a tile of global / shared memory rewritten under another layout
(the destination view's), possibly in place (two views of one buffer).

1. Accept global / shared ``dst`` and ``src`` of one shape and dtype, in scope warp /
   warpgroup / cta with every thread of each scope instance active; when both are views of
   one buffer, the CTA barrier between the loads and the stores needs every thread of the
   CTA at the call.
2. Element ``p = f * T + t`` (row-major) of each step ``f`` is loaded into a register
   array by thread ``t``, all steps first (unrolled), then -- after ``bar.sync 0`` when the
   views share memory -- stored through the destination's layout.
"""

from __future__ import annotations

from tilewise.ir.expr import BufferLoad, IntImm, binop, cmp
from tilewise.ir.stmt import Buffer, BufferStore, DeclBuffer, Evaluate, SeqStmt
from tilewise.ptx.table import PTX_OPS
from tilewise.tile import predicates as P
from tilewise.tile.regtile import root
from tilewise.tile.registry import DispatchFail, predicate, register_dispatch
from tilewise.tile.tilecode import absolute, ceil_div, guard, unravel

SCOPES = ("thread", "warp", "warpgroup", "cta")
MEMORIES = ("global", "shared*")
PAIRS = tuple((d, s) for d in MEMORIES for s in MEMORIES)


def mem(ctx):
    aliased = root(ctx.dst.buffer) is root(ctx.src.buffer)
    if aliased and (ctx.active.count != ctx.launch.block or not ctx.active.exact):
        raise DispatchFail("dst and src are views of one buffer: the loads and stores are "
                           "separated by a CTA barrier, so every thread of the CTA must reach "
                           "the call")
    n, t = ctx.dst.size, ctx.thread_count
    steps = ceil_div(n, t)
    if steps > 256:
        raise DispatchFail(f"{steps} elements per thread would not fit in registers; use more "
                           "threads or a smaller tile")
    tmp = Buffer(f"{ctx.src.buffer.name}_staged", (steps,), ctx.src.buffer.dtype, "local",
                 span=ctx.span)
    loads, stores = [], []
    for f in range(steps):
        p = binop("+", f * t, ctx.scope_tid) if t > 1 else IntImm(f)
        rel = unravel(p, ctx.dst.shape)
        ok = cmp("<", p, n) if n % t and f == steps - 1 else None
        loads.append(guard(ok, BufferStore(tmp, (IntImm(f),),
                                           BufferLoad(ctx.src.buffer, absolute(ctx.src, rel)))))
        stores.append(guard(ok, BufferStore(ctx.dst.buffer, absolute(ctx.dst, rel),
                                            BufferLoad(tmp, (IntImm(f),)))))
    sync = [Evaluate(PTX_OPS["cuda.cta_sync"].call([], {}, ctx.span))] if aliased else []
    ctx.info.append(f"{steps} element(s) per thread" + (", in place (a CTA barrier between "
                                                          "loads and stores)" if aliased else ""))
    return SeqStmt(tuple([DeclBuffer(tmp)] + loads + sync + stores), span=ctx.span)


register_dispatch("permute_layout", "cuda", variant="mem", priority=10, when=[
    predicate("scope", P.scope_in, scopes=SCOPES),
    predicate("all threads active", P.all_active),
    predicate("compile-time sizes", P.static_sizes),
    predicate("memory <-> memory", P.direction, pairs=PAIRS),
])(mem)
