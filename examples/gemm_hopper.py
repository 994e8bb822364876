"""A Hopper GEMM in tilewise: C = A @ B on the tensor cores of an H100 / H200 (sm_90a).

A is (M, K) and B is (K, N), both row-major, bf16 or fp16; C is (M, N) in the same dtype,
accumulated in float32: exactly what ``torch.matmul(A, B)`` takes and returns. One kernel
serves every M, N and K (they are symbolic sizes; K and N multiples of 8, the 16-byte
row alignment TMA needs): the tails are read as zeros and not written, by TMA. Other K or
N: ``make_gemm(M, N, K)`` returns a :class:`Padded` kernel that copies the arrays whose rows
are too short into zero-padded ones, runs the kernel of the rounded-up sizes and copies C
back, with a ``TilewisePerformanceWarning`` (no size is refused). ``transB=True`` takes B as
(N, K), ``nn.Linear``'s weight.

The technique, from the outside in:

* **Persistent CTAs.** The grid is one CTA per SM; CTA ``b`` takes output tiles ``b``,
  ``b + #SMs``, ... in a *grouped* order (``GROUP_M`` tile rows at a time) so that tiles
  running together share rows of A and columns of B in L2. (``persistent=False``: one
  CTA per tile, handed out by the hardware as SMs free up; the tuner times it where the
  tiles are at most two waves, which it balances better when B streams from DRAM.) The
  order is written once, in ``tilewise.sched.GroupedTiles``: the producer and the
  consumers each call its ``@T.inline`` methods, so they cannot disagree about which tile
  comes next. A problem with too few tiles to occupy the SMs (512 x 512) gets narrower
  tiles (128 x 128 or 128 x 64) and a deeper ring instead: more CTAs work, each on a
  cheaper tile. Where 128 x 256 tiles leave a ragged last wave (512 x 6144: 96 tiles for
  132 SMs), 128 x 192 tiles (one ``wgmma.m64n192k16`` per consumer, a 4-stage ring) fill it.
* **Split K and swap-AB for small M.** When the tiles are too few to keep the SMs
  streaming B, a cluster of ``splits`` CTAs shares each tile's K blocks (their float32
  partial sums handed down the cluster by the copy engine and added in rank order: the
  same bits every run). For M <= 128 the tile may be computed transposed, Cᵀ = Bᵀ Aᵀ
  (``swap=True``): ``bm`` = 128 (or 64) columns of B are wgmma's M, read from B's
  row-major tile as an MN-major operand (``transA``), and the ``bn`` = 8 ... 128 rows of A
  are wgmma's N (``transB``, A's tile is K-major), so a decode GEMM (M = 1) pads M to 8,
  not 64; the epilogue writes the (64, bn) accumulator transposed into a row-major (bn,
  64) shared tile that TMA stores into C. ``plan`` picks among the shapes by ``estimate``,
  a cost model that knows how many clusters of each size the GPU holds at once
  (docs/gemm_hopper.md).
* **Warp specialisation.** 384 threads: warpgroups 0 and 1 are the *consumers*,
  warpgroup 2 the *producer*. The producer gives its registers away (``setmaxnreg`` 40)
  and the consumers take them (232): each consumer holds a 64 x 256 float32
  accumulator, 128 registers per thread. (ptxas honours ``setmaxnreg`` only when it
  compiles the whole program, so tilewise assembles a kernel using it with ``ptxas`` when
  one is found (``codegen/cubin.py``); nvJitLink, the fallback, compiles PTX as a separate
  unit and ignores it (C7504), giving every thread 65536 / 384 = 168. The accumulator is
  zeroed at each tile, so its old values die at the epilogue and even then the kernel fits
  in 154 registers without spilling. ``producer="warp"``: 288 threads, one producer warp,
  224 registers for everyone.)
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

import dataclasses
import functools

import tilewise
from tilewise import T, Tx, config_error, runtime
from tilewise.ir.stmt import as_prim_func
from tilewise.layout import S as S_
from tilewise.layout import TileLayout, swizzled_tile, wgmma_accumulator
from tilewise.runtime.scratch import Scratch, on_stream
from tilewise.runtime.timer import CudaTimer
from tilewise.sched import GroupedTiles, HybridStreamK, SplitK, grouped_coords

STREAMK_MIN_BLOCKS = 4  # K blocks a stream-K range holds at least (a partial sum costs a
#  64 x wn float32 store and load through L2 per consumer: ~1 us, about 4 K blocks' work)
BK = 64  # K step of a stage (128 bytes of 16-bit elements: one swizzle row)
GROUP_M = 8  # tile rows walked together (L2 reuse)
H200_SMS = 132
SMEM = 227 * 1024  # dynamic shared memory a CTA may have on sm_90
TILES = ((128, 256), (128, 192), (128, 128), (128, 64), (64, 256), (64, 128))  # (bm, bn)
#  a kernel takes; 128 x 192 (one m64n192 wgmma per consumer) evens out a last wave that
#  128 x 256 leaves ragged (512 x 6144: 96 tiles of 128 x 256 for 132 SMs, 128 of 128 x 192)
MIN_STAGES = {(128, 192): 3}  # stages a tile needs to be a candidate (default 2): a split
#  128 x 192 fits only 2 (40 KB a stage beside 96 KB of float32 partial sums), a ring too
#  shallow to keep the wide tile's wgmma fed, and not measured; forced, it still builds
SWAP_COLS = (8, 16, 32, 64, 128)  # swap-AB: a tile is bm columns of B x bn rows of A; the
#  widths the plan tries for M <= 128 (the narrowest >= M), beside M rounded up to 8 (16 at
#  bm=64); any multiple of 8 up to 256 builds (swap_tile_ok)
SWAP_M = 512  # up to this M swap-AB tiles are candidates like the others: up to 256 rows of
#  A fit wgmma's N, so one or two tile rows cover M (M = 200: 128-row tiles pad it to 256;
#  M = 300: two swapped 128 x 152 tiles, what cuBLAS runs there, 0.98 x cuBLAS against 0.65
#  for 128 x 128). Above it, M cut into tiles of 128-256 rows (swap_widths), only where that
#  fits the SMs better than the normal tiles (SWAP_GAIN)
SWAP_GAIN = 0.97  # above SWAP_M a swapped tile is planned and timed only where the estimate
#  puts it this far below the best normal one: M cut to fit (3000 x 1000: 128 tiles of
#  128 x 192 for 132 SMs, against 96 of 128 x 256; measured 621 against 436-477 TFLOP/s on
#  the H200), not the transposed twins of large squares
DECODE_M = 8  # up to this M the plan takes the swapped 128 x 8 tile (M in one column tile)

M = T.int32()
N = T.int32()
K = T.int32()
NB = T.int32()  # B's rows with transB=True and loose_b=True (the padded kernel)
KB = T.int32()  # B's rows with loose_b=True
LDA = T.int32()  # the row pitches (elements) of A, B and C with strided=True
LDB = T.int32()
LDC = T.int32()
WS = T.int32()  # the (tile, K slice) units of a split through global memory (W's rows)


H200_CLUSTERS = {2: 66, 3: 39, 4: 30, 6: 17, 8: 15}  # clusters of S CTAs resident at once
#  (ncu's Max Active Clusters for this kernel on the H200, 2026-12-02): 4 and more leave SMs
#  idle, and 32 tiles x 4 splits need two waves
STREAMK_FIXUP = 1e-6  # s a stream-K finisher waits on each helper's flag beyond its bytes
LATENCY = 1.2e-6  # s from a TMA load's issue to its bytes (fits the 64-CTA swap kernels)
HOP = 2e-6  # s a level of the split's tree costs beyond its bytes
SPLIT_L2 = 4e12  # bytes/s of partial sums a split through global memory writes and reads
SPLIT_LAUNCH = 3e-6  # s its second kernel adds: the first one's drain, its own start
PEAK = 990e12  # dense bf16/fp16 tensor FLOP/s of an H100/H200 SXM (the datasheet)
DRAM = 4.0e12  # bytes/s an H200 streams (torch's copy_ measured ~4.27e12)
WGMMA_EFF = {256: 0.95, 192: 0.92, 128: 0.85, 64: 0.7, 32: 0.45, 16: 0.25, 8: 0.13}  # of
#  peak, by a warpgroup's wgmma N (measured trend: narrow wgmma is bound by reading A from
#  shared memory; 192 placed between its neighbours, not measured)


TUNE_HEAT_S = 0.0  # the tuner's heat (runtime/timer.py) for these kernels: none. Measured
#  on the H200 (benchmarks/RESULTS.md, 2026-12-02, fourth session): heated, the candidates
#  of a B-streaming problem time within ~5 % of each other and the tuner kept a 128 x 64
#  tile at 0.88-0.92 x cuBLAS (512 x 14336 x 4096) where the plan's 128 x 256 ran 0.99 in
#  the sweep; unheated its ranking matched the sweep's (and the fp8 GEMMs keep the heat)


def plan(M_: int | None, N_: int | None, K_: int | None, sms: int, bm=None, bn=None,
         splits=None, stages=None, multicast=None, swap=None, global_splits=None) -> dict:
    """The kernel's shape for a problem: ``bm`` x ``bn`` output tiles (two consumer
    warpgroups: 64 rows each at bm=128, half the columns each at bm=64), ``splits`` CTAs of
    a cluster sharing one tile's K blocks (their partial sums added along the cluster in
    rank order: deterministic), ``multicast`` CTAs of a cluster (two tiles of one column)
    sharing each B tile, each loading half and multicasting it, and the ring's ``stages``.
    ``swap``: the tile is computed transposed (Cᵀ = Bᵀ Aᵀ), ``bm`` columns of B (wgmma's
    M: 64 for each consumer at bm=128, all 64 for both at bm=64) by ``bn`` rows of A
    (wgmma's N, 8 to 128; half for each consumer at bm=64): small M without 64-row
    padding. What is not given is chosen by :func:`estimate` over every
    allowed shape (without sizes: 128 x 256, no split, no swap); for M <= :data:`DECODE_M`
    among the swapped tiles only. There the estimate preferred a 64 x 256 tile at N = 28672
    and 32000 (one wave against 1.7-1.9 waves of 128 x 8), which ran 0.82-0.97 x cuBLAS
    where the swapped 128 x 8 ran 0.97-1.04 x, in all three interleaved sweeps on the H200
    (2026-12-02, bf16 and fp16; benchmarks/RESULTS.md); at every other M = 1 shape it
    already took the swapped tile."""
    if splits is not None and global_splits is None:  # K's split chosen: not through
        global_splits = 1  # global memory unless that is given too
    best = {"bm": 128, "bn": 256, "splits": 1, "multicast": 1, "swap": False,
            "global_splits": 1}
    forced = {k: v for k, v in (("bm", bm), ("bn", bn), ("splits", splits),
                                ("multicast", multicast), ("swap", swap),
                                ("global_splits", global_splits)) if v is not None}
    if swap is None and (bm is not None or bn is not None):
        forced["swap"] = False  # a forced tile is the usual orientation unless swap=True
    if None not in (M_, N_, K_) and len(forced) < len(best):
        options = [c for c in candidates(M_, N_, K_, sms)
                   if all(c.get(k, 1) == v for k, v in forced.items())]  # (1: a key
        # only global splits have)
        if M_ <= DECODE_M and "swap" not in forced:  # decode: see the docstring
            options = [c for c in options if c["swap"]] or options
        if M_ > SWAP_M and "swap" not in forced and not _swap_timed(M_, N_, K_, sms):
            options = [c for c in options if not c["swap"]] or options  # (SWAP_GAIN)
        if options:
            best = min(options, key=lambda c: estimate(M_, N_, K_, sms, **c))
            whole = [c for c in options if c.get("global_splits", 1) == 1]
            if best.get("global_splits", 1) > 1 and whole and "global_splits" not in forced:
                other = min(whole, key=lambda c: estimate(M_, N_, K_, sms, **c))
                if estimate(M_, N_, K_, sms, **best) > GLOBAL_GAIN * estimate(
                        M_, N_, K_, sms, **other):
                    best = other  # (GLOBAL_GAIN: the tuner times both)
    best.update(forced)
    if best["swap"] and not swap_tile_ok(best["bm"], best["bn"]):
        raise config_error(f"swap=True with bm={best['bm']}, bn={best['bn']}: {SWAP_RULE}")
    if not best["swap"] and (best["bm"], best["bn"]) not in TILES:
        names = ", ".join(f"{m}x{n}" for m, n in TILES)
        raise config_error(f"bm={best['bm']}, bn={best['bn']}: the tile (bm x bn) is one of "
                           f"{names}")
    if not 1 <= best["splits"] <= 8:
        raise config_error(f"splits={best['splits']}: a cluster has 1 to 8 CTAs")
    if best["multicast"] not in (1, 2) or (best["multicast"] == 2 and best["splits"] > 1):
        raise config_error(f"multicast={best['multicast']}: 1, or 2 without a split of K")
    gs = best.setdefault("global_splits", 1)
    if not isinstance(gs, int) or gs < 1 or (gs > 1 and (best["splits"] > 1 or
                                                         best["multicast"] > 1)):
        raise config_error(f"global_splits={gs}: a whole number >= 1 (CTAs sharing a tile's K "
                           "blocks through global memory), with splits=1 and multicast=1 (a "
                           "split through a cluster is the other way to share them)")
    if gs == 1:  # (the key only where K is split so: the other configs as they were)
        del best["global_splits"]
    fit = _stages_that_fit(best["bm"], best["bn"], best["splits"])
    if stages is None:
        stages = min(8, fit)
    if not 2 <= stages <= fit:
        raise config_error(f"stages={stages}: 2 to {fit} stages fit in shared memory beside "
                           f"the epilogue of a {best['bm']}x{best['bn']} tile")
    return {**best, "stages": stages}


def candidates(M_: int, N_: int, K_: int, sms: int) -> list[dict]:
    """Every kernel shape worth trying for a problem: each tile, and for tiles too few to
    fill the SMs, splits of K (each CTA keeping at least 4 K steps), where the ring keeps
    the tile's :data:`MIN_STAGES` beside the epilogue. Multicast pairs are not among them
    (the estimate does not model the L2 reads they save): the tuner times the twins of
    its first shapes (:func:`multicast_configs`)."""
    out = []
    k_steps = -(-K_ // BK)
    tiles = [(bm_, bn_, False) for bm_, bn_ in TILES if not M_ <= 64 < bm_]  # measured: 7/8
    tiles += [(bm_, c, True) for bm_, c in swap_widths(M_)]  # swap: M on wgmma's N
    for bm_, bn_, swap in tiles:
        count = _tile_count(M_, N_, bm_, bn_, swap)
        for s in (1, 2, 3, 4, 6, 8):
            if s > 1 and (count * s > 2 * sms or k_steps < 4 * s):
                break
            if _stages_that_fit(bm_, bn_, s) >= MIN_STAGES.get((bm_, bn_), 2):
                out.append({"bm": bm_, "bn": bn_, "splits": s, "multicast": 1, "swap": swap})
        if _stages_that_fit(bm_, bn_, 1) >= MIN_STAGES.get((bm_, bn_), 2):
            out += [{"bm": bm_, "bn": bn_, "splits": 1, "multicast": 1, "swap": swap,
                     "global_splits": g} for g in global_splits_for(count, k_steps, sms)]
    return out


GLOBAL_MIN_BLOCKS = 4  # K blocks a slice of a split through global memory keeps at least
GLOBAL_GAIN = 0.8  # the plan takes a split through global memory only where the estimate
#  puts it this far below the best other shape (measured, H200: 128 x 128 x 65536 2.5 x
#  faster than the cluster split, its estimate 0.26 x; 256 x 256 x 16384 and 96 x 768 x 3072
#  even or 3 % slower at 0.83-0.87 x; 512 x 512 x 8192 18 % slower than stream-K); the
#  tuner times the two best wherever they are candidates


def global_splits_for(tiles: int, k_steps: int, sms: int) -> list[int]:
    """The ways a split through global memory is tried for ``tiles`` output tiles: fewer
    tiles than half the SMs (a wave of whole tiles leaves most SMs idle), each slice at
    least :data:`GLOBAL_MIN_BLOCKS` K blocks; the splits that fill one wave of CTAs (all
    the SMs, or the most a whole number of slices per tile gives) and half of it."""
    if 2 * tiles > sms:
        return []
    most = min(sms // tiles, k_steps // GLOBAL_MIN_BLOCKS)
    return sorted({g for g in (most, most // 2) if g >= 2})


def estimate(M_: int, N_: int, K_: int, sms: int, bm: int, bn: int, splits: int,
             multicast: int = 1, swap: bool = False, streamk: bool = False,
             global_splits: int = 1) -> float:
    """Seconds a kernel shape should take: the larger of its tensor-core time (padded
    tiles, the wgmma width's efficiency, the SMs a partial last wave leaves idle) and its
    memory time (each operand read once, C written once; fewer CTAs than ~3/4 of the SMs
    stream less, and so does a CTA with few bytes in flight), a quarter of the smaller one
    (the overlap is imperfect), the split's reduction and a fixed start-up. A split kernel
    launches one cluster per tile: clusters that do not fit at once (:func:`cluster_slots`)
    run in a second wave, for both times. A swapped tile is costed as the problem Nᵀ x Mᵀ."""
    if swap:
        M_, N_ = N_, M_
    tiles = -(-M_ // bm) * -(-N_ // bn)
    wn = consumer_cols(bm, bn)
    units = tiles * splits
    gs = global_splits
    k_steps = -(-K_ // BK)
    depth = min(8, _stages_that_fit(bm, bn, splits))  # K blocks a CTA has in flight
    if streamk:  # whole waves, then the rest by K blocks: every SM busy to the end
        util, busy, waves = 1.0, min(sms, tiles * k_steps), 1.0
    elif gs > 1:  # (tile, slice) units of single CTAs, each slice's blocks all it has
        units = tiles * gs
        util = units / (-(-units // sms) * sms)
        busy = min(units, sms)
        waves = 1.0 / util if units > sms else 1.0
        depth = min(depth, -(-k_steps // gs))
    elif splits == 1:  # a multicast pair is scheduled as one unit of two tiles
        units, slots = -(-tiles // multicast), sms // multicast
        util = units / (-(-units // slots) * slots) * tiles / (units * multicast)
        busy = min(tiles, sms)
        waves = 1.0 / util if units > slots else 1.0  # a last wave streams at a full one's pace
    else:
        slots = cluster_slots(splits, sms)
        util = units / (-(-units // slots) * slots)
        busy = min(units, slots)
        waves = 1.0 / util if units > slots else 1.0  # a last wave streams at a full one's pace
    flops = 2.0 * -(-M_ // bm) * bm * -(-N_ // bn) * bn * K_
    compute = flops / (PEAK * wgmma_eff(wn) * util)
    flight = busy * depth * (bm + bn) * BK * 2 / LATENCY
    rate = min(DRAM * min(1.0, busy / (0.75 * sms)), flight)
    memory = 2.0 * (M_ * K_ + K_ * N_ + M_ * N_) / rate * waves
    reduce = split_reduce_time(splits, wn)
    if gs > 1:  # the partial sums written and read back through L2, the second kernel
        reduce = 2 * tiles * gs * bm * bn * 4 / SPLIT_L2 + SPLIT_LAUNCH
    if streamk and tiles % sms:  # a split tile's finisher adds its helpers' partial sums
        q = max(-(-(tiles % sms) * k_steps // sms), STREAMK_MIN_BLOCKS)
        reduce = -(-k_steps // q) * (64 * wn * 4 * 2 / 400e9 + STREAMK_FIXUP)
    # the two overlap, but not perfectly: the smaller still shows a little
    return max(compute, memory) + 0.25 * min(compute, memory) + reduce + 3e-6


def split_reduce_time(splits: int, wn: int) -> float:
    """Seconds the partial sums of a ``splits``-way split take to reach rank 0: a tree of
    ceil(log2 splits) levels, each a wait, the add, the store and the copy engine's 4-64 KB
    (two consumers' 64 x ``wn`` float32 sums). Measured on the H200 against the chain it
    replaced (``splits - 1`` hops): 1.2-2.3 µs a hop saved at ``wn`` 64-128."""
    return (splits - 1).bit_length() * (64 * wn * 4 * 2 / 200e9 + HOP)


def wgmma_eff(n: int) -> float:
    """:data:`WGMMA_EFF` at any wgmma N (a multiple of 8): linear between the listed ones."""
    if n in WGMMA_EFF:
        return WGMMA_EFF[n]
    lo = max(k for k in WGMMA_EFF if k < n)
    hi = min(k for k in WGMMA_EFF if k > n)
    return WGMMA_EFF[lo] + (WGMMA_EFF[hi] - WGMMA_EFF[lo]) * (n - lo) / (hi - lo)


SWAP_RULE = ("a swapped tile is bm=128 columns of B x bn rows of A, bn a multiple of 8 up "
             "to 256, or bm=64 x bn a multiple of 16 from 16 to 256 (half to each consumer)")


def swap_tile_ok(bm: int, bn: int) -> bool:
    """Whether ``bm`` x ``bn`` is a swapped tile: wgmma's N is the consumer's share of the
    ``bn`` rows of A (all of them at bm=128, half at bm=64), a multiple of 8 up to 256."""
    if bm == 128:
        return bn % 8 == 0 and 8 <= bn <= 256
    return bm == 64 and bn % 16 == 0 and 16 <= bn <= 256


SWAP_CUTS = 4  # M is cut into up to this many column tiles of swapped tiles (each >= 32)


def swap_widths(M_: int) -> list[tuple[int, int]]:
    """The swapped tiles (bm, bn) tried for M rows of A: at bm=128 the narrowest of
    :data:`SWAP_COLS` that holds M (M <= 128), and M cut into ``j`` equal column tiles
    rounded up to 8 (j = 1: no padding beyond wgmma's N step; for M > :data:`STREAMING_M`
    also j <= :data:`SWAP_CUTS` where each is >= 32 rows: j times the tiles, the SMs
    filled without splitting K, as cuBLAS's 128 x 72 tiles do at M = 200), at most 256;
    at bm=64 the same widths rounded up to 16, from 32. Above :data:`SWAP_M`, M cut into
    equal column tiles of 128 to 256 rows (bm=128 only: the tile rows of a large M already
    fill the SMs), taken only where they gain (:data:`SWAP_GAIN`)."""
    if M_ > SWAP_M:  # M cut into tiles of 128-256 rows (wgmma's widest N)
        return [(128, w) for w in sorted({-(-M_ // (8 * j)) * 8 for j in
                                          range(-(-M_ // 256), -(-M_ // 128) + 1)})
                if 128 <= w <= 256]
    cuts = SWAP_CUTS if M_ > STREAMING_M else 1  # (M <= 128: the measured decode plans)
    widths = {w for j in range(1, cuts + 1) for w in [-(-M_ // (8 * j)) * 8]
              if w <= 256 and (j == 1 or -(-M_ // j) >= 32)}
    if M_ <= SWAP_COLS[-1]:
        widths.add(min(c for c in SWAP_COLS if c >= M_))
    out = [(128, c) for c in sorted(widths)]
    out += [(64, c) for c in sorted({-(-c // 16) * 16 for c in widths}) if c >= 32]
    return out


def _tile_count(M_: int, N_: int, bm: int, bn: int, swap: bool) -> int:
    """Output tiles of a problem: ``bm`` x ``bn`` tiles of C (of Cᵀ with ``swap``)."""
    rows, cols = (N_, M_) if swap else (M_, N_)
    return -(-rows // bm) * -(-cols // bn)


def cluster_slots(splits: int, sms: int) -> int:
    """CTAs of ``splits``-CTA clusters resident at once: a cluster lives in one GPC, so the
    GPCs' sizes, not the SM count, decide (:data:`H200_CLUSTERS`, scaled to ``sms``)."""
    return max(1, H200_CLUSTERS[splits] * sms // H200_SMS) * splits


TUNE_ALTERNATIVES = 3  # kernel shapes the tuner times beside the plan's
TUNE_STREAMK = 2  # stream-K shapes it times too, where the last wave is ragged
STREAMK_RAGGED = 0.85  # a last wave fuller than this leaves little for stream-K to gain
TUNE_ONE_PER_TILE_WAVES = 2  # tiles per SM up to which M <= 128 also times one CTA a tile
STREAMING_M = 128  # M up to which B streams from DRAM (the one-CTA-a-tile twins' rule)


def tune_configs(M_: int, N_: int, K_: int, sms: int, first: dict) -> list[dict]:
    """What ``make_gemm`` tunes over: the plan's shape first (what runs untuned), then the
    next best shapes by :func:`estimate`, each with as many stages as fit."""
    ranked = sorted((c for c in candidates(M_, N_, K_, sms)  # (splits through global
                     if "global_splits" not in c  # memory: their own twins, below)
                     and any(c[k] != first[k] for k in ("bm", "bn", "splits", "swap"))),
                    key=lambda c: estimate(M_, N_, K_, sms, **c))
    best = {}  # each tile's best split, in rank order: different tiles first
    for c in ranked:
        best.setdefault((c["bm"], c["bn"], c["swap"]), c)
    tiles = [c for t, c in best.items() if t != (first["bm"], first["bn"], first["swap"])]
    if M_ > STREAMING_M:  # the best normal tiles, and one swapped: both are timed
        others = _by_orientation(tiles, TUNE_ALTERNATIVES,
                                 _swap_timed(M_, N_, K_, sms))
    else:
        others = tiles[:TUNE_ALTERNATIVES]
        others += [c for c in ranked if c not in others][:TUNE_ALTERNATIVES - len(others)]
        others += _other_orientation([first] + others, tiles)
    out = [first] + [plan(M_, N_, K_, sms, **c) for c in others]
    # one CTA per tile beside the persistent shapes where it measured faster (the H200,
    # 2026-12-02: 1-8 % for M <= 128, where B streams; benchmarks/RESULTS.md)
    return (out + [{**c, "persistent": False} for c in out if _one_per_tile(M_, N_, sms, c)]
            + multicast_configs(M_, out) + streamk_configs(M_, N_, K_, sms)
            + [c for c in global_configs(M_, N_, K_, sms) if c not in out])


TUNE_MULTICAST = 2  # multicast twins of the tuner's first normal shapes it times too


def multicast_configs(M_: int, shapes: list[dict]) -> list[dict]:
    """Multicast pairs worth timing: the twins (``multicast=2``: two row tiles that share
    their B tile, each CTA loading half of it into both) of the first
    :data:`TUNE_MULTICAST` unswapped, unsplit shapes where M has two row tiles to pair.
    They halve B's reads from L2, which is what binds a mid-size problem whose tiles are
    too few or too narrow for 128 x 256 (H200, 2026-12-02: 2048 x 1000 x 4096 at 128 x 128,
    582 TFLOP/s against 489 alone; 1024 x 3000 x 1024 at 128 x 192, 494 against 413); at
    large squares they run within 2 % of the tile alone. The estimate does not see L2
    traffic, so they are timed, never planned. Swapped pairs (two column tiles) run
    correctly but were no faster than the swapped tile alone on any shape measured (H200,
    2026-12-03: 0.67-1.01 x), so the tuner leaves them out."""
    twins = [{**c, "multicast": 2} for c in shapes
             if not c["swap"] and c["splits"] == 1 and c["multicast"] == 1
             and "global_splits" not in c and c.get("persistent", True)
             and M_ >= 2 * c["bm"]]
    return twins[:TUNE_MULTICAST]


def streamk_configs(M_: int, N_: int, K_: int, sms: int) -> list[dict]:
    """Stream-K shapes worth timing: where whole tiles leave the last wave less than
    :data:`STREAMK_RAGGED` full (or fewer tiles than SMs) and K has blocks enough to share
    out, the :data:`TUNE_STREAMK` single-CTA tiles :func:`estimate` ranks best with
    stream-K (``streamk=True``: the last wave's tiles cut by K blocks over every SM)."""
    k_steps = -(-K_ // BK)
    if k_steps < 2 * STREAMK_MIN_BLOCKS:
        return []
    tiles = [c for c in candidates(M_, N_, K_, sms)
             if c["splits"] == 1 and "global_splits" not in c]
    ragged = [c for c in tiles if 0 < _tile_count(M_, N_, c["bm"], c["bn"], c["swap"]) % sms
              < STREAMK_RAGGED * sms]
    ranked = sorted(ragged, key=lambda c: estimate(M_, N_, K_, sms, **c, streamk=True))
    if M_ > STREAMING_M:
        picked = _by_orientation(ranked, TUNE_STREAMK,
                                 _swap_timed(M_, N_, K_, sms))
    else:
        picked = ranked[:TUNE_STREAMK]
        picked += _other_orientation(picked, ranked)
    return [{**plan(M_, N_, K_, sms, **c), "streamk": True} for c in picked]


TUNE_GLOBAL = 2  # splits through global memory the tuner times, where tiles are few


def global_configs(M_: int, N_: int, K_: int, sms: int) -> list[dict]:
    """Splits through global memory worth timing: where whole tiles fill less than half the
    SMs (:func:`global_splits_for`), the :data:`TUNE_GLOBAL` that :func:`estimate` ranks
    best, each of another tile or split where there are such (a swapped twin of the same
    tile and split comes after them: on a square problem it is the same work transposed,
    and 1024 x 1024 x 16384 timed 128 x 256 split 4 and its twin, not 128 x 128 split 2)."""
    ranked = sorted((c for c in candidates(M_, N_, K_, sms) if c.get("global_splits", 1) > 1),
                    key=lambda c: estimate(M_, N_, K_, sms, **c))
    first = {}  # each tile and split's best orientation, in rank order
    for c in ranked:
        first.setdefault((c["bm"], c["bn"], c["global_splits"]), c)
    picked = ([*first.values()] + [c for c in ranked if c not in first.values()])[:TUNE_GLOBAL]
    return [plan(M_, N_, K_, sms, **c) for c in picked]


def _by_orientation(ranked: list[dict], normal: int, swapped: int) -> list[dict]:
    """The first ``normal`` unswapped and ``swapped`` swapped shapes of ``ranked``. For M >
    :data:`STREAMING_M` the estimate ranks a swapped tile like its transposed twin (128 x
    128 both ways at M = 256), so taking the best four whatever their orientation crowded
    out the normal tiles that won (256 x 4096 x 14336: 1.06 x cuBLAS with them, 0.91
    without, the H200)."""
    return ([c for c in ranked if not c["swap"]][:normal]
            + [c for c in ranked if c["swap"]][:swapped])


def _swap_timed(M_: int, N_: int, K_: int, sms: int) -> int:
    """How many swapped shapes the tuner times beside the normal ones (and how many
    swapped stream-K shapes): one up to :data:`SWAP_M`; above it one only where the best
    swapped shape's estimate, with stream-K or without, is below :data:`SWAP_GAIN` x the
    best normal one's (M cut to fit the SMs)."""
    if M_ <= SWAP_M:
        return 1
    best = {}
    for c in candidates(M_, N_, K_, sms):
        t = min(estimate(M_, N_, K_, sms, **c, streamk=sk) for sk in (False, c["splits"] == 1))
        best[c["swap"]] = min(best.get(c["swap"], t), t)
    return int(len(best) == 2 and best[True] < SWAP_GAIN * best[False])


def _other_orientation(chosen: list[dict], ranked: list[dict]) -> list[dict]:
    """The best of ``ranked`` in the orientation (swapped or not) that ``chosen`` lacks, if
    any: the estimate counts each operand's bytes once, not the L2 re-reads of narrow
    swapped tiles (M cut into column tiles re-reads B), so the tuner always times both."""
    have = {c["swap"] for c in chosen}
    return [next(c for c in ranked if c["swap"] == o) for o in (False, True)
            if o not in have and any(c["swap"] == o for c in ranked)][:1]


def _one_per_tile(M_: int, N_: int, sms: int, c: dict) -> bool:
    """Whether a non-persistent twin of kernel shape ``c`` is worth timing: one wave of
    tiles (the persistent grid would leave CTAs idle where the hardware places them), or
    for M <= :data:`STREAMING_M` up to :data:`TUNE_ONE_PER_TILE_WAVES` waves (one tile a CTA,
    handed out as SMs free up, balances the last wave of tiles that stream B). Two waves
    of compute-bound tiles lose the persistent kernel's overlap of one tile's epilogue
    with the next one's loads: 2-6 % slower on the H200 (2048 x 4096 x 4096 at 128 x 256)."""
    tiles = _tile_count(M_, N_, c["bm"], c["bn"], c["swap"])
    waves = TUNE_ONE_PER_TILE_WAVES if M_ <= STREAMING_M else 1
    return (c["splits"] == 1 and c["multicast"] == 1 and c.get("persistent", True)
            and "global_splits" not in c and tiles <= waves * sms)


def consumer_cols(bm: int, bn: int) -> int:
    """The columns of one consumer warpgroup's tile (its wgmma N): all ``bn`` at bm=128 (the
    two consumers take 64 rows each), half at bm=64 (they share the 64 rows)."""
    return bn if bm == 128 else bn // 2


def slot_shape(units, bm: int, bn: int) -> tuple:
    """The float32 partial-sum workspace a launcher allocates: ``units`` slots (stream-K's
    CTAs, a global split's (tile, slice) units), each in fragment order (units, consumer,
    register, thread), as the kernels declare ``W`` (with their own ``wn``: a helper cannot
    take the symbolic unit count there)."""
    return (units, 2, consumer_cols(bm, bn) // 2, 128)


def _stages_that_fit(bm: int, bn: int, splits: int) -> int:
    wn = consumer_cols(bm, bn)
    fixed = 2 * 64 * wn * 2 + (2 * 64 * wn * 4 if splits > 1 else 0) + 2048
    return (SMEM - fixed) // ((bm * BK + BK * bn) * 2)


def make_gemm(M_: int | None = None, N_: int | None = None, K_: int | None = None,
              dtype: str = "bfloat16", num_sms: int | None = None, stages: int | None = None,
              producer: str = "warpgroup", bn: int | None = None, bm: int | None = None,
              splits: int | None = None, multicast: int | None = None,
              swap: bool | None = None, persistent: bool | None = None,
              transB: bool = False, loose_b: bool = False, streamk: bool | None = None,
              strided: bool = False, global_splits: int | None = None):
    """The GEMM kernel ``k(A, B, C)`` for ``dtype`` in {"bfloat16", "float16"}. The sizes,
    when given, are checked against TMA's alignment rule and choose the kernel's shape: the
    kernel is tuned on its first launch (``tilewise.autotune`` over :func:`plan`'s choice
    and the next :data:`TUNE_ALTERNATIVES` shapes by :func:`estimate`; in ``tw.simulate``,
    ``tw.compile``, with ``TILEWISE_AUTOTUNE=0`` or without a GPU it is the plan's);
    ``bm``, ``bn``, ``splits``, ``multicast``, ``swap``, ``stages`` or ``persistent``
    force the shape (no tuning). ``persistent=False`` launches one CTA per output tile
    instead of one per SM (no split, no multicast); the tuner also times that form where
    the tiles are at most two waves.
    The kernel itself takes any M, N, K. ``producer="warpgroup"`` (384 threads,
    setmaxnreg 40/232) or ``"warp"`` (288 threads, one producer warp). ``transB=True``: B
    is given as its transpose, (N, K) row-major (``torch.nn.Linear``'s weight: ``C = A @
    B.T`` without a copy); the kernel loads K-major B tiles, the tensor cores' other
    operand form, and is the same otherwise. ``loose_b=True`` (what :class:`Padded` builds):
    B's row count is a size of its own, not N (``transB``) or K; TMA reads the rows past it
    as zeros. ``streamk=True``: whole waves of tiles, then the K blocks of the tiles left
    over shared out over every SM (:class:`StreamK`, which keeps the partial sums' workspace);
    the tuner also times that form where the last wave of tiles is ragged. ``strided=True``:
    A, B and C may be row-strided views (BLAS's lda, ldb, ldc: each row pitch any multiple of
    16 bytes at least the row's width, e.g. ``qkv[:, :4096]``); without it they are
    C-contiguous. The kernel is the same but for three more sizes bound at launch.
    ``global_splits=G``: each tile's K blocks cut into G slices over single CTAs (no
    cluster, so every SM), their float32 partial sums added in slice order by a second
    kernel (:class:`GlobalSplit`, which keeps the workspace; docs/gemm_hopper.md)."""
    if dtype not in ("bfloat16", "float16"):
        raise config_error(f"make_gemm takes bfloat16 or float16, not {dtype!r}")
    if any(v is not None and v % 8 for v in (N_, K_)):
        if None in (M_, N_, K_):
            raise config_error(f"N = {N_}, K = {K_}: a size that is not a multiple of 8 (TMA "
                               "needs 16-byte rows) is served by copying into padded arrays, "
                               "which needs all of M, N and K given")
        kw = dict(dtype=dtype, num_sms=num_sms, stages=stages, producer=producer, bn=bn,
                  bm=bm, splits=splits, multicast=multicast, swap=swap,
                  persistent=persistent, transB=transB, loose_b=True, streamk=streamk,
                  strided=strided, global_splits=global_splits)  # (the arrays it copies
        # are contiguous, the others views)
        return Padded(make_gemm(M_, _up8(N_), _up8(K_), **kw), M_, N_, K_, transB)
    if producer not in ("warpgroup", "warp"):
        raise config_error(f"producer={producer!r}: 'warpgroup' or 'warp'")
    widths = sorted({bn_ for _, bn_ in TILES})
    if bn is not None and bn not in widths and not swap:
        raise config_error(f"bn={bn}: the tile's columns are {', '.join(map(str, widths[:-1]))} "
                           f"or {widths[-1]} (swap=True: a multiple of 8 up to 256)")
    if swap and bn is not None and not swap_tile_ok(bm or 128, bn):
        raise config_error(f"swap=True with bm={bm or 128}, bn={bn}: {SWAP_RULE}")
    sms = num_sms or runtime.sm_count(default=H200_SMS)
    if persistent is False or streamk or (global_splits or 1) > 1:  # no cluster
        splits, multicast = splits or 1, multicast or 1
    cfg = plan(M_, N_, K_, sms, bm, bn, splits, stages, multicast, swap, global_splits)
    if persistent is not None:
        cfg["persistent"] = persistent
    forced = (bm, bn, splits, stages, multicast, swap, persistent, streamk,
              global_splits) != (None,) * 9
    if not forced and None not in (M_, N_, K_):
        return tilewise.autotune(functools.partial(_kernel, dtype, sms, producer,
                                                   transB=bool(transB),
                                                   loose_b=bool(loose_b),
                                                   strided=bool(strided)),
                                 configs=tune_configs(M_, N_, K_, sms, cfg),
                                 timer=CudaTimer(heat_s=TUNE_HEAT_S),
                                 wrap=functools.partial(_streamk_wrap, dtype=dtype))
    kernel = _kernel(dtype, sms, producer, **cfg, transB=bool(transB), loose_b=bool(loose_b),
                     streamk=bool(streamk), strided=bool(strided))
    return _streamk_wrap({**cfg, "streamk": bool(streamk)}, kernel, dtype) or kernel


def _streamk_wrap(config: dict, kernel, dtype: str = "bfloat16"):
    """The tuner's launcher of a compiled candidate: stream-K ones and splits through global
    memory with their workspace (the latter with the second kernel, of ``dtype``)."""
    if config.get("streamk"):
        return StreamK(kernel, config)
    if config.get("global_splits", 1) > 1:
        return GlobalSplit(kernel, config, dtype)
    return None


class StreamK:
    """``make_gemm``'s kernel with ``streamk=True``, launched as ``k(A, B, C)``. The kernel
    itself takes two more arrays, which this object keeps per stream (and device): each
    CTA's float32 partial-sum slot ``W`` (grid, 2, registers, 128: each consumer thread's
    accumulator registers, in fragment order), and
    ``F`` (grid, 2) int32, the flag of each stream-K tile's consumer half, zero between
    launches (each finisher puts its flags back to zero). Calls on one stream run in
    order, so they may share them; another stream gets its own. ``tw.simulate`` passes
    fresh ones (:meth:`__tilewise_simulate__`)."""

    def __init__(self, kernel, cfg: dict):
        self.kernel = kernel
        grid = _streamk_grid(kernel)
        self.w_shape, self.f_shape = slot_shape(grid, cfg["bm"], cfg["bn"]), (grid, 2)
        self._bufs = Scratch("a stream-K GEMM's workspace")

    def __tilewise_prim_func__(self):
        return as_prim_func(self.kernel)

    def __repr__(self) -> str:
        return f"<make_gemm stream-K kernel, workspace {self.w_shape} float32>"

    def __call__(self, A, B, C, stream=None):
        W, F = self._buffers(A, stream)
        self.kernel(A, B, C, W, F, stream=stream)

    def _buffers(self, A, stream):
        """W and F for a launch on ``stream``, made on that stream: F's zeros precede the
        kernel in stream order (and in a CUDA graph being captured)."""
        return self._bufs.get(A, stream, (), lambda lib: (
            lib.empty(A, self.w_shape, "float32"), lib.zeros(A, self.f_shape, "int32")))

    def __tilewise_simulate__(self, simulate, A, B, C, **kw):
        import numpy as np

        W = np.full(self.w_shape, np.nan, np.float32)  # poisoned: every read must be written
        F = np.zeros(self.f_shape, np.int32)
        report = simulate(self.kernel, A, B, C, W, F, **kw)
        if F.any():
            raise tilewise.TilewiseError(f"a stream-K launch left flags set: {F.tolist()}")
        return report


class GlobalSplit:
    """``make_gemm``'s kernel with ``global_splits=G``, launched as ``k(A, B, C)``: each
    output tile's K blocks cut into ``G`` slices (:class:`tilewise.sched.SplitK`), each
    slice a unit of work for a single CTA (no cluster: any number of CTAs, every SM), whose
    float32 partial sum goes to its slot of a workspace ``W`` (units, 2, registers, 128:
    each consumer thread's accumulator registers, in fragment order). A second kernel
    (:func:`_split_reduce`) adds each tile's ``G`` partial sums, in slice order (the same
    bits every run), and writes C. The workspace is kept per stream (and device, dtype and
    shape), as :class:`StreamK`'s; ``tw.simulate`` runs both kernels on a fresh one,
    poisoned with NaN."""

    def __init__(self, kernel, cfg: dict, dtype: str = "bfloat16"):
        self.kernel = kernel
        self.bm, self.bn, self.swap = cfg["bm"], cfg["bn"], bool(cfg.get("swap"))
        self.splits = cfg["global_splits"]
        self._key = (dtype, self.bm, self.bn, self.splits, self.swap,
                     cfg.get("group_m", GROUP_M))
        if self._key not in _REDUCE_KERNELS:  # one per shape
            _REDUCE_KERNELS[self._key] = _split_reduce(*self._key)
        self.reduce = _REDUCE_KERNELS[self._key]
        self._bufs = Scratch("a split GEMM's partial sums")

    def __tilewise_prim_func__(self):
        return as_prim_func(self.kernel)

    def __repr__(self) -> str:
        return (f"<make_gemm kernel, K split {self.splits} ways through global memory, "
                f"{self.bm}x{self.bn} tiles>")

    def w_shape(self, C) -> tuple:
        """The workspace of a launch writing ``C``: a slot per (tile, slice) unit."""
        units = _tile_count(*C.shape, self.bm, self.bn, self.swap) * self.splits
        return slot_shape(units, self.bm, self.bn)

    def __call__(self, A, B, C, stream=None):
        shape = self.w_shape(C)
        W = self._bufs.get(A, stream, shape, lambda lib: lib.empty(A, shape, "float32"))
        self.kernel(A, B, C, W, stream=stream)
        self._launched_reduce()(W, C, stream=stream)

    def _launched_reduce(self):
        """The second kernel compiled for this GPU with ``programmatic=True``: its launch
        may start while the GEMM's last CTAs finish (the GEMM's CTAs release it with
        ``griddepcontrol.launch_dependents`` as they start), and it waits for the GEMM with
        ``griddepcontrol.wait`` before reading W (docs/gemm_hopper.md)."""
        k = _REDUCE_COMPILED.get(self._key)
        if k is None:
            k = _REDUCE_COMPILED[self._key] = tilewise.compile(
                self.reduce, runtime.device_target(), programmatic=SPLIT_PROGRAMMATIC)
        return k

    def __tilewise_simulate__(self, simulate, A, B, C, **kw):
        import numpy as np

        W = np.full(self.w_shape(C), np.nan, np.float32)  # poisoned: every read must be written
        simulate(self.kernel, A, B, C, W, **kw)
        return simulate(self.reduce, W, C, **kw)


_REDUCE_KERNELS: dict = {}  # GlobalSplit's second kernels, by (dtype, bm, bn, splits, ...)
_REDUCE_COMPILED: dict = {}  # ... compiled for this GPU, launched programmatically
SPLIT_PROGRAMMATIC = True  # launch the second kernel with programmatic dependent launch


def _split_reduce(dtype, bm, bn, splits, swap, group_m):
    """The second kernel of a split through global memory: C = the sum of each tile's
    ``splits`` partial sums, in slice order. A *unit* is 8 output values: register pair
    ``q`` (values 2q and 2q + 1: one row, adjacent columns) of four consecutive threads of a
    consumer (a quad: one row, columns 2 apart), so two 16-byte loads of a partial sum give
    8 consecutive columns of C (swapped: 8 rows of one column of C), stored as one 16-byte
    vector where C's row pitch (a run-time value) is a multiple of 8 elements, checked at
    run time (else element by element; swapped, always so). ``gp``
    threads share a unit, each adding every ``gp``-th partial sum; their sums meet in
    shared memory and thread 0 of them adds them in order: enough threads and loads in
    flight to read the workspace at L2's pace even when a few tiles are split many ways."""
    wn = consumer_cols(bm, bn)
    pairs = wn // 4  # register pairs of a consumer thread
    per_tile = 2 * pairs * 32  # units: (consumer, pair, quad)
    gp = min(32, 1 << (splits - 1).bit_length())
    U = 256 // gp  # units of a CTA
    rounds = -(-splits // gp)
    ROWS, COLS = (N, M) if swap else (M, N)

    @T.prim_func
    def split_reduce(W_ptr: T.handle, C_ptr: T.handle):
        W = T.match_buffer(W_ptr, (WS, 2, wn // 2, 128), "float32")
        C = T.match_buffer(C_ptr, (M, N), dtype, strides=(LDC, 1))
        T.device_entry()
        m_tiles = T.meta_var(T.ceildiv(ROWS, bm))
        n_tiles = T.meta_var(T.ceildiv(COLS, bn))
        bx = T.cta_id([T.ceildiv(m_tiles * n_tiles * per_tile, U)])
        tid = T.thread_id([256])
        part = T.alloc_shared((gp, U, 8), "float32")
        acc = T.alloc_local((8,), "float32")
        x = T.alloc_local((8,), "float32")
        out = T.alloc_local((8,), dtype)
        T.ptx.griddepcontrol.wait()  # the GEMM has written W (launched programmatically)
        g = tid // U  # which partial sums this thread adds: g, g + gp, ...
        u = bx * U + tid % U
        t = u // per_tile
        cw = u // (pairs * 32) % 2
        q = u // 32 % pairs
        i4 = u % 32
        for e in T.static_range(8):
            acc[e] = 0.0
        if t < m_tiles * n_tiles:
            for j in T.static_range(rounds):
                if rounds * gp == splits or g + j * gp < splits:
                    r = t * splits + g + j * gp
                    Tx.thread.copy(x[0:4], W[r, cw, 2 * q, 4 * i4:4 * i4 + 4])
                    Tx.thread.copy(x[4:8], W[r, cw, 2 * q + 1, 4 * i4:4 * i4 + 4])
                    for e in T.static_range(4):  # thread e of the quad: columns 2e, 2e + 1
                        acc[2 * e] = acc[2 * e] + x[e]
                        acc[2 * e + 1] = acc[2 * e + 1] + x[4 + e]
        if gp > 1:
            Tx.thread.copy(part[g, tid % U, 0:8], acc[0:8])
            T.cuda.cta_sync()
        if g == 0 and t < m_tiles * n_tiles:
            for h in T.static_range(1, gp):  # the other threads' sums, in order
                Tx.thread.copy(x[0:8], part[h, tid % U, 0:8])
                for e in T.static_range(8):
                    acc[e] = acc[e] + x[e]
            for e in T.static_range(8):
                out[e] = T.cast(acc[e], dtype)
            mt, nt = grouped_coords(t, m_tiles, n_tiles, group_m)
            # the wgmma fragment's row of thread 4 i4 and column of value 2q (atoms.py)
            row = mt * bm + (cw * 64 if bm == 128 else 0) + i4 // 8 * 16 + i4 % 8 + q % 2 * 8
            col = nt * bn + (0 if bm == 128 else cw * wn) + q // 2 * 8  # a multiple of 8
            if swap:  # the tile's rows are N, its columns M: C[col + e, row]
                if row < N:
                    for e in T.static_range(8):
                        if col + e < M:
                            C[col + e, row] = out[e]
            elif row < M and col < N:  # N is a multiple of 8: all 8 columns or none
                Tx.thread.copy(C[row, col:col + 8], out[0:8])

    return split_reduce


def _streamk_grid(kernel) -> int:
    """The CTAs of a stream-K kernel (compiled, or a PrimFunc): its persistent grid, which
    is W's first extent."""
    config = getattr(kernel, "launch_config", None) or as_prim_func(kernel).launch_config
    return int(config.grid[0])


def _up8(v: int) -> int:
    return -(-v // 8) * 8


class Padded:
    """``make_gemm``'s kernel where N or K is not a multiple of 8. TMA reads and writes only
    rows of a multiple of 16 bytes, so ``k(A, B, C)`` runs the kernel of the sizes rounded up
    to a multiple of 8 (``inner``, tuned as usual) on zero-padded copies of the arrays whose
    rows are too short, and copies C's first N columns back:

    * A (M, K) is copied when K is odd, C (M, N) when N is odd;
    * B is copied when *its* rows are: N for B (K, N), K for B (N, K) with ``transB``. Its
      other extent is its own size in the padded kernel (``loose_b``): TMA reads the rows
      past it as zeros. So an odd K alone copies only A (B (K, N) as it is), and with
      ``transB`` an odd N alone copies only C (a vocabulary of 50257 rows of weights is
      read in place).

    The zeros of the padding add nothing to any dot product. The copies cost memory traffic
    the aligned kernel does not pay, so ``make_gemm`` warns
    (:class:`tilewise.TilewisePerformanceWarning`) at the caller's line. Torch tensors
    (the copies run on the launch's stream, into padded arrays the kernel object keeps
    per stream: their zeros are written once) and numpy arrays (``tw.simulate``, which
    runs the same steps on the CPU) alike; ``tw.compile`` of it is the padded kernel."""

    def __init__(self, inner, M_: int, N_: int, K_: int, transB: bool = False):
        self.inner, self.M, self.N, self.K, self.transB = inner, M_, N_, K_, transB
        self.N8, self.K8 = _up8(N_), _up8(K_)
        self.pad_a, self.pad_c = self.K8 != K_, self.N8 != N_
        self.pad_b = self.K8 != K_ if transB else self.N8 != N_  # B's rows too short
        self._bufs = Scratch("a padded GEMM's arrays")
        import warnings

        from tilewise import TilewisePerformanceWarning

        names = [n for n, p in zip("ABC", (self.pad_a, self.pad_b, self.pad_c)) if p]
        warnings.warn(f"make_gemm({M_}, {N_}, {K_}"
                      + (", transB=True): " if transB else "): ")
                      + " and ".join(f"{n} = {v} is not a multiple of 8" for n, v in
                                     (("N", N_), ("K", K_)) if v % 8)
                      + "; TMA needs 16-byte rows, so each call copies "
                      + (", ".join(names[:-1]) + " and " if len(names) > 1 else "")
                      + f"{names[-1]} into {'arrays' if len(names) > 1 else 'an array'} "
                      f"padded to N = {self.N8}, K = {self.K8}"
                      " (sizes that are multiples of 8 avoid the copies)",
                      TilewisePerformanceWarning, stacklevel=3)

    def __tilewise_prim_func__(self):
        return as_prim_func(self.inner)

    def __getattr__(self, name):  # select(), report() ... of the padded kernel
        if name.startswith("_") or name in ("inner", "M", "N", "K", "N8", "K8", "transB",
                                            "pad_a", "pad_b", "pad_c"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"<make_gemm {self.M}x{self.N}x{self.K} padded to N={self.N8}, K={self.K8}>"

    def _b_padded_shape(self) -> tuple:
        """B's copy: its rows padded, its row count as it is (the kernel's own extent)."""
        return (self.N, self.K8) if self.transB else (self.K, self.N8)

    def pad(self, A, B, C):
        """``(A, B, C)`` of the padded kernel: fresh copies where the rows are too short."""
        A8 = _padded(A, (self.M, self.K8)) if self.pad_a else A
        B8 = _padded(B, self._b_padded_shape()) if self.pad_b else B
        C8 = _padded(C, (self.M, self.N8), fill=False) if self.pad_c else C
        return A8, B8, C8

    def _unpad(self, C, C8) -> None:
        if C8 is not C:
            C[...] = C8[:, :self.N]

    def __call__(self, A, B, C, stream=None):
        self._check(A, B, C)
        if not hasattr(A, "new_empty"):  # not torch: fresh padded arrays each call
            A8, B8, C8 = self.pad(A, B, C)
            self.inner(A8, B8, C8, stream=stream)
            self._unpad(C, C8)
            return
        with on_stream(A, stream):
            A8, B8, C8, a_in, b_in, c_out = self._buffers(A, B, C, stream)
            for view, x in ((a_in, A), (b_in, B)):
                if view is not None:
                    view.copy_(x)
            self.inner(A if A8 is None else A8, B if B8 is None else B8,
                       C if C8 is None else C8, stream=stream)
            if c_out is not None:
                C.copy_(c_out)

    def _buffers(self, A, B, C, stream):
        """The padded arrays of calls on this stream (device, dtype), allocated once with
        their padding zeroed, and the views of them a call copies into and out of: a call
        copies only the data (one kernel an array) and the kernel sees the same addresses
        every time. Calls on one stream run in order, so they may share them; another
        stream gets its own. (None where that array is used as it is.)"""

        def make(lib):
            A8 = A.new_zeros((self.M, self.K8)) if self.pad_a else None
            B8 = B.new_zeros(self._b_padded_shape()) if self.pad_b else None
            C8 = C.new_empty((self.M, self.N8)) if self.pad_c else None
            return (A8, B8, C8, None if A8 is None else A8[:, :self.K],
                    None if B8 is None else B8[:B.shape[0], :B.shape[1]],
                    None if C8 is None else C8[:, :self.N])

        return self._bufs.get(A, stream, A.dtype, make)

    def __tilewise_simulate__(self, simulate, A, B, C, **kw):
        self._check(A, B, C)
        A8, B8, C8 = self.pad(A, B, C)
        report = simulate(self.inner, A8, B8, C8, **kw)
        self._unpad(C, C8)
        return report

    def _check(self, A, B, C) -> None:
        b = (self.N, self.K) if self.transB else (self.K, self.N)
        want = ((self.M, self.K), b, (self.M, self.N))
        got = tuple(tuple(x.shape) for x in (A, B, C))
        if got != want:
            raise tilewise.LaunchError(
                f"make_gemm({self.M}, {self.N}, {self.K})'s kernel takes A {want[0]}, "
                f"B {want[1]}, C {want[2]}; got {got[0]}, {got[1]}, {got[2]}",
                hint="make the kernel for these sizes: make_gemm(M, N, K)")


def _padded(x, shape, fill=True):
    """A new array of ``shape`` like ``x`` (torch or numpy), ``x`` in its top-left corner
    and zeros elsewhere (``fill=False``: an output, left uninitialised)."""
    grow = (shape[0] - x.shape[0], shape[1] - x.shape[1])
    if hasattr(x, "new_empty"):  # torch: one kernel writes the copy and its zeros
        import torch

        return (torch.nn.functional.pad(x, (0, grow[1], 0, grow[0])) if fill else
                x.new_empty(shape))
    import numpy as np

    return np.pad(x, ((0, grow[0]), (0, grow[1]))) if fill else np.empty(shape, x.dtype)


def _kernel(dtype, sms, producer, bm, bn, splits, stages, multicast=1, swap=False,
            persistent=True, group_m=GROUP_M, transB=False, loose_b=False, streamk=False,
            l2_promotion=None, strided=False, global_splits=1):
    threads = 256 + (128 if producer == "warpgroup" else 32)
    wn = consumer_cols(bm, bn)
    stage_bytes = (bm * BK + BK * bn) * 2
    part_bytes = 64 * wn * 4  # one warpgroup's float32 partial sum (split K)
    a_rows = bn if swap else bm  # swap: the tile's rows are N, its columns M
    b_cols = bm if swap else bn
    a_layout = swizzled_tile(a_rows, BK, 16, 128, stages=stages)
    b_tile = (b_cols, BK) if transB else (BK, b_cols)  # transB: K-major, as B is stored
    b_layout = swizzled_tile(*b_tile, 16, 128, stages=stages)
    c_shape = (2, wn, 64) if swap else (2, 64, wn)  # swap: C's (M, N) orientation
    c_layout = TileLayout(S_[c_shape]) if swap else swizzled_tile(64, wn, 16, 128, stages=2)
    c_view = TileLayout(S_[(2, 64, wn):(64 * wn, 1, 64)])  # swap: Cs read as Cᵀ
    ROWS, COLS = (N, M) if swap else (M, N)  # what the tile grid's rows and columns cut
    if swap and not swap_tile_ok(bm, bn):
        raise config_error(f"swap=True with bm={bm}, bn={bn}: {SWAP_RULE}")
    S = splits
    P = multicast  # CTAs of a cluster sharing one B tile (each loads 1/P, multicast to all)
    if P not in (1, 2) or (P == 2 and S > 1):
        raise config_error(f"multicast={P}: 1, or 2 without a split")
    if not persistent and (S > 1 or P > 1):
        raise config_error(f"persistent=False with splits={S}, multicast={P}: one CTA per "
                           "tile is the form without a cluster (a split or a multicast pair "
                           "already launches one cluster per tile or walks tiles in pairs)")
    if streamk and (S > 1 or P > 1 or not persistent):
        raise config_error(f"streamk=True with splits={S}, multicast={P}, persistent="
                           f"{persistent}: stream-K is a persistent grid of single CTAs (it "
                           "splits the K blocks of the last wave's tiles itself)")
    GS = global_splits  # single CTAs sharing one tile's K blocks (a second kernel adds them)
    if GS > 1 and (S > 1 or P > 1 or streamk):
        raise config_error(f"global_splits={GS} with splits={S}, multicast={P}, streamk="
                           f"{streamk}: a split through global memory is a grid of single "
                           "CTAs, each on one K slice of one tile")
    grid = sms // P * P
    promo = {} if l2_promotion is None else {"l2_promotion": l2_promotion}  # TMA's default: 128

    @T.prim_func
    def gemm(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle, W_ptr: T.handle,
             F_ptr: T.handle):
        # strided=True: row pitches bound at launch (TMA's maps take them)
        A = T.match_buffer(A_ptr, (M, K), dtype, strides=(LDA, 1) if strided else None)
        # loose_b (the padded kernel's): B's row count is its own size, not N or K; TMA
        # reads its rows past it (up to the padded N or K) as zeros
        B = T.match_buffer(B_ptr, ((NB if loose_b else N), K) if transB else
                           ((KB if loose_b else K), N), dtype,
                           strides=(LDB, 1) if strided else None)
        C = T.match_buffer(C_ptr, (M, N), dtype, strides=(LDC, 1) if strided else None)
        if streamk:  # each CTA's partial-sum slot, and a flag per stream-K tile
            W = T.match_buffer(W_ptr, (grid, 2, wn // 2, 128), "float32")  # fragment order
            F = T.match_buffer(F_ptr, (grid, 2), "int32")
        if GS > 1:  # each (tile, K slice) unit's partial sum, in fragment order
            W = T.match_buffer(W_ptr, (WS, 2, wn // 2, 128), "float32")
        T.device_entry()
        m_tiles = T.meta_var(T.ceildiv(ROWS, bm))  # expressions of the sizes (the grid's too)
        n_tiles = T.meta_var(T.ceildiv(COLS, bn))
        crank = 0  # the CTA's rank in a multicast pair
        if streamk:  # whole waves of tiles, then the rest by K blocks (sched.HybridStreamK)
            bx = T.cta_id([grid])
            sched = HybridStreamK(m_tiles, n_tiles, T.ceildiv(K, BK), first=bx, ctas=grid,
                                  group_m=group_m, min_blocks=STREAMK_MIN_BLOCKS)
        elif GS > 1:  # (tile, K slice) units: one per CTA, or walked by one CTA per SM
            units = T.meta_var(m_tiles * n_tiles * GS)
            bx = T.cta_id([grid if persistent else units])
            sched = SplitK(m_tiles, n_tiles, T.ceildiv(K, BK), GS, first=bx,
                           step=grid if persistent else units, group_m=group_m)
            # the second kernel, launched programmatically, may be scheduled once every
            # CTA has started (it waits for this grid's completion before reading W)
            T.ptx.griddepcontrol.launch_dependents()
        elif S == 1 and P == 1 and persistent:  # one CTA per SM walks the tiles
            bx = T.cta_id([grid])
            sched = GroupedTiles(m_tiles, n_tiles, first=bx, step=grid, group_m=group_m)
        elif S == 1 and P == 1:  # one CTA per tile: the hardware hands out the tiles
            bx = T.cta_id([m_tiles * n_tiles])
            sched = GroupedTiles(m_tiles, n_tiles, first=bx, step=m_tiles * n_tiles,
                                 group_m=group_m)
        elif S == 1 and swap:  # persistent pairs of two column tiles (two slices of M):
            # they share the B tile (the tile's rows, N)
            bx = T.cta_id([grid])
            crank = T.cta_id_in_cluster([P])
            sched = GroupedTiles(m_tiles, T.ceildiv(COLS, bn * P), first=bx // P,
                                 step=grid // P, group_m=group_m)
        elif S == 1:  # persistent pairs: the two CTAs of a cluster take two tiles of a column
            bx = T.cta_id([grid])
            crank = T.cta_id_in_cluster([P])
            sched = GroupedTiles(T.ceildiv(M, bm * P), n_tiles, first=bx // P, step=grid // P,
                                 group_m=max(1, group_m // P))
        else:  # one cluster of S CTAs per tile, each on 1/S of its K blocks
            bx = T.cta_id([m_tiles * n_tiles * S])
            rank = T.cta_id_in_cluster([S])
            sched = GroupedTiles(m_tiles, n_tiles, first=bx // S, step=m_tiles * n_tiles,
                                 group_m=group_m)
        tid = T.thread_id([threads])
        wg = tid // 128  # 0, 1: the consumers; 2: the producer
        # the operand ring and the epilogue tiles: dynamic shared memory
        As = T.alloc_buffer((stages, a_rows, BK), dtype, scope="shared.dyn", layout=a_layout,
                            align=1024)
        Bs = T.alloc_buffer((stages, *b_tile), dtype, scope="shared.dyn", layout=b_layout,
                            align=1024)
        Cs = T.alloc_buffer(c_shape, dtype, scope="shared.dyn", layout=c_layout, align=1024)
        full = T.alloc_shared((stages,), "uint64")
        empty = T.alloc_shared((stages,), "uint64")
        if S > 1:
            R = T.alloc_buffer((2, 64, wn), "float32", scope="shared.dyn", align=16)
            rbar = T.alloc_shared((2,), "uint64")
            gobar = T.alloc_shared((2,), "uint64")  # tree: the receiver has read R
        if tid == 0:
            for s in range(stages):
                T.ptx.mbarrier.init(T.address_of(full[s]), 1)
                T.ptx.mbarrier.init(T.address_of(empty[s]), 2 * P)  # every CTA's consumers
            if P > 1:
                T.ptx.fence.mbarrier_init()
            if S > 1:  # each consumer's partial sums arrive from higher ranks
                for c in range(2):
                    T.ptx.mbarrier.init(T.address_of(rbar[c]), 1)
                    T.ptx.mbarrier.init(T.address_of(gobar[c]), 1)
                    if rank % 2 == 0 and rank + 1 < S:  # the first partial sum's bytes
                        T.ptx.mbarrier.arrive.expect_tx(T.address_of(rbar[c]), part_bytes)
                T.ptx.fence.mbarrier_init()
        if S > 1 or P > 1:
            T.cuda.cluster_sync()
        else:
            T.cuda.cta_sync()
        if S > 1:
            k_tiles = T.ceildiv(K, BK)
            kb = rank * k_tiles // S  # this CTA's K blocks: [kb, ke)
            ke = (rank + 1) * k_tiles // S
        else:
            kb = 0
            ke = T.ceildiv(K, BK)

        @T.inline
        def produce(m0, n0, k_begin, k_end, it):
            """Load K blocks k_begin .. k_end - 1 of the tile at (m0, n0) into the ring;
            ``it`` counts the stages filled so far (returned advanced)."""
            for kt in range(k_begin, k_end):
                s = it % stages
                k0 = kt * BK
                T.ptx.mbarrier.try_wait(T.address_of(empty[s]), (it // stages + 1) % 2)
                T.ptx.mbarrier.arrive.expect_tx(T.address_of(full[s]), stage_bytes)
                if swap:  # m0: the tile's first column of B, n0: row of A
                    Tx.thread.copy_async(As[s, :, :], A[n0:n0 + bn, k0:k0 + BK],
                                         dispatch="tma", mbar=T.address_of(full[s]), **promo)
                else:
                    Tx.thread.copy_async(As[s, :, :], A[m0:m0 + bm, k0:k0 + BK],
                                         dispatch="tma", mbar=T.address_of(full[s]), **promo)
                c0 = m0 if swap else n0  # B's first column (its row with transB)
                if P == 1 and transB:
                    Tx.thread.copy_async(Bs[s, :, :], B[c0:c0 + b_cols, k0:k0 + BK],
                                         dispatch="tma", mbar=T.address_of(full[s]), **promo)
                elif P == 1:
                    Tx.thread.copy_async(Bs[s, :, :], B[k0:k0 + BK, c0:c0 + b_cols],
                                         dispatch="tma", mbar=T.address_of(full[s]), **promo)
                else:  # this CTA's share of the B tile's rows (N with transB, else K),
                    # into every CTA of the pair
                    h = (b_cols if transB else BK) // P
                    Tx.thread.copy_async(
                        Bs[s, crank * h:crank * h + h, :],
                        B[c0 + crank * h:c0 + crank * h + h, k0:k0 + BK] if transB else
                        B[k0 + crank * h:k0 + crank * h + h, c0:c0 + b_cols],
                        dispatch="tma", mbar=T.address_of(full[s]),
                        cta_mask=(1 << P) - 1, **promo)
                it = it + 1
            return it

        @T.inline
        def consume(acc, r0, c0, k_begin, k_end, it, leader):
            """Multiply K blocks k_begin .. k_end - 1 from the ring into ``acc`` (zeroed
            first), release each stage, wait for the last wgmma; ``it`` returned advanced.
            bm=128: rows r0.. of A against all of B; bm=64: all of A against columns c0..
            of B."""
            Tx.wg.zero(acc[:, :])  # the last tile's values are dead: registers free up
            for kt in range(k_begin, k_end):
                s = it % stages
                T.ptx.mbarrier.try_wait(T.address_of(full[s]), it // stages % 2)
                T.ptx.wgmma.fence()
                if swap and transB:  # B's rows r0.. (K-major) as wgmma's A
                    Tx.wg.gemm_async(acc[:, :], Bs[s, r0:r0 + 64, :], As[s, c0:c0 + wn, :],
                                     accum=kt > k_begin, transB=True)
                elif swap:  # Cᵀ = Bᵀ Aᵀ: B's columns r0.. as wgmma's A, A's rows c0.. as B
                    Tx.wg.gemm_async(acc[:, :], Bs[s, :, r0:r0 + 64], As[s, c0:c0 + wn, :],
                                     accum=kt > k_begin, transA=True, transB=True)
                elif transB:  # B's (bn, BK) tile is K-major: wgmma's transposed B
                    Tx.wg.gemm_async(acc[:, :], As[s, r0:r0 + 64, :],
                                     Bs[s, c0:c0 + wn, :], accum=kt > k_begin, transB=True)
                else:
                    Tx.wg.gemm_async(acc[:, :], As[s, r0:r0 + 64, :],
                                     Bs[s, :, c0:c0 + wn], accum=kt > k_begin)
                T.ptx.wgmma.commit_group()
                T.ptx.wgmma.wait_group(1)  # the previous stage's wgmma has finished
                # the threads that release (release: which does what): the leader, and
                # with a pair warp 2's first thread too
                if kt > k_begin and (tid % 64 == 0 if P == 2 else leader):
                    release(empty, (it + stages - 1) % stages, P, crank, leader, tid)
                it = it + 1
            T.ptx.wgmma.wait_group(0)
            if k_end > k_begin and (tid % 64 == 0 if P == 2 else leader):
                release(empty, (it + stages - 1) % stages, P, crank, leader, tid)
            return it

        @T.inline
        def store(acc, out, cw, m0, n0, leader):
            """Epilogue: registers -> shared -> TMA store of the tile at (m0, n0)."""
            Tx.wg.cast(out[:, :], acc[:, :])
            if leader:
                T.ptx.cp_async.bulk.wait_group_read(0)  # the last store left Cs[cw]
            T.ptx.bar.sync(1 + cw, 128)
            if swap:  # the (64, wn) tile of Cᵀ written transposed: C's (wn, 64)
                Ct = Cs.view(2, 64, wn, layout=c_view)
                Tx.wg.copy(Ct[cw, :, :], out[:, :])
            else:
                Tx.wg.copy(Cs[cw, :, :], out[:, :])
            T.ptx.fence.proxy_async()
            T.ptx.bar.sync(1 + cw, 128)
            if leader:
                if swap:
                    Tx.thread.copy_async(C[n0:n0 + wn, m0:m0 + 64], Cs[cw, :, :],
                                         dispatch="tma")
                else:
                    Tx.thread.copy_async(C[m0:m0 + 64, n0:n0 + wn], Cs[cw, :, :],
                                         dispatch="tma")
                T.ptx.cp_async.bulk.commit_group()

        if wg == 2:  # ---------------------------------------------------- producer
            if producer == "warpgroup":
                T.ptx.setmaxnreg(False, 40)
            if tid == 256:
                it = 0
                if GS > 1:
                    for j in sched.units():
                        mt, nt, _, ukb, uke = sched.coords(j)
                        it = produce(mt * bm, nt * bn, ukb, uke, it)
                else:
                    for j in sched.tiles():
                        mt, nt = sched.coords(j)
                        m0, n0 = tile_origin(mt, nt, bm, bn, P, crank, swap)
                        it = produce(m0, n0, kb, ke, it)
                if streamk:
                    for g in sched.segments():
                        _, mt, nt, skb, ske = sched.segment(g)
                        it = produce(mt * bm, nt * bn, skb, ske, it)
        else:  # ------------------------------------------------------------ consumers
            if producer == "warpgroup":
                T.ptx.setmaxnreg(True, 232)
            cw = wg  # which 64 rows (bm=128) or wn columns (bm=64) of the tile it computes
            r0 = cw * 64 if bm == 128 else 0
            c0 = 0 if bm == 128 else cw * wn
            leader = tid % 128 == 0
            if streamk or GS > 1:  # registers by index too: partial sums move in fragment
                # order
                accr = T.alloc_local((wn // 2,), "float32")
                acc = accr.view(64, wn, layout=wgmma_accumulator(wn))
            else:
                acc = T.alloc_local((64, wn), "float32", layout=wgmma_accumulator(wn))
            out = T.alloc_local((64, wn), dtype, layout=wgmma_accumulator(wn))
            it = 0
            if GS > 1:  # each unit's partial sum to its slot (the reduce kernel adds them)
                for j in sched.units():
                    _, _, _, ukb, uke = sched.coords(j)
                    it = consume(acc, r0, c0, ukb, uke, it, leader)
                    for v in T.static_range(wn // 2):  # a warp's 128 contiguous bytes a store
                        W[sched.index(j), cw, v, tid % 128] = accr[v]
            else:
                for j in sched.tiles():
                    mt, nt = sched.coords(j)
                    m0, n0 = tile_origin(mt, nt, bm, bn, P, crank, swap, r0, c0)
                    it = consume(acc, r0, c0, kb, ke, it, leader)
                    if S > 1:  # add the partial sums in a tree: rank 0 ends with the total
                        tree_reduce(acc, R, rbar, gobar, cw, rank, leader, S, part_bytes)
                    if S == 1 or rank == 0:
                        store(acc, out, cw, m0, n0, leader)
            if streamk:
                for g in sched.segments():
                    t, mt, nt, skb, ske = sched.segment(g)
                    it = consume(acc, r0, c0, skb, ske, it, leader)
                    if skb > 0:  # a helper: the partial sum to this CTA's slot, then flag it
                        # register v of thread i at W[., ., v, i]: each store a warp's 128
                        # contiguous bytes (a copy by coordinates, 8-byte vectors, made ptxas
                        # serialise every wgmma of the kernel: C7514)
                        for v in T.static_range(wn // 2):
                            W[bx, cw, v, tid % 128] = accr[v]
                        T.ptx.red.add(T.address_of(F[t, cw]), T.uint32(1))
                    else:  # the finisher: add the helpers' partial sums, in range order
                        lo, hi = sched.helpers(t)
                        if hi > lo:
                            T.ptx.wait_flag(T.address_of(F[t, cw]), T.uint32(128 * (hi - lo)))
                            for r in range(lo, hi):
                                for v in T.static_range(wn // 2):
                                    accr[v] = accr[v] + W[grid - 1 - r, cw, v, tid % 128]
                        store(acc, out, cw, mt * bm + r0, nt * bn + c0, leader)
                        if hi > lo and leader:  # every thread passed the wait (store's
                            F[t, cw] = 0  # barrier): ready for the next launch
            if leader:
                T.ptx.cp_async.bulk.wait_group(0)
        if S > 1 or P > 1:  # no CTA leaves while a peer's copy may touch its shared memory
            T.cuda.cluster_sync()

    if streamk:
        return gemm
    # without stream-K the workspace parameters are unused: the kernel takes (A, B, C), and
    # (A, B, C, W) with a split through global memory
    unused = ("F_ptr",) if GS > 1 else ("W_ptr", "F_ptr")
    return dataclasses.replace(gemm, params=tuple(p for p in gemm.params
                                                  if p.name not in unused))


@T.inline
def tile_origin(mt, nt, bm, bn, P, crank, swap, r0=0, c0=0):
    """The first row and column of tile (mt, nt) in the tile grid (of Cᵀ with ``swap``),
    plus (r0, c0): a pair's two CTAs take two tiles of one column (two row tiles: they
    share B's columns) or, swapped, two column tiles of one row (two slices of M: they
    share B's rows, N)."""
    if P == 1:
        return mt * bm + r0, nt * bn + c0
    if swap:
        return mt * bm + r0, (nt * P + crank) * bn + c0
    return (mt * P + crank) * bm + r0, nt * bn + c0


@T.inline
def release(empty, s, P, crank, leader, tid):
    """A consumer warpgroup is done with stage ``s``: its leader tells this CTA's producer,
    and with a multicast B its warp 2 tells the other CTA's (its copies write into this
    CTA's stage as well; two warps, as CUTLASS spreads them, so that no warp issues both)."""
    if P == 1:  # (the caller asked leader)
        T.ptx.mbarrier.arrive(T.address_of(empty[s]))
    else:
        if leader:
            T.ptx.mbarrier.arrive(T.address_of(empty[s]))
        if tid % 128 == 64:
            T.ptx.mbarrier.arrive.expect_tx(T.address_of(empty[s]), 0, remote=1 - crank,
                                            scope="cta")  # reads done: no cluster fence


@T.inline
def tree_reduce(acc, R, rbar, gobar, cw, rank, leader, S, part_bytes):
    """Split K, as a binary tree: at level l (step 2^l) rank r with r % 2^(l+1) == 0 adds
    the partial sum of rank r + 2^l (arrived in its ``R[cw]`` by the copy engine), and rank
    r with r % 2^(l+1) == 2^l hands its sum to rank r - 2^l and is done. Rank 0 ends with
    the whole sum after ceil(log2 S) hops (the chain takes S - 1), added in the same order
    on every run. One ``R`` a consumer: a rank receives again only after it has read its
    last partial sum and said so on the next sender's ``gobar``."""
    for lv in T.static_range(max(1, (S - 1).bit_length())):
        step = 1 << lv
        if rank % (2 * step) == 0:
            if rank + step < S:  # a receiver at level lv received at every level below
                T.ptx.mbarrier.try_wait(T.address_of(rbar[cw]), lv % 2)
                Tx.wg.add(acc[:, :], acc[:, :], R[cw, :, :])
                if rank % (4 * step) == 0 and rank + 2 * step < S:  # the next one's sender
                    T.ptx.bar.sync(1 + cw, 128)  # every thread has read R[cw]
                    if leader:
                        T.ptx.mbarrier.arrive.expect_tx(T.address_of(rbar[cw]), part_bytes)
                        T.ptx.mbarrier.arrive.expect_tx(T.address_of(gobar[cw]), 0,
                                                        remote=rank + 2 * step, scope="cta")
        elif rank % (2 * step) == step:  # the sender at this level (once per rank)
            if lv > 0:  # the receiver has read the partial sum before this one
                T.ptx.mbarrier.try_wait(T.address_of(gobar[cw]), 0)
            T.ptx.bar.sync(1 + cw, 128)  # every thread has read R[cw]: overwrite it
            Tx.wg.copy(R[cw, :, :], acc[:, :])
            T.ptx.fence.proxy_async()  # generic stores, read next by the copy engine
            T.ptx.bar.sync(1 + cw, 128)
            if leader:
                Tx.thread.copy_async(R[cw, :, :], R[cw, :, :], remote_cta_id=rank - step,
                                     mbar=T.address_of(rbar[cw]))


SHAPE = (256, 256, 128)  # M, N, K of `tilewise run`: two output tiles, two K-steps
TARGET = "sm_90a"
gemm = make_gemm(*SHAPE, num_sms=H200_SMS, bm=128, bn=256, splits=1)  # the large form
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
