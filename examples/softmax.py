"""Row softmax ``Y = softmax(X, axis=-1)`` for any width, written with the tile compute
primitives: a row that fits the registers of a CTA is read once, reduced and normalised
there and written once; a longer row is split over the CTAs of a cluster, each walking its
part in chunks (an online max and sum, then the chunks again, newest first, to normalise
them) and handing its part's max and sum to the others through distributed shared memory.

The register layout is ``tilewise.layout.RowTiling`` (``R`` rows per CTA, ``G`` threads per
row, ``K`` vectors of up to 16 bytes per thread, interleaved so a warp's accesses are
contiguous). A width the tile does not divide (3000 halves over 128 threads x 3 x 8) is a
**partial tile**: the copy clips it at the array's end, loading ``-inf`` (``fill=``) for
the columns past it and storing only the columns inside; rows past the last one are
clipped the same way. One pass, for a row in registers::

    Tx.cta.copy(x, X[rows, 0:W], fill=-inf)   # W >= cols: 16-byte loads, guarded at the end
    Tx.cta.cast(xf, x)                        # float32
    Tx.cta.max(m, xf, axes=-1)                # in-thread tree, shfl.sync, smem across warps
    Tx.cta.mul(m, m, -1.0)
    Tx.cta.exp(xf, xf, bias=m)                # e^(x - max); the -inf columns give 0
    Tx.cta.sum(s, xf, axes=-1)
    Tx.cta.reciprocal(s)
    Tx.cta.mul(xf, xf, s)
    Tx.cta.cast(x, xf)                        # cvt.rn.{f16x2,bf16x2}.f32 pairs
    Tx.cta.copy(Y[rows, 0:W], x)              # 16-byte stores, the columns inside only

A chunked row keeps, in each thread, ``m`` (its running maximum) and ``s`` (its running sum
of ``e^(x - m)``, rescaled by ``e^(m_old - m_new)`` when the maximum grows): the reductions
of a chunk stay in the thread's registers (the chunk's registers viewed as one row per
thread, ``RowTiling.by_thread()``), so the chunks need no barrier. Then the row's maximum
and sum across the threads (two reductions), and the chunks again in reverse order (the
last one read is the likeliest still in L2) to write ``e^(x - max) / sum``: two reads and
one write of the row.

**Split over a cluster** (``RowTiling.ctas`` = 2, 4 or 8 CTAs per row; the plan for rows
too long for one CTA, and a tuner candidate for wide rows with few of them): CTA rank r
takes columns ``[r * P, r * P + P)``, one pass in registers or chunked as above (its part
kept in shared memory when it fits 96 KB, ``RowTiling.staged``, so the second pass does
not read global memory again); then thread r of each CTA stores the part's max and sum into CTA r
(``T.ptx.st_cluster``, ``st.shared::cluster``), a cluster barrier publishes them (the
senders' warp arrives with release, the others ``.relaxed``:
``tilewise.dsmem.cluster_sync_sent``, 0-5 % faster on the H200 than every warp
releasing), and every CTA combines the C pairs in rank order (the row's max ``M`` and
``sum_r s_r e^(m_r - M)``, libdevice ``expf``), so all parts are normalised alike. A relaxed
cluster-barrier arrive at the start and its wait before the first store make sure every
CTA of the cluster has started.

Accuracy: float32 inside, the result rounded once to the output type. ``exp`` is
``ex2.approx.f32`` of ``t * log2(e)`` rounded to float32 (t = x - max <= 0): relative error
at most 2^-22.5 (the instruction) plus |t| * 2^-23.4 (the rounding of the product), so at
most 2^-19.2 for every result a float16 can represent (|t| <= 16.7), 2^-17 for the
smallest float32/bfloat16 results (|t| near 87). Sums and the reciprocal are IEEE float32.
"""

import functools

import numpy as np

import tilewise
from tilewise import T, Tx
from tilewise.dsmem import cluster_sync_sent
from tilewise.layout import RowTiling
from tilewise.layout.rows import check_row_args, row_configs

TARGET = "sm_90a"
ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4}
NEG_INF = float("-inf")
MAX_CTAS = 16  # CTAs a row may be split over (a cluster; plans take at most 8, the
#              portable size; 16 is a tuner candidate for the longest rows)


def make_softmax(rows: int, cols: int, dtype: str = "float16", threads: int | None = None,
                 vectors: int | None = None):
    """A kernel ``k(X, Y)``: ``Y = softmax(X)`` over the last axis, X and Y ``rows x cols``
    of ``dtype`` (float16, bfloat16 or float32), any ``rows, cols >= 1`` (the row count is
    a symbolic size of the kernel: ``rows`` only shapes the plan, any count runs).

    Without ``threads``/``vectors`` the kernel is tuned on its first launch
    (``tilewise.autotune`` over :func:`configs`, the winner cached on disk); in
    ``tw.simulate`` and ``tw.compile`` it is the planned configuration (the first)."""
    check_row_args(rows, cols, dtype, threads=threads, vectors=vectors)
    if threads is not None or vectors is not None:
        return softmax_kernel(rows, cols, dtype, threads, vectors)
    rows = RowTiling.plan_rows(rows)  # the kernel takes any row count: share it
    return tilewise.autotune(functools.partial(softmax_kernel, rows, cols, dtype),
                             configs=configs(rows, cols, dtype))


def configs(rows: int, cols: int, dtype: str) -> list[dict]:
    """The candidates the tuner times, the plan first (``tilewise.layout.rows.row_configs``:
    other CTA sizes, vectors per thread and CTAs per row)."""
    return row_configs(rows, cols, ITEMSIZE[dtype], max_ctas=MAX_CTAS)


def softmax_kernel(rows: int, cols: int, dtype: str = "float16", threads: int | None = None,
                   vectors: int | None = None, chunk: int | None = None,
                   ctas: int | None = None):
    """The kernel for one configuration (:meth:`RowTiling.plan` with ``threads``,
    ``vectors``, ``chunk`` and ``ctas``; ``ctas=1``: no cluster)."""
    check_row_args(rows, cols, dtype, threads=threads, vectors=vectors, chunk=chunk, ctas=ctas)
    t = RowTiling.plan(rows, cols, ITEMSIZE[dtype], threads, vectors, chunk, ctas=ctas,
                       max_ctas=MAX_CTAS)
    if t.chunks > 1:
        return _chunked(rows, cols, dtype, t)
    if t.ctas > 1:
        return _split(rows, cols, dtype, t)
    return _one_pass(rows, cols, dtype, t)


def _one_pass(rows: int, cols: int, dtype: str, t: RowTiling):
    R_, W, n, rt = t.rows, t.cols, t.regs, t.rows_per_thread
    layout, per_row = t.tile(), t.per_row()
    M = T.int32()  # the row count, bound from the arrays at launch

    @T.prim_func
    def softmax(X_ptr: T.handle, Y_ptr: T.handle):
        X = T.match_buffer(X_ptr, (M, cols), dtype)
        Y = T.match_buffer(Y_ptr, (M, cols), dtype)
        T.device_entry()
        bx = T.cta_id([T.ceildiv(M, R_)])
        tid = T.thread_id([t.threads])  # noqa: F841 (the layouts name it as tx)
        xr = T.alloc_local((n,), dtype)
        x = xr.view(R_, W, layout=layout)
        fr = T.alloc_local((n,), "float32")
        xf = fr.view(R_, W, layout=layout)
        mr = T.alloc_local((rt,), "float32")
        m = mr.view(R_, 1, layout=per_row)
        sr = T.alloc_local((rt,), "float32")
        s = sr.view(R_, 1, layout=per_row)
        Tx.cta.copy(x, X[bx * R_:bx * R_ + R_, 0:W], fill=NEG_INF)
        Tx.cta.cast(xf, x)
        Tx.cta.max(m, xf, axes=-1)
        Tx.cta.mul(m, m, -1.0)
        Tx.cta.exp(xf, xf, bias=m)
        Tx.cta.sum(s, xf, axes=-1)
        Tx.cta.reciprocal(s)
        Tx.cta.mul(xf, xf, s)
        Tx.cta.cast(x, xf)
        Tx.cta.copy(Y[bx * R_:bx * R_ + R_, 0:W], x)

    return softmax


@T.inline
def exchange(part, m, s, C, rank, tid):
    """Hand this CTA's part of a row split over the cluster -- its maximum ``m`` and its sum
    ``s`` of e^(x - m) -- to every CTA of the cluster (thread r stores into CTA r), and
    combine all the parts: the row's maximum and its sum of e^(x - max), the same in every
    CTA (added in rank order)."""
    if tid < C:
        T.ptx.st_cluster(T.address_of(part[0, rank]), m, tid)
        T.ptx.st_cluster(T.address_of(part[1, rank]), s, tid)
    cluster_sync_sent(tid, C)  # the senders release their stores; all acquire
    top: T.float32 = part[0, 0]
    for r in range(1, C):
        top = T.max(top, part[0, r])
    total: T.float32 = 0.0
    for r in range(C):
        total = total + part[1, r] * T.exp(part[0, r] - top)
    return top, total


def _split(rows: int, cols: int, dtype: str, t: RowTiling):
    W, n, C = t.cols, t.regs, t.ctas
    layout, per_row = t.tile(), t.per_row()
    M = T.int32()

    @T.prim_func
    def softmax_split(X_ptr: T.handle, Y_ptr: T.handle):
        X = T.match_buffer(X_ptr, (M, cols), dtype)
        Y = T.match_buffer(Y_ptr, (M, cols), dtype)
        T.device_entry()
        bx = T.cta_id([M * C])
        rank = T.cta_id_in_cluster([C])  # this CTA's part of the row: columns rank * W ...
        tid = T.thread_id([t.threads])
        row = bx // C
        part = T.alloc_shared((2, C), "float32")  # CTA r's maximum and sum of e^(x - max)
        T.ptx.barrier.cluster.arrive(relaxed=True, aligned=True)  # then every CTA has started
        x = T.alloc_local((n,), dtype).view(1, W, layout=layout)
        xf = T.alloc_local((n,), "float32").view(1, W, layout=layout)
        mr = T.alloc_local((1,), "float32")
        m = mr.view(1, 1, layout=per_row)
        sr = T.alloc_local((1,), "float32")
        s = sr.view(1, 1, layout=per_row)
        Tx.cta.copy(x, X[row:row + 1, rank * W:rank * W + W], fill=NEG_INF)
        T.ptx.barrier.cluster.wait(aligned=True)  # with the loads in flight
        Tx.cta.cast(xf, x)
        Tx.cta.max(m, xf, axes=-1)
        Tx.cta.mul(m, m, -1.0)
        Tx.cta.exp(xf, xf, bias=m)  # e^(x - this part's max)
        Tx.cta.sum(s, xf, axes=-1)
        top, total = exchange(part, -mr[0], sr[0], C, rank, tid)
        sr[0] = T.exp(-mr[0] - top) / total  # this part's e^(x - its max) -> the result
        Tx.cta.mul(xf, xf, s)
        Tx.cta.cast(x, xf)
        Tx.cta.copy(Y[row:row + 1, rank * W:rank * W + W], x)

    return softmax_split


def _chunked(rows: int, cols: int, dtype: str, t: RowTiling):
    W, n, nc, G, C = t.cols, t.regs, t.chunks, t.threads_per_row, t.ctas
    P = t.part_cols  # columns of a CTA's part of the row (all of it without a cluster)
    stage = t.staged(ITEMSIZE[dtype])  # pass 2 from shared memory
    layout, per_row = t.tile(), t.per_row()
    mine, one, spread = t.by_thread(), t.per_thread(), t.across_threads()
    M = T.int32()

    @T.prim_func
    def softmax_chunked(X_ptr: T.handle, Y_ptr: T.handle):
        X = T.match_buffer(X_ptr, (M, cols), dtype)
        Y = T.match_buffer(Y_ptr, (M, cols), dtype)
        T.device_entry()
        bx = T.cta_id([M * C])
        tid = T.thread_id([t.threads])
        row = bx // C
        base = 0  # the part's first column
        if C > 1:
            rank = T.cta_id_in_cluster([C])
            base = rank * P
            part = T.alloc_shared((2, C), "float32")
            T.ptx.barrier.cluster.arrive(relaxed=True, aligned=True)
        xr = T.alloc_local((n,), dtype)
        x = xr.view(1, W, layout=layout)
        fr = T.alloc_local((n,), "float32")
        xf = fr.view(1, W, layout=layout)
        xt = fr.view(G, n, layout=mine)  # the same registers, a row per thread
        mr = T.alloc_local((1,), "float32")  # this thread's running max
        m = mr.view(G, 1, layout=one)
        mc = T.alloc_local((1,), "float32").view(G, 1, layout=one)
        nm = T.alloc_local((1,), "float32").view(G, 1, layout=one)
        sr = T.alloc_local((1,), "float32")  # this thread's running sum of e^(x - m)
        s = sr.view(G, 1, layout=one)
        br = T.alloc_local((1,), "float32")
        big = br.view(1, 1, layout=per_row)
        tr = T.alloc_local((1,), "float32")
        total = tr.view(1, 1, layout=per_row)
        if stage:  # each thread keeps its own vectors there: no barrier between the passes
            Xs = T.alloc_buffer((nc, W), dtype, scope="shared.dyn", align=16)
        Tx.cta.fill(m, NEG_INF)
        Tx.cta.fill(s, 0.0)
        for c in range(nc):  # pass 1: per thread, an online max and sum (no barrier)
            Tx.cta.copy(x, X[row:row + 1, base + c * W:base + c * W + W], fill=NEG_INF)
            if stage:
                Tx.cta.copy(Xs[c:c + 1, :], x)
            Tx.cta.cast(xf, x)
            Tx.cta.max(mc, xt, axes=-1)
            Tx.cta.maximum(mc, mc, m)
            Tx.cta.mul(nm, mc, -1.0)
            Tx.cta.exp(m, m, bias=nm)  # e^(m_old - m_new) rescales the sum so far
            Tx.cta.mul(s, s, m)
            Tx.cta.exp(xt, xt, bias=nm)
            Tx.cta.sum(s, xt, axes=-1, accum=True)
            Tx.cta.cast(m, mc)
        Tx.cta.max(big, mr.view(1, G, layout=spread), axes=-1)  # the part's max
        Tx.cta.mul(big, big, -1.0)
        Tx.cta.exp(m, m, bias=big)  # each thread's sum rescaled to the part's max
        Tx.cta.mul(s, s, m)
        Tx.cta.sum(total, sr.view(1, G, layout=spread), axes=-1)
        if C > 1:  # the parts of the row: its max and sum
            T.ptx.barrier.cluster.wait(aligned=True)
            top, whole = exchange(part, -br[0], tr[0], C, rank, tid)
            br[0] = -top
            tr[0] = whole
        Tx.cta.reciprocal(total)
        for c in range(nc):  # pass 2, newest chunk first: e^(x - max) / sum
            c0 = base + (nc - 1 - c) * W
            if stage:
                Tx.cta.copy(x, Xs[nc - 1 - c:nc - c, :])
            else:
                Tx.cta.copy(x, X[row:row + 1, c0:c0 + W])
            Tx.cta.cast(xf, x)
            Tx.cta.exp(xf, xf, bias=big)
            Tx.cta.mul(xf, xf, total)
            Tx.cta.cast(x, xf)
            Tx.cta.copy(Y[row:row + 1, c0:c0 + W], x)

    return softmax_chunked


SHAPE = (64, 1024)
softmax = softmax_kernel(*SHAPE, "float16")
RTOL = 2.0 ** -9  # float16 rounding of the result (2^-11) plus the float32 and ex2 steps
ATOL = 2.0 ** -24  # float16's smallest subnormal: tiny probabilities round to it


def inputs(rng, shape=SHAPE, dtype="float16"):
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    return [x, np.zeros(shape, dtype)]


def reference(x, y):
    xf = x.astype(np.float64)
    e = np.exp(xf - xf.max(axis=-1, keepdims=True))
    return [x, (e / e.sum(axis=-1, keepdims=True)).astype(x.dtype)]


def bytes_moved(rows: int, cols: int, dtype: str) -> int:
    return 2 * rows * cols * ITEMSIZE[dtype]
