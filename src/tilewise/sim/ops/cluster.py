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
  their arrive is visible (the CTA's own shared memory: as after ``bar.sync``).
* ``fence.mbarrier_init`` orders this thread's ``mbarrier.init`` before later cluster
  operations: no effect in the simulator, where an init is seen at once.
"""

from __future__ import annotations

import numpy as np

from ..collective import whole_groups
from ..registry import semantics


def _arrive(ctx, site, aligned: bool) -> None:
    if aligned:
        whole_groups(ctx, site.span, "barrier.cluster.arrive.aligned", 32, "warp")
    if ctx.cluster is not None:
        ctx.cluster.barrier_arrive(ctx, ctx.active())


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
        ctx.mem.barrier()
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
    ctx.mem.barrier()


@semantics("ptx.barrier.cluster.arrive")
def barrier_cluster_arrive(ctx, site, args):
    _arrive(ctx, site, bool(args[1]))


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
