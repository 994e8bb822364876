"""wgmma geometry: shapes, the accumulator fragment, and shared-memory matrix descriptors.

The one home of these facts (PTX ISA §9.7.15 "Asynchronous Warpgroup Level Matrix
Multiply-Accumulate"): the table's checks (:mod:`tilewise.ptx.rows_mma`), the layout atom
(:func:`tilewise.layout.atoms.wgmma_accumulator`), the ``wgmma`` variant, the LLVM lowering
and the simulator all import them.

**Shapes.** ``wgmma.mma_async.sync.aligned.m64nNkK``: M = 64 rows per warpgroup, N from 8 to
256 in steps of 8, K = 16 for f16/bf16, 8 for tf32, 32 for fp8 (e4m3/e5m2).

**Accumulator fragment** (§9.7.15.5.1 "Register Fragments", the D matrix): thread ``t`` of
the warpgroup (warp ``w = t // 32``, lane ``l``) holds, for each 8-column group ``j``, four
values ``d[4j + i]``: rows ``16w + l // 4 + 8 (i // 2)``, columns ``8j + 2 (l % 4) + i % 2``.
A float32 accumulator is N / 2 registers per thread, a float16 one N / 4 (two halves per
32-bit register, the lower column in the low half).

**A in registers** (the same section, "Multiplicand A in registers", ``.f16``/``.bf16``,
m64nNk16): four 32-bit registers of two 16-bit inputs, elements ``a0..a7`` of thread ``t``
(warp ``w``, lane ``l``, ``g = l // 4``, ``c = l % 4``): element ``i`` at row
``16w + g + 8 ((i // 2) % 2)``, column ``2c + i % 2 + 8 (i // 4)``; element ``2j`` in the low
half of register ``j``. That is the accumulator formula of a 64 x 16 tile read with ``v = i``
(``acc_coords(t, i)``, i < 8): a float32 accumulator of a 64 x N product, rounded to 16 bits
in place, *is* the A operand of N / 16 K-steps — values ``8s .. 8s + 7`` of the thread are
K-step ``s``'s ``a0..a7`` (what FlashAttention-3 does with P = softmax(S); CuTe writes it
``ALayout_64x16 = CLayout_64x16``). ``a_coords`` is the ISA's formula, written separately;
the layout atom checks the two against each other.

**Matrix descriptors** (§9.7.15.5.1.2 "Matrix Descriptor Format"): a 64-bit value; bits
0-13 the start address ``(addr & 0x3FFFF) >> 4``, 16-29 the leading-dimension byte offset
>> 4 (LBO), 32-45 the stride-dimension byte offset >> 4 (SBO), 49-51 the matrix base offset,
62-63 the swizzle: 0 none (interleaved), 1 128B, 2 64B, 3 32B.

**Canonical layouts** (§9.7.15.5.1.1 "Shared Memory Matrix Layout"), in units of 16-byte
chunks ``T`` (8 elements of 16 bits), for one instruction's operand tile of ``mn`` rows
(M of A, N of B) and K columns; ``W`` = 1, 2, 4, 8 chunks per swizzle line for none, 32B,
64B, 128B:

* K-major (the K extent, 32 bytes, is 2 chunks): a row ``r`` of the tile and chunk
  ``c`` in K sit at ``(r % 8) * W + (r // 8) * SBO + c * (LBO if W == 1 else 1)``;
* MN-major with a swizzle: chunk ``q`` along MN and row ``k`` of K sit at
  ``q % W + (q // W) * LBO + (k % 8) * W + (k // 8) * SBO``; without a swizzle LBO and
  SBO trade places: ``(q) * SBO + (k % 8) + (k // 8) * LBO``.

The address of a byte is the start address plus its canonical offset, then the swizzle
XORs the 16-byte chunk bits [4, 7) of the *absolute* shared address with its line bits
[7, 10) (masked to the mode). So a tile must sit on a swizzle repeat (1024 / 512 / 256
bytes, base offset 0), and a descriptor advanced along K inside a swizzle line (+32 bytes
per K step of a K-major operand) still addresses the right bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from .tma import swizzle_bytes, swizzle_repeat

M = 64  # rows of one wgmma (one warpgroup)
N_MIN, N_MAX, N_STEP = 8, 256, 8
#: K per instruction, by input dtype name.
K_OF = {"float16": 16, "bfloat16": 16, "tfloat32": 8, "float32": 8, "float8_e4m3": 32,
        "float8_e5m2": 32}
#: The PTX type names of the inputs and accumulators.
PTX_TYPE = {"float16": "f16", "bfloat16": "bf16", "float32": "tf32", "float8_e4m3": "e4m3",
            "float8_e5m2": "e5m2"}
ACC_TYPE = {"float32": "f32", "float16": "f16"}
#: Input types whose operands may be MN-major (the instruction's trans-a / trans-b
#: immediates exist only for them, PTX ISA §9.7.15.5.1): 16-bit floats.
TRANSPOSABLE = ("float16", "bfloat16")


def transposable(ab: str) -> bool:
    """Whether a wgmma of ``ab`` inputs takes MN-major (transposed) operands."""
    return ab in TRANSPOSABLE
#: Swizzle span in bytes -> the descriptor's 2-bit mode; 0 means no swizzle.
SWIZZLE_CODE = {0: 0, 128: 1, 64: 2, 32: 3}
SWIZZLE_OF_CODE = {v: k for k, v in SWIZZLE_CODE.items()}
CHUNK = 16  # bytes: the core-matrix row, the swizzle unit


def n_problem(n: int) -> str | None:
    """Why ``n`` is not a legal N of wgmma (None when it is)."""
    if not N_MIN <= n <= N_MAX or n % N_STEP:
        return f"N = {n} is not a multiple of {N_STEP} in {N_MIN}..{N_MAX}"
    return None


def acc_regs(n: int, acc_dtype: str) -> int:
    """32-bit accumulator registers per thread of an ``m64nN`` wgmma."""
    return n // 2 if acc_dtype == "float32" else n // 4


def acc_coords(t, v):
    """(row, column) in the 64 x N tile of accumulator value ``v`` of warpgroup thread ``t``
    (ints or numpy arrays)."""
    w, lane = t // 32, t % 32
    j, i = v // 4, v % 4
    return 16 * w + lane // 4 + 8 * (i // 2), 8 * j + 2 * (lane % 4) + i % 2


#: 32-bit registers of the A operand of one register-sourced wgmma (m64nNk16, f16/bf16).
A_REGS = 4
#: Input types wgmma takes A from registers for here (the K = 16 fragment above).
A_REG_TYPES = ("float16", "bfloat16")


def a_coords(t, i):
    """(row, column) in the 64 x 16 A tile of element ``i`` (0..7) of warpgroup thread ``t``
    for A in registers (PTX ISA figure "WGMMA .m64nNk16 register fragment layout for matrix
    A"; ints or numpy arrays)."""
    w, lane = t // 32, t % 32
    g, c = lane // 4, lane % 4
    return 16 * w + g + 8 * ((i // 2) % 2), 2 * c + i % 2 + 8 * (i // 4)


def line_chunks(swizzle: int) -> int:
    """``W``: 16-byte chunks per swizzle line (1 without a swizzle)."""
    return max(swizzle // CHUNK, 1)


def repeat_bytes(swizzle: int) -> int:
    """The bytes after which a swizzle pattern repeats (8 lines; a chunk without one)."""
    return swizzle_repeat(swizzle) or CHUNK


# ---------------------------------------------------------------- descriptors
@dataclass(frozen=True)
class Descriptor:
    """The fields of a wgmma matrix descriptor (byte values; ``swizzle`` in bytes)."""

    start: int
    lbo: int
    sbo: int
    swizzle: int
    base_offset: int = 0

    def encode(self) -> int:
        return encode(self.start, self.lbo, self.sbo, self.swizzle, self.base_offset)


def encode(start: int, lbo: int, sbo: int, swizzle: int, base_offset: int = 0) -> int:
    """The 64-bit descriptor (start, LBO and SBO in bytes, multiples of 16)."""
    return (((start & 0x3FFFF) >> 4)
            | ((lbo >> 4) & 0x3FFF) << 16
            | ((sbo >> 4) & 0x3FFF) << 32
            | (base_offset & 0x7) << 49
            | SWIZZLE_CODE[swizzle] << 62)


def encode_fields(lbo: int, sbo: int, swizzle: int) -> int:
    """The descriptor without its start address (add ``(addr & 0x3FFFF) >> 4``)."""
    return encode(0, lbo, sbo, swizzle)


def decode(desc: int) -> Descriptor:
    desc = int(desc) & (2**64 - 1)
    return Descriptor(start=(desc & 0x3FFF) << 4, lbo=((desc >> 16) & 0x3FFF) << 4,
                      sbo=((desc >> 32) & 0x3FFF) << 4,
                      swizzle=SWIZZLE_OF_CODE[(desc >> 62) & 3],
                      base_offset=(desc >> 49) & 7)


def canonical_chunk(k_major: bool, row, chunk, d: Descriptor):
    """The canonical 16-byte-chunk offset (in bytes) of an operand element: for K-major,
    ``row`` is the M/N row and ``chunk`` the 16-byte chunk along K; for MN-major, ``row``
    is the K row and ``chunk`` the 16-byte chunk along M/N."""
    w = line_chunks(d.swizzle)
    if k_major:
        lead = d.lbo if w == 1 else CHUNK
        return (row % 8) * w * CHUNK + (row // 8) * d.sbo + chunk * lead
    if w == 1:
        return chunk * d.sbo + (row % 8) * CHUNK + (row // 8) * d.lbo
    return ((chunk % w) * CHUNK + (chunk // w) * d.lbo + (row % 8) * w * CHUNK
            + (row // 8) * d.sbo)


def element_address(k_major: bool, mn, k, elem_bytes: int, d: Descriptor):
    """The shared address the hardware reads for element (``mn``, ``k``) of an operand
    tile (ints or numpy arrays), per the canonical layouts and the swizzle."""
    per = CHUNK // elem_bytes
    if k_major:
        off = canonical_chunk(True, mn, k // per, d) + (k % per) * elem_bytes
    else:
        off = canonical_chunk(False, k, mn // per, d) + (mn % per) * elem_bytes
    return swizzle_bytes(d.start + off, d.swizzle)
