"""RMSNorm ``Y = X / sqrt(mean(X^2, axis=-1) + eps) * W`` in one pass over the data,
written with the tile compute primitives (as ``torch.nn.functional.rms_norm(X, (cols,), W,
eps)``).

The rows are laid out in registers as in ``examples/softmax.py``
(``tilewise.layout.RowTiling``: ``R`` rows per CTA, ``G`` threads per row, ``K`` 16-byte
vectors per thread); the weight row ``W`` is loaded once per CTA into a register tile
replicated over the CTA's rows (``RowTiling.columns()``), so each thread holds exactly the
weights of its columns::

    Tx.cta.copy(x, X[rows]);  Tx.cta.copy(w, W)       # 16-byte vector loads
    Tx.cta.cast(xf, x);  Tx.cta.cast(wf, w)            # float32
    Tx.cta.mul(sq, xf, xf)
    Tx.cta.sum(r, sq, axes=-1)                         # per row: tree, shfl.sync, smem
    Tx.cta.rsqrt(r, r, scale=1 / cols, bias=eps)       # rsqrt.approx.f32 of mean + eps
    Tx.cta.mul(xf, xf, r);  Tx.cta.mul(xf, xf, wf)
    Tx.cta.cast(x, xf);  Tx.cta.copy(Y[rows], x)       # cvt pairs, 16-byte stores

Accuracy: float32 throughout; ``rsqrt.approx.f32`` has a relative error of at most
2^-22.9 (PTX ISA); the result is rounded once to the output type.
"""

import numpy as np

from tilewise import T, Tx
from tilewise.layout import RowTiling
from tilewise.layout.rows import persistent_ctas

TARGET = "sm_90a"
ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4}


def make_rmsnorm(rows: int, cols: int, dtype: str = "float16", eps: float = 1e-6,
                 threads: int | None = None, vectors: int = 4, ctas: int | None = None):
    """A kernel ``k(X, W, Y)``: X and Y ``rows x cols``, W ``cols``, all of ``dtype``.

    ``ctas`` makes the kernel persistent (W is then loaded once per CTA): that many CTAs
    walk the row groups with a stride of ``ctas``, two register tiles deep; ``ctas=0`` picks
    ``tilewise.layout.rows.persistent_ctas`` at 2 CTAs per SM (the persistent kernel keeps
    W in float32 and two row tiles: 128 registers at 256 threads)."""
    try:
        t = RowTiling.plan(rows, cols, ITEMSIZE[dtype], threads, vectors)
    except ValueError:
        return make_rmsnorm_smem(rows, cols, dtype, eps)
    R_, layout, per_row, weights, n = t.rows, t.tile(), t.per_row(), t.columns(), t.regs
    groups = rows // R_
    persistent = ctas is not None
    G_ = (ctas or persistent_ctas(groups, per_sm=2)) if persistent else groups
    iters = -(-groups // (2 * G_))

    @T.prim_func
    def rmsnorm(X_ptr: T.handle, W_ptr: T.handle, Y_ptr: T.handle):
        X = T.match_buffer(X_ptr, (rows, cols), dtype)
        W = T.match_buffer(W_ptr, (cols,), dtype)
        Y = T.match_buffer(Y_ptr, (rows, cols), dtype)
        T.device_entry()
        bx = T.cta_id([G_])
        tid = T.thread_id([t.threads])  # noqa: F841 (the layouts name it as tx)
        ar = T.alloc_local((n,), dtype)
        xa = ar.view(R_, cols, layout=layout)
        br = T.alloc_local((n,), dtype)
        xb = br.view(R_, cols, layout=layout)
        fr = T.alloc_local((n,), "float32")
        xf = fr.view(R_, cols, layout=layout)
        qr = T.alloc_local((n,), "float32")
        sq = qr.view(R_, cols, layout=layout)
        wr = T.alloc_local((n,), dtype)
        w = wr.view(cols, layout=weights)
        vr = T.alloc_local((n,), "float32")
        wf = vr.view(cols, layout=weights)
        rr = T.alloc_local((1,), "float32")
        r = rr.view(R_, 1, layout=per_row)
        Tx.cta.copy(xa, X[bx * R_:bx * R_ + R_, 0:cols])
        Tx.cta.copy(w, W[0:cols])
        Tx.cta.cast(wf, w)
        for i in range(iters) if persistent else T.static_range(1):
            for h in T.static_range(2 if persistent else 1):
                x = [xa, xb][h]
                g = bx + (2 * i + h) * G_
                if persistent and g + G_ < groups:  # prefetch the next group
                    Tx.cta.copy([xb, xa][h], X[(g + G_) * R_:(g + G_) * R_ + R_, 0:cols])
                if not persistent or g < groups:
                    Tx.cta.cast(xf, x)
                    Tx.cta.mul(sq, xf, xf)
                    Tx.cta.sum(r, sq, axes=-1)
                    Tx.cta.rsqrt(r, r, scale=1.0 / cols, bias=eps)
                    Tx.cta.mul(xf, xf, r)
                    Tx.cta.mul(xf, xf, wf)
                    Tx.cta.cast(x, xf)
                    Tx.cta.copy(Y[g * R_:g * R_ + R_, 0:cols], x)

    return rmsnorm


def make_rmsnorm_smem(rows: int, cols: int, dtype: str = "float16", eps: float = 1e-6,
                      threads: int = 128):
    """The general RMSNorm for any row length (up to 6144 columns): one row per CTA staged
    in shared memory as float32, the memory variants of the primitives, a barrier between
    steps. Correct for every shape, not fast."""
    if cols > 6144:
        raise ValueError(f"{cols} columns do not fit the 48 KB of shared memory as float32")

    @T.prim_func
    def rmsnorm_smem(X_ptr: T.handle, W_ptr: T.handle, Y_ptr: T.handle):
        X = T.match_buffer(X_ptr, (rows, cols), dtype)
        W = T.match_buffer(W_ptr, (cols,), dtype)
        Y = T.match_buffer(Y_ptr, (rows, cols), dtype)
        T.device_entry()
        bx = T.cta_id([rows])
        tid = T.thread_id([threads])  # noqa: F841
        xs = T.alloc_shared((1, cols), "float32")
        ws = T.alloc_shared((cols,), "float32")
        sq = T.alloc_shared((1, cols), "float32")
        r = T.alloc_shared((1, 1), "float32")
        Tx.cta.cast(xs, X[bx:bx + 1, 0:cols])
        Tx.cta.cast(ws, W[0:cols])
        Tx.cta.mul(sq, xs, xs)
        T.cuda.cta_sync()
        Tx.cta.sum(r, sq, axes=-1)
        Tx.cta.rsqrt(r, r, scale=1.0 / cols, bias=eps)
        T.cuda.cta_sync()
        Tx.cta.mul(xs, xs, r)
        Tx.cta.mul(xs, xs, ws)
        Tx.cta.cast(Y[bx:bx + 1, 0:cols], xs)

    return rmsnorm_smem


SHAPE = (16, 2048)
rmsnorm = make_rmsnorm(*SHAPE, "float16")
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
