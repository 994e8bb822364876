"""Simulator semantics of the warp-level matrix instructions (PTX ISA §9.7.14; geometry in
:mod:`tilewise.ptx.mma`): ``mma.sync``, ``ldmatrix``, ``stmatrix``.

All three are ``.sync.aligned``: every warp that executes one must do so with all 32 lanes
(a partial warp is a hazard, and the partial warp is skipped).

**mma.sync numerics.** Per instruction and warp, the 16 x K tile of A and the K x 8 tile of
B are rebuilt from the lanes' registers by the fragment formulas, and
``D = round_acc(C + sum_k A[m, k] B[k, n])``: the K products are exact in float64 (every
input type has at most 24 significant bits), summed in float64 over the instruction's K
(``numpy.dot``), added to C in float64 and rounded **once** to the accumulator type
(float32 or float16, round to nearest even). A GEMM over several K-steps therefore rounds
once per K-step, in the order the instructions run. tf32 inputs keep their 10 high
mantissa bits (the 13 low bits are ignored, not rounded); fp8 inputs (e4m3, e5m2) are
decoded exactly. Integer inputs are multiplied and summed exactly and the int32
accumulator wraps around (modulo 2^32; no ``.satfinite``).

**ldmatrix / stmatrix.** Lanes ``8 j .. 8 j + 7`` give the row addresses of matrix ``j``
(checked: shared memory, 16-byte aligned, inside the shared window; the addresses of the
lanes beyond ``8 num`` are ignored, as on the GPU). Each lane then reads (ldmatrix) or
writes (stmatrix) exactly the two 16-bit elements of each matrix its register ``j`` holds,
so the shared-memory checks apply per lane: a lane reading bytes another thread wrote with
no ``bar.sync`` in between, bytes nothing wrote, or bytes a pending ``cp.async`` will write,
is reported; a stmatrix store is a write by the lane that holds the data.
"""

from __future__ import annotations

import numpy as np

from ...ir.dtype import DTYPES
from ...ir.launch import WARP
from ...ptx import mma
from ..access import (check_accumulators, check_pointer, check_shared_read, mark_shared_write,
                      register_offsets)
from ..collective import whole_groups
from ..memory import SHARED
from ..registry import semantics, write_regs
from ..state import masked
from ..values import fit


def _u32(v, n: int) -> np.ndarray:
    """A 32-bit register operand as ``uint32`` bits, one per active thread."""
    a = np.ascontiguousarray(np.broadcast_to(np.asarray(v), (n,)))
    return a.view(np.uint32) if a.dtype.itemsize == 4 else a.astype(np.int64).astype(np.uint32)


def _full_warps(ctx, site, what: str) -> list[np.ndarray]:
    """Indices (into the active threads, in lane order) of every fully active warp."""
    act = ctx.active()
    out = []
    for w in whole_groups(ctx, site.span, what).tolist():
        sel = np.nonzero(act // WARP == w)[0]
        if len(sel) == WARP:
            out.append(sel)
    return out


# ---------------------------------------------------------------- mma.sync
def _elements(words: np.ndarray, dtype: str) -> np.ndarray:
    """(32, registers) uint32 -> (32, elements) values as float64 (int64 for integers)."""
    if dtype == "float32":  # tf32: the 13 low mantissa bits are ignored
        words = words & np.uint32(0xFFFFE000)
    vals = np.ascontiguousarray(words).view(np.uint8).view(DTYPES[dtype].numpy())
    return vals.astype(np.int64 if DTYPES[dtype].is_int else np.float64)


def _tile(words: np.ndarray, dtype: str, coords, shape) -> np.ndarray:
    vals = _elements(words, dtype)
    lane = np.arange(WARP)[:, None]
    rows, cols = coords(lane, np.arange(vals.shape[1])[None, :])
    out = np.zeros(shape, vals.dtype)
    out[rows, cols] = vals
    return out


def _accumulate(c_words: np.ndarray, prod: np.ndarray, acc: str) -> np.ndarray:
    """D words (32, registers) = C + prod, rounded once to the accumulator type."""
    acc_t = DTYPES[acc].numpy()
    c = np.ascontiguousarray(c_words).view(np.uint8).view(acc_t)  # (32, 4) elements
    lane = np.arange(WARP)[:, None]
    rows, cols = mma.c_coords(lane, np.arange(c.shape[1])[None, :])
    if acc == "int32":
        total = c.astype(np.int64) + prod[rows, cols]
        d = ((total + 2**31) % 2**32 - 2**31).astype(np.int32)
    else:
        d = (c.astype(np.float64) + prod[rows, cols]).astype(acc_t)
    return np.ascontiguousarray(d).view(np.uint8).view(np.uint32)


@semantics("ptx.mma_sync", "ptx.mma_sync_fp8")
def mma_sync(ctx, site, args):
    a_type, b_type, acc = args[:3]
    n = ctx.n_active()
    regs = [_u32(v, n) for v in args[3:]]
    a = np.stack(regs[:mma.A_REGS], 1)
    b = np.stack(regs[mma.A_REGS:mma.A_REGS + mma.B_REGS], 1)
    c = np.stack(regs[mma.A_REGS + mma.B_REGS:], 1)
    k = mma.k_of(a_type)
    ea, eb = mma.per_reg(a_type), mma.per_reg(b_type)
    out = c.copy()
    warps = _full_warps(ctx, site, "mma.sync")
    regs_addr = register_offsets(ctx, site)
    for sel in warps:
        if regs_addr is not None:  # D = A·B + C reads C, always
            check_accumulators(ctx, ctx.active()[sel], regs_addr[sel], site.span, "mma.sync",
                               "zero the accumulator registers first (Tx.*.fill or a loop "
                               "of stores)")
        A = _tile(a[sel], a_type, lambda lane, i: mma.a_coords(lane, i, ea), (mma.M, k))
        B = _tile(b[sel], b_type, lambda lane, i: mma.b_coords(lane, i, eb), (k, mma.N))
        out[sel] = _accumulate(c[sel], A @ B, acc)
    _write(ctx, site, out, warps)


def _write(ctx, site, words: np.ndarray, warps: list[np.ndarray]) -> None:
    """Write register ``j`` of the threads of ``warps`` (the others keep theirs)."""
    if not warps:
        return
    sel = np.concatenate(warps)
    act = ctx.active()
    masked(ctx, act[sel], write_regs, site, [words[sel, j] for j in range(len(site.regs))])


# ---------------------------------------------------------------- ldmatrix / stmatrix
def _rows(ctx, site, ptr, num: int, what: str):
    """``[(sel, rows)]`` per fully active warp: ``rows`` (num, 8) the shared byte offsets of
    the matrix rows; None after a (non-strict) hazard on an address."""
    act = ctx.active()
    warps = _full_warps(ctx, site, what)
    addrs = fit(ptr, act.shape, np.int64)
    giving = (act % WARP) < 8 * num
    r = masked(ctx, act[giving], check_pointer, addrs[giving], mma.ROW_BYTES, site.span,
               f"{what} row address", (SHARED,), mma.ROW_BYTES)
    if r is None:
        return None
    offs = np.full(act.shape, -1, np.int64)
    offs[giving] = r[1]
    return [(sel, offs[sel][:8 * num].reshape(num, 8)) for sel in warps]


_HALF_COORDS: dict = {}


def _half_coords(trans: bool):
    """(row, col) in its 8 x 8 matrix of each lane's 16-bit element ``h``: (2, 32) each."""
    hit = _HALF_COORDS.get(trans)
    if hit is None:
        lane = np.arange(WARP)
        rc = [mma.matrix_element(lane, h, trans) for h in range(2)]
        hit = np.stack([r for r, _ in rc]), np.stack([c for _, c in rc])
        _HALF_COORDS[trans] = hit
    return hit


def _halves(where, num: int, trans: bool):
    """Every (warp, register j, half h, lane) at once: ``(who, offs)``, both shaped
    (warps, num, 2, 32): the index into the active threads of the lane holding the element,
    and its shared byte offset."""
    row, col = _half_coords(trans)
    rows = np.stack([r for _, r in where])  # (warps, num, 8)
    offs = rows[:, :, row] + 2 * col  # (warps, num, 2, 32)
    who = np.stack([sel for sel, _ in where])[:, None, None, :]
    return np.broadcast_to(who, offs.shape), offs


@semantics("ptx.ldmatrix")
def ldmatrix(ctx, site, args):
    src, num, trans = args[:3]
    where = _rows(ctx, site, src, num, "ldmatrix")
    if not where:
        return
    act = ctx.active()
    who, offs = _halves(where, num, bool(trans))
    check_shared_read(ctx, offs.ravel(), 2, act[who.ravel()], site.span)
    sh = ctx.mem.shared
    half = sh[offs].astype(np.uint32) | (sh[offs + 1].astype(np.uint32) << 8)
    word = half[:, :, 0, :] | (half[:, :, 1, :] << 16)  # (warps, num, 32)
    words = np.zeros((len(act), num), np.uint32)
    words[who[:, :, 0, :], np.arange(num)[None, :, None]] = word
    _write(ctx, site, words, [sel for sel, _ in where])


@semantics("ptx.stmatrix")
def stmatrix(ctx, site, args):
    dst, num, trans = args[:3]
    where = _rows(ctx, site, dst, num, "stmatrix")
    if not where:
        return
    act = ctx.active()
    words = np.stack([_u32(v, len(act)) for v in args[3:]], 1)
    who, offs = _halves(where, num, bool(trans))
    mark_shared_write(ctx, offs.ravel(), 2, act[who.ravel()], site.span)
    w = words[who, np.arange(num)[None, :, None, None]]  # (warps, num, 2, 32)
    half = (w >> (16 * np.arange(2, dtype=np.uint32)[None, None, :, None])) & 0xFFFF
    ctx.mem.shared[offs] = (half & 0xFF).astype(np.uint8)
    ctx.mem.shared[offs + 1] = (half >> 8).astype(np.uint8)
