"""Every defect the fuzzer found, as a test: the user mistake behind it is now a clear
TilewiseError at the user's line (marked ``# <-``), or the kernel now gives the right
answer."""

import numpy as np
import pytest

import tilewise as tw
from errcheck import check_error
from tilewise import from_source

FILE = "found.py"
HEAD = '''
@T.prim_func
def k(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "float16")
    B = T.match_buffer(B_ptr, (128,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
'''


def body(*lines: str, head: str = HEAD) -> str:
    return head + "".join("    " + ln + "\n" for ln in lines)


PARSE = [
    ("cast-of-a-buffer", body("B[tid] = T.cast(A, 'float16')  # <-"),
     "T.cast converts a value, not buffer 'A'", "index a buffer to get a value: A[i]"),
    ("int-literal-beyond-float16", body("B[tid] = T.float16(1048576)  # <-"),
     "the constant 1048576.0 does not fit T.float16 (float16 overflows to infinity)", None),
    ("slice-bound-a-tuple", body("Tx.cta.copy(B[(64,):(0,)], A[0:64])  # <-"),
     "slice 0 of 'B' has the bound (64,), not an integer", "integer bounds"),
    ("slice-bound-a-float", body("Tx.cta.copy(B[0.5:3], A[0:4])  # <-"),
     "slice 0 of 'B' has the bound 0.5, not an integer", None),
    ("static-range-too-long", body("for j in T.static_range(5000):  # <-", "    B[tid] = A[tid]"),
     "a loop unrolled while parsing (T.static_range or a Python sequence) has 5000 iterations;"
     " tilewise unrolls at most 4096", "use range(...)"),
    ("comprehension-too-long", body("x = [i for i in range(100000)]  # <-"),
     "a compile-time comprehension has 100000 iterations; tilewise unrolls at most 65536", None),
    ("huge-shift", body("n = 1 << 100000  # <-"),
     "1 << 100000 is too large to compute at compile time", "check the constants"),
    ("huge-power", body("n = 3 ** 1000000  # <-"),
     "3 ** 1000000 is too large to compute at compile time", None),
    ("huge-repetition", body("s = 'float16' * 100000000  # <-"),
     "is too large to compute at compile time", None),
    ("grid-x-too-large", body("B[tid] = A[tid]", head=HEAD.replace(
        "    T.device_entry()\n", "    T.device_entry()\n    bx = T.cta_id([1 << 31])  # <-\n")),
     "T.cta_id declares 2147483648 CTAs in dimension x; a grid has at most 2147483647 there",
     "spread the CTAs over x, y and z"),
    ("grid-y-too-large", body("B[tid] = A[tid]", head=HEAD.replace(
        "    T.device_entry()\n", "    T.device_entry()\n    bx, by = T.cta_id([1, 70000])  # <-\n")),
     "T.cta_id declares 70000 CTAs in dimension y; a grid has at most 65535 there", None),
]


@pytest.mark.parametrize("case", PARSE, ids=[c[0] for c in PARSE])
def test_parse_time_findings(case):
    _, src, message, hint = case
    with pytest.raises(tw.TilewiseError) as info:
        from_source(src, filename=FILE)
    check_error(info.value, message, hint, src, FILE)


COMPILE = [
    ("warpgroup-call-in-a-small-cta",
     body('r = T.alloc_local((8,), "float16")', "Tx.wg.copy(B[0:128], A[0:128])  # <-").replace(
         "T.thread_id([128])", "T.thread_id([32])"),
     "runs on whole warpgroups of 128 threads: only 32 of the 128 threads of group 0 (threads "
     "0..127) are active (the CTA has only 32 threads there)",
     "declare a multiple of 128 threads"),
    ("warpgroup-call-on-the-partial-warpgroup",  # 288 threads: warpgroups 0, 1 and a warp
     body("if tid >= 256:", "    Tx.wg.copy(B[0:128], A[0:128])  # <-").replace(
         "T.thread_id([128])", "T.thread_id([288])"),
     "runs on whole warpgroups of 128 threads: only 32 of the 128 threads of group 2 (threads "
     "256..383) are active (the CTA has only 32 threads there)",
     "call it from the whole warpgroups only (this CTA's 288 threads make 2 of 128 and one "
     "of 32)"),
    ("tcgen05-cta-groups-mixed",
     body('a = T.alloc_shared((1,), "uint32")', "if tid < 32:",
          "    T.ptx.tcgen05.alloc(T.address_of(a[0]), n_cols=32, cta_group=2)",
          "    T.ptx.tcgen05.dealloc(a[0], n_cols=32, cta_group=1)  # <-"),
     "T.ptx.tcgen05.dealloc uses cta_group=1 but T.ptx.tcgen05.alloc at found.py:10:8 uses "
     "cta_group=2", "the same cta_group"),
]


@pytest.mark.parametrize("case", COMPILE, ids=[c[0] for c in COMPILE])
def test_compile_time_findings(case):
    _, src, message, hint = case
    with pytest.raises(tw.TilewiseError) as info:
        tw.compile(from_source(src, filename=FILE), target="sm_100a").cubin
    check_error(info.value, message, hint, src, FILE)


def test_warpgroup_calls_on_the_whole_warpgroups_of_a_288_thread_cta_are_valid():
    src = body("if tid < 128:", "    Tx.wg.copy(B[0:64], A[0:64])", "elif tid < 256:",
               "    Tx.wg.copy(B[64:128], A[64:128])").replace("T.thread_id([128])",
                                                              "T.thread_id([288])")
    func = from_source(src, filename=FILE)
    assert all(d.chosen for d in tw.compile(func, target="sm_90a").dispatch_log)
    a, b = np.arange(128).astype(np.float16), np.zeros(128, np.float16)
    assert tw.simulate(func, a, b, grid=1).ok and (b == a).all()


@pytest.mark.parametrize("grid, message", [
    (0, "grid=0: every dimension needs at least one CTA"),
    ((2, -1), "grid=(2, -1): every dimension needs at least one CTA"),
    ((1, 1, 1, 1), "grid=(1, 1, 1, 1) is not a grid"),
    ("a", "grid='a' is not a grid"),
    ((1.5,), "grid=(1.5,) is not a grid"),
])
def test_simulate_checks_the_grid(grid, message):
    k = from_source(body("B[tid] = A[tid]"), filename=FILE)
    with pytest.raises(tw.LaunchError) as info:
        tw.simulate(k, np.zeros(128, np.float16), np.zeros(128, np.float16), grid=grid)
    assert message in str(info.value)
    assert ("tuple of 1 to 3 ints" if "not a grid" in message else "extents >= 1") in \
        info.value.hint


def test_an_endless_loop_stops_at_the_simulators_bound():
    from tilewise.knobs import override

    k = from_source(body("n: T.int32 = 1", "while n > 0:  # <-", "    n = n + 2",
                         "B[tid] = A[tid]"), filename=FILE)
    with override(sim_max_loop=1000):
        with pytest.raises(tw.SimulationError) as info:
            tw.simulate(k, np.zeros(128, np.float16), np.zeros(128, np.float16))
    assert "a loop ran more than 1000 iterations (does its condition ever become false?)" \
        in str(info.value)
    assert info.value.span.line == 9 and "TILEWISE_SIM_MAX_LOOP" in info.value.hint


def test_match_buffer_lines_in_another_order_than_the_parameters():
    src = HEAD.replace('''    A = T.match_buffer(A_ptr, (128,), "float16")
    B = T.match_buffer(B_ptr, (128,), "float16")''', '''    B = T.match_buffer(B_ptr, (64,), "float16")
    A = T.match_buffer(A_ptr, (128,), "float16")''') + "    if tid < 64:\n        B[tid] = A[tid]\n"
    a, b = np.arange(128).astype(np.float16), np.zeros(64, np.float16)
    tw.simulate(from_source(src, filename=FILE), a, b)  # arrays in parameter order
    assert (b == a[:64]).all()


def test_maxntid_is_checked_but_not_emitted_beside_reqntid():
    k = tw.compile(from_source(body("B[tid] = A[tid]"), filename=FILE), maxntid=256)
    assert ".reqntid 128" in k.ptx and ".maxntid" not in k.ptx and len(k.cubin) > 0


def test_a_register_limit_below_an_instructions_need_is_the_users_error():
    """ptxas C7602 (a wgmma accumulator of 128 registers under maxnreg=64) is a limit the
    user set, not a code generator defect (found: examples/gemm_hopper.py:1005:2301)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    from gemm_hopper import make_gemm

    k = tw.compile(make_gemm(), maxnreg=64)
    with pytest.raises(tw.CompileError) as info:
        k.cubin  # noqa: B018 - nvJitLink assembles the PTX
    assert "the kernel allows 64 registers per thread, but one of its instructions needs" \
        in str(info.value)
    assert "defect" not in str(info.value) + info.value.hint
    assert "maxnreg=" in info.value.hint
