"""examples/gemm_blackwell.py: the Blackwell GEMM (warp-specialised producer / MMA / epilogue,
TMA loads into an mbarrier ring, a persistent tile loop, tcgen05.mma issued by one elected
thread, the accumulator read back with tcgen05.ld) assembled for sm_100a and executed by the
simulator —
no Blackwell GPU exists here. Exactness: every element of C within one output rounding of
the float64 product (gemm_blackwell.check)."""

import time

import gemm_blackwell as G
import numpy as np
import pytest

import tilewise as tw
from tilewise.pipeline import explain, lower

TARGET = "sm_100a"


def test_256_cubed_bf16_matches_numpy_within_30_seconds():
    a, b, c = G.inputs(np.random.default_rng(0), 256, 256, 256)
    k = G.make_gemm(256, 256, 256)
    start = time.process_time()  # CPU time: the budget holds however busy the machine is
    tw.simulate(k, a, b, c, target=TARGET)
    elapsed = time.process_time() - start
    assert G.check(c, a, b) <= 1.0
    assert elapsed < 30, f"simulated in {elapsed:.1f} CPU s"


def test_the_cubin_assembles_and_the_log_shows_the_tcgen05_decisions():
    k = G.make_gemm(256, 256, 256)
    kern = tw.compile(k, TARGET)
    assert kern.cubin[:4] == b"\x7fELF"
    ptx = kern.ptx
    n = ptx.count("tcgen05.mma.cta_group::1.kind::f16")  # a stage is 4 x K16 (LLVM may unroll)
    assert n >= 4 and n % 4 == 0
    for word in ("tcgen05.commit.cta_group::1", "tcgen05.ld.sync.aligned.32x32b.x32",
                 "tcgen05.alloc", "tcgen05.dealloc", "mbarrier.try_wait.parity",
                 "cp.async.bulk.tensor.2d", "mbarrier.arrive.expect_tx"):
        assert word in ptx, word
    log = lower(k, TARGET).dispatch_log
    assert [d.info for d in log if d.chosen == "tma"] == [
        ["1 TMA load(s) of a 2-D box 128x64, 128B swizzle, oob zero (16384 bytes each)"],
        ["2 TMA load(s) of a 2-D box 64x64, 128B swizzle, oob zero (8192 bytes each)"]]
    chosen = {d.chosen: d.info for d in log}
    assert chosen["tcgen05"] == ["4 x tcgen05.mma.cta_group::1.kind::f16 M128 N128 K16 (D "
                                 "datapath D; A K-major, swizzle 128; B MN-major, swizzle 128)"]
    assert chosen["tcgen05_ldst"] == ["tcgen05.ld datapath D + run-time column: .32x32b.x32 "
                                      "row 0 col 0 regs 0..31"]
    text = explain(k, TARGET)
    assert "gemm_async" in text and "tcgen05" in text


@pytest.mark.parametrize("M, N, K, kw", [
    (200, 72, 40, {}),  # edge tiles: boxes zero-filled by the copy engine, guarded stores
    (130, 100, 30, dict(BN=64)),  # rows not 16-byte aligned (no tensor map): element loads
    (256, 128, 128, dict(BN=64, ctas=1, STAGES=2)),  # one CTA loops over 8 tiles
    (64, 40, 24, dict(dtype="float16")),
])
def test_any_size(M, N, K, kw):
    dtype = kw.pop("dtype", "bfloat16")
    a, b, c = G.inputs(np.random.default_rng(M + N + K), M, N, K, dtype)
    tw.simulate(G.make_gemm(M, N, K, dtype, **kw), a, b, c, target=TARGET)
    assert G.check(c, a, b) <= 1.0
