"""Malformed kernels: each gives its own clear ScriptError at the user's line (marked `# <-`).

Each source is a whole kernel; the line the error must point at is marked `# <-`.
"""

import pytest

import tilewise as tw
from errcheck import check_error
from tilewise import from_source

HEAD = '''
@T.prim_func
def k(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128, 32), "float16")
    B = T.match_buffer(B_ptr, (128, 32), "float16")
    T.device_entry()
    tid = T.thread_id([128])
'''


def body(*lines: str) -> str:
    return HEAD + "".join("    " + ln + "\n" for ln in lines)


CASES = [
    ("unknown-T-name", "T.alloc_shard does not exist", "alloc_shared",
     body('s = T.alloc_shard((128,), "float16")  # <-')),
    ("unknown-ptx", "T.ptx.cp_asink is not an instruction", "cp_async",
     body("T.ptx.cp_asink.commit_group()  # <-")),
    ("ptx-wrong-arity", "takes 1 operand", "wait_group(n=0)",
     body("T.ptx.cp_async.wait_group(0, 1)  # <-")),
    ("ptx-bad-immediate", "cp_size' of T.ptx.cp_async is 12", "4, 8, 16",
     body('S = T.alloc_buffer((128,), "float16", scope="shared")',
          "T.ptx.cp_async(T.address_of(S[0]), T.address_of(A[0, 0]), 12)  # <-")),
    ("ptx-nonconst-immediate", "must be a compile-time constant", "int literal",
     body("T.ptx.cp_async.wait_group(tid)  # <-")),
    ("ptx-unknown-operand", "has no operand named 'cols'", "n_cols",
     body('a = T.alloc_shared([1], "uint32")',
          "T.ptx.tcgen05.alloc(T.address_of(a), cols=32)  # <-")),
    ("non-constant-shape", "must be known at compile time", "Python ints",
     body('s = T.alloc_shared((tid,), "float16")  # <-')),
    ("negative-shape", "invalid extent -4", "positive int",
     body('s = T.alloc_shared((-4,), "float16")  # <-')),
    ("slice-out-of-bounds", "slice 0:256 is out of bounds for dimension 0 of 'A'", "0..128",
     body('s = T.alloc_shared((256, 32), "float16")',
          "Tx.cta.cast(s[0:256, 0:32], A[0:256, 0:32])  # <-")),
    ("index-out-of-bounds", "index 40 is out of bounds for dimension 1 of 'A'", "0..31",
     body("B[0, 0] = A[0, 40]  # <-")),
    ("wrong-index-count", "'A' has 2 dimension(s) (128, 32), indexed with 1", "A[i0, i1]",
     body("B[0, 0] = A[tid]  # <-")),
    ("while-else", "while/else is not supported", None,
     body("while tid < 4:  # <-", "    pass", "else:", "    pass")),
    ("try-except", "try/except is not supported", None,
     body("try:  # <-", "    pass", "except Exception:", "    pass")),
    ("lambda", "lambda is not supported", None,
     body("f = lambda x: x + tid  # <-")),
    ("undefined-name", "name 'tidd' is not defined", "tid",
     body("B[0, 0] = A[tidd, 0]  # <-")),
    ("dtype-mismatch-store", "buffer 'B' holds float16 but the value is float32",
     'T.cast(value, "float16")',
     body('B[tid, 0] = T.cast(A[tid, 0], "float32")  # <-')),
    ("dtype-mismatch-binop", "different types: float16 and float32", "T.cast",
     body('B[tid, 0] = A[tid, 0] + T.cast(A[tid, 1], "float32")  # <-')),
    ("float-literal-int", "mixing int32 with the float literal 0.5", "T.cast",
     body("x = tid * 0.5  # <-")),
    ("tile-op-unknown", "Tx.copy_asnyc is not a tile primitive", "copy_async",
     body("Tx.cta.copy_asnyc(B[0:128, 0:32], A[0:128, 0:32])  # <-")),
    ("tile-option-unknown", "copy_async has no option 'cache_hnit'", "cache_hint",
     body('s = T.alloc_shared((128, 32), "float16")',
          'Tx.cta.copy_async(s[0:128, 0:32], A[0:128, 0:32], cache_hnit="evict_last")  # <-')),
    ("tile-operand-scalar", "must be a buffer region", "A[0:128, 0:32]",
     body("Tx.cta.copy(B[0:128, 0:32], tid)  # <-")),
    ("match-after-entry", "T.match_buffer must come before T.device_entry()", None,
     body("C = T.match_buffer(A_ptr, (4,), \"float16\")  # <-")),
    ("launch-twice", "T.thread_id is declared twice", None,
     body("t2 = T.thread_id([128])  # <-")),
    ("launch-in-branch", "must be declared at the top level", None,
     body("if tid < 4:", "    w = T.warp_id([4])  # <-")),
    ("launch-mismatch", "T.warp_id([2]) implies 64 threads per CTA but T.thread_id([128])",
     "threads = 32 x warps",
     body("w = T.warp_id([2])  # <-")),
    ("assign-thread-var", "'tid' is a loop or thread variable", "new name",
     body("tid = 3  # <-")),
    ("python-call-device-value", "cannot take run-time values", "T.*",
     body("x = abs(tid)  # <-")),
    ("bad-dtype", "unknown data type 'float17'", "float16",
     body('s = T.alloc_shared((4,), "float17")  # <-')),
    ("tmem-without-addr", "needs allocated_addr=", "tcgen05.alloc wrote",
     body('t = T.decl_buffer((128, 8), "float32", scope="tmem")  # <-')),
    ("alloc-global", "cannot allocate in scope 'global'", "shared",
     body('s = T.alloc_buffer((4,), "float16", scope="global")  # <-')),
    ("layout-size-mismatch", "covers 64 elements but the shape (128, 32) has 4096",
     "match the shape",
     body('s = T.alloc_buffer((128, 32), "float16", scope="shared", '
          'layout=TileLayout(S[(8, 8)]))  # <-')),
    ("view-too-large", "the view needs 64 bytes per thread but 'r' has 16", None,
     body('r = T.alloc_local((8,), "float16")',
          "v = r.view(32, layout=TileLayout(S[32]))  # <-")),
    ("assign-slice", "assigning to a slice is not supported", "Tx.<scope>.copy",
     body("B[0:4, 0] = A[0, 0]  # <-")),
    ("strided-slice", "strided slices are not supported", None,
     body("Tx.cta.copy(B[0:128:2, 0:32], A[0:128:2, 0:32])  # <-")),
    ("for-else", "for/else is not supported", None,
     body("for i in range(4):  # <-", "    pass", "else:", "    pass")),
    ("return", "return", "guard the rest",
     body("return  # <-")),
    ("no-device-entry", "never calls T.device_entry()", "after the T.match_buffer",
     '''
@T.prim_func
def k(A_ptr: T.handle):  # <-
    A = T.match_buffer(A_ptr, (4,), "float16")
'''),
    ("kernel-defaults", "plain names annotated with T.handle", None,
     '''
@T.prim_func
def k(A_ptr: T.handle = None):  # <-
    T.device_entry()
'''),
    ("expr-statement", "an expression statement has no effect", None,
     body("tid + 1  # <-")),
    ("loop-over-runtime", "cannot loop over a run-time int32 value", "range",
     body("for i in tid:  # <-", "    pass")),
    ("lane-extent", "T.lane_id([16]) declares 16 lanes", "T.lane_id([32])",
     body("l = T.lane_id([16])  # <-")),
    ("division-by-zero", "division by zero: the right side of '//' is the constant 0",
     "non-zero", body("B[tid, 0] = T.cast(tid // 0, \"float16\")  # <-")),
    ("address-of-changing-index", "'p' would hold an address indexed by the changing local 'i'",
     "where the address is used",
     body('S = T.alloc_shared((4,), "float16")', "i: T.int32 = 0",
          "p = T.address_of(S[i])  # <-")),
    ("static-range-runtime", "T.static_range bounds must be compile-time ints", "range(...)",
     body("for j in T.static_range(tid):  # <-", "    pass")),
]



FILE = "user_kernel.py"


def test_corpus_is_large_and_distinct():
    assert len(CASES) >= 25
    assert len({c[1] for c in CASES}) == len(CASES), "every case has its own message"


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_malformed_kernel(case):
    _, message, hint, src = case
    with pytest.raises(tw.TilewiseError) as info:
        k = from_source(src, filename=FILE)
        tw.ir.launch.LaunchConfig.of(k)  # launch consistency is checked on use
    check_error(info.value, message, hint, src, FILE)
