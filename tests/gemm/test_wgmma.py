"""gemm_async -> wgmma: descriptors derived from layouts, the simulator's numerics and (marked
gpu) the H200's against numpy, the H200 against the simulator too, the hazards.

Tolerance: the simulator adds each instruction's exact K-step sum to the float32
accumulator with one rounding; the GPU's internal order differs. Both are compared with a
float64 reference at 1e-5 of the largest |C| (K <= 128 here: a few float32 roundings).
Exception, on the GPU only: Hopper's fp8 wgmma does not accumulate in full float32 (its
adder keeps fewer mantissa bits; the error measured on the H200 at K = 128 is 3.8e-4 of
the largest |C|), so fp8 results on the device are held to 2e-3 and the simulator, which
models the exact sum, is compared with the device at that tolerance too."""

import numpy as np
import pytest

import kernels_gemm as G
import tilewise as tw
from executors import run
from tilewise.errors import DispatchError, HazardError
from tilewise.pipeline import lower
from tilewise.ptx import wgmma

CASES = [
    # (id, kwargs)
    ("bf16-Ksw128-MNsw128", dict()),
    ("f16-Ksw128-MNsw128", dict(dtype="float16")),
    ("bf16-N8-B-noswizzle", dict(N=8, b_swz=0)),
    ("bf16-N24-B-Ksw64", dict(N=24, K=32, a_swz=64, b_swz=64, b_major="col")),
    ("bf16-N256-K16-B-blocked", dict(N=256, K=16, a_swz=32, b_swz=128)),
    ("bf16-N128-K128-blocked", dict(N=128, K=128)),
    ("bf16-B-Kmajor-sw128", dict(b_major="col")),
    ("bf16-accum", dict(accum=True)),
    ("tf32-Ksw128", dict(dtype="float32", K=32, b_major="col")),
    ("e4m3-Ksw128", dict(dtype="float8_e4m3", K=128, b_major="col")),
    ("f16-A-MNmajor", dict(dtype="float16", a_major="col")),
]


def _tolerance(kw, on_gpu):
    return 2e-3 if on_gpu and "float8" in kw.get("dtype", "") else 1e-5


def _check(C, a, b, c0, kw, on_gpu=False):
    ref = G.wgmma_reference(a, b, c0, kw.get("accum", False), kw.get("dtype") == "float32")
    err = np.abs(C.astype(np.float64) - ref).max() / np.abs(ref).max()
    assert err < _tolerance(kw, on_gpu), err


@pytest.mark.parametrize("cid,kw", CASES, ids=[c[0] for c in CASES])
def test_wgmma_tile(executor, cid, kw):
    shape = dict(N=kw.get("N", 64), K=kw.get("K", 64), dtype=kw.get("dtype", "bfloat16"))
    a, b, c = G.wgmma_inputs(np.random.default_rng(1), **shape)
    c0 = c.copy()
    run(executor, G.make_wgmma(**kw), [a, b, c])
    _check(c, a, b, c0, kw, on_gpu=executor == "gpu")
    if executor == "gpu":  # and the device agrees with the simulator to its tolerance
        c_sim = c0.copy()
        tw.simulate(G.make_wgmma(**kw), a, b, c_sim)
        assert np.abs(c - c_sim).max() <= _tolerance(kw, True) * np.abs(c_sim).max()


def test_the_log_names_the_forms_and_the_ptx_has_wgmma():
    func = G.make_wgmma()
    (d,) = [x for x in lower(func, "sm_90a").dispatch_log if "gemm_async" in x.call]
    assert d.chosen == "wgmma"
    assert d.info == ["4 x wgmma m64n64k16 (A K-major, swizzle 128; B MN-major, swizzle 128)"]
    k = tw.compile(func, "sm_90a")
    assert k.source("ptx").count("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16") == 4
    assert k.cubin[:4] == b"\x7fELF"


def test_descriptor_fields_round_trip():
    d = wgmma.Descriptor(start=0x2A40, lbo=16, sbo=1024, swizzle=128)
    assert wgmma.decode(d.encode()) == d
    assert wgmma.encode(0x2A40, 16, 1024, 128) >> 62 == 1
    assert wgmma.decode(wgmma.encode(0, 4096, 128, 0)).lbo == 4096


def test_a_layout_that_no_descriptor_describes_is_declined_with_the_element():
    func = G.make_wgmma(a_swz=0, a_major="plain")  # row-major, no swizzle: not canonical
    with pytest.raises(DispatchError, match=r"A .* is not a canonical wgmma layout: K-major "
                       r"\(swizzle none.*element \(.*\) at byte"):
        lower(func, "sm_90a")


def test_wgmma_needs_sm_90a():
    with pytest.raises(tw.TilewiseError, match="wgmma"):
        lower(G.make_wgmma(), "sm_90")


HAZARD_HEAD = '''
@T.prim_func
def k(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64, 64), "bfloat16")
    B = T.match_buffer(B_ptr, (64, 64), "bfloat16")
    C = T.match_buffer(C_ptr, (64, 64), "float32")
    T.device_entry()
    tid = T.thread_id([128])
    As = T.alloc_shared((64, 64), "bfloat16", layout=LA, align=1024)
    Bs = T.alloc_shared((64, 64), "bfloat16", layout=LA, align=1024)
    acc = T.alloc_local((64, 64), "float32", layout=wgmma_accumulator(64))
    Tx.cta.copy(As[:, :], A[:, :])
    Tx.cta.copy(Bs[:, :], B[:, :])
    T.ptx.fence.proxy_async()
    T.cuda.cta_sync()
'''

HAZARDS = [
    ("read-before-wait", "reads accumulator registers of a wgmma.mma_async", [
        "T.ptx.wgmma.fence()", "Tx.wg.gemm_async(acc[:, :], As[:, :], Bs[:, :])",
        "T.ptx.wgmma.commit_group()", "Tx.wg.copy(C[:, :], acc[:, :])  # BUG",
        "T.ptx.wgmma.wait_group(0)"]),
    ("never-committed", "its group was never committed", [
        "T.ptx.wgmma.fence()", "Tx.wg.gemm_async(acc[:, :], As[:, :], Bs[:, :])",
        "T.ptx.wgmma.wait_group(0)", "Tx.wg.copy(C[:, :], acc[:, :])  # BUG"]),
    ("missing-fence", "written by other instructions since the warpgroup's last wgmma.fence", [
        "T.ptx.wgmma.fence()", "Tx.wg.copy(acc[:, :], C[:, :])",
        "Tx.wg.gemm_async(acc[:, :], As[:, :], Bs[:, :], accum=True)  # BUG",
        "T.ptx.wgmma.commit_group()", "T.ptx.wgmma.wait_group(0)"]),
    ("operand-overwritten", "overwrites shared memory that a wgmma.mma_async", [
        "T.ptx.wgmma.fence()", "Tx.wg.gemm_async(acc[:, :], As[:, :], Bs[:, :])",
        "T.ptx.wgmma.commit_group()", "Tx.cta.copy(As[:, :], A[:, :])  # BUG",
        "T.ptx.wgmma.wait_group(0)"]),
    ("exit-pending", "the CTA exits while a wgmma.mma_async is pending", [
        "T.ptx.wgmma.fence()", "Tx.wg.gemm_async(acc[:, :], As[:, :], Bs[:, :])  # BUG",
        "T.ptx.wgmma.commit_group()"]),
    ("accumulator-never-written", "wgmma.mma_async reads accumulator registers where this "
     "thread has not written", [  # accum=False reads none
        "T.ptx.wgmma.fence()", "Tx.wg.gemm_async(acc[:, :], As[:, :], Bs[:, :], accum=True)"
        "  # BUG", "T.ptx.wgmma.commit_group()", "T.ptx.wgmma.wait_group(0)"]),
    ("bad-descriptor", "outside every shared buffer", [
        "T.ptx.wgmma.fence()",
        "T.ptx.wgmma.mma_async(T.uint64(0x1000), T.uint64(0x1000), True, 64, 'bfloat16', "
        "'float32', False, False, *[acc[i // 32, i % 32] for i in range(32)])  # BUG",
        "T.ptx.wgmma.commit_group()", "T.ptx.wgmma.wait_group(0)"]),
]


UNFENCED_HEAD = HAZARD_HEAD.replace("    T.ptx.fence.proxy_async()\n", "")
HAZARDS += [
    # no wgmma.fence anywhere: the registers written before the first wgmma are not ordered
    ("no-fence-anywhere", "written by other instructions and the warpgroup has executed no "
     "wgmma.fence", ["Tx.wg.copy(acc[:, :], C[:, :])",
                     "Tx.wg.gemm_async(acc[:, :], As[:, :], Bs[:, :], accum=True)  # BUG",
                     "T.ptx.wgmma.commit_group()", "T.ptx.wgmma.wait_group(0)"]),
    ("zeroed-then-no-fence", "the warpgroup has executed no wgmma.fence", [
        "Tx.wg.zero(acc[:, :])",
        "Tx.wg.gemm_async(acc[:, :], As[:, :], Bs[:, :], accum=True)  # BUG",
        "T.ptx.wgmma.commit_group()", "T.ptx.wgmma.wait_group(0)"]),
]
# generic-proxy writes of an operand (stores, cp.async, stmatrix) and no fence.proxy.async
PROXY_HAZARDS = [
    ("stores", "wgmma.mma_async reads shared memory that thread 0 wrote with ordinary stores "
     "and no fence.proxy.async since", []),
    ("cp-async", "wrote with ordinary stores and no fence.proxy.async since", [
        "T.cuda.cta_sync()", "Tx.cta.copy_async(Bs[:, :], B[:, :], dispatch='ldgsts')",
        "T.ptx.cp_async.commit_group()", "T.ptx.cp_async.wait_group(0)",
        "T.cuda.cta_sync()"]),
]


@pytest.mark.parametrize("hid,message,extra", PROXY_HAZARDS, ids=[h[0] for h in PROXY_HAZARDS])
def test_a_wgmma_operand_written_by_the_generic_proxy_needs_a_proxy_fence(hid, message, extra):
    from tilewise import from_source
    from tilewise.layout import wgmma_accumulator

    body = ["T.ptx.wgmma.fence()", "Tx.wg.gemm_async(acc[:, :], As[:, :], Bs[:, :])  # BUG",
            "T.ptx.wgmma.commit_group()", "T.ptx.wgmma.wait_group(0)"]
    env = {"LA": G.layout(64, 64, 128), "wgmma_accumulator": wgmma_accumulator}
    for head, fenced in ((UNFENCED_HEAD, False), (HAZARD_HEAD, True)):
        lines = extra + (["T.ptx.fence.proxy_async()", "T.cuda.cta_sync()"]
                         if extra and fenced else []) + body
        src = head + "".join("    " + ln + "\n" for ln in lines)
        func = from_source(src, env=env, filename="hz.py")
        if fenced:
            assert tw.simulate(func, *G.wgmma_inputs(np.random.default_rng(0))).ok
            continue
        with pytest.raises(HazardError, match=message) as e:
            tw.simulate(func, *G.wgmma_inputs(np.random.default_rng(0)))
        assert e.value.span.line == next(
            i for i, ln in enumerate(src.splitlines(), 1) if "# BUG" in ln), str(e.value)
        assert "then T.cuda.cta_sync(), before the wgmma.mma_async that reads it" in str(
            e.value.hint)


@pytest.mark.parametrize("hid,message,lines", HAZARDS, ids=[h[0] for h in HAZARDS])
def test_wgmma_hazards_name_the_line(hid, message, lines):
    from tilewise import from_source
    from tilewise.layout import wgmma_accumulator

    src = HAZARD_HEAD + "".join("    " + ln + "\n" for ln in lines)
    func = from_source(src, env={"LA": G.layout(64, 64, 128), "wgmma_accumulator":
                                 wgmma_accumulator}, filename="hz.py")
    a, b, c = G.wgmma_inputs(np.random.default_rng(0))
    with pytest.raises(HazardError, match=message) as e:
        tw.simulate(func, a, b, c)
    want = next(i for i, ln in enumerate(src.splitlines(), 1) if "# BUG" in ln)
    assert e.value.span.line == want, str(e.value)
