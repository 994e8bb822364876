"""Loads, stores and raw byte accesses, with the bounds, alignment and shared-memory
visibility checks (see :mod:`tilewise.sim.memory` for the shadow state)."""

from __future__ import annotations

import numpy as np

from ..ir.launch import WARP
from .memory import (LOCAL, SHARED, SPACE_SHIFT, UNWRITTEN, VISIBLE, byte_span, offset_of,
                     space_of)
from .values import np_dtype


def typed_view(ctx, place, d: np.dtype) -> np.ndarray:
    """The elements of a placed buffer as a numpy view of dtype ``d`` (2-D for local)."""
    key = (place.space, place.base, place.nbytes, d.str)
    cache = ctx.mem.views
    v = cache.get(key)
    if v is None:
        nbytes = place.nbytes if place.nbytes >= 0 else ctx.mem.space_bytes(place.space).size
        n = nbytes // d.itemsize * d.itemsize
        if place.space == LOCAL:
            v = ctx.mem.local[:, place.base:place.base + n].view(d)
        else:
            v = ctx.mem.space_bytes(place.space)[place.base:place.base + n].view(d)
        cache[key] = v
    return v


def _bounds(ctx, idx, size, span, buf, tids):
    bad = (idx < 0) | (idx >= size)
    if not np.any(bad):
        return idx
    k = int(np.argmax(np.broadcast_to(bad, tids.shape)))
    i = int(np.broadcast_to(idx, tids.shape)[k])
    ctx.hazard(f"out-of-bounds access: {buf.name}[{i}] but {buf.name!r} has {size} "
               f"element(s)", span, "check the index arithmetic and the loop bounds",
               tid=tids[k])
    return np.clip(idx, 0, size - 1)


def _static_size(buf):
    """The element count of ``buf`` when known before launch (None: the array's)."""
    return buf.size if isinstance(buf.size, int) else None


def make_load(plan, buf, span, operand: bool = False):
    """``fn(ctx, idx) -> values`` reading element ``idx`` of ``buf`` (``operand``: a
    register operand of an instruction, which orders itself with the async work on it)."""
    place, d, size = plan.of(buf), np_dtype(buf.dtype), _static_size(buf)

    def load(ctx, idx):
        tids = ctx.active()
        view = typed_view(ctx, place, d)
        idx = _bounds(ctx, np.asarray(idx, np.int64), size or view.shape[-1], span, buf, tids)
        if place.space == LOCAL:
            w = ctx.asyncs.wgmma_if_used
            if w is not None and not operand:
                w.register_access(tids, place.base + idx * d.itemsize, d.itemsize, span, False)
            return view[tids, idx]
        if place.space == SHARED:
            check_shared_read(ctx, place.base + idx * d.itemsize, d.itemsize, tids, span)
        out = view[idx]
        return out if out.ndim else d.type(out)

    return load


def make_store(plan, buf, span, operand: bool = False):
    """``fn(ctx, idx, values)`` writing element ``idx`` of ``buf`` (``operand``: an
    instruction's destination register)."""
    place, d, size = plan.of(buf), np_dtype(buf.dtype), _static_size(buf)

    def store(ctx, idx, vals):
        tids = ctx.active()
        view = typed_view(ctx, place, d)
        idx = _bounds(ctx, np.asarray(idx, np.int64), size or view.shape[-1], span, buf, tids)
        if place.space == LOCAL:
            w = ctx.asyncs.wgmma_if_used
            if w is not None and not operand:
                w.register_access(tids, place.base + idx * d.itemsize, d.itemsize, span, True)
            view[tids, idx] = vals
            return
        if place.space == SHARED:
            mark_shared_write(ctx, place.base + idx * d.itemsize, d.itemsize, tids, span)
        view[idx] = vals

    return store


def make_address(plan, buf):
    """``fn(idx) -> address`` of element ``idx`` of ``buf`` (int64)."""
    place, isz = plan.of(buf), buf.dtype.bytes
    base = (place.space << SPACE_SHIFT) + place.base
    return lambda idx: np.int64(base) + np.asarray(idx, np.int64) * isz


# ---------------------------------------------------------------- shared-memory shadows
def check_shared_read(ctx, offs, nbytes, tids, span) -> None:
    """Hazards of ``tids`` reading ``nbytes`` at shared offsets ``offs``: bytes in flight
    (asked of the async core) or written by another thread since the last barrier."""
    span_b = byte_span(np.broadcast_to(offs, tids.shape), nbytes)
    mem = ctx.mem
    own = mem.owner[span_b]
    t = tids[:, None]
    bad = (own != VISIBLE) & (own != t) & (own != -(2 + t // WARP))
    if mem.n_pending or (mem.bulk_tagged and np.any(bad)):
        bad = ctx.asyncs.check_read(span_b, tids, bad, own, span)
    if np.any(bad):
        k, j = np.argwhere(bad)[0]
        _report_invisible(ctx, int(own[k, j]), int(tids[k]), int(span_b[k, j]), span)


def _report_invisible(ctx, owner, tid, off, span):
    addr = (SHARED << SPACE_SHIFT) + off
    if owner == UNWRITTEN:
        ctx.hazard("reads shared memory that nothing has written (uninitialised)", span,
                   "write (or cp.async and wait for) the data before reading it",
                   tid=tid, addr=addr)
        return
    who = f"thread {owner}" if owner >= 0 else f"warp {-owner - 2}"
    ctx.hazard(f"reads shared memory written by {who} with no bar.sync in between "
               f"(the write is visible only to the writer until a barrier)", span,
               "add T.cuda.cta_sync() between the write (or its cp.async.wait_group) "
               "and this read", tid=tid, addr=addr)


def mark_shared_write(ctx, offs, nbytes, tids, span, owner=None) -> None:
    """Record that ``tids`` wrote the bytes (visible to each writer only until bar.sync),
    after asking the async core whether something in flight writes or reads them."""
    span_b = byte_span(np.broadcast_to(offs, tids.shape), nbytes)
    ctx.asyncs.check_write(span_b, tids, span)
    who = np.broadcast_to((tids if owner is None else owner)[:, None], span_b.shape)
    mem = ctx.mem
    mem.owner[span_b] = who
    mem.gen_writer[span_b] = np.broadcast_to(tids[:, None], span_b.shape)  # generic proxy
    mem.gen_dirty = True


def mbarrier_addrs(ctx, mbar, span, what, read: bool = True):
    """The shared addresses of the 8-byte mbarriers ``mbar`` (one per active thread), or
    None after a hazard; ``read``: the threads also read them (every use but init)."""
    r = check_pointer(ctx, mbar, 8, span, what, spaces=(SHARED,))
    if r is None:
        return None
    if read:
        check_shared_read(ctx, r[1], 8, ctx.active(), span)
    return (SHARED << SPACE_SHIFT) + r[1]


# ---------------------------------------------------------------- raw byte accesses
def check_pointer(ctx, addrs, nbytes, span, what, spaces=None, align=None):
    """Validate per-thread pointers for an ``nbytes`` access: space, alignment, bounds.
    Returns ``(space, offsets)`` arrays, or None after a (non-strict) hazard."""
    tids = ctx.active()
    addrs = np.broadcast_to(np.asarray(addrs, np.int64), tids.shape)
    sp, off = space_of(addrs), offset_of(addrs)
    lim = np.full(sp.shape, -1, np.int64)
    for s in np.unique(sp):
        if spaces is None or int(s) in spaces:
            lim[sp == s] = _limit(ctx, int(s)) if _limit(ctx, int(s)) is not None else -1
    ok = (lim >= 0) & (off % (align or nbytes) == 0) & (off + nbytes <= lim)
    if not ok.all():
        k = int(np.argmin(ok))
        _report_pointer(ctx, int(addrs[k]), nbytes, align or nbytes, spaces, span, what,
                        tids[k])
        return None
    return sp, off


def _limit(ctx, sp):
    if sp == LOCAL:
        return ctx.mem.local.shape[1]
    arr = ctx.mem.space_bytes(sp)
    return None if arr is None else arr.size


def _report_pointer(ctx, addr, nbytes, align, spaces, span, what, tid):
    sp, off = int(space_of(addr)), int(offset_of(addr))
    lim = _limit(ctx, sp)
    if lim is None or (spaces is not None and sp not in spaces):
        ctx.hazard(f"{what}: the address is not in the memory space it needs", span,
                   "pass T.address_of(<buffer of the right scope>[index])", tid=tid, addr=addr)
    elif off % align:
        ctx.hazard(f"{what}: misaligned address ({off:#x} is not a multiple of {align})",
                   span, f"align the address to {align} bytes", tid=tid, addr=addr)
    else:
        ctx.hazard(f"{what}: out of bounds ({nbytes} bytes at offset {off:#x}, the memory "
                   f"has {lim} bytes)", span, "check the index arithmetic", tid=tid, addr=addr)


def read_bytes(ctx, sp, off, nbytes, tids) -> np.ndarray:
    """``(len(tids), nbytes)`` uint8 read through validated pointers."""
    out = np.empty((len(tids), nbytes), np.uint8)
    for s in np.unique(sp):
        sel = sp == s
        cols = byte_span(off[sel], nbytes)
        if s == LOCAL:
            out[sel] = ctx.mem.local[tids[sel][:, None], cols]
        else:
            out[sel] = ctx.mem.space_bytes(int(s))[cols]
    return out


def write_bytes(ctx, sp, off, data, tids) -> None:
    """Write ``data`` rows through validated pointers (no shadow bookkeeping)."""
    nbytes = data.shape[1]
    for s in np.unique(sp):
        sel = sp == s
        cols = byte_span(off[sel], nbytes)
        if s == LOCAL:
            ctx.mem.local[tids[sel][:, None], cols] = data[sel]
        else:
            ctx.mem.space_bytes(int(s))[cols] = data[sel]
