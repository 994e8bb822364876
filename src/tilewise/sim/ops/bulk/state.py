"""The copy engine's part of a CTA's asynchronous state (``ctx.asyncs.part("bulk")``):
bulk and tensor (TMA) copies, and the generic/async proxy split of its shared memory
(ptx-semantics.md §5-§6; PTX ISA §9.7.9.25, §9.7.12.15 "fence.proxy.async").

**Landing.** A global -> shared copy (``cp.async.bulk``, ``cp.async.bulk.tensor``, a
multicast into this CTA, a ``shared::cluster`` copy from another CTA of the cluster) lands
at issue, the earliest legal completion: its bytes are written at the shared offsets the
engine computes (contiguous for a bulk copy; box-linear and swizzled by the absolute
address for a tensor copy), owned by the copy (shadow ``owner = BULK_TAG0 - k``), then
``complete_tx(nbytes)`` on this CTA's mbarrier. A thread may read them after one of its
mbarrier waits observed the phase the copy completed; after that, or after a ``bar.sync``
that follows such a wait, they are ordinary visible bytes.

**Stores.** A shared -> global (or shared -> cluster) copy reads its source at issue; the
source stays *being read* until the issuing thread's bulk group is retired
(``wait_group[_read]``): writing it meanwhile is a race.

**Proxies.** The copy engine reads shared memory through the *async proxy*. Generic-proxy
writes (stores, vector moves, completed cp.async) are visible to it only after the writing
thread's ``fence.proxy.async``: a store whose source bytes some thread wrote with no fence
since is reported. ``gen_writer`` holds, per shared byte, the thread whose unfenced
generic write it is (-1: none; the shadow exists only in kernels that use the async proxy,
the table's ``traits.proxy``); a thread's fence clears its bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...access import check_proxy_fence
from ...async_core import Part, async_part, shared_addr
from ...memory import BULK_TAG0, UNWRITTEN, Members
from ...registry import mechanism


@dataclass
class _Copy:
    """One copy landed in this CTA's shared memory."""

    tid: int  # the issuing thread (of CTA ``source`` when the copy came from another CTA)
    dst: int  # lowest shared offset written
    nbytes: int
    mbar: int  # the mbarrier's address (in this CTA)
    phase: int  # the mbarrier phase its complete_tx counted towards
    span: object
    seen: np.ndarray  # per thread: observed the phase complete (a successful wait)
    what: str = "cp.async.bulk"  # the instruction, for messages
    source: str = ""  # " of CTA rank r" for a copy issued by another CTA
    # a store released at cluster scope by another CTA (st.async): observed only by a wait
    # that acquires at cluster scope; ``cta_seen``: threads whose CTA-scope wait saw it
    cluster_release: bool = False
    cta_seen: np.ndarray | None = None

    @property
    def issuer(self) -> str:
        return f"thread {self.tid}{self.source}"


@dataclass
class _Store:
    """One thread's store by the copy engine, until its group is retired for reading."""

    tid: int
    group: int
    offs: np.ndarray  # shared byte offsets read
    span: object
    what: str = "cp.async.bulk shared -> global"


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


@async_part("bulk", order=1)
class BulkState(Part):
    """The copy-engine state of one CTA (the mbarriers and ``complete_tx`` are the
    core's)."""

    def __init__(self, core):
        super().__init__(core)
        self.bulk = _Bulk(self.ctx.n, self.ctx.mem.shared.size)

    # ================================================================== landing, stores
    @mechanism("async_proxy")
    def bulk_land(self, tid: int, offs: np.ndarray, data: np.ndarray, mbar: int, span,
                  what: str = "cp.async.bulk", source: str = "") -> None:
        """A copy by ``tid`` (of another CTA when ``source`` says so): ``data[i]`` lands at
        shared byte ``offs[i]``, owned by the copy, then ``complete_tx(len(data))`` on
        ``mbar``."""
        self._land(tid, offs, data, mbar, span, what, source)

    def store_land(self, tid: int, offs: np.ndarray, data: np.ndarray, mbar: int, span,
                   what: str, source: str = "") -> None:
        """A store that completes on an mbarrier (``st.async``, generic proxy): its bytes
        land, are owned and are observed as a copy's (:meth:`bulk_land`), except that a
        store from another CTA is released at cluster scope (PTX ISA §9.7.9.12): only a
        wait that acquires at cluster scope observes it."""
        self._land(tid, offs, data, mbar, span, what, source, cluster_release=bool(source))

    def _land(self, tid, offs, data, mbar, span, what, source, cluster_release=False) -> None:
        st, mem = self.bulk, self.ctx.mem
        offs = np.asarray(offs, np.int64)
        if self.ctx.checks.shared:
            self.core.check_write(offs[None, :], np.array([tid if not source else -1]), span)
            mem.owner[offs] = BULK_TAG0 - len(st.copies)
        mem.shared[offs] = data
        if mem.gen_dirty:  # the engine's write is no generic one
            mem.gen_writer[offs] = -1
        mem.bulk_tagged = True
        copy = _Copy(tid, int(offs.min()), len(data), mbar, -1, span,
                     np.zeros(self.ctx.n, bool), what, source, cluster_release,
                     np.zeros(self.ctx.n, bool) if cluster_release else None)
        st.copies.append(copy)
        phase = self.core.complete_tx(mbar, len(data), tid, span)
        copy.phase = phase if phase is not None else -1

    @mechanism("async_proxy")
    def bulk_store(self, tid: int, offs: np.ndarray, span,
                   what: str = "cp.async.bulk shared -> global") -> None:
        """A store by the copy engine issued by ``tid``, reading shared bytes ``offs``: they
        are being read until its bulk group is retired for reading."""
        st = self.bulk
        offs = np.asarray(offs, np.int64)
        st.reading[offs] += 1  # one store's offsets are distinct (a permutation at most)
        st.n_reading += offs.size
        st.stores.append(_Store(tid, int(st.committed[tid]), offs, span, what))

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
                st.reading[s.offs] -= 1
                st.n_reading -= s.offs.size
            else:
                keep.append(s)
        st.stores = keep

    def observe(self, tids, addrs, cluster: bool = False) -> None:
        """Threads ``tids`` observed the completed phases of the mbarriers ``addrs``
        (``cluster``: acquiring at cluster scope, which another CTA's st.async needs)."""
        st, mem = self.bulk, self.ctx.mem
        for a in np.unique(addrs).tolist():
            who = tids[addrs == a]
            phase = self.core.phase(a)
            for k, c in enumerate(st.copies):
                if c.mbar == a and phase is not None and c.phase < phase:
                    if c.cluster_release and not cluster:
                        c.cta_seen[who] = True
                        continue
                    c.seen[who] = True
                    mem.bulk_seen.add(BULK_TAG0 - k)

    # ================================================================== proxies
    def proxy_fence(self, tids) -> None:
        """``fence.proxy.async`` by ``tids``: their generic writes become visible to the
        copy engine."""
        mem = self.ctx.mem
        if not mem.gen_dirty:
            return
        if len(tids) == self.ctx.n:  # the whole CTA fences: nothing is left unfenced
            mem.gen_writer.fill(-1)
            mem.gen_dirty = False
            return
        gw = mem.gen_writer
        mine = gw >= 0
        mine[mine] = Members(tids, self.ctx.n)(gw[mine])
        gw[mine] = -1

    @mechanism("async_proxy")
    def check_async_read(self, offs: np.ndarray, tid: int, what: str, span) -> None:
        """The copy engine (a ``what`` issued by ``tid``) reads shared bytes ``offs``: every
        generic write to them must have been fenced by its writer."""
        check_proxy_fence(self.ctx, offs, tid, what, span,
                          "the copy engine's store (TMA or bulk)")

    # ================================================================== memory checks
    def check_read(self, span_b, tids, bad, own, span):
        """Bytes a bulk copy landed are visible to the threads that observed its phase."""
        if not np.any(bad) or not self.ctx.mem.bulk_tagged:
            return bad
        tagged = bad & (own <= BULK_TAG0) & (own > UNWRITTEN)
        if not tagged.any():
            return bad
        t = np.broadcast_to(tids[:, None], own.shape)
        ok = np.zeros(own.shape, bool)
        for tag in _distinct(own[tagged]):
            sel = tagged & (own == tag)
            ok[sel] = self.bulk.copy_of(tag).seen[t[sel]]
        bad = bad & ~ok
        left = bad & tagged
        if left.any():
            k, j = np.argwhere(left)[0]
            self._report_unseen_read(int(own[k, j]), int(tids[k]), int(span_b[k, j]), span)
            bad = bad & ~left
        return bad

    def check_write(self, span_b, tids, span) -> None:
        st, ctx = self.bulk, self.ctx
        if st.n_reading and st.reading[span_b].any():
            k, j = np.argwhere(st.reading[span_b] > 0)[0]
            self._report_overwritten(int(span_b[k, j]), int(tids[k]), span)
        if not st.copies:
            return
        own = ctx.mem.owner[span_b]
        tagged = (own <= BULK_TAG0) & (own > UNWRITTEN)
        for tag in _distinct(own[tagged]):
            c = st.copy_of(tag)
            if not c.seen.any():
                k, j = np.argwhere(own == tag)[0]
                ctx.hazard(f"write to shared memory that a {c.what} of {c.issuer} (issued at "
                           f"{c.span}) is still writing: no thread has waited on its "
                           f"mbarrier ({ctx.describe_addr(c.mbar)}) yet", span,
                           "wait for the copy (T.ptx.mbarrier.wait_parity) before reusing "
                           "its destination", tid=int(tids[k]) if tids[k] >= 0 else None,
                           addr=shared_addr(int(span_b[k, j])))
                return

    # ================================================================== exit
    def at_exit(self) -> None:
        """Hazards of a CTA that exits with copy-engine work in flight."""
        st, ctx = self.bulk, self.ctx
        for s in st.stores:
            ctx.hazard(f"the CTA exits while a bulk store still reads shared memory: thread "
                       f"{s.tid}'s {s.what} {st.why_reading(s)}", s.span,
                       "end with T.ptx.cp_async.bulk.commit_group() and "
                       "T.ptx.cp_async.bulk.wait_group_read(0) (or wait_group(0))",
                       tid=s.tid, addr=shared_addr(int(s.offs.min())))
        for c in st.copies:
            phase = self.core.phase(c.mbar)
            if phase is not None and phase <= c.phase:
                ctx.hazard(f"the CTA exits while a copy into its shared memory is still in "
                           f"flight: its mbarrier ({ctx.describe_addr(c.mbar)}): "
                           f"{self.core.describe(c.mbar)}", c.span,
                           "announce the bytes (mbarrier.arrive_expect_tx) and wait on the "
                           "mbarrier before the CTA ends", tid=c.tid if not c.source else None,
                           addr=shared_addr(c.dst))

    # ================================================================== messages
    def _report_unseen_read(self, tag, reader, off, span) -> None:
        ctx, c = self.ctx, self.bulk.copy_of(tag)
        who = "its own" if c.tid == reader and not c.source else f"{c.issuer}'s"
        who = f"{who} {c.what}"
        bar = ctx.describe_addr(c.mbar)
        if c.cta_seen is not None and c.cta_seen[reader] and not c.seen[reader]:
            why = (f"this thread waited on its mbarrier ({bar}) with a CTA-scope acquire, "
                   "but a store from another CTA is released at cluster scope")
            hint = ("wait with T.ptx.mbarrier.wait_parity(mbar, parity, scope=\"cluster\") "
                    "(tilewise.dsmem.exchange_wait does)")
        elif (self.core.phase(c.mbar) or 0) <= c.phase:
            why = f"its mbarrier ({bar}): {self.core.describe(c.mbar)}"
            hint = ("announce the copy's bytes on the mbarrier (mbarrier.arrive_expect_tx) "
                    "and wait on it (T.ptx.mbarrier.wait_parity(mbar, parity)) before reading")
        else:
            why = (f"its mbarrier ({bar}) completed phase {c.phase}, but this thread has not "
                   f"waited on it (missing mbarrier wait)")
            hint = ("call T.ptx.mbarrier.wait_parity(mbar, parity) in every thread that reads "
                    "the bytes (or wait in one thread, then T.cuda.cta_sync())")
        kind = "bulk copy" if "bulk" in c.what else c.what.split()[0]
        ctx.hazard(f"read before the {kind}'s mbarrier completed: the bytes are written by "
                   f"{who} (issued at {c.span}); {why}", span, hint,
                   tid=reader, addr=shared_addr(off))

    def _report_overwritten(self, off, writer, span) -> None:
        st = self.bulk
        store = next(s for s in st.stores if (s.offs == off).any())
        self.ctx.hazard(f"shared memory overwritten while a bulk store still reads it: thread "
                        f"{store.tid}'s {store.what} (issued at {store.span}) "
                        f"{st.why_reading(store)}", span,
                        "commit the store (T.ptx.cp_async.bulk.commit_group()) and wait for "
                        "its reads (T.ptx.cp_async.bulk.wait_group_read(0), then "
                        "T.cuda.cta_sync() when other threads reuse the buffer) before "
                        "overwriting its source", tid=writer if writer >= 0 else None,
                        addr=shared_addr(off))


def _distinct(tags: np.ndarray) -> list:
    """The distinct values of ``tags`` (usually none or one: no sort then)."""
    if not len(tags):
        return []
    t0 = tags.flat[0]
    return [int(t0)] if (tags == t0).all() else np.unique(tags).tolist()


def bulk_of(ctx) -> BulkState:
    """The CTA's bulk state (made on first use)."""
    return ctx.asyncs.part("bulk")
