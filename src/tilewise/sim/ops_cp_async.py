"""Simulator semantics of ``cp.async`` (LDGSTS) and its groups, ptx-semantics.md §4.

Per thread: ``committed`` groups so far and ``completed`` groups. An issued copy belongs
to group ``committed[t]`` (the group the next commit closes); ``wait_group N`` completes
every group below ``committed[t] - N``; copies of the open (uncommitted) group are never
waited for. Copies are performed lazily, at completion, reading the source then; until
then their destination bytes are *pending* and any read of them is a hazard. A completed
copy is visible to its thread only, until the next ``bar.sync``.
``cp.async.mbarrier.arrive.noinc`` arrives on the mbarrier when all of the thread's
earlier copies have completed; an unsatisfied mbarrier wait completes them (they may
complete at any time, so this is a legal schedule).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .access import check_pointer
from .compiler import masked
from .memory import GLOBAL0, SHARED, SPACE_SHIFT, VISIBLE, byte_span
from .registry import semantics


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


class _State:
    def __init__(self, n):
        self.committed = np.zeros(n, np.int64)
        self.completed = np.zeros(n, np.int64)
        self.issued = np.zeros(n, np.int64)
        self.wait_epoch = np.full(n, -1, np.int64)
        self.wait_spans: dict[int, tuple] = {}  # tid -> (n, span) of its last wait
        self.epoch = 0
        self.batches: list[_Batch] = []
        self.triggers: list[tuple[int, int, int, object]] = []  # (tid, mbar, seq, span)


def state(ctx) -> _State:
    st = ctx.ext.get("cp_async")
    if st is None:
        st = ctx.ext["cp_async"] = _State(ctx.n)
    return st


@semantics("ptx.cp_async")
def cp_async(ctx, site, args):
    """The copy lands at the thread's wait; the L2 prefetch size (last operand) is only a
    hint with no effect on the result (PTX ISA 9.7.9.25.3.1)."""
    dst, src, size, src_size, ignore, _prefetch = args
    tids = ctx.active()
    n = len(tids)
    ss = np.broadcast_to(np.asarray(size if src_size is None else src_size, np.int64), (n,))
    skip = np.broadcast_to(np.asarray(False if ignore is None else ignore, bool), (n,))
    if (ss < 0).any() or (ss > size).any():
        k = int(np.argmax((ss < 0) | (ss > size)))
        ctx.hazard(f"cp.async src-size {int(ss[k])} is outside [0, {size}]", site.span,
                   "pass 0 <= src_size <= cp_size", tid=tids[k])
        return
    d = check_pointer(ctx, dst, size, site.span, "cp.async destination", spaces=(SHARED,))
    if d is None:
        return
    reads = (ss > 0) & ~skip
    src_sp, src_off = np.zeros(n, np.int64), np.zeros(n, np.int64)
    if reads.any() and not _check_src(ctx, site, src, size, ss, reads, src_sp, src_off):
        return
    _issue(ctx, site, tids, d[1], src_sp, src_off, size, np.where(reads, ss, 0))


def _check_src(ctx, site, src, size, ss, reads, src_sp, src_off) -> bool:
    tids = ctx.active()
    src = np.broadcast_to(np.asarray(src, np.int64), tids.shape)[reads]
    spaces = tuple(GLOBAL0 + k for k in range(len(ctx.mem.globals)))
    r = masked(ctx, tids[reads], check_pointer, src, size, site.span, "cp.async source",
               spaces, size)
    if r is None:
        return False
    src_sp[reads], src_off[reads] = r
    return True


def _issue(ctx, site, tids, dst, src_sp, src_off, size, ss):
    st, mem = state(ctx), ctx.mem
    span_b = byte_span(dst, size).ravel()
    np.add.at(mem.pending, span_b, 1)
    mem.n_pending += span_b.size
    seq = st.issued[tids].copy()
    st.issued[tids] += 1
    st.batches.append(_Batch(tids.copy(), st.committed[tids].copy(), seq, dst, src_sp, src_off,
                             size, ss, st.epoch, site.span, np.zeros(len(tids), bool)))
    ctx.stats.cp_async_bytes += size * len(tids)


@semantics("ptx.cp_async.commit_group")
def commit_group(ctx, site, args):
    state(ctx).committed[ctx.active()] += 1


@semantics("ptx.cp_async.wait_group")
def wait_group(ctx, site, args):
    st, tids, n = state(ctx), ctx.active(), args[0]
    st.completed[tids] = np.maximum(st.completed[tids], st.committed[tids] - n)
    st.epoch += 1
    st.wait_epoch[tids] = st.epoch
    for t in tids.tolist():
        st.wait_spans[t] = (n, site.span)
    complete(ctx, lambda b: b.group < st.completed[b.tids])


@semantics("ptx.cp_async.wait_all")
def wait_all(ctx, site, args):
    commit_group(ctx, site, [])
    wait_group(ctx, site, [0])


@semantics("ptx.cp_async.mbarrier_arrive")
def mbarrier_arrive(ctx, site, args):
    st = state(ctx)
    addrs = np.broadcast_to(np.asarray(args[0], np.int64), ctx.active().shape)
    for t, a in zip(ctx.active().tolist(), addrs.tolist()):
        st.triggers.append((t, a, int(st.issued[t]), site.span))
    _fire_triggers(ctx)


def complete(ctx, pred, visible_to_all=False) -> None:
    """Perform every pending copy ``pred(batch)`` selects (a per-copy bool array)."""
    st = state(ctx)
    for b in st.batches:
        sel = ~b.done & pred(b)
        if sel.any():
            _perform(ctx, b, sel, visible_to_all)
    st.batches = [b for b in st.batches if not b.done.all()]
    _fire_triggers(ctx)


def _perform(ctx, b, sel, visible_to_all):
    mem = ctx.mem
    data = _gather_sources(mem, b.src_sp[sel], b.src_off[sel], b.src_size[sel], b.size)
    cols = byte_span(b.dst[sel], b.size)
    mem.shared[cols] = data
    np.subtract.at(mem.pending, cols.ravel(), 1)
    mem.n_pending -= cols.size
    owner = VISIBLE if visible_to_all else b.tids[sel][:, None]
    mem.owner[cols] = np.broadcast_to(owner, cols.shape)
    b.done |= sel


def _gather_sources(mem, sp, off, ss, size):
    """Rows of ``size`` bytes: ``ss`` bytes read from the source, then zero fill."""
    data = np.zeros((len(sp), size), np.uint8)
    for s in np.unique(sp[ss > 0]):
        rows = (sp == s) & (ss > 0)
        arr = mem.space_bytes(int(s))
        data[rows] = arr[np.minimum(byte_span(off[rows], size), arr.size - 1)]
    data[np.arange(size) >= ss[:, None]] = 0
    return data


def _fire_triggers(ctx):
    st = state(ctx)
    if not st.triggers:
        return
    from .ops_mbarrier import arrive_one

    keep = []
    for t, addr, seq, span in st.triggers:
        if any(((b.tids == t) & (b.seq < seq) & ~b.done).any() for b in st.batches):
            keep.append((t, addr, seq, span))
        else:
            arrive_one(ctx, addr, 1, t, span)
    st.triggers = keep


def drain_for(ctx, addr) -> bool:
    """Complete the copies an mbarrier at ``addr`` tracks; True if any was waiting."""
    st = state(ctx)
    waiting = [(t, s) for t, a, s, _ in st.triggers if a == addr]
    if not waiting:
        return False
    for t, s in waiting:
        complete(ctx, lambda b, t=t, s=s: (b.tids == t) & (b.seq < s), visible_to_all=True)
    return True


# ------------------------------------------------------------------ hazard messages
def _find(ctx, off):
    for b in state(ctx).batches:
        hit = ~b.done & (b.dst <= off) & (off < b.dst + b.size)
        if hit.any():
            return b, int(np.argmax(hit))
    return None, 0


def report_pending_read(ctx, off, reader, span) -> None:
    """A read of shared byte ``off`` that an uncompleted cp.async will write."""
    b, k = _find(ctx, off)
    writer = int(b.tids[k])
    who = "its own" if writer == reader else f"thread {writer}'s"
    msg, hint = _why_pending(ctx, b, k)
    ctx.hazard(f"read before the cp.async completed: the bytes are still being written by "
               f"{who} cp.async (issued at {b.span}); {msg}", span, hint, tid=reader,
               addr=(SHARED << SPACE_SHIFT) + off)


def report_pending_write(ctx, off, writer, span) -> None:
    b, k = _find(ctx, off)
    ctx.hazard(f"write to shared memory that a pending cp.async of thread {int(b.tids[k])} "
               f"(issued at {b.span}) will overwrite", span,
               "wait for the cp.async (cp.async.wait_group) before reusing the buffer",
               tid=writer, addr=(SHARED << SPACE_SHIFT) + off)


def _why_pending(ctx, b, k):
    st, t = state(ctx), int(b.tids[k])
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
