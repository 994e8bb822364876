"""The simulator's asynchronous core: what one CTA has in flight, and when it completes
(ptx-semantics.md §4-§6). The op modules (:mod:`tilewise.sim.ops`) check operands and
call this core through ``ctx.asyncs``; the shared-memory checks of :mod:`.access` ask it
about bytes in flight. No op module reaches into another.

**mbarriers** (§6). State lives out of band, keyed by the barrier's shared address:
``phase``, ``expected`` and ``pending`` arrivals, the ``tx`` count. A phase completes
(``phase += 1``, ``pending = expected``) when ``pending == 0 and tx == 0``.
``wait(parity P)`` is satisfied iff ``P != phase & 1``. A completed phase releases what
its arriving threads wrote to shared memory: it becomes visible to every thread.

**cp.async** (§4). Per thread: ``committed`` groups so far and ``completed`` groups. An
issued copy belongs to group ``committed[t]`` (the group the next commit closes);
``wait_group N`` completes every group below ``committed[t] - N``; copies of the open
group are never waited for. Copies are performed lazily, at completion, reading the
source then; until then their destination bytes are *pending* (``mem.pending``) and a
read of them is a hazard. A completed copy is visible to its thread only, until the next
``bar.sync``. ``cp.async.mbarrier.arrive.noinc`` arrives when all of the thread's earlier
copies have completed (a *trigger*).

**Copy-engine copies** (§5: bulk and tensor copies, multicast, copies between the CTAs
of a cluster) and the generic/async proxy split are :mod:`.async_bulk`'s, mixed in.

**tcgen05.mma / tcgen05.cp** in flight, their commits and the tensor-memory cells and shared
operands they own are :mod:`.async_tcgen05` (``ctx.asyncs.tcgen05``); wgmma's are
:mod:`.async_wgmma`. Both are asked about shared writes; a successful wait and a ``bar.sync``
tell the tcgen05 part what threads have observed.

**Drains.** Threads run in program order, warp-synchronously: a wait that is not
satisfied when it executes first completes the cp.async copies its mbarrier tracks (they
may complete at any time, so this is a legal schedule); if it is still unsatisfied, the
the other sides of a forked warp-specialised branch run until it is (:mod:`.fibers`), and
the other CTAs of the cluster until they block too (:mod:`.cluster`); a wait nothing can
satisfy any more is reported as a deadlock, naming the barrier and what it still waits
for (arrivals, or transaction bytes that were announced and never arrived, or arrived
without being announced).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .async_bulk import BulkCore, shared_addr as _shared_addr
from .memory import VISIBLE, byte_span
from .races import overlap

MAX_COUNT = (1 << 20) - 1  # mbarrier counts are 20-bit


# ------------------------------------------------------------------------ mbarriers
@dataclass
class _Mbar:
    expected: int
    pending: int
    init_span: object
    phase: int = 0
    tx: int = 0
    arrivers: list = None  # the threads that arrived in the open phase

    def settle(self, mem) -> None:
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.expected
            if self.arrivers:  # release: their writes are seen by whoever waits
                mem.release(self.arrivers)
            self.arrivers = None


# ------------------------------------------------------------------------ cp.async
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


class _CpAsync:
    def __init__(self, n):
        self.committed = np.zeros(n, np.int64)
        self.completed = np.zeros(n, np.int64)
        self.issued = np.zeros(n, np.int64)
        self.wait_epoch = np.full(n, -1, np.int64)
        self.wait_spans: dict[int, tuple] = {}  # tid -> (n, span) of its last wait
        self.epoch = 0
        self.batches: list[_Batch] = []
        self.triggers: list[tuple[int, int, int, object]] = []  # (tid, mbar, seq, span)


class AsyncCore(BulkCore):
    """The asynchronous state of one CTA (``ctx.asyncs``); each part is created on first
    use, so a kernel without cp.async or bulk copies pays nothing for them. The copy
    engine's half (bulk and tensor copies, proxies) is :class:`~.async_bulk.BulkCore`."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.mbars: dict[int, _Mbar] = {}
        self._cp: _CpAsync | None = None
        self._bulk = None
        self._wgmma = None
        self._tcgen05 = None

    @property
    def cp(self) -> _CpAsync:
        if self._cp is None:
            self._cp = _CpAsync(self.ctx.n)
        return self._cp

    @property
    def wgmma(self):
        """The wgmma groups, accumulators in flight and operands being read
        (:mod:`.async_wgmma`)."""
        if self._wgmma is None:
            from .async_wgmma import WgmmaState

            self._wgmma = WgmmaState(self.ctx)
        return self._wgmma

    @property
    def wgmma_if_used(self):
        return self._wgmma

    @property
    def tcgen05(self):
        """tcgen05.mma / tcgen05.cp in flight, their commits, the tensor-memory cells and
        shared operands they own (:mod:`.async_tcgen05`)."""
        if self._tcgen05 is None:
            from .async_tcgen05 import Tcgen05State

            self._tcgen05 = Tcgen05State(self.ctx)
        return self._tcgen05

    @property
    def tcgen05_if_used(self):
        return self._tcgen05

    def barrier(self) -> None:
        """``bar.sync``: completions observed by one thread are observed by all."""
        if self._tcgen05 is not None:
            self._tcgen05.barrier()

    # ================================================================== mbarriers
    def mbar_init(self, addr: int, count: int, tid: int, span) -> None:
        ctx = self.ctx
        if addr in self.mbars:
            ctx.hazard("mbarrier.init on an mbarrier that is already initialised (several "
                       "threads initialise it, or it is re-initialised)", span,
                       "initialise each mbarrier once, from one thread (if tid == 0: ...)",
                       tid=tid, addr=addr)
        if not 1 <= count <= MAX_COUNT:
            ctx.hazard(f"mbarrier.init count {count} is outside [1, {MAX_COUNT}]", span,
                       tid=tid, addr=addr)
        self.mbars[addr] = _Mbar(count, count, span)

    def _mbar(self, addr, tid, span, what) -> _Mbar | None:
        m = self.mbars.get(int(addr))
        if m is None:
            self.ctx.hazard(f"{what} on an mbarrier that was never initialised", span,
                            "call T.ptx.mbarrier.init(mbar, count) first (then "
                            "T.cuda.cta_sync())", tid=tid, addr=addr)
        return m

    def arrive(self, addr: int, count: int, tid: int, span, tx: int = 0,
               local: bool = True) -> int:
        """One thread's arrive-on (after ``expect_tx(tx)``); returns the phase token. A
        thread of another CTA of the cluster (``local`` false) releases no writes of this
        CTA's thread ``tid``."""
        m = self._mbar(addr, tid, span, "mbarrier.arrive")
        if m is None:
            return 0
        token = m.phase
        self._add_tx(m, tx, tid, span, addr)
        m.pending -= count
        if local:
            if m.arrivers is None:
                m.arrivers = []
            m.arrivers.append(tid)
            if self._wgmma is not None:  # a release of what its pending wgmmas read?
                self._wgmma.note_release(tid, addr, span)
        if m.pending < 0:
            self.ctx.hazard(f"more arrivals than the {m.expected} the mbarrier was "
                            f"initialised with (at {m.init_span})", span,
                            "arrive once per expected participant", tid=tid, addr=addr)
            m.pending = 0
        m.settle(self.ctx.mem)
        return token

    def expect_tx(self, addr: int, nbytes: int, tid: int, span) -> None:
        m = self._mbar(addr, tid, span, "mbarrier.expect_tx")
        if m is not None:
            self._add_tx(m, nbytes, tid, span, addr)

    def _add_tx(self, m: _Mbar, nbytes: int, tid: int, span, addr: int) -> None:
        """``expect_tx(nbytes)``: the count must stay within 20 bits (PTX §9.7.13.15)."""
        m.tx += nbytes
        if abs(m.tx) > MAX_COUNT:
            self.ctx.hazard(f"mbarrier transaction count {m.tx} is outside [-{MAX_COUNT}, "
                            f"{MAX_COUNT}] after expect_tx({nbytes})", span,
                            "split the transfer over several phases (a phase counts at most "
                            f"{MAX_COUNT} bytes)", tid=tid, addr=addr)

    def complete_tx(self, addr: int, nbytes: int, tid: int, span) -> int | None:
        """``complete_tx(nbytes)`` by a copy whose bytes have landed; returns the phase the
        transaction counts towards (None when the mbarrier is not initialised)."""
        m = self._mbar(addr, tid, span, "cp.async.bulk complete_tx")
        if m is None:
            return None
        phase = m.phase
        m.tx -= nbytes
        m.settle(self.ctx.mem)
        return phase

    def phase(self, addr: int) -> int | None:
        """The current (open) phase of the mbarrier at ``addr``, None if uninitialised."""
        m = self.mbars.get(int(addr))
        return None if m is None else m.phase

    def describe(self, addr: int) -> str:
        """'phase p is still open with ...' for messages."""
        m = self.mbars.get(int(addr))
        if m is None:
            return "never initialised"
        text = (f"phase {m.phase} is still open with {m.pending} of {m.expected} arrival(s) "
                f"and {m.tx} transaction byte(s) outstanding")
        if m.tx > 0:
            text += f" (expect_tx announced {m.tx} byte(s) more than the copies delivered)"
        elif m.tx < 0:
            text += (f" (copies delivered {-m.tx} byte(s) more than expect_tx announced: the "
                     "expect_tx count does not match the copies)")
        return text

    def wait_parity(self, tids, addrs, parity, span) -> np.ndarray:
        """Which threads' ``try_wait.parity`` succeed: polled, then (for those that do not)
        after draining the cp.async copies their mbarriers track, and while other forked
        thread sets run (:mod:`.fibers`); a wait no thread set can satisfy is a deadlock.
        Successful waits observe the bulk copies of the completed phases."""
        for t, a in zip(tids.tolist(), addrs.tolist()):  # uninitialised: reported once
            self._mbar(a, t, span, "mbarrier.try_wait")
        ok = None

        def poll():
            nonlocal ok
            ok = self._done(addrs, parity)
            if not ok.all() and any(self._drain(a) for a in np.unique(addrs[~ok]).tolist()):
                ok = self._done(addrs, parity)
            return bool(ok.all())

        if not self.ctx.block(poll, lambda: self._waiting(tids, addrs, parity, ok, span)):
            self._deadlock(tids, addrs, parity, ok, span)
        if self._wgmma is not None and ok.any():
            self._wgmma.note_wait(tids[ok], addrs[ok])
        if self._bulk is not None and ok.any():
            self._acquire(tids[ok], addrs[ok])
        if self._tcgen05 is not None and ok.any():
            self._tcgen05.observe(tids[ok], addrs[ok])
        return ok

    def _done(self, addrs, parity) -> np.ndarray:
        """Which threads' waits are satisfied (uninitialised barriers: not)."""
        out = np.zeros(addrs.shape, bool)
        for k, (a, p) in enumerate(zip(addrs.tolist(), parity.tolist())):
            m = self.mbars.get(int(a))
            out[k] = m is not None and p != (m.phase & 1)
        return out

    def _waiting(self, tids, addrs, parity, ok, span) -> str:
        k = int(np.argmin(ok))
        return (f"{self.ctx.where(int(tids[k]), int(addrs[k]))} waits at line {span.line} "
                f"for parity {int(parity[k])}, {self.describe(int(addrs[k]))}"
                if span is not None else "")

    def _deadlock(self, tids, addrs, parity, ok, span) -> None:
        k = int(np.argmin(ok))
        a = int(addrs[k])
        if a not in self.mbars:
            return
        hint = ("make sure the expected number of threads arrive (mbarrier.arrive) before "
                "this wait, or fix the parity")
        if self.mbars[a].tx:
            hint = ("announce exactly the bytes the copies deliver "
                    "(mbarrier.arrive.expect_tx: a TMA box counts in full, out-of-bounds fill "
                    "included; a multicast counts in every CTA it lands in)")
        self.ctx.hazard(f"mbarrier wait can never complete (deadlock): waiting for parity "
                        f"{int(parity[k])} but {self.describe(a)}, and nothing pending can "
                        f"arrive{self.ctx.blocked_elsewhere()}", span, hint,
                        tid=int(tids[k]), addr=a)

    # ================================================================== cp.async
    def cp_issue(self, tids, dst, src_sp, src_off, size: int, src_size, span) -> None:
        """One cp.async per thread of ``tids``: ``src_size`` bytes read (0: none), the rest
        of ``size`` zero-filled, performed when its group completes."""
        st, mem = self.cp, self.ctx.mem
        if self._tcgen05 is not None:  # the copy may land at any time from now
            self._tcgen05.check_shared_write(byte_span(dst, size), tids, span)
        _count(mem.pending, dst, size, 1)
        mem.n_pending += len(dst) * size
        seq = st.issued[tids].copy()
        st.issued[tids] += 1
        st.batches.append(_Batch(tids.copy(), st.committed[tids].copy(), seq, dst, src_sp,
                                 src_off, size, src_size, st.epoch, span,
                                 np.zeros(len(tids), bool)))

    def cp_commit(self, tids) -> None:
        self.cp.committed[tids] += 1

    def cp_wait(self, tids, n: int, span) -> None:
        """``cp.async.wait_group n`` by ``tids``."""
        st = self.cp
        st.completed[tids] = np.maximum(st.completed[tids], st.committed[tids] - n)
        st.epoch += 1
        st.wait_epoch[tids] = st.epoch
        for t in tids.tolist():
            st.wait_spans[t] = (n, span)
        self._complete(lambda b: b.group < st.completed[b.tids])

    def cp_track(self, tids, addrs, span) -> None:
        """``cp.async.mbarrier.arrive.noinc``: arrive on ``addrs`` once each thread's
        earlier copies have completed."""
        st = self.cp
        for t, a in zip(tids.tolist(), addrs.tolist()):
            st.triggers.append((t, a, int(st.issued[t]), span))
        self._fire_triggers()

    def _complete(self, pred, visible_to_all=False) -> None:
        """Perform every pending copy ``pred(batch)`` selects (a per-copy bool array)."""
        st = self.cp
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
        st = self._cp
        if st is None or not st.triggers:
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
                self.arrive(addr, 1, t, span)
        st.triggers = keep

    def _drain(self, addr: int) -> bool:
        """Complete the copies an mbarrier at ``addr`` tracks; True if any was waiting."""
        st = self._cp
        waiting = [] if st is None else [(t, s) for t, a, s, _ in st.triggers if a == addr]
        for t, s in waiting:
            self._complete(lambda b, t=t, s=s: (b.tids == t) & (b.seq < s),
                           visible_to_all=True)
        return bool(waiting)

    # ================================================================== memory checks
    def check_read(self, span_b, tids, bad, own, span) -> np.ndarray:
        """Hazards of ``tids`` reading the shared bytes ``span_b`` (rows per thread) that
        are in flight; returns ``bad`` (bytes the reader may not see) without the bulk
        bytes it has observed. Called by :func:`tilewise.sim.access.check_shared_read`."""
        mem = self.ctx.mem
        if mem.n_pending and np.any(mem.pending[span_b]):
            k, j = np.argwhere(mem.pending[span_b] > 0)[0]
            self._report_pending_read(int(span_b[k, j]), int(tids[k]), span)
            return np.zeros_like(bad)
        if np.any(bad) and mem.bulk_tagged:
            return self._filter_bulk_reads(own, tids, bad, span_b, span)
        return bad

    def check_write(self, span_b, tids, span) -> None:
        """Hazards of ``tids`` writing the shared bytes ``span_b`` while something in
        flight writes or reads them."""
        mem = self.ctx.mem
        if mem.n_pending and np.any(mem.pending[span_b]):
            k, j = np.argwhere(mem.pending[span_b] > 0)[0]
            self._report_pending_write(int(span_b[k, j]), int(tids[k]), span)
        if self._bulk is not None:
            self._check_bulk_write(span_b, tids, span)
        if self._wgmma is not None:
            self._wgmma.check_shared_write(span_b, tids, span)
        if self._tcgen05 is not None:
            self._tcgen05.check_shared_write(span_b, tids, span)

    # ================================================================== exit
    def at_exit(self) -> None:
        """Hazards of a CTA that exits with work in flight."""
        if self._wgmma is not None:
            self._wgmma.at_exit()
        if self._tcgen05 is not None:
            self._tcgen05.at_exit()
        self.bulk_at_exit()

    # ================================================================== messages
    def _find_pending(self, off):
        for b in self.cp.batches:
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
        st, t = self.cp, int(b.tids[k])
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
