"""A Hopper GEMM in tilewise: C = A @ B on the tensor cores of an H100 / H200 (sm_90a).

A is (M, K) and B is (K, N), both row-major, bf16 or fp16; C is (M, N) in the same dtype,
accumulated in float32: exactly what ``torch.matmul(A, B)`` takes and returns. One kernel
serves every M, N and K (they are symbolic sizes; K and N must be multiples of 8, the
16-byte row alignment TMA needs): the tails are read as zeros and not written, by TMA.

The technique, from the outside in:

* **Persistent CTAs.** The grid is one CTA per SM; CTA ``b`` takes output tiles ``b``,
  ``b + #SMs``, ... in a *grouped* order (``GROUP_M`` tile rows at a time) so that tiles
  running together share rows of A and columns of B in L2. The order is written once, in
  ``tilewise.sched.GroupedTiles``: the producer and the consumers each call its
  ``@T.inline`` methods, so they cannot disagree about which tile comes next. A problem
  with too few tiles to occupy the SMs (512 x 512) gets narrower tiles (128 x 128 or
  128 x 64) and a deeper ring instead: more CTAs work, each on a cheaper tile.
* **Warp specialisation.** 384 threads: warpgroups 0 and 1 are the *consumers*,
  warpgroup 2 the *producer*. The producer gives its registers away (``setmaxnreg`` 40)
  and the consumers take them (232): each consumer holds a 64 x 256 float32
  accumulator, 128 registers per thread. (ptxas honours ``setmaxnreg`` only when it
  compiles the whole program; nvJitLink compiles PTX as a separate unit and ignores it, so
  every thread gets 65536 / 384 = 168. The accumulator is zeroed at each tile, so its old
  values die at the epilogue and the kernel fits in 154 registers without spilling.
  ``producer="warp"``: 288 threads, one producer warp, 224 registers for everyone.)
* **A ring of 3 (or 4) shared buffers**, each one (128, 64) tile of A and one (64, 256) tile
  of B, guarded by two mbarriers per stage: ``full[s]`` (the producer announces the bytes
  with ``arrive.expect_tx``; TMA completes them) and ``empty[s]`` (each consumer
  warpgroup arrives once it no longer reads the stage). The phase a wait expects is the
  parity of the number of times the ring went round.
* **TMA loads.** One producer thread issues ``copy_async(..., dispatch="tma")`` per tile:
  the copy engine writes the tile in the 128-byte-swizzled layout the tensor cores read
  (``swizzled_tile``), out-of-bounds elements as zeros.
* **wgmma.** Each consumer issues ``gemm_async`` on its 64 rows of the A tile and the whole
  B tile (4 ``wgmma.m64n256k16`` per stage, descriptors derived from the layouts), keeps
  one group in flight (``wait_group(1)``) and then releases the *previous* stage.
* **Epilogue through shared memory.** The accumulator is converted to the output dtype
  in registers, written to a swizzled shared tile, fenced for the async proxy and stored
  by TMA (rows and columns past M and N are dropped). The store of one tile overlaps the
  next tile's main loop; its shared tile is reused only after ``wait_group_read``.

``make_gemm(M, N, K, dtype)`` returns the kernel, launched as ``k(A, B, C)``. The sizes are
checked (TMA's alignment rule) and choose the tile width; the kernel itself takes any
shape.
"""

from __future__ import annotations

from tilewise import T, Tx
from tilewise.layout import swizzled_tile, wgmma_accumulator
from tilewise.sched import GroupedTiles

BM, BK = 128, 64  # CTA tile rows and K step; each consumer warpgroup owns 64 of the rows
BN = 256  # CTA tile columns for large problems (narrower tiles for few output tiles)
GROUP_M = 8  # tile rows walked together (L2 reuse)
H200_SMS = 132

M = T.int32()
N = T.int32()
K = T.int32()


def make_gemm(M_: int | None = None, N_: int | None = None, K_: int | None = None,
              dtype: str = "bfloat16", num_sms: int | None = None, stages: int | None = None,
              producer: str = "warpgroup", bn: int | None = None):
    """The GEMM kernel ``k(A, B, C)`` for ``dtype`` in {"bfloat16", "float16"}. The sizes,
    when given, are checked against TMA's alignment rule; the kernel itself is symbolic.
    ``producer="warpgroup"`` (384 threads, setmaxnreg 40/232) or ``"warp"`` (288 threads:
    one producer warp, and 65536 / 288 registers for everyone without setmaxnreg).
    ``bn``: the tile's columns (256, 128 or 64); by default 256, or narrower when M and N
    are given and make too few 128 x 256 tiles to occupy half the SMs (512 x 512 has 8)."""
    if dtype not in ("bfloat16", "float16"):
        raise ValueError(f"make_gemm takes bfloat16 or float16, not {dtype!r}")
    for name, v in (("N", N_), ("K", K_)):
        if v is not None and v % 8:
            raise ValueError(f"{name} = {v} is not a multiple of 8: TMA needs 16-byte rows")
    if producer not in ("warpgroup", "warp"):
        raise ValueError(f"producer={producer!r}: 'warpgroup' or 'warp'")
    threads = 256 + (128 if producer == "warpgroup" else 32)
    sms = num_sms or _sm_count()
    if bn is None:
        bn = BN
        while (bn > 64 and M_ is not None and N_ is not None
               and -(-M_ // BM) * -(-N_ // bn) < sms // 2):
            bn //= 2
    if bn not in (64, 128, 256):
        raise ValueError(f"bn={bn}: the tile's columns are 64, 128 or 256")
    if stages is None:  # as many as fit beside the epilogue tile in 227 KiB (3 at bn=256)
        stages = min(4, (227 * 1024 - BM * bn * 2 - 2048) // ((BM * BK + BK * bn) * 2))
    stage_bytes = (BM * BK + BK * bn) * 2
    a_layout = swizzled_tile(BM, BK, 16, 128, stages=stages)
    b_layout = swizzled_tile(BK, bn, 16, 128, stages=stages)
    c_layout = swizzled_tile(BM // 2, bn, 16, 128, stages=2)

    @T.prim_func
    def gemm(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M, K), dtype)
        B = T.match_buffer(B_ptr, (K, N), dtype)
        C = T.match_buffer(C_ptr, (M, N), dtype)
        T.device_entry()
        bx = T.cta_id([sms])
        tid = T.thread_id([threads])
        wg = tid // 128  # 0, 1: the consumers; 2: the producer
        # the operand ring and the epilogue tiles: dynamic shared memory (208 KiB)
        As = T.alloc_buffer((stages, BM, BK), dtype, scope="shared.dyn", layout=a_layout,
                            align=1024)
        Bs = T.alloc_buffer((stages, BK, bn), dtype, scope="shared.dyn", layout=b_layout,
                            align=1024)
        Cs = T.alloc_buffer((2, BM // 2, bn), dtype, scope="shared.dyn", layout=c_layout,
                            align=1024)
        full = T.alloc_shared((stages,), "uint64")
        empty = T.alloc_shared((stages,), "uint64")
        if tid == 0:
            for s in range(stages):
                T.ptx.mbarrier.init(T.address_of(full[s]), 1)
                T.ptx.mbarrier.init(T.address_of(empty[s]), 2)
        T.cuda.cta_sync()

        k_tiles = (K + BK - 1) // BK
        # the one tile order both roles walk (tilewise.sched): grouped, round robin
        sched = GroupedTiles(T.ceildiv(M, BM), T.ceildiv(N, bn), first=bx, step=sms,
                             group_m=GROUP_M)
        if wg == 2:  # ---------------------------------------------------- producer
            if producer == "warpgroup":
                T.ptx.setmaxnreg(False, 40)
            if tid == 256:
                it = 0
                for t in sched.tiles():
                    mt, nt = sched.coords(t)
                    m0 = mt * BM
                    n0 = nt * bn
                    for kt in range(k_tiles):
                        s = it % stages
                        T.ptx.mbarrier.try_wait(T.address_of(empty[s]), (it // stages + 1) % 2)
                        T.ptx.mbarrier.arrive.expect_tx(T.address_of(full[s]), stage_bytes)
                        Tx.thread.copy_async(As[s, :, :], A[m0:m0 + BM, kt * BK:kt * BK + BK],
                                             dispatch="tma", mbar=T.address_of(full[s]))
                        Tx.thread.copy_async(Bs[s, :, :], B[kt * BK:kt * BK + BK, n0:n0 + bn],
                                             dispatch="tma", mbar=T.address_of(full[s]))
                        it = it + 1
        else:  # ------------------------------------------------------------ consumers
            if producer == "warpgroup":
                T.ptx.setmaxnreg(True, 232)
            cw = wg  # which 64 rows of the tile this warpgroup computes
            leader = tid % 128 == 0
            acc = T.alloc_local((BM // 2, bn), "float32", layout=wgmma_accumulator(bn))
            out = T.alloc_local((BM // 2, bn), dtype, layout=wgmma_accumulator(bn))
            it = 0
            for t in sched.tiles():
                mt, nt = sched.coords(t)
                m0 = mt * BM
                n0 = nt * bn
                Tx.wg.zero(acc[:, :])  # the last tile's values are dead: registers free up
                for kt in range(k_tiles):
                    s = it % stages
                    T.ptx.mbarrier.try_wait(T.address_of(full[s]), it // stages % 2)
                    T.ptx.wgmma.fence()
                    Tx.wg.gemm_async(acc[:, :], As[s, cw * 64:cw * 64 + 64, :], Bs[s, :, :],
                                     accum=kt > 0)
                    T.ptx.wgmma.commit_group()
                    T.ptx.wgmma.wait_group(1)  # the previous stage's wgmma has finished
                    if kt > 0 and leader:
                        T.ptx.mbarrier.arrive(T.address_of(empty[(it + stages - 1) % stages]))
                    it = it + 1
                T.ptx.wgmma.wait_group(0)
                if leader:
                    T.ptx.mbarrier.arrive(T.address_of(empty[(it + stages - 1) % stages]))
                # epilogue: registers -> shared (the output dtype) -> TMA store
                Tx.wg.cast(out[:, :], acc[:, :])
                if leader:
                    T.ptx.cp_async.bulk.wait_group_read(0)  # the last store left Cs[cw]
                T.ptx.bar.sync(1 + cw, 128)
                Tx.wg.copy(Cs[cw, :, :], out[:, :])
                T.ptx.fence.proxy_async()
                T.ptx.bar.sync(1 + cw, 128)
                if leader:
                    Tx.thread.copy_async(C[m0 + cw * 64:m0 + cw * 64 + 64, n0:n0 + bn],
                                         Cs[cw, :, :], dispatch="tma")
                    T.ptx.cp_async.bulk.commit_group()
            if leader:
                T.ptx.cp_async.bulk.wait_group(0)

    return gemm


def _sm_count() -> int:
    """The SM count of this machine's GPU (one persistent CTA each); the H200's without one."""
    try:
        from tilewise import runtime

        if runtime.gpu_available():
            return runtime.sm_count()
    except Exception:  # noqa: BLE001 - no driver, no GPU: the simulator's default
        pass
    return H200_SMS


SHAPE = (256, 256, 128)  # M, N, K of `tilewise run`: two output tiles, two K-steps
TARGET = "sm_90a"
gemm = make_gemm(*SHAPE, num_sms=H200_SMS, bn=256)  # the large-problem form, shown
RTOL = 2.0 ** -7  # the bf16 rounding of C (2^-8) plus float32 accumulation order
ATOL = 2.0 ** -6  # entries near 0: their rounding is relative to the row's magnitude


def inputs(rng, shape=SHAPE, dtype="bfloat16"):
    """Random A (M, K) and B (K, N), never zeros, and C poisoned with NaN."""
    import ml_dtypes
    import numpy as np

    d = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    m, n, k = shape
    return [rng.standard_normal((m, k)).astype(d), rng.standard_normal((k, n)).astype(d),
            np.full((m, n), np.nan, d)]


def reference(a, b, c):
    """C = A @ B in float64, rounded to the inputs' dtype (what `tilewise run` compares)."""
    import numpy as np

    return [a, b, (a.astype(np.float64) @ b.astype(np.float64)).astype(a.dtype)]
