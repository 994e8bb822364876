"""copy -> reg: registers <-> global / shared, each thread moving its own elements.

The register side is a local view whose layout has thread axes, e.g.
``A_reg.view(128, 8, layout=S[(128, 8):(1@tid_in_wg, 1)])``: thread ``t`` holds the
elements whose thread-axis places equal ``t``'s, at register index = their place on ``m``
(:class:`tilewise.tile.regtile.RegTile`, thread axes read relative to the scope instance).

Algorithm (``ld``/``st``, PTX ISA §9.7.9.8 / §9.7.9.10):

1. Accept exactly one ``local`` side (the whole view) and one global / shared side of the
   same dtype and size, in scope thread / warp / warpgroup / cta with all threads of each
   scope instance active. Every thread must hold one element in each of its ``R``
   registers; a replica (several threads holding an element) is loaded by each holder, but
   not stored (the stores would race).
2. Vector width: the widest of 16 / 8 / 4 / 2 bytes such that, in every thread, each run
   of registers ``r0 .. r0 + v - 1`` (``r0`` a multiple of ``v``) holds elements that are
   consecutive in memory, the first aligned to the vector size (its byte offset from the
   16-byte aligned buffer base, with the largest known divisor of a symbolic start, as the
   copy partition computes it). Compile-time sizes only.
3. Emit per vector one ``T.ptx.ld_st`` between the register array (a flat view, constant
   index) and the memory element at the run's coordinates (the layout's digits of ``r0``
   and of the thread's axis values) -- ``ld.global.v4.b32`` into registers for 16 bytes;
   a one-element run is a plain load and store.
"""

from __future__ import annotations

import math

import numpy as np

from tilewise.ir.expr import AddressOf, BufferLoad, IntImm
from tilewise.ir.launch import WARP, WARPGROUP
from tilewise.ir.stmt import BufferStore, DeclBuffer, Evaluate, SeqStmt
from tilewise.ptx.table import PTX_OPS
from tilewise.tile import predicates as P
from tilewise.tile.partition import Side
from tilewise.tile.regtile import RegTile
from tilewise.tile.registry import DispatchFail, predicate, register_dispatch

MEMORIES = ("global", "shared*")
PAIRS = tuple(p for mem in MEMORIES for p in (("local", mem), (mem, "local")))
SCOPES = ("thread", "warp", "warpgroup", "cta")


def _axis_limit(name: str, ctx) -> int:
    n = ctx.thread_count
    return {"tid_in_wg": min(n, WARPGROUP), "laneid": min(n, WARP), "warpid": n // WARP,
            "wid_in_wg": min(n // WARP, 4), "wgid": n // WARPGROUP, "tx": n}.get(name, 0)


def _reg_side(ctx):
    return ctx.dst if ctx.dst.buffer.scope == "local" else ctx.src


def register_layout_ok(ctx):
    reg = _reg_side(ctx)
    b, layout = reg.buffer, reg.buffer.layout
    if layout is None or not layout.thread_axes():
        return False, (f"register buffer {b.name!r} has no thread axes in its layout; view it "
                       "with a layout such as S[(128, 8):(1@tid_in_wg, 1)]")
    if reg.shape != b.shape or any(r.start is not None and _nonzero(r.start)
                                   for r in reg.region):
        return False, f"the register side must be the whole view {b.name}"
    if layout.replica and reg is ctx.src:
        return False, (f"register layout {layout!r} replicates elements; storing replicas "
                       "would write each element several times (a race)")
    if not layout.is_injective():
        return False, f"register layout {layout!r} overlaps elements"
    if not layout.storage().is_bijective_on("m"):
        return False, f"register layout {layout!r} does not use registers densely"
    for it in layout.shard:
        if it.axis.kind == "thread" and it.last >= _axis_limit(it.axis.name, ctx):
            return False, (f"register layout {layout!r} needs {it.axis.name} up to "
                           f"{it.last}, beyond the {ctx.thread_count} threads of the "
                           f"{ctx.scope_kind}")
    return True


def _nonzero(e) -> bool:
    from tilewise.ir.expr import as_int

    return as_int(e) != 0


def _matching_dims(mem_shape, tile_shape):
    """The memory region's dimension for each of the register view's, when the two shapes
    are equal but for extent-1 dimensions (``R[cw, :, :]`` against a (64, N) tile); None
    when they differ otherwise."""
    md = [d for d, e in enumerate(mem_shape) if e != 1]
    td = [d for d, e in enumerate(tile_shape) if e != 1]
    if [mem_shape[d] for d in md] != [tile_shape[d] for d in td]:
        return None
    out = [None] * len(tile_shape)
    for m, t in zip(md, td):
        out[t] = m
    return out


def _expand(coords, dims, rank):
    """Register-view coordinates as coordinates of the memory region (0 where it has an
    extent-1 dimension the view lacks)."""
    out = [0] * rank
    for c, d in zip(coords, dims):
        if d is not None:
            out[d] = c
    return out


def _vector(tile: RegTile, mem: Side, ctx, dims) -> int:
    """Elements per vector: the widest run every thread's registers keep contiguous and
    aligned in memory."""
    eb = mem.elem_bytes
    t = np.arange(tile.threads)
    rank = len(mem.region.shape)
    coords = _expand(_all_coords(tile, t), dims, rank)
    rel = np.stack([np.broadcast_to(np.asarray(c, np.int64), (tile.threads, tile.regs))
                    for c in coords], axis=-1)
    offs = mem.offsets(rel.reshape(-1, rel.shape[-1])).reshape(tile.threads, tile.regs)
    for nbytes in VEC_BYTES:
        v = nbytes // eb
        if v < 1 or nbytes % eb or tile.regs % v:
            continue
        runs = offs.reshape(tile.threads, -1, v)
        if v > 1 and (runs - runs[:, :, :1] != np.arange(v)).any():
            continue
        if mem.alignment(runs[:, :, 0].reshape(-1)) % nbytes == 0:
            return v
    return 1


def _all_coords(tile: RegTile, t):
    cs = [tile.coords(r, t) for r in range(tile.regs)]
    return [np.stack([np.broadcast_to(np.asarray(c[d], np.int64), t.shape) for c in cs],
                     axis=1) for d in range(len(tile.shape))]


VEC_BYTES = (16, 8, 4, 2)


@register_dispatch("copy", "cuda", variant="reg", priority=30, when=[
    predicate("operands are regions", P.operands_are_regions),
    predicate("compile-time sizes", P.static_sizes),
    predicate("registers <-> memory", P.direction, pairs=PAIRS),
    predicate("scope", P.scope_in, scopes=SCOPES),
    predicate("all threads active", P.all_active),
    predicate("same dtype", P.same_dtype),
    predicate("same size", P.same_size),
    predicate("register layout", register_layout_ok),
])
def reg(ctx):
    regside = _reg_side(ctx)
    into_regs = regside is ctx.dst
    memr = ctx.src if into_regs else ctx.dst
    tile = RegTile.of(regside, ctx.thread_count, "register buffer")
    dims = _matching_dims(memr.shape, tile.shape)
    if dims is None:
        raise DispatchFail(f"the memory side has shape {memr.shape} but the register view "
                           f"{tile.shape}; copy regions of the register view's shape")
    mem = Side("src" if into_regs else "dst", memr)
    v = _vector(tile, mem, ctx, dims)
    flat = tile.flat()
    body = [DeclBuffer(flat)]
    op = PTX_OPS["ptx.ld_st"]
    for r0 in range(0, tile.regs, v):
        rel = _expand(tile.coords(r0, ctx.scope_tid), dims, len(memr.shape))
        idx = tuple(rg.start + c for rg, c in zip(memr.region, rel))
        regs, memx = (flat, (IntImm(r0),)), (memr.buffer, idx)
        d, sx = (regs, memx) if into_regs else (memx, regs)
        if v == 1:
            body.append(BufferStore(d[0], d[1], BufferLoad(*sx), span=ctx.span))
        else:
            body.append(Evaluate(op.call([AddressOf(*d), AddressOf(*sx), v * mem.elem_bytes],
                                         {}, span=ctx.span), span=ctx.span))
    ctx.info.append(f"{tile.regs} registers per thread, {math.prod(regside.shape)} elements, "
                    f"vectors of {v * mem.elem_bytes} bytes")
    return SeqStmt(tuple(body), span=ctx.span)
