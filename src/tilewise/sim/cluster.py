"""The CTAs of one thread-block cluster (PTX ISA §9.7.13.4 ``barrier.cluster``, §9.7.9.25
copies into another CTA's shared memory, multicast): their contexts by rank and the cluster
barrier's state.

The CTAs of a cluster may wait on one another (an mbarrier phase completed by a multicast
copy or a remote arrive of another CTA, the cluster barrier), so they run together: each is
a root task of one :class:`~.scheduler.Scheduler` (one baton, round robin, one deadlock
rule; a CTA keeps the baton until it blocks).

**Cluster barrier.** ``barrier.cluster.arrive`` counts an arrival per thread;
``barrier.cluster.wait`` blocks the thread until every thread of every CTA of the cluster
has arrived as often as it has (a CTA that has exited counts as arrived). When a phase
completes, every CTA's accesses made before its threads arrived are ordered before every
later access (each CTA's shared-memory shadows cleared, once, by the first wait that sees
the phase complete: a CTA still blocked there has made no later access, and one that
resumes later must not forget the accesses others made meanwhile). A phase that some
thread arrived on with ``.relaxed`` orders only the accesses of the threads that arrived
without it (a relaxed arrive releases nothing of its thread's): the CTAs' shadows are cleared
for those threads alone (their own shared-memory writes, and their ``st_cluster`` stores
into other CTAs), as a named barrier does for its participants.
"""

from __future__ import annotations

import numpy as np

from ..errors import SimulationError
from .scheduler import Wait


_EXITED = np.iinfo(np.int64).max // 2  # the arrivals an exited CTA counts as


class Cluster:
    """The CTAs (``ctxs``, indexed by rank) of one cluster and their barrier arrivals."""

    def __init__(self, n: int, threads: int):
        self.n = n
        self.ctxs: list = [None] * n
        self.arrived = np.zeros((n, threads), np.int64)  # barrier.cluster arrivals per thread
        self.relaxed = np.zeros((n, threads), bool)  # whose latest arrival was .relaxed
        self.completed = 0  # the last phase (arrivals per thread) that has completed

    def exited(self, rank: int) -> None:
        """CTA ``rank`` has finished: it counts as arrived at every cluster barrier."""
        self.arrived[rank] = _EXITED
        self.relaxed[rank] = False

    def gone(self, rank: int) -> bool:
        """Whether CTA ``rank`` has finished."""
        return bool(self.arrived[rank, 0] >= _EXITED)

    # ------------------------------------------------------------------ peers
    def peer(self, ctx, rank: int, span, what: str):
        """The context of CTA ``rank`` of the cluster (a SimulationError outside it)."""
        if not 0 <= rank < self.n:
            raise SimulationError(f"{what} names CTA rank {rank} of the cluster, which has "
                                  f"{self.n} CTA(s) (ranks 0..{self.n - 1})", span,
                                  "pass a rank of the kernel's cluster (T.cta_id_in_cluster)")
        return self.ctxs[rank]

    # ------------------------------------------------------------------ barrier.cluster
    def barrier_arrive(self, ctx, tids, relaxed: bool = False) -> None:
        self.arrived[ctx.rank, tids] += 1
        self.relaxed[ctx.rank, tids] = relaxed

    def released(self) -> bool:
        """Whether the phase just completed orders all memory: no thread's arrival on it was
        ``.relaxed`` (a relaxed arrive releases nothing; counted by each thread's latest
        arrival). Otherwise it orders the accesses of the others alone (barrier_wait)."""
        return not self.relaxed.any()

    def barrier_wait(self, ctx, tids, span, what: str) -> bool:
        """Block until every thread of the cluster has arrived as often as ``tids`` (in
        instruction ``what``, for deadlock reports)."""
        need = int(self.arrived[ctx.rank, tids].max())

        def state():
            behind = int((self.arrived < need).sum())
            return int(tids[0]), None, f"{behind} thread(s) of the cluster have not arrived"

        if not ctx.block(lambda: int(self.arrived.min()) >= need, Wait(ctx, what, span, state)):
            return False
        if need > self.completed:  # the first wait to see the phase complete: order memory
            self.completed = need
            if self.released():
                for c in self.ctxs:  # every CTA's accesses before its arrival, at once (a
                    if c is not None:  # CTA that resumes later must not clear newer ones)
                        c.mem.barrier(cluster=True)
            elif not self.relaxed.all():  # only the threads that arrived with release
                for c in self.ctxs:
                    if c is not None:
                        c.mem.release_cluster(~self.relaxed)
        return True
