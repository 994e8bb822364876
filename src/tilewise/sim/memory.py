"""The simulator's memories, byte exact, and the shadow state behind the hazard checks.

Addresses are int64 values in one virtual space: ``space << 40 | offset``. Space 1 is
the CTA's shared window, space 2 a thread's local memory, space ``3 + k`` the k-th
global parameter (its base is therefore aligned like a ``cudaMalloc`` allocation).

* global: the user's numpy arrays, seen as one ``uint8`` view each (written in place);
* shared: one ``uint8`` array per CTA; buffers are where the pipeline's
  :class:`~tilewise.passes.shared_plan.SharedPlan` puts them (the static ones from byte 0,
  the dynamic window from the first 1024-aligned byte after them: every dynamic buffer at
  the GPU's offset and alignment);
* local: an ``(n_threads, bytes)`` ``uint8`` array per CTA (one row per thread).

Shared memory has two shadow arrays, one entry per byte:

* ``pending``: how many issued-but-not-completed cp.async ops will write the byte;
* ``owner``: who may read the byte: ``VISIBLE`` (every thread: written before the last
  ``bar.sync``), ``UNWRITTEN`` (nobody wrote it yet), ``t >= 0`` (written by thread t
  since the last barrier: visible to t only, or to all once an mbarrier phase t arrived
  on completes), ``-(2 + w)`` (written collectively by
  warp w, e.g. the address ``tcgen05.alloc`` stores) or ``BULK_TAG0 - k`` (landed by
  bulk copy k, ``cp.async.bulk`` global -> shared: visible to the threads that have
  observed its mbarrier phase complete, see :mod:`tilewise.sim.async_core`);
* ``readers`` (a :class:`Readers`): who read the byte since the last ``bar.sync`` (the
  write-after-read check of :mod:`tilewise.sim.races`);
* ``gen_writer``: the thread whose generic-proxy write of the byte (a store, a completed
  cp.async) no ``fence.proxy.async`` of that thread has yet ordered before the async proxy
  (``-1``: none; ``gen_dirty`` says whether any is set). A store by the copy engine (async
  proxy) reading such a byte is missing the fence (:mod:`tilewise.sim.async_bulk`). None in
  a kernel that uses no async-proxy instruction (the table's ``traits.proxy``).

Local memory has ``local_set``, one flag per byte and thread: written (a read of an unset
byte reads an uninitialised register). Global memory's race shadows are the launch's
(:class:`tilewise.sim.races.GlobalRaces`, ``mem.races``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..passes.shared_plan import plan_shared

SPACE_SHIFT = 40
OFFSET_MASK = (1 << SPACE_SHIFT) - 1
SHARED, LOCAL, GLOBAL0 = 1, 2, 3
VISIBLE, UNWRITTEN = -1, -(1 << 30)
#: Shared owners from here up are threads of another CTA of the cluster (``st_cluster``):
#: ``REMOTE_OWNER0 + rank * block + tid``.
REMOTE_OWNER0 = 1 << 24
BULK_TAG0 = -(1 << 20)  # owners in (UNWRITTEN, BULK_TAG0]: bytes landed by a bulk copy
_ALIGN = 16


def owner_name(owner: int, block: int) -> str:
    """A shared byte's owner for messages: a thread, a warp (a warp-collective write) or a
    thread of another CTA of the cluster (``block`` threads per CTA)."""
    if owner >= REMOTE_OWNER0:
        rank, tid = divmod(owner - REMOTE_OWNER0, block)
        return f"thread {tid} of CTA rank {rank} (st_cluster)"
    return f"thread {owner}" if owner >= 0 else f"warp {-owner - 2}"


def space_of(addr):
    return np.right_shift(addr, SPACE_SHIFT)


def offset_of(addr):
    return np.bitwise_and(addr, OFFSET_MASK)


def space_name(space: int, params=()) -> str:
    if space == SHARED:
        return "shared"
    if space == LOCAL:
        return "local"
    k = space - GLOBAL0
    if 0 <= k < len(params):
        return f"global ({params[k]})"
    return "an invalid address"


@dataclass
class Placement:
    """Where a buffer's bytes live: ``space`` and byte ``base`` within it."""

    space: int
    base: int
    nbytes: int


def _uses_async_proxy(func) -> bool:
    """Whether ``func`` has an instruction that accesses shared memory through the async
    proxy (its row's ``traits.proxy``): a kernel with none cannot miss a fence.proxy.async,
    and skips the ``gen_writer`` shadow."""
    from ..ptx.table import uses
    from ..ptx.traits import ASYNC

    return uses(func.body, lambda row: row.traits.proxy == ASYNC)


class StoragePlan:
    """Compile-time placement of every buffer of a flat PrimFunc: shared ones as ``shared``
    (the pipeline's SharedPlan; laid out here when None) says, local ones here;
    ``async_proxy``: whether the kernel uses the async proxy (an instruction whose
    ``traits.proxy`` is ``"async"``) and the proxy checks are on; ``checks``: the check
    level (:mod:`.checks`)."""

    def __init__(self, func, shared=None, checks=None):
        from ..ptx.table import uses
        from .checks import FULL

        self.checks = checks or FULL
        self.places: dict[int, Placement] = {}
        self.async_proxy = self.checks.proxy and _uses_async_proxy(func)
        # register writes are tracked for wgmma from the first instruction, not from the
        # first wgmma op (a write before any wgmma.fence needs one too)
        self.wgmma = self.checks.regs and uses(func.body, lambda row: row.name.startswith(
            "ptx.wgmma."))
        self.param_names = [b.name for b in func.param_buffers()]
        self.shared = plan_shared(func) if shared is None else shared
        self.shared_bytes = self.shared.simulated_bytes
        self.local_bytes = 0
        self.shared_names: list[tuple[int, int, str, int]] = []  # base, bytes, name, elem
        for k, b in enumerate(func.param_buffers()):  # nbytes -1: the array's, at launch
            nbytes = -1 if b.symbolic else b.size * b.dtype.bytes
            self.places[id(b)] = Placement(GLOBAL0 + k, 0, nbytes)

    def declare(self, buf) -> Placement:
        """Place a DeclBuffer's buffer (a view shares its root's placement)."""
        if id(buf) in self.places:
            return self.places[id(buf)]
        if buf.view_of is not None:
            root = self.declare(buf.view_of)
            p = Placement(root.space, root.base, root.nbytes)
        else:
            p = self._allocate(buf)
        self.places[id(buf)] = p
        return p

    def _allocate(self, buf) -> Placement:
        n = buf.size * buf.dtype.bytes
        if self.shared.slot(buf) is not None:
            base = self.shared.address(buf)
            self.shared_names.append((base, n, buf.name, buf.dtype.bytes))
            return Placement(SHARED, base, n)
        base = -(-self.local_bytes // max(_ALIGN, buf.align)) * max(_ALIGN, buf.align)
        self.local_bytes = base + n
        return Placement(LOCAL, base, n)

    def of(self, buf) -> Placement:
        return self.places[id(buf)]

    def placements(self, space: int) -> list[Placement]:
        """Every allocation placed in ``space`` (views share their root's)."""
        return [p for p in self.places.values() if p.space == space]

    def shared_element(self, off: int) -> str | None:
        """``name[i]``: the shared allocation element holding byte ``off`` (for messages)."""
        for base, n, name, eb in self.shared_names:
            if base <= off < base + n:
                return f"{name}[{(off - base) // eb}]"
        return None


class CtaMemory:
    """The shared and local memories of one CTA, plus the shared-memory shadows."""

    def __init__(self, plan: StoragePlan, n_threads: int, globals_: list[np.ndarray]):
        self.plan = plan
        self.globals = globals_
        self.shared = np.full(max(plan.shared_bytes, 1), 0xA5, np.uint8)
        self.local = np.full((n_threads, max(plan.local_bytes, 1)), 0xA5, np.uint8)
        self.local_set = np.zeros(self.local.shape, bool)
        self.local_ready: set = set()  # local allocations every thread has wholly written
        self.local_tries: dict = {}  # how often that was asked of each allocation
        self.pending = np.zeros(self.shared.size, np.int32)
        self.owner = np.full(self.shared.size, UNWRITTEN, np.int32)
        self.readers = Readers(self.shared.size)
        self.warp_owned = False  # some owner is a warp (a warp-collective write)
        self.races = None  # the launch's GlobalRaces (sim/runner.py sets it)
        self.rank = 0  # this CTA's rank in its cluster (the race shadows' thread ids)
        self.n_pending = 0  # sum of pending: skip the per-byte check when zero
        self.views: dict = {}  # typed views of placed buffers, built on first use
        self.bulk_tagged = False  # some owner is a bulk-copy tag (see barrier)
        self.remote_owned = False  # some owner is another CTA's thread (st_cluster)
        self.bulk_seen: set[int] = set()  # tags of bulk copies a thread observed complete
        # the thread whose generic-proxy write of each byte is not fenced yet (-1: none)
        self.gen_writer = (np.full(self.shared.size, -1, np.int32) if plan.async_proxy
                           else None)
        self.gen_dirty = False  # some gen_writer is set (skip the checks otherwise)

    def reset(self) -> None:
        """Fresh contents for the next CTA (poisoned, nothing written, nothing pending)."""
        self.shared.fill(0xA5)
        self.local.fill(0xA5)
        self.local_set.fill(False)
        self.local_ready.clear()
        self.local_tries.clear()
        self.pending.fill(0)
        self.owner.fill(UNWRITTEN)
        self.readers.clear()
        self.warp_owned = False
        self.n_pending = 0
        self.bulk_tagged = False
        self.remote_owned = False
        self.bulk_seen.clear()
        if self.gen_dirty:
            self.gen_writer.fill(-1)
            self.gen_dirty = False

    def space_bytes(self, space: int) -> np.ndarray | None:
        """The flat byte array of a non-local space (None for an unknown space)."""
        if space == SHARED:
            return self.shared
        k = space - GLOBAL0
        if 0 <= k < len(self.globals):
            return self.globals[k]
        return None

    def release(self, tids) -> None:
        """An mbarrier phase or a named barrier completed with ``tids`` among its arrivals:
        what they wrote (before arriving; the model does not tell before from after) becomes
        visible to every thread, and their accesses, shared and global, are ordered before
        every later access (the race checks of :mod:`tilewise.sim.races`). Reads that
        several threads made of one shared byte are forgotten too. An over-approximation: a
        thread that never waited is not flagged."""
        if not len(tids):
            return
        if self.races is not None:
            self.races.release(self.rank, tids)
        if not self.plan.checks.shared:
            return
        member = Members(np.asarray(tids, np.int64), self.local.shape[0])
        own = self.owner
        mine = own >= 0
        mine[mine] = member(own[mine])
        own[mine] = VISIBLE
        self.readers.release(member)

    def release_cluster(self, rel: np.ndarray) -> None:
        """A cluster-barrier phase completed on which the threads ``rel`` (a CTA rank x
        thread mask) arrived with release semantics and the others ``.relaxed``: what the
        releasing threads of this CTA wrote here, and what releasing threads of other CTAs
        stored here (``st_cluster``), becomes visible to every thread (:meth:`release`)."""
        self.release(np.flatnonzero(rel[self.rank]))
        if not (self.remote_owned and self.plan.checks.shared):
            return
        own = self.owner
        at = np.flatnonzero(own >= REMOTE_OWNER0)
        if len(at):  # remote owners are REMOTE_OWNER0 + rank * threads + tid
            at = at[rel.ravel()[own[at].astype(np.int64) - REMOTE_OWNER0]]
            own[at] = VISIBLE

    def barrier(self, cluster: bool = False) -> None:
        """``bar.sync``: every completed write becomes visible to every thread. Bytes of a
        bulk copy do only once some thread has observed its mbarrier phase complete (a
        barrier orders nothing with an asynchronous write that no thread has waited for).
        Bytes another CTA stored here (``st_cluster``) only at a cluster barrier
        (``cluster=True``): this CTA's ``bar.sync`` does not order the other CTA's store."""
        self.races.sync()
        if not self.plan.checks.shared:
            return
        written = self.owner != UNWRITTEN
        if self.remote_owned and not cluster:
            written &= self.owner < REMOTE_OWNER0
        elif cluster:
            self.remote_owned = False
        if self.bulk_tagged:
            unseen = written & (self.owner <= BULK_TAG0)
            if unseen.any() and self.bulk_seen:
                unseen &= ~np.isin(self.owner, np.fromiter(self.bulk_seen, np.int64))
            written &= ~unseen
        self.owner[written] = VISIBLE
        self.readers.clear()


NO_ONE, MANY = -1, -2  # Readers: nobody read the byte / several threads did


class Readers:
    """Which thread read each byte of one memory since the running CTA's last barrier.

    Reads are only logged (``note``: an append); the per-byte shadow (``NO_ONE``, one
    thread ``t >= 0``, or ``MANY``, stored plus one so that a fresh shadow is zeros: pages
    the kernel never touches are never written) is built from the log when a write first
    needs it
    (:meth:`shadow`) or the log grows long, and from then on until the barrier each read
    updates it. So a kernel that reads and writes different bytes between barriers pays one
    append per read, and a long run of reads with no barrier stays bounded in memory."""

    LOG_LIMIT = 256  # logged reads (and, live, remembered spans) before folding / sweeping

    def __init__(self, size: int):
        self.size = size
        self.log: list[tuple[np.ndarray, np.ndarray]] = []
        self.now: np.ndarray | None = None
        self.live = False  # ``now`` holds this epoch's reads (the log is folded in)
        self.touched: list[np.ndarray] | None = []  # None: too many, sweep ``now``

    def note(self, span_b: np.ndarray, who: np.ndarray) -> None:
        """Thread ``who[k]`` (a column) read the bytes of row ``k`` of ``span_b``."""
        if self.live:
            _fold(self.now, span_b, who)
            self._remember(span_b)
        else:
            self.log.append((span_b, who))
            if len(self.log) > self.LOG_LIMIT:
                self.shadow()

    def _remember(self, span_b: np.ndarray) -> None:
        if self.touched is not None:
            self.touched.append(span_b)
            if len(self.touched) > self.LOG_LIMIT:
                self.touched = None

    @property
    def empty(self) -> bool:
        return not self.live and not self.log

    def shadow(self) -> np.ndarray:
        """The per-byte readers of this epoch (the log folded in)."""
        if self.now is None:
            self.now = np.zeros(self.size, np.int32)  # NO_ONE + 1
        if not self.live:
            for span_b, who in self.log:
                _fold(self.now, span_b, who)
                self._remember(span_b)
            self.log.clear()
            self.live = True
        return self.now

    def at(self, span_b: np.ndarray) -> np.ndarray:
        """The readers of the bytes ``span_b``: NO_ONE, a thread, or MANY."""
        return self.shadow()[span_b] - 1

    def release(self, member) -> list[np.ndarray]:
        """Forget the reads of the threads ``member`` accepts (a barrier phase they arrived
        on completed) and, once folded, the bytes several threads read; returns the byte
        spans forgotten. A folded shadow is swept once and the reads left go back to the
        log, so a run of releases with few reads in between stays cheap."""
        if not self.live:
            keep, gone = [], []
            for span_b, who in self.log:
                m = member(who[:, 0])
                if not m.any():
                    keep.append((span_b, who))
                    continue
                gone.append(span_b[m])
                if not m.all():
                    keep.append((span_b[~m], who[~m]))
            self.log = keep
            return gone
        read = np.flatnonzero(self.now)  # one sweep, then back to a short log
        r = self.now[read] - 1
        self.now[read] = 0
        gone = (r == MANY) | member(r)
        kept = read[~gone]
        self.log = [(kept[:, None], r[~gone][:, None])] if len(kept) else []
        self.touched = []
        self.live = False
        return [read[gone]]

    def clear(self) -> list[np.ndarray]:
        """A barrier: forget this epoch's readers; returns the byte spans they read."""
        if self.touched is None:  # many reads: find and reset them in one sweep
            read = np.flatnonzero(self.now)
            self.now[read] = 0
            spans = [read]
        else:
            spans = [s for s, _ in self.log] + self.touched
            if self.live:
                for s in self.touched:
                    self.now[s] = 0
        self.log.clear()
        self.touched = []
        self.live = False
        return spans


class Members:
    """A membership test of thread ids (``ids >= lo``, ``< lo + n``) against ``tids``: one
    table lookup per id, no sort."""

    def __init__(self, tids: np.ndarray, n: int, lo: int = 0):
        self.lo = lo
        self.table = np.zeros(n + 1, bool)  # the last entry: out of range
        self.table[np.asarray(tids, np.int64) - lo] = True

    def __call__(self, ids) -> np.ndarray:
        k = np.asarray(ids, np.int64) - self.lo
        n = self.table.size - 1
        return self.table[np.where((k >= 0) & (k < n), k, n)]


def _fold(shadow: np.ndarray, span_b: np.ndarray, who: np.ndarray) -> None:
    """Record reads by ``who`` in an encoded shadow (value + 1: 0 is NO_ONE)."""
    cur = shadow[span_b]
    w = who + 1
    new = np.where((cur == 0) | (cur == w), w, MANY + 1).astype(np.int32)
    shadow[span_b] = new
    lost = shadow[span_b] != new  # two rows of one access read one byte
    if lost.any():
        shadow[span_b[lost]] = MANY + 1


_ARANGE = {n: np.arange(n, dtype=np.int64) for n in (1, 2, 4, 8, 16)}


def byte_span(offsets: np.ndarray, nbytes: int) -> np.ndarray:
    """The byte offsets covered by ``nbytes``-wide accesses at ``offsets`` (rows)."""
    step = _ARANGE.get(nbytes)
    if step is None:
        step = np.arange(nbytes, dtype=np.int64)
        if nbytes <= 1 << 16 and len(_ARANGE) < 256:
            _ARANGE[nbytes] = step
    return np.asarray(offsets, np.int64)[..., None] + step
