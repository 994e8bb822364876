"""The simulator's asynchronous core: what one CTA has in flight, and when it completes
(ptx-semantics.md §4-§6). The op modules (:mod:`tilewise.sim.ops`) check operands and
call this core through ``ctx.asyncs``; the shared-memory checks of :mod:`.access` ask it
about bytes in flight. No op module reaches into another.

**mbarriers** (§6). State lives out of band, keyed by the barrier's shared address:
``phase``, ``expected`` and ``pending`` arrivals, the ``tx`` count. A phase completes
(``phase += 1``, ``pending = expected``) when ``pending == 0 and tx == 0``.
``wait(parity P)`` is satisfied iff ``P != phase & 1``.

**cp.async** (§4). Per thread: ``committed`` groups so far and ``completed`` groups. An
issued copy belongs to group ``committed[t]`` (the group the next commit closes);
``wait_group N`` completes every group below ``committed[t] - N``; copies of the open
group are never waited for. Copies are performed lazily, at completion, reading the
source then; until then their destination bytes are *pending* (``mem.pending``) and a
read of them is a hazard. A completed copy is visible to its thread only, until the next
``bar.sync``. ``cp.async.mbarrier.arrive.noinc`` arrives when all of the thread's earlier
copies have completed (a *trigger*).

**bulk copies** (§5, non-tensor). global -> shared copies land at issue (the earliest
legal completion) and ``complete_tx`` their mbarrier; the bytes are owned by the copy
(shadow ``owner = BULK_TAG0 - k``) until a thread observes the phase it completed, by a
successful wait. shared -> global stores read their source at issue and keep it *being
read* until their bulk group is retired (``wait_group[_read]``).

**Drains.** Threads run in program order, warp-synchronously: a wait that is not
satisfied when it executes first completes the cp.async copies its mbarrier tracks (they
may complete at any time, so this is a legal schedule); if it is still unsatisfied it can
never be, and it is reported as a deadlock.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .memory import (BULK_TAG0, SHARED, SPACE_SHIFT, UNWRITTEN, VISIBLE, byte_span)
from .races import overlap

MAX_COUNT = (1 << 20) - 1  # mbarrier counts are 20-bit


def _shared_addr(off: int) -> int:
    return (SHARED << SPACE_SHIFT) + off


# ------------------------------------------------------------------------ mbarriers
@dataclass
class _Mbar:
    expected: int
    pending: int
    init_span: object
    phase: int = 0
    tx: int = 0

    def settle(self) -> None:
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.expected


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


# ------------------------------------------------------------------------ bulk copies
@dataclass
class _Copy:
    """One thread's global -> shared bulk copy."""

    tid: int
    dst: int  # shared offset
    nbytes: int
    mbar: int  # the mbarrier's address
    phase: int  # the mbarrier phase its complete_tx counted towards
    span: object
    seen: np.ndarray  # per thread: observed the phase complete (a successful wait)


@dataclass
class _Store:
    """One thread's shared -> global bulk store, until its group is retired for reading."""

    tid: int
    group: int
    src: int  # shared offset
    nbytes: int
    span: object


class _Bulk:
    def __init__(self, n_threads: int, shared_bytes: int):
        self.copies: list[_Copy] = []
        self.stores: list[_Store] = []
        self.committed = np.zeros(n_threads, np.int64)
        self.read_retired = np.zeros(n_threads, np.int64)
        self.retired = np.zeros(n_threads, np.int64)
        self.wait_spans: dict[int, tuple] = {}  # tid -> (instruction, n, span) of its last wait
        self.reading = np.zeros(shared_bytes, np.int32)
        self.n_reading = 0

    def copy_of(self, tag: int) -> _Copy:
        return self.copies[BULK_TAG0 - int(tag)]

    def why_reading(self, st: _Store) -> str:
        if st.group >= self.committed[st.tid]:
            return "was never committed (missing cp.async.bulk.commit_group)"
        last = self.wait_spans.get(st.tid)
        if last is not None:
            name, n, wspan = last
            return (f"is still in flight: {name}({n}) at {wspan} leaves up to {n} bulk "
                    f"group(s) pending and this store's group is one of them")
        return "has not been waited for (missing cp.async.bulk.wait_group_read)"


class AsyncCore:
    """The asynchronous state of one CTA (``ctx.asyncs``); each part is created on first
    use, so a kernel without cp.async or bulk copies pays nothing for them."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.mbars: dict[int, _Mbar] = {}
        self._cp: _CpAsync | None = None
        self._bulk: _Bulk | None = None

    @property
    def cp(self) -> _CpAsync:
        if self._cp is None:
            self._cp = _CpAsync(self.ctx.n)
        return self._cp

    @property
    def bulk(self) -> _Bulk:
        if self._bulk is None:
            self._bulk = _Bulk(self.ctx.n, self.ctx.mem.shared.size)
        return self._bulk

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

    def arrive(self, addr: int, count: int, tid: int, span, tx: int = 0) -> int:
        """One thread's arrive-on (after ``expect_tx(tx)``); returns the phase token."""
        m = self._mbar(addr, tid, span, "mbarrier.arrive")
        if m is None:
            return 0
        token = m.phase
        self._add_tx(m, tx, tid, span, addr)
        m.pending -= count
        if m.pending < 0:
            self.ctx.hazard(f"more arrivals than the {m.expected} the mbarrier was "
                            f"initialised with (at {m.init_span})", span,
                            "arrive once per expected participant", tid=tid, addr=addr)
            m.pending = 0
        m.settle()
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
        m.settle()
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
        return (f"phase {m.phase} is still open with {m.pending} of {m.expected} arrival(s) "
                f"and {m.tx} transaction byte(s) outstanding")

    def wait_parity(self, tids, addrs, parity, span) -> np.ndarray:
        """Which threads' ``try_wait.parity`` succeed: polled, then (for those that do not)
        after draining the cp.async copies their mbarriers track; a wait still unsatisfied
        is a deadlock. Successful waits observe the bulk copies of the completed phases."""
        ok = self._poll(tids, addrs, parity, span)
        if not ok.all() and any(self._drain(a) for a in np.unique(addrs[~ok]).tolist()):
            ok = self._poll(tids, addrs, parity, span)
        if not ok.all():
            self._deadlock(tids, addrs, parity, ok, span)
        if self._bulk is not None and ok.any():
            self._acquire(tids[ok], addrs[ok])
        return ok

    def _poll(self, tids, addrs, parity, span) -> np.ndarray:
        out = np.zeros(addrs.shape, bool)
        for k, (t, a, p) in enumerate(zip(tids.tolist(), addrs.tolist(), parity.tolist())):
            m = self._mbar(a, t, span, "mbarrier.try_wait")
            out[k] = m is not None and p != (m.phase & 1)
        return out

    def _deadlock(self, tids, addrs, parity, ok, span) -> None:
        k = int(np.argmin(ok))
        a = int(addrs[k])
        if a not in self.mbars:
            return
        self.ctx.hazard(f"mbarrier wait can never complete (deadlock): waiting for parity "
                        f"{int(parity[k])} but {self.describe(a)}, and nothing pending can "
                        f"arrive", span, "make sure the expected number of threads arrive "
                        "(mbarrier.arrive) before this wait, or fix the parity",
                        tid=int(tids[k]), addr=a)

    # ================================================================== cp.async
    def cp_issue(self, tids, dst, src_sp, src_off, size: int, src_size, span) -> None:
        """One cp.async per thread of ``tids``: ``src_size`` bytes read (0: none), the rest
        of ``size`` zero-filled, performed when its group completes."""
        st, mem = self.cp, self.ctx.mem
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
        _note_copy(self.ctx, b, sel)
        data = _gather_sources(mem, b.src_sp[sel], b.src_off[sel], b.src_size[sel], b.size)
        cols = byte_span(b.dst[sel], b.size)
        mem.shared[cols] = data
        _count(mem.pending, b.dst[sel], b.size, -1)
        mem.n_pending -= cols.size
        owner = VISIBLE if visible_to_all else b.tids[sel][:, None]
        mem.owner[cols] = np.broadcast_to(owner, cols.shape)
        b.done |= sel

    def _fire_triggers(self) -> None:
        st = self._cp
        if st is None or not st.triggers:
            return
        keep = []
        for t, addr, seq, span in st.triggers:
            if any(((b.tids == t) & (b.seq < seq) & ~b.done).any() for b in st.batches):
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

    # ================================================================== bulk copies
    def bulk_land(self, tid: int, off: int, data: np.ndarray, mbar: int, span) -> None:
        """A global -> shared bulk copy by ``tid``: ``data`` lands at shared ``off``, owned
        by the copy, then ``complete_tx(len(data))`` on ``mbar``."""
        st, mem = self.bulk, self.ctx.mem
        size = len(data)
        self.check_write(byte_span(np.array([off]), size), np.array([tid]), span)
        mem.shared[off:off + size] = data
        mem.owner[off:off + size] = BULK_TAG0 - len(st.copies)
        mem.bulk_tagged = True
        copy = _Copy(tid, off, size, mbar, -1, span, np.zeros(self.ctx.n, bool))
        st.copies.append(copy)
        phase = self.complete_tx(mbar, size, tid, span)
        copy.phase = phase if phase is not None else -1

    def bulk_store(self, tid: int, src: int, nbytes: int, span) -> None:
        """A shared -> global bulk store by ``tid``: its source is read until its bulk
        group is retired for reading."""
        st = self.bulk
        st.reading[src:src + nbytes] += 1
        st.n_reading += nbytes
        st.stores.append(_Store(tid, int(st.committed[tid]), src, nbytes, span))

    def bulk_commit(self, tids) -> None:
        self.bulk.committed[tids] += 1

    def bulk_retire(self, tids, n: int, name: str, span, reads_only: bool) -> None:
        """``cp.async.bulk.wait_group[.read] n`` by ``tids``."""
        st = self.bulk
        target = st.committed[tids] - n
        st.read_retired[tids] = np.maximum(st.read_retired[tids], target)
        if not reads_only:
            st.retired[tids] = np.maximum(st.retired[tids], target)
        for t in tids.tolist():
            st.wait_spans[t] = (name, n, span)
        keep = []
        for s in st.stores:
            if s.group < st.read_retired[s.tid]:
                st.reading[s.src:s.src + s.nbytes] -= 1
                st.n_reading -= s.nbytes
            else:
                keep.append(s)
        st.stores = keep

    def _acquire(self, tids, addrs) -> None:
        """Threads ``tids`` observed the completed phases of the mbarriers ``addrs``."""
        st, mem = self.bulk, self.ctx.mem
        for a in np.unique(addrs).tolist():
            who = tids[addrs == a]
            phase = self.phase(a)
            for k, c in enumerate(st.copies):
                if c.mbar == a and phase is not None and c.phase < phase:
                    c.seen[who] = True
                    mem.bulk_seen.add(BULK_TAG0 - k)

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

    def _filter_bulk_reads(self, own, tids, bad, span_b, span):
        tagged = bad & (own <= BULK_TAG0) & (own > UNWRITTEN)
        if not tagged.any():
            return bad
        t = np.broadcast_to(tids[:, None], own.shape)
        ok = np.zeros(own.shape, bool)
        for tag in np.unique(own[tagged]).tolist():
            sel = tagged & (own == tag)
            ok[sel] = self.bulk.copy_of(tag).seen[t[sel]]
        bad = bad & ~ok
        left = bad & tagged
        if left.any():
            k, j = np.argwhere(left)[0]
            self._report_unseen_read(int(own[k, j]), int(tids[k]), int(span_b[k, j]), span)
            bad = bad & ~left
        return bad

    def _check_bulk_write(self, span_b, tids, span) -> None:
        st, ctx = self.bulk, self.ctx
        if st.n_reading and np.any(st.reading[span_b]):
            k, j = np.argwhere(st.reading[span_b] > 0)[0]
            self._report_overwritten(int(span_b[k, j]), int(tids[k]), span)
        if not st.copies:
            return
        own = ctx.mem.owner[span_b]
        tagged = (own <= BULK_TAG0) & (own > UNWRITTEN)
        for tag in np.unique(own[tagged]).tolist():
            c = st.copy_of(tag)
            if not c.seen.any():
                k, j = np.argwhere(own == tag)[0]
                ctx.hazard(f"write to shared memory that a cp.async.bulk of thread {c.tid} "
                           f"(issued at {c.span}) is still writing: no thread has waited on "
                           f"its mbarrier ({ctx.describe_addr(c.mbar)}) yet", span,
                           "wait for the bulk copy (T.ptx.mbarrier.wait_parity) before "
                           "reusing its destination", tid=int(tids[k]),
                           addr=_shared_addr(int(span_b[k, j])))
                return

    # ================================================================== exit
    def at_exit(self) -> None:
        """Hazards of a CTA that exits with bulk work in flight."""
        st, ctx = self._bulk, self.ctx
        if st is None:
            return
        for s in st.stores:
            ctx.hazard(f"the CTA exits while a bulk store still reads shared memory: thread "
                       f"{s.tid}'s cp.async.bulk shared -> global {st.why_reading(s)}", s.span,
                       "end with T.ptx.cp_async.bulk.commit_group() and "
                       "T.ptx.cp_async.bulk.wait_group_read(0) (or wait_group(0))",
                       tid=s.tid, addr=_shared_addr(s.src))
        for c in st.copies:
            phase = self.phase(c.mbar)
            if phase is not None and phase <= c.phase:
                ctx.hazard(f"the CTA exits while a cp.async.bulk into shared memory is still "
                           f"in flight: its mbarrier ({ctx.describe_addr(c.mbar)}): "
                           f"{self.describe(c.mbar)}", c.span,
                           "announce the bytes (mbarrier.arrive_expect_tx) and wait on the "
                           "mbarrier before the CTA ends", tid=c.tid, addr=_shared_addr(c.dst))

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

    def _report_unseen_read(self, tag, reader, off, span) -> None:
        ctx, c = self.ctx, self.bulk.copy_of(tag)
        who = "its own" if c.tid == reader else f"thread {c.tid}'s"
        bar = ctx.describe_addr(c.mbar)
        if (self.phase(c.mbar) or 0) <= c.phase:
            why = f"its mbarrier ({bar}): {self.describe(c.mbar)}"
            hint = ("announce the copy's bytes on the mbarrier (mbarrier.arrive_expect_tx) "
                    "and wait on it (T.ptx.mbarrier.wait_parity(mbar, parity)) before reading")
        else:
            why = (f"its mbarrier ({bar}) completed phase {c.phase}, but this thread has not "
                   f"waited on it (missing mbarrier wait)")
            hint = ("call T.ptx.mbarrier.wait_parity(mbar, parity) in every thread that reads "
                    "the bytes (or wait in one thread, then T.cuda.cta_sync())")
        ctx.hazard(f"read before the bulk copy's mbarrier completed: the bytes are written by "
                   f"{who} cp.async.bulk (issued at {c.span}); {why}", span, hint,
                   tid=reader, addr=_shared_addr(off))

    def _report_overwritten(self, off, writer, span) -> None:
        st = self.bulk
        store = next(s for s in st.stores if s.src <= off < s.src + s.nbytes)
        self.ctx.hazard(f"shared memory overwritten while a bulk store still reads it: thread "
                        f"{store.tid}'s cp.async.bulk shared -> global (issued at "
                        f"{store.span}) {st.why_reading(store)}", span,
                        "commit the store (T.ptx.cp_async.bulk.commit_group()) and wait for "
                        "its reads (T.ptx.cp_async.bulk.wait_group_read(0), then "
                        "T.cuda.cta_sync() when other threads reuse the buffer) before "
                        "overwriting its source", tid=writer, addr=_shared_addr(off))


def _count(counts: np.ndarray, starts: np.ndarray, width: int, step: int) -> None:
    """``counts[b] += step`` for the ``width`` bytes from each of ``starts``, counting a byte
    two rows share twice (``np.add.at``, ~10x slower, only then)."""
    idx = byte_span(starts, width)
    if len(starts) > 1 and overlap(starts, width, starts) is not None:
        np.add.at(counts, idx.ravel(), step)
    else:
        counts[idx] += step


def _note_copy(ctx, b, sel) -> None:
    """A completing cp.async: its global reads (race shadows) and its shared writes, made
    through the generic proxy (so a bulk store of them needs a fence.proxy.async)."""
    reads = sel & (b.src_size > 0)
    for s in np.unique(b.src_sp[reads]).tolist():
        rows = reads & (b.src_sp == s)
        ctx.mem.races.read(ctx, s, b.src_off[rows], b.size, b.tids[rows], b.span)
    if ctx.mem.generic is not None:
        ctx.mem.generic[byte_span(b.dst[sel], b.size)] = b.tids[sel][:, None]


def _gather_sources(mem, sp, off, ss, size):
    """Rows of ``size`` bytes: ``ss`` bytes read from the source, then zero fill."""
    data = np.zeros((len(sp), size), np.uint8)
    for s in np.unique(sp[ss > 0]):
        rows = (sp == s) & (ss > 0)
        arr = mem.space_bytes(int(s))
        data[rows] = arr[np.minimum(byte_span(off[rows], size), arr.size - 1)]
    data[np.arange(size) >= ss[:, None]] = 0
    return data
