"""tcgen05 geometry: tensor memory, the ``tcgen05.ld/st`` shapes and their register maps.

The one home of these facts (PTX ISA §9.7.16; ``ptx-semantics.md`` §1-§3). The table's
operand checks (:mod:`tilewise.ptx.table`), the layout atoms (:mod:`tilewise.layout.atoms`),
the ``tcgen05_ldst`` variant, the LLVM lowering and the simulator all import them, so a
shape, a register count or a lane formula is written exactly once.

Formulas and helpers take Python ints, numpy arrays (they broadcast) or IR expressions.
The shapes' formulas take the lane in the warp ``t`` and the register index ``r`` and
return the lane offset ``dl(t, r)`` from the address's
lane field and the logical 32-bit column ``c(t, r)`` from its column field.

Pure Python, no imports beyond the standard library: ``tilewise.layout`` imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

#: Tensor memory of one CTA: 128 lanes x 512 columns of 32-bit cells (PTX §9.7.16.1).
LANES, COLS = 128, 512
#: Legal ``nCols`` of ``tcgen05.alloc`` / ``dealloc``: powers of two in [32, 512].
ALLOC_COLS = (32, 64, 128, 256, 512)
CTA_GROUPS = (1, 2)
#: Legal ``.num`` repeat counts; a shape allows those with at most MAX_REGS registers.
NUMS = (1, 2, 4, 8, 16, 32, 64, 128)
MAX_REGS = 128  # PTX Table 49: no shape/num combination moves more registers per thread
WARP_LANES = 32  # warp w of a warpgroup may touch lanes [32 (w % 4), 32 (w % 4) + 32) only


# ---- addresses: bits 31..16 the lane, bits 15..0 the column (§1) ----------------------
LANE_SHIFT, COL_MASK = 16, 0xFFFF


def address(lane, col):
    """The tensor-memory address of (``lane``, ``col``); also an offset to add to one."""
    return (lane << LANE_SHIFT) + col


def lane_of(addr):
    return addr >> LANE_SHIFT


def col_of(addr):
    return addr & COL_MASK


def lane_slice(warp):
    """The first lane warp ``warp`` of the CTA may access: ``32 * (warp % 4)`` (§2)."""
    return warp % 4 * WARP_LANES


@dataclass(frozen=True)
class Shape:
    """One ``tcgen05.ld/st`` shape: lanes one warp covers, registers and (unpacked) 32-bit
    columns per ``.num``, and the register -> (lane, column) formulas."""

    name: str
    lanes: int
    regs: int
    cols: int
    dl: Callable
    c: Callable

    @property
    def max_num(self) -> int:
        return MAX_REGS // self.regs

    @property
    def nums(self) -> tuple[int, ...]:
        return tuple(n for n in NUMS if n <= self.max_num)

    def nregs(self, num: int) -> int:
        """32-bit registers per thread of ``.<shape>.x<num>`` (pack/unpack do not change it)."""
        return self.regs * num

    def lane_bases(self, q: int) -> tuple[int, ...]:
        """Lane bases warp ``q`` of its warpgroup may use: its slice's start, and for the
        16-lane shapes also the slice's upper half (ptx-semantics.md §2)."""
        return (32 * q,) if self.lanes == 32 else (32 * q, 32 * q + 16)


def _shapes(*shapes: Shape) -> dict[str, Shape]:
    return {s.name: s for s in shapes}


#: The shapes of PTX §9.7.16.8.2; formulas from ptx-semantics.md §3 (CUTLASS bit layouts).
SHAPES: dict[str, Shape] = _shapes(
    Shape("32x32b", 32, 1, 1, lambda t, r: t + 0 * r, lambda t, r: r + 0 * t),
    Shape("16x64b", 16, 1, 2, lambda t, r: (t >> 2) + 8 * (t & 1) + 0 * r,
          lambda t, r: 2 * r + ((t >> 1) & 1)),
    Shape("16x128b", 16, 2, 4, lambda t, r: (t >> 2) + 8 * (r & 1),
          lambda t, r: 4 * (r >> 1) + (t & 3)),
    Shape("16x256b", 16, 4, 8, lambda t, r: (t >> 2) + 8 * ((r >> 1) & 1),
          lambda t, r: 8 * (r >> 2) + 2 * (t & 3) + (r & 1)),
    Shape("16x32bx2", 16, 1, 1, lambda t, r: (t & 15) + 0 * r, lambda t, r: r + 0 * t),
)


def shape(name: str) -> Shape:
    return SHAPES[name]


def half_split(name: str, num: int, packed: bool) -> int:
    """``immHalfSplitoff`` of ``.16x32bx2`` (0 for the other shapes): the column offset of
    the upper half-warp. The table has no operand for it; tilewise uses CUTLASS's choice,
    ``num`` columns unpacked and ``2 * num`` packed, so the two halves sit side by side."""
    if name != "16x32bx2":
        return 0
    return 2 * num if packed else num


def shape_num_problem(name: str, num: int) -> str | None:
    """Why ``.<name>.x<num>`` does not exist, or None when it does."""
    s = SHAPES[name]
    if num not in NUMS:
        return f".x{num} is not a power of two in 1..128"
    if num > s.max_num:
        return (f".{name}.x{num} would move {s.nregs(num)} registers per thread; the largest "
                f"is .{name}.x{s.max_num} (PTX ISA Table 49: at most {MAX_REGS} registers)")
    return None


# ---- tensor-memory datapaths ---------------------------------------------------------
#: Row r of an M-row accumulator -> TMEM lane. D (M=128) is the identity. F (M=64): warp
#: w's 16 rows sit in the first half of its 32-lane slice (PTX ISA §9.7.16.10 "data path
#: layout organization", figures for M=64 / cta_group::1).
DATAPATHS: dict[str, tuple[int, Callable[[int], int]]] = {
    "D": (128, lambda r: r),
    "F": (64, lambda r: 32 * (r // 16) + r % 16),
}
