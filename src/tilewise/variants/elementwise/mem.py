"""elementwise -> mem: the elements of a global / shared (or per-thread local) destination
split over the threads of the scope.

Serves every elementwise primitive whose destination is memory: a region of global or
shared memory, or, in thread scope, a local buffer without thread axes (a per-thread
array). Algorithm:

1. Accept scope thread / warp / warpgroup / cta with every thread of each scope instance
   active; sources are scalars or memory regions (a register tile cannot feed a memory
   destination: compute into registers and ``Tx.copy``).
2. Position ``p = f * T + t`` (thread ``t`` of ``T``, step ``f``) is the destination
   element ``p`` in row-major order, so a warp touches consecutive elements at each step
   (coalesced); ``ceil(N / T)`` steps, the last guarded with ``p < N`` when ``T`` does not
   divide ``N``. A local array in thread scope is walked by one unrolled loop (constant
   indices keep it in registers).
3. Emit ``dst[c] = f(src[bcast(c)]...)``; on buffers with symbolic sizes an element is
   computed only where the destination and every source element are in bounds.
4. No barrier: each element is read and written by one thread (in place is safe); a
   caller that reads another thread's results synchronises itself, as after ``Tx.copy``.
"""

from __future__ import annotations

from tilewise.ir.expr import IntImm, Var, binop, cmp
from tilewise.ir.stmt import BufferStore, For
from tilewise.tile import predicates as P
from tilewise.tile.registry import predicate
from tilewise.tile.tilecode import absolute, ceil_div, guard, in_bounds, unravel
from tilewise.variants.elementwise.reg import element, register_each, sources

SCOPES = ("thread", "warp", "warpgroup", "cta")


def dst_is_memory(ctx):
    b = ctx.dst.buffer
    if b.scope in ("global", "shared", "shared.dyn"):
        return True
    if b.scope == "local" and (b.layout is None or not b.layout.thread_axes()):
        if ctx.scope_kind == "thread":
            return True
        return False, (f"dst {b.name!r} is a per-thread local array (no thread axes in its "
                       f"layout); in {ctx.scope_kind} scope write Tx.thread.{ctx.call.op}, or "
                       "give it a layout with thread axes")
    return False, f"dst {b.name!r} is a register tile; this variant writes memory"


def positions(ctx, n: int):
    """``(f, p, steps)``: the step variable, this thread's position, the step count."""
    t, steps = ctx.thread_count, ceil_div(n, ctx.thread_count)
    f = Var("f")
    step = f if steps > 1 else IntImm(0)
    return f, binop("+", binop("*", step, t), ctx.scope_tid) if t > 1 else step, steps


def emit_mem(ctx, op):
    srcs, opts = sources(ctx, op, None)
    dst = ctx.dst
    f, p, steps = positions(ctx, dst.size)
    rel = unravel(p, dst.shape)
    idx = absolute(dst, rel)
    value = element(op, dst.buffer.dtype, srcs, opts,
                    lambda s: s.load(0, lambda _r: rel, dst.shape))
    body = BufferStore(dst.buffer, idx, value, span=ctx.span)
    conds = [in_bounds(dst, idx)] + [s.bounds(0, lambda _r: rel, dst.shape) for s in srcs]
    if dst.size % ctx.thread_count:
        conds.append(cmp("<", p, dst.size))
    cond = None
    for c in conds:
        if c is not None:
            cond = c if cond is None else binop("and", cond, c)
    body = guard(cond, body)
    kind = "unroll" if dst.buffer.scope == "local" and steps <= 256 else "serial"
    ctx.info.append(f"{steps} element(s) per thread, {ctx.thread_count} thread(s)")
    if steps == 1:
        return body
    return For(f, IntImm(0), IntImm(steps), kind, body, span=ctx.span)


register_each("mem", 20, [
    predicate("scope", P.scope_in, scopes=SCOPES),
    predicate("all threads active", P.all_active),
    predicate("memory destination", dst_is_memory),
], emit_mem)
