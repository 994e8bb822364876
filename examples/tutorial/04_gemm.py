"""Tutorial step 4: C = relu(A @ B + bias) on Hopper's tensor cores (docs/tutorial.md).

A (M, K) and B (K, N) are bfloat16, row-major; bias (N,) float32; C (M, N) bfloat16. Each
CTA is one warpgroup (128 threads) and computes one 64 x 128 tile of C:

1. Thread 0 asks the TMA engine for the A tile (64 x 64) and the B tile (64 x 128) of the
   K step (``copy_async(..., dispatch="tma", mbar=...)``); the engine writes them in the
   128-byte-swizzled layout wgmma reads (``swizzled_tile``, step 2's swizzle) and counts
   the bytes on an mbarrier, which every thread waits for.
2. ``Tx.wg.gemm_async`` issues ``wgmma.mma_async`` (four ``m64n128k16``, one per 16 of K)
   reading both tiles from shared memory and accumulating in registers, float32, in the
   accumulator layout ``wgmma_accumulator(128)``. ``wgmma.fence`` before, ``commit_group``
   and ``wait_group(0)`` after: the instruction is asynchronous and the completion is ours.
3. A barrier, so no thread's next TMA overwrites a tile another warp's wgmma still reads.

The epilogue works on the accumulator where it lies, each thread on its own registers:
add the bias (a row vector in registers, ``wgmma_accumulator_columns``: each thread holds
its columns), ReLU (``maximum`` with 0), cast to bfloat16 and store.

This is the simple form: one stage (the loads of step k + 1 wait for the wgmma of step
k), one warpgroup. ``examples/gemm_hopper.py`` is the fast form of the same instructions:
a ring of stages so the loads run ahead, a producer warpgroup, two consumer warpgroups and
persistent CTAs.
"""

import numpy as np

from tilewise import T, Tx
from tilewise.layout import swizzled_tile, wgmma_accumulator, wgmma_accumulator_columns

TARGET = "sm_90a"
BM, BN, BK = 64, 128, 64  # the CTA's tile of C, and the K step


def make_gemm(M: int, N: int, K: int):
    """``k(A, B, bias, C)``: C = relu(A @ B + bias), M, N, K multiples of 64, 128, 64."""
    if M % BM or N % BN or K % BK:
        raise ValueError(f"M, N, K = {M}, {N}, {K} must be multiples of {BM}, {BN}, {BK}")
    step_bytes = (BM * BK + BK * BN) * 2  # what TMA delivers per K step (bfloat16)

    @T.prim_func
    def gemm(A_ptr: T.handle, B_ptr: T.handle, bias_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M, K), "bfloat16")
        B = T.match_buffer(B_ptr, (K, N), "bfloat16")
        bias = T.match_buffer(bias_ptr, (N,), "float32")
        C = T.match_buffer(C_ptr, (M, N), "bfloat16")
        T.device_entry()
        bn, bm = T.cta_id([N // BN, M // BM])
        tid = T.thread_id([128])
        m0 = bm * BM
        n0 = bn * BN
        As = T.alloc_shared((BM, BK), "bfloat16", layout=swizzled_tile(BM, BK), align=1024)
        Bs = T.alloc_shared((BK, BN), "bfloat16", layout=swizzled_tile(BK, BN), align=1024)
        bar = T.alloc_shared((1,), "uint64")
        acc = T.alloc_local((BM, BN), "float32", layout=wgmma_accumulator(BN))
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
        T.cuda.cta_sync()
        for k in range(K // BK):
            if tid == 0:  # 1. one thread starts both copies
                T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), step_bytes)
                Tx.thread.copy_async(As[:, :], A[m0:m0 + BM, k * BK:k * BK + BK],
                                     dispatch="tma", mbar=T.address_of(bar[0]))
                Tx.thread.copy_async(Bs[:, :], B[k * BK:k * BK + BK, n0:n0 + BN],
                                     dispatch="tma", mbar=T.address_of(bar[0]))
            T.ptx.mbarrier.try_wait(T.address_of(bar[0]), k % 2)  # phase k's bytes landed
            T.ptx.wgmma.fence()  # 2. the tensor cores
            Tx.wg.gemm_async(acc[:, :], As[:, :], Bs[:, :], accum=k > 0)
            T.ptx.wgmma.commit_group()
            T.ptx.wgmma.wait_group(0)
            T.cuda.cta_sync()  # 3. every warp is done with As and Bs
        # the epilogue, in registers
        b = T.alloc_local((BN,), "float32", layout=wgmma_accumulator_columns(BN))
        Tx.wg.copy(b[:], bias[n0:n0 + BN])
        Tx.wg.add(acc[:, :], acc[:, :], b[:])
        Tx.wg.maximum(acc[:, :], acc[:, :], 0.0)
        out = T.alloc_local((BM, BN), "bfloat16", layout=wgmma_accumulator(BN))
        Tx.wg.cast(out[:, :], acc[:, :])
        Tx.wg.copy(C[m0:m0 + BM, n0:n0 + BN], out[:, :])

    return gemm


SHAPE = (128, 256, 256)  # M, N, K: 2 x 2 CTAs, 4 K steps
gemm = make_gemm(*SHAPE)
RTOL = 2.0 ** -7  # bfloat16 rounding of C (2^-8) and the float32 sums' order
ATOL = 2.0 ** -6  # entries near 0 round relative to the row's magnitude


def inputs(rng, shape=SHAPE):
    import ml_dtypes

    m, n, k = shape
    bf16 = ml_dtypes.bfloat16
    return [rng.standard_normal((m, k)).astype(bf16), rng.standard_normal((k, n)).astype(bf16),
            rng.standard_normal(n).astype(np.float32), np.full((m, n), np.nan, bf16)]


def reference(a, b, bias, c):
    y = a.astype(np.float64) @ b.astype(np.float64) + bias
    return [a, b, bias, np.maximum(y, 0).astype(c.dtype)]
