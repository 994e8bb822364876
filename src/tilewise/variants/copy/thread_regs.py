"""copy -> thread_regs: a per-thread register array <-> global / shared memory (or another
per-thread array), each thread moving its own elements.

A *per-thread array* is a ``local`` buffer whose layout has no thread axes
(``row = T.alloc_local((16,), "float16")``): every thread holds all of it, element ``c`` at
register ``layout(c)`` (row-major without a layout). TIRx's
``Tx.thread.copy(row[:], A[tid, :])`` loads a row per thread; a wider scope
(``Tx.cta.copy(row[:], A[tid, :])``) means the same for every thread of the scope, each with
the region its own thread id gives.

Algorithm (``ld`` / ``st``, PTX ISA §9.7.9.8 / §9.7.9.10):

1. Accept a per-thread array on one side (or both) and global / shared memory (or another
   per-thread array) on the other, of one dtype and element count, the shapes equal but
   for extent-1 dimensions, the register region at constant offsets, in any scope with
   all threads active. A store to memory from a scope wider than one thread whose memory
   region is the same for every thread of the scope is declined: every thread would write
   the same elements (a race).
2. Walk the register region in row-major order; element ``k`` is register
   ``layout(start + k)`` and memory element ``start + k`` (the memory region's start may
   be a run-time value: ``tid``'s row).
3. Vector width: the widest of 16 / 8 / 4 / 2 bytes such that each run of ``v`` elements
   (``k`` a multiple of ``v``) is ``v`` consecutive registers starting at a multiple of
   ``v``, and ``v`` consecutive memory elements whose first is aligned to the vector (its
   constant offset and the known divisor of a run-time start), never straddling the end
   of a guarded dimension of a partial tile (:mod:`tilewise.tile.clip`). Between two
   per-thread arrays every move is an element move (registers either way).
4. Emit per run one ``T.ptx.ld_st`` (``ld.global.v4.b32`` into registers for 16 bytes),
   or an element load / store; on a partial tile each run is guarded (a load outside the
   buffer writes ``fill=``, default 0, a store outside is skipped).
"""

from __future__ import annotations

import math

import numpy as np

from tilewise.ir.expr import AddressOf, BufferLoad, IntImm, Var, as_int
from tilewise.ir.stmt import BufferStore, DeclBuffer, Evaluate, IfThenElse, SeqStmt
from tilewise.ptx.table import PTX_OPS
from tilewise.tile import clip
from tilewise.tile import options as O
from tilewise.tile import predicates as P
from tilewise.tile.context import Unknown, eval_threads
from tilewise.tile.partition import Side
from tilewise.tile.regtile import flat_view
from tilewise.tile.registry import DispatchFail, predicate, register_dispatch

MEMORIES = ("global", "shared*")
PAIRS = tuple(p for mem in MEMORIES for p in (("local", mem), (mem, "local"))) + (
    ("local", "local"),)
SCOPES = ("thread", "warp", "warpgroup", "cta")
VEC_BYTES = (16, 8, 4, 2)


def _per_thread(region) -> bool:
    b = region.buffer
    return b.scope == "local" and (b.layout is None or not b.layout.thread_axes())


def per_thread_array(ctx):
    """One side (or both) is a per-thread array, the other memory or one too."""
    sides = [ctx.dst, ctx.src]
    if not any(_per_thread(r) for r in sides):
        return False, "neither side is a per-thread register array (a local buffer whose "\
                      "layout has no thread axes)"
    for r in sides:
        if r.buffer.scope == "local" and not _per_thread(r):
            return False, (f"{r.buffer.name!r} is a register tile with thread axes (the reg "
                           "variant copies those)")
        if r.buffer.scope == "local" and any(as_int(x.start) is None for x in r.region):
            return False, (f"the register region of {r.buffer.name!r} starts at a run-time "
                           "offset; registers are indexed with constants")
    return True


def no_shared_store(ctx):
    """A store by every thread of a wider scope into one memory region would race."""
    if ctx.scope_kind == "thread" or ctx.dst.buffer.scope == "local":
        return True
    tid = ctx.tid
    if not isinstance(tid, Var):
        return True
    tids = np.arange(ctx.thread_count)
    try:
        starts = [eval_threads(r.start, {id(tid): tids}, tids) for r in ctx.dst.region]
    except Unknown:
        return True  # depends on other values: the simulator checks the stores
    if all((s == s[0]).all() for s in starts):
        return False, (f"every thread of the {ctx.scope_kind} would store its registers to "
                       f"the same elements of {ctx.dst.buffer.name!r} (a race)")
    return True


def _mapping(mem_shape, reg_shape):
    """Memory-region dimension of each register-region dimension (shapes equal but for
    extent-1 dimensions), None when they differ otherwise."""
    md = [d for d, e in enumerate(mem_shape) if e != 1]
    rd = [d for d, e in enumerate(reg_shape) if e != 1]
    if [mem_shape[d] for d in md] != [reg_shape[d] for d in rd]:
        return None
    return md, rd


@register_dispatch("copy", "cuda", variant="thread_regs", priority=32, options=(O.FILL,),
                   when=[
    predicate("operands are regions", P.operands_are_regions),
    predicate("registers <-> memory", P.direction, pairs=PAIRS),
    predicate("scope", P.scope_in, scopes=SCOPES),
    predicate("all threads active", P.all_active),
    predicate("same dtype", P.same_dtype),
    predicate("same size", P.same_size),
    predicate("a per-thread array", per_thread_array),
    predicate("no store by many threads to one region", no_shared_store),
])
def thread_regs(ctx):
    into_regs = _per_thread(ctx.dst)
    regr, memr = (ctx.dst, ctx.src) if into_regs else (ctx.src, ctx.dst)
    dims = _mapping(memr.shape, regr.shape)
    if dims is None:
        raise DispatchFail(f"the memory side has shape {memr.shape} but the register side "
                           f"{regr.shape}; copy regions of one shape")
    n = math.prod(regr.shape)
    rel_reg = np.stack(np.unravel_index(np.arange(n), regr.shape), axis=1).astype(np.int64)
    rel_mem = np.zeros((n, len(memr.shape)), np.int64)
    rel_mem[:, dims[0]] = rel_reg[:, dims[1]]
    regs = Side("reg", regr).offsets(rel_reg)
    both_local = memr.buffer.scope == "local"
    mem = Side("src" if into_regs else "dst", memr, stand_in=not both_local)
    guarded = () if both_local else clip.guarded_dims(memr, ctx)
    v = 1 if both_local else _vector(mem, guarded, regs, rel_mem)
    runtime = () if both_local else clip.runtime_conditions(
        memr, guarded, rel_mem.reshape(-1, v, rel_mem.shape[-1]), v)
    flat = flat_view(regr.buffer, tag="t")
    body = _moves(ctx, flat, regs, memr, rel_mem, guarded, v, into_regs)
    if runtime:
        body = IfThenElse(clip.conjunction(runtime), body,
                          _moves(ctx, flat, regs, memr, rel_mem, guarded, 1, into_regs),
                          span=ctx.span)
    ctx.info.append(f"{n} element(s) per thread, vectors of {v * mem.elem_bytes} bytes"
                    + (f", guarded dimension(s) {list(guarded)}" if guarded else "")
                    + (" when the run-time strides allow (else elements)" if runtime else ""))
    return SeqStmt((DeclBuffer(flat), body), span=ctx.span)


def _vector(mem: Side, guarded, regs: np.ndarray, rel: np.ndarray) -> int:
    """Elements per vector: the widest run contiguous and aligned on both sides."""
    eb = mem.elem_bytes
    offs = mem.offsets(rel)
    for nbytes in VEC_BYTES:
        v = nbytes // eb
        if v < 2 or nbytes % eb or len(regs) % v:
            continue
        runs, rruns = offs.reshape(-1, v), regs.reshape(-1, v)
        if (runs - runs[:, :1] != np.arange(v)).any() or (rruns - rruns[:, :1]
                                                           != np.arange(v)).any():
            continue
        if (rruns[:, 0] % v).any() or mem.alignment(runs[:, 0]) % nbytes:
            continue
        if clip.vector_reason(mem.region, guarded, rel.reshape(-1, v, rel.shape[-1]),
                              v) is None:
            return v
    return 1


def _moves(ctx, flat, regs, memr, rel, guarded, v: int, into_regs: bool):
    op = PTX_OPS["ptx.ld_st"]
    nbytes = v * max(memr.buffer.dtype.bits // 8, 1)
    fill = clip.fill_value(ctx, memr.buffer.dtype) if memr.buffer.scope != "local" else None
    body = []
    for k in range(0, len(regs), v):
        r0 = int(regs[k])
        idx = tuple(rg.start + int(c) for rg, c in zip(memr.region, rel[k]))
        regx, memx = (flat, (IntImm(r0),)), (memr.buffer, idx)
        d, s = (regx, memx) if into_regs else (memx, regx)
        if v == 1:
            move = BufferStore(d[0], d[1], BufferLoad(*s), span=ctx.span)
        else:
            move = Evaluate(op.call([AddressOf(*d), AddressOf(*s), nbytes], {}, span=ctx.span),
                            span=ctx.span)
        ok = clip.in_range(memr, guarded, idx, ctx) if guarded else None
        if ok is not None:
            other = (SeqStmt(tuple(BufferStore(flat, (IntImm(r0 + j),), fill, span=ctx.span)
                                   for j in range(v))) if into_regs else None)
            move = IfThenElse(ok, move, other, span=ctx.span)
        body.append(move)
    return SeqStmt(tuple(body), span=ctx.span)
