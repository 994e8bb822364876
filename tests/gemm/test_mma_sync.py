"""gemm -> mma_sync with its operands loaded by copy -> ld_stmatrix: every input type and
accumulator, one warp and warps of a warpgroup / CTA, swizzled shared tiles, run-time
``accum``; the simulator against numpy, the PTX and cubins per target, and (marked gpu) the
H200 against both.

Tolerance. The simulator's order is documented (docs/simulator.md): per K-step, C =
round_acc(C + the step's sum, exact in float64). The inputs here (|x| >= 1e-3, at most 11
significant bits) make every step's float64 sum exact whatever its order, so the simulator
must equal ``kernels_mma.reference`` (which rounds per K-step) bit for bit. The GPU's
tensor cores round inside a step in their own way: they are compared at 1e-5 of the largest
|C| for float32 accumulators, one float16 ulp of the largest |C| per K-step for float16,
exactly for integers."""

import numpy as np
import pytest

import kernels_mma as G
import tilewise as tw
from executors import run
from tilewise.pipeline import lower
from tilewise.ptx import mma

# (id, kernel arguments, simulation target)
CASES = [
    ("f16-one-mma", dict(M=16, N=8, K=16), "sm_80"),
    ("f16-tiles-runtime-accum", dict(M=32, N=16, K=64, chunks=2), "sm_80"),
    ("f16-f16acc-stmatrix", dict(M=32, N=16, K=32, acc="float16", store="stmatrix"), "sm_90a"),
    ("bf16-cta-2x2-warps", dict(M=64, N=32, K=32, scope="cta", a="bfloat16"), "sm_80"),
    ("f16-wg-4-warps-accum", dict(M=64, N=16, K=32, scope="wg", accum=True), "sm_80"),
    ("tf32", dict(M=32, N=16, K=32, a="float32"), "sm_80"),
    ("s8", dict(M=32, N=16, K=64, a="int8", acc="int32"), "sm_80"),
    ("s8-u8-accum", dict(M=32, N=16, K=64, a="int8", b="uint8", acc="int32", accum=True),
     "sm_80"),
    ("u8-wg", dict(M=64, N=8, K=32, a="uint8", acc="int32", scope="wg"), "sm_80"),
    ("e4m3", dict(M=32, N=16, K=64, a="float8_e4m3"), "sm_89"),
    ("e4m3-e5m2", dict(M=16, N=16, K=32, a="float8_e4m3", b="float8_e5m2"), "sm_89"),
    ("e5m2-accum", dict(M=16, N=8, K=64, a="float8_e5m2", accum=True, chunks=2), "sm_89"),
    ("f16-swizzle128-chunks", dict(M=32, N=64, K=64, swizzle=128, chunks=2), "sm_80"),
    ("bf16-swizzle64-B-col", dict(M=32, N=16, K=64, a="bfloat16", swizzle=64, b_major="col"),
     "sm_80"),
    ("f16-swizzle32-wg", dict(M=64, N=32, K=32, swizzle=32, scope="wg"), "sm_90a"),
]


def _types(kw):
    a = kw.get("a", "float16")
    return a, kw.get("b") or a, kw.get("acc", "float32")


def _run(kw, target, seed, executor):
    a_t, b_t, acc = _types(kw)
    a, b, c0 = G.inputs(np.random.default_rng(seed), kw["M"], kw["N"], kw["K"], a_t, b_t, acc)
    c = c0.copy() if kw.get("accum") else G.poison(c0)
    run(executor, G.make_mma(**kw), [a, b, c], target)
    ref = G.reference(a, b, c0, a_t, b_t, acc, kw.get("accum", False), mma.k_of(a_t))
    return c, ref


@pytest.mark.parametrize("cid,kw,target", CASES, ids=[c[0] for c in CASES])
def test_mma_is_the_documented_order(executor, cid, kw, target):
    """The simulator (for the case's target) equals the reference bit for bit; the H200
    (sm_90a) is within ``_tol`` of the reference and of the simulator run for sm_90a."""
    c, ref = _run(kw, target, 1, executor)
    if executor == "sim":
        assert np.array_equal(c, ref), np.abs(c.astype(np.float64) - ref).max()
        return
    sim, _ = _run(kw, "sm_90a", 1, "sim")
    big = np.abs(ref.astype(np.float64)).max()
    assert np.abs(c.astype(np.float64) - ref).max() <= _tol(kw) * big
    assert np.abs(c.astype(np.float64) - sim.astype(np.float64)).max() <= _tol(kw) * big


@pytest.mark.parametrize("cid,kw,target", [c for c in CASES if not c[1].get("accum")],
                         ids=[c[0] for c in CASES if not c[1].get("accum")])
def test_mma_in_the_simulator_is_close_to_the_exact_product(cid, kw, target):
    a_t, b_t, acc = _types(kw)
    a, b, c0 = G.inputs(np.random.default_rng(1), kw["M"], kw["N"], kw["K"], a_t, b_t, acc)
    c = G.poison(c0)
    tw.simulate(G.make_mma(**kw), a, b, c, target=target)
    exact = G.as_f64(a, a_t) @ G.as_f64(b, b_t)
    assert np.abs(c.astype(np.float64) - exact).max() <= _tol(kw) * np.abs(exact).max()


def _tol(kw) -> float:
    """Relative to the largest |C|: exact for integers, one float16 ulp per K-step, 1e-5
    for float32 (K <= 64: a few float32 roundings)."""
    a_t, _, acc = _types(kw)
    if acc == "int32":
        return 0.0
    if acc == "float16":
        return kw["K"] // mma.k_of(a_t) * 2.0**-10
    return 1e-5


def _near_overflow():
    """C just below 2^31 plus 32 * 127 * 127: the int32 accumulator wraps to negative."""
    a = np.full((16, 32), 127, np.int8)
    b = np.full((32, 8), 127, np.int8)
    c = np.full((16, 8), 2**31 - 10, np.int32)
    want = ((c.astype(np.int64) + 32 * 127 * 127 + 2**31) % 2**32 - 2**31).astype(np.int32)
    return G.make_mma(M=16, N=8, K=32, a="int8", acc="int32", accum=True), [a, b, c], want


def test_int32_accumulators_wrap_around(executor):
    func, arrays, want = _near_overflow()
    run(executor, func, arrays, "sm_80")
    assert np.array_equal(arrays[2], want) and (want < 0).all()




# ---- dispatch decisions, PTX and cubins ------------------------------------------------------
def _decisions(func, target):
    return {d.call.split("(")[0] + ":" + d.call.split("(")[1].split("[")[0]: (d.chosen, d.info)
            for d in lower(func, target).dispatch_log}


def test_the_log_names_the_instructions():
    log = _decisions(G.make_mma(M=32, N=16, K=32), "sm_80")
    assert log["Tx.warp.gemm:Cr"] == ("mma_sync",
                                      ["8 x mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"])
    assert log["Tx.warp.copy:Ar"] == ("ld_stmatrix", ["ldmatrix: .x4 regs 0..3, .x4 regs 4..7, "
                                                      ".x4 regs 8..11, .x4 regs 12..15"])
    assert log["Tx.warp.copy:Br"] == ("ld_stmatrix",
                                      ["ldmatrix: .x4.trans regs 0..3, .x4.trans regs 4..7"])
    wg = _decisions(G.make_mma(M=64, N=16, K=16, scope="wg"), "sm_80")
    assert wg["Tx.wg.gemm:Cr"][1] == [
        "2 x mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 per warp, 4 warps"]


PTX_CASES = [
    # (kernel arguments, target, PTX lines that must appear, with their count)
    (dict(M=32, N=16, K=32), "sm_80",
     {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32": 8,
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16": 4,
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16": 2}),
    (dict(M=16, N=8, K=16, a="bfloat16"), "sm_80",
     {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32": 1,
      "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16": 1}),
    (dict(M=16, N=8, K=16, acc="float16", store="stmatrix"), "sm_90a",
     {"mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16": 1,
      "stmatrix.sync.aligned.m8n8.x2.shared.b16": 1}),
    (dict(M=16, N=8, K=8, a="float32"), "sm_80",
     {"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32": 1}),
    (dict(M=16, N=8, K=32, a="uint8", b="int8", acc="int32"), "sm_80",
     {"mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32": 1}),
    (dict(M=16, N=8, K=32, a="float8_e5m2", b="float8_e4m3"), "sm_89",
     {"mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e4m3.f32": 1}),
    (dict(M=64, N=16, K=32, a="float8_e4m3", scope="wg"), "sm_90a",
     {"mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32": 2}),
]


@pytest.mark.parametrize("kw,target,lines", PTX_CASES,
                         ids=[f"{c[1]}-{c[0].get('a', 'float16')}-{c[0].get('acc', 'f32')}"
                              for c in PTX_CASES])
def test_ptx_has_the_instructions_and_assembles(kw, target, lines):
    k = tw.compile(G.make_mma(**kw), target)
    ptx = k.source("ptx")
    for line, n in lines.items():
        assert sum(1 for ln in ptx.splitlines() if ln.split() and ln.split()[0] == line) == n, \
            (line, [ln for ln in ptx.splitlines() if "mma" in ln or "matrix" in ln])
    assert k.cubin[:4] == b"\x7fELF"


def test_every_form_of_the_table_assembles_on_the_first_target_that_has_it():
    """Each of the 14 mma.sync type combinations, lowered by itself (T.ptx.mma_sync /
    mma_sync_fp8 in a one-warp kernel), selects and assembles on sm_80 / sm_89."""
    from kernels_mma import direct_mma

    for a in mma.IN_TYPE:
        for b in mma.FAMILIES[a]:
            for acc in mma.ACCUMULATORS[a]:
                target = "sm_89" if a in mma.FP8 else "sm_80"
                k = tw.compile(direct_mma(a, b, acc), target)
                assert mma.ptx_spelling(a, b, acc) in k.source("ptx")
                assert k.cubin[:4] == b"\x7fELF"
