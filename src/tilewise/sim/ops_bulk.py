"""Simulator semantics of the bulk (non-tensor) TMA copies, ``cp.async.bulk``, their bulk
async-groups and ``fence.proxy.async`` (ptx-semantics.md §4-§6, PTX ISA 9.7.9.25.4).

Both directions check, per issuing thread: the size is a positive multiple of 16, both
addresses are 16-byte aligned, in the right space and in bounds.

**global -> shared** (``g2s``, ``.mbarrier::complete_tx::bytes``). The copy is performed
at issue (the earliest legal completion): the bytes land, then ``complete_tx(nbytes)`` on
the mbarrier (:func:`tilewise.sim.ops_mbarrier.complete_tx`), which may complete its phase.
The landed bytes are owned by the copy (shadow ``owner = BULK_TAG0 - k``, see
:mod:`.memory`): a thread may read them only after one of its mbarrier waits
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

**fence.proxy.async** is accepted and has no effect: the simulator does not model the
generic/async proxy split, so a missing fence between generic writes of shared memory and
a bulk store that reads them is not reported.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .access import check_pointer, check_shared_read
from .compiler import masked
from .memory import BULK_TAG0, GLOBAL0, SHARED, SPACE_SHIFT, UNWRITTEN, byte_span
from .registry import at_cta_exit, semantics

_ALIGN = 16


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


class BulkState:
    """Per CTA: the bulk copies (their index k gives the owner tag ``BULK_TAG0 - k``), the
    per-thread bulk groups and the per-byte count of bulk stores reading shared memory."""

    def __init__(self, n_threads: int, shared_bytes: int):
        self.copies: list[_Copy] = []
        self.stores: list[_Store] = []
        self.committed = np.zeros(n_threads, np.int64)
        self.read_retired = np.zeros(n_threads, np.int64)
        self.retired = np.zeros(n_threads, np.int64)
        self.wait_spans: dict[int, tuple] = {}  # tid -> (instruction, n, span) of its last wait
        self.reading = np.zeros(shared_bytes, np.int32)
        self.n_reading = 0

    # -- bulk copies: ownership of the landed bytes --------------------------------------
    def _copy_of(self, tag: int) -> _Copy:
        return self.copies[BULK_TAG0 - int(tag)]

    def acquire(self, ctx, tids, addrs) -> None:
        """Threads ``tids`` observed the completed phases of the mbarriers ``addrs``."""
        from .ops_mbarrier import phase_of

        for a in np.unique(addrs).tolist():
            who = tids[addrs == a]
            phase = phase_of(ctx, a)
            for k, c in enumerate(self.copies):
                if c.mbar == a and phase is not None and c.phase < phase:
                    c.seen[who] = True
                    ctx.mem.bulk_seen.add(BULK_TAG0 - k)

    def filter_reads(self, ctx, own, tids, bad, span_b, span):
        """The entries of ``bad`` (bytes a thread may not read) that are not bulk-copied
        bytes the reader has observed; reports a read of bulk bytes it has not."""
        tagged = bad & (own <= BULK_TAG0) & (own > UNWRITTEN)
        if not tagged.any():
            return bad
        t = np.broadcast_to(tids[:, None], own.shape)
        ok = np.zeros(own.shape, bool)
        for tag in np.unique(own[tagged]).tolist():
            sel = tagged & (own == tag)
            ok[sel] = self._copy_of(tag).seen[t[sel]]
        bad = bad & ~ok
        left = bad & tagged
        if left.any():
            k, j = np.argwhere(left)[0]
            self._report_unseen_read(ctx, int(own[k, j]), int(tids[k]), int(span_b[k, j]),
                                     span)
            bad = bad & ~left
        return bad

    def _report_unseen_read(self, ctx, tag, reader, off, span):
        from .ops_mbarrier import describe, phase_of

        c = self._copy_of(tag)
        who = "its own" if c.tid == reader else f"thread {c.tid}'s"
        bar = ctx.describe_addr(c.mbar)
        if (phase_of(ctx, c.mbar) or 0) <= c.phase:
            why = f"its mbarrier ({bar}): {describe(ctx, c.mbar)}"
            hint = ("announce the copy's bytes on the mbarrier (mbarrier.arrive_expect_tx) "
                    "and wait on it (T.ptx.mbarrier.wait_parity(mbar, parity)) before reading")
        else:
            why = (f"its mbarrier ({bar}) completed phase {c.phase}, but this thread has not "
                   f"waited on it (missing mbarrier wait)")
            hint = ("call T.ptx.mbarrier.wait_parity(mbar, parity) in every thread that reads "
                    "the bytes (or wait in one thread, then T.cuda.cta_sync())")
        ctx.hazard(f"read before the bulk copy's mbarrier completed: the bytes are written by "
                   f"{who} cp.async.bulk (issued at {c.span}); {why}", span, hint,
                   tid=reader, addr=(SHARED << SPACE_SHIFT) + off)

    # -- writes of shared memory ----------------------------------------------------------
    def check_write(self, ctx, span_b, tids, span) -> None:
        """Hazards of ``tids`` writing the shared bytes ``span_b`` (rows per thread)."""
        if self.n_reading and np.any(self.reading[span_b]):
            k, j = np.argwhere(self.reading[span_b] > 0)[0]
            self._report_overwritten(ctx, int(span_b[k, j]), int(tids[k]), span)
        if not self.copies:
            return
        own = ctx.mem.owner[span_b]
        tagged = (own <= BULK_TAG0) & (own > UNWRITTEN)
        if not tagged.any():
            return
        for tag in np.unique(own[tagged]).tolist():
            c = self._copy_of(tag)
            if not c.seen.any():
                k, j = np.argwhere(own == tag)[0]
                ctx.hazard(f"write to shared memory that a cp.async.bulk of thread {c.tid} "
                           f"(issued at {c.span}) is still writing: no thread has waited on "
                           f"its mbarrier ({ctx.describe_addr(c.mbar)}) yet", span,
                           "wait for the bulk copy (T.ptx.mbarrier.wait_parity) before "
                           "reusing its destination", tid=int(tids[k]),
                           addr=(SHARED << SPACE_SHIFT) + int(span_b[k, j]))
                return

    def _report_overwritten(self, ctx, off, writer, span) -> None:
        st = next(s for s in self.stores if s.src <= off < s.src + s.nbytes)
        why = self._why_reading(st)
        ctx.hazard(f"shared memory overwritten while a bulk store still reads it: thread "
                   f"{st.tid}'s cp.async.bulk shared -> global (issued at {st.span}) {why}",
                   span, "commit the store (T.ptx.cp_async.bulk.commit_group()) and wait for "
                   "its reads (T.ptx.cp_async.bulk.wait_group_read(0), then T.cuda.cta_sync() "
                   "when other threads reuse the buffer) before overwriting its source",
                   tid=writer, addr=(SHARED << SPACE_SHIFT) + off)

    def _why_reading(self, st: _Store) -> str:
        if st.group >= self.committed[st.tid]:
            return "was never committed (missing cp.async.bulk.commit_group)"
        last = self.wait_spans.get(st.tid)
        if last is not None:
            name, n, wspan = last
            return (f"is still in flight: {name}({n}) at {wspan} leaves up to {n} bulk "
                    f"group(s) pending and this store's group is one of them")
        return "has not been waited for (missing cp.async.bulk.wait_group_read)"

    # -- bulk groups ----------------------------------------------------------------------
    def retire(self, ctx, tids, n, name, span, reads_only) -> None:
        target = self.committed[tids] - n
        self.read_retired[tids] = np.maximum(self.read_retired[tids], target)
        if not reads_only:
            self.retired[tids] = np.maximum(self.retired[tids], target)
        for t in tids.tolist():
            self.wait_spans[t] = (name, n, span)
        keep = []
        for s in self.stores:
            if s.group < self.read_retired[s.tid]:
                self.reading[s.src:s.src + s.nbytes] -= 1
                self.n_reading -= s.nbytes
            else:
                keep.append(s)
        self.stores = keep


def state(ctx) -> BulkState:
    st = ctx.ext.get("bulk")
    if st is None:
        st = ctx.ext["bulk"] = BulkState(ctx.n, ctx.mem.shared.size)
    return st


# ---------------------------------------------------------------------- operand checks
def _sizes(ctx, site, nbytes, what):
    tids = ctx.active()
    n = np.broadcast_to(np.asarray(nbytes, np.int64), tids.shape)
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
    addrs = np.broadcast_to(np.asarray(addrs, np.int64), tids.shape)
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


# ---------------------------------------------------------------------- instructions
@semantics("ptx.cp_async.bulk.g2s")
def g2s(ctx, site, args):
    from .ops_cp_async import report_pending_write
    from .ops_mbarrier import _addrs, _visible, complete_tx

    dst, src, nbytes, mbar = args
    sizes = _sizes(ctx, site, nbytes, "cp.async.bulk (global -> shared)")
    if sizes is None:
        return
    d = _pointers(ctx, site, dst, sizes, "cp.async.bulk destination", (SHARED,))
    s = d and _pointers(ctx, site, src, sizes, "cp.async.bulk source", _globals(ctx))
    bars = s and _addrs(ctx, site, mbar, "cp.async.bulk mbarrier")
    if bars is None or s is None:
        return
    _visible(ctx, bars, site)
    st, mem, tids = state(ctx), ctx.mem, ctx.active()
    for k, t in enumerate(tids.tolist()):
        size, off = int(sizes[k]), int(d[1][k])
        cols = byte_span(np.array([off]), size)
        if mem.n_pending and np.any(mem.pending[cols]):
            report_pending_write(ctx, off + int(np.argmax(mem.pending[cols[0]] > 0)), t,
                                 site.span)
        st.check_write(ctx, cols, tids[k:k + 1], site.span)
        data = mem.space_bytes(int(s[0][k]))[int(s[1][k]):int(s[1][k]) + size]
        mem.shared[off:off + size] = data
        tag = BULK_TAG0 - len(st.copies)
        st.copies.append(_Copy(t, off, size, int(bars[k]), -1, site.span,
                               np.zeros(ctx.n, bool)))
        mem.owner[off:off + size] = tag
        mem.bulk_tagged = True
        phase = complete_tx(ctx, int(bars[k]), size, t, site.span)
        st.copies[-1].phase = phase if phase is not None else -1


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
    st, mem, tids = state(ctx), ctx.mem, ctx.active()
    for size in np.unique(sizes).tolist():
        sel = sizes == size
        check_shared_read(ctx, s[1][sel], size, tids[sel], site.span)
    for k, t in enumerate(tids.tolist()):
        size, off, goff = int(sizes[k]), int(s[1][k]), int(d[1][k])
        mem.space_bytes(int(d[0][k]))[goff:goff + size] = mem.shared[off:off + size]
        st.reading[off:off + size] += 1
        st.n_reading += size
        st.stores.append(_Store(t, int(st.committed[t]), off, size, site.span))


@semantics("ptx.cp_async.bulk.commit_group")
def commit_group(ctx, site, args):
    state(ctx).committed[ctx.active()] += 1


@semantics("ptx.cp_async.bulk.wait_group")
def wait_group(ctx, site, args):
    state(ctx).retire(ctx, ctx.active(), args[0], "cp.async.bulk.wait_group", site.span,
                      reads_only=False)


@semantics("ptx.cp_async.bulk.wait_group_read")
def wait_group_read(ctx, site, args):
    state(ctx).retire(ctx, ctx.active(), args[0], "cp.async.bulk.wait_group.read", site.span,
                      reads_only=True)


@semantics("ptx.fence.proxy_async")
def fence_proxy_async(ctx, site, args):
    """No effect: the simulator has one proxy (see the module docstring)."""


@at_cta_exit
def _exit_check(ctx, span) -> None:
    st = ctx.ext.get("bulk")
    if st is None:
        return
    from .ops_mbarrier import describe, phase_of

    for s in st.stores:
        ctx.hazard(f"the CTA exits while a bulk store still reads shared memory: thread "
                   f"{s.tid}'s cp.async.bulk shared -> global {st._why_reading(s)}", s.span,
                   "end with T.ptx.cp_async.bulk.commit_group() and "
                   "T.ptx.cp_async.bulk.wait_group_read(0) (or wait_group(0))",
                   tid=s.tid, addr=(SHARED << SPACE_SHIFT) + s.src)
    for c in st.copies:
        phase = phase_of(ctx, c.mbar)
        if phase is not None and phase <= c.phase:
            ctx.hazard(f"the CTA exits while a cp.async.bulk into shared memory is still in "
                       f"flight: its mbarrier ({ctx.describe_addr(c.mbar)}): "
                       f"{describe(ctx, c.mbar)}", c.span,
                       "announce the bytes (mbarrier.arrive_expect_tx) and wait on the "
                       "mbarrier before the CTA ends", tid=c.tid,
                       addr=(SHARED << SPACE_SHIFT) + c.dst)
