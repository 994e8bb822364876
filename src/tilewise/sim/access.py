"""Loads, stores and raw byte accesses, with the bounds, alignment and shared-memory
visibility checks (see :mod:`tilewise.sim.memory` for the shadow state)."""

from __future__ import annotations

import numpy as np

from ..ir.launch import WARP
from .memory import (LOCAL, SHARED, SPACE_SHIFT, UNWRITTEN, VISIBLE, byte_span, offset_of,
                     owner_name, space_of)
from .races import check_shared_write
from .registry import mechanism
from .values import fit, np_dtype


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
    if idx.ndim == 0:
        if 0 <= idx < size:
            return idx
        bad = np.asarray(True)
    else:
        bad = (idx < 0) | (idx >= size)
        if not bad.any():
            return idx
    k = int(np.argmax(fit(bad, tids.shape)))
    i = int(fit(idx, tids.shape)[k])
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
    :func:`check_local_read`). The closure does only the checks of ``plan.checks``."""
    place, d, size = plan.of(buf), np_dtype(buf.dtype), _static_size(buf)
    chk = plan.checks

    def index(ctx, idx):
        tids = ctx.active()
        view = typed_view(ctx, place, d)
        idx = _bounds(ctx, np.asarray(idx, np.int64), size or view.shape[-1], span, buf, tids,
                      place, d.itemsize)
        return tids, view, idx

    if place.space == LOCAL:
        regs, init = chk.regs and not operand, chk.regs and init_check

        def load_local(ctx, idx):
            tids, view, idx = index(ctx, idx)
            if regs or init:
                offs = place.base + idx * d.itemsize
                if regs:
                    for w in ctx.asyncs.reg_watchers:  # async work owning registers (wgmma)
                        w.register_access(tids, offs, d.itemsize, span, False)
                if init and not _all_written(ctx.mem, place):
                    check_local_read(ctx, offs, d.itemsize, tids, span, buf.name)
            return view[tids, idx]
        return load_local
    shared = place.space == SHARED
    checked = chk.shared if shared else (chk.glob or chk.outputs)

    def load(ctx, idx):
        tids, view, idx = index(ctx, idx)
        if checked:
            offs = place.base + idx * d.itemsize
            if shared:
                check_shared_read(ctx, offs, d.itemsize, tids, span)
            else:
                ctx.mem.races.read(ctx, place.space, offs, d.itemsize, tids, span)
        out = view[idx]
        return out if out.ndim else d.type(out)

    return load


def make_store(plan, buf, span, operand: bool = False):
    """``fn(ctx, idx, values)`` writing element ``idx`` of ``buf`` (``operand``: an
    instruction's destination register), with the checks of ``plan.checks``."""
    place, d, size = plan.of(buf), np_dtype(buf.dtype), _static_size(buf)
    chk = plan.checks

    def index(ctx, idx):
        tids = ctx.active()
        view = typed_view(ctx, place, d)
        idx = _bounds(ctx, np.asarray(idx, np.int64), size or view.shape[-1], span, buf, tids,
                      place, d.itemsize)
        return tids, view, idx

    if place.space == LOCAL:
        regs = chk.regs and not operand

        key = (place.base, place.nbytes)

        def store_local(ctx, idx, vals):
            tids, view, idx = index(ctx, idx)
            view[tids, idx] = vals
            if chk.regs:
                offs = place.base + idx * d.itemsize
                if regs:
                    for w in ctx.asyncs.reg_watchers:
                        w.register_access(tids, offs, d.itemsize, span, True)
                if key not in ctx.mem.local_ready:  # else every byte is written already
                    mark_local_write(ctx, offs, d.itemsize, tids)
        return store_local
    shared = place.space == SHARED
    checked = chk.shared if shared else (chk.glob or chk.outputs)

    def store(ctx, idx, vals):
        tids, view, idx = index(ctx, idx)
        if not checked:
            pass
        elif shared:
            mark_shared_write(ctx, place.base + idx * d.itemsize, d.itemsize, tids, span)
        else:
            ctx.mem.races.write(ctx, place.space, place.base + idx * d.itemsize, d.itemsize,
                                tids, span, lambda: _rows(vals, d, len(tids)))
        if np.ndim(idx) == 0 and np.ndim(vals):  # threads racing on one element (reported
            vals = vals[-1]                      # above): one of them wins
        view[idx] = vals

    return store


def _rows(vals, d: np.dtype, n: int) -> np.ndarray:
    """The bytes of ``vals`` (dtype ``d``) as one row per thread of ``n``."""
    v = np.ascontiguousarray(np.broadcast_to(np.asarray(vals, d), (n,)))
    return v.view(np.uint8).reshape(n, d.itemsize)


def make_address(plan, buf):
    """``fn(idx) -> address`` of element ``idx`` of ``buf`` (int64)."""
    place, isz = plan.of(buf), buf.dtype.bytes
    base = (place.space << SPACE_SHIFT) + place.base
    return lambda idx: np.int64(base) + np.asarray(idx, np.int64) * isz


class RegBlock:
    """The register operands of one instruction when each is an element of a local buffer
    at a constant, in-bounds index (``acc[0], ..., acc[31]`` of a wgmma): read and written
    as one gather / scatter of the threads' local bytes instead of one load or store per
    register. ``offs``: their local byte offsets; values keep each buffer's dtype."""

    def __init__(self, plan, regs, spans):
        self.dtypes = [np_dtype(r.buffer.dtype) for r in regs]
        isz = self.dtypes[0].itemsize
        self.names, self.spans, self.chk = [r.buffer.name for r in regs], spans, plan.checks
        self.offs = np.array([plan.of(r.buffer).base + r.indices[0].value * isz for r in regs],
                             np.int64)
        self.cols = byte_span(self.offs, isz).ravel()
        c0 = int(self.cols[0])  # consecutive bytes (acc[0..n] in order): a slice
        self.span_cols = (slice(c0, c0 + len(self.cols))
                          if (self.cols == np.arange(c0, c0 + len(self.cols))).all()
                          else self.cols)
        self.raw, self.isz = np.dtype(f"u{isz}"), isz

    def _cells(self, tids):
        """The index of the active threads' register bytes in local memory."""
        if isinstance(self.span_cols, slice) and int(tids[-1]) - int(tids[0]) == len(tids) - 1:
            return slice(int(tids[0]), int(tids[0]) + len(tids)), self.span_cols
        return tids[:, None], self.cols

    @classmethod
    def build(cls, plan, regs, spans):
        """A block for ``regs`` (BufferLoads), or None when one is not a local element at a
        constant in-bounds index or the registers differ in width."""
        from ..ir.expr import BufferLoad, IntImm

        if not regs or not all(isinstance(r, BufferLoad) and len(r.indices) == 1
                               and isinstance(r.indices[0], IntImm)
                               and isinstance(r.buffer.size, int)
                               and 0 <= r.indices[0].value < r.buffer.size
                               and plan.of(r.buffer).space == LOCAL for r in regs):
            return None
        if len({r.buffer.dtype.bytes for r in regs}) != 1:
            return None
        return cls(plan, regs, spans)

    def offsets(self, ctx) -> np.ndarray:
        """(active threads, registers) local byte offsets."""
        return np.broadcast_to(self.offs, (ctx.n_active(), len(self.offs)))

    def read(self, ctx, init_check: bool) -> list:
        """Each register's values for the active threads (a column each)."""
        tids = ctx.active()
        cells = self._cells(tids)
        if init_check and self.chk.regs and not ctx.mem.local_set[cells].all():
            for j, off in enumerate(self.offs.tolist()):
                check_local_read(ctx, off, self.isz, tids, self.spans[j], self.names[j])
        raw = np.ascontiguousarray(ctx.mem.local[cells]).view(self.raw)
        return [raw[:, j].view(d) for j, d in enumerate(self.dtypes)]

    def write(self, ctx, values) -> None:
        """Set each register of the active threads to the bits of ``values[j]`` (the
        value converted when its width differs); ``values`` may be one (threads,
        registers) array of the registers' width."""
        tids = ctx.active()
        if isinstance(values, np.ndarray) and values.ndim == 2:
            raw = np.ascontiguousarray(values).view(self.raw)
        else:
            raw = np.empty((len(tids), len(self.dtypes)), self.raw)
            for j, (v, d) in enumerate(zip(values, self.dtypes)):
                v = np.asarray(v)
                raw[:, j] = (v if v.dtype.itemsize == self.isz else v.astype(d)).view(self.raw)
        cells = self._cells(tids)
        ctx.mem.local[cells] = raw.view(np.uint8)
        if self.chk.regs:
            ctx.mem.local_set[cells] = True


# ---------------------------------------------------------------- local-memory shadow
_READY_TRIES = 4  # whole-buffer checks per buffer and CTA before giving up on the shortcut


def _all_written(mem, place) -> bool:
    """Whether every thread has written every byte of the local allocation ``place`` (then
    no read of it can be uninitialised: written bytes stay written). Checked a few times
    per CTA, then the per-access check carries on alone."""
    key = (place.base, place.nbytes)
    if key in mem.local_ready:
        return True
    tries = mem.local_tries.get(key, 0)
    if tries >= _READY_TRIES:
        return False
    mem.local_tries[key] = tries + 1
    if mem.local_set[:, place.base:place.base + place.nbytes].all():
        mem.local_ready.add(key)
        return True
    return False



def check_local_read(ctx, offs, nbytes, tids, span, name="local memory") -> None:
    """An uninitialised-register read: a byte of local memory its thread never wrote."""
    if not ctx.checks.regs:
        return
    span_b = byte_span(fit(offs, tids.shape), nbytes)
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
    if site.block is not None:
        return site.block.offsets(ctx)
    if not site.reg_addrs:
        return None
    act = ctx.active()
    return np.stack([offset_of(np.broadcast_to(a(ctx), act.shape)) for a in site.reg_addrs],
                    axis=1)


def check_accumulators(ctx, tids, offs, span, what: str, hint: str) -> None:
    """``what`` reads its read-write (accumulator) registers at local offsets ``offs`` (a
    row per thread of ``tids``): each must have been written (the instruction decides
    whether it reads them: a wgmma with scale-d 0 does not)."""
    if not ctx.checks.regs:
        return
    unset = ~ctx.mem.local_set[tids[:, None], offs]
    if unset.any():
        k, j = np.argwhere(unset)[0]
        ctx.hazard(f"{what} reads accumulator registers where this thread has not written "
                   "(an uninitialised register)", span, hint, tid=int(tids[k]),
                   addr=(LOCAL << SPACE_SHIFT) + int(offs[k, j]))


def mark_local_write(ctx, offs, nbytes, tids) -> None:
    if not ctx.checks.regs:
        return
    span_b = byte_span(fit(offs, tids.shape), nbytes)
    ctx.mem.local_set[tids[:, None], span_b] = True


# ---------------------------------------------------------------- shared-memory shadows
def check_shared_read(ctx, offs, nbytes, tids, span, note: bool = True) -> None:
    """Hazards of ``tids`` reading ``nbytes`` at shared offsets ``offs``: bytes in flight
    (asked of the async core) or written by another thread since the last barrier. The
    read is recorded for the write-after-read check (:mod:`.races`) unless ``note`` is
    false (an mbarrier operation: atomic on the barrier object, not a plain read)."""
    if not ctx.checks.shared:
        return
    span_b = byte_span(fit(offs, tids.shape), nbytes)
    mem = ctx.mem
    if note:
        mem.readers.note(span_b, tids[:, None])
    own = mem.owner[span_b]
    t = tids[:, None]
    bad = (own != VISIBLE) & (own != t) & (own != -(2 + t // WARP))
    if mem.n_pending or (mem.bulk_tagged and bad.any()):
        bad = ctx.asyncs.check_read(span_b, tids, bad, own, span)
    if bad.any():
        k, j = np.argwhere(bad)[0]
        _report_invisible(ctx, int(own[k, j]), int(tids[k]), int(span_b[k, j]), span)


def _report_invisible(ctx, owner, tid, off, span):
    addr = (SHARED << SPACE_SHIFT) + off
    if owner == UNWRITTEN:
        ctx.hazard("reads shared memory that nothing has written (uninitialised)", span,
                   "write (or cp.async and wait for) the data before reading it",
                   tid=tid, addr=addr)
        return
    who = owner_name(owner, ctx.n)
    ctx.hazard(f"reads shared memory written by {who} with no bar.sync in between "
               f"(the write is visible only to the writer until a barrier)", span,
               "add T.cuda.cta_sync() between the write (or its cp.async.wait_group) "
               "and this read", tid=tid, addr=addr)


def mark_shared_write(ctx, offs, nbytes, tids, span, owner=None) -> None:
    """Record that ``tids`` wrote the bytes (visible to each writer only until bar.sync),
    after asking the async core whether something in flight writes or reads them and
    checking for races with other threads' accesses. The write is a generic-proxy one: the
    copy engine sees it only after the writer's fence.proxy.async."""
    if not ctx.checks.shared:
        return
    span_b = byte_span(fit(offs, tids.shape), nbytes)
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


@mechanism("async_proxy")
def check_proxy_fence(ctx, offs, tid: int, what: str, span, reader: str) -> None:
    """The async proxy (a ``what`` issued by ``tid``: a store by the copy engine, a wgmma /
    tcgen05.mma / tcgen05.cp operand fetch; ``reader`` in the hint) reads shared bytes
    ``offs``: every generic-proxy write to them must have been fenced by its writer
    (``fence.proxy.async``; the shadow is ``mem.gen_writer``)."""
    mem = ctx.mem
    if not mem.gen_dirty:
        return
    w = mem.gen_writer[offs]
    bad = w >= 0
    if bad.any():
        k = int(np.argmax(bad))
        ctx.hazard(f"{what} reads shared memory that thread {int(w[k])} wrote with ordinary "
                   f"stores and no fence.proxy.async since: the async proxy (which {what} "
                   "reads through) may not see those writes", span,
                   "call T.ptx.fence.proxy_async() in every thread that wrote the tile, then "
                   f"T.cuda.cta_sync(), before {reader}", tid=tid,
                   addr=(SHARED << SPACE_SHIFT) + int(offs[k]))


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
    addrs = fit(addrs, tids.shape, np.int64)
    fast = _one_space(ctx, addrs, nbytes, spaces, align or nbytes)
    if fast is not None:
        return fast
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


def _one_space(ctx, addrs, nbytes: int, spaces, align: int):
    """``check_pointer``'s usual case in three array operations: every pointer lies in the
    first one's space, in bounds and aligned (a power of two). None otherwise (or for no
    threads): the general path then finds and reports the offending thread."""
    if not len(addrs) or align & (align - 1):
        return None
    s0 = int(addrs[0]) >> SPACE_SHIFT
    lim = _allowed_limit(ctx, s0, spaces) if s0 > 0 else -1
    if lim < nbytes:
        return None
    off = addrs - (s0 << SPACE_SHIFT)  # another space is < 0 or >= 2^40: out of bounds below
    bad = off.view(np.uint64) > lim - nbytes
    if align > 1:
        bad |= (off & (align - 1)) != 0
    return None if bad.any() else (np.full(len(off), s0, np.int64), off)


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
                ctx.mem.races.write(ctx, s, off[sel], nbytes, tids[sel], span,
                                    lambda sel=sel: data[sel])
            ctx.mem.space_bytes(s)[cols] = data[sel]
