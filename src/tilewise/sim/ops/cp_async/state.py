"""The cp.async part of a CTA's asynchronous state (``ctx.asyncs.part("cp_async")``),
ptx-semantics.md §4.

Per thread: ``committed`` groups so far and ``completed`` groups. An issued copy belongs to
group ``committed[t]`` (the group the next commit closes); ``wait_group N`` completes every
group below ``committed[t] - N``; copies of the open group are never waited for. Copies are
performed lazily, at completion, reading the source then; until then their destination
bytes are *pending* (``mem.pending``) and a read of them is a hazard. A completed copy is
visible to its thread only, until the next ``bar.sync``. ``cp.async.mbarrier.arrive.noinc``
arrives when all of the thread's earlier copies have completed (a *trigger*); a wait on
that mbarrier that is not satisfied first completes the copies it tracks (:meth:`drain`:
they may complete at any time, so this is a legal schedule).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...async_core import Part, async_part, shared_addr as _shared_addr
from ...memory import VISIBLE, byte_span
from ...races import overlap


@dataclass
class _Batch:
    """The copies one cp.async statement issued (one per active thread)."""

    tids: np.ndarray
    group: np.ndarray
    seq: np.ndarray
    dst: np.ndarray  # shared offsets
    src_sp: np.ndarray
    src_off: np.ndarray
    size: int
    src_size: np.ndarray
    epoch: int
    span: object
    done: np.ndarray


@async_part("cp_async", order=0)
class CpAsyncState(Part):
    """The cp.async copies of one CTA in flight, their groups and triggers."""

    def __init__(self, core):
        super().__init__(core)
        n = self.ctx.n
        self.committed = np.zeros(n, np.int64)
        self.completed = np.zeros(n, np.int64)
        self.issued = np.zeros(n, np.int64)
        self.wait_epoch = np.full(n, -1, np.int64)
        self.wait_spans: dict[int, tuple] = {}  # tid -> (n, span) of its last wait
        self.epoch = 0
        self.batches: list[_Batch] = []
        self.triggers: list[tuple[int, int, int, object]] = []  # (tid, mbar, seq, span)

    # ================================================================== cp.async
    def cp_issue(self, tids, dst, src_sp, src_off, size: int, src_size, span) -> None:
        """One cp.async per thread of ``tids``: ``src_size`` bytes read (0: none), the rest
        of ``size`` zero-filled, performed when its group completes."""
        st, mem = self, self.ctx.mem
        tc = self.core.part_if_used("tcgen05")  # an MMA reading the bytes: the copy may
        if tc is not None:                      # land at any time from now
            tc.check_write(byte_span(dst, size), tids, span)
        _count(mem.pending, dst, size, 1)
        mem.n_pending += len(dst) * size
        seq = st.issued[tids].copy()
        st.issued[tids] += 1
        st.batches.append(_Batch(tids.copy(), st.committed[tids].copy(), seq, dst, src_sp,
                                 src_off, size, src_size, st.epoch, span,
                                 np.zeros(len(tids), bool)))

    def cp_commit(self, tids) -> None:
        self.committed[tids] += 1

    def cp_wait(self, tids, n: int, span) -> None:
        """``cp.async.wait_group n`` by ``tids``."""
        st = self
        st.completed[tids] = np.maximum(st.completed[tids], st.committed[tids] - n)
        st.epoch += 1
        st.wait_epoch[tids] = st.epoch
        for t in tids.tolist():
            st.wait_spans[t] = (n, span)
        self._complete(lambda b: b.group < st.completed[b.tids])

    def cp_track(self, tids, addrs, span) -> None:
        """``cp.async.mbarrier.arrive.noinc``: arrive on ``addrs`` once each thread's
        earlier copies have completed."""
        st = self
        for t, a in zip(tids.tolist(), addrs.tolist()):
            st.triggers.append((t, a, int(st.issued[t]), span))
        self._fire_triggers()

    def _complete(self, pred, visible_to_all=False) -> None:
        """Perform every pending copy ``pred(batch)`` selects (a per-copy bool array)."""
        st = self
        for b in st.batches:
            sel = ~b.done & pred(b)
            if sel.any():
                self._perform(b, sel, visible_to_all)
        st.batches = [b for b in st.batches if not b.done.all()]
        self._fire_triggers()

    def _perform(self, b, sel, visible_to_all) -> None:
        mem = self.ctx.mem
        _race_reads(self.ctx, b, sel)
        data = _gather_sources(mem, b.src_sp[sel], b.src_off[sel], b.src_size[sel], b.size)
        cols = byte_span(b.dst[sel], b.size)
        mem.shared[cols] = data
        _count(mem.pending, b.dst[sel], b.size, -1)
        mem.n_pending -= cols.size
        owner = VISIBLE if visible_to_all else b.tids[sel][:, None]
        mem.owner[cols] = np.broadcast_to(owner, cols.shape)
        if mem.gen_writer is not None:  # cp.async writes through the generic proxy
            mem.gen_writer[cols] = np.broadcast_to(b.tids[sel][:, None], cols.shape)
            mem.gen_dirty = True
        b.done |= sel

    def _fire_triggers(self) -> None:
        st = self
        if not st.triggers:
            return
        low = np.full(self.ctx.n, np.iinfo(np.int64).max, np.int64)  # oldest pending, per thread
        for b in st.batches:
            live = ~b.done
            if live.any():
                np.minimum.at(low, b.tids[live], b.seq[live])
        keep = []
        for t, addr, seq, span in st.triggers:
            if low[t] < seq:  # an earlier copy of the thread is still pending
                keep.append((t, addr, seq, span))
            else:
                self.core.arrive(addr, 1, t, span)
        st.triggers = keep

    def drain(self, addr: int) -> bool:
        """Complete the copies an mbarrier at ``addr`` tracks; True if any was waiting."""
        waiting = [(t, s) for t, a, s, _ in self.triggers if a == addr]
        for t, s in waiting:
            self._complete(lambda b, t=t, s=s: (b.tids == t) & (b.seq < s),
                           visible_to_all=True)
        return bool(waiting)

    # ================================================================== hooks
    def check_read(self, span_b, tids, bad, own, span) -> np.ndarray:
        """A read of bytes a pending copy will write is a hazard (and the only one
        reported for this read)."""
        mem = self.ctx.mem
        if mem.n_pending and np.any(mem.pending[span_b]):
            k, j = np.argwhere(mem.pending[span_b] > 0)[0]
            self._report_pending_read(int(span_b[k, j]), int(tids[k]), span)
            return np.zeros_like(bad)
        return bad

    def check_write(self, span_b, tids, span) -> None:
        mem = self.ctx.mem
        if mem.n_pending and np.any(mem.pending[span_b]):
            k, j = np.argwhere(mem.pending[span_b] > 0)[0]
            self._report_pending_write(int(span_b[k, j]), int(tids[k]), span)

    # ================================================================== messages
    def _find_pending(self, off):
        for b in self.batches:
            hit = ~b.done & (b.dst <= off) & (off < b.dst + b.size)
            if hit.any():
                return b, int(np.argmax(hit))
        return None, 0

    def _report_pending_read(self, off, reader, span) -> None:
        b, k = self._find_pending(off)
        writer = int(b.tids[k])
        who = "its own" if writer == reader else f"thread {writer}'s"
        msg, hint = self._why_pending(b, k)
        self.ctx.hazard(f"read before the cp.async completed: the bytes are still being "
                        f"written by {who} cp.async (issued at {b.span}); {msg}", span, hint,
                        tid=reader, addr=_shared_addr(off))

    def _report_pending_write(self, off, writer, span) -> None:
        b, k = self._find_pending(off)
        self.ctx.hazard(f"write to shared memory that a pending cp.async of thread "
                        f"{int(b.tids[k])} (issued at {b.span}) will overwrite", span,
                        "wait for the cp.async (cp.async.wait_group) before reusing the "
                        "buffer", tid=writer, addr=_shared_addr(off))

    def _why_pending(self, b, k):
        st, t = self, int(b.tids[k])
        if b.group[k] >= st.committed[t]:
            return ("it was never committed (missing cp.async.commit_group)",
                    "call T.ptx.cp_async.commit_group() after the copies, then wait_group")
        if st.wait_epoch[t] > b.epoch:
            n, wspan = st.wait_spans[t]
            return (f"cp.async.wait_group({n}) at {wspan} leaves up to {n} group(s) in flight "
                    f"and this copy's group is one of them",
                    "use cp.async.wait_group(0) here (or a count small enough to complete "
                    "this copy's group) before reading")
        return ("no cp.async.wait_group completed it (missing cp.async.wait_group)",
                "call T.ptx.cp_async.wait_group(0) (then T.cuda.cta_sync()) before reading")


def _count(counts: np.ndarray, starts: np.ndarray, width: int, step: int) -> None:
    """``counts[b] += step`` for the ``width`` bytes from each of ``starts``, counting a byte
    two rows share twice (``np.add.at``, ~10x slower, only then)."""
    idx = byte_span(starts, width)
    if len(starts) > 1 and overlap(starts, width, starts) is not None:
        np.add.at(counts, idx.ravel(), step)
    else:
        counts[idx] += step


def _race_reads(ctx, b, sel) -> None:
    """A completing cp.async reads its global source now (the race shadows)."""
    reads = sel & (b.src_size > 0)
    for s in np.unique(b.src_sp[reads]).tolist():
        rows = reads & (b.src_sp == s)
        ctx.mem.races.read(ctx, s, b.src_off[rows], b.size, b.tids[rows], b.span)


def _gather_sources(mem, sp, off, ss, size):
    """Rows of ``size`` bytes: ``ss`` bytes read from the source, then zero fill."""
    data = np.zeros((len(sp), size), np.uint8)
    for s in np.unique(sp[ss > 0]):
        rows = (sp == s) & (ss > 0)
        arr = mem.space_bytes(int(s))
        data[rows] = arr[np.minimum(byte_span(off[rows], size), arr.size - 1)]
    data[np.arange(size) >= ss[:, None]] = 0
    return data


def cp_of(ctx) -> CpAsyncState:
    """The CTA's cp_async state (made on first use)."""
    return ctx.asyncs.part("cp_async")
