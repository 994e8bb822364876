"""mma.sync and ldmatrix / stmatrix geometry: the one home of these facts.

PTX ISA §9.7.14 ("Warp-level matrix multiply-accumulate instructions"): the table's
checks (:mod:`tilewise.ptx.rows_mma`), the layout atoms
(:func:`tilewise.layout.atoms.mma_a_atom` ...), the ``mma_sync`` and ``ld_stmatrix``
variants, the LLVM lowering and the simulator all import them.

**Shapes** (§9.7.14.5.x, "Matrix Fragments for mma.m16n8k*"): one ``mma.sync.aligned``
multiplies a 16 x K tile of A by a K x 8 tile of B into a 16 x 8 tile of C/D, by one
warp. K is 256 bits of inputs per row: 16 for f16/bf16, 8 for tf32, 32 for s8/u8 and the
fp8 types e4m3/e5m2. A 32-bit register holds ``e = 32 // bits`` inputs (2, 1 or 4).

**Fragments.** Lane ``l`` of the warp, ``g = l // 4`` (the group) and ``t = l % 4`` (the
thread in the group); element ``i`` of the thread's fragment is half ``h = i % e`` of
register ``r = i // e``:

* A (16 x K, 4 registers): row ``g + 8 (r % 2)``, column ``e t + h + 4 e (r // 2)``;
* B (K x 8, 2 registers): row ``e t + h + 4 e r``, column ``g``;
* C / D (16 x 8): element ``i`` (0..3) at row ``g + 8 (i // 2)``, column ``2 t + i % 2``;
  four float32 / int32 registers, or two float16x2 (element ``i`` in half ``i % 2`` of
  register ``i // 2``, the lower column in the low half).

For f16 these are the tables of §9.7.14.5.8; tf32 (§9.7.14.5.7) and the 8-bit types
(§9.7.14.5.9-10) are the same formulas with their ``e``.

**ldmatrix / stmatrix** (§9.7.14.5.15-16, ``.m8n8 .b16``): ``.x1/.x2/.x4`` move one, two
or four 8 x 8 matrices of 16-bit elements (8 rows of 16 bytes); lanes ``8 j .. 8 j + 7``
give the row addresses of matrix ``j`` (a row 16-byte aligned, its 16 bytes contiguous);
register ``j`` of every lane receives (or sends) matrix ``j``. Lane ``l`` holds row
``l // 4``, elements ``2 (l % 4)`` and ``2 (l % 4) + 1`` (low and high half), or with
``.trans`` rows ``2 (l % 4) + h`` of column ``l // 4``.
"""

from __future__ import annotations

M, N = 16, 8  # rows and columns of one mma's C tile
WARP = 32
#: The PTX type of each input dtype mma.sync multiplies.
IN_TYPE = {"float16": "f16", "bfloat16": "bf16", "float32": "tf32", "int8": "s8",
           "uint8": "u8", "float8_e4m3": "e4m3", "float8_e5m2": "e5m2"}
FP8 = ("float8_e4m3", "float8_e5m2")
#: Inputs of the sm_80 row (ptx.mma_sync) and of the sm_89 row (ptx.mma_sync_fp8).
SYNC_INPUTS = tuple(k for k in IN_TYPE if k not in FP8)
FP8_INPUTS = FP8
#: The PTX type of each accumulator dtype.
ACC_TYPE = {"float32": "f32", "float16": "f16", "int32": "s32"}
#: Input families: A and B must be of one family; the accumulators each family allows.
FAMILIES = {"float16": ("float16",), "bfloat16": ("bfloat16",), "float32": ("float32",),
            "int8": ("int8", "uint8"), "uint8": ("int8", "uint8"),
            "float8_e4m3": FP8, "float8_e5m2": FP8}
ACCUMULATORS = {"float16": ("float32", "float16"), "bfloat16": ("float32",),
                "float32": ("float32",), "int8": ("int32",), "uint8": ("int32",),
                "float8_e4m3": ("float32",), "float8_e5m2": ("float32",)}
BITS = {"float16": 16, "bfloat16": 16, "float32": 32, "int8": 8, "uint8": 8,
        "float8_e4m3": 8, "float8_e5m2": 8}
A_REGS, B_REGS = 4, 2
LDMATRIX_NUMS = (1, 2, 4)
ROW_BYTES = 16  # one ldmatrix / stmatrix matrix row


def per_reg(dtype: str) -> int:
    """``e``: inputs of ``dtype`` per 32-bit register."""
    return 32 // BITS[dtype]


def k_of(dtype: str) -> int:
    """K of one mma.sync with inputs of ``dtype``."""
    return 8 * per_reg(dtype)


def c_regs(acc: str) -> int:
    """32-bit accumulator registers per thread: 2 for float16, else 4."""
    return 2 if acc == "float16" else 4


def combination_problem(a: str, b: str, acc: str) -> str | None:
    """Why ``mma.sync`` has no form for these input and accumulator types (None: it has)."""
    if b not in FAMILIES[a]:
        return (f"A is {a} but B is {b}; mma.sync multiplies inputs of one type (or "
                "int8 with uint8, e4m3 with e5m2)")
    if acc not in ACCUMULATORS[a]:
        return (f"{a} inputs accumulate in {' or '.join(ACCUMULATORS[a])}, not {acc}")
    return None


def a_coords(lane, i, e: int):
    """(row, column) in the 16 x K tile of element ``i`` of A in lane ``lane``."""
    g, t, r, h = lane // 4, lane % 4, i // e, i % e
    return g + 8 * (r % 2), e * t + h + 4 * e * (r // 2)


def b_coords(lane, i, e: int):
    """(row, column) in the K x 8 tile of element ``i`` of B in lane ``lane``."""
    g, t, r, h = lane // 4, lane % 4, i // e, i % e
    return e * t + h + 4 * e * r, g


def c_coords(lane, i):
    """(row, column) in the 16 x 8 tile of accumulator element ``i`` in lane ``lane``."""
    g, t = lane // 4, lane % 4
    return g + 8 * (i // 2), 2 * t + i % 2


def ptx_spelling(a: str, b: str, acc: str) -> str:
    d = ACC_TYPE[acc]
    return (f"mma.sync.aligned.m16n8k{k_of(a)}.row.col.{d}.{IN_TYPE[a]}.{IN_TYPE[b]}.{d}")


def llvm_name(a: str, b: str, acc: str) -> str:
    """The LLVM 22 intrinsic of the form (measured: each selects and assembles on every
    target of its feature; the fp8 form aborts LLVM below sm_89 or below PTX 8.4)."""
    ta, tb = IN_TYPE[a], IN_TYPE[b]
    if a in ("float16",):
        sig = f"{ACC_TYPE[acc]}.{ACC_TYPE[acc]}"
    elif a in FP8:
        sig = f"f32.{ta}.{tb}.f32"
    elif ta == tb:
        sig = ta
    else:
        sig = f"{ta}.{tb}"
    return f"llvm.nvvm.mma.m16n8k{k_of(a)}.row.col.{sig}"


# ---------------------------------------------------------------- ldmatrix / stmatrix
def matrix_element(lane, half, trans: bool):
    """(row, column) in its 8 x 8 matrix of 16-bit element ``half`` of a lane's register
    (the same register index as the matrix)."""
    if trans:
        return 2 * (lane % 4) + half, lane // 4
    return lane // 4, 2 * (lane % 4) + half


def row_lane(matrix, row):
    """The lane whose address operand is row ``row`` of matrix ``matrix``."""
    return 8 * matrix + row
