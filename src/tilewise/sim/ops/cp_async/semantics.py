"""Simulator semantics of ``cp.async`` (LDGSTS) and its groups, ptx-semantics.md §4. The
copies in flight, their groups and completion live in the async core
(:mod:`tilewise.sim.async_core`); this module checks each copy's operands (sizes,
alignment, spaces, bounds) and hands it over.
"""

from __future__ import annotations

import numpy as np

from ...access import check_pointer
from ...memory import GLOBAL0, SHARED, byte_span
from ...races import check_shared_write
from ...registry import semantics
from ...state import masked
from ...values import fit
from .state import cp_of


@semantics("ptx.cp_async")
def cp_async(ctx, site, args):
    """The copy lands at the thread's wait; the L2 prefetch size (last operand) is only a
    hint with no effect on the result (PTX ISA 9.7.9.25.3.1)."""
    dst, src, size, src_size, ignore, _prefetch = args
    tids = ctx.active()
    n = len(tids)
    ss = fit(size if src_size is None else src_size, (n,), np.int64)
    skip = fit(False if ignore is None else ignore, (n,), bool)
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
    if reads.any() and not _check_src(ctx, site, src, size, reads, src_sp, src_off):
        return
    check_shared_write(ctx, d[1], size, byte_span(d[1], size), tids, site.span)  # races
    cp_of(ctx).cp_issue(tids, d[1], src_sp, src_off, size, np.where(reads, ss, 0), site.span)
    ctx.stats.cp_async_bytes += size * n


def _check_src(ctx, site, src, size, reads, src_sp, src_off) -> bool:
    tids = ctx.active()
    src = fit(src, tids.shape, np.int64)[reads]
    spaces = tuple(GLOBAL0 + k for k in range(len(ctx.mem.globals)))
    r = masked(ctx, tids[reads], check_pointer, src, size, site.span, "cp.async source",
               spaces, size)
    if r is None:
        return False
    src_sp[reads], src_off[reads] = r
    return True


@semantics("ptx.cp_async.commit_group")
def commit_group(ctx, site, args):
    cp_of(ctx).cp_commit(ctx.active())


@semantics("ptx.cp_async.wait_group")
def wait_group(ctx, site, args):
    cp_of(ctx).cp_wait(ctx.active(), args[0], site.span)


@semantics("ptx.cp_async.wait_all")
def wait_all(ctx, site, args):
    cp_of(ctx).cp_commit(ctx.active())
    cp_of(ctx).cp_wait(ctx.active(), 0, site.span)


@semantics("ptx.cp_async.mbarrier_arrive")
def mbarrier_arrive(ctx, site, args):
    addrs = np.broadcast_to(np.asarray(args[0], np.int64), ctx.active().shape)
    cp_of(ctx).cp_track(ctx.active(), addrs, site.span)
