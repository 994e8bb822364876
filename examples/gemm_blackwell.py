"""A Blackwell GEMM, ``C = A @ B``, written in tilewise: the end state of TIRx's Blackwell
GEMM journey with tcgen05.

``make_gemm(M, N, K, dtype="bfloat16")`` returns a kernel launched as ``k(A, B, C)`` with A
(M, K), B (K, N) and C (M, N) row-major, as ``torch.matmul(A, B)`` takes them; C has the
inputs' dtype, accumulated in float32. Any M, N, K.

Structure (one CTA of 256 threads per SM, a persistent loop over 128 x BN output tiles,
taken in the grouped order of ``tilewise.sched.GroupedTiles``: the three roles below each
call the same scheduler, so the order is written once):

* **tensor memory**: warp 1 allocates ``2 * BN`` columns, two float32 accumulators (this
  CTA's ``i``-th tile uses ``i % 2``), so the epilogue of one tile overlaps the MMAs of the next.
* **producer** (warp 0): fills a ring of ``STAGES`` shared-memory stages, each a 128 x 64
  tile of A (K-major) and a 64 x BN tile of B (MN-major), both blocked 128-byte-swizzled
  (``swizzled_tile``, what a TMA load writes). It waits for a stage to be *empty*; one
  elected thread announces the stage's bytes on its *full* barrier
  (``mbarrier.arrive.expect_tx``) and issues the two TMA tensor copies
  (``Tx.thread.copy_async(..., dispatch="tma", mbar=full[s])``: one box for A, one per
  64-column block of B) that complete on it. Boxes hanging over M, N or K are zero-filled by
  the copy engine, so any M, N, K work.
* **MMA** (warp 1): waits for a full stage, and one elected thread issues the stage's
  ``Tx.gemm_async(acc, A_stage, B_stage, accum=kb > 0, dispatch="tcgen05")`` (four
  ``tcgen05.mma.kind::f16`` M128 N BN K16, descriptors built from the layouts), then
  ``tcgen05.commit`` to the stage's *empty* barrier (the stage is free once those MMAs
  have read it); after the tile's last stage, a commit to the accumulator's *full* barrier.
* **epilogue** (warpgroup 1, warps 4..7): waits for the accumulator, reads it back with
  ``Tx.wg.copy_async`` (``tcgen05.ld.32x32b``, 32 columns at a time, at a run-time column),
  rounds to the output dtype and stores the in-range part of C; then it frees the
  accumulator (an arrival of its 128 threads on the accumulator's *empty* barrier).

**Rows TMA cannot describe.** A tensor map's row stride must be a multiple of 16 bytes
(K and N multiples of 8 for 16-bit data). Otherwise the producer warp loads the stage
element by element (guarded, zero outside), then ``fence.proxy.async`` (its generic stores
are read by the MMA through the async proxy) and 32 ordinary arrivals on *full*.

Nothing here has run on Blackwell hardware (there is none to run it on): the cubin is
assembled for sm_100a by nvJitLink, and the simulator executes the lowered program.
Simulated, a 256 x 256 x 256 bfloat16 product matches numpy (float32 accumulation): every
element within one bfloat16 rounding of the float64 product.
"""

from __future__ import annotations

import numpy as np

from tilewise import T, Tx, config_error
from tilewise.layout import S, TCol, TileLayout, TLane, swizzled_tile, tid_in_wg
from tilewise.sched import GroupedTiles

TARGET = "sm_100a"
GROUP_M = 8  # tile rows walked together (L2 reuse), as in the Hopper GEMM
BM, BK = 128, 64  # rows of a tile (datapath D: 128 lanes); K of a stage (128 bytes of 16-bit)
EPI = 32  # accumulator columns the epilogue reads at a time
SMS = 148  # B200 streaming multiprocessors: the persistent grid's default size
ELEM = {"bfloat16": 2, "float16": 2}


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _tmem_cols(bn: int) -> int:
    n = 32
    while n < 2 * bn:
        n *= 2
    return n


def make_gemm(M: int, N: int, K: int, dtype: str = "bfloat16", *, BN: int = 128,
              STAGES: int = 4, ctas: int | None = None):
    """The kernel ``k(A, B, C)``: ``C = A @ B`` for row-major A (M, K), B (K, N), C (M, N) of
    ``dtype`` (bfloat16 or float16). ``BN`` (64, 128, 192 or 256): output tile width;
    ``STAGES``: depth of the shared-memory ring; ``ctas``: the persistent grid (default: one
    CTA per SM, at most one per tile)."""
    if dtype not in ELEM:
        raise config_error(f"make_gemm takes bfloat16 or float16 inputs, not {dtype!r}")
    if BN % 64 or not 64 <= BN <= 256:  # whole 128-byte swizzle blocks of B's 16-bit rows
        raise config_error(f"BN={BN} must be 64, 128, 192 or 256")
    eb = ELEM[dtype]
    tm, tn, nk = _ceil(M, BM), _ceil(N, BN), _ceil(K, BK)
    tiles = tm * tn
    grid = ctas or min(tiles, SMS)
    cols = _tmem_cols(BN)
    la = swizzled_tile(BM, BK, 8 * eb, 128, stages=STAGES)
    lb = swizzled_tile(BK, BN, 8 * eb, 128, stages=STAGES)
    tma = (K * eb) % 16 == 0 and (N * eb) % 16 == 0  # tensor maps need 16-byte row strides
    stage_bytes = (BM * BK + BK * BN) * eb  # a stage's TMA boxes, out-of-range parts included
    regs = TileLayout(S[(128, EPI) : (1 @ tid_in_wg, 1)])

    @T.prim_func
    def gemm(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M, K), dtype)
        B = T.match_buffer(B_ptr, (K, N), dtype)
        C = T.match_buffer(C_ptr, (M, N), dtype)
        T.device_entry()
        cta = T.cta_id([grid])
        wg = T.warpgroup_id([2])
        warp_id = T.warp_id([8])
        lane = T.lane_id([32])
        tid = T.thread_id([256])
        As = T.alloc_buffer((STAGES, BM, BK), dtype, scope="shared.dyn", layout=la, align=1024)
        Bs = T.alloc_buffer((STAGES, BK, BN), dtype, scope="shared.dyn", layout=lb, align=1024)
        full = T.alloc_shared([STAGES], "uint64")
        empty = T.alloc_shared([STAGES], "uint64")
        acc_full = T.alloc_shared([2], "uint64")
        acc_empty = T.alloc_shared([2], "uint64")
        tmem_addr = T.alloc_shared([1], "uint32")
        if warp_id == 1:
            T.ptx.tcgen05.alloc(T.address_of(tmem_addr), n_cols=cols, cta_group=1)
        if tid == 0:
            for s in range(STAGES):
                T.ptx.mbarrier.init(T.address_of(full[s]), 1 if tma else 32)
                T.ptx.mbarrier.init(T.address_of(empty[s]), 1)
            for a in range(2):
                T.ptx.mbarrier.init(T.address_of(acc_full[a]), 1)
                T.ptx.mbarrier.init(T.address_of(acc_empty[a]), 128)
        T.ptx.tcgen05.fence.before_thread_sync()
        T.cuda.cta_sync()
        T.ptx.tcgen05.fence.after_thread_sync()
        acc = T.decl_buffer((128, cols), "float32", scope="tmem", allocated_addr=tmem_addr[0],
                            layout=TileLayout(S[(128, cols) : (1 @ TLane, 1 @ TCol)]))
        # the tile order all three roles walk, written once (tilewise.sched)
        sched = GroupedTiles(tm, tn, first=cta, step=grid, group_m=GROUP_M)
        if wg == 1:
            # ---- epilogue: accumulator -> registers -> C
            out_reg = T.alloc_local((EPI,), "float32")
            out = out_reg.view(128, EPI, layout=regs)
            r = tid - 128
            for lt in sched.tiles():  # this CTA's lt-th tile
                mt, nt = sched.coords(lt)
                buf = lt % 2
                T.ptx.mbarrier.try_wait(T.address_of(acc_full[buf]), lt // 2 % 2)
                T.ptx.tcgen05.fence.after_thread_sync()
                row = mt * BM + r
                for j in range(BN // EPI):
                    c0 = buf * BN + j * EPI
                    Tx.wg.copy_async(out[:, :], acc[:, c0:c0 + EPI])
                    T.ptx.tcgen05.wait.ld()
                    col = nt * BN + j * EPI
                    if row < M:
                        for i in range(EPI):
                            if col + i < N:
                                C[row, col + i] = T.cast(out_reg[i], dtype)
                T.ptx.tcgen05.fence.before_thread_sync()
                T.ptx.mbarrier.arrive(T.address_of(acc_empty[buf]))
        elif warp_id == 0:
            # ---- producer: global -> the shared-memory ring
            for lt in sched.tiles():  # this CTA's lt-th tile
                mt, nt = sched.coords(lt)
                m0 = mt * BM
                n0 = nt * BN
                for kb in range(nk):
                    it = lt * nk + kb
                    s = it % STAGES
                    T.ptx.mbarrier.try_wait(T.address_of(empty[s]), it // STAGES % 2 ^ 1)
                    k0 = kb * BK
                    if tma:
                        if T.ptx.elect_sync():
                            T.ptx.mbarrier.arrive.expect_tx(T.address_of(full[s]), stage_bytes)
                            Tx.thread.copy_async(As[s, :, :], A[m0:m0 + BM, k0:k0 + BK],
                                                 dispatch="tma", mbar=T.address_of(full[s]))
                            Tx.thread.copy_async(Bs[s, :, :], B[k0:k0 + BK, n0:n0 + BN],
                                                 dispatch="tma", mbar=T.address_of(full[s]))
                    else:
                        for q in range(BM * BK // 32):
                            ar = (q * 32 + lane) // BK
                            ak = (q * 32 + lane) % BK
                            ok = m0 + ar < M and k0 + ak < K
                            As[s, ar, ak] = T.select(
                                ok, A[T.min(m0 + ar, M - 1), T.min(k0 + ak, K - 1)],
                                T.cast(0, dtype))
                        for q in range(BK * BN // 32):
                            bk = (q * 32 + lane) // BN
                            bn = (q * 32 + lane) % BN
                            ok = k0 + bk < K and n0 + bn < N
                            Bs[s, bk, bn] = T.select(
                                ok, B[T.min(k0 + bk, K - 1), T.min(n0 + bn, N - 1)],
                                T.cast(0, dtype))
                        T.ptx.fence.proxy_async()
                        T.ptx.mbarrier.arrive(T.address_of(full[s]))
        elif warp_id == 1:
            # ---- MMA: one elected thread issues tcgen05.mma
            for lt in sched.tiles():
                buf = lt % 2
                T.ptx.mbarrier.try_wait(T.address_of(acc_empty[buf]), lt // 2 % 2 ^ 1)
                T.ptx.tcgen05.fence.after_thread_sync()
                for kb in range(nk):
                    it = lt * nk + kb
                    s = it % STAGES
                    T.ptx.mbarrier.try_wait(T.address_of(full[s]), it // STAGES % 2)
                    T.ptx.tcgen05.fence.after_thread_sync()
                    if T.ptx.elect_sync():
                        Tx.gemm_async(acc[:, buf * BN:buf * BN + BN], As[s, :, :], Bs[s, :, :],
                                      accum=kb > 0, dispatch="tcgen05")
                        T.ptx.tcgen05.commit(T.address_of(empty[s]))
                if T.ptx.elect_sync():
                    T.ptx.tcgen05.commit(T.address_of(acc_full[buf]))
        T.ptx.tcgen05.fence.before_thread_sync()
        T.cuda.cta_sync()
        if warp_id == 1:
            T.ptx.tcgen05.fence.after_thread_sync()
            T.ptx.tcgen05.relinquish_alloc_permit(cta_group=1)
            T.ptx.tcgen05.dealloc(tmem_addr[0], n_cols=cols, cta_group=1)

    return gemm


gemm = make_gemm(256, 256, 256)
RTOL = 2.0 ** -7  # `tilewise run`: one bfloat16 ulp relative (each side within half of one)


def inputs(rng, M: int = 256, N: int = 256, K: int = 256, dtype: str = "bfloat16"):
    """Random A, B and a poisoned (NaN) C."""
    from tilewise.ir.dtype import dtype as tw_dtype

    d = tw_dtype(dtype).numpy()
    a = rng.standard_normal((M, K)).astype(d)
    b = rng.standard_normal((K, N)).astype(d)
    return [a, b, np.full((M, N), np.nan, dtype=d)]


def product(a, b):
    """The float64 product of the inputs (what float32 accumulation approximates)."""
    return a.astype(np.float64) @ b.astype(np.float64)


def reference(a, b, c):
    """What the arguments hold afterwards (``tilewise run``): A, B, and C = the product
    rounded to C's dtype."""
    return [a, b, product(a, b).astype(c.dtype)]


def check(c, a, b) -> float:
    """The largest error in units of the output dtype's rounding: each element of C must be
    within one rounding (half an ulp: at most 2^-8 of the value for bfloat16's 8 significant
    bits, 2^-11 for float16's 11) of the float64 product, plus the float32 accumulation's
    error (1e-5 of the largest |C|, small next to it). Returns the largest ratio (<= 1
    passes)."""
    ref = product(a, b)
    half_ulp = 2.0 ** -8 if c.dtype.name == "bfloat16" else 2.0 ** -11
    bound = half_ulp * np.abs(ref) * 1.001 + 1e-5 * np.abs(ref).max()
    return float((np.abs(c.astype(np.float64) - ref) / bound).max())


if __name__ == "__main__":
    import time

    import tilewise as tw

    a, b, c = inputs(np.random.default_rng(0))
    k = gemm
    start = time.perf_counter()
    tw.simulate(k, a, b, c, target=TARGET)
    print(f"simulated 256 x 256 x 256 bf16 in {time.perf_counter() - start:.1f} s; "
          f"error {check(c, a, b):.3f} of one bf16 rounding")
    print(f"sm_100a cubin: {len(tw.compile(k, TARGET).cubin)} bytes (not run: no Blackwell GPU)")
