"""Simulator semantics of the cluster instructions: ``barrier.cluster`` (PTX ISA §9.7.13.4)
and ``fence.mbarrier_init`` (the shared -> shared copy into another CTA of the cluster is
the bulk family's, :mod:`.bulk.copies`). The CTAs of a cluster run together
(:mod:`tilewise.sim.cluster`); a kernel that declares no cluster is a cluster of one CTA,
rank 0.

* ``barrier.cluster.arrive`` counts one arrival per executing thread; ``wait`` blocks each
  thread until every thread of every CTA of the cluster has arrived as often (other CTAs
  run meanwhile); a wait nothing can satisfy is a deadlock. ``aligned=True`` requires
  whole warps. ``cuda.cluster_sync`` is arrive then wait. Arrive has release and wait
  acquire semantics: after the wait, every write of the cluster's threads made before
  their arrive is visible (the CTA's own shared memory: as after ``bar.sync``), unless
  some thread arrived ``.relaxed`` (then the phase only says that every CTA has started).
* ``fence.mbarrier_init`` orders this thread's ``mbarrier.init`` before later cluster
  operations: no effect in the simulator, where an init is seen at once.
* ``st_cluster`` (``mapa`` + ``st.shared::cluster.b32``): the four bytes land in the
  destination CTA's shared memory at once, owned there by the writing thread of the other
  CTA (:data:`REMOTE_OWNER0` + rank * block + tid): a read by the destination's threads
  before its next barrier is an invisible write, a later write by them a race; the store
  itself races with the destination's own writes and reads since its last barrier. A
  store into another CTA before this CTA has waited on a cluster barrier once (the
  destination may not have started) or into one that has exited is a hazard. A ``bar.sync``
  of the destination does not make the store visible there (only a completed cluster-barrier
  phase does). Not modelled: bulk copies in flight into the same bytes of the destination.
* ``st_async`` (``st.async.shared::cluster.mbarrier::complete_tx::bytes.b32``): the four
  bytes land in CTA ``rank``'s shared memory at once (a generic-proxy store), owned there
  by the store as a bulk copy's bytes are (:mod:`.bulk.copies`), and ``complete_tx(4)``
  counts on that CTA's mbarrier at ``mbar``'s offset: its threads may read them once they
  have observed the phase (an mbarrier wait), not before; writing them before that is a
  race. The same started / exited rules as ``st_cluster``. The complete-tx releases at
  cluster scope, so a store from another CTA is observed only by a wait that acquires at
  cluster scope (``wait_parity(..., scope="cluster")``); a reader whose wait acquired at
  CTA scope (the default) is reported (a store a CTA sends itself is not). In a kernel
  without a cluster of two or more CTAs st.async is undefined: reported.
"""

from __future__ import annotations

import numpy as np

from ..access import check_pointer, mark_shared_write, mbarrier_addrs, write_bytes
from ..collective import whole_groups
from ..memory import MANY, REMOTE_OWNER0, SHARED, SPACE_SHIFT, byte_span, owner_name
from ..registry import semantics
from ..values import fit, np_dtype
from .bulk.state import bulk_of


def _arrive(ctx, site, aligned: bool, relaxed: bool = False) -> None:
    if aligned:
        whole_groups(ctx, site.span, "barrier.cluster.arrive.aligned", 32, "warp")
    if ctx.cluster is not None:
        ctx.cluster.barrier_arrive(ctx, ctx.active(), relaxed)


def _wait(ctx, site, aligned: bool) -> None:
    if aligned:
        whole_groups(ctx, site.span, "barrier.cluster.wait.aligned", 32, "warp")
    cl = ctx.cluster
    if cl is None:  # a cluster of one CTA: a barrier of the CTA
        if ctx.act is not None:
            ctx.hazard(f"barrier.cluster.wait reached by {len(ctx.act)} of {ctx.n} threads: "
                       "the other threads of the cluster (one CTA) never arrive (deadlock)",
                       site.span, "wait on the cluster barrier from every thread",
                       tid=int(ctx.act[0]))
        ctx.mem.barrier(cluster=True)
        return
    tids = ctx.active()
    if (cl.arrived[ctx.rank, tids] == 0).any():
        ctx.hazard("barrier.cluster.wait without an earlier barrier.cluster.arrive by this "
                   "thread", site.span, "call T.ptx.barrier.cluster.arrive() first (or "
                   "T.cuda.cluster_sync())", tid=int(tids[0]))
        return
    if not cl.barrier_wait(ctx, tids, site.span, f"T.{site.name}"):
        behind = np.argwhere(cl.arrived < cl.arrived[ctx.rank, tids].max())[0]
        ctx.hazard(f"barrier.cluster.wait can never complete (deadlock): thread "
                   f"{int(behind[1])} of CTA rank {int(behind[0])} never arrives"
                   + ctx.blocked_elsewhere(),
                   site.span, "every thread of every CTA of the cluster must arrive "
                   "(T.ptx.barrier.cluster.arrive / T.cuda.cluster_sync) the same number "
                   "of times", tid=int(tids[0]))
        return
    ctx.cluster_started = True  # every CTA has arrived once: all have started


@semantics("ptx.barrier.cluster.arrive")
def barrier_cluster_arrive(ctx, site, args):
    _arrive(ctx, site, bool(args[1]), relaxed=bool(args[0]))


@semantics("ptx.barrier.cluster.wait")
def barrier_cluster_wait(ctx, site, args):
    _wait(ctx, site, bool(args[0]))


@semantics("cuda.cluster_sync")
def cluster_sync(ctx, site, args):
    _arrive(ctx, site, True)
    _wait(ctx, site, True)


@semantics("ptx.fence.mbarrier_init")
def fence_mbarrier_init(ctx, site, args):
    """No effect: an mbarrier.init is visible at once in the simulator."""


@semantics("ptx.st_cluster")
def st_cluster(ctx, site, args):
    dst, value, rank = args
    what = "st.shared::cluster (T.ptx.st_cluster)"
    tids = ctx.active()
    d = check_pointer(ctx, dst, 4, site.span, what, (SHARED,))
    if d is None:
        return
    vals = np.ascontiguousarray(fit(value, tids.shape, np_dtype(site.call.args[1].dtype)))
    data = vals.view(np.uint8).reshape(len(tids), 4)
    ranks = fit(rank, tids.shape, np.int64)
    for r in np.unique(ranks).tolist():
        sel = ranks == r
        peer = ctx.peer(int(r), site.span, what)
        t, offs = tids[sel], d[1][sel]
        if not _peer_ready(ctx, int(r), int(t[0]), site.span, what):
            continue
        if peer is ctx:
            mark_shared_write(ctx, offs, 4, t, site.span)
        elif peer.checks.shared:
            _remote_write(ctx, peer, offs, t, site.span, what)
        write_bytes(peer, d[0][sel], offs, data[sel], t)


def _peer_ready(ctx, r: int, tid: int, span, what: str) -> bool:
    """Whether CTA ``r`` of the cluster can take a store of ``what`` by ``tid`` now: it has
    started (this CTA has waited on a cluster barrier once) and has not exited."""
    if r == ctx.rank:
        return True
    if not ctx.cluster_started:
        ctx.hazard(f"{what} into CTA rank {r} before any cluster barrier: that CTA may "
                   "not have started (its shared memory is not there yet)", span,
                   "wait on the cluster barrier once first (T.ptx.barrier.cluster.arrive"
                   "(relaxed=True) early, T.ptx.barrier.cluster.wait() before the store)",
                   tid=tid)
        return False
    if ctx.cluster.gone(r):
        ctx.hazard(f"{what} into CTA rank {r} of the cluster, which has exited (its "
                   "shared memory is gone)", span, "end with T.cuda.cluster_sync() "
                   "in every CTA so that none exits while another still writes to it",
                   tid=tid)
        return False
    return True


@semantics("ptx.st_async")
def st_async(ctx, site, args):
    dst, value, rank, mbar = args
    what = "st.async (T.ptx.st_async)"
    tids = ctx.active()
    if ctx.cluster is None or ctx.cluster.n < 2:
        ctx.hazard(f"{what} in a kernel without a cluster of two or more CTAs: its behaviour "
                   "is undefined there (PTX ISA: %cluster_nctarank must be > 1)", site.span,
                   "declare a cluster (T.cta_id_in_cluster([n]), n >= 2), or store into this "
                   "CTA's shared memory with an ordinary store", tid=int(tids[0]))
        return
    d = check_pointer(ctx, dst, 4, site.span, what, (SHARED,))
    bars = None if d is None else mbarrier_addrs(ctx, mbar, site.span, what + " mbarrier",
                                                 read=False)
    if bars is None:
        return
    vals = np.ascontiguousarray(fit(value, tids.shape, np_dtype(site.call.args[1].dtype)))
    data = vals.view(np.uint8).reshape(len(tids), 4)
    ranks = fit(rank, tids.shape, np.int64)
    for k, t in enumerate(tids.tolist()):
        r = int(ranks[k])
        peer = ctx.peer(r, site.span, what)
        if not _peer_ready(ctx, r, t, site.span, what):
            continue
        off = int(d[1][k])
        source = "" if peer is ctx else f" of CTA rank {ctx.rank}"
        bulk_of(peer).store_land(t, np.arange(off, off + 4), data[k].copy(), int(bars[k]),
                                 site.span, "st.async", source)


def _remote_write(ctx, peer, offs, tids, span, what) -> None:
    """The race checks of a store by ``tids`` of ``ctx`` into ``peer``'s shared memory, then
    the owner marks (a thread of another CTA: see the module doc)."""
    span_b = byte_span(offs, 4)
    mem = peer.mem
    own = mem.owner[span_b]
    me = (REMOTE_OWNER0 + ctx.rank * ctx.n + tids)[:, None]
    clash = (own >= 0) & (own != me)
    readers = None if mem.readers.empty else mem.readers.at(span_b)
    read = None if readers is None else (readers >= 0) | (readers == MANY)
    if clash.any():
        k, j = np.argwhere(clash)[0]
        why = f"{owner_name(int(own[k, j]), peer.n)} wrote"
    elif read is not None and read.any():
        k, j = np.argwhere(read)[0]
        r = int(readers[k, j])
        why = f"{'thread ' + str(r) if r >= 0 else 'several threads'} of that CTA read"
    else:
        mem.owner[span_b] = np.broadcast_to(me, span_b.shape)
        mem.remote_owned = True
        return
    ctx.hazard(f"race on the shared memory of CTA rank {peer.rank}: {what} writes bytes "
               f"that {why} since its last barrier", span, "separate the accesses with "
               "T.cuda.cluster_sync() (barrier.cluster: release, then acquire)",
               tid=int(tids[k]), addr=(SHARED << SPACE_SHIFT) + int(span_b[k, j]))
