"""gemm_async -> tcgen05: the tcgen05.mma variant — descriptors derived from the operand
layouts, D and F datapaths, every kind, A from shared or tensor memory, a run-time accum —
simulated against numpy, lowered to PTX and assembled for sm_100a. No Blackwell GPU exists
here: the simulator is the executor.

Tolerance: the simulator adds each instruction's exact K-step sum (float64) to the float32
accumulator with one rounding; compared with a float64 reference at 1e-5 of the largest |C|
(K <= 128: a few float32 roundings)."""

import kernels_tcgen05_mma as KM
import numpy as np
import pytest

import tilewise as tw
from tilewise.pipeline import lower

TARGET = "sm_100a"
CASES = [
    ("bf16-M128-Ksw128-MNsw128", dict()),
    ("bf16-M64-F-lower-half", dict(M=64)),
    ("bf16-M64-F-upper-half-accum", dict(M=64, half=1, accum=True)),
    ("f16-accum", dict(dtype="float16", accum=True)),
    ("bf16-A-MNmajor-sw64", dict(a_major="col", a_swz=64)),
    ("bf16-B-Kmajor", dict(b_major="col")),
    ("f16-A-MNmajor-B-Kmajor", dict(dtype="float16", a_major="col", b_major="col")),
    ("tf32-Kmajor", dict(dtype="float32", K=32, b_major="col")),
    ("e4m3", dict(dtype="float8_e4m3", K=128, b_major="col")),
    ("e4m3xe5m2-sw64", dict(dtype="float8_e4m3", b_dtype="float8_e5m2", K=64, b_major="col",
                            a_swz=64, b_swz=64)),
    ("bf16-N8-B-noswizzle", dict(N=8, b_swz=0)),
    ("bf16-N256-K16", dict(N=256, K=16, a_swz=32)),
    ("bf16-no-swizzle", dict(a_swz=0, b_swz=0)),
    ("bf16-accumulator-at-column-64", dict(c_col0=64, N=32, accum=True, b_swz=64)),
]


def _shape(kw):
    return dict(M=kw.get("M", 128), N=kw.get("N", 64), K=kw.get("K", 64),
                dtype=kw.get("dtype", "bfloat16"), b_dtype=kw.get("b_dtype"))


def _check(c, a, b, c0, kw):
    ref = KM.reference(a, b, c0, kw.get("accum", False), kw.get("dtype") == "float32")
    err = np.abs(c.astype(np.float64) - ref).max() / np.abs(ref).max()
    assert err < 1e-5, err


@pytest.mark.parametrize("cid, kw", CASES, ids=[c[0] for c in CASES])
def test_tcgen05_mma_in_the_simulator(cid, kw):
    a, b, c = KM.inputs(np.random.default_rng(11), **_shape(kw))
    c0 = c.copy()
    if not kw.get("accum"):
        c[:] = np.nan  # poisoned: every element must be written
    tw.simulate(KM.make_mma(**kw), a, b, c, target=TARGET)
    _check(c, a, b, c0, kw)


def test_the_log_names_the_forms_and_the_cubin_assembles():
    func = KM.make_mma()
    (d,) = [x for x in lower(func, TARGET).dispatch_log if "gemm_async" in x.call]
    assert d.chosen == "tcgen05"
    assert d.info == ["4 x tcgen05.mma.cta_group::1.kind::f16 M128 N64 K16 (D datapath D; A "
                      "K-major, swizzle 128; B MN-major, swizzle 128)"]
    k = tw.compile(func, TARGET)
    assert k.ptx.count("tcgen05.mma.cta_group::1.kind::f16") == 4
    assert k.cubin[:4] == b"\x7fELF"


def test_the_instruction_descriptor_is_the_tables():
    # bf16 x bf16 -> f32 (1 << 4 | 1 << 7 | 1 << 10), B MN-major (1 << 16), N 64 >> 3 = 8 at
    # bit 17, M 128 >> 4 = 8 at bit 24: written out from PTX ISA Table 42.
    want = 1 << 4 | 1 << 7 | 1 << 10 | 1 << 16 | 8 << 17 | 8 << 24
    text = tw.compile(KM.make_mma(), TARGET).source("lowered")
    assert f"T.uint32({want})" in text
    m64 = tw.compile(KM.make_mma(M=64, half=1), TARGET).source("lowered")
    assert f"T.uint32({want & ~(0x1F << 24) | 4 << 24})" in m64
    assert 'tmem_addr[0] + T.cast(1048576, "uint32")' in m64  # lane field 16 (16 << 16)


def test_a_in_tensor_memory_fed_by_tcgen05_cp():
    func = KM.make_mma_tmem_a(N=64, K=32)
    log = {d.chosen: d.info for d in lower(func, TARGET).dispatch_log}
    assert log["tcgen05_cp"] == ["2 x tcgen05.cp.128x256b (lanes +0, column 128; source "
                                 "K-major, swizzle 64)"]
    assert log["tcgen05"] == ["2 x tcgen05.mma.cta_group::1.kind::f16 M128 N64 K16 (D "
                              "datapath D; A tensor memory; B MN-major, swizzle 128)"]
    a, b, c = KM.inputs(np.random.default_rng(3), K=32)
    c0 = c.copy()
    c[:] = np.nan
    tw.simulate(func, a, b, c, target=TARGET)
    _check(c, a, b, c0, {})
    k = tw.compile(func, TARGET)
    assert "tcgen05.cp.cta_group::1.128x256b" in k.ptx and "], [" in next(
        ln for ln in k.ptx.splitlines() if "tcgen05.mma" in ln)


def test_run_time_stage_and_accum():
    func = KM.make_mma_stages(N=64, KS=32, stages=2)
    text = tw.compile(func, TARGET).source("lowered")
    assert "s_1 > 0, 'f16', 1)" in text  # enable-input-d is the user's run-time value
    a, b, c = KM.inputs(np.random.default_rng(4), K=64)
    c0 = c.copy()
    c[:] = np.nan
    tw.simulate(func, a, b, c, target=TARGET)
    _check(c, a, b, c0, {})


def test_cta_group_2_lowers_to_m256_and_assembles():
    """With cta_group=2 each CTA holds 128 rows of D and N / 2 columns of B; the instruction
    is M = 256 (idesc M >> 4 = 16). Not simulated (no CTA pairs in the simulator)."""
    from tilewise import T, Tx
    from tilewise.layout import S, TCol, TileLayout, TLane

    la, lb = KM.smem_layout(128, 64, 128), KM.smem_layout(64, 64, 128)

    @T.prim_func
    def pair(X_ptr: T.handle):
        X = T.match_buffer(X_ptr, (1,), "uint32")
        T.device_entry()
        tid = T.thread_id([128])
        As = T.alloc_shared((128, 64), "bfloat16", layout=la, align=1024)
        Bs = T.alloc_shared((64, 64), "bfloat16", layout=lb, align=1024)
        bar = T.alloc_shared([1], "uint64")
        tm = T.decl_buffer((128, 128), "float32", scope="tmem", allocated_addr=X[0],
                           layout=TileLayout(S[(128, 128) : (1 @ TLane, 1 @ TCol)]))
        if tid == 0:
            Tx.gemm_async(tm[:, :], As[:, :], Bs[:, :], cta_group=2)
            T.ptx.tcgen05.commit(T.address_of(bar[0]), cta_group=2)

    low = lower(pair, TARGET)
    (d,) = [x for x in low.dispatch_log if x.chosen == "tcgen05"]
    assert d.info[0].startswith("4 x tcgen05.mma.cta_group::2.kind::f16 M256 N128 K16")
    want = 1 << 4 | 1 << 7 | 1 << 10 | 1 << 16 | 16 << 17 | 16 << 24
    k = tw.compile(pair, TARGET)
    assert f"T.uint32({want})" in k.source("lowered")
    assert k.ptx.count("tcgen05.mma.cta_group::2.kind::f16") == 4 and k.cubin[:4] == b"\x7fELF"
