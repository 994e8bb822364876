"""The CTAs of one thread-block cluster, run together (PTX ISA §9.7.13.4 ``barrier.cluster``,
§9.7.9.25 copies into another CTA's shared memory, multicast).

A CTA alone runs straight through (``sim/runner.py``). The CTAs of a cluster may wait on
one another: an mbarrier phase completed by a multicast copy or a remote arrive of another
CTA, the cluster barrier. So each CTA of a cluster runs on its own Python thread, and a
baton lets exactly one run at a time (execution stays deterministic and the interpreter
state is never shared concurrently). A CTA keeps the baton until it blocks: a wait its own
state cannot satisfy hands the baton to the next CTA still running (round robin, by rank)
and resumes when the baton comes back, to poll again. Switching only at blocking points
keeps every CTA's program order and is a legal schedule of the hardware's.

**Deadlock.** ``progress`` counts the times some CTA resumed work (started, or returned
from a satisfied wait). A CTA whose wait is unsatisfied records the count it saw; when
every CTA still running is blocked and all saw the current count, nothing can change any
more: the waiting CTA reports the deadlock (the caller's hazard names the barrier).

**Cluster barrier.** ``barrier.cluster.arrive`` counts an arrival per thread;
``barrier.cluster.wait`` blocks the thread until every thread of every CTA of the cluster
has arrived as often as it has (a CTA that has exited counts as arrived).
"""

from __future__ import annotations

import threading

import numpy as np

from ..errors import SimulationError


class _Abort(BaseException):
    """Unwinds a blocked CTA when another CTA of its cluster failed (never caught by the
    simulator's guards, which catch Exception)."""


class Cluster:
    """The CTAs (``ctxs``, indexed by rank) of one cluster; :meth:`run` executes them."""

    def __init__(self, n: int, threads: int):
        self.n = n
        self.ctxs: list = [None] * n
        self.arrived = np.zeros((n, threads), np.int64)  # barrier.cluster arrivals per thread
        self._cv = threading.Condition()
        self._turn = 0
        self._done = [False] * n
        self._blocked = [False] * n
        self._seen = [-1] * n
        self._progress = 0
        self._error: BaseException | None = None
        self._abort = False

    # ------------------------------------------------------------------ running
    def run(self, run_cta) -> None:
        """``run_cta(rank)`` for every rank, interleaved at blocking points; re-raises the
        first error of any CTA."""
        workers = [threading.Thread(target=self._worker, args=(r, run_cta), daemon=True)
                   for r in range(self.n)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        if self._error is not None:
            raise self._error

    def _worker(self, rank: int, run_cta) -> None:
        with self._cv:
            self._cv.wait_for(lambda: self._turn == rank or self._abort)
            self._progress += 1
        try:
            if not self._abort:
                with np.errstate(all="ignore"):
                    run_cta(rank)
        except _Abort:
            pass
        except BaseException as e:  # noqa: BLE001 - re-raised by run() in the caller
            with self._cv:
                if self._error is None:
                    self._error = e
                self._abort = True
        finally:
            with self._cv:
                self._done[rank] = True
                self._progress += 1
                self.arrived[rank] = np.iinfo(np.int64).max // 2  # an exited CTA has arrived
                self._pass_turn(rank)
                self._cv.notify_all()

    def _pass_turn(self, rank: int) -> None:
        for k in range(1, self.n + 1):
            r = (rank + k) % self.n
            if not self._done[r]:
                self._turn = r
                return

    def block(self, ctx, ready) -> bool:
        """Run the other CTAs until ``ready()`` holds for CTA ``ctx``; False when nothing can
        make it hold (every CTA still running is blocked and nothing changed)."""
        rank = ctx.rank
        while not ready():
            with self._cv:
                self._blocked[rank] = True
                self._seen[rank] = self._progress
                if all(self._done[r] or (self._blocked[r] and self._seen[r] == self._progress)
                       for r in range(self.n)):
                    self._blocked[rank] = False
                    return False
                self._pass_turn(rank)
                self._cv.notify_all()
                self._cv.wait_for(lambda: self._turn == rank or self._abort)
                self._blocked[rank] = False
                if self._abort:
                    raise _Abort()
            if ready():
                with self._cv:
                    self._progress += 1
                return True
        return True

    # ------------------------------------------------------------------ peers
    def peer(self, ctx, rank: int, span, what: str):
        """The context of CTA ``rank`` of the cluster (a SimulationError outside it)."""
        if not 0 <= rank < self.n:
            raise SimulationError(f"{what} names CTA rank {rank} of the cluster, which has "
                                  f"{self.n} CTA(s) (ranks 0..{self.n - 1})", span,
                                  "pass a rank of the kernel's cluster (T.cta_id_in_cluster)")
        return self.ctxs[rank]

    # ------------------------------------------------------------------ barrier.cluster
    def barrier_arrive(self, ctx, tids) -> None:
        self.arrived[ctx.rank, tids] += 1

    def barrier_wait(self, ctx, tids) -> bool:
        """Block until every thread of the cluster has arrived as often as ``tids``."""
        need = int(self.arrived[ctx.rank, tids].max())
        return ctx.block(lambda: int(self.arrived.min()) >= need,
                         lambda: f"threads of CTA rank {ctx.rank} wait at barrier.cluster.wait")
