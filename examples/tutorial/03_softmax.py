"""Tutorial step 3: a row softmax, Y = softmax(X) over the last axis (docs/tutorial.md).

X and Y are (rows, cols) float32. One warp owns one row and keeps all of it in registers:
lane ``l`` holds ``cols / 32`` elements, as ``cols / 128`` vectors of 4 consecutive floats
(16 bytes), the vectors of the 32 lanes side by side so that a warp's load is 512
contiguous bytes (coalesced, 16-byte ``ld.global.v4``)::

    x = S[(W, K, 32, 4) : (1@warpid, 4, 1@laneid, 1)]      # W rows per CTA, K vectors

Element ``(r, c)`` of the CTA's ``W`` rows is in warp ``r``, lane ``c // 4 % 32``, register
``4 (c // 128) + c % 4``. A per-row value (the maximum, the sum) is one element per row,
held by every lane of the row's warp (a *replica* over the lanes)::

    m = S[(W, 1) : (1@warpid, 1)] + R[32 : 1@laneid]

so ``Tx.cta.max(m, x, axes=-1)`` reduces each lane's registers, then across the warp with
``shfl.sync`` (no shared memory, no barrier), and every lane gets the result; the
broadcasts back over the row (``x - m``, ``x * s``) read registers. The row is read from
global memory once and written once.

Registers vs shared memory: a row must fit the lanes' registers (up to a few thousand
floats per warp). ``examples/softmax.py`` picks the tiling for any width (several warps per
row, reduced through shared memory, and a staged-in-shared-memory kernel for rows too wide
for registers).
"""

import numpy as np

from tilewise import T, Tx
from tilewise.layout import R, S, laneid, warpid

TARGET = "sm_90a"
W = 4  # rows (warps) per CTA


def make_softmax(rows: int, cols: int):
    """``k(X, Y)``: Y = softmax(X, axis=-1), float32, ``rows`` a multiple of 4 and
    ``cols`` of 128."""
    if rows % W or cols % 128:
        raise ValueError(f"rows={rows}, cols={cols}: rows a multiple of {W}, cols of 128")
    K = cols // 128
    row_tile = S[(W, K, 32, 4):(1 @ warpid, 4, 1 @ laneid, 1)]
    per_row = S[(W, 1):(1 @ warpid, 1)] + R[32:1 @ laneid]

    @T.prim_func
    def softmax(X_ptr: T.handle, Y_ptr: T.handle):
        X = T.match_buffer(X_ptr, (rows, cols), "float32")
        Y = T.match_buffer(Y_ptr, (rows, cols), "float32")
        T.device_entry()
        bx = T.cta_id([rows // W])
        T.warp_id([W])
        T.lane_id([32])
        x = T.alloc_local((W, cols), "float32", layout=row_tile)  # cols / 32 per lane
        m = T.alloc_local((W, 1), "float32", layout=per_row)
        s = T.alloc_local((W, 1), "float32", layout=per_row)
        r0 = bx * W
        Tx.cta.copy(x[:, :], X[r0:r0 + W, :])  # 16-byte loads, coalesced
        Tx.cta.max(m[:, :], x[:, :], axes=-1)  # in-lane, then shfl.sync across the warp
        Tx.cta.sub(x[:, :], x[:, :], m[:, :])  # x - max: e^x cannot overflow
        Tx.cta.exp(x[:, :])
        Tx.cta.sum(s[:, :], x[:, :], axes=-1)
        Tx.cta.reciprocal(s[:, :])
        Tx.cta.mul(x[:, :], x[:, :], s[:, :])
        Tx.cta.copy(Y[r0:r0 + W, :], x[:, :])

    return softmax


SHAPE = (64, 512)
softmax = make_softmax(*SHAPE)
RTOL = 2.0 ** -18  # ex2.approx.f32 (2^-22.5) of an argument rounded to float32, float32 sums
ATOL = 2.0 ** -30


def inputs(rng, shape=SHAPE):
    return [(rng.standard_normal(shape) * 4).astype(np.float32),
            np.full(shape, np.nan, np.float32)]


def reference(x, y):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    return [x, (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)]
