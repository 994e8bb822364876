"""gemm_async -> wgmma_rs: wgmma with A from registers (the wgmma A fragment), its layout
atom against the PTX ISA's formula, the simulator against numpy, the decline reasons, the
hazards on A's registers, and (marked gpu) the H200 against numpy and the simulator.

Tolerance as tests/gemm/test_wgmma.py: 1e-5 of the largest |C| against float64."""

import numpy as np
import pytest

import kernels_gemm as G
import tilewise as tw
from tilewise.errors import DispatchError, HazardError
from tilewise.layout import S, mma_fragment, tid_in_wg, wgmma_a_fragment, wgmma_accumulator
from tilewise.layout.atoms import wgmma_accumulator_rows
from tilewise.pipeline import lower
from tilewise.ptx import wgmma

CASES = [
    ("bf16-B-MNmajor", dict()),
    ("f16-B-MNmajor", dict(dtype="float16")),
    ("bf16-N128-K128", dict(N=128, K=128)),
    ("bf16-B-Kmajor", dict(b_major="col")),
    ("bf16-N256-K16", dict(N=256, K=16)),
    ("bf16-accum", dict(accum=True)),
]


def _run(kw, executor="sim", seed=1):
    shape = dict(N=kw.get("N", 64), K=kw.get("K", 64), dtype=kw.get("dtype", "bfloat16"))
    a, b, c = G.wgmma_inputs(np.random.default_rng(seed), **shape)
    c0 = c.copy()
    k = G.make_wgmma_rs(**kw)
    if executor == "sim":
        tw.simulate(k, a, b, c)
    else:
        from tilewise.runner import _run_gpu

        _run_gpu(k, [a, b, c], "sm_90a")
    ref = G.wgmma_reference(a, b, c0, kw.get("accum", False))
    return c, ref, (a, b, c0)


@pytest.mark.parametrize("cid,kw", CASES, ids=[c[0] for c in CASES])
def test_wgmma_with_a_from_registers_in_the_simulator(cid, kw):
    c, ref, _ = _run(kw)
    assert np.abs(c.astype(np.float64) - ref).max() / np.abs(ref).max() < 1e-5


@pytest.mark.gpu
@pytest.mark.parametrize("cid,kw", CASES, ids=[c[0] for c in CASES])
def test_wgmma_with_a_from_registers_on_the_gpu(cid, kw):
    c, ref, (a, b, c0) = _run(kw, "gpu", seed=2)
    assert np.abs(c.astype(np.float64) - ref).max() / np.abs(ref).max() < 1e-5
    c_sim = c0.copy()
    tw.simulate(G.make_wgmma_rs(**kw), a, b, c_sim)
    assert np.abs(c - c_sim).max() <= 1e-5 * np.abs(c_sim).max()


def test_the_a_fragment_is_the_isa_formula_and_the_accumulator_layout():
    """a_i of thread t at a_coords(t, i), K-step s at elements 8s..8s+7: the same places as
    the accumulator of a 64 x K product (so a cast accumulator is an A operand)."""
    for k in (16, 64, 256):
        frag = wgmma_a_fragment(k)
        assert frag == wgmma_accumulator(k)
        t = np.arange(128)[:, None]
        for s in range(k // 16):
            rows, cols = wgmma.a_coords(t, np.arange(8)[None, :])
            got = frag.apply_np((rows * k + cols + 16 * s).ravel())
            assert np.array_equal(got["m"].reshape(128, 8), 8 * s + np.arange(8)[None, :]
                                  .repeat(128, 0))
    with pytest.raises(tw.TilewiseError, match="no wgmma A fragment of K = 24"):
        wgmma_a_fragment(24)


def test_the_accumulator_rows_layout_holds_each_threads_two_rows():
    rows = wgmma_accumulator_rows()
    got = rows.apply_np(np.arange(64))
    t = got["wid_in_wg"] * 32 + got["laneid"]
    r, _ = wgmma.acc_coords(t, 2 * got["m"])
    assert np.array_equal(r, np.arange(64)) and len(rows.replicas()) == 4


def test_the_log_and_the_ptx_take_a_from_registers():
    func = G.make_wgmma_rs(N=128)
    log = {d.call.split("(")[0]: d for d in lower(func, "sm_90a").dispatch_log}
    d = log["Tx.wg.gemm_async"]
    assert d.chosen == "wgmma_rs"
    assert d.info == ["4 x wgmma m64n128k16 (A from registers; B MN-major, swizzle 128)"]
    assert ("wgmma", 20, "A ('a') is a register tile; the wgmma_rs variant takes A from "
            "registers") in d.tried
    ptx = tw.compile(func, "sm_90a").source("ptx")
    lines = [ln for ln in ptx.splitlines() if "wgmma.mma_async" in ln]
    assert len(lines) == 4 and all(".m64n128k16.f32.bf16.bf16" in ln for ln in lines)
    assert all(ln.count("{") == 2 and ", p, 1, 1, 1;" in ln for ln in lines)  # d, a; trans-b


def test_any_layout_with_the_fragments_places_is_taken():
    """Four warps of mma.sync A fragments (16 rows each) are the wgmma A fragment."""
    kw = dict(a_layout=mma_fragment("A", (64, 64), 16, warps=(4, 1), warp_axis="wid_in_wg"))
    c, ref, _ = _run(kw)
    assert np.abs(c.astype(np.float64) - ref).max() / np.abs(ref).max() < 1e-5


@pytest.mark.parametrize("b_major", ["row", "col"])
def test_trans_b_takes_b_as_n_by_k(b_major):
    """transB=True: B is an (N, K) region (row-major: K-major, as fp8 needs; "col":
    MN-major), C = A @ B.T."""
    rng = np.random.default_rng(3)
    a, _, c = G.wgmma_inputs(rng, N=64, K=64)
    bt = rng.standard_normal((64, 64)).astype(a.dtype)  # (N, K)
    func = G.make_wgmma_rs(trans="B", b_major=b_major)
    d = next(d for d in lower(func, "sm_90a").dispatch_log if "gemm_async" in d.call)
    assert d.chosen == "wgmma_rs"
    assert ("K" if b_major == "row" else "MN") + "-major" in d.info[0]
    tw.simulate(func, a, bt, c)
    ref = G.wgmma_reference(a, bt.T, c)
    assert np.abs(c.astype(np.float64) - ref).max() / np.abs(ref).max() < 1e-5


def test_trans_a_is_declined_for_a_from_registers():
    with pytest.raises(DispatchError, match=r"wgmma_rs .*A from registers is the \(64, K\) wgmma "
                       r"A fragment; transA= gives a transposed A in shared memory"):
        lower(G.make_wgmma_rs(trans="A"), "sm_90a")


def test_a_register_tile_of_another_layout_is_declined_with_the_element():
    func = G.make_wgmma_rs(a_layout=S[(64, 2, 32):(2 @ tid_in_wg, 1 @ tid_in_wg, 1)])
    with pytest.raises(DispatchError, match=r"wgmma_rs .*: A \('a'\): element \(8, 0\) is in "
                       r"thread 16 of the warpgroup, but the wgmma A fragment puts it in thread "
                       r"0 \(give A the layout wgmma_a_fragment\(K\)\)"):
        lower(func, "sm_90a")


HAZARD_HEAD = '''
@T.prim_func
def k(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64, 64), "bfloat16")
    B = T.match_buffer(B_ptr, (64, 64), "bfloat16")
    C = T.match_buffer(C_ptr, (64, 64), "float32")
    T.device_entry()
    tid = T.thread_id([128])
    Bs = T.alloc_shared((64, 64), "bfloat16", layout=LA, align=1024)
    acc = T.alloc_local((64, 64), "float32", layout=FRAG)
    p = T.alloc_local((64, 64), "bfloat16", layout=FRAG)
    Tx.cta.copy(Bs[:, :], B[:, :])
    Tx.wg.copy(acc[:, :], C[:, :])
    T.ptx.fence.proxy_async()
    T.cuda.cta_sync()
'''

HAZARDS = [
    ("read-p-before-wait", "reads the A operand registers of a wgmma.mma_async", [
        "Tx.wg.cast(p[:, :], acc[:, :])", "T.ptx.wgmma.fence()",
        "Tx.wg.gemm_async(acc[:, :], p[:, :], Bs[:, :])", "T.ptx.wgmma.commit_group()",
        "Tx.wg.copy(A[:, :], p[:, :])  # BUG", "T.ptx.wgmma.wait_group(0)"]),
    ("write-p-before-wait", "writes the A operand registers of a wgmma.mma_async", [
        "Tx.wg.cast(p[:, :], acc[:, :])", "T.ptx.wgmma.fence()",
        "Tx.wg.gemm_async(acc[:, :], p[:, :], Bs[:, :])", "T.ptx.wgmma.commit_group()",
        "T.ptx.wgmma.wait_group(1)", "Tx.wg.copy(p[:, :], A[:, :])  # BUG",
        "T.ptx.wgmma.wait_group(0)"]),
    ("cast-p-after-fence", "uses A operand registers written by other instructions since the "
     "warpgroup's last wgmma.fence", [
        "T.ptx.wgmma.fence()", "Tx.wg.cast(p[:, :], acc[:, :])",
        "Tx.wg.gemm_async(acc[:, :], p[:, :], Bs[:, :])  # BUG",
        "T.ptx.wgmma.commit_group()", "T.ptx.wgmma.wait_group(0)"]),
    ("p-never-written", "where this thread has not written", [
        "T.ptx.wgmma.fence()", "Tx.wg.gemm_async(acc[:, :], p[:, :], Bs[:, :])  # BUG",
        "T.ptx.wgmma.commit_group()", "T.ptx.wgmma.wait_group(0)"]),
]


@pytest.mark.parametrize("hid,message,lines", HAZARDS, ids=[h[0] for h in HAZARDS])
def test_hazards_on_a_registers_name_the_line(hid, message, lines):
    from tilewise import from_source

    src = HAZARD_HEAD + "".join("    " + ln + "\n" for ln in lines)
    func = from_source(src, env={"LA": G.layout(64, 64, 128), "FRAG": wgmma_a_fragment(64)},
                       filename="hz.py")
    a, b, c = G.wgmma_inputs(np.random.default_rng(0))
    with pytest.raises(HazardError, match=message) as e:
        tw.simulate(func, a, b, c)
    want = next(i for i, ln in enumerate(src.splitlines(), 1) if "# BUG" in ln)
    assert e.value.span.line == want, str(e.value)
