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

from ...errors import SimulationError
from ..access import mark_shared_write, mbarrier_addrs
from ..memory import SPACE_SHIFT
from ..registry import semantics
from ..state import masked


@semantics("ptx.mbarrier.init")
def init(ctx, site, args):
    addrs = mbarrier_addrs(ctx, args[0], site.span, "mbarrier.init", read=False)
    if addrs is None:
        return
    counts = np.broadcast_to(np.asarray(args[1], np.int64), addrs.shape)
    for t, a, c in zip(ctx.active().tolist(), addrs.tolist(), counts.tolist()):
        ctx.asyncs.mbar_init(a, c, t, site.span)
    mark_shared_write(ctx, addrs & ((1 << SPACE_SHIFT) - 1), 8, ctx.active(), site.span)


def _arrive_all(ctx, site, mbar, tx_arg):
    addrs = mbarrier_addrs(ctx, mbar, site.span, "mbarrier.arrive")
    if addrs is None:
        return np.uint64(0)
    tx = np.broadcast_to(np.asarray(tx_arg, np.int64), addrs.shape)
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
    """TIRx's form: no state; ``remote`` names a CTA of the cluster, ``pred`` the threads
    that arrive. The simulator runs one CTA at a time, a cluster of one: rank 0 is this
    CTA, and its own barrier is the one arrived on; another rank is refused."""
    mbar, tx, remote, pred = args
    if remote is not None:
        _own_rank(ctx, site, remote)
    if pred is None:
        _arrive_all(ctx, site, mbar, tx)
        return
    keep = np.broadcast_to(np.asarray(pred, bool), ctx.active().shape)
    if keep.any():
        pick = [v if np.ndim(v) == 0 else np.asarray(v)[keep] for v in (mbar, tx)]
        masked(ctx, ctx.active()[keep], _arrive_all, site, *pick)


def _own_rank(ctx, site, remote) -> None:
    ranks = np.broadcast_to(np.asarray(remote, np.int64), ctx.active().shape)
    if (ranks != 0).any():
        r = int(ranks[np.argmax(ranks != 0)])
        raise SimulationError(
            f"mbarrier.arrive.expect_tx on the mbarrier of CTA rank {r} of the cluster: the "
            "simulator runs one CTA at a time, as a cluster of one (rank 0), and does not "
            "simulate multi-CTA clusters yet", site.span,
            "simulate the kernel with remote=0 (this CTA), or check the cluster version on "
            "the GPU")


@semantics("ptx.mbarrier.expect_tx")
def expect_tx(ctx, site, args):
    addrs = mbarrier_addrs(ctx, args[0], site.span, "mbarrier.expect_tx")
    if addrs is None:
        return
    tx = np.broadcast_to(np.asarray(args[1], np.int64), addrs.shape)
    for t, a, x in zip(ctx.active().tolist(), addrs.tolist(), tx.tolist()):
        ctx.asyncs.expect_tx(a, x, t, site.span)


@semantics("ptx.mbarrier.try_wait_parity")
def try_wait_parity(ctx, site, args):
    addrs = mbarrier_addrs(ctx, args[0], site.span, "mbarrier.try_wait.parity")
    if addrs is None:
        return False
    parity = np.broadcast_to(np.asarray(args[1], np.int64) & 1, addrs.shape)
    return ctx.asyncs.wait_parity(ctx.active(), addrs, parity, site.span)


@semantics("ptx.mbarrier.try_wait")
def wait_parity(ctx, site, args):
    """try_wait.parity in a loop: satisfied at once, or never (a deadlock, reported by the
    async core) in the sequential execution model."""
    try_wait_parity(ctx, site, args)
