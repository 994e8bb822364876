"""Simulator semantics of wgmma (PTX ISA §9.7.15; geometry in :mod:`tilewise.ptx.wgmma`).

``wgmma.mma_async`` is executed per warpgroup (all 128 threads, ``.sync.aligned``), with
the descriptors and ``scale-d`` the same in every thread of the warpgroup. Each operand
element is read from the shared address the descriptor's canonical layout and swizzle give
(so a wrong descriptor reads the wrong bytes, as on the GPU); the bytes must be visible to
the warpgroup and lie in one shared allocation.

Numerics: the products of one instruction's K inputs are exact (float64), summed in
float64 and added to the accumulator with one rounding to its type (float32 or float16):
``D = fl(D + sum_k a[m,k] b[k,n])`` per instruction — the GPU's internal order differs, so
results agree with it to within float32 rounding of each K-step (tests state 2e-6 relative
per step). tf32 inputs keep their 10 high mantissa bits (the low 13 are ignored, not
rounded); fp8 inputs are exact in float64.

``wgmma.mma_async.rs`` takes A from the warpgroup's registers: thread ``t``'s a0..a3 are
elements ``a_coords(t, 0..7)`` of the 64 x 16 tile (two 16-bit inputs per register, the
even element in the low half); the rest is the shared-memory form's.

Asynchrony (:mod:`.state`): the accumulators are written at issue, but
stay in flight, and the operands being read, until a ``wait_group`` retires the group; so
do the A registers of the ``.rs`` form.
"""

from __future__ import annotations

import numpy as np

from ....ir.dtype import DTYPES
from ....ir.launch import WARPGROUP
from ....ptx import wgmma
from ...access import (check_accumulators, check_proxy_fence, check_shared_read,
                        register_offsets)
from ...collective import whole_groups
from ...memory import SHARED, offset_of
from ...registry import semantics, write_regs
from .state import wgmma_of


@semantics("ptx.wgmma.fence")
def fence(ctx, site, args):
    whole_groups(ctx, site.span, "wgmma.fence", WARPGROUP, "warpgroup")
    wgmma_of(ctx).fence(ctx.active())


@semantics("ptx.wgmma.fence_operand")
def fence_operand(ctx, site, args):
    """A compiler barrier only: nothing happens on the machine (the registers keep their
    values; a read of an in-flight accumulator is reported by the read that follows)."""


@semantics("ptx.wgmma.commit_group")
def commit_group(ctx, site, args):
    wgmma_of(ctx).commit(whole_groups(ctx, site.span, "wgmma.commit_group", WARPGROUP,
                                         "warpgroup"))


@semantics("ptx.wgmma.wait_group")
def wait_group(ctx, site, args):
    wgs = whole_groups(ctx, site.span, "wgmma.wait_group", WARPGROUP, "warpgroup")
    wgmma_of(ctx).wait(wgs, int(args[0]), site.span)


def _uniform(ctx, site, values, act, wg, what) -> int | None:
    v = np.broadcast_to(np.asarray(values), act.shape)[act // WARPGROUP == wg]
    if (v != v[0]).any():
        ctx.hazard(f"wgmma.mma_async: {what} differs between the threads of warpgroup {wg}",
                   site.span, "compute it from values the whole warpgroup shares",
                   tid=wg * WARPGROUP)
        return None
    return int(np.asarray(v[0]).astype(np.uint64)) if what != "scale-d" else int(bool(v[0]))


_CACHE_LIMIT = 512  # descriptors remembered per call site


def _operand(ctx, site, desc: int, k_major: bool, mn: int, k: int, dtype: str, wg: int):
    """The (mn x k) operand tile as float64, read through descriptor ``desc``, and the
    sorted shared byte offsets it reads (the addresses are computed once per descriptor)."""
    key = (desc, k_major, mn, k, dtype)
    hit = site.cache.get(key)
    if hit is None:
        d = wgmma.decode(desc)
        t = DTYPES[dtype]
        eb = t.bytes
        rows, cols = np.meshgrid(np.arange(mn), np.arange(k), indexing="ij")
        starts = wgmma.element_address(k_major, rows, cols, eb, d).ravel()
        if not _inside(ctx, site, starts, eb, wg):
            return None, None
        nbytes = (starts[:, None] + np.arange(eb)).ravel()
        hit = (nbytes, np.unique(nbytes), t.numpy())
        if len(site.cache) < _CACHE_LIMIT:
            site.cache[key] = hit
    nbytes, uniq, npt = hit
    check_shared_read(ctx, uniq, 1, np.full(uniq.size, wg * WARPGROUP), site.span)
    check_proxy_fence(ctx, uniq, wg * WARPGROUP, "wgmma.mma_async", site.span,
                      "the wgmma.mma_async that reads it")
    vals = ctx.mem.shared[nbytes].view(npt).reshape(mn, k)
    if dtype == "float32":  # tf32: the 13 low mantissa bits are ignored
        vals = (vals.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    return vals.astype(np.float64), uniq


def _inside(ctx, site, addr, eb: int, wg: int) -> bool:
    """Every byte the descriptor reaches lies in one shared allocation."""
    lo, hi = int(addr.min()), int(addr.max()) + eb
    for p in ctx.mem.plan.placements(SHARED):
        if p.base <= lo and hi <= p.base + p.nbytes:
            return True
    ctx.hazard(f"wgmma.mma_async: a matrix descriptor reaches shared bytes {lo:#x}..{hi:#x}, "
               "outside every shared buffer", site.span,
               "build the descriptor from the operand buffer's address and layout (let "
               "Tx.wg.gemm_async build it)", tid=wg * WARPGROUP,
               addr=(SHARED << 40) + lo)
    return False


@semantics("ptx.wgmma.mma_async")
def mma_async(ctx, site, args):
    a_desc, b_desc, scale_d, n, ab, acc, trans_a, trans_b = args[:8]

    def a_tile(wg, act):
        da = _uniform(ctx, site, a_desc, act, wg, "the A descriptor")
        if da is None:
            return None, None, None
        A, a_bytes = _operand(ctx, site, da, not trans_a, wgmma.M, wgmma.K_OF[ab], ab, wg)
        return A, a_bytes, None

    _mma(ctx, site, a_tile, b_desc, scale_d, n, ab, acc, trans_b, args[8:])


@semantics("ptx.wgmma.mma_async.rs")
def mma_async_rs(ctx, site, args):
    k = wgmma.A_REGS
    b_desc, scale_d, n, ab, acc, trans_b = args[k:k + 6]
    words = [np.broadcast_to(np.asarray(a), ctx.active().shape) for a in args[:k]]
    a_addr = _operand_offsets(ctx, site)

    def a_tile(wg, act):
        sel = np.nonzero(act // WARPGROUP == wg)[0]
        A = _register_a(np.stack([w[sel] for w in words], 1), act[sel] % WARPGROUP, ab)
        a_regs = None if a_addr is None else (a_addr[sel][:, :, None]
                                              + np.arange(4)).reshape(len(sel), -1)
        return A, np.zeros(0, np.int64), a_regs

    _mma(ctx, site, a_tile, b_desc, scale_d, n, ab, acc, trans_b, args[k + 6:])


def _register_a(words: np.ndarray, t: np.ndarray, ab: str) -> np.ndarray:
    """The 64 x 16 A tile (float64) from the warpgroup threads ``t``'s a0..a3 (``words``:
    threads x 4 uint32)."""
    halves = np.stack([words.astype(np.uint32) & 0xFFFF, words.astype(np.uint32) >> 16], 2)
    vals = halves.reshape(len(t), 8).astype(np.uint16).view(DTYPES[ab].numpy())
    rows, cols = wgmma.a_coords(t[:, None], np.arange(8)[None, :])
    A = np.zeros((wgmma.M, 16))
    A[rows, cols] = vals.astype(np.float64)
    return A


def _operand_offsets(ctx, site) -> np.ndarray | None:
    """(active threads, A registers) local offsets of the ``reg32`` operands, or None when
    they are not all register elements."""
    if not site.operand_addrs or any(a is None for a in site.operand_addrs):
        return None
    act = ctx.active()
    return np.stack([offset_of(np.broadcast_to(a(ctx), act.shape))
                     for a in site.operand_addrs], axis=1)


def _mma(ctx, site, a_tile, b_desc, scale_d, n, ab, acc, trans_b, regs_in) -> None:
    """One wgmma per warpgroup: A from ``a_tile(wg, act)`` -> (tile, shared bytes read, A
    register bytes or None), B through its descriptor, D in the accumulator registers."""
    act = ctx.active()
    wgs = whole_groups(ctx, site.span, "wgmma.mma_async", WARPGROUP, "warpgroup")
    k = wgmma.K_OF[ab]
    acc_t = np.float32 if acc == "float32" else np.float16
    out = _registers(regs_in, act)
    regs_addr = register_offsets(ctx, site)
    for wg in np.atleast_1d(wgs).tolist():
        db = _uniform(ctx, site, b_desc, act, wg, "the B descriptor")
        sd = _uniform(ctx, site, scale_d, act, wg, "scale-d")
        if db is None or sd is None:
            continue
        A, a_bytes, a_regs = a_tile(wg, act)
        B, b_bytes = _operand(ctx, site, db, not trans_b, n, k, ab, wg)
        if A is None or B is None:
            continue
        sel = np.nonzero(act // WARPGROUP == wg)[0]
        if sd and regs_addr is not None:  # scale-d 1: D = A·B + D reads the accumulator
            check_accumulators(ctx, act[sel], regs_addr[sel], site.span, "wgmma.mma_async",
                               "zero the accumulator first (Tx.wg.zero), or let the first "
                               "product overwrite it (accum=False)")
        prod = A @ B.T  # (64, n), exact products summed in float64
        _accumulate(out, sel, act[sel] % WARPGROUP, prod, sd, acc_t, n)
        wgmma_of(ctx).issue(wg, act[sel], _reg_bytes(site, regs_addr, sel),
                            (a_bytes, b_bytes), site.span, a_regs)
    write_regs(ctx, site, out)


def _registers(regs, act) -> np.ndarray:
    """The accumulator registers as one (threads, registers) array of their 32-bit words."""
    out = np.empty((len(act), len(regs)), np.uint32)
    for j, r in enumerate(regs):
        r = np.asarray(r)
        out[:, j] = r.view(np.uint32) if r.dtype.itemsize == 4 else r.astype(np.uint32)
    return out


_COORDS: dict = {}


def _coords(t: np.ndarray, n: int):
    """``acc_coords`` of warpgroup threads ``t`` for every value of an m64nN accumulator
    (computed once per N for the usual whole warpgroup)."""
    whole = len(t) == WARPGROUP
    hit = _COORDS.get(n) if whole else None
    if hit is None:
        v = np.arange(n // 2)  # values per thread: n/2 float32 registers, or n/4 f16 pairs
        hit = wgmma.acc_coords(t[:, None], v[None, :])
        if whole:
            _COORDS[n] = hit
    return hit


def _accumulate(out, sel, t, prod, scale_d: int, acc_t, n: int) -> None:
    """Add the product into the fragment registers (``out``, 32-bit words) of threads
    ``t`` (rows ``sel``): one rounding per instruction."""
    rows, cols = _coords(t, n)
    p = prod[rows, cols]  # (threads, n/2): the products of each thread's values, in order
    if acc_t is np.float32:
        old = out[sel].view(np.float32).astype(np.float64) if scale_d else 0.0
        out[sel] = (old + p).astype(np.float32).view(np.uint32)
        return
    words = out[sel]  # float16 pairs: value 2r in the low half, 2r + 1 in the high
    halves = np.stack([(words & 0xFFFF), (words >> 16)], axis=2).astype(np.uint16)
    old = halves.view(np.float16).astype(np.float64).reshape(len(sel), -1) if scale_d else 0.0
    new = (old + p).astype(np.float16).view(np.uint16).reshape(len(sel), -1, 2)
    out[sel] = new[..., 0].astype(np.uint32) | (new[..., 1].astype(np.uint32) << 16)


def _reg_bytes(site, regs_addr, sel) -> np.ndarray:
    """(threads, bytes) local byte offsets of the accumulator registers."""
    if site.block is not None:  # the same bytes in every thread
        return np.broadcast_to(site.block.cols, (len(sel), len(site.block.cols)))
    if regs_addr is None:
        return np.zeros((len(sel), 0), np.int64)
    base = regs_addr[sel]
    return (base[:, :, None] + np.arange(4)).reshape(len(sel), -1)


#: Where a shared::cta address carries the CTA's rank in its cluster. On the H200 the 32-bit
#: address of a shared location in a cluster launch is ``rank << 24 | offset`` (ptxas builds
#: it from ``SR_CgaCtaId``), so only its low 18 bits are the offset a matrix descriptor's
#: 14-bit start field takes (``(addr & 0x3FFFF) >> 4``). Found on the GPU: a descriptor
#: built without that mask read garbage in every CTA of rank >= 1.
CLUSTER_RANK_SHIFT = 24


@semantics("ptx.smem_addr")
def smem_addr(ctx, site, args):
    from ...access import check_pointer

    r = check_pointer(ctx, args[0], 1, site.span, "T.ptx.smem_addr", spaces=(SHARED,))
    if r is None:
        return None
    rank = ctx.rank if ctx.cluster is not None and ctx.cluster.n > 1 else 0
    return (r[1].astype(np.uint32) | np.uint32(rank << CLUSTER_RANK_SHIFT)).astype(np.uint32)
