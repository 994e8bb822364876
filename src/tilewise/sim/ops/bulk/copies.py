"""Simulator semantics of the bulk (non-tensor) TMA copies, ``cp.async.bulk``, their bulk
async-groups and ``fence.proxy.async`` (ptx-semantics.md §4-§6, PTX ISA 9.7.9.25.4).

Both directions check, per issuing thread: the size is a positive multiple of 16, both
addresses are 16-byte aligned, in the right space and in bounds.

**global -> shared** (``g2s``, ``.mbarrier::complete_tx::bytes``). The copy is performed
at issue (the earliest legal completion): the bytes land, then ``complete_tx(nbytes)`` on
the mbarrier (the async core's ``complete_tx``), which may complete its phase.
The landed bytes are owned by the copy (shadow ``owner = BULK_TAG0 - k``, see
:mod:`tilewise.sim.memory`): a thread may read them only after one of its mbarrier waits
(``wait_parity``, or ``try_wait_parity`` returning true) has observed the phase the copy
completed; after that, or after a ``bar.sync`` that follows some thread's successful wait,
they are ordinary visible bytes. Any other read is "read before the bulk copy's mbarrier
completed". Writing the bytes (a plain store, another bulk copy) before any thread has
observed that phase is a race with the copy and is reported too.

**shared -> global** (``s2g``, ``.bulk_group``). The shared source must be visible to the
issuing thread (the usual shared-memory checks). The source is read and the global
destination written **at issue**; global memory has no shadow, so reading the destination
before ``wait_group`` is not checked. Each thread has bulk async-groups like cp.async's:
stores join the open group, ``commit_group`` closes it, ``wait_group n`` /
``wait_group_read n`` retire the oldest committed groups until at most n are pending (the
open group is never retired). Until its group is retired, the store's source bytes are
*being read*: any write to them, by any thread, is "shared memory overwritten while a bulk
store still reads it". A CTA that exits with a store still reading, or with a bulk copy
whose mbarrier phase never completed, is reported at the copy's line.

The bookkeeping (landed bytes and their owners, stores still reading, bulk groups, the
exit check) is the async core's (:mod:`tilewise.sim.async_core`); this module checks the
operands.

**fence.proxy.async**: a store by the copy engine reads shared memory through the async
proxy, so bytes a thread wrote with ordinary stores must be fenced by that thread first;
an unfenced source byte is reported ("... wrote with ordinary stores and no
fence.proxy.async since"; the shadow is :mod:`.state`'s). The global side
of both directions is race-checked (:mod:`tilewise.sim.races`).

**shared -> another CTA** (``s2c``, ``cp.async.bulk.shared::cluster.shared::cta``): the
source must be visible to the issuing thread and fenced for the async proxy; the bytes land
at the same shared offset in CTA ``rank``, owned by the copy, and ``complete_tx(nbytes)``
counts on that CTA's mbarrier at ``mbar``'s offset. The source is read at issue; the copy
completes on the mbarrier, not through bulk groups.
"""

from __future__ import annotations

import numpy as np

from ...access import check_pointer, check_shared_read, mbarrier_addrs
from ...memory import GLOBAL0, SHARED
from ...registry import semantics
from ...state import masked
from ...values import fit
from .state import bulk_of

_ALIGN = 16


def _sizes(ctx, site, nbytes, what):
    tids = ctx.active()
    n = fit(nbytes, tids.shape, np.int64)
    bad = (n <= 0) | (n % _ALIGN != 0)
    if bad.any():
        k = int(np.argmax(bad))
        ctx.hazard(f"{what}: size {int(n[k])} is not a positive multiple of 16 bytes",
                   site.span, "bulk copies move a multiple of 16 bytes (pad the buffer, or use "
                   "T.ptx.cp_async for smaller pieces)", tid=tids[k])
        return None
    return n


def _pointers(ctx, site, addrs, sizes, what, spaces):
    """(spaces, offsets) of 16-byte aligned, in-bounds ``sizes``-byte accesses, or None."""
    tids = ctx.active()
    addrs = fit(addrs, tids.shape, np.int64)
    if len(sizes) and (sizes == sizes[0]).all():  # one size: no sort
        return masked(ctx, tids, check_pointer, addrs, int(sizes[0]), site.span, what, spaces,
                      _ALIGN)
    sp, off = np.zeros(len(tids), np.int64), np.zeros(len(tids), np.int64)
    for size in np.unique(sizes).tolist():
        sel = sizes == size
        r = masked(ctx, tids[sel], check_pointer, addrs[sel], size, site.span, what, spaces,
                   _ALIGN)
        if r is None:
            return None
        sp[sel], off[sel] = r
    return sp, off


def _globals(ctx):
    return tuple(GLOBAL0 + k for k in range(len(ctx.mem.globals)))


@semantics("ptx.cp_async.bulk.g2s")
def g2s(ctx, site, args):
    dst, src, nbytes, mbar = args
    sizes = _sizes(ctx, site, nbytes, "cp.async.bulk (global -> shared)")
    if sizes is None:
        return
    d = _pointers(ctx, site, dst, sizes, "cp.async.bulk destination", (SHARED,))
    s = d and _pointers(ctx, site, src, sizes, "cp.async.bulk source", _globals(ctx))
    bars = s and mbarrier_addrs(ctx, mbar, site.span, "cp.async.bulk mbarrier")
    if bars is None or s is None:
        return
    for k, t in enumerate(ctx.active().tolist()):
        size, off, doff = int(sizes[k]), int(s[1][k]), int(d[1][k])
        ctx.mem.races.read(ctx, int(s[0][k]), off, size, np.array([t]), site.span)
        data = ctx.mem.space_bytes(int(s[0][k]))[off:off + size]
        bulk_of(ctx).bulk_land(t, np.arange(doff, doff + size), data, int(bars[k]), site.span)


@semantics("ptx.cp_async.bulk.s2g")
def s2g(ctx, site, args):
    dst, src, nbytes = args
    sizes = _sizes(ctx, site, nbytes, "cp.async.bulk (shared -> global)")
    if sizes is None:
        return
    s = _pointers(ctx, site, src, sizes, "cp.async.bulk source", (SHARED,))
    d = s and _pointers(ctx, site, dst, sizes, "cp.async.bulk destination", _globals(ctx))
    if d is None or s is None:
        return
    mem, tids = ctx.mem, ctx.active()
    for size in ([int(sizes[0])] if (sizes == sizes[0]).all() else np.unique(sizes).tolist()):
        sel = sizes == size
        check_shared_read(ctx, s[1][sel], size, tids[sel], site.span)
    for k, t in enumerate(tids.tolist()):
        size, off, goff = int(sizes[k]), int(s[1][k]), int(d[1][k])
        offs = np.arange(off, off + size)
        bulk_of(ctx).check_async_read(offs, t, "cp.async.bulk (shared -> global)", site.span)
        mem.races.write(ctx, int(d[0][k]), goff, size, np.array([t]), site.span,
                        lambda off=off, size=size: mem.shared[None, off:off + size])
        mem.space_bytes(int(d[0][k]))[goff:goff + size] = mem.shared[off:off + size]
        bulk_of(ctx).bulk_store(t, offs, site.span)


@semantics("ptx.cp_async.bulk.commit_group")
def commit_group(ctx, site, args):
    bulk_of(ctx).bulk_commit(ctx.active())


@semantics("ptx.cp_async.bulk.wait_group")
def wait_group(ctx, site, args):
    bulk_of(ctx).bulk_retire(ctx.active(), args[0], "cp.async.bulk.wait_group", site.span,
                           reads_only=False)


@semantics("ptx.cp_async.bulk.wait_group_read")
def wait_group_read(ctx, site, args):
    bulk_of(ctx).bulk_retire(ctx.active(), args[0], "cp.async.bulk.wait_group.read", site.span,
                           reads_only=True)


@semantics("ptx.fence.proxy_async")
def fence_proxy_async(ctx, site, args):
    """The executing threads' generic writes of shared memory become visible to the copy
    engine (the async proxy)."""
    bulk_of(ctx).proxy_fence(ctx.active())


@semantics("ptx.cp_async.bulk.s2c")
def s2c(ctx, site, args):
    dst, src, nbytes, mbar, rank = args
    tids = ctx.active()
    sizes = np.broadcast_to(np.asarray(nbytes, np.int64), tids.shape)
    ranks = np.broadcast_to(np.asarray(rank, np.int64), tids.shape)
    what = "cp.async.bulk (shared -> shared::cluster)"
    for k, t in enumerate(tids.tolist()):
        size = int(sizes[k])
        if size <= 0 or size % _ALIGN:
            ctx.hazard(f"{what}: size {size} is not a positive multiple of 16 bytes",
                       site.span, "copy a multiple of 16 bytes", tid=t)
            return
    s = check_pointer(ctx, src, int(sizes.max()), site.span, what + " source", (SHARED,),
                      _ALIGN)
    d = s and check_pointer(ctx, dst, int(sizes.max()), site.span, what + " destination",
                            (SHARED,), _ALIGN)
    bars = d and mbarrier_addrs(ctx, mbar, site.span, what + " mbarrier", read=False)
    if bars is None or d is None or s is None:
        return
    for k, t in enumerate(tids.tolist()):
        size, off, doff = int(sizes[k]), int(s[1][k]), int(d[1][k])
        offs = np.arange(off, off + size)
        check_shared_read(ctx, offs[::16], 16, np.full(size // 16, t), site.span)
        bulk_of(ctx).check_async_read(offs, t, what, site.span)
        peer = ctx.peer(int(ranks[k]), site.span, what)
        data = ctx.mem.shared[offs].copy()
        source = "" if peer is ctx else f" of CTA rank {ctx.rank}"
        bulk_of(peer).bulk_land(t, np.arange(doff, doff + size), data, int(bars[k]),
                              site.span, "cp.async.bulk (dsmem)", source)
