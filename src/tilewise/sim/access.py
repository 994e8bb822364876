"""Loads, stores and raw byte accesses, with the bounds, alignment and shared-memory
visibility checks (see :mod:`tilewise.sim.memory` for the shadow state)."""

from __future__ import annotations

import numpy as np

from ..ir.launch import WARP
from .memory import (LOCAL, SHARED, SPACE_SHIFT, UNWRITTEN, VISIBLE, byte_span, offset_of,
                     space_of)
from .races import check_shared_write
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


def _bounds(ctx, idx, size, span, buf, tids, place, isz):
    bad = (idx < 0) | (idx >= size)
    if not np.any(bad):
        return idx
    k = int(np.argmax(np.broadcast_to(bad, tids.shape)))
    i = int(np.broadcast_to(idx, tids.shape)[k])
    ctx.hazard(f"out-of-bounds access: {buf.name}[{i}] but {buf.name!r} has {size} "
               f"element(s)", span, "check the index arithmetic and the loop bounds",
               tid=tids[k], addr=(place.space << SPACE_SHIFT) + place.base + i * isz)
    return np.clip(idx, 0, size - 1)


def _static_size(buf):
    """The element count of ``buf`` when known before launch (None: the array's)."""
    return buf.size if isinstance(buf.size, int) else None


def make_load(plan, buf, span, operand: bool = False, init_check: bool = True):
    """``fn(ctx, idx) -> values`` reading element ``idx`` of ``buf`` (``operand``: a
    register operand of an instruction, which orders itself with the async work on it;
    ``init_check``: a register read is checked for an uninitialised value; off for
    read-write operands whose instruction decides whether it reads them, see
    :func:`check_local_read`)."""
    place, d, size = plan.of(buf), np_dtype(buf.dtype), _static_size(buf)

    def load(ctx, idx):
        tids = ctx.active()
        view = typed_view(ctx, place, d)
        idx = _bounds(ctx, np.asarray(idx, np.int64), size or view.shape[-1], span, buf, tids,
                      place, d.itemsize)
        offs = place.base + idx * d.itemsize
        if place.space == LOCAL:
            if not operand:
                for w in ctx.asyncs.reg_watchers:  # async work owning registers (wgmma)
                    w.register_access(tids, offs, d.itemsize, span, False)
            if init_check:
                check_local_read(ctx, offs, d.itemsize, tids, span, buf.name)
            return view[tids, idx]
        if place.space == SHARED:
            check_shared_read(ctx, offs, d.itemsize, tids, span)
        else:
            ctx.mem.races.read(ctx, place.space, offs, d.itemsize, tids, span)
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
        idx = _bounds(ctx, np.asarray(idx, np.int64), size or view.shape[-1], span, buf, tids,
                      place, d.itemsize)
        offs = place.base + idx * d.itemsize
        if place.space == LOCAL:
            if not operand:
                for w in ctx.asyncs.reg_watchers:
                    w.register_access(tids, offs, d.itemsize, span, True)
            view[tids, idx] = vals
            mark_local_write(ctx, offs, d.itemsize, tids)
            return
        if place.space == SHARED:
            mark_shared_write(ctx, offs, d.itemsize, tids, span)
        else:
            ctx.mem.races.write(ctx, place.space, offs, d.itemsize, tids, span)
        if np.ndim(idx) == 0 and np.ndim(vals):  # threads racing on one element (reported
            vals = vals[-1]                      # above): one of them wins
        view[idx] = vals

    return store


def make_address(plan, buf):
    """``fn(idx) -> address`` of element ``idx`` of ``buf`` (int64)."""
    place, isz = plan.of(buf), buf.dtype.bytes
    base = (place.space << SPACE_SHIFT) + place.base
    return lambda idx: np.int64(base) + np.asarray(idx, np.int64) * isz


# ---------------------------------------------------------------- local-memory shadow
def check_local_read(ctx, offs, nbytes, tids, span, name="local memory") -> None:
    """An uninitialised-register read: a byte of local memory its thread never wrote."""
    span_b = byte_span(np.broadcast_to(offs, tids.shape), nbytes)
    unset = ~ctx.mem.local_set[tids[:, None], span_b]
    if unset.any():
        k, j = np.argwhere(unset)[0]
        ctx.hazard(f"reads {name!r} (registers / local memory) where this thread has not "
                   f"written (an uninitialised register)", span,
                   f"assign {name!r} before reading it (e.g. fill it with zeros first)",
                   tid=int(tids[k]), addr=(LOCAL << SPACE_SHIFT) + int(span_b[k, j]))


def register_offsets(ctx, site) -> np.ndarray | None:
    """(active threads, registers) local offsets of an instruction's register operands
    (``site.reg_addrs``), None when it has none."""
    if not site.reg_addrs:
        return None
    act = ctx.active()
    return np.stack([offset_of(np.broadcast_to(a(ctx), act.shape)) for a in site.reg_addrs],
                    axis=1)


def check_accumulators(ctx, tids, offs, span, what: str, hint: str) -> None:
    """``what`` reads its read-write (accumulator) registers at local offsets ``offs`` (a
    row per thread of ``tids``): each must have been written (the instruction decides
    whether it reads them: a wgmma with scale-d 0 does not)."""
    unset = ~ctx.mem.local_set[tids[:, None], offs]
    if unset.any():
        k, j = np.argwhere(unset)[0]
        ctx.hazard(f"{what} reads accumulator registers where this thread has not written "
                   "(an uninitialised register)", span, hint, tid=int(tids[k]),
                   addr=(LOCAL << SPACE_SHIFT) + int(offs[k, j]))


def mark_local_write(ctx, offs, nbytes, tids) -> None:
    span_b = byte_span(np.broadcast_to(offs, tids.shape), nbytes)
    ctx.mem.local_set[tids[:, None], span_b] = True


# ---------------------------------------------------------------- shared-memory shadows
def check_shared_read(ctx, offs, nbytes, tids, span, note: bool = True) -> None:
    """Hazards of ``tids`` reading ``nbytes`` at shared offsets ``offs``: bytes in flight
    (asked of the async core) or written by another thread since the last barrier. The
    read is recorded for the write-after-read check (:mod:`.races`) unless ``note`` is
    false (an mbarrier operation: atomic on the barrier object, not a plain read)."""
    span_b = byte_span(np.broadcast_to(offs, tids.shape), nbytes)
    mem = ctx.mem
    if note:
        mem.readers.note(span_b, tids[:, None])
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
    after asking the async core whether something in flight writes or reads them and
    checking for races with other threads' accesses. The write is a generic-proxy one: the
    copy engine sees it only after the writer's fence.proxy.async."""
    span_b = byte_span(np.broadcast_to(offs, tids.shape), nbytes)
    ctx.asyncs.check_write(span_b, tids, span)
    check_shared_write(ctx, offs, nbytes, span_b, tids, span)
    who = np.broadcast_to((tids if owner is None else owner)[:, None], span_b.shape)
    mem = ctx.mem
    mem.owner[span_b] = who
    if owner is not None:
        mem.warp_owned = True
    if mem.gen_writer is not None:  # a generic-proxy write (see the bulk family's proxies)
        mem.gen_writer[span_b] = np.broadcast_to(tids[:, None], span_b.shape)
        mem.gen_dirty = True


def mbarrier_addrs(ctx, mbar, span, what, read: bool = True):
    """The shared addresses of the 8-byte mbarriers ``mbar`` (one per active thread), or
    None after a hazard; ``read``: the threads also read them (every use but init)."""
    r = check_pointer(ctx, mbar, 8, span, what, spaces=(SHARED,))
    if r is None:
        return None
    if read:
        check_shared_read(ctx, r[1], 8, ctx.active(), span, note=False)
    return (SHARED << SPACE_SHIFT) + r[1]


# ---------------------------------------------------------------- raw byte accesses
def check_pointer(ctx, addrs, nbytes, span, what, spaces=None, align=None):
    """Validate per-thread pointers for an ``nbytes`` access: space, alignment, bounds.
    Returns ``(space, offsets)`` arrays, or None after a (non-strict) hazard."""
    tids = ctx.active()
    addrs = np.broadcast_to(np.asarray(addrs, np.int64), tids.shape)
    sp, off = space_of(addrs), offset_of(addrs)
    s0 = int(sp[0]) if len(sp) else SHARED
    if (sp == s0).all():  # the usual case: one space for every thread
        lim = _allowed_limit(ctx, s0, spaces)
    else:
        lim = np.full(sp.shape, -1, np.int64)
        for s in np.unique(sp).tolist():
            lim[sp == s] = _allowed_limit(ctx, s, spaces)
    ok = (lim >= 0) & (off % (align or nbytes) == 0) & (off + nbytes <= lim)
    if not ok.all():
        k = int(np.argmin(ok))
        _report_pointer(ctx, int(addrs[k]), nbytes, align or nbytes, spaces, span, what,
                        tids[k])
        return None
    return sp, off


def _allowed_limit(ctx, s: int, spaces) -> int:
    """The byte size of space ``s``, -1 when it is not one of ``spaces`` or not a space."""
    if spaces is not None and s not in spaces:
        return -1
    lim = _limit(ctx, s)
    return -1 if lim is None else lim


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


def _spaces(sp) -> list[int]:
    """The distinct memory spaces of ``sp`` (one, usually: no sort needed)."""
    s0 = int(sp[0]) if len(sp) else SHARED
    return [s0] if (sp == s0).all() else np.unique(sp).tolist()


def read_bytes(ctx, sp, off, nbytes, tids, span=None) -> np.ndarray:
    """``(len(tids), nbytes)`` uint8 read through validated pointers; local and global
    reads are checked (uninitialised registers, global races) when ``span`` is given (the
    caller checks shared reads)."""
    out = np.empty((len(tids), nbytes), np.uint8)
    for s in _spaces(sp):
        sel = sp == s
        cols = byte_span(off[sel], nbytes)
        if s == LOCAL:
            if span is not None:
                check_local_read(ctx, off[sel], nbytes, tids[sel], span)
            out[sel] = ctx.mem.local[tids[sel][:, None], cols]
        else:
            if span is not None and s != SHARED:
                ctx.mem.races.read(ctx, s, off[sel], nbytes, tids[sel], span)
            out[sel] = ctx.mem.space_bytes(s)[cols]
    return out


def write_bytes(ctx, sp, off, data, tids, span=None) -> None:
    """Write ``data`` rows through validated pointers; local bytes are marked written and
    global writes race-checked when ``span`` is given (the caller marks shared writes)."""
    nbytes = data.shape[1]
    for s in _spaces(sp):
        sel = sp == s
        cols = byte_span(off[sel], nbytes)
        if s == LOCAL:
            ctx.mem.local[tids[sel][:, None], cols] = data[sel]
            ctx.mem.local_set[tids[sel][:, None], cols] = True
        else:
            if span is not None and s != SHARED:
                ctx.mem.races.write(ctx, s, off[sel], nbytes, tids[sel], span)
            ctx.mem.space_bytes(s)[cols] = data[sel]
