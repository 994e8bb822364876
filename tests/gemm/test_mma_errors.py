"""Error corpus of gemm -> mma_sync, copy -> ld_stmatrix and the warp-level matrix
instructions: every mistake is a TilewiseError at the user's line (marked ``# <-``) that
says what is wrong and what to do instead."""

import pytest

from errcheck import check_error
from tilewise import from_source
from tilewise.errors import TilewiseError
from tilewise.layout import S, TileLayout, laneid, mma_fragment
from tilewise.pipeline import lower

FILE = "mmakernel.py"
HEAD = '''
@T.prim_func
def k(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
    A = T.match_buffer(A_ptr, (32, 32), "float16")
    B = T.match_buffer(B_ptr, (32, 16), "float16")
    C = T.match_buffer(C_ptr, (32, 16), "float32")
    T.device_entry()
    tid = T.thread_id([128])
    As = T.alloc_shared((32, 32), "float16")
    Bs = T.alloc_shared((32, 16), "float16")
    Ar = T.alloc_local((32, 32), "float16", layout=LA)
    Br = T.alloc_local((32, 16), "float16", layout=LB)
    Cr = T.alloc_local((32, 16), "float32", layout=LC)
    R = T.alloc_local((4,), "uint32")
    H = T.alloc_local((2,), "float16")
'''
ENV = {"LA": mma_fragment("A", (32, 32), 16), "LB": mma_fragment("B", (32, 16), 16),
       "LC": mma_fragment("C", (32, 16)), "ROWS": TileLayout(S[(32, 16):(1 @ laneid, 1)]),
       "LC4": mma_fragment("C", (64, 16), warps=(4, 1), warp_axis="wid_in_wg"),
       "LA4": mma_fragment("A", (64, 32), 16, (4, 1), "wid_in_wg")}
MMA_ARGS = "R[0], R[1], R[2], R[3], R[0], R[1]"

CASES = [
    # (id, target, lines, message, hint)
    ("shared-operand", "sm_80", ["Tx.warp.gemm(Cr[:, :], As[:, :], Br[:, :])  # <-"],
     "A ('As') is in shared memory; mma.sync takes every operand in registers (load it with "
     "Tx.warp.copy(<registers>, <shared tile>): ldmatrix)", None),
    ("no-layout", "sm_80", ['Cx = T.alloc_local((32, 16), "float32")',
                            "Tx.warp.gemm(Cx[:, :], Ar[:, :], Br[:, :])  # <-"],
     "C ('Cx') has no thread axes in its layout; give it a fragment layout (e.g. "
     "layout=mma_fragment(...))", None),
    ("not-the-fragment", "sm_80", ['Cx = T.alloc_local((32, 16), "float32", layout=ROWS)',
                                   "Tx.warp.gemm(Cx[:, :], Ar[:, :], Br[:, :])  # <-"],
     "C ('Cx'): element (8, 0) is in lane 8, but the C fragment of mma.sync puts it in lane 0 "
     "(give it the layout mma_fragment('C', ...))", None),
    ("k-step", "sm_80", ["Tx.warp.gemm(Cr[:, :], Ar[:, 0:8], Br[0:8, :])  # <-"],
     "K = 8: mma.sync tiles C in 16 x 8 and K in steps of 16 (float16); make M a multiple of 16, "
     "N of 8 and K of 16", None),
    ("shapes", "sm_80", ["Tx.warp.gemm(Cr[0:16, :], Ar[:, :], Br[:, :])  # <-"],
     "C is (16, 16), A (32, 32), B (32, 16): gemm computes C (M, N) from A (M, K) and B (K, N)",
     None),
    ("bf16-f16-accumulator", "sm_80",
     ['Ab = T.alloc_local((32, 32), "bfloat16", layout=LA)',
      'Bb = T.alloc_local((32, 16), "bfloat16", layout=LB)',
      'Ch = T.alloc_local((32, 16), "float16", layout=LC)',
      "Tx.warp.gemm(Ch[:, :], Ab[:, :], Bb[:, :])  # <-"],
     "bfloat16 inputs accumulate (C) in float32, not float16", None),
    ("mixed-inputs", "sm_80", ['Bb = T.alloc_local((32, 16), "bfloat16", layout=LB)',
                               "Tx.warp.gemm(Cr[:, :], Ar[:, :], Bb[:, :])  # <-"],
     "A is float16 but B is bfloat16; mma.sync multiplies inputs of one type", None),
    ("fp8-before-sm89", "sm_86",
     ['A8 = T.alloc_local((32, 32), "float8_e4m3", layout=mma_fragment("A", (32, 32), 8))',
      'B8 = T.alloc_local((32, 16), "float8_e4m3", layout=mma_fragment("B", (32, 16), 8))',
      "Tx.warp.gemm(Cr[:, :], A8[:, :], B8[:, :])  # <-"],
     "target sm_86 has no mma.sync with fp8 inputs (needs sm_89 or newer)", None),
    ("mma-before-sm80", "sm_75", ["Tx.warp.gemm(Cr[:, :], Ar[:, :], Br[:, :])  # <-"],
     "target sm_75 has no mma.sync (needs sm_80 or newer)", None),
    ("warps-differ", "sm_80", ["Tx.wg.gemm(Cr[:, :], Ar[:, :], Br[:, :])  # <-"],
     "the warps of the scope would run different instructions: warp 0 computes C tiles "
     "[(0, 0), (0, 1), (1, 0), (1, 1)] and warp 1 C tiles [] (8 vs 0 mma.sync)", None),
    ("warp-lacks-B", "sm_80", ['C4 = T.alloc_local((64, 16), "float32", layout=LC4)',
                               'A4 = T.alloc_local((64, 32), "float16", layout=LA4)',
                               "Tx.wg.gemm(C4[:, :], A4[:, :], Br[:, :])  # <-"],
     "warp 1 of the scope computes C tile (1, 0) but holds no copy of B tile (0, 0) (it is in "
     "warps [0])", None),
    ("partial-warp", "sm_80", ["if tid < 16:",
                               "    Tx.warp.gemm(Cr[:, :], Ar[:, :], Br[:, :])  # <-"],
     "only 16 of the 32 threads of group 0", None),
    ("ldmatrix-misaligned", "sm_80",
     ['Tx.warp.copy(Ar[:, 0:16], As[:, 4:20], dispatch="ld_stmatrix")  # <-'],
     "without .trans a row starts at byte 8 of 'As', only 8-byte aligned (rows need 16)",
     "remove dispatch="),
    ("stmatrix-before-sm90", "sm_80",
     ['Tx.warp.copy(As[:, :], Ar[:, :], dispatch="ld_stmatrix")  # <-'],
     "target sm_80 has no stmatrix (shared <- registers) (needs sm_90 or newer)", None),
    ("fp8-instruction-before-sm89", "sm_80",
     ["T.ptx.mma_sync_fp8('float8_e4m3', 'float8_e4m3', 'float32', " + MMA_ARGS +
      ", R[0], R[1], R[2], R[3])  # <-"],
     "T.ptx.mma_sync_fp8 (mma.sync.aligned.m16n8k<K>.row.col.<acc>.<a>.<b>.<acc>) needs sm_89 "
     "or newer; target is sm_80", "sm_89"),
    ("stmatrix-instruction-before-sm90", "sm_89",
     ["T.ptx.stmatrix(T.address_of(As[tid % 32, 0]), 1, False, R[0])  # <-"],
     "T.ptx.stmatrix (stmatrix.sync.aligned.m8n8.x<num>{.trans}.shared.b16) needs sm_90 or "
     "newer; target is sm_89", "sm_90"),
]

SCRIPT_CASES = [
    ("16-bit-register", ["T.ptx.mma_sync('float16', 'float16', 'float32', H[0], R[1], R[2], "
                         "R[3], R[0], R[1], R[0], R[1], R[2], R[3])  # <-"],
     "operand 'a0' of T.ptx.mma_sync is a 32-bit register and must be a 32-bit value, got "
     "float16", "uint32"),
    ("mixed-types", ["T.ptx.mma_sync('float16', 'bfloat16', 'float32', " + MMA_ARGS +
                     ", R[0], R[1], R[2], R[3])  # <-"],
     "T.ptx.mma_sync: A is float16 but B is bfloat16; mma.sync multiplies inputs of one type",
     None),
    ("accumulator-count", ["T.ptx.mma_sync('float16', 'float16', 'float32', " + MMA_ARGS +
                           ", R[0], R[1])  # <-"],
     "T.ptx.mma_sync with these operands moves 4 32-bit register(s) per thread; the call "
     "passes 2", "pass exactly 4"),
    ("fp8-in-the-sm80-row", ["T.ptx.mma_sync('float8_e4m3', 'float8_e4m3', 'float32', " +
                             MMA_ARGS + ", R[0], R[1], R[2], R[3])  # <-"],
     "operand 'a_type' of T.ptx.mma_sync is 'float8_e4m3'; expected one of 'float16', "
     "'bfloat16', 'float32', 'int8', 'uint8'", None),
    ("ldmatrix-num", ["T.ptx.ldmatrix(T.address_of(As[tid % 32, 0]), 3, False, R[0], R[1], "
                      "R[2])  # <-"],
     "operand 'num' of T.ptx.ldmatrix is 3; PTX allows 1, 2, 4", "use 1, 2, 4"),
]


def _src(lines):
    return HEAD + "".join("    " + ln + "\n" for ln in lines)


@pytest.mark.parametrize("cid,target,lines,message,hint", CASES, ids=[c[0] for c in CASES])
def test_dispatch_and_target_errors(cid, target, lines, message, hint):
    src = _src(lines)
    func = from_source(src, env=dict(ENV, mma_fragment=mma_fragment), filename=FILE)
    with pytest.raises(TilewiseError) as e:
        lower(func, target)
    check_error(e.value, message, hint, src, FILE)


@pytest.mark.parametrize("cid,lines,message,hint", SCRIPT_CASES, ids=[c[0] for c in SCRIPT_CASES])
def test_instruction_operands_are_checked_at_the_line(cid, lines, message, hint):
    src = _src(lines)
    with pytest.raises(TilewiseError) as e:
        from_source(src, env=ENV, filename=FILE)
    check_error(e.value, message, hint, src, FILE)
