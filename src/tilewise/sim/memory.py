"""The simulator's memories, byte exact, and the shadow state behind the hazard checks.

Addresses are int64 values in one virtual space: ``space << 40 | offset``. Space 1 is
the CTA's shared window, space 2 a thread's local memory, space ``3 + k`` the k-th
global parameter (its base is therefore aligned like a ``cudaMalloc`` allocation).

* global: the user's numpy arrays, seen as one ``uint8`` view each (written in place);
* shared: one ``uint8`` array per CTA; buffers are placed at compile time, 16-aligned;
* local: an ``(n_threads, bytes)`` ``uint8`` array per CTA (one row per thread).

Shared memory has two shadow arrays, one entry per byte:

* ``pending``: how many issued-but-not-completed cp.async ops will write the byte;
* ``owner``: who may read the byte: ``VISIBLE`` (every thread: written before the last
  ``bar.sync``), ``UNWRITTEN`` (nobody wrote it yet), ``t >= 0`` (written by thread t
  since the last barrier: visible to t only, or to all once an mbarrier phase t arrived
  on completes), ``-(2 + w)`` (written collectively by
  warp w, e.g. the address ``tcgen05.alloc`` stores) or ``BULK_TAG0 - k`` (landed by
  bulk copy k, ``cp.async.bulk`` global -> shared: visible to the threads that have
  observed its mbarrier phase complete, see :mod:`tilewise.sim.async_core`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SPACE_SHIFT = 40
OFFSET_MASK = (1 << SPACE_SHIFT) - 1
SHARED, LOCAL, GLOBAL0 = 1, 2, 3
VISIBLE, UNWRITTEN = -1, -(1 << 30)
BULK_TAG0 = -(1 << 20)  # owners in (UNWRITTEN, BULK_TAG0]: bytes landed by a bulk copy
_ALIGN = 16


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


class StoragePlan:
    """Compile-time placement of every buffer of a flat PrimFunc."""

    def __init__(self, func):
        self.places: dict[int, Placement] = {}
        self.param_names = [b.name for b in func.param_buffers()]
        self.shared_bytes = 0
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
        align = max(_ALIGN, buf.align)
        if buf.scope in ("shared", "shared.dyn"):
            base = -(-self.shared_bytes // align) * align
            self.shared_bytes = base + n
            self.shared_names.append((base, n, buf.name, buf.dtype.bytes))
            return Placement(SHARED, base, n)
        base = -(-self.local_bytes // align) * align
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
        self.pending = np.zeros(self.shared.size, np.int32)
        self.owner = np.full(self.shared.size, UNWRITTEN, np.int32)
        self.n_pending = 0  # sum of pending: skip the per-byte check when zero
        self.views: dict = {}  # typed views of placed buffers, built on first use
        self.bulk_tagged = False  # some owner is a bulk-copy tag (see barrier)
        self.bulk_seen: set[int] = set()  # tags of bulk copies a thread observed complete
        # the thread whose generic-proxy write of each byte is not fenced yet (-1: none)
        self.gen_writer = np.full(self.shared.size, -1, np.int32)
        self.gen_dirty = False  # some gen_writer is set (skip the checks otherwise)

    def reset(self) -> None:
        """Fresh contents for the next CTA (poisoned, nothing written, nothing pending)."""
        self.shared.fill(0xA5)
        self.local.fill(0xA5)
        self.pending.fill(0)
        self.owner.fill(UNWRITTEN)
        self.n_pending = 0
        self.bulk_tagged = False
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
        """An mbarrier phase completed with ``tids`` among its arrivals: what they wrote
        (before arriving; the model does not tell before from after) becomes visible to
        every thread. An over-approximation: a reader that never waited is not flagged."""
        if len(tids):
            mine = np.isin(self.owner, np.asarray(tids, np.int32))
            self.owner[mine] = VISIBLE

    def barrier(self) -> None:
        """``bar.sync``: every completed write becomes visible to every thread. Bytes of a
        bulk copy do only once some thread has observed its mbarrier phase complete (a
        barrier orders nothing with an asynchronous write that no thread has waited for)."""
        written = self.owner != UNWRITTEN
        if self.bulk_tagged:
            unseen = written & (self.owner <= BULK_TAG0)
            if unseen.any() and self.bulk_seen:
                unseen &= ~np.isin(self.owner, np.fromiter(self.bulk_seen, np.int64))
            written &= ~unseen
        self.owner[written] = VISIBLE


def byte_span(offsets: np.ndarray, nbytes: int) -> np.ndarray:
    """The byte offsets covered by ``nbytes``-wide accesses at ``offsets`` (rows)."""
    return np.asarray(offsets, np.int64)[..., None] + np.arange(nbytes, dtype=np.int64)
