"""FP8 GEMM on Hopper (sm_90a) in tilewise: C = (A · SA)(B · SB)ᵀ in bf16, DeepGEMM's layout.

A is (M, K) ``float8_e4m3`` row-major, B is (N, K) ``float8_e4m3`` row-major (K-major, the
only form fp8 ``wgmma`` reads), C is (M, N) bfloat16. The scales, all float32, come in
three forms (``scaling=``):

* ``"block"`` (DeepGEMM's, the default): SA (M, ⌈K/128⌉), one scale per 1 x 128 block of
  A; SB (⌈N/128⌉, ⌈K/128⌉), one per 128 x 128 block of B. SA and SB may have any strides
  (row-major, or DeepGEMM's MN-major ``sa.T.contiguous().T``): they are bound at launch.
* ``"row"`` (``torch._scaled_mm`` row-wise): SA (M, 1) per row of A, SB (1, N) per row of B
  (column of C): ``C = SA * (A @ B.T) * SB``.
* ``"tensor"`` (``torch._scaled_mm`` per tensor): SA (1,) and SB (1,).

``torch._scaled_mm(a, b, scale_a, scale_b)`` takes its second matrix column-major, (K, N):
that is ``B.t()`` here, the same bytes; its scalar scales are passed here as ``s.reshape(1)``.

**Two-level accumulation.** Hopper's fp8 ``wgmma`` adds its products into the float32
accumulator with fewer mantissa bits than float32 (measured on the H200: 3.8e-4 of the
largest |C| after one 128-deep block). So each consumer warpgroup lets ``wgmma`` accumulate
one 128-deep K block only (4 x ``m64nNk32``, the first with ``scale-d`` = 0) into a
*partial* fragment, waits for it, and adds it, scaled by ``SA[row, kb] * SB[nb, kb]``, into
a second float32 fragment on the CUDA cores (``Tx.wg.fma`` with the per-row scale vector
broadcast over the columns: ``wgmma_accumulator_rows()``, each thread holding the scales of
its own two rows). While one warpgroup promotes, the other warpgroup's ``wgmma`` keeps the
tensor cores busy; each block's scales are loaded one block ahead. ``overlap=True`` (one-wave
tiles) takes the k-blocks in pairs into two partials, so that the first's promotion also
runs beside the warpgroup's own second wgmma.
With ``"row"`` / ``"tensor"`` the partials are added unscaled and the scales applied once in
the epilogue (``fast_accum=True``: one fragment, wgmma accumulates the whole K, as
``torch._scaled_mm(use_fast_accum=True)``).

**The kernel** is :mod:`gemm_hopper`'s: persistent CTAs (one per SM, tiles in a grouped
order), 384 threads: warpgroups 0 and 1 consume, warpgroup 2 produces (``setmaxnreg``),
a ring of ``stages`` shared buffers (A (bm, 128) and B (bn, 128), 128-byte swizzled, filled
by TMA, out-of-bounds rows and columns as zeros) guarded by ``full`` / ``empty``
mbarriers, and the epilogue through swizzled shared tiles and TMA stores. A tile is
``bm x bn`` (``gemm_fp8_tiles.Tile``): the consumers split it into waves of 64 x ``wn``
sharing one partial fragment (bm 64: both on the 64 rows, half the columns each, so a small
M still has two warpgroups and enough tiles; bm 128: 64 rows each; bm 256 or bn 256: two
waves each). ``cluster=2`` makes CTA pairs that share a tile of B (or of A), each loading
half of it into both CTAs by TMA multicast. Sizes given to the factory choose the tile
(``gemm_fp8_tiles.choose_tile``, a cost model after DeepGEMM's); the kernel itself is
symbolic in M, N and K (N a multiple of 8, K of 16: TMA's 16-byte rows). docs/gemm_fp8.md
has the details.

Grouped GEMMs for MoE (contiguous and masked layouts, fp8 and bf16) are in
``gemm_grouped.py`` (``make_grouped_gemm_fp8`` is re-exported here).
"""

from __future__ import annotations

import functools

import tilewise

from tilewise import T, Tx, config_error, runtime
from tilewise.layout import wgmma_accumulator, wgmma_accumulator_columns, wgmma_accumulator_rows
from tilewise.sched import GroupedTiles


def _sibling(name: str):
    """The example ``name`` of this folder, loaded by path (examples are files, not a
    package)."""
    import importlib.util
    import pathlib

    spec = importlib.util.spec_from_file_location(
        name, pathlib.Path(__file__).with_name(f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


TILING = _sibling("gemm_fp8_tiles")  # the tile and the model that chooses it
Tile, choose_tile, BK, H200_SMS = TILING.Tile, TILING.choose_tile, TILING.BK, TILING.H200_SMS
GROUP_M = 8  # tile rows walked together (L2 reuse)
SCALINGS = ("block", "row", "tensor")
FP8 = "float8_e4m3"

M = T.int32()
N = T.int32()
K = T.int32()
SA0 = T.int32()  # strides of SA and SB ("block"): bound from the arrays at launch
SA1 = T.int32()
SB0 = T.int32()
SB1 = T.int32()


@T.inline
def cta_origin(sched, j, nb_, na_, rank, bm, bn):
    """First row and column of this CTA's ``j``-th tile: the scheduler walks tiles in units
    of the cluster (``nb_`` m-tiles x ``na_`` n-tiles, one per CTA of a pair)."""
    mt, nt = sched.coords(j)
    return (mt * nb_ + rank * (nb_ - 1)) * bm, (nt * na_ + rank * (na_ - 1)) * bn


def check_sizes(N_: int | None, K_: int | None, elem_bytes: int = 1) -> None:
    """TMA's rule on the given sizes: 16-byte rows of C (bf16) and of A and B."""
    for name, v, mult in (("N", N_, 8), ("K", K_, 16 // elem_bytes)):
        if v is not None and v % mult:
            raise config_error(f"{name} = {v} is not a multiple of {mult}: TMA needs 16-byte "
                               "rows (of C for N, of A and B for K)")


@T.inline
def issue_block(part, As, Bs, full, it, stages, r0, c0, wn):
    """The wgmma of k-block ``it`` (ring slot ``it % stages``, once its TMA loads landed)
    into the partial ``part``: rows ``r0 .. r0 + 63`` of the slot's A tile against columns
    ``c0 .. c0 + wn - 1`` of its B tile (``overlap=True``'s step, dense and grouped)."""
    s = it % stages
    T.ptx.mbarrier.try_wait(T.address_of(full[s]), it // stages % 2)
    T.ptx.wgmma.fence()
    Tx.wg.gemm_async(part, As[s, r0:r0 + 64, :], Bs[s, c0:c0 + wn, :], transB=True)
    T.ptx.wgmma.commit_group()


@T.inline
def overlapped_pairs(k_tiles, tile, load, products, issue, retire):
    """``overlap=True``'s k-loop of one tile (dense and grouped): the k-blocks in pairs, the
    first's promotion beside the second's wgmma (the other warpgroup's wgmma cover the
    second's). ``load(tile, kt, h)`` fetches block kt's scales into slot h, a step ahead;
    ``products(h)`` multiplies slot h's; ``issue(tile, kt, h)`` / ``retire(tile, kt, h)``
    run block kt's wgmma into partial h and promote it (``tile``: the kernel's values of
    the tile, its index and origin). ptxas overlaps them only when both partials
    are read in the step that made them (reading the last step's partial after
    ``wait_group(1)`` made it serialise, C7514)."""
    load(tile, 0, 0)
    load(tile, T.min(1, k_tiles - 1), 1)
    for k2 in range(k_tiles // 2):
        products(0)
        products(1)
        load(tile, T.min(2 * k2 + 2, k_tiles - 1), 0)  # the next pair's, a step ahead
        load(tile, T.min(2 * k2 + 3, k_tiles - 1), 1)
        issue(tile, 2 * k2, 0)
        issue(tile, 2 * k2 + 1, 1)
        T.ptx.wgmma.wait_group(1)
        retire(tile, 2 * k2, 0)
        T.ptx.wgmma.wait_group(0)
        retire(tile, 2 * k2 + 1, 1)
    if k_tiles % 2 == 1:  # the last block alone
        products(0)
        issue(tile, k_tiles - 1, 0)
        T.ptx.wgmma.wait_group(0)
        retire(tile, k_tiles - 1, 0)


def make_gemm_fp8(M_: int | None = None, N_: int | None = None, K_: int | None = None,
                  scaling: str = "block", fast_accum: bool = False, bm: int | None = None,
                  bn: int | None = None, stages: int | None = None,
                  num_sms: int | None = None, cluster: int | None = None,
                  share: str | None = None, overlap: bool = False):
    """The kernel ``k(A, B, SA, SB, C)``: C = (A · SA)(B · SB)ᵀ in bfloat16 (module
    docstring). ``scaling``: "block" (DeepGEMM), "row" or "tensor" (``torch._scaled_mm``);
    ``fast_accum`` (row / tensor only): one accumulator over the whole K. ``bm``, ``bn``,
    ``stages``, ``cluster`` (1, or 2: CTA pairs multicast a tile), ``share`` ("b": pairs
    of m-tiles share B; "a": pairs of n-tiles share A) override :func:`choose_tile`;
    ``num_sms`` the persistent CTA count; ``overlap``: k-blocks in pairs, two partials
    (one-wave tiles; docs/gemm_fp8.md). With the three sizes and none of those shape
    options (nor ``fast_accum``), above M = 128 the kernel is tuned on its first launch
    (``tilewise.autotune`` over :func:`tune_configs`: the model's tile, the wide tiles
    and 128 x 128 with ``overlap=True``); ``tw.simulate``, ``tw.compile``,
    ``TILEWISE_AUTOTUNE=0`` and a machine without a GPU take the first of those (from
    M = 1024 with block scaling the overlapped tile; otherwise the model's)."""
    if scaling not in SCALINGS:
        raise config_error(f"scaling={scaling!r}: one of {', '.join(SCALINGS)}")
    if fast_accum and scaling == "block":
        raise config_error("fast_accum=True is for 'row' and 'tensor' scaling: block scales "
                           "change every 128 of K, so the partials must be promoted")
    check_sizes(N_, K_)
    sms = num_sms or runtime.sm_count(default=H200_SMS)
    forced = (bm, bn, stages, cluster, share) != (None,) * 5 or overlap
    if not forced and not fast_accum and None not in (M_, N_, K_):
        configs = tune_configs(M_, N_, sms, scaling)
        if len(configs) > 1:
            return tilewise.autotune(functools.partial(_tuned, M_, N_, scaling, sms),
                                     configs=configs)
    return _dense(_build(M_, N_, sms, scaling, fast_accum, bm, bn, stages, cluster, share,
                         overlap), scaling, fast_accum, overlap)


def _build(M_, N_, sms, scaling, fast_accum, bm=None, bn=None, stages=None, cluster=None,
           share=None, overlap=False) -> Tile:
    tile = choose_tile(M_, N_, sms, bm, bn, stages, cluster=cluster, share=share,
                       wide=scaling == "block" and (M_ or 0) >= 1024, straddling=True)
    if overlap:
        check_overlap(tile, fast_accum)
    return tile


TUNE_M = 1024  # from this M on a problem has enough tiles that the best one varies by shape
TUNE_MID_M = 129  # from this M on (to TUNE_M) the model's tile is tuned against a few others
TUNE_TILES = ((128, 256), (256, 128))  # the wide tiles tuned beside the model's
TUNE_STRADDLING = ((128, 192),)  # and the straddling one (gemm_fp8_tiles.STRADDLING)


def tune_configs(M_: int, N_: int, sms: int, scaling: str) -> list[dict]:
    """What ``make_gemm_fp8(M, N, K)`` tunes over: from :data:`TUNE_M` rows on, the tile
    model's choice (``{}``), the wide tiles of :data:`TUNE_TILES` and
    :data:`TUNE_STRADDLING` and 128 x 128 with ``overlap=True``. From :data:`TUNE_MID_M`
    to :data:`TUNE_M` the model's choice first (what runs untuned), then the same tiles of
    at most 128 rows (256-row tiles pad such M). Up to M = 128 (narrow tiles fill the
    SMs; 1.04-2.3 x cuBLASLt on the H200) the model's alone. Measured on the H200 at
    M = 4096 (benchmarks/RESULTS.md, 2026-12-02) each of the tiles won some DeepSeek-V3
    shape in some scaling, by up to 20 %: the last wave's raggedness and K's length
    decide, which the model does not see. At M = 300-1000 (eighth session) the model's
    128 x 128 ran 4-24 % behind the best of 128 x 256, 128 x 192 and the overlapped
    128 x 128, which one depending on the shape and the scaling.

    From :data:`TUNE_M` on the first config is the one the tuner keeps unless another is
    more than 2 % faster (``tilewise.autotune``): with block scales the overlapped
    128 x 128, the fastest tile timed in 8 of 12 block-scaled M = 4096 cases over two
    interleaved runs on the H200 (2026-12-02: 7168 x 16384, 4096 x 7168, 7168 x 2048,
    2112 x 7168, 24576 x 1536), where the tuner had kept a wide tile at up to 7 % below
    it; with row / tensor scales, where the overlapped tile was fastest in 8 of 24, the
    model's tile."""
    if M_ < TUNE_MID_M:
        return [{}]
    model = _build(M_, N_, sms, scaling, False)
    out = [{}]
    for bm_, bn_ in TUNE_TILES + TUNE_STRADDLING:
        if (model.bm, model.bn) != (bm_, bn_) and (M_ >= TUNE_M or bm_ <= 128):
            out.append({"bm": bm_, "bn": bn_})
    overlapped = {"bm": 128, "bn": 128, "overlap": True}
    if M_ < TUNE_M:
        return out + [overlapped]
    return [overlapped] + out if scaling == "block" else out + [overlapped]


def _tuned(M_, N_, scaling, sms, bm=None, bn=None, overlap=False):
    """One candidate of the tuned kernel (:func:`make_gemm_fp8` with sizes,
    :func:`tune_configs`): the tile model's choice, a wide tile, or a 128 x 128 tile whose
    promotions overlap the next wgmma."""
    return _dense(_build(M_, N_, sms, scaling, False, bm, bn, overlap=overlap), scaling,
                  False, overlap)


def check_overlap(tile: Tile, fast_accum: bool = False) -> None:
    """``overlap=True`` needs two partial fragments: one wave a warpgroup, promoted."""
    if fast_accum:
        raise config_error("overlap=True overlaps the promotions; fast_accum=True has none")
    if len(tile.waves) > 1 or tile.wn > 128:
        raise config_error(f"overlap=True needs a tile of one wave a warpgroup (bn <= 128, "
                           f"bm <= 128), not {tile.bm} x {tile.bn}: two partials beside the "
                           "accumulator need more registers than a consumer has")


def _dense(tile: Tile, scaling: str, fast_accum: bool, overlap: bool = False):
    bm, bn, wn, stages, sms = tile.bm, tile.bn, tile.wn, tile.stages, tile.sms
    waves, nw, wrows, wcols = tile.waves, len(tile.waves), tile.wrows, tile.wcols
    slots = [tile.scale_slots(w) for w in range(nw)]
    # block scales on a wave that straddles B's 128-column blocks (128 x 192): one SB per
    # 64-column chunk of the wave, the promotion written per register (promote_chunks)
    straddle = scaling == "block" and wn % 128 != 0 and wn > 128
    scols = [64 * c for c in range(wn // 64)] if straddle else wcols  # a column of each SB
    rstep, cstep = tile.origin(1)  # warpgroup cw starts at (cw * rstep, cw * cstep)
    a_layout, b_layout, c_layout = tile.layouts(BK, 8)
    stage_bytes = (bm + bn) * BK
    mc = tile.cluster
    nb_ = mc if tile.share == "b" else 1  # CTAs sharing a B tile (m-tiles in pairs)
    na_ = mc if tile.share == "a" else 1  # CTAs sharing an A tile (n-tiles in pairs)
    hb, ha = bn // nb_, bm // na_  # the rows of B / A each of them loads
    pairs = sms // mc

    @T.prim_func
    def gemm_fp8(A_ptr: T.handle, B_ptr: T.handle, SA_ptr: T.handle, SB_ptr: T.handle,
                 C_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M, K), FP8)
        B = T.match_buffer(B_ptr, (N, K), FP8)
        if scaling == "block":  # any strides: row-major or DeepGEMM's MN-major
            SA = T.match_buffer(SA_ptr, (M, (K + 127) // 128), "float32", strides=(SA0, SA1))
            SB = T.match_buffer(SB_ptr, ((N + 127) // 128, (K + 127) // 128), "float32",
                                strides=(SB0, SB1))
        elif scaling == "row":
            SA = T.match_buffer(SA_ptr, (M, 1), "float32")
            SB = T.match_buffer(SB_ptr, (1, N), "float32")
        else:
            SA = T.match_buffer(SA_ptr, (1,), "float32")
            SB = T.match_buffer(SB_ptr, (1,), "float32")
        C = T.match_buffer(C_ptr, (M, N), "bfloat16")
        T.device_entry()
        bx = T.cta_id([sms])
        if mc == 2:
            rank = T.cta_id_in_cluster([2])  # which of the pair (its m- or n-tile of two)
        else:
            rank = 0
        tid = T.thread_id([384])
        wg = tid // 128  # 0, 1: the consumers; 2: the producer
        As = T.alloc_buffer((stages, bm, BK), FP8, scope="shared.dyn", layout=a_layout,
                            align=1024)
        Bs = T.alloc_buffer((stages, bn, BK), FP8, scope="shared.dyn", layout=b_layout,
                            align=1024)
        Cs = T.alloc_buffer((2 * nw, 64, wn), "bfloat16", scope="shared.dyn",
                            layout=c_layout, align=1024)
        full = T.alloc_shared((stages,), "uint64")
        empty = T.alloc_shared((stages,), "uint64")
        if tid == 0:
            for s in range(stages):
                T.ptx.mbarrier.init(T.address_of(full[s]), 1)
                T.ptx.mbarrier.init(T.address_of(empty[s]), 2 * mc)  # every consumer of
            T.ptx.fence.mbarrier_init()                              # the cluster frees it
        if mc == 2:
            T.cuda.cluster_sync()
        else:
            T.cuda.cta_sync()
        # tiles in units of the cluster: nb_ m-tiles x na_ n-tiles (one a CTA)
        m_tiles = (M + bm * nb_ - 1) // (bm * nb_)
        n_tiles = (N + bn * na_ - 1) // (bn * na_)
        k_tiles = (K + BK - 1) // BK
        # the one tile order every role walks (tilewise.sched): grouped, round robin
        sched = GroupedTiles(m_tiles, n_tiles, first=bx // mc, step=pairs, group_m=GROUP_M)

        @T.inline
        def load_operand(Xs, X, x0, rows, half, sharers, s, kt):
            """Ring slot ``s`` of operand ``X``'s tile (rows ``x0 ..``, k-block ``kt``) by
            TMA: with two CTAs sharing it, this CTA's half into both (multicast)."""
            if sharers == 2:
                Tx.thread.copy_async(Xs[s, rank * half:rank * half + half, :],
                                     X[x0 + rank * half:x0 + rank * half + half,
                                       kt * BK:kt * BK + BK],
                                     dispatch="tma", mbar=T.address_of(full[s]), cta_mask=3)
            else:
                Tx.thread.copy_async(Xs[s, :, :], X[x0:x0 + rows, kt * BK:kt * BK + BK],
                                     dispatch="tma", mbar=T.address_of(full[s]))

        if wg == 2:  # ---------------------------------------------------------- producer
            T.ptx.setmaxnreg(False, 40)
            if tid == 256:
                for j in sched.tiles():
                    m0, n0 = cta_origin(sched, j, nb_, na_, rank, bm, bn)
                    for kt in range(k_tiles):
                        it = j * k_tiles + kt  # ring position
                        s = it % stages
                        T.ptx.mbarrier.try_wait(T.address_of(empty[s]), (it // stages + 1) % 2)
                        T.ptx.mbarrier.arrive.expect_tx(T.address_of(full[s]), stage_bytes)
                        load_operand(As, A, m0, bm, ha, na_, s, kt)
                        load_operand(Bs, B, n0, bn, hb, nb_, s, kt)
        else:  # -------------------------------------------------------------- consumers
            T.ptx.setmaxnreg(True, 232)
            if straddle:  # the registers themselves, for promote_chunks
                acc_r = T.alloc_local((wn // 2,), "float32")
                acc0 = acc_r.view(64, wn, layout=wgmma_accumulator(wn))
                part_r = T.alloc_local((wn // 2,), "float32")
                part = part_r.view(64, wn, layout=wgmma_accumulator(wn))
            else:
                acc0 = T.alloc_local((64, wn), "float32", layout=wgmma_accumulator(wn))
                part = T.alloc_local((64, wn), "float32", layout=wgmma_accumulator(wn))
            acc1 = T.alloc_local((64, wn), "float32", layout=wgmma_accumulator(wn))
            accs = [acc0, acc1]  # one per wave (the second only with two waves)
            out = T.alloc_local((64, wn), "bfloat16", layout=wgmma_accumulator(wn))
            sr = T.alloc_local((2,), "float32")
            rows = sr.view(64, 1, layout=wgmma_accumulator_rows())  # the thread's 2 rows
            sc = T.alloc_local((wn // 4,), "float32")
            cols = sc.view(wn, layout=wgmma_accumulator_columns(wn))  # its wn / 4 columns
            sa = T.alloc_local((4 * len(wrows),), "float32")  # scales of two k-blocks
            sb = T.alloc_local((2 * len(scols),), "float32")
            pr = T.alloc_local((max(4, 2 * len(scols)),), "float32")  # SA * SB: a k-block's
            #                                     waves or chunks, or (overlap) two blocks
            part1 = T.alloc_local((64, wn), "float32", layout=wgmma_accumulator(wn))
            parts = [part, part1]  # overlap: k-blocks in pairs, one partial each
            cw = wg
            r0 = cw * rstep
            c0 = cw * cstep
            lrow = tid % 128 // 32 * 16 + tid % 32 // 4  # its rows: lrow, lrow + 8 (of 64)
            lcol = tid % 4 * 2  # its columns: 8 q + lcol + {0, 1}
            leader = tid % 128 == 0

            @T.inline
            def load_scales(m0, n0, kb, h=0):
                """The thread's scales of k-block ``kb`` into slot ``h`` of ``sa`` / ``sb``."""
                for q in T.static_range(len(scols)):
                    sb[h * len(scols) + q] = SB[T.min((n0 + c0 + scols[q]) // 128,
                                                      (N - 1) // 128), kb]
                for q in T.static_range(len(wrows)):
                    row = m0 + r0 + wrows[q] + lrow
                    a = h * 2 * len(wrows) + 2 * q
                    sa[a] = SA[T.min(row, M - 1), kb]  # rows past M: any scale
                    sa[a + 1] = SA[T.min(row + 8, M - 1), kb]

            @T.inline
            def promote_chunks():
                """acc += part * pr[...] register by register (the straddling wave):
                register m holds row lrow + 8 (m // 2 % 2) and column 8 (m // 4) + lcol +
                m % 2 (wgmma_accumulator), so 64-column chunk m // 32."""
                for m in T.static_range(wn // 2):
                    acc_r[m] = T.ptx.fma.rn(part_r[m], pr[m // 32 * 2 + m // 2 % 2], acc_r[m])

            @T.inline
            def free(it):
                """The consumer's arrival on ring position ``it``'s stage, in each CTA (a
                pair's at CTA scope: its reads are done, no cluster fence is needed; the
                two arrivals from two warps, 0 and 2, as CUTLASS spreads them, so that no
                warp of the warpgroup issues both)."""
                if mc == 2:
                    for r in T.static_range(2):
                        if tid % 128 == 64 * r:
                            T.ptx.mbarrier.arrive.expect_tx(T.address_of(empty[it % stages]),
                                                            0, remote=r, scope="cta")
                elif leader:
                    T.ptx.mbarrier.arrive.expect_tx(T.address_of(empty[it % stages]), 0)

            @T.inline
            def step(j, m0, n0, kt):
                """k-block ``kt``: each wave's wgmma, waited for, then promoted."""
                it = j * k_tiles + kt
                s = it % stages
                if straddle:  # a chunk's products: pr[2 c + h] for rows lrow + 8 h
                    for q in T.static_range(len(scols)):
                        pr[2 * q] = sa[0] * sb[q]
                        pr[2 * q + 1] = sa[1] * sb[q]
                elif scaling == "block":  # a wave's products
                    for w in T.static_range(nw):
                        pr[2 * w] = sa[2 * slots[w][0]] * sb[slots[w][1]]
                        pr[2 * w + 1] = sa[2 * slots[w][0] + 1] * sb[slots[w][1]]
                if scaling == "block":  # the products above used the scales loaded one
                    load_scales(m0, n0, T.min(kt + 1, k_tiles - 1))  # block ago; now the next
                T.ptx.mbarrier.try_wait(T.address_of(full[s]), it // stages % 2)
                if fast_accum:  # one fragment per wave over the whole K
                    T.ptx.wgmma.fence()
                    for w in T.static_range(nw):
                        ra, ca = r0 + waves[w][0], c0 + waves[w][1]  # the wave's rows of A, B
                        Tx.wg.gemm_async(accs[w], As[s, ra:ra + 64, :], Bs[s, ca:ca + wn, :],
                                         accum=True, transB=True)
                    T.ptx.wgmma.commit_group()
                    T.ptx.wgmma.wait_group(1)  # the previous block's wgmma are done
                    if kt > 0:
                        free(it + stages - 1)
                else:
                    for w in T.static_range(nw):
                        T.ptx.wgmma.fence()
                        ra, ca = r0 + waves[w][0], c0 + waves[w][1]
                        Tx.wg.gemm_async(part, As[s, ra:ra + 64, :], Bs[s, ca:ca + wn, :],
                                         transB=True)
                        T.ptx.wgmma.commit_group()
                        T.ptx.wgmma.wait_group(0)
                        if w == nw - 1:
                            free(it)
                        if straddle:
                            promote_chunks()
                        elif scaling == "block":  # promotion: acc += part * SA[row] * SB
                            sr[0] = pr[2 * w]
                            sr[1] = pr[2 * w + 1]
                            Tx.wg.fma(accs[w], part, rows, accs[w])
                        else:
                            Tx.wg.add(accs[w], accs[w], part)

            # overlap=True's steps (overlapped_pairs calls them; tile = (j, m0, n0))
            @T.inline
            def issue(tile, kt, h):
                """k-block ``kt``'s wgmma into parts[h] (one wave)."""
                issue_block(parts[h], As, Bs, full, tile[0] * k_tiles + kt, stages, r0, c0,
                            wn)

            @T.inline
            def retire(tile, kt, h):
                """Free k-block ``kt``'s stage in each CTA; acc += parts[h] (* pr[2h:2h+2])."""
                free(tile[0] * k_tiles + kt)
                if scaling == "block":
                    sr[0] = pr[2 * h]
                    sr[1] = pr[2 * h + 1]
                    Tx.wg.fma(acc0, parts[h], rows, acc0)
                else:
                    Tx.wg.add(acc0, acc0, parts[h])

            @T.inline
            def products(h):
                """pr[2h:2h+2] from the scales in slot ``h`` (loaded a step earlier)."""
                if scaling == "block":
                    pr[2 * h] = sa[2 * h] * sb[h]
                    pr[2 * h + 1] = sa[2 * h + 1] * sb[h]

            @T.inline
            def load_pair(tile, kt, h):
                if scaling == "block":
                    load_scales(tile[1], tile[2], kt, h)

            for j in sched.tiles():
                m0, n0 = cta_origin(sched, j, nb_, na_, rank, bm, bn)
                for w in T.static_range(nw):
                    Tx.wg.zero(accs[w])
                if overlap:
                    overlapped_pairs(k_tiles, (j, m0, n0), load_pair, products, issue, retire)
                else:
                    if scaling == "block":
                        load_scales(m0, n0, 0)
                    for kt in range(k_tiles):
                        step(j, m0, n0, kt)
                if fast_accum:
                    T.ptx.wgmma.wait_group(0)
                    free(j * k_tiles + k_tiles - 1)
                # epilogue per wave: the output scales, registers -> shared -> TMA store
                if leader:
                    T.ptx.cp_async.bulk.wait_group_read(0)  # the last stores left Cs
                T.ptx.bar.sync(1 + cw, 128)
                for w in T.static_range(nw):
                    row = m0 + r0 + waves[w][0]
                    col = n0 + c0 + waves[w][1]
                    if scaling == "row":
                        sr[0] = SA[T.min(row + lrow, M - 1), 0]
                        sr[1] = SA[T.min(row + lrow + 8, M - 1), 0]
                        Tx.wg.mul(accs[w], accs[w], rows)
                        for q in T.static_range(wn // 4):  # column 8 (q // 2) + lcol + q % 2
                            sc[q] = SB[0, T.min(col + q // 2 * 8 + lcol + q % 2, N - 1)]
                        Tx.wg.mul(accs[w], accs[w], cols)
                    if scaling == "tensor":
                        Tx.wg.mul(accs[w], accs[w], SA[0] * SB[0])
                    Tx.wg.cast(out, accs[w])
                    Tx.wg.copy(Cs[cw * nw + w, :, :], out)
                T.ptx.fence.proxy_async()
                T.ptx.bar.sync(1 + cw, 128)
                if leader:
                    for w in T.static_range(nw):
                        row = m0 + r0 + waves[w][0]
                        col = n0 + c0 + waves[w][1]
                        Tx.thread.copy_async(C[row:row + 64, col:col + wn], Cs[cw * nw + w, :, :],
                                             dispatch="tma")
                    T.ptx.cp_async.bulk.commit_group()
            if leader:
                T.ptx.cp_async.bulk.wait_group(0)
        if mc == 2:  # no CTA leaves while its pair may still write to its shared memory
            T.cuda.cluster_sync()

    return gemm_fp8


def make_grouped_gemm_fp8(*args, **kwargs):
    """The grouped (MoE) fp8 GEMM of ``gemm_grouped.py``: see its docstring."""
    return _sibling("gemm_grouped").make_grouped_gemm_fp8(*args, **kwargs)


# ---------------------------------------------------------------- inputs and reference
SHAPE = (200, 136, 272)  # M, N, K of `tilewise run`: ragged tails in all three
TARGET = "sm_90a"
gemm_fp8 = make_gemm_fp8(*SHAPE, num_sms=4, bm=128, bn=128)  # the model's tile, named: one
#  kernel (unnamed, M = 200 would be tuned among several on a GPU)
RTOL = 2.0 ** -7  # the bf16 rounding of C (2^-8) plus the float32 promotion order
ATOL = 2.0 ** -6  # relative to the largest |C|: entries near 0 keep their row's error


def quantize(rng, rows: int, cols: int, block: tuple[int, int]):
    """Random fp8 data and float32 scales per ``block`` (1 x 128 or 128 x 128): the data
    spans e4m3's range (about +-448 / 4) and the scales vary over a few octaves, so a wrong
    scale index shows."""
    import ml_dtypes
    import numpy as np

    q = (rng.standard_normal((rows, cols)) * 64).clip(-448, 448).astype(ml_dtypes.float8_e4m3fn)
    br, bc = block
    s = (2.0 ** rng.integers(-9, -5, (-(-rows // br), -(-cols // bc))) *
         rng.uniform(1, 2, (-(-rows // br), -(-cols // bc)))).astype(np.float32)
    return q, s


def inputs(rng, shape=SHAPE, scaling: str = "block"):
    """A, B (fp8), SA, SB (float32, per ``scaling``) and C poisoned with NaN."""
    import ml_dtypes
    import numpy as np

    m, n, k = shape
    a, sa = quantize(rng, m, k, (1, 128))
    b, sb = quantize(rng, n, k, (128, 128))
    if scaling == "row":
        sa, sb = sa[:, :1].copy(), np.repeat(sb[:, :1].T, 128, axis=1)[:, :n].copy()
    elif scaling == "tensor":
        sa, sb = sa[:1, 0].copy(), sb[:1, 0].copy()
    return [a, b, sa, sb, np.full((m, n), np.nan, ml_dtypes.bfloat16)]


def dequantize(a, sa, b, sb, scaling: str = "block"):
    """A · SA and B · SB in float64 for ``scaling``."""
    import numpy as np

    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    (m, k), n = a.shape, b.shape[0]
    if scaling == "block":
        ea = np.repeat(sa.astype(np.float64), 128, axis=1)[:, :k]
        eb = np.repeat(np.repeat(sb.astype(np.float64), 128, axis=0), 128, axis=1)[:n, :k]
        return a64 * ea, b64 * eb
    if scaling == "row":  # SA (M, 1), SB (1, N)
        return a64 * sa.reshape(m, 1), b64 * sb.reshape(n, 1)
    return a64 * float(sa.reshape(-1)[0]), b64 * float(sb.reshape(-1)[0])


def reference(a, b, sa, sb, c):
    """C in float64 from the dequantised inputs, rounded to bf16 (what `tilewise run`
    compares)."""
    a64, b64 = dequantize(a, sa, b, sb)
    return [a, b, sa, sb, (a64 @ b64.T).astype(c.dtype)]
