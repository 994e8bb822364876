"""The gradients of RMSNorm ``Y = X * r * W`` with ``r = 1 / sqrt(mean(X^2, axis=-1) + eps)``
(the backward of ``examples/rmsnorm.py``, used by the ``tilewise::rmsnorm`` torch op's
autograd in ``examples/torch_ops.py``)::

    dX = r * (dY * W - X * r^2 * mean(dY * W * X, axis=-1))
    dW = sum over rows of dY * X * r

Two kernels. ``make_rmsnorm_backward`` is a row kernel laid out as the forward one
(``RowTiling``): per row it recomputes ``r``, forms ``dX`` in registers and also writes ``r``
(float32, one per row) for the second; ``make_rmsnorm_weight_grad`` reduces over the rows:
one thread per column walks the rows (coalesced: a warp reads 32 consecutive columns of a
row), accumulating ``dY * X * r`` in float32. The row kernel takes any row count (a
symbolic size) and any width its registers hold (partial tiles, the padding read as 0);
longer rows take its shared-memory form.
"""

import numpy as np

from tilewise import T, Tx, config_error
from tilewise.layout import RowTiling

TARGET = "sm_90a"
ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4}


BWD_ELEMS = 16  # of a row per thread at 1024 threads: X, dY, W and four float32 tiles live


def make_rmsnorm_backward(rows: int, cols: int, dtype: str = "float16", eps: float = 1e-6,
                          threads: int | None = None, vectors: int | None = None):
    """A kernel ``k(X, W, dY, dX, Rstd)``: X, dY, dX ``rows x cols`` and W ``cols`` of
    ``dtype``; Rstd ``rows x 1`` float32 receives ``r`` of each row. Any row count (a
    symbolic size) and any width that fits one CTA's registers (``RowTiling`` with
    :data:`BWD_ELEMS`; partial tiles, the padding read as 0); longer rows, and rows so short
    that a thread would hold several, take the shared-memory form."""
    try:
        t = RowTiling.plan(RowTiling.plan_rows(rows), cols, ITEMSIZE[dtype], threads, vectors,
                           max_elems=BWD_ELEMS)
    except ValueError:
        t = None
    if t is None or t.chunks > 1 or t.rows_per_thread > 1:  # (Rstd: one row a thread)
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
        Tx.cta.mul(pf, xf, xf)
        Tx.cta.sum(r, pf, axes=-1)
        Tx.cta.rsqrt(r, r, scale=1.0 / cols, bias=eps)  # r
        Tx.cta.mul(gf, gf, wf)  # dY * W
        Tx.cta.mul(pf, gf, xf)
        Tx.cta.sum(c, pf, axes=-1)
        Tx.cta.mul(c, c, r)
        Tx.cta.mul(c, c, r)
        Tx.cta.mul(c, c, 1.0 / cols)  # r^2 * mean(dY * W * X)
        Tx.cta.mul(xf, xf, c)
        Tx.cta.sub(gf, gf, xf)
        Tx.cta.mul(gf, gf, r)
        Tx.cta.cast(g, gf)
        Tx.cta.copy(dX[bx * R_:bx * R_ + R_, 0:W_], g)  # the columns and rows inside only
        row = bx * R_ + tid // G_
        if tid % G_ == 0 and row < M:  # r is replicated over the row's threads: its first
            Rstd[row, 0] = rr[0]       # one stores it (rows past M: none)

    return rmsnorm_backward


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


def make_rmsnorm_weight_grad(rows: int, cols: int, dtype: str = "float16",
                             threads: int = 128):
    """A kernel ``k(X, dY, Rstd, dW)``: ``dW[c] = sum_r dY[r, c] * X[r, c] * Rstd[r]``,
    accumulated in float32 by one thread per column, rounded once to ``dtype``."""
    ctas = -(-cols // threads)

    @T.prim_func
    def rmsnorm_weight_grad(X_ptr: T.handle, dY_ptr: T.handle, Rstd_ptr: T.handle,
                            dW_ptr: T.handle):
        X = T.match_buffer(X_ptr, (rows, cols), dtype)
        dY = T.match_buffer(dY_ptr, (rows, cols), dtype)
        Rstd = T.match_buffer(Rstd_ptr, (rows, 1), "float32")
        dW = T.match_buffer(dW_ptr, (cols,), dtype)
        T.device_entry()
        bx = T.cta_id([ctas])
        tx = T.thread_id([threads])
        col = bx * threads + tx
        if col < cols:
            acc = T.float32(0.0)
            for i in range(rows):
                acc = acc + T.float32(dY[i, col]) * T.float32(X[i, col]) * Rstd[i, 0]
            dW[col] = T.cast(acc, dtype)

    return rmsnorm_weight_grad


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
