"""tcgen05 geometry: tensor memory, the ``tcgen05.ld/st`` shapes and their register maps.

The one home of these facts (PTX ISA §9.7.16; ``ptx-semantics.md`` §1-§3). The table's
operand checks (:mod:`tilewise.ptx.rows_tcgen05`), the layout atoms (:mod:`tilewise.layout.atoms`),
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


# ---- tcgen05.mma: kinds, shapes, descriptors (PTX ISA §9.7.16.2, §9.7.16.4, §9.7.16.10) ---
#: The kinds tilewise emits: input dtype names -> their instruction-descriptor code, the
#: K of one instruction and the intrinsic's ``kind`` immediate (LLVM 22: 0 f16, 1 tf32,
#: 2 f8f6f4). float32 inputs are read as tf32. Table 39 / Table 42.
@dataclass(frozen=True)
class Kind:
    name: str
    k: int
    llvm: int
    codes: dict  # input dtype name -> atype/btype code (Table 42)


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("f16", 16, 0, {"float16": 0, "bfloat16": 1}),
    Kind("tf32", 8, 1, {"float32": 2}),
    Kind("f8f6f4", 32, 2, {"float8_e4m3": 0, "float8_e5m2": 1}),
)}
#: Accumulator (D) dtype codes of the instruction descriptor (bits 4-5).
D_CODES = {"float16": 0, "float32": 1}


def kind_of(dtype: str) -> Kind | None:
    """The MMA kind whose inputs include ``dtype`` (None: no kind takes it)."""
    return next((k for k in KINDS.values() if dtype in k.codes), None)


def mma_shape_problem(m: int, n: int, cta_group: int) -> str | None:
    """Why ``M x N`` is not a dense tcgen05.mma shape for ``cta_group`` (Table 39), or None.
    ``m`` is the instruction's M (the CTA pair's for cta_group 2)."""
    ms = (64, 128) if cta_group == 1 else (128, 256)
    step = 8 * cta_group
    if m not in ms:
        return f"M = {m} is not {' or '.join(map(str, ms))} (cta_group {cta_group})"
    if not step <= n <= 256 or n % step:
        return f"N = {n} is not a multiple of {step} in {step}..256 (cta_group {cta_group})"
    return None


def instr_desc(kind: str, a: str, b: str, d: str, m: int, n: int, trans_a: bool,
               trans_b: bool) -> int:
    """The 32-bit instruction descriptor of a dense tcgen05.mma (Table 42): D type bits 4-5,
    A / B types bits 7-9 / 10-12, transpose (MN-major) A / B bits 15 / 16, N >> 3 bits
    17-22, M >> 4 bits 24-28; sparsity, saturation, negation and shift 0."""
    codes = KINDS[kind].codes
    return (D_CODES[d] << 4 | codes[a] << 7 | codes[b] << 10 | int(trans_a) << 15
            | int(trans_b) << 16 | (n >> 3) << 17 | (m >> 4) << 24)


@dataclass(frozen=True)
class InstrDesc:
    """The fields of an instruction descriptor, decoded (what the hardware reads)."""

    d: str | None
    a: str | None
    b: str | None
    trans_a: bool
    trans_b: bool
    n: int
    m: int
    reserved: int  # bits that must be 0 for the dense, non-negated forms tilewise models


def decode_instr_desc(kind: str, desc: int) -> InstrDesc:
    desc = int(desc) & 0xFFFFFFFF
    codes = {v: k for k, v in KINDS[kind].codes.items()}
    d_codes = {v: k for k, v in D_CODES.items()}
    reserved = desc & (0xF | 1 << 6 | 3 << 13 | 1 << 23 | 1 << 29 | 3 << 30)
    return InstrDesc(d_codes.get(desc >> 4 & 3), codes.get(desc >> 7 & 7),
                     codes.get(desc >> 10 & 7), bool(desc >> 15 & 1), bool(desc >> 16 & 1),
                     (desc >> 17 & 0x3F) << 3, (desc >> 24 & 0x1F) << 4, reserved)


#: Shared-memory descriptor swizzle codes, bits 61-63 (Table 40; 1 = 128-byte swizzle with
#: 32-byte atoms, which tilewise's layouts do not express, is never produced).
SMEM_SWIZZLE_CODE = {0: 0, 128: 2, 64: 4, 32: 6}
SMEM_SWIZZLE_OF_CODE = {v: k for k, v in SMEM_SWIZZLE_CODE.items()}
SMEM_DESC_VERSION = 1  # bits 46-48: the fixed constant 0b001


def smem_desc(start: int, lbo: int, sbo: int, swizzle: int, base_offset: int = 0) -> int:
    """The 64-bit tcgen05 shared-memory descriptor (Table 40): start, LBO and SBO as
    ``(x & 0x3FFFF) >> 4`` in bits 0-13 / 16-29 / 32-45, the version 0b001 in bits 46-48,
    the matrix base offset in 49-51, the LBO mode (0: relative) in 52, the swizzle in
    61-63. The canonical layouts it describes are wgmma's (§9.7.16.3.3 equals §9.7.15.5.1.1:
    :func:`tilewise.ptx.wgmma.element_address`)."""
    enc = lambda x: (x & 0x3FFFF) >> 4  # noqa: E731
    return (enc(start) | enc(lbo) << 16 | enc(sbo) << 32 | SMEM_DESC_VERSION << 46
            | (base_offset & 7) << 49 | SMEM_SWIZZLE_CODE[swizzle] << 61)


def smem_desc_fields(lbo: int, sbo: int, swizzle: int) -> int:
    """The descriptor without its start address (add ``(addr & 0x3FFFF) >> 4``)."""
    return smem_desc(0, lbo, sbo, swizzle)


def decode_smem_desc(desc: int):
    """``(wgmma.Descriptor, problem)``: the fields, and why the hardware would not accept
    them (wrong version bits, a swizzle code tilewise does not model, absolute LBO mode),
    or None."""
    from .wgmma import Descriptor

    desc = int(desc) & (2**64 - 1)
    code, version = desc >> 61 & 7, desc >> 46 & 7
    problem = None
    if version != SMEM_DESC_VERSION:
        problem = f"bits 46-48 are {version:#05b}, not the fixed 0b001"
    elif code not in SMEM_SWIZZLE_OF_CODE:
        problem = f"swizzle code {code} is not 0 (none), 2 (128B), 4 (64B) or 6 (32B)"
    elif desc >> 52 & 1:
        problem = "the leading-dimension stride is in absolute-address mode (sm_103a only)"
    d = Descriptor(start=(desc & 0x3FFF) << 4, lbo=(desc >> 16 & 0x3FFF) << 4,
                   sbo=(desc >> 32 & 0x3FFF) << 4,
                   swizzle=SMEM_SWIZZLE_OF_CODE.get(code, 0), base_offset=desc >> 49 & 7)
    return d, problem


def datapath_lanes(m_cta: int, rows, lane0=0):
    """Tensor-memory lanes of rows ``rows`` of an accumulator (or A) of ``m_cta`` rows in
    one CTA: Layout D (128 rows: lane = row) or F (64 rows: 32 (row // 16) + row % 16), plus
    the address's lane field ``lane0`` (0; 0 or 16 for F), §9.7.16.10.5."""
    return DATAPATHS["D" if m_cta == 128 else "F"][1](rows) + lane0


A_TMEM_COLS = 8  # 32-bit columns one K-step of A occupies in tensor memory (256 bits a row)


# ---- tcgen05.cp (PTX ISA §9.7.16.9.2; the lane maps of CUTLASS's UTCCP traits and TIRx) ---
@dataclass(frozen=True)
class CpShape:
    """One ``tcgen05.cp`` shape and multicast: rows of the source, bytes a row, and where
    source row ``r`` lands: ``lanes(r)`` the lanes (several with a multicast) relative to
    the address's lane field."""

    name: str  # the PTX spelling, shape and multicast
    llvm: str  # the intrinsic's spelling
    rows: int
    row_bytes: int
    lanes: Callable

    @property
    def cols(self) -> int:
        """32-bit columns a row fills."""
        return self.row_bytes // 4


CP_SHAPES: dict[str, CpShape] = {s.name: s for s in (
    CpShape("128x256b", "128x256b", 128, 32, lambda r: (r,)),
    CpShape("128x128b", "128x128b", 128, 16, lambda r: (r,)),
    CpShape("4x256b", "4x256b", 4, 32, lambda r: (32 * r,)),
    CpShape("64x128b.warpx2::02_13", "64x128b_warpx2_02_13", 64, 16, lambda r: (r, r + 64)),
    CpShape("64x128b.warpx2::01_23", "64x128b_warpx2_01_23", 64, 16,
            lambda r: (64 * (r // 32) + r % 32, 64 * (r // 32) + r % 32 + 32)),
    CpShape("32x128b.warpx4", "32x128b_warpx4", 32, 16,
            lambda r: (r, r + 32, r + 64, r + 96)),
)}
