"""Single-warpgroup wgmma kernels for the gemm tests: A (64, K) and B (K, N) staged in
shared memory with a chosen layout, one ``Tx.wg.gemm_async``, the accumulator copied out."""

import numpy as np

from tilewise import T, Tx
from tilewise.ir.dtype import dtype as tw_dtype
from tilewise.layout import S, TileLayout, swizzled_tile, wgmma_accumulator


def layout(rows, cols, swizzle, major="row", dtype="bfloat16"):
    """A (rows, cols) shared layout: ``"row"``: column blocks of ``swizzle`` bytes
    (:func:`swizzled_tile`, what TMA writes); ``"col"``: column-major, swizzled;
    ``"plain"``: row-major, swizzled (canonical only when a row is one swizzle span)."""
    bits = tw_dtype(dtype).bits
    if major == "row":
        return swizzled_tile(rows, cols, bits, swizzle)
    base = TileLayout(S[(rows, cols)]) if major == "plain" else TileLayout(
        S[(rows, cols):(1, rows)])
    return base.swizzle(swizzle, bits) if swizzle else base


def make_wgmma(N=64, K=64, dtype="bfloat16", a_swz=128, b_swz=128, b_major="row",
               accum=False, a_major="row"):
    """C (+)= A @ B for one warpgroup; with ``accum`` C starts from the values of C."""
    la = layout(64, K, a_swz, a_major, dtype)
    lb = layout(K, N, b_swz, b_major, dtype)

    @T.prim_func
    def wgmma_tile(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, (64, K), dtype)
        B = T.match_buffer(B_ptr, (K, N), dtype)
        C = T.match_buffer(C_ptr, (64, N), "float32")
        T.device_entry()
        tid = T.thread_id([128])
        As = T.alloc_shared((64, K), dtype, layout=la, align=1024)
        Bs = T.alloc_shared((K, N), dtype, layout=lb, align=1024)
        acc = T.alloc_local((64, N), "float32", layout=wgmma_accumulator(N))
        Tx.cta.copy(As[:, :], A[:, :])
        Tx.cta.copy(Bs[:, :], B[:, :])
        if accum:
            Tx.wg.copy(acc[:, :], C[:, :])
        T.ptx.fence.proxy_async()
        T.cuda.cta_sync()
        T.ptx.wgmma.fence()
        Tx.wg.gemm_async(acc[:, :], As[:, :], Bs[:, :], accum=accum)
        T.ptx.wgmma.commit_group()
        T.ptx.wgmma.wait_group(0)
        Tx.wg.copy(C[:, :], acc[:, :])

    return wgmma_tile


def wgmma_inputs(rng, N=64, K=64, dtype="bfloat16"):
    d = tw_dtype(dtype).numpy()
    scale = 1.0 if "float8" not in dtype else 4.0
    a = (rng.standard_normal((64, K)) * scale).astype(d)
    b = (rng.standard_normal((K, N)) * scale).astype(d)
    return [a, b, rng.standard_normal((64, N)).astype(np.float32)]


def wgmma_reference(a, b, c, accum=False, tf32=False):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if tf32:  # the 13 low mantissa bits of a tf32 input are ignored
        a64 = (a.view(np.uint32) & 0xFFFFE000).view(np.float32).astype(np.float64)
        b64 = (b.view(np.uint32) & 0xFFFFE000).view(np.float32).astype(np.float64)
    return a64 @ b64 + (c.astype(np.float64) if accum else 0.0)


def make_wgmma_rs(N=64, K=64, dtype="bfloat16", b_swz=128, b_major="row", accum=False,
                  a_layout=None, trans=None):
    """C (+)= A @ B for one warpgroup with A in registers (loaded straight from global
    memory into the wgmma A fragment) and B staged in shared memory. ``trans="B"``: B is
    given as its transpose, (N, K) (``transB=True``); ``trans="A"`` passes ``transA=True``
    (which A from registers declines)."""
    from tilewise.layout import wgmma_a_fragment

    bshape = (N, K) if trans == "B" else (K, N)
    lb = layout(*bshape, b_swz, b_major, dtype)
    la = a_layout if a_layout is not None else wgmma_a_fragment(K)
    opts = {"B": dict(transB=True), "A": dict(transA=True)}.get(trans, {})

    @T.prim_func
    def wgmma_rs_tile(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, (64, K), dtype)
        B = T.match_buffer(B_ptr, bshape, dtype)
        C = T.match_buffer(C_ptr, (64, N), "float32")
        T.device_entry()
        tid = T.thread_id([128])
        Bs = T.alloc_shared(bshape, dtype, layout=lb, align=1024)
        a = T.alloc_local((64, K), dtype, layout=la)
        acc = T.alloc_local((64, N), "float32", layout=wgmma_accumulator(N))
        Tx.cta.copy(Bs[:, :], B[:, :])
        Tx.wg.copy(a[:, :], A[:, :])
        if accum:
            Tx.wg.copy(acc[:, :], C[:, :])
        T.ptx.fence.proxy_async()
        T.cuda.cta_sync()
        T.ptx.wgmma.fence()
        Tx.wg.gemm_async(acc[:, :], a[:, :], Bs[:, :], accum=accum, **opts)
        T.ptx.wgmma.commit_group()
        T.ptx.wgmma.wait_group(0)
        Tx.wg.copy(C[:, :], acc[:, :])

    return wgmma_rs_tile
