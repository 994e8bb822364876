"""Simulator semantics of the TMA tensor copies (``cp.async.bulk.tensor``,
``cp.reduce.async.bulk.tensor``, ``prefetch.tensormap``; ptx-semantics.md §5, PTX ISA
§9.7.9.25.5). The box geometry is :mod:`.tensormap`'s; the bookkeeping of
landed bytes, stores still reading and bulk groups is the async core's.

**global -> shared** (``g2c``). Per issuing thread: the destination is a 16-byte aligned
shared address (the variant keeps it 128-byte aligned, as the CUDA guide asks), the box
must lie in shared memory after the swizzle, the coordinate count must be the map's rank.
The box is read at issue (out-of-bounds elements filled), lands at the swizzled offsets
and ``complete_tx(box bytes)`` counts on the mbarrier — full box bytes, filled elements
included (CUTLASS's ``TmaTransactionBytes``). With ``cta_mask`` it lands in every CTA of
the cluster whose rank bit is set, at the same offsets, and counts on each one's mbarrier
at the mbarrier's offset. ``cta_group`` and the cache hint change no values.

**shared -> global** (``s2g``, ``s2g_reduce``). The box's shared bytes must be visible to
the issuing thread and fenced for the async proxy (``fence.proxy.async``); they are read
at issue and written to the in-bounds elements (a reduction combines them with the
arithmetic table's add / min / max of the element type); they stay *being read* until the
thread's bulk group is retired for reading.

The global elements a load reads and a plain store writes are race-checked like any global
access (:mod:`tilewise.sim.races`); a reduction is performed atomically by the copy engine,
so reductions of several CTAs into one output (split-K) are not races.
"""

from __future__ import annotations

import numpy as np

from ....errors import SimulationError
from ...access import check_pointer, check_shared_read, mbarrier_addrs
from ...memory import SHARED
from ...registry import semantics
from ...values import binop_fn, fit
from .state import bulk_of
from .tensormap import SimTensorMap

_REDUCE = {"add": "+", "min": "min", "max": "max"}


def _map(site, tmap, dim) -> SimTensorMap:
    if not isinstance(tmap, SimTensorMap):
        raise SimulationError("this TMA copy's tensor map was not bound at launch", site.span)
    if dim != tmap.rank:
        raise SimulationError(f"a {dim}-D TMA copy through the {tmap.rank}-D tensor map of "
                              f"{tmap.name!r}", site.span)
    return tmap


def _coords(ctx, coords) -> np.ndarray:
    """(threads, rank) int coordinates, innermost first."""
    n = len(ctx.active())
    return np.stack([fit(c, (n,), np.int64) for c in coords], axis=1)


def _shared_box(ctx, site, tm, addrs, what):
    """Per thread: the box's swizzled shared byte offsets (None after a hazard)."""
    r = check_pointer(ctx, addrs, 16, site.span, what, (SHARED,), 16)
    if r is None:
        return None
    out = []
    size = ctx.mem.shared.size
    for t, off in zip(ctx.active().tolist(), r[1].tolist()):
        offs = tm.shared_offsets(int(off))
        if offs.max() >= size:
            ctx.hazard(f"{what}: the {tm.spec.box_bytes}-byte box at shared offset {off:#x} "
                       f"runs past the {size} bytes of shared memory", site.span,
                       "check the destination's index", tid=t)
            return None
        out.append(offs)
    return out


def _targets(ctx, site, mask):
    """The CTAs a copy lands in: this one, or the ranks set in ``cta_mask``."""
    if mask is None:
        return lambda k: [ctx]
    masks = np.broadcast_to(np.asarray(mask, np.int64), ctx.active().shape)

    def ranks(k):
        m = int(masks[k])
        return [ctx.peer(r, site.span, "a TMA multicast (cta_mask)")
                for r in range(16) if m >> r & 1]
    return ranks


def _race(ctx, site, tm, coords, t: int, box=None, reduce: bool = False) -> None:
    """The box's in-bounds global elements, read (``box`` None) or written with the shared
    bytes at offsets ``box`` (``reduce``: combined into them) by thread ``t``'s copy (the
    race shadows of :mod:`tilewise.sim.races`)."""
    offs, ok = tm.elements(coords)
    if not ok.any():
        return
    es, tids = tm.spec.elem_bytes, np.full(int(ok.sum()), t)
    if reduce:
        ctx.mem.races.combine(ctx, tm.space, offs[ok], es, tids, site.span)
    elif box is None:
        ctx.mem.races.read(ctx, tm.space, offs[ok], es, tids, site.span)
    else:
        ctx.mem.races.write(ctx, tm.space, offs[ok], es, tids, site.span,
                            lambda: ctx.mem.shared[box].reshape(-1, es)[ok])


@semantics("ptx.cp_async.bulk.tensor.g2c")
def g2c(ctx, site, args):
    dim, dst, mbar, tmap, mask, _cta_group, _hint, *coords = args
    tm = _map(site, tmap, dim)
    what = "cp.async.bulk.tensor (global -> shared)"
    boxes = _shared_box(ctx, site, tm, dst, what + " destination")
    bars = boxes and mbarrier_addrs(ctx, mbar, site.span, "cp.async.bulk.tensor mbarrier")
    if boxes is None or bars is None:
        return
    c = _coords(ctx, coords)
    targets = _targets(ctx, site, mask)
    for k, t in enumerate(ctx.active().tolist()):
        _race(ctx, site, tm, c[k], t)
        data = tm.read_box(ctx.mem, c[k])
        for peer in targets(k):
            source = "" if peer is ctx else f" of CTA rank {ctx.rank}"
            bulk_of(peer).bulk_land(t, boxes[k], data, int(bars[k]), site.span,
                                  "cp.async.bulk.tensor", source)


def _store(ctx, site, args, combine=None):
    dim, src, tmap, *rest = args
    coords = rest[2:] if combine is not None else rest[1:]
    tm = _map(site, tmap, dim)
    what = "cp.async.bulk.tensor (shared -> global)"
    boxes = _shared_box(ctx, site, tm, src, what + " source")
    if boxes is None:
        return
    c = _coords(ctx, coords)
    for k, t in enumerate(ctx.active().tolist()):
        offs = boxes[k]
        chunks = offs[::16]
        check_shared_read(ctx, chunks, 16, np.full(len(chunks), t), site.span)
        bulk_of(ctx).check_async_read(offs, t, what, site.span)
        if combine is None:
            _race(ctx, site, tm, c[k], t, offs)
        else:  # a reduction is atomic in the copy engine: no race, but it reads the output
            _race(ctx, site, tm, c[k], t, offs, reduce=True)
        tm.write_box(ctx.mem, c[k], ctx.mem.shared[offs], combine)
        bulk_of(ctx).bulk_store(t, offs, site.span, what)


@semantics("ptx.cp_async.bulk.tensor.s2g")
def s2g(ctx, site, args):
    _store(ctx, site, args)


@semantics("ptx.cp_async.bulk.tensor.s2g_reduce")
def s2g_reduce(ctx, site, args):
    from ....ir.dtype import DTYPES

    tm, op = args[2], args[3]
    if not isinstance(tm, SimTensorMap):
        raise SimulationError("this TMA copy's tensor map was not bound at launch", site.span)
    fn = binop_fn(_REDUCE[op], DTYPES[tm.spec.dtype])
    _store(ctx, site, args, fn)


@semantics("ptx.prefetch_tensormap")
def prefetch_tensormap(ctx, site, args):
    """A cache hint: no effect on values (the operand must be a bound tensor map)."""
    if not isinstance(args[0], SimTensorMap):
        raise SimulationError("prefetch of a tensor map that was not bound at launch",
                              site.span)

