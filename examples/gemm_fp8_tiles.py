"""The CTA tiles of the fp8 GEMMs (``gemm_fp8.py``, dense, and ``gemm_grouped.py``) and the
model that chooses one for a problem: :class:`Tile` (the tile, its pipeline and how the two
consumer warpgroups split it into wgmma waves, its shared layouts) and :func:`choose_tile`
(the candidate with the least modelled time, after DeepGEMM's heuristics). No kernel here:
``gemm_fp8.py`` loads this file by path (the examples are files, not a package)."""

from __future__ import annotations

from typing import NamedTuple

from tilewise import config_error
from tilewise.layout import swizzled_tile

BK = 128  # K per pipeline stage: one scale block (128 fp8 = one 128-byte swizzle row)
H200_SMS = 132
SMEM = 227 * 1024  # the opt-in shared memory per CTA on sm_90

class Tile(NamedTuple):
    """A CTA tile and its pipeline: ``bm`` x ``bn``, ``stages`` ring buffers, ``sms``
    persistent CTAs. The two consumer warpgroups split it into *waves* of 64 x ``wn``, one
    ``m64nWNk32`` wgmma sequence each, sharing one partial fragment:

    * bm 64: both warpgroups on the 64 rows, ``bn / 2`` columns each (a small M still has
      two warpgroups and twice the tiles);
    * bm 128: 64 rows each, all ``bn`` columns (bn 256: two waves of 128 columns; bn 192:
      one wave, whose columns straddle a 128-column block of B's scales: the dense kernel
      promotes it per 64-column chunk, the grouped ones do not take it, :data:`STRADDLING`);
    * bm 256: 128 rows each, two waves of 64 rows.
    """

    bm: int
    bn: int
    stages: int
    sms: int
    cluster: int = 1  # 2: CTA pairs share a tile of one operand, half loaded by each
    share: str = "b"  # which operand a pair shares: "b" (m-tiles in pairs), "a" (n-tiles)

    @property
    def wn(self) -> int:
        return self.bn // 2 if self.bm == 64 else self.bn if self.bn <= 192 else 128

    def origin(self, cw: int) -> tuple[int, int]:
        """Warpgroup ``cw``'s first row and column in the tile."""
        return (0, cw * self.wn) if self.bm == 64 else (cw * self.bm // 2, 0)

    @property
    def waves(self) -> tuple[tuple[int, int], ...]:
        """Each wave's (row, column) offset from the warpgroup's origin."""
        if self.bm == 256:
            return ((0, 0), (64, 0))
        return ((0, 0), (0, 128)) if self.bn == 256 else ((0, 0),)

    @property
    def wrows(self) -> list[int]:
        """The waves' distinct row offsets (one set of row scales each)."""
        return sorted({r for r, _ in self.waves})

    @property
    def wcols(self) -> list[int]:
        """The waves' distinct column offsets (one SB block each)."""
        return sorted({c for _, c in self.waves})

    def scale_slots(self, w: int) -> tuple[int, int]:
        """Wave ``w``'s index in :attr:`wrows` and in :attr:`wcols`."""
        r, c = self.waves[w]
        return self.wrows.index(r), self.wcols.index(c)

    def layouts(self, bk: int, bits: int):
        """The shared layouts: the A and B rings and the epilogue tiles (two warpgroups x
        the waves, 64 x wn each)."""
        return (swizzled_tile(self.bm, bk, bits, 128, stages=self.stages),
                swizzled_tile(self.bn, bk, bits, 128, stages=self.stages),
                swizzled_tile(64, self.wn, 16, min(128, self.wn * 2),
                              stages=2 * len(self.waves)))


TILES = ((64, 32), (64, 64), (64, 128), (128, 32), (128, 64), (128, 128), (128, 256),
         (256, 64), (256, 128))
STRADDLING = ((128, 192),)  # tiles whose waves straddle B's 128-column scale blocks: only
#  kernels that promote a wave per 64-column chunk take them (N = 2112 in 11 of them
#  instead of 16.5 x 128)


def tile_cost(t: Tile) -> float:
    """Cycles of one 128-deep K block of tile ``t`` on one SM, a model of the H100 after
    DeepGEMM's: the most of tensor-core work (4096 fp8 FMA a cycle), shared-memory bytes
    (the TMA writes, the wgmma reads of A and B, 128 B a cycle) and L2 bytes (~46 B a
    cycle and SM: 6 KB a cycle in all; a pair sharing an operand reads half of it each)."""
    smem = (t.bm + t.bn + max(64, t.bm) + t.bn) * BK
    half_a = 2 if t.cluster == 2 and t.share == "a" else 1
    half_b = 2 if t.cluster == 2 and t.share == "b" else 1
    l2 = (t.bm / half_a + t.bn / half_b) * BK
    return max(t.bm * t.bn * BK / 4096, smem / 128, l2 / 46.5)


def _tiles(M_: int, N_: int, t: Tile) -> int:
    """CTA tiles of the problem (a cluster of 2 takes m-tiles in pairs)."""
    m, n = -(-M_ // t.bm), -(-N_ // t.bn)
    if t.cluster == 2:
        m, n = (m + m % 2, n) if t.share == "b" else (m, n + n % 2)
    return m * n


def choose_tile(M_: int | None, N_: int | None, sms: int = H200_SMS, bm: int | None = None,
                bn: int | None = None, stages: int | None = None, elem_bytes: int = 1,
                bk: int = BK, bms: tuple = (64, 128, 256), clamp: bool = True,
                cluster: int | None = None, clusters: tuple = (1, 2),
                share: str | None = None, wide: bool = False,
                straddling: bool = False) -> Tile:
    """The tile for an M x N problem: the candidate with the least modelled time, waves of
    CTAs x :func:`tile_cost` (the model holds for bf16 with ``bk`` 64 too: half the rate,
    twice the bytes), among those with at least 3 stages and at most 128 x 128; a cluster of
    2 (TMA multicast) only when asked for (both were slower on the H200, see ``cost``).
    Without sizes: 128 x 128, no cluster.
    ``bm``, ``bn``, ``stages``, ``cluster``, ``share`` pin a choice; ``bms`` / ``clusters``
    the rows and cluster sizes allowed; ``clamp``: no more CTAs than tiles; ``wide``: tiles
    larger than 128 x 128 may be chosen; ``straddling``: the kernel takes the tiles of
    :data:`STRADDLING` (the dense one does; the grouped ones apply one SB per wave)."""
    tiles = TILES + (STRADDLING if straddling else ())
    def make(c, mc, share, st=stages):
        t = Tile(c[0], c[1], 1, sms, mc, share)
        room = SMEM - 2 * len(t.waves) * 64 * t.wn * 2 - 1024  # epilogue tiles, barriers
        return t._replace(stages=st or min(8, room // ((c[0] + c[1]) * bk * elem_bytes)))

    shares = [(1, "b")] + [(mc, sh) for mc in clusters if mc == 2 for sh in ("b", "a")]
    cands = [make(c, mc, sh) for c in tiles for mc, sh in shares
             if c[0] in bms and bm in (None, c[0]) and bn in (None, c[1])
             and cluster in (None, mc) and share in (None, sh) and (mc == 1 or sms % 2 == 0)]
    if not cands and not straddling and (bm, bn) in STRADDLING:
        raise config_error(f"bm={bm}, bn={bn}: its columns straddle B's 128-column scale "
                           "blocks, and this kernel applies one scale of B per wave; take one "
                           f"of {[c for c in TILES if c[0] in bms]}")
    if not cands:
        raise config_error(f"bm={bm}, bn={bn}, cluster={cluster} is not a tile: one of "
                           f"{[c for c in tiles if c[0] in bms]}, cluster in {clusters}")
    ok = [t for t in cands if t.stages >= 3] or cands

    def cost(t):
        if M_ is None or N_ is None:
            return (0 if (t.bm, t.bn, t.cluster) == (128, 128, 1) or len(cands) == 1 else 1, 0)
        waves = -(-_tiles(M_, N_, t) // sms)
        # Measured on the H200 (benchmarks/RESULTS.md, 2026-12-02, whole-program ptxas):
        # CTA pairs ran at 370-760 TFLOP/s where the same tile alone ran at 800-1110; with
        # the consumers' remote frees at CTA scope (no cluster fence, ninth session) at
        # 0.88-0.99 x the tile alone (block scaling, M = 4096), so a pair is still not
        # chosen unless asked for; 128 x 256 / 256 x 128 tiles won only for
        # block scaling at M = 4096 (1020-1110 against 840-910 for 128 x 128), so larger
        # tiles than 128 x 128 are taken only when ``wide`` says so.
        if t.cluster > 1 and cluster is None:
            return (float("inf"), 0)
        if t.bm * t.bn > 128 * 128 and (bm, bn) == (None, None) and not wide:
            return (float("inf"), 0)
        return (waves * tile_cost(t), -t.bm * t.bn, t.cluster)

    best = min(ok, key=cost)
    if best.stages < 2:
        raise config_error(f"stages={best.stages}: the ring needs at least 2 buffers")
    if clamp and M_ is not None and N_ is not None:  # no idle CTAs
        n = max(1, min(sms, _tiles(M_, N_, best)))
        best = best._replace(sms=n + n % best.cluster)
    return best
