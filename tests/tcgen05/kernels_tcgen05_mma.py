"""Single-CTA tcgen05.mma kernels for the gemm_async -> tcgen05 tests: A (M, K) and B (K, N)
staged in shared memory (or A in tensor memory) with a chosen layout, one ``Tx.gemm_async``
by one elected thread, a commit to an mbarrier, the accumulator read back with
``tcgen05.ld`` and stored."""

import numpy as np

from tilewise import T, Tx
from tilewise.ir.dtype import dtype as tw_dtype
from tilewise.layout import (S, TCol, TileLayout, TLane, swizzled_tile, tcgen05_warpgroup_atom,
                             tid_in_wg)


def smem_layout(rows, cols, swizzle, major="row", dtype="bfloat16"):
    """``"row"``: column blocks of ``swizzle`` bytes (what TMA writes; K-major for A (M, K),
    MN-major for B (K, N)); ``"col"``: column-major, swizzled (MN-major A, K-major B);
    ``"plain"``: row-major then swizzled (canonical only when a row is one swizzle span)."""
    bits = tw_dtype(dtype).bits
    if major == "row":
        return swizzled_tile(rows, cols, bits, swizzle)
    if major == "col":  # the transposed blocked tile: column blocks of the (cols, rows) tile
        return swizzled_tile(cols, rows, bits, swizzle).permute((1, 0), shape=(cols, rows))
    base = TileLayout(S[(rows, cols)])
    return base.swizzle(swizzle, bits) if swizzle else base


def n_alloc(cols: int) -> int:
    n = 32
    while n < cols:
        n *= 2
    return n


def make_mma(M=128, N=64, K=64, dtype="bfloat16", b_dtype=None, a_swz=128, b_swz=128,
             a_major="row", b_major="row", accum=False, c_col0=0, half=0):
    """C (+)= A @ B: M = 128 (datapath D) or 64 (datapath F: rows ``64 * half``.. of a
    128-lane accumulator buffer). With ``accum`` the accumulator starts from C (stored to
    tensor memory with tcgen05.st first). ``c_col0``: the accumulator's first column."""
    b_dtype = b_dtype or dtype
    la = smem_layout(M, K, a_swz, a_major, dtype)
    lb = smem_layout(K, N, b_swz, b_major, b_dtype)
    cols = n_alloc(c_col0 + N)
    regs = (TileLayout(S[(128, N) : (1 @ tid_in_wg, 1)]) if M == 128
            else tcgen05_warpgroup_atom("16x256b", N // 8, 32, "F"))
    r0 = 64 * half

    @T.prim_func
    def mma_tile(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M, K), dtype)
        B = T.match_buffer(B_ptr, (K, N), b_dtype)
        C = T.match_buffer(C_ptr, (M, N), "float32")
        T.device_entry()
        warp_id = T.warp_id([4])
        tid = T.thread_id([128])
        As = T.alloc_shared((M, K), dtype, layout=la, align=1024)
        Bs = T.alloc_shared((K, N), b_dtype, layout=lb, align=1024)
        bar = T.alloc_shared([1], "uint64")
        tmem_addr = T.alloc_shared([1], "uint32")
        acc_reg = T.alloc_local((M * N // 128,), "float32")
        acc = acc_reg.view(M, N, layout=regs)
        if warp_id == 0:
            T.ptx.tcgen05.alloc(T.address_of(tmem_addr), n_cols=cols, cta_group=1)
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
        Tx.cta.copy(As[:, :], A[:, :])
        Tx.cta.copy(Bs[:, :], B[:, :])
        T.ptx.fence.proxy_async()
        T.tvm_storage_sync("shared")
        T.ptx.tcgen05.fence.after_thread_sync()
        tmem = T.decl_buffer((128, cols), "float32", scope="tmem",
                             allocated_addr=tmem_addr[0],
                             layout=TileLayout(S[(128, cols) : (1 @ TLane, 1 @ TCol)]))
        if accum:
            Tx.wg.copy(acc[:, :], C[:, :])
            Tx.wg.copy_async(tmem[r0:r0 + M, c_col0:c_col0 + N], acc[:, :])
            T.ptx.tcgen05.wait.st()
            T.ptx.tcgen05.fence.before_thread_sync()
            T.cuda.cta_sync()
            T.ptx.tcgen05.fence.after_thread_sync()
        if warp_id == 1:
            if T.ptx.elect_sync():
                Tx.gemm_async(tmem[r0:r0 + M, c_col0:c_col0 + N], As[:, :], Bs[:, :],
                              accum=accum, dispatch="tcgen05")
                T.ptx.tcgen05.commit(T.address_of(bar[0]))
        T.ptx.mbarrier.try_wait(T.address_of(bar[0]), 0)
        T.ptx.tcgen05.fence.after_thread_sync()
        Tx.wg.copy_async(acc[:, :], tmem[r0:r0 + M, c_col0:c_col0 + N])
        T.ptx.tcgen05.wait.ld()
        Tx.wg.copy(C[:, :], acc[:, :])
        T.ptx.tcgen05.fence.before_thread_sync()
        T.cuda.cta_sync()
        if warp_id == 0:
            T.ptx.tcgen05.relinquish_alloc_permit(cta_group=1)
            T.ptx.tcgen05.dealloc(tmem_addr[0], n_cols=cols, cta_group=1)

    return mma_tile


def inputs(rng, M=128, N=64, K=64, dtype="bfloat16", b_dtype=None):
    def draw(shape, name):
        d = tw_dtype(name).numpy()
        scale = 4.0 if "float8" in name else 1.0
        return (rng.standard_normal(shape) * scale).astype(d)

    return [draw((M, K), dtype), draw((K, N), b_dtype or dtype),
            rng.standard_normal((M, N)).astype(np.float32)]


def reference(a, b, c, accum=False, tf32=False):
    def wide(x):
        if tf32:  # the 13 low mantissa bits of a tf32 input are ignored
            return (x.view(np.uint32) & 0xFFFFE000).view(np.float32).astype(np.float64)
        return x.astype(np.float64)

    return wide(a) @ wide(b) + (c.astype(np.float64) if accum else 0.0)


def make_mma_tmem_a(N=64, K=32):
    """A copied to tensor memory by ``tcgen05.cp`` (``Tx.copy_async``, 128x256b, a bf16
    (128, K) tile at columns 128..), then ``C = A @ B`` with A read from tensor memory
    (``tcgen05.mma`` [a-tmem]); both issued by one thread, so the tensor pipe orders them."""
    la = swizzled_tile(128, K, 16, 2 * K if K <= 64 else 128)
    lb = swizzled_tile(K, N, 16, 128)

    @T.prim_func
    def mma_ts(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, (128, K), "bfloat16")
        B = T.match_buffer(B_ptr, (K, N), "bfloat16")
        C = T.match_buffer(C_ptr, (128, N), "float32")
        T.device_entry()
        warp_id = T.warp_id([4])
        tid = T.thread_id([128])
        As = T.alloc_shared((128, K), "bfloat16", layout=la, align=1024)
        Bs = T.alloc_shared((K, N), "bfloat16", layout=lb, align=1024)
        bar = T.alloc_shared([1], "uint64")
        tmem_addr = T.alloc_shared([1], "uint32")
        acc_reg = T.alloc_local((N,), "float32")
        acc = acc_reg.view(128, N, layout=TileLayout(S[(128, N) : (1 @ tid_in_wg, 1)]))
        if warp_id == 0:
            T.ptx.tcgen05.alloc(T.address_of(tmem_addr), n_cols=256, cta_group=1)
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
        Tx.cta.copy(As[:, :], A[:, :])
        Tx.cta.copy(Bs[:, :], B[:, :])
        T.ptx.fence.proxy_async()
        T.tvm_storage_sync("shared")
        T.ptx.tcgen05.fence.after_thread_sync()
        tmem = T.decl_buffer((128, 256), "float32", scope="tmem", allocated_addr=tmem_addr[0],
                             layout=TileLayout(S[(128, 256) : (1 @ TLane, 1 @ TCol)]))
        tmem_a = T.decl_buffer((128, 512), "bfloat16", scope="tmem",
                               allocated_addr=tmem_addr[0],
                               layout=TileLayout(S[(128, 512) : (1 @ TLane, 1 @ TCol)]))
        if tid == 0:
            Tx.copy_async(tmem_a[:, 256:256 + K], As[:, :])
            Tx.gemm_async(tmem[:, 0:N], tmem_a[:, 256:256 + K], Bs[:, :])
            T.ptx.tcgen05.commit(T.address_of(bar[0]))
        T.ptx.mbarrier.try_wait(T.address_of(bar[0]), 0)
        T.ptx.tcgen05.fence.after_thread_sync()
        Tx.wg.copy_async(acc[:, :], tmem[:, 0:N])
        T.ptx.tcgen05.wait.ld()
        Tx.wg.copy(C[:, :], acc[:, :])
        T.ptx.tcgen05.fence.before_thread_sync()
        T.cuda.cta_sync()
        if warp_id == 0:
            T.ptx.tcgen05.dealloc(tmem_addr[0], n_cols=256, cta_group=1)

    return mma_ts


def make_mma_stages(N=64, KS=32, stages=2):
    """K in ``stages`` shared-memory stages ``As[s]`` / ``Bs[s]``, one ``Tx.gemm_async`` per
    stage in a loop with the run-time ``accum=s > 0``: a run-time stage index and a run-time
    enable-input-d."""
    la = swizzled_tile(stages * 128, KS, 16, 2 * KS).group((stages, 128, KS))
    lb = swizzled_tile(stages * KS, N, 16, 128).group((stages, KS, N))

    @T.prim_func
    def mma_stages(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, (128, stages * KS), "bfloat16")
        B = T.match_buffer(B_ptr, (stages * KS, N), "bfloat16")
        C = T.match_buffer(C_ptr, (128, N), "float32")
        T.device_entry()
        warp_id = T.warp_id([4])
        tid = T.thread_id([128])
        As = T.alloc_shared((stages, 128, KS), "bfloat16", layout=la, align=1024)
        Bs = T.alloc_shared((stages, KS, N), "bfloat16", layout=lb, align=1024)
        bar = T.alloc_shared([1], "uint64")
        tmem_addr = T.alloc_shared([1], "uint32")
        acc_reg = T.alloc_local((N,), "float32")
        acc = acc_reg.view(128, N, layout=TileLayout(S[(128, N) : (1 @ tid_in_wg, 1)]))
        if warp_id == 0:
            T.ptx.tcgen05.alloc(T.address_of(tmem_addr), n_cols=n_alloc(N), cta_group=1)
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
        for s in range(stages):
            Tx.cta.copy(As[s, :, :], A[:, s * KS:s * KS + KS])
            Tx.cta.copy(Bs[s, :, :], B[s * KS:s * KS + KS, :])
        T.ptx.fence.proxy_async()
        T.tvm_storage_sync("shared")
        T.ptx.tcgen05.fence.after_thread_sync()
        tmem = T.decl_buffer((128, N), "float32", scope="tmem", allocated_addr=tmem_addr[0],
                             layout=TileLayout(S[(128, N) : (1 @ TLane, 1 @ TCol)]))
        if tid == 32:
            for s in range(stages):
                Tx.gemm_async(tmem[:, :], As[s, :, :], Bs[s, :, :], accum=s > 0)
            T.ptx.tcgen05.commit(T.address_of(bar[0]))
        T.ptx.mbarrier.try_wait(T.address_of(bar[0]), 0)
        T.ptx.tcgen05.fence.after_thread_sync()
        Tx.wg.copy_async(acc[:, :], tmem[:, :])
        T.ptx.tcgen05.wait.ld()
        Tx.wg.copy(C[:, :], acc[:, :])
        T.ptx.tcgen05.fence.before_thread_sync()
        T.cuda.cta_sync()
        if warp_id == 0:
            T.ptx.tcgen05.dealloc(tmem_addr[0], n_cols=n_alloc(N), cta_group=1)

    return mma_stages
