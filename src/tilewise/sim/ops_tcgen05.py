"""Simulator semantics of tcgen05 tensor memory, ptx-semantics.md §1-§3.

Each CTA owns 128 lanes x 512 columns of 32-bit cells and a private 512-column pool
(one CTA per simulated SM). ``alloc`` takes the lowest free range aligned to its size,
sizes must not grow, nothing may be allocated after ``relinquish_alloc_permit``, and
``dealloc`` must match a live allocation exactly. ``ld``/``st`` map registers to cells
with the §3 formulas, are performed at issue (a legal schedule) and are checked: whole
warps, a warp-uniform address, the warp's 32-lane slice (§2), allocated columns, and a
``tcgen05.wait::st`` between a thread's ``st`` and its ``ld`` of the same cells.
``.16x32bx2``'s ``immHalfSplitoff`` is not an operand of the table; the simulator uses
CUTLASS's choice: ``num`` columns unpacked, ``2 * num`` packed.
"""

from __future__ import annotations

import numpy as np

from ..errors import SimulationError
from ..ir.launch import WARP
from .access import check_pointer, mark_shared_write, write_bytes
from .memory import SHARED
from ..ptx.tcgen05 import COLS, LANES
from .registry import at_cta_exit, semantics


class _Tmem:
    def __init__(self):
        self.cells = np.full((LANES, COLS), 0xA5A5A5A5, np.uint32)
        self.owned = np.zeros(COLS, bool)
        self.allocs: dict[int, tuple[int, object]] = {}  # start col -> (n_cols, span)
        self.freed: dict[tuple[int, int], object] = {}
        self.last_size = COLS
        self.relinquished = None
        self.st_pending = np.full((LANES, COLS), -1, np.int32)  # thread of an unwaited st


def _tmem(ctx) -> _Tmem:
    st = ctx.ext.get("tmem")
    if st is None:
        st = ctx.ext["tmem"] = _Tmem()
    return st


def _warps(ctx, site, what):
    """The active warps, each of which must be fully active (``.sync.aligned``)."""
    act = ctx.active()
    warps, counts = np.unique(act // WARP, return_counts=True)
    if (counts != WARP).any():
        w = int(warps[np.argmax(counts != WARP)])
        ctx.hazard(f"{what} is .sync.aligned: all 32 threads of warp {w} must execute it, "
                   f"but only {int(counts[np.argmax(counts != WARP)])} do", site.span,
                   "execute it from a whole warp (if warp_id == 0: ...)", tid=w * WARP)
    return warps


def _uniform(ctx, site, values, what):
    """One value per active warp; a warp whose threads disagree is a hazard."""
    act = ctx.active()
    v = np.broadcast_to(np.asarray(values, np.int64), act.shape)
    out = {}
    for w in np.unique(act // WARP).tolist():
        vw = v[act // WARP == w]
        if (vw != vw[0]).any():
            ctx.hazard(f"{what} operand differs between the threads of warp {w}", site.span,
                       "pass the same value in every thread of the warp", tid=w * WARP)
        out[w] = int(vw[0])
    return out


def _cta_group(site, group):
    if group != 1:
        raise SimulationError("cta_group=2 needs a CTA pair; clusters are not simulated",
                              site.span, "simulate with cta_group=1")


@semantics("ptx.tcgen05.alloc")
def alloc(ctx, site, args):
    dst, n_cols, group = args
    _cta_group(site, group)
    tm, act = _tmem(ctx), ctx.active()
    ptrs = check_pointer(ctx, dst, 4, site.span, "tcgen05.alloc destination", (SHARED,))
    if ptrs is None:
        return
    for w in _warps(ctx, site, "tcgen05.alloc").tolist():
        lane0 = int(np.argmax(act // WARP == w))
        start = _take(ctx, site, tm, n_cols, w * WARP)
        if start is None:
            continue
        off = ptrs[1][lane0:lane0 + 1]
        data = np.array([start], "<u4").view(np.uint8)[None, :]
        write_bytes(ctx, ptrs[0][lane0:lane0 + 1], off, data, act[lane0:lane0 + 1])
        mark_shared_write(ctx, off, 4, act[lane0:lane0 + 1], site.span,
                          owner=np.array([-(2 + w)]))
        ctx.stats.tmem_peak_cols = max(ctx.stats.tmem_peak_cols, int(tm.owned.sum()))


def _take(ctx, site, tm, n, tid):
    if tm.relinquished is not None:
        ctx.hazard(f"tcgen05.alloc after tcgen05.relinquish_alloc_permit (at "
                   f"{tm.relinquished})", site.span, "allocate before relinquishing", tid=tid)
        return None
    if n > tm.last_size:
        ctx.hazard(f"tcgen05.alloc of {n} columns after an allocation of {tm.last_size}: "
                   "allocation sizes must not increase", site.span,
                   "allocate the largest block first", tid=tid)
    for start in range(0, COLS, n):
        if not tm.owned[start:start + n].any():
            tm.owned[start:start + n] = True
            tm.allocs[start] = (n, site.span)
            tm.last_size = n
            return start
    ctx.hazard(f"tcgen05.alloc of {n} columns can never be satisfied: "
               f"{int(tm.owned.sum())} of {COLS} columns are allocated and nothing frees "
               "them (deadlock)", site.span, "deallocate before allocating again", tid=tid)
    return None


@semantics("ptx.tcgen05.dealloc")
def dealloc(ctx, site, args):
    taddr, n_cols, group = args
    _cta_group(site, group)
    tm = _tmem(ctx)
    _warps(ctx, site, "tcgen05.dealloc")
    for w, a in _uniform(ctx, site, taddr, "tcgen05.dealloc taddr").items():
        col = a & 0xFFFF
        live = tm.allocs.get(col)
        if a >> 16 == 0 and live is not None and live[0] == n_cols:
            del tm.allocs[col]
            tm.owned[col:col + n_cols] = False
            tm.freed[(col, n_cols)] = site.span
            continue
        if (col, n_cols) in tm.freed and a >> 16 == 0:
            msg = f"tensor memory freed twice (first freed at {tm.freed[(col, n_cols)]})"
        else:
            msg = f"tcgen05.dealloc({a:#x}, {n_cols}) matches no live allocation"
        ctx.hazard(msg, site.span, "deallocate exactly the (address, n_cols) allocated, once",
                   tid=w * WARP)


@semantics("ptx.tcgen05.relinquish_alloc_permit")
def relinquish(ctx, site, args):
    _cta_group(site, args[0])
    _tmem(ctx).relinquished = site.span


@at_cta_exit
def _leak_check(ctx, span):
    tm = ctx.ext.get("tmem")
    if tm is None:
        return
    for start, (n, aspan) in sorted(tm.allocs.items()):
        ctx.hazard(f"tensor memory leak: {n} columns allocated at column {start} are still "
                   f"allocated when the CTA exits", aspan,
                   "call T.ptx.tcgen05.dealloc(taddr, n_cols) before the kernel ends")
        return


@semantics("ptx.tcgen05.fence.before_thread_sync", "ptx.tcgen05.fence.after_thread_sync",
           "ptx.tcgen05.wait.ld")
def no_effect(ctx, site, args):
    """The fences order nothing the sequential model could reorder; ``wait::ld`` has
    nothing to wait for, loads are performed at issue (a legal schedule, §3)."""


@semantics("ptx.tcgen05.wait.st")
def wait_st(ctx, site, args):
    tm = _tmem(ctx)
    tm.st_pending[np.isin(tm.st_pending, ctx.active())] = -1
