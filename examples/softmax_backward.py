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
size); rows longer than the registers hold take the shared-memory form (one row per CTA, up
to 4096 columns). Accuracy: float32 throughout, rounded once.
"""

import numpy as np

from tilewise import T, Tx, config_error
from tilewise.layout import RowTiling

TARGET = "sm_90a"
ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4}


BWD_ELEMS = 16  # of a row per thread at 1024 threads: Y, dY and three float32 tiles live


def make_softmax_backward(rows: int, cols: int, dtype: str = "float16",
                          threads: int | None = None, vectors: int | None = None):
    """A kernel ``k(Y, dY, dX)``, all ``rows x cols`` of ``dtype``: the gradient of the
    softmax over the last axis, given its output ``Y`` and the output's gradient ``dY``.
    Any row count (a symbolic size of the kernel) and any width that fits one CTA's
    registers (``RowTiling`` with :data:`BWD_ELEMS`: 16384 halves or 8192 floats; partial
    tiles as in the forward kernel, the padding read as 0); longer rows take the
    shared-memory form (up to 4096 columns, else refused)."""
    try:
        t = RowTiling.plan(RowTiling.plan_rows(rows), cols, ITEMSIZE[dtype], threads, vectors,
                           max_elems=BWD_ELEMS)
    except ValueError:
        t = None
    if t is None or t.chunks > 1:
        return make_softmax_backward_smem(rows, cols, dtype)
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


def make_softmax_backward_smem(rows: int, cols: int, dtype: str = "float16",
                               threads: int = 128):
    """The softmax gradient for any row length up to 4096: one row per CTA in shared memory
    as float32, the memory variants of the primitives, a barrier between steps."""
    if cols > 4096:
        raise config_error(f"{cols} columns do not fit the 48 KB of shared memory as float32")

    @T.prim_func
    def softmax_backward_smem(Y_ptr: T.handle, dY_ptr: T.handle, dX_ptr: T.handle):
        Y = T.match_buffer(Y_ptr, (rows, cols), dtype)
        dY = T.match_buffer(dY_ptr, (rows, cols), dtype)
        dX = T.match_buffer(dX_ptr, (rows, cols), dtype)
        T.device_entry()
        bx = T.cta_id([rows])
        tid = T.thread_id([threads])  # noqa: F841
        ys = T.alloc_shared((1, cols), "float32")
        gs = T.alloc_shared((1, cols), "float32")
        ps = T.alloc_shared((1, cols), "float32")
        d = T.alloc_shared((1, 1), "float32")
        Tx.cta.cast(ys, Y[bx:bx + 1, 0:cols])
        Tx.cta.cast(gs, dY[bx:bx + 1, 0:cols])
        Tx.cta.mul(ps, ys, gs)
        T.cuda.cta_sync()
        Tx.cta.sum(d, ps, axes=-1)
        T.cuda.cta_sync()
        Tx.cta.sub(gs, gs, d)
        Tx.cta.mul(gs, gs, ys)
        Tx.cta.cast(dX[bx:bx + 1, 0:cols], gs)

    return softmax_backward_smem


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
