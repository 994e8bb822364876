"""The gradients of RMSNorm ``Y = X * r * W`` with ``r = 1 / sqrt(mean(X^2, axis=-1) + eps)``
(the backward of ``examples/rmsnorm.py``, used by the ``tilewise::rmsnorm`` torch op's
autograd in ``examples/torch_ops.py``)::

    dX = r * (dY * W - X * r^2 * mean(dY * W * X, axis=-1))
    dW = sum over rows of dY * X * r

``make_rmsnorm_backward`` is a row kernel laid out as the forward one (``RowTiling``): per
row it recomputes ``r``, forms ``dX`` in registers and also writes ``r`` (float32, one per
row) for the weight gradient. It takes any row count (a symbolic size) and any width: what
its registers hold in one pass (partial tiles, the padding read as 0), longer rows walked in
chunks twice. ``make_rmsnorm_weight_grad`` reduces ``dY * X * r`` over the rows in float32,
deterministically, in two kernels: the rows cut into slices, each CTA adding one slice's
rows of a 256-column tile (16-byte loads, so every SM streams), then the slices' sums
added in order.
"""

import numpy as np

from tilewise import T, Tx, config_error, runtime
from tilewise.layout import RowTiling
from tilewise.layout.rows import check_row_args

TARGET = "sm_90a"
ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4}
H200_SMS = 132  # the persistent grid where no GPU answers (the simulator)


BWD_ELEMS = 16  # of a row per thread at 1024 threads: X, dY, W and four float32 tiles live


@T.inline
def row_rstd(r, pf, xf, cols, eps):
    """``r = 1 / sqrt(mean(X^2) + eps)`` of each row of the float32 tile ``xf`` (``pf``: a
    scratch tile of its shape)."""
    Tx.cta.mul(pf, xf, xf)
    Tx.cta.sum(r, pf, axes=-1)
    Tx.cta.rsqrt(r, r, scale=1.0 / cols, bias=eps)


@T.inline
def grad_x(gf, xf, wf, pf, r, c, cols):
    """``gf`` <- ``dX = r * (dY * W - X * c)``, ``c = r^2 * mean(dY * W * X)``, from ``gf =
    dY``, ``xf = X`` (overwritten), ``wf = W`` and each row's ``r``; ``pf`` a scratch tile,
    ``c`` per row."""
    Tx.cta.mul(gf, gf, wf)  # dY * W
    Tx.cta.mul(pf, gf, xf)
    Tx.cta.sum(c, pf, axes=-1)
    Tx.cta.mul(c, c, r)
    Tx.cta.mul(c, c, r)
    Tx.cta.mul(c, c, 1.0 / cols)  # r^2 * mean(dY * W * X)
    Tx.cta.mul(xf, xf, c)
    Tx.cta.sub(gf, gf, xf)
    Tx.cta.mul(gf, gf, r)


def make_rmsnorm_backward(rows: int, cols: int, dtype: str = "float16", eps: float = 1e-6,
                          threads: int | None = None, vectors: int | None = None,
                          chunk: int | None = None):
    """A kernel ``k(X, W, dY, dX, Rstd)``: X, dY, dX ``rows x cols`` and W ``cols`` of
    ``dtype``; Rstd ``rows x 1`` float32 receives ``r`` of each row. Any row count (a
    symbolic size) and any width: one that fits one CTA's registers (``RowTiling`` with
    :data:`BWD_ELEMS`; partial tiles, the padding read as 0) in one pass, rows so short that
    a thread would hold several in the shared-memory form, longer ones (or any, with
    ``chunk=``: chunks of about that many columns) by one CTA walking the row in chunks
    twice (:func:`_chunked`)."""
    check_row_args(rows, cols, dtype, threads=threads, vectors=vectors, chunk=chunk)
    t = RowTiling.plan(RowTiling.plan_rows(rows), cols, ITEMSIZE[dtype], threads, vectors,
                       chunk=chunk, max_elems=BWD_ELEMS)
    if t.chunks > 1:
        return _chunked(cols, dtype, eps, t)
    if t.rows_per_thread > 1:  # (Rstd: one row a thread)
        return make_rmsnorm_backward_smem(rows, cols, dtype, eps)
    R_, W_, layout, per_row, weights, n = (t.rows, t.cols, t.tile(), t.per_row(), t.columns(),
                                           t.regs)
    G_ = t.threads_per_row
    M = T.int32()  # the row count, bound from the arrays at launch

    @T.prim_func
    def rmsnorm_backward(X_ptr: T.handle, W_ptr: T.handle, dY_ptr: T.handle,
                         dX_ptr: T.handle, Rstd_ptr: T.handle):
        X = T.match_buffer(X_ptr, (M, cols), dtype)
        W = T.match_buffer(W_ptr, (cols,), dtype)
        dY = T.match_buffer(dY_ptr, (M, cols), dtype)
        dX = T.match_buffer(dX_ptr, (M, cols), dtype)
        Rstd = T.match_buffer(Rstd_ptr, (M, 1), "float32")
        T.device_entry()
        bx = T.cta_id([T.ceildiv(M, R_)])
        tid = T.thread_id([t.threads])
        x = T.alloc_local((n,), dtype).view(R_, W_, layout=layout)
        g = T.alloc_local((n,), dtype).view(R_, W_, layout=layout)
        w = T.alloc_local((n,), dtype).view(W_, layout=weights)
        xf = T.alloc_local((n,), "float32").view(R_, W_, layout=layout)
        gf = T.alloc_local((n,), "float32").view(R_, W_, layout=layout)
        pf = T.alloc_local((n,), "float32").view(R_, W_, layout=layout)
        wf = T.alloc_local((n,), "float32").view(W_, layout=weights)
        rr = T.alloc_local((1,), "float32")
        r = rr.view(R_, 1, layout=per_row)
        c = T.alloc_local((1,), "float32").view(R_, 1, layout=per_row)
        Tx.cta.copy(x, X[bx * R_:bx * R_ + R_, 0:W_], fill=0.0)  # past the row: 0, adding
        Tx.cta.copy(g, dY[bx * R_:bx * R_ + R_, 0:W_], fill=0.0)  # 0 to both sums
        Tx.cta.copy(w, W[0:W_], fill=0.0)
        Tx.cta.cast(xf, x)
        Tx.cta.cast(gf, g)
        Tx.cta.cast(wf, w)
        row_rstd(r, pf, xf, cols, eps)
        grad_x(gf, xf, wf, pf, r, c, cols)
        Tx.cta.cast(g, gf)
        Tx.cta.copy(dX[bx * R_:bx * R_ + R_, 0:W_], g)  # the columns and rows inside only
        row = bx * R_ + tid // G_
        if tid % G_ == 0 and row < M:  # r is replicated over the row's threads: its first
            Rstd[row, 0] = rr[0]       # one stores it (rows past M: none)

    return rmsnorm_backward


FUSED_CTAS_PER_SM = 4  # the fused backward's grid: about this many CTAs an SM
FUSED_ELEMS = 16  # elements of a row a thread of the fused backward holds, at most
FUSED_MIN_ROWS = 4  # rows a CTA of the fused backward adds into its row of P, at least (P
# is float32: at 4 rows of two 16-bit arrays, writing and reading it moves half of X's
# bytes, where the two-kernel weight gradient reads X and dY again)


def fused_plan(rows: int, cols: int, dtype: str, threads: int | None = None,
               vectors: int | None = None, num_sms: int | None = None):
    """``(tiling, blocks, ctas)`` of :func:`make_rmsnorm_backward_fused`, or None where it
    does not pay or apply: each CTA takes ``blocks`` consecutive row blocks of the tiling
    (32 bytes of a row a thread, so that the extra accumulator leaves registers for two
    CTAs an SM), about :data:`FUSED_CTAS_PER_SM` CTAs an SM; None where a CTA would add
    fewer than :data:`FUSED_MIN_ROWS` rows into its row of P (P's traffic would outweigh
    the second read of X and dY it saves: few rows), or where a thread would hold more
    than :data:`FUSED_ELEMS` elements of a row (widths such as 3000 and 5120, whose
    threads' vectors do not come out even, or a row of more than 512 threads: measured
    slower than the two passes, their registers leaving one CTA an SM)."""
    eb = ITEMSIZE[dtype]
    if vectors is None:  # 32 bytes of a row a thread
        vectors = max(1, 32 // (RowTiling.vector(cols, eb) * eb))
    t = RowTiling.plan(RowTiling.plan_rows(rows), cols, eb, threads, vectors,
                       max_elems=BWD_ELEMS)
    if t.chunks > 1 or t.rows_per_thread > 1 or t.threads > 512 or t.regs > FUSED_ELEMS:
        return None
    blocks = -(-rows // t.rows)
    per = max(1, blocks // (FUSED_CTAS_PER_SM * (num_sms or runtime.sm_count(default=H200_SMS))))
    if per * t.rows < FUSED_MIN_ROWS:
        return None
    return t, per, -(-blocks // per)


def make_rmsnorm_backward_fused(rows: int, cols: int, dtype: str = "float16",
                                eps: float = 1e-6, threads: int | None = None,
                                vectors: int | None = None, num_sms: int | None = None,
                                prefetch: bool = False):
    """A kernel ``k(X, W, dY, dX, P)``: ``dX`` as :func:`make_rmsnorm_backward`, and the first
    half of ``dW`` from the same loads: each CTA walks ``blocks`` consecutive row blocks
    (:func:`fused_plan`), each thread adding ``dY * X * r`` of its columns in registers;
    then the CTA adds its row groups' sums (in shared memory, in order) into its row of
    ``P`` (float32, ``ctas x cols``), and :func:`make_rmsnorm_weight_sum` adds P's rows into
    ``dW``. So X and dY are read once for both gradients (the two-kernel weight gradient
    reads them again), W once a CTA. ``prefetch``: each block's X and dY are loaded while
    the block before is computed (a second register buffer; measured slower where the
    plan takes this kernel, so an option only: benchmarks/RESULTS.md). For the shapes
    :func:`fused_plan` takes (many rows that fit the registers); its rows are a size of
    the kernel."""
    check_row_args(rows, cols, dtype, threads=threads, vectors=vectors, num_sms=num_sms)
    plan = fused_plan(rows, cols, dtype, threads, vectors, num_sms)
    if plan is None:
        raise config_error(f"a fused RMSNorm backward takes at least {FUSED_MIN_ROWS} rows a "
                           f"CTA, each held in registers by its own threads; {rows} x {cols} "
                           f"of {dtype} is not such a shape (make_rmsnorm_grads takes any)")
    t, B, NC = plan
    R_, W_, layout, per_row, weights, n = (t.rows, t.cols, t.tile(), t.per_row(), t.columns(),
                                           t.regs)

    @T.prim_func
    def rmsnorm_backward_fused(X_ptr: T.handle, W_ptr: T.handle, dY_ptr: T.handle,
                               dX_ptr: T.handle, P_ptr: T.handle):
        X = T.match_buffer(X_ptr, (rows, cols), dtype)
        W = T.match_buffer(W_ptr, (cols,), dtype)
        dY = T.match_buffer(dY_ptr, (rows, cols), dtype)
        dX = T.match_buffer(dX_ptr, (rows, cols), dtype)
        P = T.match_buffer(P_ptr, (NC, cols), "float32")
        T.device_entry()
        bx = T.cta_id([NC])
        tid = T.thread_id([t.threads])
        x = T.alloc_local((n,), dtype).view(R_, W_, layout=layout)
        g = T.alloc_local((n,), dtype).view(R_, W_, layout=layout)
        w = T.alloc_local((n,), dtype).view(W_, layout=weights)
        xf = T.alloc_local((n,), "float32").view(R_, W_, layout=layout)
        gf = T.alloc_local((n,), "float32").view(R_, W_, layout=layout)
        pf = T.alloc_local((n,), "float32").view(R_, W_, layout=layout)
        acc = T.alloc_local((n,), "float32").view(R_, W_, layout=layout)
        wf = T.alloc_local((n,), "float32").view(W_, layout=weights)
        r = T.alloc_local((1,), "float32").view(R_, 1, layout=per_row)
        c = T.alloc_local((1,), "float32").view(R_, 1, layout=per_row)
        if prefetch:
            xn = T.alloc_local((n,), dtype).view(R_, W_, layout=layout)  # the next block's
            gn = T.alloc_local((n,), dtype).view(R_, W_, layout=layout)
            Tx.cta.copy(x, X[bx * B * R_:bx * B * R_ + R_, 0:W_], fill=0.0)
            Tx.cta.copy(g, dY[bx * B * R_:bx * B * R_ + R_, 0:W_], fill=0.0)
        Tx.cta.copy(w, W[0:W_], fill=0.0)  # once: every row block's
        Tx.cta.fill(acc, 0.0)
        for i in range(B):
            r0 = (bx * B + i) * R_
            if not prefetch:
                Tx.cta.copy(x, X[r0:r0 + R_, 0:W_], fill=0.0)  # past the rows: 0, adding 0
                Tx.cta.copy(g, dY[r0:r0 + R_, 0:W_], fill=0.0)  # to both sums and to dW
            elif i < B - 1:  # the next block's, in flight while this one is computed
                Tx.cta.copy(xn, X[r0 + R_:r0 + 2 * R_, 0:W_], fill=0.0)
                Tx.cta.copy(gn, dY[r0 + R_:r0 + 2 * R_, 0:W_], fill=0.0)
            Tx.cta.cast(xf, x)
            Tx.cta.cast(gf, g)
            row_rstd(r, pf, xf, cols, eps)
            Tx.cta.mul(pf, gf, xf)
            Tx.cta.mul(pf, pf, r)
            Tx.cta.add(acc, acc, pf)  # dY * X * r, this thread's columns
            Tx.cta.cast(wf, w)  # (cast in the loop: w, half the registers, lives across)
            grad_x(gf, xf, wf, pf, r, c, cols)
            Tx.cta.cast(g, gf)
            Tx.cta.copy(dX[r0:r0 + R_, 0:W_], g)  # the columns and rows inside only
            if prefetch and i < B - 1:
                Tx.cta.cast(x, xn)  # (the same type: register moves)
                Tx.cta.cast(g, gn)
        if R_ == 1:
            Tx.cta.copy(P[bx:bx + 1, 0:W_], acc)
        else:  # the row groups' sums, added in order
            red = T.alloc_shared((R_, W_), "float32")
            Tx.cta.copy(red, acc)
            T.cuda.cta_sync()
            for col in range(tid, cols, t.threads):
                total: T.float32 = red[0, col]
                for k in range(1, R_):
                    total = total + red[k, col]
                P[bx, col] = total

    return rmsnorm_backward_fused


def _chunked(cols: int, dtype: str, eps: float, t: RowTiling):
    """A row longer than the registers hold: one CTA a row walks it in chunks twice. Pass 1
    adds each thread's ``X^2`` and ``dY * W * X`` over the chunks (no barrier), then the
    threads' sums give ``r`` and ``c = r^2 * mean(dY * W * X)``; pass 2 reads the chunks
    again, newest first (the likeliest still in L2), and writes ``r * (dY * W - X * c)``."""
    W_, n, nc, G = t.cols, t.regs, t.chunks, t.threads_per_row
    layout, per_row, weights = t.tile(), t.per_row(), t.columns()
    mine, one, spread = t.by_thread(), t.per_thread(), t.across_threads()
    M = T.int32()

    @T.prim_func
    def rmsnorm_backward_chunked(X_ptr: T.handle, W_ptr: T.handle, dY_ptr: T.handle,
                                 dX_ptr: T.handle, Rstd_ptr: T.handle):
        X = T.match_buffer(X_ptr, (M, cols), dtype)
        W = T.match_buffer(W_ptr, (cols,), dtype)
        dY = T.match_buffer(dY_ptr, (M, cols), dtype)
        dX = T.match_buffer(dX_ptr, (M, cols), dtype)
        Rstd = T.match_buffer(Rstd_ptr, (M, 1), "float32")
        T.device_entry()
        bx = T.cta_id([M])
        tid = T.thread_id([t.threads])
        x = T.alloc_local((n,), dtype).view(1, W_, layout=layout)
        g = T.alloc_local((n,), dtype).view(1, W_, layout=layout)
        w = T.alloc_local((n,), dtype).view(W_, layout=weights)
        xf = T.alloc_local((n,), "float32").view(1, W_, layout=layout)
        gf = T.alloc_local((n,), "float32").view(1, W_, layout=layout)
        wf = T.alloc_local((n,), "float32").view(W_, layout=weights)
        pr = T.alloc_local((n,), "float32")
        pf = pr.view(1, W_, layout=layout)
        qr = T.alloc_local((1,), "float32")  # this thread's sum of X^2
        q = qr.view(G, 1, layout=one)
        vr = T.alloc_local((1,), "float32")  # ... and of dY * W * X
        v = vr.view(G, 1, layout=one)
        rr = T.alloc_local((1,), "float32")
        r = rr.view(1, 1, layout=per_row)
        c = T.alloc_local((1,), "float32").view(1, 1, layout=per_row)
        Tx.cta.fill(q, 0.0)
        Tx.cta.fill(v, 0.0)
        for k in range(nc):  # pass 1: per thread (the padding reads as 0, adding 0)
            Tx.cta.copy(x, X[bx:bx + 1, k * W_:k * W_ + W_], fill=0.0)
            Tx.cta.copy(g, dY[bx:bx + 1, k * W_:k * W_ + W_], fill=0.0)
            Tx.cta.copy(w, W[k * W_:k * W_ + W_], fill=0.0)
            Tx.cta.cast(xf, x)
            Tx.cta.cast(gf, g)
            Tx.cta.cast(wf, w)
            Tx.cta.mul(pf, xf, xf)
            Tx.cta.sum(q, pr.view(G, n, layout=mine), axes=-1, accum=True)
            Tx.cta.mul(gf, gf, wf)
            Tx.cta.mul(pf, gf, xf)
            Tx.cta.sum(v, pr.view(G, n, layout=mine), axes=-1, accum=True)
        Tx.cta.sum(r, qr.view(1, G, layout=spread), axes=-1)
        Tx.cta.rsqrt(r, r, scale=1.0 / cols, bias=eps)  # r
        Tx.cta.sum(c, vr.view(1, G, layout=spread), axes=-1)
        Tx.cta.mul(c, c, r)
        Tx.cta.mul(c, c, r)
        Tx.cta.mul(c, c, 1.0 / cols)  # r^2 * mean(dY * W * X)
        for k in range(nc):  # pass 2, newest chunk first
            c0 = (nc - 1 - k) * W_
            Tx.cta.copy(x, X[bx:bx + 1, c0:c0 + W_])
            Tx.cta.copy(g, dY[bx:bx + 1, c0:c0 + W_])
            Tx.cta.copy(w, W[c0:c0 + W_])
            Tx.cta.cast(xf, x)
            Tx.cta.cast(gf, g)
            Tx.cta.cast(wf, w)
            Tx.cta.mul(gf, gf, wf)
            Tx.cta.mul(xf, xf, c)
            Tx.cta.sub(gf, gf, xf)
            Tx.cta.mul(gf, gf, r)
            Tx.cta.cast(g, gf)
            Tx.cta.copy(dX[bx:bx + 1, c0:c0 + W_], g)  # the columns inside only
        if tid == 0:
            Rstd[bx, 0] = rr[0]

    return rmsnorm_backward_chunked


def make_rmsnorm_backward_smem(rows: int, cols: int, dtype: str = "float16",
                               eps: float = 1e-6, threads: int = 128):
    """The row kernel for any row length up to 3072: one row per CTA in shared memory as
    float32, the memory variants of the primitives, a barrier between steps."""
    if cols > 3072:
        raise config_error(f"{cols} columns do not fit the 48 KB of shared memory as float32")

    @T.prim_func
    def rmsnorm_backward_smem(X_ptr: T.handle, W_ptr: T.handle, dY_ptr: T.handle,
                              dX_ptr: T.handle, Rstd_ptr: T.handle):
        X = T.match_buffer(X_ptr, (rows, cols), dtype)
        W = T.match_buffer(W_ptr, (cols,), dtype)
        dY = T.match_buffer(dY_ptr, (rows, cols), dtype)
        dX = T.match_buffer(dX_ptr, (rows, cols), dtype)
        Rstd = T.match_buffer(Rstd_ptr, (rows, 1), "float32")
        T.device_entry()
        bx = T.cta_id([rows])
        tid = T.thread_id([threads])  # noqa: F841
        xs = T.alloc_shared((1, cols), "float32")
        gs = T.alloc_shared((1, cols), "float32")
        ps = T.alloc_shared((1, cols), "float32")
        ws = T.alloc_shared((cols,), "float32")
        r = T.alloc_shared((1, 1), "float32")
        c = T.alloc_shared((1, 1), "float32")
        Tx.cta.cast(xs, X[bx:bx + 1, 0:cols])
        Tx.cta.cast(gs, dY[bx:bx + 1, 0:cols])
        Tx.cta.cast(ws, W[0:cols])
        Tx.cta.mul(ps, xs, xs)
        T.cuda.cta_sync()
        Tx.cta.sum(r, ps, axes=-1)
        T.cuda.cta_sync()
        Tx.cta.rsqrt(r, r, scale=1.0 / cols, bias=eps)
        Tx.cta.mul(gs, gs, ws)
        Tx.cta.mul(ps, gs, xs)
        T.cuda.cta_sync()
        Tx.cta.sum(c, ps, axes=-1)
        T.cuda.cta_sync()
        Tx.cta.mul(c, c, r)
        Tx.cta.mul(c, c, r)
        Tx.cta.mul(c, c, 1.0 / cols)
        T.cuda.cta_sync()
        Tx.cta.mul(xs, xs, c)
        Tx.cta.sub(gs, gs, xs)
        Tx.cta.mul(gs, gs, r)
        Tx.cta.cast(dX[bx:bx + 1, 0:cols], gs)
        Tx.cta.copy(Rstd[bx:bx + 1, 0:1], r)

    return rmsnorm_backward_smem


WG_ROWS = 8  # row lanes of a weight-gradient CTA: 8 x 32 threads
WG_CTAS = 1024  # CTAs the partial kernel aims for (about 8 an SM on 132 SMs)
WG_MIN_ROWS = 4 * WG_ROWS  # rows a slice walks at least (so the loop amortises the tile)


def weight_grad_plan(rows: int, cols: int, elem_bytes: int) -> tuple[RowTiling, int, int]:
    """``(tiling, slices, rows per slice)`` of :func:`make_rmsnorm_weight_partial`: CTAs of
    8 row lanes x 32 threads over 256 columns (16-byte vectors where the width allows,
    several narrower ones a thread otherwise), the rows cut into ``slices`` of ``rows per
    slice`` (a multiple of 8) so that the column tiles x slices make about
    :data:`WG_CTAS` CTAs, each slice at least :data:`WG_MIN_ROWS` rows."""
    vec = RowTiling.vector(cols, elem_bytes)
    t = RowTiling(WG_ROWS, 32, 8 // vec if vec < 8 else 1, vec)
    col_tiles = -(-cols // t.cols)
    slices = max(1, min(-(-rows // WG_MIN_ROWS), -(-WG_CTAS // col_tiles)))
    per = -(-rows // slices)
    per = -(-per // WG_ROWS) * WG_ROWS
    return t, -(-rows // per), per


def make_rmsnorm_weight_partial(rows: int, cols: int, dtype: str = "float16"):
    """A kernel ``k(X, dY, Rstd, P)``: the first half of ``dW``. The rows are cut into the
    slices of :func:`weight_grad_plan` and ``P[s, c]`` (float32, ``slices x cols``) is
    ``sum dY[r, c] * X[r, c] * Rstd[r]`` over slice ``s``'s rows: each CTA walks one
    column tile of one slice, 8 rows at a time (16-byte vector loads, a warp reading 512
    contiguous bytes of a row; partial tiles past the last row and column read as 0), then
    adds its 8 row lanes in shared memory, in order."""
    check_row_args(rows, cols, dtype)
    t, S, SL = weight_grad_plan(rows, cols, ITEMSIZE[dtype])
    L, CW, n, G = t.rows, t.cols, t.regs, t.threads_per_row
    layout, per_row = t.tile(), t.per_row()
    CT = -(-cols // CW)

    @T.prim_func
    def rmsnorm_weight_partial(X_ptr: T.handle, dY_ptr: T.handle, Rstd_ptr: T.handle,
                               P_ptr: T.handle):
        X = T.match_buffer(X_ptr, (rows, cols), dtype)
        dY = T.match_buffer(dY_ptr, (rows, cols), dtype)
        Rstd = T.match_buffer(Rstd_ptr, (rows, 1), "float32")
        P = T.match_buffer(P_ptr, (S, cols), "float32")
        T.device_entry()
        bx = T.cta_id([CT * S])
        tid = T.thread_id([t.threads])
        c0 = bx % CT * CW
        s = bx // CT
        x = T.alloc_local((n,), dtype).view(L, CW, layout=layout)
        g = T.alloc_local((n,), dtype).view(L, CW, layout=layout)
        xf = T.alloc_local((n,), "float32").view(L, CW, layout=layout)
        gf = T.alloc_local((n,), "float32").view(L, CW, layout=layout)
        acc = T.alloc_local((n,), "float32").view(L, CW, layout=layout)
        rr = T.alloc_local((1,), "float32")
        r = rr.view(L, 1, layout=per_row)
        red = T.alloc_shared((L, CW), "float32")
        Tx.cta.fill(acc, 0.0)
        for i in range(SL // L):
            r0 = s * SL + i * L
            Tx.cta.copy(x, X[r0:r0 + L, c0:c0 + CW], fill=0.0)  # past the end: 0
            Tx.cta.copy(g, dY[r0:r0 + L, c0:c0 + CW], fill=0.0)
            row = r0 + tid // G
            rr[0] = 0.0
            if row < rows:
                rr[0] = Rstd[row, 0]
            Tx.cta.cast(xf, x)
            Tx.cta.cast(gf, g)
            Tx.cta.mul(xf, xf, gf)
            Tx.cta.mul(xf, xf, r)
            Tx.cta.add(acc, acc, xf)
        Tx.cta.copy(red, acc)
        T.cuda.cta_sync()
        if tid < CW and c0 + tid < cols:
            total: T.float32 = red[0, tid]
            for lane in range(1, L):
                total = total + red[lane, tid]
            P[s, c0 + tid] = total

    return rmsnorm_weight_partial


SUM_UNROLL = 8  # slices each lane of the sum kernel loads at once


def make_rmsnorm_weight_sum(slices: int, cols: int, dtype: str = "float16"):
    """A kernel ``k(P, dW)``: ``dW[c] = sum_s P[s, c]`` (the second half of ``dW``), rounded
    once to ``dtype``, in a fixed order (the same bits every run): 32 columns a CTA; lane
    ``l`` of 8 adds the runs of :data:`SUM_UNROLL` slices starting at ``8 l``, ``8 (l + 8)``,
    ... (each run's loads issued together), then the lanes are added in order."""
    check_row_args(slices, cols, dtype, "slice")
    CT = -(-cols // 32)
    U = SUM_UNROLL

    @T.prim_func
    def rmsnorm_weight_sum(P_ptr: T.handle, dW_ptr: T.handle):
        P = T.match_buffer(P_ptr, (slices, cols), "float32")
        dW = T.match_buffer(dW_ptr, (cols,), dtype)
        T.device_entry()
        bx = T.cta_id([CT])
        tid = T.thread_id([256])
        lane = tid // 32
        col = bx * 32 + tid % 32
        red = T.alloc_shared((8, 32), "float32")
        got = T.alloc_local((U,), "float32")
        part: T.float32 = 0.0
        if col < cols:
            for s0 in range(lane * U, slices, 8 * U):
                for u in T.unroll(U):
                    got[u] = 0.0
                    if s0 + u < slices:
                        got[u] = P[s0 + u, col]
                for u in T.unroll(U):
                    part = part + got[u]
        red[lane, tid % 32] = part
        T.cuda.cta_sync()
        if tid < 32 and col < cols:
            total: T.float32 = red[0, tid]
            for k in range(1, 8):
                total = total + red[k, tid]
            dW[col] = T.cast(total, dtype)

    return rmsnorm_weight_sum


class WeightGrad:
    """``make_rmsnorm_weight_grad``'s kernel, launched as ``k(X, dY, Rstd, dW)``: the partial
    kernel into a float32 workspace ``P`` (slices x cols, kept per stream and device, as the
    GEMM's split workspaces), then the sum kernel. ``tw.simulate`` runs both on a fresh
    workspace poisoned with NaN (every slot read must have been written)."""

    def __init__(self, rows: int, cols: int, dtype: str):
        from tilewise.runtime.scratch import Scratch

        _, self.slices, _ = weight_grad_plan(rows, cols, ITEMSIZE[dtype])
        self.partial = make_rmsnorm_weight_partial(rows, cols, dtype)
        self.sum = make_rmsnorm_weight_sum(self.slices, cols, dtype)
        self.p_shape = (self.slices, cols)
        self._bufs = Scratch("an RMSNorm weight gradient's partial sums")

    def __repr__(self) -> str:
        return f"<make_rmsnorm_weight_grad kernel, {self.slices} slices of rows>"

    def __call__(self, X, dY, Rstd, dW, stream=None):
        P = self._bufs.get(X, stream, self.p_shape,
                           lambda lib: lib.empty(X, self.p_shape, "float32"))
        self.partial(X, dY, Rstd, P, stream=stream)
        self.sum(P, dW, stream=stream)

    def __tilewise_simulate__(self, simulate, X, dY, Rstd, dW, **kw):
        P = np.full(self.p_shape, np.nan, np.float32)
        simulate(self.partial, X, dY, Rstd, P, **kw)
        return simulate(self.sum, P, dW, **kw)


def make_rmsnorm_weight_grad(rows: int, cols: int, dtype: str = "float16") -> WeightGrad:
    """A kernel ``k(X, dY, Rstd, dW)``: ``dW[c] = sum_r dY[r, c] * X[r, c] * Rstd[r]``,
    accumulated in float32 and rounded once to ``dtype``, the same bits every run: the rows
    cut into slices over about :data:`WG_CTAS` CTAs (:func:`make_rmsnorm_weight_partial`),
    then the slices' sums added in order (:func:`make_rmsnorm_weight_sum`)."""
    check_row_args(rows, cols, dtype)
    return WeightGrad(rows, cols, dtype)


class Grads:
    """``make_rmsnorm_grads``' kernel, launched as ``k(X, W, dY, dX, dW)``: where
    :func:`fused_plan` takes the shape, the fused kernel (dX and P from one read of X and
    dY) then the sum of P; otherwise the row kernel (dX and r) then the two-kernel weight
    gradient. Its
    float32 workspaces are kept per stream and device; ``tw.simulate`` runs the kernels on
    fresh ones poisoned with NaN."""

    def __init__(self, rows: int, cols: int, dtype: str, eps: float, fused: bool | None,
                 prefetch: bool = False):
        from tilewise.runtime.scratch import Scratch

        self.rows, self.cols = rows, cols
        plan = fused_plan(rows, cols, dtype)
        self.fused = plan is not None if fused is None else fused
        if self.fused:
            self.dx = make_rmsnorm_backward_fused(rows, cols, dtype, eps, prefetch=prefetch)
            self.p_shape = (plan[2], cols)
            self.sum = make_rmsnorm_weight_sum(self.p_shape[0], cols, dtype)
        else:
            self.dx = make_rmsnorm_backward(rows, cols, dtype, eps)
            self.dw = make_rmsnorm_weight_grad(rows, cols, dtype)
        self._bufs = Scratch("an RMSNorm gradient's workspace")

    def __repr__(self) -> str:
        return f"<make_rmsnorm_grads kernel, {'fused' if self.fused else 'two passes'}>"

    def __call__(self, X, W, dY, dX, dW, stream=None):
        if self.fused:
            P = self._bufs.get(X, stream, self.p_shape,
                               lambda lib: lib.empty(X, self.p_shape, "float32"))
            self.dx(X, W, dY, dX, P, stream=stream)
            self.sum(P, dW, stream=stream)
            return
        R = self._bufs.get(X, stream, (X.shape[0], 1),
                           lambda lib: lib.empty(X, (X.shape[0], 1), "float32"))
        self.dx(X, W, dY, dX, R, stream=stream)
        self.dw(X, dY, R, dW, stream=stream)

    def __tilewise_simulate__(self, simulate, X, W, dY, dX, dW, **kw):
        if self.fused:
            P = np.full(self.p_shape, np.nan, np.float32)
            simulate(self.dx, X, W, dY, dX, P, **kw)
            return simulate(self.sum, P, dW, **kw)
        R = np.full((X.shape[0], 1), np.nan, np.float32)
        simulate(self.dx, X, W, dY, dX, R, **kw)
        return simulate(self.dw, X, dY, R, dW, **kw)


def make_rmsnorm_grads(rows: int, cols: int, dtype: str = "float16", eps: float = 1e-6,
                       fused: bool | None = None, prefetch: bool = False) -> Grads:
    """A kernel ``k(X, W, dY, dX, dW)``: both gradients of RMSNorm (:class:`Grads`; the fused
    form where the row fits it, unless ``fused=False``)."""
    check_row_args(rows, cols, dtype)
    return Grads(rows, cols, dtype, eps, fused, prefetch)


SHAPE = (16, 2048)
rmsnorm_backward = make_rmsnorm_backward(*SHAPE, "float16")
RTOL = 2.0 ** -8
ATOL = 2.0 ** -12


def inputs(rng, shape=SHAPE, dtype="float16"):
    x = rng.standard_normal(shape).astype(dtype)
    w = (1 + 0.5 * rng.standard_normal(shape[-1])).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    return [x, w, dy, np.full(shape, np.nan, dtype), np.full((shape[0], 1), np.nan, np.float32)]


def rstd(x, eps: float = 1e-6):
    xf = x.astype(np.float64)
    return 1 / np.sqrt((xf * xf).mean(axis=-1, keepdims=True) + eps)


def reference(x, w, dy, dx, r, eps: float = 1e-6):
    xf, wf, gf = (a.astype(np.float64) for a in (x, w, dy))
    rs = rstd(x, eps)
    gw = gf * wf
    c = rs * rs * (gw * xf).mean(axis=-1, keepdims=True)
    return [x, w, dy, (rs * (gw - xf * c)).astype(x.dtype), rs.astype(np.float32)]
