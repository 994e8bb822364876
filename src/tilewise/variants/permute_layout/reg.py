"""permute_layout -> shfl, smem: a register tile re-laid out into another register tile.

* ``shfl`` (priority 30): every destination register ``r`` of thread ``t`` reads a source
  register that is the same in every thread, held by a thread of the same warp: one
  ``shfl.sync.idx`` per register (PTX ISA §9.7.9.6), the source lane computed from the
  source layout's thread-axis digits of the element's coordinates. 32-bit types.
* ``smem`` (priority 20): every thread stores its source registers to a shared scratch
  tile in row-major order (one per scope instance), ``bar.sync 0``, then loads its
  destination registers from it; a second barrier when the call sits in a loop. The CTA
  barrier needs every thread of the CTA at the call.

Both check the layouts exhaustively (:class:`tilewise.tile.regtile.RegTile`) and decline a
replicated source (several writers of one element).
"""

from __future__ import annotations

import math

import numpy as np

from tilewise.ir import dtype as dt
from tilewise.ir.expr import BufferLoad, IntImm, binop
from tilewise.ir.stmt import Buffer, BufferStore, DeclBuffer, Evaluate, SeqStmt
from tilewise.layout.ops import split_into
from tilewise.ptx.table import PTX_OPS
from tilewise.tile import predicates as P
from tilewise.tile.regtile import RegTile
from tilewise.tile.registry import DispatchFail, predicate, register_dispatch
from tilewise.tile.tilecode import linear, shuffle_mask

SCOPES = ("warp", "warpgroup", "cta")


def _tiles(ctx):
    src = RegTile.of(ctx.src, ctx.thread_count, "src")
    dst = RegTile.of(ctx.dst, ctx.thread_count, "dst")
    if np.unique(src.elems).size != src.elems.size:
        raise DispatchFail("src is replicated (an element held by several threads)")
    return src, dst


def smem(ctx):
    if ctx.active.count != ctx.launch.block or not ctx.active.exact:
        raise DispatchFail("the shared-memory staging needs a CTA barrier, so every thread of "
                           "the CTA must reach the call")
    src, dst = _tiles(ctx)
    n = math.prod(src.shape)
    inst = ctx.launch.block // ctx.thread_count
    scratch = Buffer(f"{ctx.src.buffer.name}_permute", (n * inst,), src.dtype, "shared",
                     span=ctx.span)
    base = binop("*", binop("//", ctx.tid, ctx.thread_count), n) if inst > 1 else IntImm(0)
    sflat, dflat = src.flat(), dst.flat()
    body = [DeclBuffer(scratch), DeclBuffer(sflat), DeclBuffer(dflat)]
    for r in range(src.regs):
        at = binop("+", base, linear(src.coords(r, ctx.scope_tid), src.shape))
        body.append(BufferStore(scratch, (at,), BufferLoad(sflat, (IntImm(r),))))
    sync = Evaluate(PTX_OPS["cuda.cta_sync"].call([], {}, ctx.span))
    body.append(sync)
    for r in range(dst.regs):
        at = binop("+", base, linear(dst.coords(r, ctx.scope_tid), dst.shape))
        body.append(BufferStore(dflat, (IntImm(r),), BufferLoad(scratch, (at,))))
    if ctx.in_loop:
        body.append(sync)
    ctx.info.append(f"{src.regs} stores and {dst.regs} loads per thread through "
                    f"{n * inst * src.dtype.bytes} bytes of shared memory")
    return SeqStmt(tuple(body), span=ctx.span)


def _place(layout, shape, coords, axis: str):
    """The place on ``axis`` of the element at ``coords`` (IR or numpy)."""
    layout = layout.canonicalize()
    out = dict(layout.offset).get(axis, 0)
    for c, iters in zip(coords, split_into(layout.shard, shape)):
        inner = 1
        for it in reversed(iters):
            if it.axis.name == axis:
                out = out + (c // inner) % it.extent * it.stride
            inner *= it.extent
    return out


def _lane_of(layout, shape, coords):
    """The lane of the thread holding ``coords`` (replica 0), from the layout's lane-level
    thread axes."""
    axes = {a.name for a in layout.thread_axes()}
    for a in ("laneid", "tid_in_wg", "tx"):
        if a in axes:
            return _place(layout, shape, coords, a) % 32
    raise DispatchFail("the source layout has no lane-level thread axis (laneid, tid_in_wg, "
                       "tx)")


def shfl(ctx):
    src, dst = _tiles(ctx)
    if src.dtype.bits != 32:
        raise DispatchFail(f"shfl.sync moves 32-bit values; the tile is {src.dtype}")
    t = np.arange(ctx.thread_count)
    src_regs, lanes = [], []
    for r in range(dst.regs):
        e = dst.elems[:, r]
        holder = _holder(src, e)
        if (holder // 32 != t // 32).any():
            k = int(np.argmax(holder // 32 != t // 32))
            raise DispatchFail(f"thread {k}'s register {r} comes from thread {int(holder[k])}, "
                               "in another warp; shuffles stay within a warp")
        rs = src.locate(holder, e)
        if (rs != rs[0]).any():
            raise DispatchFail(f"register {r} of the destination reads different source "
                               "registers in different threads; one shuffle moves one register")
        lane = _lane_of(src.layout, src.shape, dst.coords(r, t))
        if (np.asarray(lane) != holder % 32).any():
            raise DispatchFail("the source lane cannot be computed from the source layout")
        src_regs.append(int(rs[0]))
        lanes.append(_lane_of(src.layout, src.shape, dst.coords(r, ctx.scope_tid)))
    sflat, dflat = src.flat(), dst.flat()
    op = PTX_OPS["ptx.shfl_sync"]
    body = [DeclBuffer(sflat), DeclBuffer(dflat)]
    if sflat.view_of is dflat.view_of:
        raise DispatchFail("src and dst share registers; shuffle into another buffer")
    mask = IntImm(shuffle_mask(ctx), dt.uint32)
    for r, (rs, lane) in enumerate(zip(src_regs, lanes)):
        v = op.call(["idx", BufferLoad(sflat, (IntImm(rs),)), lane, 31, mask], {}, ctx.span)
        body.append(BufferStore(dflat, (IntImm(r),), v))
    ctx.info.append(f"{dst.regs} shfl.sync.idx per thread")
    return SeqStmt(tuple(body), span=ctx.span)


def _holder(src: RegTile, elems: np.ndarray) -> np.ndarray:
    """The thread of ``src`` that holds each element (src is not replicated)."""
    where = np.empty(src.elems.size, np.int64)
    where[src.elems.reshape(-1)] = np.repeat(np.arange(src.threads), src.regs)
    return where[elems]


_COMMON = [predicate("scope", P.scope_in, scopes=SCOPES),
           predicate("all threads active", P.all_active),
           predicate("register tiles", P.register_tiles)]
register_dispatch("permute_layout", "cuda", variant="shfl", priority=30, when=_COMMON)(shfl)
register_dispatch("permute_layout", "cuda", variant="smem", priority=20, when=_COMMON)(smem)
