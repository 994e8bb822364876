"""Constant operands the simulator would refuse when the line runs are refused when the
kernel is compiled (passes/check_operands.py), and integers too large for any type are
script errors, not Python's ValueError: each at the user's line (``# <-``)."""

import pytest

import tilewise as tw
from errcheck import check_error
from tilewise import from_source

FILE = "opkernel.py"

HEAD = '''
@T.prim_func
def k(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    T.device_entry()
    CLUSTER
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    bar = T.alloc_shared((1,), "uint64")
'''


def body(*lines: str, cluster: int = 0) -> str:
    head = HEAD.replace("CLUSTER", f"T.cta_id([{cluster}])\n    T.cta_id_in_cluster([{cluster}])"
                        if cluster else "pass")
    return head + "".join("    " + ln + "\n" for ln in lines)


ADDR = "T.address_of(bar[0])"
COMPILE = [
    ("bar-id", "bar.sync: barrier id 16 is not one of 0..15", "ids 1..15",
     body("T.ptx.bar.sync(16, 128)  # <-")),
    ("bar-count-not-warps", "bar.sync 1, 48: the thread count of a named barrier must be a "
     "positive multiple of 32 (whole warps)", "count whole warps",
     body("T.ptx.bar.sync(1, 48)  # <-")),
    ("bar-count-over-cta", "bar.arrive 2, 256: the thread count of a named barrier must be a "
     "positive multiple of 32 (whole warps), up to the CTA's 128 threads", None,
     body("T.ptx.bar.arrive(2, 256)  # <-")),
    ("mbarrier-count", "mbarrier.init: count 0 is outside [1, 1048575]", "arrivals",
     body(f"T.ptx.mbarrier.init({ADDR}, 0)  # <-")),
    ("expect-tx-20-bits", "mbarrier.expect_tx: 2097152 transaction bytes are more than a "
     "phase counts", "several phases", body(f"T.ptx.mbarrier.expect_tx({ADDR}, 1 << 21)  # <-")),
    ("cp-async-src-size", "cp_async: src_size 32 is outside [0, 16]", "0..16",
     body("T.ptx.cp_async(T.address_of(S[0]), T.address_of(A[0]), 16, 32)  # <-")),
    ("bulk-size", "cp_async.bulk.s2g: size 100 is not a positive multiple of 16 bytes", None,
     body("T.ptx.cp_async.bulk.s2g(T.address_of(A[0]), T.address_of(S[0]), 100)  # <-")),
    ("remote-without-cluster", "remote= 3 names a CTA of a cluster, but the kernel declares "
     "no cluster", "T.cta_id_in_cluster",
     body(f"T.ptx.mbarrier.arrive.expect_tx({ADDR}, 0, remote=3)  # <-")),
    ("remote-outside-cluster", "remote= 4 is outside the cluster of 4 CTA(s) (4, 1, 1)",
     "0..3", body(f"T.ptx.mbarrier.arrive.expect_tx({ADDR}, 0, remote=4)  # <-", cluster=4)),
    ("dsmem-rank-outside-cluster", "cp_async.bulk.s2c: the destination rank 2 is outside the "
     "cluster of 2 CTA(s)", None,
     body(f"T.ptx.cp_async.bulk.s2c(T.address_of(S[0]), T.address_of(S[0]), 64, {ADDR}, 2)"
          "  # <-", cluster=2)),
    ("bar-count-a-float", "bar.sync: operand 'count' is an integer (int32), got the float "
     "1e+300", "pass an int", body("T.ptx.bar.sync(1, 1e300)  # <-")),  # fuzz 3396:2303
    ("mbarrier-count-a-float", "mbarrier.init: operand 'count' is an integer (int32), got the "
     "float 64.0", None, body(f"T.ptx.mbarrier.init({ADDR}, 64.0)  # <-")),
]

HUGE = [
    ("shift", "1 << 20000 is an integer of 20001 bits; no tilewise type holds more than 64",
     body("A[tid] = T.float16(1 << 20000)  # <-")),
    ("power", "10 ** 5000 is an integer of 16610 bits", body("A[tid] = 10 ** 5000  # <-")),
    ("from-python", "'BIG' is an integer of 20001 bits; no tilewise type holds more than 64",
     body("T.ptx.bar.sync(1, BIG)  # <-")),
    ("in-shape", "'BIG' is an integer of 20001 bits",
     body('X = T.alloc_shared((BIG,), "int32")  # <-')),
    ("static-range", "has 9223372036854775808 iterations; tilewise unrolls at most",
     body("for i in T.static_range(1 << 100):  # <-", "    A[tid] = 1.0")),
    ("range-bound", "the range bound <an integer of about 31 digits> does not fit int64",
     body("for i in range(1 << 100):  # <-", "    A[tid] = 1.0")),
    ("does-not-fit", "the constant <an integer of about 31 digits> does not fit T.int32",
     body("x = T.int32(1 << 100)  # <-")),
]


@pytest.mark.parametrize("case", COMPILE, ids=[c[0] for c in COMPILE])
@pytest.mark.parametrize("run", ["compile", "simulate"])
def test_a_constant_operand_the_simulator_refuses_is_refused_when_compiling(case, run):
    _, message, hint, src = case
    func = from_source(src, filename=FILE)
    with pytest.raises(tw.CompileError) as info:
        if run == "compile":
            tw.compile(func, "sm_90a")
        else:
            import numpy as np
            tw.simulate(func, np.zeros(1024, np.float16))
    check_error(info.value, message, hint, src, FILE)


@pytest.mark.parametrize("case", HUGE, ids=[c[0] for c in HUGE])
def test_an_integer_too_large_for_any_type_is_a_script_error(case):
    _, message, src = case
    with pytest.raises(tw.ScriptError) as info:
        tw.compile(from_source(src, filename=FILE, env={"BIG": 1 << 20000}), "sm_90a")
    check_error(info.value, message, None, src, FILE)


def _many_scalars(n: int) -> str:
    params = ", ".join(["A_ptr: T.handle"] + [f"s{i}: T.int32" for i in range(n)])
    return (f"\n@T.prim_func\ndef k({params}):  # <-\n"
            "    A = T.match_buffer(A_ptr, (4,), 'int32')\n    T.device_entry()\n"
            f"    tid = T.thread_id([4])\n    A[tid] = s0 + s{n - 1}\n")


def test_too_many_parameters_is_a_clear_error_naming_the_limit():
    from tilewise.pipeline import lower

    src = _many_scalars(1087)  # 8 + 1087 * 4 = 4356 bytes
    func = from_source(src, filename=FILE)
    with pytest.raises(tw.CompileError) as info:
        tw.compile(func, "sm_90a")  # ptxas: "Kernel parameter size larger than 4352 bytes"
    check_error(info.value, "the kernel's 1088 parameters take 4356 bytes of parameter space; "
                "PTX ISA 8.0 allows 4352 bytes", "gather scalars into one array", src, FILE)
    lower(func, "sm_100a")  # PTX ISA 8.6: 32764 bytes
    assert lower(from_source(_many_scalars(1086), filename=FILE), "sm_90a")  # 4352: fits
