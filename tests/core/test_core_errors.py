"""The language core's error corpus: every silent wrong result the language used to give is
now either right (tests in test_core_executors.py / test_core_ir.py) or one of these
errors, at the user's line (marked ``# <-``), with what to change."""

import pytest

import tilewise as tw
from errcheck import check_error
from tilewise import from_source

FILE = "corekernel.py"

HEAD = '''
@T.prim_func
def k(A_ptr: T.handle, F_ptr: T.handle, H_ptr: T.handle, I8_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128, 4), "int32")
    F = T.match_buffer(F_ptr, (128,), "float32")
    H = T.match_buffer(H_ptr, (128,), "float16")
    I8 = T.match_buffer(I8_ptr, (128,), "int8")
    T.device_entry()
    tid = T.thread_id([128])
'''


def body(*lines: str) -> str:
    return HEAD + "".join("    " + ln + "\n" for ln in lines)


def kernel(params: str, *lines: str, mark_def: bool = False) -> str:
    return ("\n@T.prim_func\ndef k(" + params + "):" + ("  # <-" if mark_def else "") + "\n"
            + "".join("    " + ln + "\n" for ln in lines))


CASES = [
    # ---- binding: names that may be unassigned
    ("assigned-in-one-branch", "'y' may be unassigned here", "every path",
     body("if tid > 5:", "    y = A[tid, 0]", "F[tid] = T.cast(y, \"float32\")  # <-")),
    ("assigned-only-in-loop", "'t' may be unassigned here: it is assigned only inside the loop",
     None, body("for j in range(4):", "    t = A[tid, j]", "A[tid, 0] = t  # <-")),
    ("loop-variable-after-loop", "'j' may be unassigned here: it is the variable of the loop",
     None, body("for j in range(4):", "    A[tid, j] = 0", "A[tid, 0] = j  # <-")),
    ("read-before-assigned-in-loop", "'prev' is read before the kernel assigns it", "earlier",
     body("for j in range(4):", "    A[tid, j] = prev  # <-", "    prev = A[tid, j]")),
    ("global-shadowed-by-local", "'WIDTH' is read before the kernel assigns it", "local",
     body("A[tid, 0] = WIDTH  # <-", "WIDTH = 3")),
    ("buffer-rebound-in-loop", "'cur' is buffer 'S0' before the loop and is re-bound",
     "index one buffer by stage",
     body('S0 = T.alloc_shared((128,), "int32")', 'S1 = T.alloc_shared((128,), "int32")',
          "cur = S0", "for j in range(4):", "    cur = S1  # <-", "    cur[tid] = j")),
    ("buffer-differs-by-branch", "it is bound to a different compile-time value on each path",
     None, body('S0 = T.alloc_shared((128,), "int32")', 'S1 = T.alloc_shared((128,), "int32")',
                "if tid > 3:", "    cur = S0", "else:", "    cur = S1", "cur[tid] = 1  # <-")),
    ("branch-types-differ", "'v' is int32 on one path through the `if` and float32 on another",
     "T.cast", body("if tid > 3:", "    v = A[tid, 0]", "else:", "    v = F[tid]  # <-",
                    "A[tid, 1] = v")),
    ("carried-float-init-int-body", "(carried by the loop) is int32, the value 0.5 is a float",
     "T.cast",
     body("x = 0.5", "for j in range(4):  # <-", "    x = A[tid, j]", "F[tid] = 1.0")),
    ("assign-loop-var", "'j' is a loop or thread variable", "new name",
     body("for j in range(4):", "    j = 2  # <-")),
    ("break-outside-loop", "break outside a loop", None, body("break  # <-")),
    ("continue-outside-loop", "continue outside a loop", None, body("continue  # <-")),
    ("break-in-static-loop-runtime", "loop unrolled at compile time", "device loop",
     body("for j in T.static_range(4):", "    if A[tid, j] > 0:", "        break  # <-")),
    ("while-else", "while/else is not supported", None,
     body("while tid < 4:  # <-", "    pass", "else:", "    pass")),
    ("keeps-one-type", "'acc' is already a int32 local; a name keeps one type", "new name",
     body("acc: T.int32 = 0", "for j in range(2):", "    acc: T.float32 = 1.0  # <-")),
    # ---- typing: constants that do not fit, implicit narrowing, operators
    ("int8-constant-too-big", "the constant 300 does not fit local 'x' (int8 holds -128..127)",
     "T.cast(300", body("x: T.int8 = 300  # <-")),
    ("int32-literal-overflow", "the constant 3000000000 does not fit the other operand of '+'",
     "wider type", body("A[tid, 0] = tid + 3000000000  # <-")),
    ("unsigned-negative-literal", "the constant -1 does not fit", None,
     body("u = T.cast(tid, \"uint32\")", "A[tid, 0] = T.cast(u + (-1), \"int32\")  # <-")),
    ("constant-fold-overflow", "integer constant overflow: 1073741824 * 4", "T.int64",
     body("A[tid, 0] = T.int32(1073741824) * 4  # <-")),
    ("float16-constant-overflow", "the constant 100000.0 does not fit", "wider float",
     body("H[tid] = H[tid] * 100000.0  # <-")),
    ("select-narrowing", "T.select has a int32 value on one side and float16", "T.cast",
     body("A[tid, 0] = T.select(tid > 3, tid, H[tid])  # <-")),
    ("ternary-float-literal", "the other side of a ternary (int32) is int32, the value 1.5 is "
     "a float", "T.cast", body("A[tid, 0] = tid if tid > 3 else 1.5  # <-")),
    ("float-into-int-buffer", "buffer 'A' holds int32 but the value is float32; a float is "
     "never narrowed", "truncates toward zero", body("A[tid, 0] = F[tid]  # <-")),
    ("float-into-int-local", "local 'n' holds int32 but the value is float32", "T.cast",
     body("n = A[tid, 0]", "for j in range(2):", "    n = F[tid]  # <-")),
    ("int-true-division", "operator '/' is not defined on int32", "// for floor division",
     body("A[tid, 0] = A[tid, 1] / 2  # <-")),
    ("invert-float", "unary '~' is not defined on float32", "bits of an integer",
     body("F[tid] = ~F[tid]  # <-")),
    ("negate-bool", "unary '-' is not defined on bool", None,
     body("b = tid > 3", "A[tid, 0] = T.cast(-b, \"int32\")  # <-")),
    ("negate-buffer", "unary '-' cannot be applied to buffer 'F'", "-A[i]",
     body("F[tid] = -F  # <-")),
    ("not-buffer", "buffer 'F' has no truth value", None, body("if not F:  # <-", "    pass")),
    ("bitand-float", "operator '&' is not defined on float32", None,
     body("F[tid] = F[tid] & 1.0  # <-")),
    ("bool-plus-int", "operator '+' on a bool and the integer 1", "T.cast(flag",
     body("flag = tid > 3", "A[tid, 0] = flag + 1  # <-")),
    ("float-shift-count", "a shift count must be an integer", None,
     body("A[tid, 0] = A[tid, 0] << F[tid]  # <-")),
    ("run-time-range-step", "the step of range must be a non-zero compile-time int",
     "from a counter", body("for i in range(0, 8, tid):  # <-", "    A[tid, 0] = i")),
    ("zero-range-step", "the step of range must be a non-zero compile-time int, got 0", None,
     body("for i in range(0, 8, 0):  # <-", "    A[tid, 0] = i")),
    # ---- scalar parameters and symbolic sizes
    ("unknown-param-annotation", "parameter 'n' has an annotation tilewise does not know",
     "n: T.int32", kernel("n: int", "T.device_entry()", mark_def=True)),
    ("missing-param-annotation", "parameter 'n' has no annotation", "T.handle",
     kernel("A_ptr: T.handle, n", "T.device_entry()", mark_def=True)),
    ("fp8-scalar-param", "float8_e4m3 scalars cannot be passed", "T.float16",
     kernel("x: T.float8_e4m3", "T.device_entry()", mark_def=True)),
    ("assign-scalar-param", "'n' is a loop or thread variable (or a size or parameter)", None,
     kernel("n: T.int32", "T.device_entry()", "n = 4  # <-")),
    ("size-not-bindable", "symbolic size 'Q' is not, on its own, a dimension or stride",
     "use Q alone", kernel("A_ptr: T.handle", "Q = T.int32()  # <-",
                           "A = T.match_buffer(A_ptr, (Q * 2,), \"int32\")",
                           "T.device_entry()")),
    ("size-after-entry", "must be declared before T.device_entry()", None,
     kernel("A_ptr: T.handle", "A = T.match_buffer(A_ptr, (4,), \"int32\")", "T.device_entry()",
            "Q = T.int32()  # <-")),
    ("size-float", "T.float32() cannot be a symbolic size", "T.int32()",
     kernel("A_ptr: T.handle", "Q = T.float32()  # <-")),
    ("size-in-alloc", "the shape of T.alloc_shared must be known at compile time",
     "only T.match_buffer takes symbolic sizes",
     kernel("A_ptr: T.handle", "Q = T.int32()", "A = T.match_buffer(A_ptr, (Q,), \"int32\")",
            "T.device_entry()", "S = T.alloc_shared((Q,), \"int32\")  # <-")),
    ("size-with-layout", "a buffer with symbolic sizes cannot also take a layout=", "strides=",
     kernel("A_ptr: T.handle", "Q = T.int32()",
            "A = T.match_buffer(A_ptr, (Q,), \"int32\", layout=TileLayout(S[(4,)]))  # <-",
            "T.device_entry()")),
    ("thread-extent-symbolic", "T.thread_id takes a list of one positive compile-time int",
     None, kernel("A_ptr: T.handle", "Q = T.int32()",
                  "A = T.match_buffer(A_ptr, (Q,), \"int32\")", "T.device_entry()",
                  "tid = T.thread_id([Q])  # <-")),
]


def test_corpus_is_distinct():
    assert len({c[1] for c in CASES}) == len(CASES), "every case has its own message"


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_language_core_error(case):
    _, message, hint, src = case
    with pytest.raises(tw.TilewiseError) as info:
        from_source(src, filename=FILE, env={"WIDTH": 4})
    check_error(info.value, message, hint, src, FILE)
