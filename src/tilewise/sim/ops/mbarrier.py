"""Simulator semantics of the ``mbarrier`` instructions, ptx-semantics.md §6. The barrier
state (phases, arrivals, transaction counts) and the waits' drains are the async core's
(:mod:`tilewise.sim.async_core`); this module checks the operands.

An mbarrier's 8 bytes count as written by the initialising thread, so other threads need
a barrier after ``init`` before they use it. ``try_wait.parity`` is one try (true iff the
phase of that parity has completed); ``try_wait`` (TIRx's spelling, also ``wait_parity``)
is the same test, blocking: in the sequential model it is satisfied at once or never (the
async core reports the deadlock).
"""

from __future__ import annotations

import numpy as np

from ..access import mark_shared_write, mbarrier_addrs
from ..memory import SPACE_SHIFT
from ..registry import semantics
from ..state import masked
from ..values import fit


@semantics("ptx.mbarrier.init")
def init(ctx, site, args):
    addrs = mbarrier_addrs(ctx, args[0], site.span, "mbarrier.init", read=False)
    if addrs is None:
        return
    counts = fit(args[1], addrs.shape, np.int64)
    for t, a, c in zip(ctx.active().tolist(), addrs.tolist(), counts.tolist()):
        ctx.asyncs.mbar_init(a, c, t, site.span)
    mark_shared_write(ctx, addrs & ((1 << SPACE_SHIFT) - 1), 8, ctx.active(), site.span)


def _arrive_all(ctx, site, mbar, tx_arg):
    addrs = mbarrier_addrs(ctx, mbar, site.span, "mbarrier.arrive")
    if addrs is None:
        return np.uint64(0)
    tx = fit(tx_arg, addrs.shape, np.int64)
    out = [ctx.asyncs.arrive(a, 1, t, site.span, int(x))
           for t, a, x in zip(ctx.active().tolist(), addrs.tolist(), tx.tolist())]
    return np.asarray(out, np.uint64)


@semantics("ptx.mbarrier.arrive")
def arrive(ctx, site, args):
    return _arrive_all(ctx, site, args[0], 0)


@semantics("ptx.mbarrier.arrive_expect_tx")
def arrive_expect_tx(ctx, site, args):
    return _arrive_all(ctx, site, args[0], args[1])


@semantics("ptx.mbarrier.arrive.expect_tx")
def arrive_expect_tx_anywhere(ctx, site, args):
    """TIRx's form: no state; ``remote`` names the CTA of the cluster whose mbarrier (at the
    same shared offset) is arrived on, ``pred`` the threads that arrive."""
    mbar, tx, remote, pred, _scope = args  # the scope orders memory: no state of its own
    if pred is None:
        _arrive_remote(ctx, site, mbar, tx, remote)
        return
    keep = np.broadcast_to(np.asarray(pred, bool), ctx.active().shape)
    if keep.any():
        pick = [v if np.ndim(v) == 0 else np.asarray(v)[keep] for v in (mbar, tx, remote)]
        masked(ctx, ctx.active()[keep], _arrive_remote, site, *pick)


def _arrive_remote(ctx, site, mbar, tx, remote):
    if remote is None:
        _arrive_all(ctx, site, mbar, tx)
        return
    addrs = mbarrier_addrs(ctx, mbar, site.span, "mbarrier.arrive.expect_tx", read=False)
    if addrs is None:
        return
    tids = ctx.active()
    txs = fit(tx, tids.shape, np.int64)
    ranks = fit(remote, tids.shape, np.int64)
    for t, a, x, r in zip(tids.tolist(), addrs.tolist(), txs.tolist(), ranks.tolist()):
        peer = ctx.peer(r, site.span, "mbarrier.arrive.expect_tx(remote=)")
        peer.asyncs.arrive(a, 1, t, site.span, x, local=peer is ctx)


@semantics("ptx.mbarrier.expect_tx")
def expect_tx(ctx, site, args):
    addrs = mbarrier_addrs(ctx, args[0], site.span, "mbarrier.expect_tx")
    if addrs is None:
        return
    tx = fit(args[1], addrs.shape, np.int64)
    for t, a, x in zip(ctx.active().tolist(), addrs.tolist(), tx.tolist()):
        ctx.asyncs.expect_tx(a, x, t, site.span)


@semantics("ptx.mbarrier.try_wait_parity")
def try_wait_parity(ctx, site, args):
    addrs = mbarrier_addrs(ctx, args[0], site.span, "mbarrier.try_wait.parity")
    if addrs is None:
        return False
    parity = np.broadcast_to(np.asarray(args[1], np.int64) & 1, addrs.shape)
    scope = args[2] if len(args) > 2 else None  # (try_wait's loop: "cta" or "cluster")
    return ctx.asyncs.wait_parity(ctx.active(), addrs, parity, site.span, f"T.{site.name}",
                                  cluster=scope == "cluster")


@semantics("ptx.mbarrier.try_wait")
def wait_parity(ctx, site, args):
    """try_wait.parity in a loop: satisfied at once, or never (a deadlock, reported by the
    async core) in the sequential execution model."""
    try_wait_parity(ctx, site, args)
