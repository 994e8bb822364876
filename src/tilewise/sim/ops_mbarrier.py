"""Simulator semantics of ``mbarrier`` objects, ptx-semantics.md §6.

State lives out of band, keyed by the barrier's shared address: ``phase``, ``expected``
arrivals, ``pending`` arrivals and the ``tx`` count; the phase completes (``phase += 1``,
``pending = expected``) when ``pending == 0 and tx == 0``; a bulk copy's
``complete_tx(n)`` (:func:`complete_tx`, from ``sim/ops_bulk.py``) subtracts n from ``tx``.
``try_wait.parity P`` is true iff ``P != phase & 1``; ``wait_parity`` is the same test,
blocking (a wait that is not satisfied is the deadlock below, exactly as for try_wait). A
satisfied wait also makes the bytes of the bulk copies that completed the barrier's phases
visible to the waiting thread. An mbarrier's 8 bytes count as written by the initialising thread,
so other threads need a barrier after ``init`` before they use it.

Deadlock: threads run in program order, warp-synchronously. A wait that is not satisfied
when it executes, after every asynchronous arrival it tracks (``cp.async.mbarrier.arrive``)
has been completed, can never be satisfied in that order, and is reported (strict mode)
instead of spinning.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .access import check_pointer, check_shared_read, mark_shared_write
from .memory import SHARED, SPACE_SHIFT
from .registry import semantics

_MAX_COUNT = (1 << 20) - 1


@dataclass
class _Mbar:
    expected: int
    pending: int
    init_span: object
    phase: int = 0
    tx: int = 0


def _table(ctx) -> dict[int, _Mbar]:
    return ctx.ext.setdefault("mbarrier", {})


def _addrs(ctx, site, mbar, what):
    r = check_pointer(ctx, mbar, 8, site.span, what, spaces=(SHARED,))
    if r is None:
        return None
    return (SHARED << SPACE_SHIFT) + r[1]


def _lookup(ctx, addr, tid, span, what):
    m = _table(ctx).get(int(addr))
    if m is None:
        ctx.hazard(f"{what} on an mbarrier that was never initialised", span,
                   "call T.ptx.mbarrier.init(mbar, count) first (then T.cuda.cta_sync())",
                   tid=tid, addr=addr)
    return m


@semantics("ptx.mbarrier.init")
def init(ctx, site, args):
    addrs = _addrs(ctx, site, args[0], "mbarrier.init")
    if addrs is None:
        return
    counts = np.broadcast_to(np.asarray(args[1], np.int64), addrs.shape)
    table = _table(ctx)
    for t, a, c in zip(ctx.active().tolist(), addrs.tolist(), counts.tolist()):
        if a in table:
            ctx.hazard("mbarrier.init on an mbarrier that is already initialised (several "
                       "threads initialise it, or it is re-initialised)", site.span,
                       "initialise each mbarrier once, from one thread (if tid == 0: ...)",
                       tid=t, addr=a)
        if not 1 <= c <= _MAX_COUNT:
            ctx.hazard(f"mbarrier.init count {c} is outside [1, {_MAX_COUNT}]", site.span,
                       tid=t, addr=a)
        table[a] = _Mbar(c, c, site.span)
    mark_shared_write(ctx, addrs & ((1 << SPACE_SHIFT) - 1), 8, ctx.active(), site.span)


def arrive_one(ctx, addr, count, tid, span, tx=0):
    """One thread's arrive-on (after ``expect_tx(tx)``); returns the phase token."""
    m = _lookup(ctx, addr, tid, span, "mbarrier.arrive")
    if m is None:
        return 0
    token = m.phase
    m.tx += tx
    m.pending -= count
    if m.pending < 0:
        ctx.hazard(f"more arrivals than the {m.expected} the mbarrier was initialised with "
                   f"(at {m.init_span})", span, "arrive once per expected participant",
                   tid=tid, addr=addr)
        m.pending = 0
    _check_complete(m)
    return token


def complete_tx(ctx, addr, nbytes, tid, span):
    """``complete_tx(nbytes)`` by a bulk copy whose bytes have landed; returns the phase the
    transaction counts towards (None when the mbarrier is not initialised)."""
    m = _lookup(ctx, addr, tid, span, "cp.async.bulk complete_tx")
    if m is None:
        return None
    phase = m.phase
    m.tx -= nbytes
    _check_complete(m)
    return phase


def phase_of(ctx, addr) -> int | None:
    """The current (open) phase of the mbarrier at ``addr``, None if uninitialised."""
    m = _table(ctx).get(int(addr))
    return None if m is None else m.phase


def describe(ctx, addr) -> str:
    """'phase p: k of n arrival(s) and t transaction byte(s) outstanding' for messages."""
    m = _table(ctx).get(int(addr))
    if m is None:
        return "never initialised"
    return (f"phase {m.phase} is still open with {m.pending} of {m.expected} arrival(s) and "
            f"{m.tx} transaction byte(s) outstanding")


def _check_complete(m):
    if m.pending == 0 and m.tx == 0:
        m.phase += 1
        m.pending = m.expected


def _visible(ctx, addrs, site):
    check_shared_read(ctx, addrs & ((1 << SPACE_SHIFT) - 1), 8, ctx.active(), site.span)


def _arrive_all(ctx, site, args, tx_arg):
    addrs = _addrs(ctx, site, args[0], "mbarrier.arrive")
    if addrs is None:
        return np.uint64(0)
    _visible(ctx, addrs, site)
    tx = np.broadcast_to(np.asarray(tx_arg, np.int64), addrs.shape)
    out = [arrive_one(ctx, a, 1, t, site.span, int(x))
           for t, a, x in zip(ctx.active().tolist(), addrs.tolist(), tx.tolist())]
    return np.asarray(out, np.uint64)


@semantics("ptx.mbarrier.arrive")
def arrive(ctx, site, args):
    return _arrive_all(ctx, site, args, 0)


@semantics("ptx.mbarrier.arrive_expect_tx")
def arrive_expect_tx(ctx, site, args):
    return _arrive_all(ctx, site, args, args[1])


@semantics("ptx.mbarrier.expect_tx")
def expect_tx(ctx, site, args):
    addrs = _addrs(ctx, site, args[0], "mbarrier.expect_tx")
    if addrs is None:
        return
    _visible(ctx, addrs, site)
    tx = np.broadcast_to(np.asarray(args[1], np.int64), addrs.shape)
    for t, a, x in zip(ctx.active().tolist(), addrs.tolist(), tx.tolist()):
        m = _lookup(ctx, a, t, site.span, "mbarrier.expect_tx")
        if m is not None:
            m.tx += x


@semantics("ptx.mbarrier.try_wait_parity")
def try_wait_parity(ctx, site, args):
    addrs = _addrs(ctx, site, args[0], "mbarrier.try_wait.parity")
    if addrs is None:
        return False
    _visible(ctx, addrs, site)
    parity = np.broadcast_to(np.asarray(args[1], np.int64) & 1, addrs.shape)
    ok = _poll(ctx, addrs, parity, site)
    if not ok.all():
        from .ops_cp_async import drain_for

        if any(drain_for(ctx, a) for a in np.unique(addrs[~ok]).tolist()):
            ok = _poll(ctx, addrs, parity, site)
    if not ok.all():
        _deadlock(ctx, site, addrs, parity, ok)
    bulk = ctx.ext.get("bulk")
    if bulk is not None and ok.any():
        bulk.acquire(ctx, ctx.active()[ok], addrs[ok])
    return ok


@semantics("ptx.mbarrier.wait_parity")
def wait_parity(ctx, site, args):
    """try_wait.parity in a loop: satisfied at once, or never (a deadlock, reported by
    :func:`try_wait_parity`) in the sequential execution model."""
    try_wait_parity(ctx, site, args)


def _poll(ctx, addrs, parity, site):
    out = np.zeros(addrs.shape, bool)
    for k, (t, a, p) in enumerate(zip(ctx.active().tolist(), addrs.tolist(), parity.tolist())):
        m = _lookup(ctx, a, t, site.span, "mbarrier.try_wait")
        out[k] = m is not None and p != (m.phase & 1)
    return out


def _deadlock(ctx, site, addrs, parity, ok):
    k = int(np.argmin(ok))
    a = int(addrs[k])
    m = _table(ctx).get(a)
    if m is None:
        return
    ctx.hazard(f"mbarrier wait can never complete (deadlock): waiting for parity "
               f"{int(parity[k])} but {describe(ctx, a)}, and nothing pending can arrive",
               site.span,
               "make sure the expected number of threads arrive (mbarrier.arrive) before "
               "this wait, or fix the parity", tid=int(ctx.active()[k]), addr=a)
