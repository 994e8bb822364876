"""The simulator's asynchronous core: what one CTA has in flight, and when it completes
(ptx-semantics.md §4-§6), as ``ctx.asyncs``.

**mbarriers** (§6) are the core's own, the completion every family can use. State lives out
of band, keyed by the barrier's shared address: ``phase``, ``expected`` and ``pending``
arrivals, the ``tx`` count. A phase completes (``phase += 1``, ``pending = expected``) when
``pending == 0 and tx == 0``. ``wait(parity P)`` is satisfied iff ``P != phase & 1``. A
completed phase releases what its arriving threads wrote to shared memory: it becomes
visible to every thread.

**Families.** Each stateful family of instructions keeps its per-CTA state in one *part*
(:class:`Part`), defined with the family's semantics in its package under
:mod:`tilewise.sim.ops` (``cp_async``, ``bulk``, ``wgmma``, ``tcgen05``, ``tmem``) and
registered with :func:`async_part`; ``ctx.asyncs.part(name)`` makes it on first use, so a
kernel pays nothing for the families it does not use. The core knows no family: it calls
the hooks of every part in use -- a shared-memory read or write (:meth:`Part.check_read`,
:meth:`Part.check_write`: bytes in flight), a register access (:attr:`Part.watches_registers`),
a wait that is not satisfied (:meth:`Part.drain`: complete the copies the mbarrier
tracks), a successful wait (:meth:`Part.observe`), an arrive by one of the CTA's threads
(:meth:`Part.arrived`), ``bar.sync`` (:meth:`Part.barrier`) and
the end of the CTA (:meth:`Part.at_exit`). Op modules reach another family only through
the core.

**Waits.** Threads run in program order, warp-synchronously: a wait that is not satisfied
when it executes first drains the copies its mbarrier tracks (they may complete at any time,
so this is a legal schedule); if it is still unsatisfied, the other thread sets and CTAs
run (:mod:`.scheduler`); a wait nothing can satisfy any more is reported as a deadlock,
naming the barrier and what it still waits for (arrivals, or transaction bytes that were
announced and never arrived, or arrived without being announced).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .memory import SHARED, SPACE_SHIFT
from .registry import at_cta_exit
from .scheduler import Wait

MAX_COUNT = (1 << 20) - 1  # mbarrier counts are 20-bit


def shared_addr(off: int) -> int:
    """The simulator address of shared byte ``off``."""
    return (SHARED << SPACE_SHIFT) + off


class Part:
    """One family's asynchronous state of one CTA (``ctx.asyncs.part(name)``). The core
    calls the hooks of every part in use; a family overrides those it needs. ``order``
    (class attribute, from :func:`async_part`) fixes the order the hooks run in, so the
    first hazard of several on one access is always the same one."""

    name = ""
    order = 0
    watches_registers = False  # True: :meth:`register_access` sees every register access

    def __init__(self, core):
        self.core, self.ctx = core, core.ctx

    def check_read(self, span_b, tids, bad, own, span) -> np.ndarray:
        """``tids`` read the shared bytes ``span_b`` (rows per thread); ``bad`` marks the
        bytes the reader may not see. Report a hazard of this family's work in flight, and
        return ``bad`` without the bytes this family makes visible."""
        return bad

    def check_write(self, span_b, tids, span) -> None:
        """``tids`` write the shared bytes ``span_b``: a hazard when this family's work in
        flight writes or reads them."""

    def register_access(self, tids, offs, nbytes, span, write: bool) -> None:
        """An ordinary access of registers (local memory) ``offs`` by ``tids``."""

    def drain(self, addr: int) -> bool:
        """A wait on the mbarrier at ``addr`` is not satisfied: complete what it tracks of
        this family; True if anything was waiting."""
        return False

    def observe(self, tids, addrs, cluster: bool = False) -> None:
        """Threads ``tids`` waited successfully on the mbarriers ``addrs`` (``cluster``: the
        wait acquired at cluster scope)."""

    def arrived(self, tid: int, addr: int, span) -> None:
        """Thread ``tid`` of this CTA arrived on the mbarrier at ``addr`` (it may be
        releasing what this family's work in flight still uses)."""

    def barrier(self) -> None:
        """``bar.sync``: what one thread has observed, every thread has."""

    def at_exit(self) -> None:
        """Hazards of a CTA that exits with this family's work in flight."""


#: Part name -> its class, registered by the family packages (:func:`async_part`).
PARTS: dict[str, type] = {}


def async_part(name: str, order: int = 50):
    """Register a :class:`Part` subclass as the family state ``name``."""
    def deco(cls):
        if name in PARTS:
            raise RuntimeError(f"two asynchronous parts named {name!r}")
        cls.name, cls.order = name, order
        PARTS[name] = cls
        return cls
    return deco


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


class AsyncCore:
    """The asynchronous state of one CTA (``ctx.asyncs``): the mbarriers, and one part per
    family in use (see the module docstring)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.mbars: dict[int, _Mbar] = {}
        self.parts: dict[str, Part] = {}
        self._live: list[Part] = []  # the parts in use, in hook order
        self.reg_watchers: list[Part] = []  # the parts that see register accesses

    def part(self, name: str) -> Part:
        """The state of family ``name``, made on first use."""
        p = self.parts.get(name)
        if p is None:
            p = self.parts[name] = PARTS[name](self)
            self._live = sorted(self.parts.values(), key=lambda q: q.order)
            self.reg_watchers = [q for q in self._live if q.watches_registers]
        return p

    def part_if_used(self, name: str) -> Part | None:
        return self.parts.get(name)

    # ================================================================== hooks
    def check_read(self, span_b, tids, bad, own, span) -> np.ndarray:
        """Hazards of ``tids`` reading the shared bytes ``span_b`` (rows per thread) that
        are in flight; returns ``bad`` (bytes the reader may not see) without those some
        family makes visible to it. Called by :func:`tilewise.sim.access.check_shared_read`."""
        for p in self._live:
            bad = p.check_read(span_b, tids, bad, own, span)
        return bad

    def check_write(self, span_b, tids, span) -> None:
        """Hazards of ``tids`` writing the shared bytes ``span_b`` while something in
        flight writes or reads them."""
        for p in self._live:
            p.check_write(span_b, tids, span)

    def barrier(self) -> None:
        """``bar.sync``: completions observed by one thread are observed by all."""
        for p in self._live:
            p.barrier()

    def at_exit(self) -> None:
        """Hazards of a CTA that exits with work in flight."""
        for p in self._live:
            p.at_exit()

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
            for p in self._live:
                p.arrived(tid, addr, span)
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

    def wait_parity(self, tids, addrs, parity, span, what: str = "an mbarrier wait",
                    cluster: bool = False) -> np.ndarray:
        """Which threads' ``try_wait.parity`` succeed: polled, then (for those that do not)
        after draining the copies their mbarriers track, and while other thread sets and
        CTAs run (:mod:`.scheduler`); a wait nothing can satisfy is a deadlock. Successful
        waits are observed by every family (bulk copies, tcgen05 commits); ``cluster``: the
        wait acquires at cluster scope (``scope="cluster"``)."""
        for t, a in zip(tids.tolist(), addrs.tolist()):  # uninitialised: reported once
            self._mbar(a, t, span, "mbarrier.try_wait")
        ok = None

        def poll():
            nonlocal ok
            ok = self._done(addrs, parity)
            if not ok.all() and any(p.drain(a) for a in np.unique(addrs[~ok]).tolist()
                                    for p in self._live):
                self.ctx.sched.note_progress()
                ok = self._done(addrs, parity)
            return bool(ok.all())

        def state():
            k = int(np.argmin(ok))
            return (int(tids[k]), int(addrs[k]),
                    f"parity {int(parity[k])}, {self.describe(int(addrs[k]))}")

        if not self.ctx.block(poll, Wait(self.ctx, what, span, state)):
            self._deadlock(tids, addrs, parity, ok, span)
        if ok.any():
            for p in self._live:
                p.observe(tids[ok], addrs[ok], cluster)
        return ok

    def _done(self, addrs, parity) -> np.ndarray:
        """Which threads' waits are satisfied (uninitialised barriers: not)."""
        out = np.zeros(addrs.shape, bool)
        for k, (a, p) in enumerate(zip(addrs.tolist(), parity.tolist())):
            m = self.mbars.get(int(a))
            out[k] = m is not None and p != (m.phase & 1)
        return out

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


@at_cta_exit
def _in_flight_at_exit(ctx, span) -> None:
    ctx.asyncs.at_exit()
