"""Grouped GEMMs for mixture-of-experts on Hopper (sm_90a): one persistent launch computes
every group's ``C_g = A_g @ B_gᵀ``, fp8 with DeepGEMM's block scales or bf16, in DeepGEMM's
two layouts (``deep_gemm.m_grouped_*_gemm_nt_contiguous`` / ``_masked``):

* **contiguous** (training, prefill): the groups' rows of A are concatenated, A (M, K) and
  C (M, N), each group's segment padded to a multiple of :data:`M_ALIGNMENT` (128) rows;
  ``m_indices`` (M,) int32 names each row's group, -1 for padding. B is (G, N, K). A tile
  takes the group of its first row; a tile whose first row is padding is computed as group
  0 (docs/gemm_fp8.md says why); padding rows inside a tile are computed like the group's
  rows.
* **masked** (decoding, CUDA graphs: the host does not know the counts): A (G, Mmax, K),
  C (G, Mmax, N), ``masked_m`` (G,) int32 the valid rows of each group; only the tiles
  holding valid rows are computed (rows of those tiles past ``masked_m[g]`` are written
  too, C's rows past the last such tile are not).

fp8 (``make_grouped_gemm_fp8``): A, B ``float8_e4m3``; SA per 1 x 128 block of A's rows
((M, ⌈K/128⌉) contiguous, (G, Mmax, ⌈K/128⌉) masked), SB (G, ⌈N/128⌉, ⌈K/128⌉) per 128 x
128 block of B, any strides; C bf16; the two-level accumulation of ``gemm_fp8.py``.
bf16 (``make_grouped_gemm_bf16``): A, B, C bfloat16, no scales, one float32 accumulator.

The kernel is ``gemm_fp8.py``'s (persistent CTAs, producer warpgroup with TMA, two
consumer warpgroups, a ring of ``stages`` buffers, the epilogue by TMA store), with the
group found per tile: from ``m_indices`` of the tile's first row (contiguous; tiles in
the grouped order of the dense GEMM), or by walking the groups' tile counts (masked: each
CTA's tiles increase, so the walk continues where the last tile left it; within a group
the tiles go down M first, so CTAs running together share a tile of B_g). One body
serves both element types: only the k-block step differs (fp8 promotes each block's
partial with its scales, bf16 lets wgmma accumulate the whole K).
"""

from __future__ import annotations

import functools
import importlib.util
import pathlib
import sys

import tilewise
from tilewise import T, Tx, config_error, runtime
from tilewise.layout import wgmma_accumulator, wgmma_accumulator_rows
from tilewise.sched import grouped_coords


def _example(name: str):
    """A sibling example, loaded by path (examples are files, not a package)."""
    if name in sys.modules:
        return sys.modules[name]
    path = pathlib.Path(__file__).with_name(name + ".py")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


FUZZ_SEED = False  # tests/fuzz mutates kernels' bodies: here a T.inline helper outside them
F = _example("gemm_fp8")  # the tiles, the tile model, the checks
M_ALIGNMENT = 128  # rows: each group's segment of the contiguous layout is a multiple
LAYOUTS = ("contiguous", "masked")
GROUP_M = F.GROUP_M


@T.meta_class
class GroupedWork:
    """The persistent walk over every group's tiles, written once: the producer and the
    consumers each make one and ask ``tile(t)`` for work item ``t`` -> (first row, first
    column, group). Contiguous: the groups' rows are concatenated (each padded to the
    tile), so the tiles are one grouped grid and a tile's group is the index array's entry
    of its first row (padding rows: computed as group 0). Masked: group ``g`` has ``L[g]``
    valid rows in its own slab; the walk keeps the group it has reached and that group's
    first work item (``T.local_scalar`` fields, carried through the loop), since every CTA
    visits its items in increasing order."""

    def __init__(self, L, contiguous, m_tiles, n_tiles, bm, bn):
        self.L, self.contiguous, self.m_tiles, self.n_tiles = L, contiguous, m_tiles, n_tiles
        self.bm, self.bn = bm, bn
        if not contiguous:
            self.gc = T.local_scalar("int32")  # the group of the last tile
            self.base = T.local_scalar("int32")  # that group's first work item

    @T.inline
    def tile(self, t):
        L, bm, bn = self.L, self.bm, self.bn
        if self.contiguous:
            mt, nt = grouped_coords(t, self.m_tiles, self.n_tiles, GROUP_M)
            m0 = mt * bm
            return m0, nt * bn, T.max(L[m0], 0)
        while t >= self.base + (L[self.gc] + bm - 1) // bm * self.n_tiles:
            self.base = self.base + (L[self.gc] + bm - 1) // bm * self.n_tiles
            self.gc = self.gc + 1
        mt_g = (L[self.gc] + bm - 1) // bm
        return (t - self.base) % mt_g * bm, (t - self.base) // mt_g * bn, self.gc


G = T.int32()
M = T.int32()
N = T.int32()
K = T.int32()
S0 = T.int32()  # strides of SA and SB, bound from the arrays at launch
S1 = T.int32()
S2 = T.int32()
R0 = T.int32()
R1 = T.int32()
R2 = T.int32()


def _tile(layout: str, num_groups: int, M_, N_, expected_m, elem_bytes: int, bk: int,
          bm=None, bn=None, stages=None, num_sms=None):
    """The dense tile model at the rows expected (contiguous: M; masked: ``expected_m`` a
    group), 64 or 128 rows (a tile stays inside a 128-aligned segment); from 1024 rows on,
    tiles wider than 128 x 128 may be chosen (128 x 256 ran 1.08-1.13 x the 128 x 128 on
    the H200, fp8 and bf16, contiguous and masked: benchmarks/RESULTS.md). Masked
    launches keep every SM: the host does not know the real counts."""
    rows = M_ if layout == "contiguous" else (
        None if expected_m is None else expected_m * num_groups)
    if bm not in (None, 64, 128):
        raise config_error(f"bm={bm}: grouped tiles are 64 or 128 rows (inside a segment)")
    sms = num_sms or runtime.sm_count(default=F.H200_SMS)
    return F.choose_tile(rows, N_, sms, bm, bn, stages, elem_bytes, bk,
                         bms=(64, 128), clamp=layout == "contiguous", clusters=(1,),
                         wide=rows is not None and rows >= 1024)


def _check(layout: str, N_, K_, elem_bytes: int) -> None:
    if layout not in LAYOUTS:
        raise config_error(f"layout={layout!r}: 'contiguous' or 'masked'")
    F.check_sizes(N_, K_, elem_bytes)


OVERLAPPED = {"bm": 128, "bn": 128, "overlap": True}  # the tuner's other candidate


def make_grouped_gemm_fp8(num_groups: int | None = None, N_: int | None = None,
                          K_: int | None = None, layout: str = "contiguous",
                          M_: int | None = None, expected_m: int | None = None,
                          overlap: bool = False, **tile):
    """The fp8 grouped GEMM ``k(A, B, SA, SB, C, L)`` (module docstring; ``L`` is
    ``m_indices`` or ``masked_m``). Sizes, when given, check TMA's rules and choose the
    tile (``M_``: contiguous rows; ``expected_m``: masked rows a group); ``bm``, ``bn``,
    ``stages`` pin it, ``num_sms`` the persistent CTA count; ``overlap``: as
    ``make_gemm_fp8``'s (one-wave tiles). With N, K and the rows (``M_`` or
    ``expected_m``) known, from 1024 rows on (where the model picks a wide tile) and
    nothing pinned, the kernel is tuned on its first launch (``tilewise.autotune``)
    between the model's wide tile and 128 x 128 with ``overlap=True``: each won some of
    the benchmark's grouped cases on the H200 (benchmarks/RESULTS.md). The first of the
    two (what ``tw.simulate``, ``tw.compile``, ``TILEWISE_AUTOTUNE=0`` and a machine
    without a GPU take, and what the tuner keeps unless the other is more than 2 % faster)
    is the overlapped one for the contiguous layout, where it was even or faster in every
    interleaved run (H200, 2026-12-02: +3.5 %, +6 % at 4096 x 7168; even, +1 % at
    7168 x 2048), and the model's for the masked one (-2.5 % to +1 %)."""
    _check(layout, N_, K_, 1)
    t = _tile(layout, num_groups or 1, M_, N_, expected_m, 1, F.BK, **tile)
    if overlap:
        F.check_overlap(t)
    pinned = any(tile.get(k) is not None for k in ("bm", "bn", "stages"))
    # the model picks a tile wider than 128 x 128 only with N and >= 1024 rows known (_tile)
    if not pinned and not overlap and K_ is not None and t.bm * t.bn > 128 * 128:
        return tilewise.autotune(
            functools.partial(_fp8_candidate, num_groups, N_, K_, layout, M_, expected_m,
                              tile.get("num_sms")),
            configs=[OVERLAPPED, {}] if layout == "contiguous" else [{}, OVERLAPPED])
    return _grouped(t, layout == "contiguous", True, overlap)


def _fp8_candidate(num_groups, N_, K_, layout, M_, expected_m, num_sms, bm=None, bn=None,
                   overlap=False):
    """One candidate of the tuned fp8 grouped kernel (:func:`make_grouped_gemm_fp8`): the
    model's tile, or a pinned one (with ``overlap``)."""
    t = _tile(layout, num_groups or 1, M_, N_, expected_m, 1, F.BK, bm=bm, bn=bn,
              num_sms=num_sms)
    if overlap:
        F.check_overlap(t)
    return _grouped(t, layout == "contiguous", True, overlap)


def make_grouped_gemm_bf16(num_groups: int | None = None, N_: int | None = None,
                           K_: int | None = None, layout: str = "contiguous",
                           M_: int | None = None, expected_m: int | None = None, **tile):
    """The bf16 grouped GEMM ``k(A, B, C, L)``: as the fp8 one without scales."""
    _check(layout, N_, K_, 2)
    return _grouped(_tile(layout, num_groups or 1, M_, N_, expected_m, 2, 64, **tile),
                    layout == "contiguous", False)


def _grouped(tile, contiguous: bool, fp8: bool, overlap: bool = False):
    """The kernel of either element type, one body: fp8 lets wgmma accumulate one k-block
    into a partial and promotes it into the accumulators with the block scales (the two
    levels of ``gemm_fp8.py``); bf16 lets wgmma accumulate the whole K."""
    bm, bn, wn, stages, sms = tile.bm, tile.bn, tile.wn, tile.stages, tile.sms
    waves, nw, wrows, wcols = tile.waves, len(tile.waves), tile.wrows, tile.wcols
    slots = [tile.scale_slots(w) for w in range(nw)]
    rstep, cstep = tile.origin(1)
    # a stage is one scale block of fp8, 128 bytes (one swizzle row) of bf16
    BK, DT, size = (F.BK, F.FP8, 1) if fp8 else (64, "bfloat16", 2)
    a_layout, b_layout, c_layout = tile.layouts(BK, 8 * size)
    stage_bytes = (bm + bn) * BK * size

    @T.inline
    def body(A_ptr, B_ptr, SA_ptr, SB_ptr, C_ptr, L_ptr):
        if contiguous:
            A = T.match_buffer(A_ptr, (M, K), DT)
            if fp8:
                SA = T.match_buffer(SA_ptr, (M, (K + 127) // 128), "float32", strides=(S0, S1))
            C = T.match_buffer(C_ptr, (M, N), "bfloat16")
            L = T.match_buffer(L_ptr, (M,), "int32")  # m_indices: each row's group, or -1
        else:
            A = T.match_buffer(A_ptr, (G, M, K), DT)
            if fp8:
                SA = T.match_buffer(SA_ptr, (G, M, (K + 127) // 128), "float32",
                                    strides=(S0, S1, S2))
            C = T.match_buffer(C_ptr, (G, M, N), "bfloat16")
            L = T.match_buffer(L_ptr, (G,), "int32")  # masked_m: each group's valid rows
        B = T.match_buffer(B_ptr, (G, N, K), DT)
        if fp8:
            SB = T.match_buffer(SB_ptr, (G, (N + 127) // 128, (K + 127) // 128), "float32",
                                strides=(R0, R1, R2))
        T.device_entry()
        bx = T.cta_id([sms])
        tid = T.thread_id([384])
        wg = tid // 128
        As = T.alloc_buffer((stages, bm, BK), DT, scope="shared.dyn", layout=a_layout,
                            align=1024)
        Bs = T.alloc_buffer((stages, bn, BK), DT, scope="shared.dyn", layout=b_layout,
                            align=1024)
        Cs = T.alloc_buffer((2 * nw, 64, wn), "bfloat16", scope="shared.dyn",
                            layout=c_layout, align=1024)
        full = T.alloc_shared((stages,), "uint64")
        empty = T.alloc_shared((stages,), "uint64")
        if tid == 0:
            for s in range(stages):
                T.ptx.mbarrier.init(T.address_of(full[s]), 1)
                T.ptx.mbarrier.init(T.address_of(empty[s]), 2)
        T.cuda.cta_sync()
        n_tiles = (N + bn - 1) // bn
        k_tiles = (K + BK - 1) // BK
        m_tiles = (M + bm - 1) // bm
        total = m_tiles * n_tiles
        if not contiguous:
            total = 0
            for g in range(G):
                total = total + (L[g] + bm - 1) // bm * n_tiles
        my_tiles = (total - bx + sms - 1) // sms
        if wg == 2:  # ---------------------------------------------------------- producer
            T.ptx.setmaxnreg(False, 40)
            if tid == 256:
                work = GroupedWork(L, contiguous, m_tiles, n_tiles, bm, bn)
                for j in range(my_tiles):
                    m0, n0, g = work.tile(bx + j * sms)
                    for kt in range(k_tiles):
                        it = j * k_tiles + kt
                        s = it % stages
                        T.ptx.mbarrier.try_wait(T.address_of(empty[s]), (it // stages + 1) % 2)
                        T.ptx.mbarrier.arrive.expect_tx(T.address_of(full[s]), stage_bytes)
                        k0 = kt * BK
                        if contiguous:
                            Tx.thread.copy_async(As[s, :, :], A[m0:m0 + bm, k0:k0 + BK],
                                                 dispatch="tma", mbar=T.address_of(full[s]))
                        else:
                            Tx.thread.copy_async(As[s, :, :], A[g:g + 1, m0:m0 + bm, k0:k0 + BK],
                                                 dispatch="tma", mbar=T.address_of(full[s]))
                        Tx.thread.copy_async(Bs[s, :, :], B[g:g + 1, n0:n0 + bn, k0:k0 + BK],
                                             dispatch="tma", mbar=T.address_of(full[s]))
        else:  # -------------------------------------------------------------- consumers
            T.ptx.setmaxnreg(True, 232)
            acc0 = T.alloc_local((64, wn), "float32", layout=wgmma_accumulator(wn))
            acc1 = T.alloc_local((64, wn), "float32", layout=wgmma_accumulator(wn))
            accs = [acc0, acc1]
            if fp8:  # each k-block's wgmma into a partial (overlap: blocks in pairs, two)
                part = T.alloc_local((64, wn), "float32", layout=wgmma_accumulator(wn))
            out = T.alloc_local((64, wn), "bfloat16", layout=wgmma_accumulator(wn))
            if fp8:
                sr = T.alloc_local((2,), "float32")
                rows = sr.view(64, 1, layout=wgmma_accumulator_rows())
                sa = T.alloc_local((4 * len(wrows),), "float32")  # scales of two k-blocks
                sb = T.alloc_local((2 * len(wcols),), "float32")
                pr = T.alloc_local((4,), "float32")  # SA * SB: a block's waves, or two blocks
                part1 = T.alloc_local((64, wn), "float32", layout=wgmma_accumulator(wn))
                parts = [part, part1]
            cw = wg
            r0 = cw * rstep
            c0 = cw * cstep
            if fp8:
                lrow = tid % 128 // 32 * 16 + tid % 32 // 4
            leader = tid % 128 == 0
            work = GroupedWork(L, contiguous, m_tiles, n_tiles, bm, bn)

            @T.inline
            def load_scales(m0, n0, g, kb, h=0):
                """The thread's scales of k-block ``kb`` into slot ``h`` of ``sa`` / ``sb``."""
                for q in T.static_range(len(wcols)):
                    sb[h * len(wcols) + q] = SB[g, T.min((n0 + c0 + wcols[q]) // 128,
                                                         (N - 1) // 128), kb]
                for q in T.static_range(len(wrows)):
                    row = m0 + r0 + wrows[q] + lrow
                    a = h * 2 * len(wrows) + 2 * q
                    if contiguous:
                        sa[a] = SA[T.min(row, M - 1), kb]
                        sa[a + 1] = SA[T.min(row + 8, M - 1), kb]
                    else:
                        sa[a] = SA[g, T.min(row, M - 1), kb]
                        sa[a + 1] = SA[g, T.min(row + 8, M - 1), kb]

            @T.inline
            def step(j, m0, n0, g, kt):
                """k-block ``kt``: fp8 waits for each wave's partial and promotes it (this
                block's scale products, then the next block's scales, loaded a block
                ahead); bf16 adds into the accumulators and frees the previous stage."""
                it = j * k_tiles + kt
                s = it % stages
                if fp8:
                    for w in T.static_range(nw):
                        pr[2 * w] = sa[2 * slots[w][0]] * sb[slots[w][1]]
                        pr[2 * w + 1] = sa[2 * slots[w][0] + 1] * sb[slots[w][1]]
                    load_scales(m0, n0, g, T.min(kt + 1, k_tiles - 1))
                T.ptx.mbarrier.try_wait(T.address_of(full[s]), it // stages % 2)
                if fp8:
                    for w in T.static_range(nw):
                        T.ptx.wgmma.fence()
                        ra, ca = r0 + waves[w][0], c0 + waves[w][1]  # the wave's A, B rows
                        Tx.wg.gemm_async(part, As[s, ra:ra + 64, :], Bs[s, ca:ca + wn, :],
                                         transB=True)
                        T.ptx.wgmma.commit_group()
                        T.ptx.wgmma.wait_group(0)
                        if w == nw - 1 and leader:
                            T.ptx.mbarrier.arrive(T.address_of(empty[s]))
                        sr[0] = pr[2 * w]
                        sr[1] = pr[2 * w + 1]
                        Tx.wg.fma(accs[w], part, rows, accs[w])
                else:
                    T.ptx.wgmma.fence()
                    for w in T.static_range(nw):
                        ra, ca = r0 + waves[w][0], c0 + waves[w][1]
                        Tx.wg.gemm_async(accs[w], As[s, ra:ra + 64, :], Bs[s, ca:ca + wn, :],
                                         accum=True, transB=True)
                    T.ptx.wgmma.commit_group()
                    T.ptx.wgmma.wait_group(1)  # the previous block's wgmma are done
                    if kt > 0 and leader:
                        T.ptx.mbarrier.arrive(T.address_of(empty[(it + stages - 1) % stages]))

            # overlap=True's steps (F.overlapped_pairs calls them; tile = (j, m0, n0, g))
            @T.inline
            def issue(tile, kt, h):
                """k-block ``kt``'s wgmma into parts[h] (once its stage is full)."""
                F.issue_block(parts[h], As, Bs, full, tile[0] * k_tiles + kt, stages, r0, c0,
                              wn)

            @T.inline
            def retire(tile, kt, h):
                """Free k-block ``kt``'s stage; acc += parts[h] * its scales (pr[2h:2h+2])."""
                if leader:
                    T.ptx.mbarrier.arrive(T.address_of(empty[(tile[0] * k_tiles + kt) % stages]))
                sr[0] = pr[2 * h]
                sr[1] = pr[2 * h + 1]
                Tx.wg.fma(acc0, parts[h], rows, acc0)

            @T.inline
            def products(h):
                """pr[2h:2h+2] from the scales in slot ``h`` (loaded a step earlier)."""
                pr[2 * h] = sa[2 * h] * sb[h]
                pr[2 * h + 1] = sa[2 * h + 1] * sb[h]

            @T.inline
            def load_pair(tile, kt, h):
                load_scales(tile[1], tile[2], tile[3], kt, h)

            for j in range(my_tiles):
                m0, n0, g = work.tile(bx + j * sms)
                for w in T.static_range(nw):
                    Tx.wg.zero(accs[w])
                if overlap:
                    F.overlapped_pairs(k_tiles, (j, m0, n0, g), load_pair, products, issue,
                                       retire)
                else:
                    if fp8:
                        load_scales(m0, n0, g, 0)
                    for kt in range(k_tiles):
                        step(j, m0, n0, g, kt)
                if not fp8:
                    T.ptx.wgmma.wait_group(0)
                if leader:
                    if not fp8:  # the last block's stage
                        T.ptx.mbarrier.arrive(T.address_of(empty[(j * k_tiles + k_tiles - 1)
                                                                 % stages]))
                    T.ptx.cp_async.bulk.wait_group_read(0)
                T.ptx.bar.sync(1 + cw, 128)
                for w in T.static_range(nw):
                    Tx.wg.cast(out, accs[w])
                    Tx.wg.copy(Cs[cw * nw + w, :, :], out)
                T.ptx.fence.proxy_async()
                T.ptx.bar.sync(1 + cw, 128)
                if leader:
                    for w in T.static_range(nw):
                        row = m0 + r0 + waves[w][0]
                        col = n0 + c0 + waves[w][1]
                        if contiguous:
                            Tx.thread.copy_async(C[row:row + 64, col:col + wn],
                                                 Cs[cw * nw + w, :, :], dispatch="tma")
                        else:
                            Tx.thread.copy_async(C[g:g + 1, row:row + 64, col:col + wn],
                                                 Cs[cw * nw + w, :, :], dispatch="tma")
                    T.ptx.cp_async.bulk.commit_group()
            if leader:
                T.ptx.cp_async.bulk.wait_group(0)

    if fp8:
        @T.prim_func
        def grouped_gemm_fp8(A_ptr: T.handle, B_ptr: T.handle, SA_ptr: T.handle,
                             SB_ptr: T.handle, C_ptr: T.handle, L_ptr: T.handle):
            body(A_ptr, B_ptr, SA_ptr, SB_ptr, C_ptr, L_ptr)

        return grouped_gemm_fp8

    @T.prim_func
    def grouped_gemm_bf16(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle, L_ptr: T.handle):
        body(A_ptr, B_ptr, None, None, C_ptr, L_ptr)

    return grouped_gemm_bf16


# ---------------------------------------------------------------- inputs and reference
def contiguous_indices(counts, align: int = M_ALIGNMENT):
    """``m_indices`` for groups of ``counts`` rows: each group's segment padded to ``align``
    rows (a group of 0 rows has no segment), padding rows -1."""
    import numpy as np

    out = []
    for g, n in enumerate(counts):
        out += [g] * n + [-1] * (-n % align)
    return np.asarray(out, np.int32)


def grouped_inputs(rng, layout: str = "contiguous", counts=(100, 0, 130), N_: int = 136,
                   K_: int = 272, fp8: bool = True, m_max: int | None = None):
    """Random inputs and the layout array, C poisoned with NaN: ``[A, B, (SA, SB,) C, L]``.
    Contiguous: ``counts`` rows a group (padded, :func:`contiguous_indices`); masked:
    ``counts`` valid rows of ``m_max`` (default: the largest count) a group."""
    import ml_dtypes
    import numpy as np

    g = len(counts)
    bf16 = ml_dtypes.bfloat16
    if layout == "contiguous":
        L = contiguous_indices(counts)
        rows = (len(L),)
    else:
        L = np.asarray(counts, np.int32)
        rows = (g, m_max or max(max(counts), 1))
    if fp8:
        qa = [F.quantize(rng, int(np.prod(rows)), K_, (1, 128))]
        a = qa[0][0].reshape(*rows, K_)
        sa = qa[0][1].reshape(*rows, -1)
        qb = [F.quantize(rng, N_, K_, (128, 128)) for _ in range(g)]
        b, sb = np.stack([q[0] for q in qb]), np.stack([q[1] for q in qb])
        return [a, b, sa, sb, np.full(rows + (N_,), np.nan, bf16), L]
    a = rng.standard_normal(rows + (K_,)).astype(bf16)
    b = rng.standard_normal((g, N_, K_)).astype(bf16)
    return [a, b, np.full(rows + (N_,), np.nan, bf16), L]


def grouped_reference(args, layout: str = "contiguous", fp8: bool = True):
    """C in float64 where the layout defines it (the groups' valid rows), NaN elsewhere."""
    import numpy as np

    a, b = args[0], args[1]
    c, L = args[-2], args[-1]
    ref = np.full(c.shape, np.nan)
    for g in range(b.shape[0]):
        if layout == "contiguous":
            sel = np.flatnonzero(L == g)
            key = (sel,)
        else:
            sel = np.arange(int(L[g]))
            key = (g, sel)
        if not len(sel):
            continue
        if fp8:
            sa = args[2][sel] if layout == "contiguous" else args[2][g][sel]
            a64, b64 = F.dequantize(a[key], sa, b[g], args[3][g], "block")
        else:
            a64, b64 = a[key].astype(np.float64), b[g].astype(np.float64)
        ref[key] = a64 @ b64.T
    return ref


# `tilewise run examples/gemm_grouped.py`: three groups of 128-row segments, no padding
SHAPE = ((128, 256, 128), 136, 272)  # rows a group, N, K
TARGET = "sm_90a"
grouped_gemm_fp8 = make_grouped_gemm_fp8(3, 136, 272, num_sms=4)
RTOL, ATOL = F.RTOL, F.ATOL


def inputs(rng):
    return grouped_inputs(rng, "contiguous", SHAPE[0], SHAPE[1], SHAPE[2])


def reference(a, b, sa, sb, c, L):
    return [a, b, sa, sb, grouped_reference([a, b, sa, sb, c, L]).astype(c.dtype), L]

