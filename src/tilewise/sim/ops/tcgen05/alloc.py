"""Simulator semantics of tcgen05 tensor-memory allocation, waits and fences,
ptx-semantics.md §1-§3; the memory itself and its allocator are :mod:`.tmem`
(``ctx.tmem``), ``ld``/``st`` are :mod:`.ldst`.

``alloc``/``dealloc``/``relinquish`` are warp-collective: whole warps, a warp-uniform
address. ``alloc`` writes the allocation's address (lane 0, its first column) to shared
memory as the warp's collective write. ``cta_group=2`` needs a CTA pair, which the
simulator (one CTA at a time) does not model.
"""

from __future__ import annotations

import numpy as np

from ....errors import SimulationError
from ....ir.launch import WARP
from ....ptx import tcgen05
from ...access import check_pointer, mark_shared_write, write_bytes
from ...collective import warp_uniform, whole_groups
from ...memory import SHARED
from ...registry import at_cta_exit, semantics


def _cta_group(site, group):
    if group != 1:
        raise SimulationError("cta_group=2 needs a CTA pair; clusters are not simulated",
                              site.span, "simulate with cta_group=1")


@semantics("ptx.tcgen05.alloc")
def alloc(ctx, site, args):
    dst, n_cols, group = args
    _cta_group(site, group)
    act = ctx.active()
    ptrs = check_pointer(ctx, dst, 4, site.span, "tcgen05.alloc destination", (SHARED,))
    if ptrs is None:
        return
    for w in whole_groups(ctx, site.span, "tcgen05.alloc").tolist():
        lane0 = int(np.argmax(act // WARP == w))
        start = _take(ctx, site, n_cols, w)
        if start is None:
            continue
        off = ptrs[1][lane0:lane0 + 1]
        data = np.array([start], "<u4").view(np.uint8)[None, :]
        write_bytes(ctx, ptrs[0][lane0:lane0 + 1], off, data, act[lane0:lane0 + 1])
        mark_shared_write(ctx, off, 4, act[lane0:lane0 + 1], site.span,
                          owner=np.array([-(2 + w)]))
        ctx.stats.tmem_peak_cols = max(ctx.stats.tmem_peak_cols, int(ctx.tmem.owned.sum()))


def _take(ctx, site, n, warp):
    tm, tid = ctx.tmem, warp * WARP
    if tm.relinquished is not None:
        ctx.hazard(f"tcgen05.alloc after tcgen05.relinquish_alloc_permit (at "
                   f"{tm.relinquished})", site.span, "allocate before relinquishing", tid=tid)
        return None
    if n > tm.last_size:
        ctx.hazard(f"tcgen05.alloc of {n} columns after an allocation of {tm.last_size}: "
                   "allocation sizes must not increase", site.span,
                   "allocate the largest block first", tid=tid)
    start = tm.take(n, site.span, warp)
    if start is None:
        ctx.hazard(f"tcgen05.alloc of {n} columns can never be satisfied: "
                   f"{int(tm.owned.sum())} of {tm.owned.size} columns are allocated and "
                   "nothing frees them (deadlock)", site.span,
                   "deallocate before allocating again", tid=tid)
    return start


@semantics("ptx.tcgen05.dealloc")
def dealloc(ctx, site, args):
    taddr, n_cols, group = args
    _cta_group(site, group)
    tm = ctx.tmem
    whole_groups(ctx, site.span, "tcgen05.dealloc")
    for w, a in warp_uniform(ctx, site.span, taddr, "tcgen05.dealloc taddr").items():
        col, lane = tcgen05.col_of(a), tcgen05.lane_of(a)
        live = tm.allocs.get(col)
        if lane == 0 and live is not None and live[0] == n_cols and live[2] != w:
            ctx.hazard(f"tcgen05.dealloc by warp {w} of tensor memory allocated by warp "
                       f"{live[2]} (at {live[1]}): the allocating warp must free it",
                       site.span, f"deallocate from warp {live[2]} (if warp_id == "
                       f"{live[2]}: ...)", tid=w * WARP)
        if lane == 0 and tm.free(col, n_cols, site.span):
            continue
        if (col, n_cols) in tm.freed and lane == 0:
            msg = f"tensor memory freed twice (first freed at {tm.freed[(col, n_cols)]})"
        else:
            msg = f"tcgen05.dealloc({a:#x}, {n_cols}) matches no live allocation"
        ctx.hazard(msg, site.span, "deallocate exactly the (address, n_cols) allocated, once",
                   tid=w * WARP)


@semantics("ptx.tcgen05.relinquish_alloc_permit")
def relinquish(ctx, site, args):
    _cta_group(site, args[0])
    ctx.tmem.relinquished = site.span


@at_cta_exit
def _leak_check(ctx, span):
    tm = ctx.tmem_if_used
    if tm is None:
        return
    for start, (n, aspan, _warp) in sorted(tm.allocs.items()):
        ctx.hazard(f"tensor memory leak: {n} columns allocated at column {start} are still "
                   f"allocated when the CTA exits", aspan,
                   "call T.ptx.tcgen05.dealloc(taddr, n_cols) before the kernel ends")
        return


@semantics("ptx.tcgen05.fence.before_thread_sync", "ptx.tcgen05.fence.after_thread_sync",
           "ptx.tcgen05.wait.ld")
def no_effect(ctx, site, args):
    """The fences order nothing the sequential model could reorder; ``wait::ld`` has
    nothing to wait for: loads are performed at issue (a legal schedule, §3)."""


@semantics("ptx.tcgen05.wait.st")
def wait_st(ctx, site, args):
    tm = ctx.tmem
    tm.st_pending[np.isin(tm.st_pending, ctx.active())] = -1
