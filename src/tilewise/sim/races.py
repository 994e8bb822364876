"""Data races: two accesses to one byte by different threads, at least one a write, with
nothing ordering them.

**Shared memory** (one CTA; the shadows are :class:`tilewise.sim.memory.CtaMemory`'s):
``owner`` says who wrote each byte since the last ``bar.sync`` (the read check of
:mod:`.access` uses it too) and ``readers`` who read it. A write races with another
thread's write (write-after-write, also two threads of one statement) and with another
thread's read (write-after-read). ``bar.sync`` orders everything before it with everything
after it.

**Global memory** (one launch, :class:`GlobalRaces`): per byte of each global argument, the
last writer and the readers. Within a CTA, ``bar.sync`` orders its threads' accesses,
exactly as for shared memory; **nothing orders two CTAs of one launch** (tilewise has no
grid-wide barrier and no atomics), so a write to a byte that another CTA of the launch reads
or writes is a race, whichever CTA the simulator happens to run first. Checked: loads and
stores of global buffers, ``ld_st``, and the global side of ``cp.async`` (read when the
copy completes), of the bulk copies and of the TMA tensor copies (a reduction into global
memory, ``cp.reduce.async.bulk.tensor``, is performed atomically by the copy engine and is
not checked). Out of scope: ordering through cp.async waits, and other launches (each
``simulate`` call starts afresh).

**Barrier phases.** Besides ``bar.sync``, a completed mbarrier phase and a completed named
barrier (``bar.sync id, count``) order the accesses of the threads that arrived on it before
every later access (:meth:`tilewise.sim.memory.CtaMemory.release`): a producer that writes
shared or global memory and arrives, and a consumer that waited and reads it, do not race.
Like the visibility model it is an over-approximation (a thread that did not wait is not
flagged).

**Clusters.** The CTAs of one cluster run together (:mod:`.cluster`), so the race shadows
take a cluster as one unit: its threads are ``rank * block + tid``, and a barrier of any of
its CTAs (``barrier.cluster`` orders them all) starts a new epoch for the whole unit. Two
clusters, like two CTAs without clusters, are never ordered.

The shadows of a global byte: ``writer``, the last thread that wrote it (``unit * threads +
rank * block + tid``, ``unit`` in run order) and the ``epoch`` of that write (epochs count
barriers and unit starts; ``RELEASED``: ordered by a barrier phase); ``cta_readers``:
``NO_ONE``, the one unit ``c >= 0`` that read it before a barrier, or ``MANY``; the running
unit's reads since its last barrier are a :class:`~tilewise.sim.memory.Readers`. Reads
cost one append each (folded into ``cta_readers`` when a write needs them), plus the write
check once an argument has been written.
"""

from __future__ import annotations

import numpy as np

from ..ir.launch import WARP
from .checks import FULL
from .memory import GLOBAL0, MANY, NO_ONE, SPACE_SHIFT, Members, Readers, byte_span, owner_name
from .values import fit

_GID_LIMIT = (1 << 31) - 1
_SEVERAL_CTAS = -(1 << 30)
RELEASED = -1  # the epoch of a write a completed barrier phase ordered
_WARP_OWNERS = -2 - (1 << 19)  # shared owners in (_WARP_OWNERS, -1): -(2 + warp)


def overlap(starts, width: int, tids):
    """``(k, j, byte)``: rows ``k`` and ``j`` of ``width`` bytes from ``starts`` (one per
    thread of ``tids``) share ``byte``; None when no two rows overlap."""
    if len(tids) < 2:
        return None
    if np.ndim(starts) == 0:
        return 1, 0, int(starts)
    gaps = starts[1:] - starts[:-1]
    if (gaps >= width).all() or (gaps <= -width).all():  # the usual affine index: no overlap
        return None
    order = np.argsort(starts, kind="stable")
    s = starts[order]
    hit = np.flatnonzero(s[1:] < s[:-1] + width)
    if not len(hit):
        return None
    i = int(hit[0])
    return int(order[i + 1]), int(order[i]), int(s[i + 1])


# ------------------------------------------------------------------------ shared memory
def check_shared_write(ctx, starts, width, span_b, tids, span) -> None:
    """Races of ``tids`` writing ``width`` shared bytes each from ``starts`` (``span_b``:
    the bytes, a row per thread) with other threads' writes and reads since the barrier."""
    mem = ctx.mem
    pair = overlap(starts, width, tids)
    if pair is not None:
        k, j, off = pair
        _shared_race(ctx, span, int(tids[k]), off, f"thread {int(tids[j])} writes the same "
                     "bytes in the same statement", "write-write")
        return
    t = tids[:, None]
    own = mem.owner[span_b]
    bad = (own >= 0) & (own != t)
    if mem.warp_owned:
        bad |= (own < -1) & (own > _WARP_OWNERS) & (own != -(2 + t // WARP))
    if bad.any():
        k, j = np.argwhere(bad)[0]
        o = int(own[k, j])
        who = owner_name(o, ctx.n)
        _shared_race(ctx, span, int(tids[k]), int(span_b[k, j]),
                     f"{who} wrote these bytes with no bar.sync in between", "write-write")
        return
    if mem.readers.empty:
        return
    rd = mem.readers.at(span_b)
    bad = ((rd >= 0) & (rd != t)) | (rd == MANY)
    if bad.any():
        k, j = np.argwhere(bad)[0]
        r = int(rd[k, j])
        who = f"thread {r}" if r >= 0 else "other threads"
        _shared_race(ctx, span, int(tids[k]), int(span_b[k, j]),
                     f"{who} read these bytes with no bar.sync in between (the read may see "
                     "either value)", "write-after-read")


def _shared_race(ctx, span, tid, off, why, kind) -> None:
    ctx.hazard(f"{kind} race on shared memory: {why}", span,
               "add T.cuda.cta_sync() between the two accesses, or give each thread its own "
               "bytes (index with the thread id; let one thread write: if tid == 0)",
               tid=tid, addr=(1 << SPACE_SHIFT) + off)


# ------------------------------------------------------------------------ global memory
_DEFER_LIMIT = 1 << 24  # logged read bytes of one argument kept before folding them


class _Arg:
    """The race shadows of one global argument."""

    def __init__(self, size: int):
        self.size = size
        self.writer: np.ndarray | None = None  # the last writer's gid + 1 (made by a write)
        self.epoch: np.ndarray | None = None  # the epoch of that write
        self.cta_readers: np.ndarray | None = None  # NO_ONE, the one unit, or MANY; + 1
        self.readers = Readers(size)  # the running unit's reads since its barrier
        self.deferred: list[tuple[int, list]] = []  # (unit, byte spans) not folded yet
        self.n_deferred = 0
        self.written: np.ndarray | None = None  # outputs=: bytes a thread wrote already
        self.recent: list[np.ndarray] | None = []  # spans written in ``recent_epoch``
        self.recent_epoch = -1

    def fold(self) -> np.ndarray:
        """``cta_readers`` with every deferred read folded in."""
        if self.cta_readers is None:
            self.cta_readers = np.zeros(self.size, np.int32)  # NO_ONE + 1
        for lin, spans in self.deferred:
            offs = np.concatenate([x.ravel() for x in spans])
            cur = self.cta_readers[offs] - 1
            self.cta_readers[offs] = np.where((cur == NO_ONE) | (cur == lin), lin, MANY) + 1
        self.deferred, self.n_deferred = [], 0
        return self.cta_readers

    def defer(self, lin: int, spans: list) -> None:
        """Reads of unit ``lin`` that a barrier ordered: kept as the unit's."""
        if spans:
            self.deferred.append((lin, spans))
            self.n_deferred += sum(x.size for x in spans)
            if self.n_deferred > _DEFER_LIMIT:
                self.fold()

    def note_write(self, span_b: np.ndarray, epoch: int) -> None:
        if self.recent_epoch != epoch:
            self.recent, self.recent_epoch = [], epoch
        if self.recent is not None:
            self.recent.append(span_b)
            if len(self.recent) > Readers.LOG_LIMIT:
                self.recent = None  # too many: a release sweeps the whole argument

    def written_in(self, epoch: int) -> np.ndarray | None:
        """The bytes written in ``epoch`` (a superset), None when none were."""
        if self.writer is None or self.recent_epoch != epoch:
            return None
        if self.recent is None:
            return np.flatnonzero(self.epoch == epoch)
        return np.concatenate([x.ravel() for x in self.recent]) if self.recent else None


class GlobalRaces:
    """The global-memory race shadows of one launch (see the module docstring). A unit is
    a CTA, or the CTAs of one cluster (``cluster`` of them, run together); a thread is
    ``gid = unit * threads + rank * block + tid`` (``unit`` in run order); ``epoch`` counts
    barriers and unit starts, so a write of the running unit (``gid >= base``) from an
    earlier epoch is ordered before everything now, and any write of an earlier unit
    (``gid < base``) is not."""

    def __init__(self, globals_, block: int, cluster: int = 1, strict_same: bool = False,
                 checks=FULL, outputs=()):
        self.block = block
        self.strict_same = strict_same  # identical bytes of two units: an error too
        self.globals = globals_
        self.cluster = cluster
        self.threads = block * cluster  # of one unit
        self.args = [_Arg(g.size) for g in globals_]
        if checks.outputs:
            for k in outputs:  # uninitialised at launch: nothing wrote them yet
                self.args[k].written = np.zeros(globals_[k].size, bool)
        self.ctas: list[tuple] = []  # unit run index -> its first CTA (x, y, z)
        self.enabled = checks.glob
        self.lin = -1
        self.base = 0
        self.epoch = 0
        self.published: dict = {}  # (space, flag offset) -> [(arg, byte offsets)]

    def begin_cta(self, cta: tuple) -> None:
        """The next unit starts: ``cta`` is its first CTA (the one a report names)."""
        self.sync()
        self.ctas.append(cta)
        self.lin = len(self.ctas) - 1
        self.base = self.lin * self.threads
        self.enabled = self.enabled and self.base + self.threads < _GID_LIMIT

    def sync(self) -> None:
        """A barrier or the unit's exit: a new epoch; this unit's reads so far are kept as
        its unit's (folded into ``cta_readers`` when a write needs them)."""
        self.epoch += 1
        for a in self.args:
            a.defer(self.lin, a.readers.clear())

    def release(self, rank: int, tids) -> None:
        """A barrier phase completed with threads ``tids`` of CTA ``rank`` among its
        arrivals: their writes and reads so far are ordered before every later access."""
        if not self.enabled:
            return
        member = Members(self.base + rank * self.block + np.asarray(tids, np.int64),
                         self.threads, self.base)
        for a in self.args:
            offs = a.written_in(self.epoch)
            if offs is not None:
                offs = offs[(a.epoch[offs] == self.epoch) & member(a.writer[offs] - 1)]
                a.epoch[offs] = RELEASED
            if not a.readers.empty:
                a.defer(self.lin, a.readers.release(member))

    def publish(self, ctx, space: int, offs, tids) -> None:
        """``tids`` released a flag (``T.ptx.red.add`` at byte ``offs`` of ``space``, one per
        thread): every global byte each of them wrote so far is published under its flag,
        for a later :meth:`acquire` of it."""
        if not self.enabled:
            return
        gids = self._gids(ctx, np.asarray(tids, np.int64))[:, 0]
        for g, off in zip(gids.tolist(), np.asarray(offs).tolist()):
            mine = [(k, np.flatnonzero(a.writer == g + 1)) for k, a in enumerate(self.args)
                    if a.writer is not None]
            self.published.setdefault((space, off), []).extend(
                (k, x) for k, x in mine if len(x))

    def acquire(self, space: int, offs) -> None:
        """A wait saw the flags at ``offs`` of ``space`` reach their values: the writes
        published under them are ordered before this unit's accesses (their writer is
        forgotten, as if the launch had begun with them; an over-approximation: a thread
        that did not wait is not flagged either)."""
        if not self.enabled:
            return
        for off in np.unique(np.asarray(offs)).tolist():
            for k, x in self.published.get((space, off), ()):
                self.args[k].writer[x] = 0  # NO_ONE + 1

    def _gids(self, ctx, tids) -> np.ndarray:
        return (self.base + ctx.rank * self.block + tids)[:, None]

    def _unordered(self, a, span_b, gid):
        """Bytes of ``span_b`` whose last write is not ordered before this access, and the
        writers (gids)."""
        wv = a.writer[span_b] - 1
        bad = (wv != NO_ONE) & (wv != gid)
        if bad.any():
            bad &= (wv < self.base) | (a.epoch[span_b] == self.epoch)
        return bad, wv

    def read(self, ctx, space: int, offs, nbytes: int, tids, span) -> None:
        a = self.args[space - GLOBAL0]
        if a.written is not None:
            _check_init(ctx, a, space, byte_span(fit(offs, tids.shape), nbytes),
                        tids, span)
        if not self.enabled:
            return
        span_b = byte_span(fit(offs, tids.shape), nbytes)
        gid = self._gids(ctx, tids)
        if a.writer is not None:
            bad, wv = self._unordered(a, span_b, gid)
            if bad.any():
                self._report(ctx, bad, wv, span_b, tids, span, space, "reads", "wrote")
        a.readers.note(span_b, gid)

    def combine(self, ctx, space: int, offs, nbytes: int, tids, span) -> None:
        """A reduction into global memory (atomic in the copy engine: no race): it reads the
        bytes, which an ``outputs=`` array must have had written, and writes them."""
        a = self.args[space - GLOBAL0]
        if a.written is not None:
            span_b = byte_span(fit(offs, tids.shape), nbytes)
            _check_init(ctx, a, space, span_b, tids, span)
            a.written[span_b] = True

    def write(self, ctx, space: int, offs, nbytes: int, tids, span, data=None) -> None:
        """``tids`` write ``nbytes`` at ``offs`` of global space ``space``; ``data()``, when
        given, returns the bytes they write (a row per thread): a write of the very bytes an
        earlier unit wrote there is a benign race (:meth:`_same_bytes`)."""
        a = self.args[space - GLOBAL0]
        if a.written is not None:
            a.written[byte_span(fit(offs, tids.shape), nbytes)] = True
        if not self.enabled:
            return
        pair = overlap(offs, nbytes, tids)
        if pair is not None:
            i, j, off = pair
            ctx.hazard(f"write-write race on global memory: thread {int(tids[j])} writes the "
                       f"same bytes in the same statement ({len(tids)} threads of the CTA "
                       "run it)", span, _HINT_THREADS, tid=int(tids[i]),
                       addr=(space << SPACE_SHIFT) + off)
            return
        span_b = byte_span(fit(offs, tids.shape), nbytes)
        gid = self._gids(ctx, tids)
        if a.writer is None:
            a.writer = np.zeros(a.size, np.int32)  # NO_ONE + 1: untouched pages stay free
            a.epoch = np.zeros(a.size, np.int32)
        bad, wv = self._unordered(a, span_b, gid)
        if bad.any() and not self._same_bytes(ctx, a, bad, wv, span_b, data, space, tids, span):
            self._report(ctx, bad, wv, span_b, tids, span, space, "writes", "wrote")
            return
        if self._read_by_others(ctx, a, span_b, gid, tids, span, space):
            return
        a.writer[span_b] = gid + 1
        a.epoch[span_b] = self.epoch
        a.note_write(span_b, self.epoch)

    def _same_bytes(self, ctx, a, bad, wv, span_b, data, space, tids, span) -> bool:
        """A write-write race with earlier units only, every byte the same as the one there
        (TIRx's copies of one tile by several CTAs): a warning in the report, not a hazard,
        unless ``strict_races``. Races within the unit stay hazards whatever the values (a
        read-modify-write hides behind equal values)."""
        if data is None or (wv[bad] >= self.base).any():
            return False
        rows = np.broadcast_to(data(), span_b.shape)
        if (self.globals[space - GLOBAL0][span_b][bad] != rows[bad]).any():
            return False
        k, j = np.argwhere(bad)[0]
        lin = int(wv[k, j]) // self.threads
        who = ("the cluster of " if self.cluster > 1 else "") + f"CTA {self.ctas[lin]}"
        report = ctx.hazard if self.strict_same else ctx.warn
        report(f"write-write race on global memory with identical bytes: this thread writes "
               f"bytes {who} wrote in the same launch, the same values ("
               + ("strict_races: an error" if self.strict_same else
                  "benign whatever order the CTAs run in; an error with "
                  "simulate(..., strict_races=True)") + ")", span,
               "let one CTA write the shared part of the output (if T.cta_id == 0), or "
               "give each CTA its own part", tid=int(tids[k]),
               addr=(space << SPACE_SHIFT) + int(span_b[k, j]))
        return True

    def _read_by_others(self, ctx, a, span_b, gid, tids, span, space) -> bool:
        rc = a.fold() if a.deferred else a.cta_readers
        if rc is not None:
            rc = rc[span_b] - 1
            bad = (rc != NO_ONE) & (rc != self.lin)
            if bad.any():
                self._report(ctx, bad, np.where(rc == MANY, _SEVERAL_CTAS, -(3 + rc)), span_b,
                             tids, span, space, "writes", "read")
                return True
        if a.readers.empty:
            return False
        rv = a.readers.at(span_b)
        bad = ((rv >= 0) & (rv != gid)) | (rv == MANY)
        if bad.any():
            self._report(ctx, bad, np.where(rv == MANY, -1, rv), span_b, tids, span, space,
                         "writes", "read")
            return True
        return False

    def _report(self, ctx, bad, shadow, span_b, tids, span, space, doing, did) -> None:
        """``shadow`` at the bad byte: a gid (>= 0: of this unit when >= base), -1 several
        threads of this unit, ``-(3 + c)`` unit c read it, or several units did."""
        k, j = np.argwhere(bad)[0]
        v = int(shadow[k, j])
        kind = ("write-write" if did == "wrote" and doing == "writes" else
                "read-after-write" if did == "wrote" else "write-after-read")
        if v >= 0 and v < self.base:  # a thread of an earlier unit: name its CTA
            v = -(3 + v // self.threads)
        if v >= 0 or v == -1:
            who = self._thread(ctx, v - self.base) if v >= 0 else "other threads of this CTA"
            why, hint = "with no bar.sync in between", _HINT_THREADS
        else:
            lin = -v - 3
            who = (("the cluster of " if self.cluster > 1 else "") + f"CTA {self.ctas[lin]}"
                   if v != _SEVERAL_CTAS and 0 <= lin < len(self.ctas) else "another CTA")
            why = "in the same launch (the CTAs of a launch run in no fixed order)"
            hint = ("give each CTA its own part of the output (index with T.cta_id), move "
                    "the dependent part into a second kernel launch, or order the two with "
                    "a flag (T.ptx.red.add after the write, T.ptx.wait_flag before the "
                    "read, in a CTA of higher index)")
        ctx.hazard(f"{kind} race on global memory: this thread {doing} bytes {who} {did} "
                   f"{why}", span, hint, tid=int(tids[k]),
                   addr=(space << SPACE_SHIFT) + int(span_b[k, j]))


    def _thread(self, ctx, t: int) -> str:
        """'thread t of this CTA', or of another CTA of the running cluster."""
        rank, t = divmod(t, self.block)
        return (f"thread {t} of this CTA" if rank == ctx.rank else
                f"thread {t} of CTA rank {rank} of this cluster")


def _check_init(ctx, a, space, span_b, tids, span) -> None:
    """A read of bytes of an ``outputs=`` array that no thread of the launch has written."""
    bad = ~a.written[span_b]
    if bad.any():
        k, j = np.argwhere(bad)[0]
        name = ctx.params[space - GLOBAL0] if space - GLOBAL0 < len(ctx.params) else "?"
        ctx.hazard(f"reads global memory of {name!r} that nothing has written in this launch "
                   "(an output, uninitialised at launch: outputs= in simulate)", span,
                   "write the output before reading it back (or load the inputs you meant), "
                   f"or drop {name!r} from outputs= if the caller initialises it",
                   tid=int(tids[k]), addr=(space << SPACE_SHIFT) + int(span_b[k, j]))


_HINT_THREADS = ("give each thread its own element (index with the thread id), let one "
                 "thread write (if tid == 0: ...), or add T.cuda.cta_sync() between the "
                 "accesses")
