"""RMSNorm ``Y = X / sqrt(mean(X^2, axis=-1) + eps) * W`` for any width, written with the
tile compute primitives (as ``torch.nn.functional.rms_norm(X, (cols,), W, eps)``).

The rows are laid out in registers as in ``examples/softmax.py``
(``tilewise.layout.RowTiling``: ``R`` rows per CTA, ``G`` threads per row, ``K`` vectors of
up to 16 bytes per thread); a width the tile does not divide is a partial tile (the copies
clip it: zeros past the end of a row, which add nothing to the sum of squares, and no
stores there). The weight row ``W`` is loaded once per CTA into a register tile replicated
over the CTA's rows (``RowTiling.columns()``), so each thread holds exactly the weights of
its columns. A row that fits registers is one pass::

    Tx.cta.copy(x, X[rows, 0:W]);  Tx.cta.copy(w, W[0:W])   # 16-byte loads, guarded
    Tx.cta.cast(xf, x)                                       # float32
    Tx.cta.mul(sq, xf, xf)
    Tx.cta.sum(r, sq, axes=-1)                               # tree, shfl.sync, smem
    Tx.cta.rsqrt(r, r, scale=1 / cols, bias=eps)             # rsqrt.approx.f32
    Tx.cta.mul(xf, xf, r);  Tx.cta.cast(wf, w)               # w converted after the sum
    Tx.cta.mul(xf, xf, wf)
    Tx.cta.cast(x, xf);  Tx.cta.copy(Y[rows, 0:W], x)        # cvt pairs, 16-byte stores

A longer row is walked in chunks twice: the sum of squares (each thread its own, in its
registers: no barrier per chunk; then one reduction across the threads), then (newest chunk
first, the likeliest to be in L2) the normalisation with the chunk's weights.

A row too long for one CTA's registers is **split over a cluster** of 2, 4 or 8 CTAs, as in
``examples/softmax.py``: each CTA takes a part of the row (one pass, or chunked with the part
kept in shared memory up to 96 KB: ``RowTiling.staged``), hands its part's sum of squares
to every CTA of the cluster and adds the C sums in rank order (``tilewise.dsmem.cluster_sum``:
``T.ptx.st_cluster``, then a cluster barrier on which only the senders' warp arrives with
release), so every part is scaled by the same ``rsqrt``.

Accuracy: float32 throughout; ``rsqrt.approx.f32`` has a relative error of at most
2^-22.9 (PTX ISA); the result is rounded once to the output type.
"""

import functools

import numpy as np

import tilewise
from tilewise import T, Tx
from tilewise.dsmem import cluster_sum
from tilewise.layout import RowTiling
from tilewise.layout.rows import check_row_args, row_configs

TARGET = "sm_90a"
ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4}
MAX_ELEMS = 24  # of a row per thread at 1024 threads: X, its square and W live together
SPLIT_ELEMS = 32  # the same for a one-pass split row (X's float32 copy is not kept)
MAX_CTAS = 16  # CTAs a row may be split over (a cluster; plans take at most 8, the
#              portable size; 16 is a tuner candidate for the longest rows)


def make_rmsnorm(rows: int, cols: int, dtype: str = "float16", eps: float = 1e-6,
                 threads: int | None = None, vectors: int | None = None):
    """A kernel ``k(X, W, Y)``: X and Y ``rows x cols``, W ``cols``, all of ``dtype``, any
    ``rows, cols >= 1`` (the row count is a symbolic size: ``rows`` only shapes the plan).
    Without ``threads``/``vectors`` the kernel is tuned on its first
    launch (``tilewise.autotune`` over :func:`configs`); in ``tw.simulate`` and
    ``tw.compile`` it is the planned configuration."""
    check_row_args(rows, cols, dtype, threads=threads, vectors=vectors)
    if threads is not None or vectors is not None:
        return rmsnorm_kernel(rows, cols, dtype, eps, threads, vectors)
    rows = RowTiling.plan_rows(rows)  # the kernel takes any row count: share it
    return tilewise.autotune(functools.partial(rmsnorm_kernel, rows, cols, dtype, eps),
                             configs=configs(rows, cols, dtype))


def configs(rows: int, cols: int, dtype: str) -> list[dict]:
    """The candidates the tuner times, the plan first (``tilewise.layout.rows.row_configs``:
    other CTA sizes, vectors per thread and CTAs per row), and where a row's parts take four
    chunks or more, the chunked 512-thread and 16-CTA splits again with ``prefetch=True``:
    on the H200 such forms gained 1-3 % at 262144 and 524288 columns and lost 5-11 % on
    others (the second buffer's registers; benchmarks/RESULTS.md, "RMSNorm's weights
    prefetched"), so only the tuner takes them, where they win."""
    out = row_configs(rows, cols, ITEMSIZE[dtype], MAX_ELEMS, MAX_CTAS, SPLIT_ELEMS)
    base = RowTiling.plan(rows, cols, ITEMSIZE[dtype], max_elems=MAX_ELEMS, max_ctas=MAX_CTAS,
                          split_elems=SPLIT_ELEMS)
    if base.ctas > 1 and base.chunks >= 4:
        out += [{**c, "prefetch": True} for c in out
                if "chunk" in c and (c.get("threads") == 512 or c.get("ctas") == 16)]
    return out


def rmsnorm_kernel(rows: int, cols: int, dtype: str = "float16", eps: float = 1e-6,
                   threads: int | None = None, vectors: int | None = None,
                   chunk: int | None = None, ctas: int | None = None, prefetch: bool = False):
    """The kernel for one configuration (:meth:`RowTiling.plan`; ``ctas=1``: no cluster).
    ``prefetch`` (a row walked in chunks): pass 2 reads each chunk's weights one chunk
    ahead, the first while the parts' sums are exchanged (a second register buffer)."""
    check_row_args(rows, cols, dtype, threads=threads, vectors=vectors, chunk=chunk, ctas=ctas)
    t = RowTiling.plan(rows, cols, ITEMSIZE[dtype], threads, vectors, chunk, MAX_ELEMS, ctas,
                       MAX_CTAS, SPLIT_ELEMS)
    if t.chunks > 1:
        return _chunked(rows, cols, dtype, eps, t, prefetch)
    if t.ctas > 1:
        return _split(rows, cols, dtype, eps, t)
    return _one_pass(rows, cols, dtype, eps, t)


def _one_pass(rows: int, cols: int, dtype: str, eps: float, t: RowTiling):
    R_, W_, n, rt = t.rows, t.cols, t.regs, t.rows_per_thread
    layout, per_row, weights = t.tile(), t.per_row(), t.columns()
    nw = t.vectors * t.vec
    M = T.int32()  # the row count, bound from the arrays at launch

    @T.prim_func
    def rmsnorm(X_ptr: T.handle, W_ptr: T.handle, Y_ptr: T.handle):
        X = T.match_buffer(X_ptr, (M, cols), dtype)
        W = T.match_buffer(W_ptr, (cols,), dtype)
        Y = T.match_buffer(Y_ptr, (M, cols), dtype)
        T.device_entry()
        bx = T.cta_id([T.ceildiv(M, R_)])
        tid = T.thread_id([t.threads])  # noqa: F841 (the layouts name it as tx)
        x = T.alloc_local((n,), dtype).view(R_, W_, layout=layout)
        xf = T.alloc_local((n,), "float32").view(R_, W_, layout=layout)
        sq = T.alloc_local((n,), "float32").view(R_, W_, layout=layout)
        w = T.alloc_local((nw,), dtype).view(W_, layout=weights)
        wf = T.alloc_local((nw,), "float32").view(W_, layout=weights)
        r = T.alloc_local((rt,), "float32").view(R_, 1, layout=per_row)
        Tx.cta.copy(x, X[bx * R_:bx * R_ + R_, 0:W_])
        Tx.cta.copy(w, W[0:W_])
        Tx.cta.cast(xf, x)
        Tx.cta.mul(sq, xf, xf)
        Tx.cta.sum(r, sq, axes=-1)
        Tx.cta.rsqrt(r, r, scale=1.0 / cols, bias=eps)
        Tx.cta.mul(xf, xf, r)
        Tx.cta.cast(wf, w)  # here, not before the sum: w stays 16-bit across it
        Tx.cta.mul(xf, xf, wf)
        Tx.cta.cast(x, xf)
        Tx.cta.copy(Y[bx * R_:bx * R_ + R_, 0:W_], x)

    return rmsnorm


def _split(rows: int, cols: int, dtype: str, eps: float, t: RowTiling):
    W_, n, C = t.cols, t.regs, t.ctas
    layout, per_row, weights = t.tile(), t.per_row(), t.columns()
    M = T.int32()

    @T.prim_func
    def rmsnorm_split(X_ptr: T.handle, W_ptr: T.handle, Y_ptr: T.handle):
        X = T.match_buffer(X_ptr, (M, cols), dtype)
        W = T.match_buffer(W_ptr, (cols,), dtype)
        Y = T.match_buffer(Y_ptr, (M, cols), dtype)
        T.device_entry()
        bx = T.cta_id([M * C])
        rank = T.cta_id_in_cluster([C])  # this CTA's part of the row: columns rank * W_ ...
        tid = T.thread_id([t.threads])
        row = bx // C
        part = T.alloc_shared((C,), "float32")  # CTA c's sum of squares
        T.ptx.barrier.cluster.arrive(relaxed=True, aligned=True)  # then every CTA has started
        x = T.alloc_local((n,), dtype).view(1, W_, layout=layout)
        xf = T.alloc_local((n,), "float32").view(1, W_, layout=layout)
        sq = T.alloc_local((n,), "float32").view(1, W_, layout=layout)
        w = T.alloc_local((n,), dtype).view(W_, layout=weights)
        wf = T.alloc_local((n,), "float32").view(W_, layout=weights)
        rr = T.alloc_local((1,), "float32")
        r = rr.view(1, 1, layout=per_row)
        Tx.cta.copy(x, X[row:row + 1, rank * W_:rank * W_ + W_])
        Tx.cta.copy(w, W[rank * W_:rank * W_ + W_])
        T.ptx.barrier.cluster.wait(aligned=True)  # with the loads in flight
        Tx.cta.cast(xf, x)
        Tx.cta.mul(sq, xf, xf)
        Tx.cta.sum(r, sq, axes=-1)
        rr[0] = cluster_sum(part, rr[0], C, rank, tid)
        Tx.cta.rsqrt(r, r, scale=1.0 / cols, bias=eps)
        Tx.cta.cast(xf, x)  # again: x, half the registers, is what lived across
        Tx.cta.mul(xf, xf, r)
        Tx.cta.cast(wf, w)
        Tx.cta.mul(xf, xf, wf)
        Tx.cta.cast(x, xf)
        Tx.cta.copy(Y[row:row + 1, rank * W_:rank * W_ + W_], x)

    return rmsnorm_split


def _chunked(rows: int, cols: int, dtype: str, eps: float, t: RowTiling,
             prefetch: bool = False):
    W_, n, nc, G, C = t.cols, t.regs, t.chunks, t.threads_per_row, t.ctas
    P = t.part_cols  # columns of a CTA's part of the row (all of it without a cluster)
    stage = t.staged(ITEMSIZE[dtype])  # pass 2 from shared memory
    layout, per_row, weights = t.tile(), t.per_row(), t.columns()
    mine, one, spread = t.by_thread(), t.per_thread(), t.across_threads()
    M = T.int32()

    @T.prim_func
    def rmsnorm_chunked(X_ptr: T.handle, W_ptr: T.handle, Y_ptr: T.handle):
        X = T.match_buffer(X_ptr, (M, cols), dtype)
        W = T.match_buffer(W_ptr, (cols,), dtype)
        Y = T.match_buffer(Y_ptr, (M, cols), dtype)
        T.device_entry()
        bx = T.cta_id([M * C])
        tid = T.thread_id([t.threads])
        row = bx // C
        base = 0  # the part's first column
        if C > 1:
            rank = T.cta_id_in_cluster([C])
            base = rank * P
            part = T.alloc_shared((C,), "float32")
            T.ptx.barrier.cluster.arrive(relaxed=True, aligned=True)
        x = T.alloc_local((n,), dtype).view(1, W_, layout=layout)
        fr = T.alloc_local((n,), "float32")
        xf = fr.view(1, W_, layout=layout)
        xt = fr.view(G, n, layout=mine)  # the same registers, a row per thread
        w = T.alloc_local((n,), dtype).view(W_, layout=weights)
        if prefetch:
            wn = T.alloc_local((n,), dtype).view(W_, layout=weights)  # the next chunk's
        wf = T.alloc_local((n,), "float32").view(W_, layout=weights)
        qr = T.alloc_local((1,), "float32")  # this thread's sum of squares
        q = qr.view(G, 1, layout=one)
        rr = T.alloc_local((1,), "float32")
        r = rr.view(1, 1, layout=per_row)
        if stage:  # each thread keeps its own vectors there: no barrier between the passes
            Xs = T.alloc_buffer((nc, W_), dtype, scope="shared.dyn", align=16)
        Tx.cta.fill(q, 0.0)
        for c in range(nc):  # pass 1: per thread (no barrier)
            Tx.cta.copy(x, X[row:row + 1, base + c * W_:base + c * W_ + W_])
            if stage:
                Tx.cta.copy(Xs[c:c + 1, :], x)
            Tx.cta.cast(xf, x)
            Tx.cta.mul(xf, xf, xf)
            Tx.cta.sum(q, xt, axes=-1, accum=True)
        if prefetch:  # pass 2's first weights, read while the sums are combined
            Tx.cta.copy(w, W[base + (nc - 1) * W_:base + nc * W_])
        Tx.cta.sum(r, qr.view(1, G, layout=spread), axes=-1)  # across the threads
        if C > 1:  # the parts of the row
            T.ptx.barrier.cluster.wait(aligned=True)
            rr[0] = cluster_sum(part, rr[0], C, rank, tid)
        Tx.cta.rsqrt(r, r, scale=1.0 / cols, bias=eps)
        for c in range(nc):  # pass 2, newest chunk first
            c0 = base + (nc - 1 - c) * W_
            if stage:
                Tx.cta.copy(x, Xs[nc - 1 - c:nc - c, :])
            else:
                Tx.cta.copy(x, X[row:row + 1, c0:c0 + W_])
            if not prefetch:
                Tx.cta.copy(w, W[c0:c0 + W_])
            elif c < nc - 1:  # the next chunk's weights, in flight while this one is
                cn = base + (nc - 2 - c) * W_  # scaled and stored
                Tx.cta.copy(wn, W[cn:cn + W_])
            Tx.cta.cast(xf, x)
            Tx.cta.cast(wf, w)
            Tx.cta.mul(xf, xf, r)
            Tx.cta.mul(xf, xf, wf)
            Tx.cta.cast(x, xf)
            Tx.cta.copy(Y[row:row + 1, c0:c0 + W_], x)
            if prefetch and c < nc - 1:
                Tx.cta.cast(w, wn)  # (the same type: a register move)

    return rmsnorm_chunked


SHAPE = (16, 2048)
rmsnorm = rmsnorm_kernel(*SHAPE, "float16")
RTOL = 2.0 ** -9  # float16 rounding of the result (2^-11) plus the float32 steps
ATOL = 2.0 ** -14  # float16's smallest normal


def inputs(rng, shape=SHAPE, dtype="float16"):
    x = rng.standard_normal(shape).astype(dtype)
    w = (1 + 0.5 * rng.standard_normal(shape[-1])).astype(dtype)
    return [x, w, np.zeros(shape, dtype)]


def reference(x, w, y, eps: float = 1e-6):
    xf = x.astype(np.float64)
    rms = 1 / np.sqrt((xf * xf).mean(axis=-1, keepdims=True) + eps)
    return [x, w, (xf * rms * w.astype(np.float64)).astype(x.dtype)]


def bytes_moved(rows: int, cols: int, dtype: str) -> int:
    """Bytes read and written: X once, Y once, W once (per kernel)."""
    return (2 * rows * cols + cols) * ITEMSIZE[dtype]
