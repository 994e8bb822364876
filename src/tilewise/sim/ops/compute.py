"""Simulator semantics of the warp shuffle, the packed two-lane arithmetic, the packing
conversions and the approximate math instructions (facts in :mod:`tilewise.ptx.packed`).

* ``shfl.sync`` (PTX ISA §9.7.9.6): the source lane ``j`` of each thread, from ``mode``,
  ``b`` and ``c`` (``c[4:0]`` the clamp, ``c[12:8]`` the segment mask), exactly as the ISA's
  pseudo-code; a lane whose ``j`` is outside its segment reads its own value. Reading a
  lane that does not execute the instruction, a thread not named in ``membermask``, and a
  lane named in ``membermask`` that does not execute it are hazards (undefined on the GPU).
* ``vote.sync``: any / all / uni / ballot over the executing lanes of each warp, with
  ``shfl.sync``'s membermask checks.
* packed arithmetic: each lane by the arithmetic table (:mod:`tilewise.ir.alu`), ``fma``
  rounded once (``alu.numpy_fma``): bit-identical with the GPU.
* ``cvt.rn.{f16x2,bf16x2}.f32``: two conversions of the arithmetic table, packed.
* approximate math: the correctly rounded value (computed in float64), which lies within
  the error bound the PTX ISA gives for the instruction; the GPU's result may differ from
  it by that bound (``APPROX[...].tol``), never more.
"""

from __future__ import annotations

import numpy as np

from ...ir import alu
from ...ir import dtype as dt
from ...ir.launch import WARP
from ...ptx.packed import APPROX, CVT_PACK, PACKED
from ..registry import semantics
from ..values import np_dtype


def _per_thread(ctx, v, d) -> np.ndarray:
    return np.broadcast_to(np.asarray(v).astype(d), ctx.active().shape)


def _source_lane(mode: str, lane, b, c):
    """The ISA's pseudo-code: ``(j, pval)`` for each lane."""
    bval, cval, seg = b & 0x1F, c & 0x1F, (c >> 8) & 0x1F
    max_lane = (lane & seg) | (cval & ~seg)
    min_lane = lane & seg
    if mode == "up":
        j = lane - bval
        return j, j >= max_lane
    if mode == "down":
        j = lane + bval
        return j, j <= max_lane
    if mode == "bfly":
        j = lane ^ bval
        return j, j <= max_lane
    j = min_lane | (bval & ~seg)
    return j, j <= max_lane


@semantics("ptx.shfl_sync")
def shfl_sync(ctx, site, args):
    mode, value, b, c, mask = args
    act = ctx.active()
    d = np_dtype(site.call.type)
    vals = _per_thread(ctx, value, d)
    lane = (act % WARP).astype(np.int64)
    bb = _per_thread(ctx, b, np.int64)
    cc = _per_thread(ctx, (0 if mode == "up" else 31) if c is None else c, np.int64)
    member = _per_thread(ctx, 0xFFFFFFFF if mask is None else mask, np.int64)
    _check_members(ctx, site, act, lane, member)
    j, ok = _source_lane(mode, lane, bb, cc)
    j = np.where(ok, j, lane)
    src = (act // WARP) * WARP + j
    where = np.full(ctx.n, -1, np.int64)
    where[act] = np.arange(len(act))
    pos = where[src]
    if (pos < 0).any():
        k = int(np.argmax(pos < 0))
        ctx.hazard(f"shfl.sync: lane {int(lane[k])} of warp {int(act[k]) // WARP} reads lane "
                   f"{int(j[k])}, which does not execute this shuffle (its value is "
                   "undefined)", site.span, "execute the shuffle from every lane it reads",
                   tid=int(act[k]))
        pos = np.where(pos < 0, np.arange(len(act)), pos)
    return vals[pos]


@semantics("ptx.vote_sync")
def vote_sync(ctx, site, args):
    mode, pred, mask = args
    act = ctx.active()
    lane = (act % WARP).astype(np.int64)
    member = _per_thread(ctx, 0xFFFFFFFF if mask is None else mask, np.int64)
    _check_members(ctx, site, act, lane, member, "vote.sync")
    p = _per_thread(ctx, pred, np.bool_)
    warp = act // WARP
    out = np.zeros(len(act), np.uint32 if mode == "ballot" else np.bool_)
    for w in np.unique(warp).tolist():
        sel = warp == w
        if mode == "ballot":
            out[sel] = int(np.bitwise_or.reduce(np.left_shift(p[sel].astype(np.int64),
                                                              lane[sel])))
        elif mode == "any":
            out[sel] = p[sel].any()
        elif mode == "all":
            out[sel] = p[sel].all()
        else:
            out[sel] = p[sel].all() or not p[sel].any()
    return out


def _check_members(ctx, site, act, lane, member, what="shfl.sync"):
    """Every executing lane is named in ``membermask`` and every named lane executes."""
    named = ((member >> lane) & 1) == 1
    if not named.all():
        k = int(np.argmax(~named))
        ctx.hazard(f"{what}: thread {int(act[k])} executes it but its membermask "
                   f"{int(member[k]):#x} does not name lane {int(lane[k])}", site.span,
                   "name every executing lane in the mask", tid=int(act[k]))
    for w in np.unique(act // WARP).tolist():
        sel = act // WARP == w
        present = int(np.bitwise_or.reduce(np.left_shift(1, lane[sel])))
        want = int(member[sel][0])
        if want & ~present & 0xFFFFFFFF:
            ctx.hazard(f"{what}: membermask {want:#x} of warp {w} names lanes that do not "
                       f"execute it (executing: {present:#x})", site.span,
                       "execute it from every lane of the mask (all threads "
                       "active), or narrow the mask", tid=w * WARP)


def _lanes(v, lanes) -> np.ndarray:
    """``(n, 2)`` lane values of packed registers ``v`` (lane 0: the low bits)."""
    words = np.atleast_1d(np.asarray(v).astype(np_dtype(lanes.word)))
    return words.view(np_dtype(lanes.elem)).reshape(-1, 2)


def _pack(vals: np.ndarray, lanes, like) -> np.ndarray:
    words = np.ascontiguousarray(vals.astype(np_dtype(lanes.elem))).view(np_dtype(lanes.word))
    words = words.reshape(-1)
    return words if any(np.ndim(x) for x in like) else words[0]


def _packed(ctx, site, args):
    p = PACKED[site.name]
    d = np_dtype(p.lanes.elem)
    ins = np.broadcast_arrays(*(np.asarray(a) for a in args))
    xs = [_lanes(x, p.lanes) for x in ins]
    with np.errstate(all="ignore"):
        if p.alu == "fma":
            r = alu.numpy_fma(*xs, d)
        else:
            r = alu.numpy_binary(p.alu, p.lanes.elem)(xs[0], xs[1])
    return _pack(np.asarray(r), p.lanes, args)


semantics(*sorted(PACKED))(_packed)


def _cvt_pack(ctx, site, args):
    lanes = CVT_PACK[site.name]
    a, b = np.broadcast_arrays(*(np.atleast_1d(np.asarray(x, np.float32)) for x in args))
    hi = alu.numpy_cast(a, dt.float32, lanes.elem)
    lo = alu.numpy_cast(b, dt.float32, lanes.elem)
    return _pack(np.stack([lo, hi], axis=-1), lanes, args)


semantics(*sorted(CVT_PACK))(_cvt_pack)

@semantics("ptx.fma.rn")
def fma_rn(ctx, site, args):
    d = np_dtype(site.call.type)
    return alu.numpy_fma(*(np.asarray(a).astype(d) for a in args), d)


@semantics("ptx.sqrt.rn")
def sqrt_rn(ctx, site, args):
    with np.errstate(all="ignore"):
        r = np.sqrt(np.asarray(args[0], np.float32))  # IEEE: correctly rounded
    return alu.canonical_nan(r, np.dtype(np.float32))


_EXACT = {"ptx.ex2.approx": np.exp2, "ptx.lg2.approx": np.log2,
          "ptx.rsqrt.approx": lambda x: 1.0 / np.sqrt(x), "ptx.ex2.approx.ftz": np.exp2}
_FTZ = {"ptx.ex2.approx.ftz"}
_TINY = np.finfo(np.float32).tiny  # the smallest normal float32


def _approx(ctx, site, args):
    fn = _EXACT[site.name]
    x = np.asarray(args[0], np.float32)
    if site.name in _FTZ:  # a subnormal input reads as zero (of its sign)
        x = np.where(np.abs(x) < _TINY, np.copysign(np.float32(0), x), x)
    with np.errstate(all="ignore"):
        r = alu.canonical_nan(fn(x.astype(np.float64)).astype(np.float32), np.dtype(np.float32))
    if site.name in _FTZ:  # and a subnormal result is flushed to +0
        r = np.where(np.abs(r) < _TINY, np.float32(0), r).astype(np.float32)
    return r if np.ndim(args[0]) else np.float32(r)


semantics(*sorted(APPROX))(_approx)
