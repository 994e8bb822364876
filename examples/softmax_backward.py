"""The gradient of row softmax: ``dX = Y * (dY - sum(dY * Y, axis=-1))`` for ``Y =
softmax(X)``, in one pass over Y and dY (the backward of ``examples/softmax.py``, used by the
``tilewise::softmax`` torch op's autograd in ``examples/torch_ops.py``).

The rows are laid out in registers as in the forward kernel (``RowTiling``: ``R`` rows per
CTA, ``G`` threads per row, 16-byte vectors)::

    Tx.cta.copy(y, Y[rows]);  Tx.cta.copy(g, dY[rows])   # 16-byte vector loads
    Tx.cta.cast(yf, y);  Tx.cta.cast(gf, g)               # float32
    Tx.cta.mul(pf, yf, gf)
    Tx.cta.sum(d, pf, axes=-1)                            # per row: tree, shfl.sync, smem
    Tx.cta.sub(gf, gf, d);  Tx.cta.mul(gf, gf, yf)        # d broadcast over the row
    Tx.cta.cast(g, gf);  Tx.cta.copy(dX[rows], g)

Any width that fits one CTA's registers (partial tiles: a width the threads' vectors do not
divide is padded, the padding read as 0 and never written) and any row count (a symbolic
size). A row longer than the registers hold is split over the CTAs of a cluster (each
holds its part; their sums are added through distributed shared memory), and one longer
than 16 CTAs hold is walked in chunks by one CTA, twice (the sum, then the result; the
second pass reads the row again, from L2 where it still is).
Accuracy: float32 throughout, rounded once.
"""

import numpy as np

from tilewise import T, Tx
from tilewise.dsmem import cluster_sum
from tilewise.layout import RowTiling
from tilewise.layout.rows import check_row_args

TARGET = "sm_90a"
ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4}


BWD_ELEMS = 16  # of a row per thread at 1024 threads: Y, dY and three float32 tiles live


SPLIT_CTAS = (2, 4, 8, 16)  # a long row over this many CTAs of a cluster, the fewest that hold it


def split_tiling(rows: int, cols: int, dtype: str) -> RowTiling | None:
    """The tiling of a row too long for one CTA's registers over the fewest CTAs of a
    cluster (:data:`SPLIT_CTAS`) whose parts their registers hold, or None (longer)."""
    for c in SPLIT_CTAS:
        try:
            t = RowTiling.plan(RowTiling.plan_rows(rows), cols, ITEMSIZE[dtype], ctas=c,
                               max_elems=BWD_ELEMS)
        except ValueError:  # a part of this split would be empty
            continue
        if t.chunks == 1:
            return t
    return None


def make_softmax_backward(rows: int, cols: int, dtype: str = "float16",
                          threads: int | None = None, vectors: int | None = None,
                          chunk: int | None = None, split: bool = True):
    """A kernel ``k(Y, dY, dX)``, all ``rows x cols`` of ``dtype``: the gradient of the
    softmax over the last axis, given its output ``Y`` and the output's gradient ``dY``.
    Any row count (a symbolic size of the kernel) and any width: a row that fits one CTA's
    registers (``RowTiling`` with :data:`BWD_ELEMS`: 16384 halves or 8192 floats; partial
    tiles as in the forward kernel, the padding read as 0) in one pass; a longer one split
    over the fewest CTAs of a cluster that hold it in one pass (:func:`_split`, up to 16 x
    16384 halves) where its vectors are 8 bytes or more; a longer one still, one of an odd
    width (2-byte vectors), or any with ``split=False`` (or with ``chunk=``: chunks of about
    that many columns) by one CTA walking it in chunks twice (:func:`_chunked`)."""
    check_row_args(rows, cols, dtype, threads=threads, vectors=vectors, chunk=chunk)
    t = RowTiling.plan(RowTiling.plan_rows(rows), cols, ITEMSIZE[dtype], threads, vectors,
                       chunk=chunk, max_elems=BWD_ELEMS)
    if t.chunks > 1 and split and chunk is None and t.vec * ITEMSIZE[dtype] >= 8:
        ts = split_tiling(rows, cols, dtype)  # (rows of narrower vectors: one CTA measured
        # faster, 2210 against 2034 GB/s at 1024 x 50257 bf16, benchmarks/RESULTS.md)
        if ts is not None:
            return _split(cols, dtype, ts)
    if t.chunks > 1:
        return _chunked(cols, dtype, t)
    R_, W, layout, per_row, n = t.rows, t.cols, t.tile(), t.per_row(), t.regs
    M = T.int32()  # the row count, bound from the arrays at launch

    @T.prim_func
    def softmax_backward(Y_ptr: T.handle, dY_ptr: T.handle, dX_ptr: T.handle):
        Y = T.match_buffer(Y_ptr, (M, cols), dtype)
        dY = T.match_buffer(dY_ptr, (M, cols), dtype)
        dX = T.match_buffer(dX_ptr, (M, cols), dtype)
        T.device_entry()
        bx = T.cta_id([T.ceildiv(M, R_)])
        tid = T.thread_id([t.threads])  # noqa: F841 (the layouts name it as tx)
        y = T.alloc_local((n,), dtype).view(R_, W, layout=layout)
        g = T.alloc_local((n,), dtype).view(R_, W, layout=layout)
        yf = T.alloc_local((n,), "float32").view(R_, W, layout=layout)
        gf = T.alloc_local((n,), "float32").view(R_, W, layout=layout)
        pf = T.alloc_local((n,), "float32").view(R_, W, layout=layout)
        d = T.alloc_local((t.rows_per_thread,), "float32").view(R_, 1, layout=per_row)
        Tx.cta.copy(y, Y[bx * R_:bx * R_ + R_, 0:W], fill=0.0)  # past the row: 0,
        Tx.cta.copy(g, dY[bx * R_:bx * R_ + R_, 0:W], fill=0.0)  # adding 0 to the sum
        Tx.cta.cast(yf, y)
        Tx.cta.cast(gf, g)
        Tx.cta.mul(pf, yf, gf)
        Tx.cta.sum(d, pf, axes=-1)
        Tx.cta.sub(gf, gf, d)
        Tx.cta.mul(gf, gf, yf)
        Tx.cta.cast(g, gf)
        Tx.cta.copy(dX[bx * R_:bx * R_ + R_, 0:W], g)  # the columns and rows inside only

    return softmax_backward


def _split(cols: int, dtype: str, t: RowTiling):
    """A row split over the ``C`` CTAs of a cluster, each holding its part in registers:
    each CTA's sum of ``dY * Y`` over its part, added over the cluster in rank order
    (``tilewise.dsmem.cluster_sum``: the same sum in every CTA), then its part of the
    result. One read of Y and dY."""
    W, n, C = t.cols, t.regs, t.ctas
    layout, per_row = t.tile(), t.per_row()
    M = T.int32()

    @T.prim_func
    def softmax_backward_split(Y_ptr: T.handle, dY_ptr: T.handle, dX_ptr: T.handle):
        Y = T.match_buffer(Y_ptr, (M, cols), dtype)
        dY = T.match_buffer(dY_ptr, (M, cols), dtype)
        dX = T.match_buffer(dX_ptr, (M, cols), dtype)
        T.device_entry()
        bx = T.cta_id([M * C])
        rank = T.cta_id_in_cluster([C])  # this CTA's part of the row: columns rank * W ...
        tid = T.thread_id([t.threads])
        row = bx // C
        part = T.alloc_shared((C,), "float32")  # CTA c's sum of dY * Y
        T.ptx.barrier.cluster.arrive(relaxed=True, aligned=True)  # then every CTA has started
        y = T.alloc_local((n,), dtype).view(1, W, layout=layout)
        g = T.alloc_local((n,), dtype).view(1, W, layout=layout)
        yf = T.alloc_local((n,), "float32").view(1, W, layout=layout)
        gf = T.alloc_local((n,), "float32").view(1, W, layout=layout)
        pf = T.alloc_local((n,), "float32").view(1, W, layout=layout)
        dr = T.alloc_local((1,), "float32")
        d = dr.view(1, 1, layout=per_row)
        Tx.cta.copy(y, Y[row:row + 1, rank * W:rank * W + W], fill=0.0)  # the padding: 0
        Tx.cta.copy(g, dY[row:row + 1, rank * W:rank * W + W], fill=0.0)
        T.ptx.barrier.cluster.wait(aligned=True)  # with the loads in flight
        Tx.cta.cast(yf, y)
        Tx.cta.cast(gf, g)
        Tx.cta.mul(pf, yf, gf)
        Tx.cta.sum(d, pf, axes=-1)
        dr[0] = cluster_sum(part, dr[0], C, rank, tid)  # the row's sum
        Tx.cta.sub(gf, gf, d)
        Tx.cta.mul(gf, gf, yf)
        Tx.cta.cast(g, gf)
        Tx.cta.copy(dX[row:row + 1, rank * W:rank * W + W], g)  # the columns inside only

    return softmax_backward_split


def _chunked(cols: int, dtype: str, t: RowTiling):
    """A row longer than the registers hold: one CTA a row walks it in chunks twice. Pass 1
    adds each thread's ``dY * Y`` over the chunks (no barrier), then the threads' sums;
    pass 2 reads the chunks again, newest first (the likeliest still in L2), and writes
    ``Y * (dY - sum)``."""
    W, n, nc, G = t.cols, t.regs, t.chunks, t.threads_per_row
    layout, per_row = t.tile(), t.per_row()
    mine, one, spread = t.by_thread(), t.per_thread(), t.across_threads()
    M = T.int32()

    @T.prim_func
    def softmax_backward_chunked(Y_ptr: T.handle, dY_ptr: T.handle, dX_ptr: T.handle):
        Y = T.match_buffer(Y_ptr, (M, cols), dtype)
        dY = T.match_buffer(dY_ptr, (M, cols), dtype)
        dX = T.match_buffer(dX_ptr, (M, cols), dtype)
        T.device_entry()
        bx = T.cta_id([M])
        tid = T.thread_id([t.threads])  # noqa: F841 (the layouts name it as tx)
        y = T.alloc_local((n,), dtype).view(1, W, layout=layout)
        g = T.alloc_local((n,), dtype).view(1, W, layout=layout)
        yf = T.alloc_local((n,), "float32").view(1, W, layout=layout)
        gf = T.alloc_local((n,), "float32").view(1, W, layout=layout)
        pr = T.alloc_local((n,), "float32")
        pf = pr.view(1, W, layout=layout)
        sr = T.alloc_local((1,), "float32")  # this thread's sum of dY * Y
        s = sr.view(G, 1, layout=one)
        d = T.alloc_local((1,), "float32").view(1, 1, layout=per_row)
        Tx.cta.fill(s, 0.0)
        for c in range(nc):  # pass 1: per thread (the padding reads as 0, adding 0)
            Tx.cta.copy(y, Y[bx:bx + 1, c * W:c * W + W], fill=0.0)
            Tx.cta.copy(g, dY[bx:bx + 1, c * W:c * W + W], fill=0.0)
            Tx.cta.cast(yf, y)
            Tx.cta.cast(gf, g)
            Tx.cta.mul(pf, yf, gf)
            Tx.cta.sum(s, pr.view(G, n, layout=mine), axes=-1, accum=True)
        Tx.cta.sum(d, sr.view(1, G, layout=spread), axes=-1)  # the row's sum
        for c in range(nc):  # pass 2, newest chunk first
            c0 = (nc - 1 - c) * W
            Tx.cta.copy(y, Y[bx:bx + 1, c0:c0 + W])
            Tx.cta.copy(g, dY[bx:bx + 1, c0:c0 + W])
            Tx.cta.cast(yf, y)
            Tx.cta.cast(gf, g)
            Tx.cta.sub(gf, gf, d)
            Tx.cta.mul(gf, gf, yf)
            Tx.cta.cast(g, gf)
            Tx.cta.copy(dX[bx:bx + 1, c0:c0 + W], g)  # the columns inside only

    return softmax_backward_chunked


SHAPE = (64, 1024)
softmax_backward = make_softmax_backward(*SHAPE, "float16")
RTOL = 2.0 ** -8
ATOL = 2.0 ** -14


def inputs(rng, shape=SHAPE, dtype="float16"):
    x = rng.standard_normal(shape) * 2
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    y = (e / e.sum(axis=-1, keepdims=True)).astype(dtype)
    return [y, rng.standard_normal(shape).astype(dtype), np.full(shape, np.nan, dtype)]


def reference(y, dy, dx):
    yf, gf = y.astype(np.float64), dy.astype(np.float64)
    d = (yf * gf).sum(axis=-1, keepdims=True)
    return [y, dy, (yf * (gf - d)).astype(y.dtype)]
