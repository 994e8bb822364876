"""``tcgen05.ld`` / ``tcgen05.st``: registers <-> tensor-memory cells, ptx-semantics.md §3.

For thread ``t`` (lane in its warp) and register ``r`` of a ``shape.x<num>`` access at
``taddr`` (plus the ``row``/``col`` operands, added to the lane/column fields), the cell
is lane ``L0 + dl(t, r)``, column ``C0 + S + c(t, r)`` unpacked, or the two columns
``C0 + S + 2c + h`` (h = 0 low half, 1 high half) with ``.pack::16b``/``.unpack::16b``,
using the 16 low bits of each cell (unpack writes zeros above them).
"""

from __future__ import annotations

import numpy as np

from ....ir.launch import WARP
from ....ptx import tcgen05
from ....ptx.tcgen05 import COLS, LANES
from ...collective import warp_uniform, whole_groups
from ...registry import semantics, write_regs
from ...values import fit
from .state import tcgen05_of


def geometry(shape: str, num: int, t: np.ndarray):
    """``(dl, c)`` arrays of shape ``(len(t), regs)`` for lanes-in-warp ``t``."""
    s = tcgen05.SHAPES[shape]
    t = np.asarray(t, np.int64)[:, None]
    r = np.arange(s.nregs(num), dtype=np.int64)[None, :]
    return s.dl(t, r), s.c(t, r)


def _split(shape, num, packed, t):
    """The upper half-warp's column offset (``.16x32bx2`` only)."""
    return np.where(np.asarray(t)[:, None] >= 16, tcgen05.half_split(shape, num, packed), 0)


def _cells(ctx, site, args, what):
    """``(lanes, cols)`` of every register of every active thread, or None (hazard).
    ``cols`` has a trailing axis of 2 (low, high half) when packed."""
    taddr, row, col, shape, num, packed = args[:6]
    whole_groups(ctx, site.span, what)
    act = ctx.active()
    base = (fit(taddr, act.shape, np.int64)
            + tcgen05.address(row, col))
    warp_uniform(ctx, site.span, base, f"{what} taddr")
    lane, first = act % WARP, tcgen05.lane_slice(act // WARP)
    dl, c = geometry(shape, num, lane)
    lanes = tcgen05.lane_of(base)[:, None] + dl
    c = (tcgen05.col_of(base)[:, None] + _split(shape, num, packed, lane)
         + (2 * c if packed else c))
    cols = np.stack([c, c + 1], -1) if packed else c
    if not _slice_ok(ctx, site, shape, tcgen05.lane_of(base), lanes, first, act, what):
        return None
    if not _allocated(ctx, site, lanes, cols, act, what):
        return None
    return lanes, cols


def _slice_ok(ctx, site, shape, l0, lanes, start, act, what) -> bool:
    """Every lane inside the warp's slice ``[start, start + 32)``, from a legal lane base."""
    legal = np.isin(l0 - start, tcgen05.SHAPES[shape].lane_bases(0))
    out = (lanes < start[:, None]) | (lanes >= (start + tcgen05.WARP_LANES)[:, None])
    bad = ~legal | out.any(1)
    if not bad.any():
        return True
    k = int(np.argmax(bad))
    w, s = int(act[k]) // WARP, int(start[k])
    touched = int(lanes[k][out[k]][0]) if out[k].any() else int(l0[k])
    ctx.hazard(f"{what}: warp {w} (warp {w % 4} of its warpgroup) may access tensor-memory "
               f"lanes [{s}, {s + tcgen05.WARP_LANES}) only, but touches lane {touched} "
               f"(lane base {int(l0[k])})", site.span,
               f"issue it from warp {touched // tcgen05.WARP_LANES % 4} of the warpgroup, or "
               f"use lane base {s}", tid=int(act[k]))
    return False


def _allocated(ctx, site, lanes, cols, act, what) -> bool:
    tm = ctx.tmem
    c = cols.reshape(len(act), -1)
    inside = (c >= 0) & (c < COLS) & (lanes.reshape(len(act), -1).min() >= 0)
    ok = inside & tm.owned[np.clip(c, 0, COLS - 1)] & (lanes.max() < LANES)
    if ok.all():
        return True
    k = int(np.argmax(~ok.all(1)))
    bad_col = int(c[k][~ok[k]][0])
    ctx.hazard(f"{what} uses tensor-memory column {bad_col}, which is not allocated "
               f"(tensor memory used before tcgen05.alloc, or past its end)", site.span,
               "allocate the columns with T.ptx.tcgen05.alloc first", tid=int(act[k]))
    return False


@semantics("ptx.tcgen05.ld")
def ld(ctx, site, args):
    where = _cells(ctx, site, args, "tcgen05.ld")
    if where is None:
        return
    tm, (lanes, cols) = ctx.tmem, where
    _check_unwaited_st(ctx, site, tm, lanes, cols)
    pending = ctx.asyncs.part_if_used("tcgen05")  # MMAs / copies that write these cells
    if pending is not None:
        pending.check_ld(ctx.active(), lanes[..., None] if cols.ndim == 3 else lanes, cols,
                         site.span)
    if cols.ndim == 3:
        lo = tm.cells[lanes, cols[..., 0]] & 0xFFFF  # .pack::16b: the cells' low halves
        vals = lo | ((tm.cells[lanes, cols[..., 1]] & 0xFFFF) << 16)
    else:
        vals = tm.cells[lanes, cols]
    write_regs(ctx, site, [vals[:, r] for r in range(vals.shape[1])])


def _check_unwaited_st(ctx, site, tm, lanes, cols):
    act = ctx.active()
    lanes3 = lanes[..., None] if cols.ndim == 3 else lanes
    own = tm.st_pending[lanes3, cols] == act.reshape((-1,) + (1,) * (cols.ndim - 1))
    if own.any():
        k = int(np.argmax(own.reshape(len(act), -1).any(1)))
        ctx.hazard("tcgen05.ld reads cells this thread's tcgen05.st has not finished writing "
                   "(missing tcgen05.wait::st)", site.span,
                   "call T.ptx.tcgen05.wait.st() between the store and the load",
                   tid=int(act[k]))


@semantics("ptx.tcgen05.st")
def st(ctx, site, args):
    regs = args[6:]
    where = _cells(ctx, site, args, "tcgen05.st")
    if where is None:
        return
    tm, (lanes, cols), act = ctx.tmem, where, ctx.active()
    vals = np.stack([_bits32(v, len(act)) for v in regs], 1)
    if cols.ndim == 3:
        tm.cells[lanes, cols[..., 0]] = vals & 0xFFFF
        tm.cells[lanes, cols[..., 1]] = vals >> 16
        tm.st_pending[lanes[..., None], cols] = act[:, None, None]
    else:
        tm.cells[lanes, cols] = vals
        tm.st_pending[lanes, cols] = act[:, None]
    if ctx.asyncs.part_if_used("tcgen05") is not None:
        tcgen05_of(ctx).stored(lanes[..., None] if cols.ndim == 3 else lanes, cols)


def _bits32(v, n):
    a = np.ascontiguousarray(np.broadcast_to(np.asarray(v), (n,)))
    return a.view(np.uint32) if a.dtype.itemsize == 4 else a.astype(np.uint32)
