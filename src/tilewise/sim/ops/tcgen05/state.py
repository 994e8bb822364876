"""The asynchronous state of ``tcgen05.mma`` and ``tcgen05.cp`` (PTX ISA §9.7.16.6,
§9.7.16.12.1): the part of the async core (``ctx.asyncs.part("tcgen05")``) that the
tcgen05 ops and the shared-memory and tensor-memory checks use.

An MMA or a copy is computed when it is issued (its shared operands are read then, its
tensor-memory cells written in issue order, which is the order the tensor pipe executes
them in), but it is *in flight* until the mbarrier of a later ``tcgen05.commit`` of the
issuing thread (each commit tracks *all* the thread's earlier operations, PTX
§9.7.16.12.1) completes the phase that commit's arrival counts towards:

* its tensor-memory cells belong to it (``owner``: the last async writer of each cell):
  a ``tcgen05.ld`` of them is a hazard unless the reading thread has observed that phase
  (a successful mbarrier wait, or a ``bar.sync`` after some thread's wait) —
  "read before the commit's mbarrier phase completed";
* its shared-memory operands are *being read*: a write to them (a store, a cp.async or
  bulk copy issued into them) is a hazard unless the writer has observed the phase.

The commit's arrival is performed at the commit (ops complete at issue: a legal schedule),
with count 1 and the committing thread as the arriver, like PTX's ``.mbarrier::arrive::one``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ....ptx.tcgen05 import COLS, LANES
from ...async_core import Part, async_part
from ...memory import SHARED, SPACE_SHIFT


@dataclass
class _Op:
    tid: int
    what: str  # "tcgen05.mma" | "tcgen05.cp"
    span: object
    smem: np.ndarray  # unique shared byte offsets read
    seen: np.ndarray  # per thread: observed its completion
    commits: list = field(default_factory=list)  # (mbarrier, phase its arrival counted to)
    cells: int = 0  # tensor-memory cells it still owns
    reading: bool = True  # its shared bytes still count as being read

    def tracked_by(self, mbar: int) -> bool:
        return any(m == mbar for m, _ in self.commits)


@async_part("tcgen05", order=3)
class Tcgen05State(Part):
    def __init__(self, core):
        super().__init__(core)
        ctx = self.ctx
        self.ops: list[_Op] = []
        self.owner = np.full((LANES, COLS), -1, np.int32)
        self.live: dict[int, list[int]] = {}  # thread -> its ops later commits still track
        self.reading = np.zeros(ctx.mem.shared.size, np.int32)
        self.n_reading = 0

    # -------------------------------------------------------------- the instructions
    def issue(self, tid: int, what: str, span, lanes, cols, smem: np.ndarray) -> None:
        """Record one MMA / copy by ``tid`` that wrote cells (``lanes``, ``cols``) and read
        the shared bytes ``smem``."""
        k = len(self.ops)
        op = _Op(tid, what, span, smem, np.zeros(self.ctx.n, bool))
        self.ops.append(op)
        self._disown(lanes, cols)
        self.owner[lanes, cols] = k
        op.cells = int((self.owner == k).sum())
        np.add.at(self.reading, smem, 1)
        self.n_reading += len(smem)
        self.live.setdefault(tid, []).append(k)

    def commit(self, tid: int, mbar: int, span) -> None:
        """``tcgen05.commit`` by ``tid``: its earlier ops complete with one arrival on mbar."""
        phase = self.core.arrive(mbar, 1, tid, span)
        ids = self.live.get(tid, [])
        for k in ids:
            self.ops[k].commits.append((mbar, phase))
        # an op that owns no cell and reads no shared byte is nothing to track any more
        self.live[tid] = [k for k in ids if self.ops[k].reading or self.ops[k].cells]

    def stored(self, lanes, cols) -> None:
        """A ``tcgen05.st`` replaced these cells: no async op owns them any more."""
        self._disown(lanes, cols)
        self.owner[lanes, cols] = -1

    def _disown(self, lanes, cols) -> None:
        old = np.broadcast_to(self.owner[lanes, cols], np.broadcast(lanes, cols).shape)
        ids, counts = np.unique(old[old >= 0], return_counts=True)
        for k, n in zip(ids.tolist(), counts.tolist()):
            self.ops[k].cells -= n

    def observe(self, tids, addrs, cluster: bool = False) -> None:
        """Threads ``tids`` waited successfully on the mbarriers ``addrs``."""
        for a in np.unique(addrs).tolist():
            who = tids[addrs == a]
            for op in self.ops:
                if op.tracked_by(a) and self._complete(op, a):
                    op.seen[who] = True

    def barrier(self) -> None:
        """``bar.sync``: what one thread has observed, every thread has."""
        for op in self.ops:
            if op.seen.any():
                op.seen[:] = True

    # -------------------------------------------------------------- checks
    def check_ld(self, tids, lanes, cols, span) -> None:
        """A ``tcgen05.ld`` by ``tids`` of cells ``(lanes, cols)`` (rows per thread)."""
        own = self.owner[lanes, cols].reshape(len(tids), -1)
        for k in np.unique(own[own >= 0]).tolist():
            op = self.ops[k]
            readers = (own == k).any(axis=1)
            bad = readers & ~(op.seen[tids] & self._complete(op))
            if bad.any():
                t = int(tids[np.argmax(bad)])
                why, hint = self._why(op, t)
                self.ctx.hazard(f"tcgen05.ld reads tensor memory that a {op.what} of thread "
                                f"{op.tid} (issued at {op.span}) writes: {why}", span, hint,
                                tid=t)
                return

    def check_write(self, span_b, tids, span) -> None:
        """A write of the shared bytes ``span_b`` (rows per thread) by ``tids``."""
        if not self.n_reading or not self.reading[span_b].any():
            return
        for op in self.ops:
            if not op.reading:
                continue
            rows = np.isin(span_b, op.smem).any(axis=1)
            if not rows.any():
                continue
            ok = op.seen[tids] & self._complete(op)
            if (rows & ~ok).any():
                k = int(np.argmax(rows & ~ok))
                t, off = int(tids[k]), int(span_b[k][np.isin(span_b[k], op.smem)][0])
                why, hint = self._why(op, t)
                self.ctx.hazard(f"overwrites shared memory that a {op.what} of thread "
                                f"{op.tid} (issued at {op.span}) still reads: {why}", span,
                                hint, tid=t, addr=(SHARED << SPACE_SHIFT) + off)
                return
            self._retire(op)

    def at_exit(self) -> None:
        for op in self.ops:
            if not op.commits:
                self.ctx.hazard(f"the CTA exits while a {op.what} is pending: it was never "
                                "committed (missing tcgen05.commit)", op.span,
                                "end with T.ptx.tcgen05.commit(mbar) and wait on the mbarrier",
                                tid=op.tid)
                return

    # -------------------------------------------------------------- helpers
    def _complete(self, op: _Op, mbar: int | None = None) -> bool:
        """Whether a commit that tracks ``op`` (on ``mbar``, or any) has completed its phase."""
        for m, p in op.commits:
            phase = self.core.phase(m)
            if (mbar is None or m == mbar) and phase is not None and phase > p:
                return True
        return False

    def _retire(self, op: _Op) -> None:
        if op.reading:
            op.reading = False
            np.add.at(self.reading, op.smem, -1)
            self.n_reading -= len(op.smem)

    def _why(self, op: _Op, tid: int) -> tuple[str, str]:
        ctx = self.ctx
        if not op.commits:
            return ("it was never committed (missing tcgen05.commit)",
                    "call T.ptx.tcgen05.commit(mbar) after the MMAs, then wait on mbar "
                    "(T.ptx.mbarrier.try_wait(mbar, parity)) before using the results")
        mbar, phase = op.commits[-1]
        if not self._complete(op):
            return (f"its commit's mbarrier ({ctx.describe_addr(mbar)}): "
                    f"{self.core.describe(mbar)}",
                    "wait on the commit's mbarrier until the phase completes")
        mbar, phase = next((m, p) for m, p in op.commits if self._complete(op, m))
        return (f"its commit's mbarrier ({ctx.describe_addr(mbar)}) completed phase "
                f"{phase}, but thread {tid} has not waited on it (missing mbarrier wait)",
                "call T.ptx.mbarrier.try_wait(mbar, parity) in the threads that use the "
                "result (or wait in one, then T.cuda.cta_sync()), then "
                "T.ptx.tcgen05.fence.after_thread_sync()")


def tcgen05_of(ctx) -> Tcgen05State:
    """The CTA's tcgen05 state (made on first use)."""
    return ctx.asyncs.part("tcgen05")
