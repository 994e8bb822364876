"""examples/gemm_hopper.py: the warp-specialised TMA + wgmma GEMM, in the simulator (the
whole pipeline, every hazard check on) and (marked gpu) on the H200 against torch.matmul.

Tolerance: C is rounded once to bf16/fp16 from a float32 accumulator; against the float64
product rounded the same way an entry may differ by the accumulation order's effect on
that rounding: |C - ref| <= 2^-7 |ref| + 2^-6 (entries near 0 round relative to their row).
"""

import importlib.util
import pathlib
import re
import time

import numpy as np
import pytest

import tilewise as tw
from tilewise.pipeline import lower

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _example():
    spec = importlib.util.spec_from_file_location("gemm_hopper", ROOT / "examples" /
                                                  "gemm_hopper.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


G = _example()


def _check(c, a, b):
    ref = a.astype(np.float64) @ b.astype(np.float64)
    got = c.astype(np.float64)
    assert not np.isnan(got).any(), "some of C was never written"
    bad = np.abs(got - ref) > 2.0 ** -7 * np.abs(ref) + 2.0 ** -6
    assert not bad.any(), (f"{int(bad.sum())} entries off, first at "
                           f"{tuple(np.argwhere(bad)[0])}")


@pytest.mark.parametrize("shape,dtype,kw", [
    pytest.param((256, 256, 128), "bfloat16", {}, id="256x256x128-bf16"),
    pytest.param((5, 200, 264), "bfloat16", {"swap": True, "bn": 8, "splits": 2},
                 id="swap-M5-ragged-split2"),
    pytest.param((20, 136, 128), "float16", {"swap": True, "bn": 16, "splits": 1},
                 id="swap-M20-two-column-tiles", marks=pytest.mark.slow),
    pytest.param((40, 72, 264), "bfloat16", {"swap": True, "bm": 64, "bn": 32, "splits": 2},
                 id="swap-bm64-split2", marks=pytest.mark.slow),
    pytest.param((200, 136, 128), "bfloat16", {"swap": True, "bm": 128, "bn": 200},
                 id="swap-M200-exact-width"),
    pytest.param((150, 72, 264), "float16", {"swap": True, "bm": 64, "bn": 160, "splits": 2},
                 id="swap-bm64-M150-split2", marks=pytest.mark.slow),
    pytest.param((200, 136, 72), "bfloat16", {"bn": 256}, id="200x136x72-tails",
                 marks=pytest.mark.slow),
    pytest.param((136, 520, 200), "float16", {"producer": "warp", "bn": 256},
                 id="136x520x200-fp16-warp", marks=pytest.mark.slow),
    pytest.param((256, 384, 200), "bfloat16", {"bn": 64}, id="bn64-4-stages",
                 marks=pytest.mark.slow),
    pytest.param((48, 128, 264), "bfloat16", {"bm": 64, "bn": 128, "splits": 4},
                 id="bm64-split4", marks=pytest.mark.slow),
    pytest.param((130, 128, 512), "float16", {"bm": 128, "bn": 128, "splits": 3},
                 id="split3-odd-K-blocks", marks=pytest.mark.slow),
    pytest.param((1, 128, 520), "bfloat16", {"bm": 64, "bn": 128, "splits": 2},
                 id="M1-split2", marks=pytest.mark.slow),
    pytest.param((300, 264, 136), "bfloat16", {"bm": 128, "bn": 128, "persistent": False},
                 id="one-CTA-per-tile-ragged"),
    pytest.param((200, 328, 136), "bfloat16", {"bm": 128, "bn": 192},
                 id="bn192-ragged-M-N-K"),
    pytest.param((136, 200, 264), "float16", {"bm": 128, "bn": 192, "splits": 2},
                 id="bn192-split2", marks=pytest.mark.slow),
    pytest.param((20, 264, 200), "float16", {"swap": True, "bn": 16, "persistent": False},
                 id="swap-one-CTA-per-tile", marks=pytest.mark.slow),
    pytest.param((300, 256, 200), "bfloat16",
                 {"bm": 128, "bn": 128, "multicast": 2, "num_sms": 4}, id="multicast-pair",
                 marks=pytest.mark.slow),
    pytest.param((200, 264, 200), "bfloat16",
                 {"swap": True, "bn": 72, "multicast": 2, "num_sms": 4},
                 id="swap-multicast-pair-ragged"),
    pytest.param((150, 200, 136), "float16",
                 {"swap": True, "bm": 64, "bn": 48, "multicast": 2, "num_sms": 4,
                  "transB": True}, id="transB-swap-bm64-multicast-pair", marks=pytest.mark.slow),
    # transB: B given as (N, K), loaded as K-major tiles (and swapped: wgmma's A K-major)
    pytest.param((200, 328, 136), "bfloat16", {"transB": True}, id="transB-plan-ragged"),
    pytest.param((5, 200, 264), "float16", {"transB": True, "swap": True, "bn": 8,
                                            "splits": 2}, id="transB-swap-split2"),
    pytest.param((40, 72, 264), "bfloat16", {"transB": True, "swap": True, "bm": 64, "bn": 32},
                 id="transB-swap-bm64", marks=pytest.mark.slow),
    pytest.param((300, 256, 200), "bfloat16", {"transB": True, "bm": 128, "bn": 128,
                                               "multicast": 2, "num_sms": 4},
                 id="transB-multicast-pair", marks=pytest.mark.slow),
    pytest.param((200, 328, 136), "float16", {"transB": True, "bm": 128, "bn": 192,
                                              "producer": "warp"},
                 id="transB-bn192-warp", marks=pytest.mark.slow)])
def test_the_pipelined_gemm_in_the_simulator(shape, dtype, kw):
    a, b, c = G.inputs(np.random.default_rng(3), shape, dtype)
    t0 = time.process_time()  # CPU time: the budget holds however busy the machine is
    kw = {"num_sms": G.H200_SMS, **kw}
    bk = np.ascontiguousarray(b.T) if kw.get("transB") else b  # transB: B given as (N, K)
    rep = tw.simulate(G.make_gemm(*shape, dtype=dtype, **kw), a, bk, c)
    seconds = time.process_time() - t0
    assert rep.ok
    _check(c, a, b)
    if shape == (256, 256, 128):  # the budget: the full pipeline in <= 10 s
        assert seconds <= 10, f"{seconds:.1f} CPU s"


def test_a_producer_warp_makes_a_288_thread_cta_whose_warpgroup_calls_are_valid():
    """Consumers are warpgroups 0 and 1, the producer the one warp of a partial warpgroup:
    the consumers' Tx.wg calls dispatch, and the run is race- and hazard-free."""
    shape = (256, 256, 128)
    a, b, c = G.inputs(np.random.default_rng(5), shape, "bfloat16")
    k = G.make_gemm(*shape, num_sms=2, producer="warp")
    from tilewise.ir.launch import LaunchConfig

    assert LaunchConfig.of(lower(k, "sm_90a").func).block == 288
    assert tw.simulate(k, a, b, c).ok
    _check(c, a, b)


def test_the_log_shows_tma_wgmma_stmatrix_and_the_tma_store():
    log = {d.call.split("(")[0] + ":" + d.chosen: d.info for d in
           lower(G.gemm, "sm_90a").dispatch_log}
    assert log["Tx.wg.gemm_async:wgmma"] == [
        "4 x wgmma m64n256k16 (A K-major, swizzle 128; B MN-major, swizzle 128)"]
    assert "Tx.thread.copy_async:tma" in log and "Tx.wg.copy:ld_stmatrix" in log
    ptx = tw.compile(G.gemm, "sm_90a").source("ptx")
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16") == 4
    assert "setmaxnreg.dec.sync.aligned.u32 \t40" in ptx
    assert "setmaxnreg.inc.sync.aligned.u32 \t232" in ptx
    assert "ld.local" not in ptx and "st.local" not in ptx


def test_few_output_tiles_get_narrower_tiles():
    """1024 x 1024 makes 32 tiles of 128 x 256 for 132 SMs: the kernel takes 128 x 64 tiles
    (128 of them); 512 x 512 x 8192 (8 such tiles) also splits K, 4 ways on swapped 64 x 176
    tiles (measured on the H200 at 259 TFLOP/s beside 262 for 128 x 64 tiles split 3 ways,
    its twin in the estimate); a size-less kernel keeps 128 x 256."""
    def infos(k):
        return [d.info[0] for d in lower(k, "sm_90a").dispatch_log if "gemm_async" in d.call]

    assert infos(G.make_gemm(1024, 1024, 1024, num_sms=132)) == [
        "4 x wgmma m64n64k16 (A K-major, swizzle 128; B MN-major, swizzle 128)"]
    p = G.plan(512, 512, 8192, 132)
    assert (p["bm"], p["bn"], p["splits"], p["swap"]) == (64, 176, 4, True)
    assert "m64n256k16" in infos(G.make_gemm(num_sms=132))[0]
    with pytest.raises(ValueError, match="bn=96"):
        G.make_gemm(bn=96)


def test_a_ragged_last_wave_takes_128x192_tiles():
    """512 x 6144 makes 96 tiles of 128 x 256 for 132 SMs (a wave 73 % full): the plan takes
    128 of 128 x 192 (one wgmma m64n192 per consumer, 4 stages); 4096^3 (two even waves of
    128 x 256) keeps 128 x 256. No candidate 128 x 192 has fewer than 3 stages (a split
    fits 2); forced, a split still builds. Bad combinations are refused by name."""
    p = G.plan(512, 6144, 4096, 132)
    assert (p["bm"], p["bn"], p["splits"], p["stages"], p["swap"]) == (128, 192, 1, 4, False)
    assert G.plan(4096, 4096, 4096, 132)["bn"] == 256
    for m, n, k in ((512, 6144, 4096), (16, 2112, 7168), (1024, 14336, 4096)):
        for c in G.candidates(m, n, k, 132):
            if (c["bm"], c["bn"]) == (128, 192):
                assert G._stages_that_fit(128, 192, c["splits"]) >= 3, c
    assert G.plan(512, 6144, 4096, 132, bn=192, splits=2)["stages"] == 2
    log = [d.info[0] for d in lower(G.make_gemm(512, 6144, 4096, bn=192, num_sms=132),
                                    "sm_90a").dispatch_log if "gemm_async" in d.call]
    assert log == ["4 x wgmma m64n192k16 (A K-major, swizzle 128; B MN-major, swizzle 128)"]
    with pytest.raises(ValueError, match="bm=64, bn=192: the tile .bm x bn. is one of "
                                         "128x256, 128x192"):
        G.make_gemm(512, 6144, 4096, bm=64, bn=192)
    with pytest.raises(ValueError, match="bn=196: a swapped tile is bm=128"):
        G.make_gemm(16, 6144, 4096, bn=196, swap=True)
    with pytest.raises(ValueError, match="multicast=2: 1, or 2 without a split of K"):
        G.make_gemm(16, 6144, 4096, bn=192, swap=True, multicast=2, splits=2)
    assert G.make_gemm(300, 6144, 4096, bn=152, swap=True, multicast=2) is not None
    with pytest.raises(ValueError, match="stages=5: 2 to 4 stages fit .* 128x192 tile"):
        G.make_gemm(512, 6144, 4096, bn=192, stages=5)
    with pytest.raises(ValueError, match="bn=160: the tile's columns are 64, 128, 192 or 256"):
        G.make_gemm(512, 6144, 4096, bn=160)


def test_the_tuner_times_multicast_twins_of_its_first_shapes():
    """Multicast pairs are timed, never planned: the twins of the first unswapped, unsplit
    shapes where M has two row tiles to pair (2048 x 1000 x 4096: 128 x 128 pairs ran 582
    TFLOP/s against 489 alone on the H200), none at M = 64. Swapped pairs are left out:
    on the H200 they were no faster than the swapped tile alone (300 x 8192 x 8192 plans a
    swapped tile: its twin is the best normal shape's)."""
    p = G.plan(2048, 1000, 4096, 132)
    twins = [c for c in G.tune_configs(2048, 1000, 4096, 132, p) if c["multicast"] == 2]
    assert p["multicast"] == 1 and 1 <= len(twins) <= G.TUNE_MULTICAST
    assert twins[0] == {**p, "multicast": 2}
    p = G.plan(300, 8192, 8192, 132)
    twins = [c for c in G.tune_configs(300, 8192, 8192, 132, p) if c["multicast"] == 2]
    assert p["swap"] and twins and all(
        not c["swap"] and c["splits"] == 1 and c.get("persistent", True) for c in twins)
    assert not any(c["multicast"] == 2 for c in G.tune_configs(64, 4096, 4096, 132,
                                                                 G.plan(64, 4096, 4096, 132)))


def test_a_multicast_pair_frees_its_peers_stage_without_a_cluster_fence():
    """The consumer's arrive on the peer's empty barrier releases at CTA scope: its reads
    of the stage are complete (wgmma waited), so the cluster-scope release (a fence before
    every stage's arrive, ncu: 10 % of the warps' stall samples) bought nothing and made
    the pair slower than one CTA (295 against 217 µs at 4096³, now within 2 %)."""
    k = tw.compile(G.make_gemm(512, 512, 256, bm=128, bn=128, multicast=2, num_sms=4),
                   "sm_90a")
    assert "mbarrier.arrive.expect_tx.shared::cluster.b64 _, [" in k.ptx
    assert "release.cluster.shared::cluster" not in k.ptx
    # the two arrivals from two warps (the leader here, warp 2 in the peer), so that the
    # warpgroup's next wgmma does not wait for one warp issuing both (H200: fp8 pairs 1-4 %)
    ir = k.source("lowered")
    remote = re.findall(r"if (.*):\n\s+T\.ptx\.mbarrier\.arrive\.expect_tx\(", ir)
    local = re.findall(r"if (.*):\n\s+T\.ptx\.mbarrier\.arrive\(", ir)
    assert remote and set(remote) == {"tid % 128 == 64"}, remote
    assert local and set(local) == {"leader"}, local


def test_the_128x192_kernel_assembles_without_spills():
    """ptxas (when this machine has one) assembles bn = 192 with the plan's 4 stages for
    sm_90a: no spills, no ignored setmaxnreg or serialised wgmma (C75xx)."""
    from ptxas_log import assemble

    for producer in ("warpgroup", "warp"):
        log = assemble(tw.compile(G.make_gemm(512, 6144, 4096, bn=192, stages=4,
                                              producer=producer, num_sms=132), "sm_90a"))
        assert "C75" not in log, log
        assert "0 bytes spill stores, 0 bytes spill loads" in log, log


@pytest.mark.parametrize("cfg", [{"bm": 128, "bn": 256, "stages": 3},
                                 {"bm": 128, "bn": 128, "stages": 6},
                                 {"bm": 64, "bn": 256, "stages": 4},
                                 {"bm": 128, "bn": 16, "stages": 8, "swap": True}])
def test_stream_k_kernels_keep_their_wgmma_asynchronous(cfg):
    """ptxas (when this machine has one): the stream-K kernel's partial sums move register
    by register (fragment order); copied by coordinates (8-byte vectors of the accumulator)
    they made ptxas serialise every wgmma of the kernel (C7514): 16-32 % slower than the
    same tile without stream-K on the H200. No spills either."""
    from ptxas_log import assemble

    log = assemble(tw.compile(G.make_gemm(4096, 4096, 4096, streamk=True, num_sms=132,
                                          **cfg), "sm_90a"))
    assert "serialized" not in log, log  # C7514 / C7515 / C7520: wgmma serialised
    assert "0 bytes spill stores, 0 bytes spill loads" in log, log
    # (the swapped 128 x 16 kernel, 34 registers, has ptxas ignore its setmaxnreg, C7508,
    # as it does without stream-K)


COORDINATE_COPIES = [  # the stream-K partial sums as a user would first write them
    ("W = T.match_buffer(W_ptr, (grid, 2, wn // 2, 128), \"float32\")  # fragment order",
     "W = T.match_buffer(W_ptr, (grid, 2, 64, wn), \"float32\")"),
    ("""                        for v in T.static_range(wn // 2):
                            W[bx, cw, v, tid % 128] = accr[v]
""", """                        Tx.wg.copy(W[bx, cw, :, :], acc[:, :])
"""),
    ("""                                for v in T.static_range(wn // 2):
                                    accr[v] = accr[v] + W[grid - 1 - r, cw, v, tid % 128]""",
     """                                Tx.wg.add(acc[:, :], acc[:, :], W[grid - 1 - r, cw, :, :])""")]


def test_an_accumulator_copied_by_coordinates_keeps_wgmma_asynchronous(tmp_path):
    """The stream-K helper's accumulator copied to global memory with Tx.wg.copy (8-byte
    vectors) and added back with Tx.wg.add: before the code generator fenced the
    accumulators after each wgmma.wait_group, LLVM moved reads of them above the wait and
    ptxas serialised every wgmma of the kernel (C7514; 16-32 % slower on the H200)."""
    from ptxas_log import assemble

    text = (ROOT / "examples" / "gemm_hopper.py").read_text()
    for old, new in COORDINATE_COPIES:
        assert old in text, f"the example changed; update COORDINATE_COPIES: {old!r}"
        text = text.replace(old, new)
    path = tmp_path / "gemm_coordinates.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("gemm_coordinates", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    k = mod.make_gemm(4096, 4096, 4096, bm=128, bn=128, streamk=True, num_sms=132)
    assert "Tx.wg.copy(W[" in str([d.call for d in lower(k, "sm_90a").dispatch_log])
    log = assemble(tw.compile(k, "sm_90a"))
    assert "serialized" not in log, log
    assert "0 bytes spill stores, 0 bytes spill loads" in log, log


def _ctas(m, n, p):
    """CTAs a plan launches for an m x n output (a swapped tile cuts n into its rows)."""
    rows, cols = (n, m) if p["swap"] else (m, n)
    return -(-rows // p["bm"]) * -(-cols // p["bn"]) * p["splits"]


def test_the_plan_fits_the_problem():
    """Small M takes swap-AB tiles or 64-row tiles, few tiles split K across a cluster (no
    more clusters than fit at once), large problems keep 128 x 256 tiles; every plan fits
    shared memory; forced shapes are checked."""
    for m, n, k in ((16, 4096, 4096), (1, 4096, 14336), (128, 4096, 4096)):
        p = G.plan(m, n, k, 132)  # enough CTAs to stream B: half the SMs at least
        assert _ctas(m, n, p) >= 64, p
        assert _ctas(m, n, p) <= G.cluster_slots(p["splits"], 132) or p["splits"] == 1
    p = G.plan(16, 8192, 28672, 132)  # a 128-row tile would be 7/8 padding
    assert p["swap"] or p["bm"] == 64, p
    assert G.plan(128, 4096, 14336, 132)["splits"] > 1
    big = G.plan(8192, 8192, 8192, 132)
    assert (big["bm"], big["bn"], big["splits"], big["stages"], big["swap"]) == (128, 256, 1, 3,
                                                                                False)
    assert G.plan(None, None, None, 132)["bn"] == 256
    for m in (1, 16, 64, 128, 256, 512, 1024, 4096):
        for n, k in ((4096, 4096), (14336, 4096), (4096, 14336), (128256, 4096)):
            p = G.plan(m, n, k, 132)
            assert 2 <= p["stages"] <= G._stages_that_fit(p["bm"], p["bn"], p["splits"])
            assert not p["swap"] or m <= G.SWAP_M
    with pytest.raises(ValueError, match="bm=64, bn=64"):
        G.make_gemm(64, 64, 64, bm=64, bn=64)
    with pytest.raises(ValueError, match="stages=9"):
        G.make_gemm(256, 256, 256, bn=256, stages=9)
    with pytest.raises(ValueError, match="persistent=False with splits=2"):
        G.make_gemm(64, 256, 4096, bm=64, bn=128, splits=2, persistent=False)


def test_the_gemm_tunes_unheated_and_only_on_a_gpu(monkeypatch):
    """make_gemm(M, N, K) hands the tuner a CudaTimer without heat (G.TUNE_HEAT_S; the
    fp8 GEMMs keep the default heat); a CudaTimer needs a GPU, so without one the tuned
    kernel still takes its first config untimed instead of timing with a timer that
    cannot run."""
    from tilewise.runtime import timer as T

    k = G.make_gemm(512, 14336, 4096, num_sms=132)
    assert isinstance(k._timer, T.CudaTimer) and k._timer.heat_s == G.TUNE_HEAT_S == 0
    monkeypatch.setattr("tilewise.runtime.gpu_available", lambda: False)
    assert not k._can_time()
    monkeypatch.setattr("tilewise.runtime.gpu_available", lambda: True)
    assert k._can_time()


def test_the_tuner_times_one_cta_per_tile_beside_streaming_shapes():
    """Where a problem's tiles stream B in at most two waves (M <= 128 at N = 28672) or
    make one wave, the tuner times each persistent shape without a split also as one CTA
    per tile; two waves or more of compute-bound tiles keep only persistent shapes; the
    twin is the same shape otherwise."""
    for m in (1, 16, 64, 128):
        first = G.plan(m, 28672, 8192, 132)
        cs = G.tune_configs(m, 28672, 8192, 132, first)
        twins = [c for c in cs if c.get("persistent") is False]
        assert twins and cs[0] == first, cs
        for t in twins:
            assert t["splits"] == 1 and t["multicast"] == 1
            assert {**t, "persistent": True} in [{**c, "persistent": True} for c in cs
                                                 if c.get("persistent", True)]
    for shape in ((4096, 4096, 4096), (2048, 4096, 4096), (256, 28672, 8192)):
        big = G.tune_configs(*shape, 132, G.plan(*shape, 132))  # two waves, compute-bound
        assert all(c.get("persistent", True) for c in big), (shape, big)
    one_wave = G.tune_configs(512, 8192, 28672, 132, G.plan(512, 8192, 28672, 132))
    assert any(c.get("persistent") is False for c in one_wave), one_wave
    k = G.make_gemm(64, 28672, 8192, bm=64, bn=256, persistent=False, num_sms=132)
    from tilewise.ir.launch import LaunchConfig

    assert LaunchConfig.of(lower(k, "sm_90a").func).grid != (132, 1, 1)
    # where the plan would split K (one tile at N = 1024), persistent=False takes no split
    k = G.make_gemm(1, 1024, 4096, bm=64, bn=256, persistent=False, num_sms=132)
    assert LaunchConfig.of(lower(k, "sm_90a").func).cluster_size == 1


def test_decode_shapes_take_swap_ab_tiles_as_narrow_as_m():
    """M <= 16 at N = 4096: Cᵀ = Bᵀ Aᵀ with M on wgmma's N (8 or 16, not a 64-row tile), K
    split 3 ways (39 clusters of 3 fit an H200 at once, 30 of 4: 32 tiles x 4 would need a
    second wave); M = 64 takes 64-column swapped tiles (64 tiles x 2 splits); M <= 8 takes
    the swapped 128 x 8 at any N; a forced swapped tile is checked."""
    for m, bn in ((1, 8), (16, 16)):
        p = G.plan(m, 4096, 4096, 132)
        assert (p["swap"], p["bm"], p["bn"], p["splits"]) == (True, 128, bn, 3), p
    p = G.plan(64, 4096, 4096, 132)
    assert (p["swap"], p["bm"], p["bn"], p["splits"]) == (True, 64, 64, 2), p
    # M <= 8 at N = 28672 / 32000: the swapped 128 x 8, not the one-wave 64 x 256 the
    # estimate prefers (measured 0.97-1.04 against 0.82-0.97 x cuBLAS); a forced tile stays
    for m in (1, 8):
        for n, k in ((28672, 8192), (32000, 4096)):
            p = G.plan(m, n, k, 132)
            assert (p["swap"], p["bm"], p["bn"]) == (True, 128, 8), (m, n, p)
    assert not G.plan(16, 28672, 8192, 132)["swap"]  # M = 16 keeps the estimate's pick
    p = G.plan(1, 28672, 8192, 132, bm=64, bn=256)
    assert (p["swap"], p["bm"], p["bn"]) == (False, 64, 256), p
    log = [d.info[0] for d in lower(G.make_gemm(1, 256, 512, bm=128, bn=8, swap=True,
                                                splits=2, num_sms=132), "sm_90a").dispatch_log
           if "gemm_async" in d.call]
    assert log == ["4 x wgmma m64n8k16 (A MN-major, swizzle 128; B K-major, swizzle 128)"], log
    with pytest.raises(ValueError, match="a swapped tile is bm=128"):
        G.make_gemm(1, 256, 256, bm=64, bn=8, swap=True)
    with pytest.raises(ValueError, match="bn a multiple of 8 up to 256"):
        G.make_gemm(1, 256, 256, bn=12, swap=True)
    with pytest.raises(ValueError, match="swap=True: a multiple of 8 up to 256"):
        G.make_gemm(1, 256, 256, bn=200)
    with pytest.raises(ValueError, match="bm=64 x bn a multiple of 16"):
        G.make_gemm(1, 256, 256, bm=64, bn=200, swap=True)


def test_split_k_adds_the_partial_sums_in_rank_order_across_the_cluster():
    """The split kernel is one cluster of S CTAs per tile: their partial sums travel up a
    tree of the cluster's CTAs by the copy engine (dsmem), rank 0 stores C."""
    k = G.make_gemm(64, 256, 1024, bm=64, bn=128, splits=4, num_sms=132)
    lowered = lower(k, "sm_90a")
    log = [d.chosen for d in lowered.dispatch_log if "copy_async" in d.call]
    assert "dsmem" in log and log.count("tma") == 3  # A, B loads and the C store
    # R[cw] with cw = tid // 128 < 3 is guarded; its fill fallback is a loop over the 4096
    # elements of the bulk copy, not 4096 stores (the kernel's flat IR: 4340 lines, now 246)
    text = lowered.func.script()
    assert "for i in range(4096):" in text and len(text.splitlines()) < 600
    from tilewise.ir.launch import LaunchConfig

    assert LaunchConfig.of(lowered.func).cluster == (4, 1, 1)


@pytest.mark.parametrize("shape,kw", [
    pytest.param((40, 72, 520), {"swap": True, "bm": 64, "bn": 32, "splits": 6}, id="six"),
    pytest.param((20, 64, 1096), {"swap": True, "bm": 128, "bn": 24, "splits": 8},
                 id="eight", marks=pytest.mark.slow),
    pytest.param((40, 72, 520), {"swap": True, "bm": 64, "bn": 32, "splits": 5},
                 id="five-uneven", marks=pytest.mark.slow),
    pytest.param((48, 128, 264), {"bm": 64, "bn": 128, "splits": 8}, id="more-ranks-than-K-blocks",
                 marks=pytest.mark.slow)])
def test_split_k_adds_the_partial_sums_up_a_tree(shape, kw):
    """Splits of 5-8 CTAs: the partial sums go up a binary tree (rank 0 receives from 1,
    2 and 4; a rank receives again only after telling the next sender it has read its
    buffer), checked against float64 with the simulator's race and mbarrier checks on;
    with 8 ranks and 5 K blocks some ranks add nothing of their own."""
    a, b, c = G.inputs(np.random.default_rng(11), shape, "bfloat16")
    assert tw.simulate(G.make_gemm(*shape, num_sms=132, **kw), a, b, c).ok
    _check(c, a, b)


def test_the_tree_takes_log2_hops_where_the_chain_took_one_a_rank():
    """The estimate counts the tree's levels: splits of 2, 3-4 and 6-8 cost 1, 2 and 3
    hops (the chain took 1, 2-3 and 5-7), and no split none."""
    hop = 64 * 32 * 4 * 2 / 200e9 + G.HOP
    assert [round(G.split_reduce_time(s, 32) / hop, 6) for s in (1, 2, 3, 4, 6, 8)] == [
        0, 1, 2, 2, 3, 3]


STREAMK_CASES = [  # (shape, kernel shape, CTAs): each leaves tiles for stream-K, some
    # split over three CTAs (helpers of lower index), a CTA finishing one tile after
    # helping another, ragged M, N and K
    pytest.param((200, 328, 1000), {"bm": 128, "bn": 64, "stages": 4}, 5, id="bn64-5ctas"),
    pytest.param((130, 136, 1000), {"bm": 128, "bn": 128, "stages": 4}, 3,
                 id="one-tile-three-ctas"),
    pytest.param((70, 264, 712), {"bm": 64, "bn": 128, "stages": 4}, 4, id="bm64"),
    pytest.param((20, 296, 520), {"bm": 128, "bn": 16, "stages": 4, "swap": True}, 4,
                 id="swap", marks=pytest.mark.slow),
    pytest.param((200, 328, 520), {"bm": 128, "bn": 64, "stages": 4, "transB": True}, 5,
                 id="transB", marks=pytest.mark.slow),
    pytest.param((130, 296, 264), {"bm": 128, "bn": 256, "stages": 3}, 3, id="bn256",
                 marks=pytest.mark.slow),
    pytest.param((200, 264, 520), {"bm": 128, "bn": 200, "stages": 3, "swap": True}, 4,
                 id="swap-M200", marks=pytest.mark.slow)]


@pytest.mark.parametrize("shape,kw,ctas", STREAMK_CASES)
def test_stream_k_adds_the_helpers_partial_sums_through_flags(shape, kw, ctas):
    """streamk=True: whole waves, then the last tiles' K blocks over every CTA; a finisher
    waits on its flag for the helpers' partial sums (workspace poisoned with NaN: a slot
    read before it is written shows), and every flag is back at zero after the launch
    (the wrapper checks). The simulator's race check passes only because the flags order
    the workspace's writes before its reads (tests/sim/test_flags.py)."""
    a, b, c = G.inputs(np.random.default_rng(5), shape, "bfloat16")
    k = G.make_gemm(*shape, num_sms=ctas, streamk=True, **kw)
    assert isinstance(k, G.StreamK) and k.w_shape[0] == ctas
    bk = np.ascontiguousarray(b.T) if kw.get("transB") else b
    assert tw.simulate(k, a, bk, c).ok
    _check(c, a, b)


def test_stream_k_is_timed_where_the_last_wave_is_ragged():
    """The tuner adds stream-K twins of the best single-CTA tiles where whole tiles leave
    the last wave ragged (777 x 11008: 301 tiles of 128 x 256 are 2.3 waves), not where
    it is nearly full or K is too short to share out; stream-K is never the untuned
    choice (what tw.simulate runs)."""
    cfg = G.plan(777, 11008, 4096, 132)
    sk = [c for c in G.tune_configs(777, 11008, 4096, 132, cfg) if c.get("streamk")]
    assert {(c["bm"], c["bn"]) for c in sk} >= {(128, 256)}
    assert len([c for c in sk if not c["swap"]]) <= G.TUNE_STREAMK and len(sk) <= G.TUNE_STREAMK + 1
    assert all(c["splits"] == 1 and c["multicast"] == 1 for c in sk)
    assert not G.streamk_configs(264 * 128, 256, 4096, 132)  # whole waves: nothing to share
    assert not G.streamk_configs(777, 11008, 256, 132)  # 4 K blocks: too few to cut
    assert not cfg.get("streamk")
    # the tuner launches a compiled candidate through StreamK: the workspace by its grid
    # (a compiled kernel's buffers are flattened: 528 GiB were asked for on the H200 once)
    c = {**sk[0], "stages": 2}
    run = G._streamk_wrap(c, tw.compile(G._kernel("bfloat16", 132, "warpgroup", **c),
                                        target="sm_90a"))
    assert run.w_shape == (132, 2, 128, 128) and run.f_shape == (132, 2)
    assert G._streamk_wrap({**c, "streamk": False}, None) is None
    with pytest.raises(tw.TilewiseError, match="stream-K is a persistent grid of single CTAs"):
        G.make_gemm(256, 256, 512, streamk=True, splits=2)


GLOBAL_SPLIT_CASES = [  # (shape, kernel shape): a split through global memory, ragged M,
    # N and K, the persistent walk over more units than CTAs, swapped and transB tiles
    pytest.param((130, 136, 520), {"bm": 128, "bn": 64, "global_splits": 3, "num_sms": 8},
                 id="bn64-persistent"),
    pytest.param((130, 136, 712), {"bm": 128, "bn": 128, "global_splits": 5,
                                   "persistent": False}, id="one-cta-a-unit",
                 marks=pytest.mark.slow),
    pytest.param((64, 256, 1024), {"bm": 64, "bn": 64, "swap": True, "global_splits": 3,
                                   "num_sms": 4}, id="swap-bm64"),
    pytest.param((40, 264, 1024), {"bm": 128, "bn": 40, "swap": True, "global_splits": 2,
                                   "transB": True, "num_sms": 3}, id="swap-transB",
                 marks=pytest.mark.slow),
    pytest.param((70, 136, 4096), {"bm": 64, "bn": 128, "global_splits": 33, "num_sms": 132},
                 id="33-slices", marks=pytest.mark.slow)]


@pytest.mark.parametrize("shape,kw", GLOBAL_SPLIT_CASES)
def test_a_split_through_global_memory_adds_its_slices_in_a_second_kernel(shape, kw):
    """global_splits=G: each tile's K blocks cut into G slices, one CTA each (no cluster),
    their partial sums written to a workspace (poisoned with NaN by the wrapper: a slot
    read before it is written shows) and added, in slice order, by a second kernel that
    writes C (poisoned too: an entry it misses shows)."""
    a, b, c = G.inputs(np.random.default_rng(7), shape, "bfloat16")
    k = G.make_gemm(*shape, stages=2, **kw)
    assert isinstance(k, G.GlobalSplit) and k.splits == kw["global_splits"]
    bk = np.ascontiguousarray(b.T) if kw.get("transB") else b
    c[...] = np.nan
    assert tw.simulate(k, a, bk, c).ok
    _check(c, a, b)


def test_a_split_through_global_memory_is_refused_with_a_cluster_split_or_a_pair():
    with pytest.raises(tw.TilewiseError, match="with splits=1 and multicast=1"):
        G.make_gemm(256, 256, 4096, splits=2, global_splits=4)
    with pytest.raises(tw.TilewiseError, match="a whole number >= 1"):
        G.make_gemm(256, 256, 4096, global_splits=0)
    with pytest.raises(tw.TilewiseError, match="a split through global memory is a grid"):
        G._kernel("bfloat16", 132, "warpgroup", 128, 128, 1, 4, streamk=True,
                  global_splits=4)


def test_global_splits_are_candidates_only_where_tiles_leave_most_sms_idle():
    """A split through global memory is tried where the whole tiles fill less than half
    the SMs, each slice keeping 4 K blocks: the splits that fill one wave, and half. The
    plan takes one only far ahead of the rest by the estimate (GLOBAL_GAIN: 128 x 128 x
    65536, 2.5 x the cluster split on the H200), the tuner times the two best."""
    assert G.global_splits_for(1, 1024, 132) == [66, 132]
    assert G.global_splits_for(16, 128, 132) == [4, 8]
    assert G.global_splits_for(16, 16, 132) == [2, 4]  # 4 blocks a slice at most
    assert G.global_splits_for(67, 1024, 132) == []  # more than half the SMs: whole tiles
    assert G.global_splits_for(40, 4, 132) == []  # one slice of 4 blocks: nothing to split
    kinds = {c.get("global_splits", 1) for c in G.candidates(128, 128, 65536, 132)}
    assert {66, 132} <= kinds
    assert all("global_splits" not in c for c in G.candidates(4096, 4096, 4096, 132))
    for shape in ((128, 128, 65536), (512, 512, 8192), (1, 4096, 4096)):
        cs = G.tune_configs(*shape, 132, G.plan(*shape, 132))
        timed = [c for c in cs if c.get("global_splits", 1) > 1]
        assert 1 <= len(timed) and len(timed) <= G.TUNE_GLOBAL + G.TUNE_ALTERNATIVES + 1, cs
        assert all(c["splits"] == 1 and c["multicast"] == 1 and not c.get("streamk")
                   and c.get("persistent", True) for c in timed), timed
    assert G.plan(128, 128, 65536, 132).get("global_splits", 1) > 1
    for shape in ((512, 512, 8192), (256, 256, 16384), (1, 4096, 4096), (96, 768, 3072)):
        # the estimate does not rank a split through global memory far ahead here (nor
        # its split counts in the order measured): the plan keeps its shape, the tuner
        # times the global twins
        assert "global_splits" not in G.plan(*shape, 132), shape
    # the two timed are of different tiles or splits, not one and its swapped twin (the
    # same work transposed on a square problem)
    timed = G.global_configs(1024, 1024, 16384, 132)
    assert len({(c["bm"], c["bn"], c["global_splits"]) for c in timed}) == len(timed) == 2


def test_global_split_kernels_keep_their_wgmma_asynchronous():
    """ptxas: the partial sums leave the registers in fragment order (as stream-K's), so no
    wgmma is serialised and nothing spills."""
    from ptxas_log import assemble

    for kw in ({"bm": 128, "bn": 128}, {"bm": 64, "bn": 64, "swap": True}):
        log = assemble(tw.compile(G.make_gemm(512, 512, 8192, num_sms=132, global_splits=4,
                                              **kw), "sm_90a"))
        assert "serialized" not in log, log
        assert "0 bytes spill stores, 0 bytes spill loads" in log, log


def test_stream_k_refuses_arrays_it_cannot_keep_a_workspace_for():
    k = G.make_gemm(256, 256, 512, num_sms=4, bm=128, bn=128, streamk=True)
    a, b, c = G.inputs(np.random.default_rng(5), (256, 256, 512), "bfloat16")
    with pytest.raises(tw.LaunchError, match="takes torch tensors or CuPy arrays, not ndarray"):
        k(a, b, c)


@pytest.mark.parametrize("shape,dtype,transB,copied", [
    ((37, 1001, 100), "bfloat16", False, "A, B and C"),
    ((130, 136, 100), "float16", False, "A into"),  # B (100, 136) read as it is
    ((70, 203, 72), "bfloat16", False, "B and C"),
    ((37, 1001, 100), "bfloat16", True, "A, B and C"),
    ((70, 203, 72), "float16", True, "C into"),  # B (203, 72) read as it is
    ((130, 136, 100), "bfloat16", True, "A and B")])
def test_sizes_tma_cannot_describe_are_padded_with_a_warning(shape, dtype, transB, copied):
    """N or K not a multiple of 8: the kernel of the sizes rounded up, on zero-padded copies
    of the arrays whose rows are too short (B's row count stays its own: TMA reads past it
    as zeros), and a performance warning at this line naming them."""
    a, b, c = G.inputs(np.random.default_rng(5), shape, dtype)
    bk = np.ascontiguousarray(b.T) if transB else b
    with pytest.warns(tw.TilewisePerformanceWarning, match=f"copies {copied}") as w:
        k = G.make_gemm(*shape, dtype=dtype, num_sms=G.H200_SMS, transB=transB)
    assert w[0].filename == __file__
    M, N, K = shape
    assert (k.K8, k.N8) == (-(-K // 8) * 8, -(-N // 8) * 8)
    a8, b8, c8 = k.pad(a, bk, c)
    assert (a8 is a) == (K % 8 == 0) and (c8 is c) == (N % 8 == 0)
    assert (b8 is bk) == ((K if transB else N) % 8 == 0)
    assert b8.shape == ((N, k.K8) if transB else (K, k.N8)) or b8 is bk
    assert not a8[:, K:].any() and not b8[:, (K if transB else N):].any(), "nonzero padding"
    assert tw.simulate(k, a, bk, c, outputs=("C",)).ok
    _check(c, a, b)


def test_sizes_tma_cannot_describe_need_the_sizes_and_bad_options_are_refused():
    with pytest.raises(ValueError, match="needs all of M, N and K"):
        G.make_gemm(None, 1001, 128)
    with pytest.warns(tw.TilewisePerformanceWarning):
        k = G.make_gemm(37, 1001, 100)
    a, b, c = G.inputs(np.random.default_rng(5), (37, 1001, 96), "bfloat16")
    with pytest.raises(tw.LaunchError, match=r"takes A \(37, 100\).* got \(37, 96\)"):
        tw.simulate(k, a, b[:, :1001].copy(), c)
    with pytest.raises(ValueError, match="bfloat16 or float16"):
        G.make_gemm(128, 128, 128, dtype="float32")
    with pytest.raises(ValueError, match="'warpgroup' or 'warp'"):
        G.make_gemm(128, 128, 128, producer="thread")


@pytest.mark.parametrize("transB", [False, True], ids=["B-KN", "B-NK"])
@pytest.mark.parametrize("kw", [{"bm": 128, "bn": 128}, {"bm": 128, "bn": 64, "swap": True},
                                {"bm": 64, "bn": 128, "splits": 2},
                                {"bm": 128, "bn": 64, "global_splits": 2}],
                         ids=["128x128", "swapped", "split", "global-split"])
def test_strided_views_of_a_b_and_c(transB, kw):
    """strided=True: A, B and C are row-strided views (BLAS's lda, ldb, ldc), read and
    written by TMA through their pitches; C's columns past N in its rows stay untouched."""
    M, N, K = 136, 200, 128
    rng = np.random.default_rng(3)
    bf = G.inputs(rng, (8, 8, 8), "bfloat16")[0].dtype
    A = rng.standard_normal((M, K + 24)).astype(bf)[:, 8:8 + K]  # an offset view, too
    Bw = rng.standard_normal((N, K + 16) if transB else (K, N + 40)).astype(bf)
    B = Bw[:, :K] if transB else Bw[:, :N]
    Cw = np.full((M, N + 56), np.nan, bf)
    C = Cw[:, :N]
    k = G.make_gemm(M, N, K, num_sms=4, strided=True, transB=transB, **kw)
    # the pitches are sizes the launcher binds by name (an unnamed one failed to compile)
    assert {"LDA", "LDB", "LDC"} <= {p.name for p in G.as_prim_func(k).params}
    tw.simulate(k, A, B, C)
    _check(C, A, B.T if transB else B)
    assert np.isnan(Cw[:, N:].astype(np.float32)).all()
    # a pitch TMA cannot take (not a multiple of 16 bytes) is refused, naming the array
    odd = rng.standard_normal((M, K + 4)).astype(bf)[:, :K]
    with pytest.raises(tw.LaunchError, match=r"tensor map of 'A'.* 264 bytes; TMA needs a "
                       "positive multiple of 16"):
        tw.simulate(k, odd, B, C)
    # without strided=True a view is refused (the kernel's arrays are C-contiguous)
    with pytest.raises(tw.LaunchError, match=r"'A' has strides \(152, 1\) \(elements\), the "
                       r"kernel expects \(128, 1\)"):
        tw.simulate(G.make_gemm(M, N, K, num_sms=4, transB=transB, **kw), A, B, C)


def test_strided_views_through_the_padded_kernel():
    """N = 1001 with transB: only C is copied (into a padded array); A and B reach the
    inner kernel as the caller's views, with their pitches."""
    M, N, K = 40, 1001, 128
    rng = np.random.default_rng(4)
    bf = G.inputs(rng, (8, 8, 8), "bfloat16")[0].dtype
    A = rng.standard_normal((M, K + 64)).astype(bf)[:, 64:]
    B = rng.standard_normal((N, K + 8)).astype(bf)[:, :K]
    Cw = np.full((M, N + 7), np.nan, bf)
    with pytest.warns(tw.TilewisePerformanceWarning, match="copies C"):
        k = G.make_gemm(M, N, K, num_sms=8, strided=True, transB=True, bm=64, bn=128)
    tw.simulate(k, A, B, Cw[:, :N])
    _check(Cw[:, :N], A, B.T)
    assert np.isnan(Cw[:, N:].astype(np.float32)).all()


@pytest.mark.gpu
def test_strided_views_on_the_gpu_match_torch(torch):
    """A fused projection's slices as they come: A a column slice of a wider activation,
    B (N, K) rows of a fused weight, C a column slice of a fused output; tuned
    (strided=True with the sizes), C's other columns untouched."""
    M, N, K = 777, 1024, 4096
    X = torch.randn(M, K + 64, device="cuda", dtype=torch.bfloat16)
    W = torch.randn(3 * N, K + 64, device="cuda", dtype=torch.bfloat16)
    out = torch.full((M, 3 * N), float("nan"), device="cuda", dtype=torch.bfloat16)
    A, B, C = X[:, 64:], W[N:2 * N, :K], out[:, N:2 * N]
    k = G.make_gemm(M, N, K, strided=True, transB=True)
    k(A, B, C)
    ref = A.double() @ B.double().t()
    err = (C.double() - ref).abs()
    assert bool((err <= 2.0 ** -7 * ref.abs() + 2.0 ** -6 * (K / 128) ** 0.5).all())
    assert bool(out[:, :N].isnan().all()) and bool(out[:, 2 * N:].isnan().all())


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(256, 256, 128), (200, 136, 72), (1000, 1000, 1000),
                                   (4096, 4096, 4096), (512, 512, 8192), (3000, 264, 520),
                                   (1, 4096, 4096), (16, 8192, 28672), (77, 1000, 3000),
                                   (128, 4096, 14336), (300, 14336, 4096)])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("producer", ["warpgroup", "warp"])
def test_the_gemm_on_the_gpu_matches_torch(shape, dtype, producer, torch):
    M, N, K = shape
    td = getattr(torch, dtype)
    A = torch.randn(M, K, device="cuda", dtype=td)
    B = torch.randn(K, N, device="cuda", dtype=td)
    C = torch.full((M, N), float("nan"), device="cuda", dtype=td)
    G.make_gemm(M, N, K, dtype=dtype, producer=producer)(A, B, C)
    ref = (A.double() @ B.double())
    err = (C.double() - ref).abs()
    assert not torch.isnan(C).any()
    assert bool((err <= 2.0 ** -7 * ref.abs() + 2.0 ** -6 * (K / 128) ** 0.5).all()), \
        float(err.max())
    assert torch.equal(torch.matmul(A, B).isnan(), C.isnan())


@pytest.mark.gpu
@pytest.mark.parametrize("shape,transB", [
    ((77, 1001, 3001), False), ((1, 4095, 4097), False), ((4000, 4100, 1003), False),
    ((512, 130, 8190), False), ((3, 7, 5), False), ((1000, 3000, 1003), False),
    ((16, 50257, 768), True), ((300, 32001, 4096), True), ((77, 1001, 3001), True)])
def test_padded_sizes_on_the_gpu_match_torch(shape, transB, torch):
    """N or K not a multiple of 8 on the GPU (the padding copies on torch's stream; B read
    in place where its rows are aligned: an LM head's (50257, 768) weight), twice, the
    second time on a side stream: the same bits."""
    M, N, K = shape
    A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    B = torch.randn(*((N, K) if transB else (K, N)), device="cuda", dtype=torch.bfloat16)
    C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    with pytest.warns(tw.TilewisePerformanceWarning):
        k = G.make_gemm(M, N, K, transB=transB)
    assert k.pad_b == bool((K if transB else N) % 8)
    k(A, B, C)
    ref = A.double() @ (B.double().T if transB else B.double())
    err = (C.double() - ref).abs()
    assert not torch.isnan(C).any()
    assert bool((err <= 2.0 ** -7 * ref.abs() + 2.0 ** -6 * (K / 128) ** 0.5).all()), \
        float(err.max())
    first = C.clone()
    C.fill_(float("nan"))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        k(A, B, C, stream=side)
    side.synchronize()
    assert torch.equal(C, first)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", [{"bm": 64, "bn": 128, "splits": 1},
                                 {"bm": 64, "bn": 256, "splits": 2},
                                 {"bm": 128, "bn": 128, "splits": 3},
                                 {"bm": 128, "bn": 64, "splits": 8},
                                 {"bm": 64, "bn": 128, "splits": 6},
                                 {"bm": 128, "bn": 256, "multicast": 2},
                                 {"bm": 64, "bn": 128, "splits": 1, "multicast": 2},
                                 {"bm": 64, "bn": 256, "persistent": False},
                                 {"bm": 128, "bn": 128, "persistent": False}])
@pytest.mark.parametrize("shape", [(1, 1024, 4096), (64, 2048, 3000), (200, 520, 8192),
                                   (1000, 3000, 520)])
def test_every_kernel_shape_on_the_gpu_matches_torch(shape, cfg, torch):
    M, N, K = shape
    A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    B = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    _matches_twice(torch, G.make_gemm(M, N, K, **cfg), A, B, C)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", [{"bn": 192}, {"bn": 192, "dtype": "float16"},
                                 {"bn": 192, "producer": "warp"},
                                 {"bn": 192, "splits": 2}, {"bn": 192, "multicast": 2},
                                 {"bn": 192, "persistent": False}])
@pytest.mark.parametrize("shape", [(512, 6144, 4096), (200, 2112, 520), (1000, 3000, 8192),
                                   (77, 328, 136)])
def test_128x192_tiles_on_the_gpu_match_torch(shape, cfg, torch):
    """bm = 128, bn = 192 (wgmma m64n192 per consumer): the plan's shape, fp16, a producer
    warp, split K, a multicast pair and one CTA per tile, ragged M, N and K; the same bits on
    a second run."""
    M, N, K = shape
    cfg = {"bm": 128, **cfg}
    td = getattr(torch, cfg.get("dtype", "bfloat16"))
    A = torch.randn(M, K, device="cuda", dtype=td)
    B = torch.randn(K, N, device="cuda", dtype=td)
    C = torch.full((M, N), float("nan"), device="cuda", dtype=td)
    _matches_twice(torch, G.make_gemm(M, N, K, **cfg), A, B, C)


def _matches_twice(torch, k, A, B, C, ref=None):
    """k(A, B, C) is A @ B (or ``ref``) within bf16/fp16 rounding, with the same bits on a
    second run (split K adds its partial sums in rank order)."""
    K = A.shape[1]
    k(A, B, C)
    ref = A.double() @ B.double() if ref is None else ref
    assert not torch.isnan(C).any()
    err = (C.double() - ref).abs()
    assert bool((err <= 2.0 ** -7 * ref.abs() + 2.0 ** -6 * (K / 128) ** 0.5).all()), \
        float(err.max())
    C2 = torch.full_like(C, float("nan"))
    k(A, B, C2)
    assert torch.equal(C, C2)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", [{"bn": 8, "splits": 3}, {"bn": 16, "splits": 1},
                                 {"bn": 64, "splits": 2}, {"bn": 128, "splits": 4},
                                 {"bn": 32, "splits": 8}, {"bm": 64, "bn": 64, "splits": 2},
                                 {"bm": 64, "bn": 16, "splits": 1},
                                 {"bn": 16, "splits": 1, "persistent": False}])
@pytest.mark.parametrize("shape", [(1, 4096, 4096), (3, 1000, 3000), (16, 520, 1048),
                                   (77, 2048, 520), (128, 264, 8192)])
def test_swap_ab_on_the_gpu_matches_torch(shape, cfg, torch):
    """Cᵀ = Bᵀ Aᵀ (128 or 64 columns of B x bn rows of A a tile), every M including those past
    one column tile, ragged N and K, split or not; the same bits on a second run."""
    M, N, K = shape
    A = torch.randn(M, K, device="cuda", dtype=torch.float16)
    B = torch.randn(K, N, device="cuda", dtype=torch.float16)
    C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    _matches_twice(torch, G.make_gemm(M, N, K, dtype="float16", swap=True,
                                      **{"bm": 128, **cfg}), A, B, C)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", [{"bn": 208, "splits": 1}, {"bm": 64, "bn": 208, "splits": 1},
                                 {"bn": 96, "splits": 3}, {"bn": 256, "splits": 1},
                                 {"bm": 64, "bn": 160, "splits": 2}, {"bn": 40, "splits": 1},
                                 {"bn": 200, "streamk": True}, {"bn": 152, "splits": 1},
                                 {"bm": 64, "bn": 144, "streamk": True},
                                 {"bn": 72, "multicast": 2}, {"bm": 64, "bn": 48, "multicast": 2}])
@pytest.mark.parametrize("shape", [(200, 5120, 5120), (96, 768, 3072), (129, 2056, 520),
                                   (256, 1000, 1048), (33, 3000, 4096), (300, 1000, 2000)])
def test_swap_ab_tiles_of_any_width_on_the_gpu_match_torch(shape, cfg, torch):
    """Swapped tiles of any width (a multiple of 8; 16 at bm=64) up to 256 rows of A, as
    the plan takes them for M <= 512 (M rounded up, or cut into 2-4 column tiles): M past
    one column tile and inside one, a split, stream-K; C poisoned, twice."""
    M, N, K = shape
    A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    B = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    _matches_twice(torch, G.make_gemm(M, N, K, swap=True, **{"bm": 128, **cfg}), A, B, C)


@pytest.mark.gpu
@pytest.mark.parametrize("shape,cfg", [
    ((3000, 1000, 2560), {"bn": 192}), ((3000, 1000, 2560), {"bn": 232, "streamk": True}),
    ((777, 11008, 4096), {"bn": 136}), ((777, 11008, 4096), {"bn": 200, "streamk": True}),
    ((600, 8192, 4096), {"bn": 152}), ((1037, 520, 1048), {"bn": 176}),
    ((5000, 3072, 768), {"bn": 232, "transB": True}),
    ((3000, 1000, 2560), {"bn": 192, "multicast": 2}),
    ((777, 11008, 4096), {"bn": 136, "multicast": 2, "transB": True})])
def test_swapped_tiles_above_m_512_on_the_gpu_match_torch(shape, cfg, torch):
    """The tuner's swapped tiles for M > SWAP_M: M cut into column tiles of 128-256 rows,
    many tile columns (M past several column tiles, a ragged last one), stream-K, B as
    (N, K); C poisoned, twice."""
    M, N, K = shape
    cfg = dict(cfg)
    transB = cfg.pop("transB", False)
    A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    B = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    k = G.make_gemm(M, N, K, swap=True, bm=128, transB=transB, **cfg)
    if transB:
        _matches_twice(torch, k, A, B, C, ref=A.double() @ B.double().t())
    else:
        _matches_twice(torch, k, A, B.t().contiguous(), C)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", [{"bm": 128, "bn": 256}, {"bm": 128, "bn": 128},
                                 {"bm": 64, "bn": 256}, {"bm": 128, "bn": 192},
                                 {"bm": 128, "bn": 16, "swap": True},
                                 {"bm": 128, "bn": 256, "transB": True}])
@pytest.mark.parametrize("shape", [(777, 11008, 4096), (200, 5120, 5120), (3000, 1000, 2560),
                                   (96, 768, 3072), (1000, 3000, 520), (5, 4096, 4096)])
def test_stream_k_on_the_gpu_matches_torch(shape, cfg, torch):
    """streamk=True on the H200 against float64, three launches in a row on one stream
    (the flags must be back at zero for the next) and one on a second stream (its own
    workspace), all with C poisoned."""
    k = G.make_gemm(*shape, streamk=True, **cfg)
    for _ in _launches_checked(torch, k, shape, cfg.get("transB", False), 4):
        pass
    assert len(k._bufs) == 2
    assert all(not bool(F.any()) for _, F in k._bufs.values())


def _launches_checked(torch, k, shape, transB, launches):
    """Launch ``k(A, B, C)`` on random A, B (B as (N, K) with ``transB``) ``launches``
    times on a fresh NaN-poisoned C, the last on a second stream (its own workspace), and
    check each C against float64; yields each C."""
    M, N, K = shape
    A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    B = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    ref = A.double() @ B.double()
    Bk = B.t().contiguous() if transB else B
    side = torch.cuda.Stream()
    for launch in range(launches):
        C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        if launch == launches - 1:
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                k(A, Bk, C)
            torch.cuda.current_stream().wait_stream(side)
        else:
            k(A, Bk, C)
        err = (C.double() - ref).abs()
        assert not torch.isnan(C).any(), launch
        assert bool((err <= 2.0 ** -7 * ref.abs() + 2.0 ** -6 * (K / 128) ** 0.5).all()), \
            (launch, float(err.max()))
        yield C


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", [{"bm": 128, "bn": 128, "global_splits": 66},
                                 {"bm": 128, "bn": 64, "global_splits": 16},
                                 {"bm": 64, "bn": 64, "swap": True, "global_splits": 8},
                                 {"bm": 128, "bn": 64, "global_splits": 4, "transB": True},
                                 {"bm": 128, "bn": 96, "swap": True, "global_splits": 7,
                                  "persistent": False}])
@pytest.mark.parametrize("shape", [(128, 128, 65536), (512, 512, 8192), (64, 1024, 8192),
                                   (200, 520, 3000), (96, 768, 3072), (5, 4096, 4096)])
def test_a_split_through_global_memory_on_the_gpu_matches_torch(shape, cfg, torch):
    """global_splits on the H200 against float64, C poisoned each time: two launches in a
    row give the same bits (the slices are added in one order), a third on a second stream
    (its own workspace) too."""
    k = G.make_gemm(*shape, **cfg)
    outs = [C.clone() for C in _launches_checked(torch, k, shape, cfg.get("transB", False), 3)]
    assert all(torch.equal(C, outs[0]) for C in outs[1:])  # the same bits every launch
    assert len(k._bufs) == 2


@pytest.mark.gpu
def test_stream_k_first_called_inside_a_cuda_graph_capture(torch):
    """The workspace made during a capture (no device synchronize there: the flags' zeros
    become part of the graph, before the kernel), then replayed twice."""
    M, N, K = 777, 11008, 4096
    A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    B = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    k = G.make_gemm(M, N, K, bm=128, bn=256, streamk=True)
    k(A, B, C)  # compiled and loaded outside the capture (its buffers: this stream's)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.cuda.graph(g, stream=side):
        k(A, B, C)
    torch.cuda.current_stream().wait_stream(side)
    ref = A.double() @ B.double()
    for _ in range(2):
        C.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        err = (C.double() - ref).abs()
        assert not torch.isnan(C).any()
        assert bool((err <= 2.0 ** -7 * ref.abs() + 2.0 ** -6 * (K / 128) ** 0.5).all())
    assert len(k._bufs) == 2  # the side stream's were made inside the capture


def test_calling_the_kernel_without_a_gpu_says_so():
    """``k(A, B, C)`` compiles for the device's target, in a fresh interpreter that imported
    only the example; with no GPU that is a clear LaunchError."""
    import subprocess
    import sys

    from tilewise import runtime

    if runtime.gpu_available():
        pytest.skip("this machine has a GPU: the launch itself is tested above")
    code = ("import sys; sys.path.insert(0, 'examples'); import gemm_hopper as g, numpy as np\n"
            "try:\n    g.gemm(*g.inputs(np.random.default_rng(0), (128, 256, 64)))\n"
            "except Exception as e:\n    print(type(e).__name__, e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=120).stdout
    assert out.startswith("LaunchError launch error: no CUDA GPU"), out


def test_transB_padded_refuses_b_in_the_other_orientation():
    a, b, c = G.inputs(np.random.default_rng(6), (37, 203, 100), "bfloat16")
    with pytest.warns(tw.TilewisePerformanceWarning):
        k = G.make_gemm(37, 203, 100, transB=True, num_sms=G.H200_SMS)
    with pytest.raises(tw.LaunchError, match=r"B \(203, 100\)"):
        tw.simulate(k, a, b, c)  # B as (K, N): the wrong orientation for transB


TRANSB_SHAPES = [(4096, 4096, 4096), (77, 1000, 3000), (1, 4096, 4096), (600, 520, 8192),
                 (37, 1001, 100)]
TRANSB_CASES = [(shape, cfg) for cfg in (
    {}, {"dtype": "float16", "producer": "warp"}, {"bm": 128, "bn": 192},
    {"bm": 128, "bn": 128, "splits": 3}, {"bm": 128, "bn": 256, "multicast": 2},
    {"bm": 128, "bn": 128, "persistent": False}) for shape in TRANSB_SHAPES] + [
    # the swapped tiles on the decode shape they are made for (M = 1: one column tile)
    ((1, 4096, 4096), {"swap": True, "bm": 128, "bn": 16}),
    ((1, 4096, 4096), {"swap": True, "bm": 64, "bn": 32, "splits": 2})]


@pytest.mark.gpu
@pytest.mark.parametrize("shape,cfg", TRANSB_CASES)
def test_transB_on_the_gpu_matches_torch(shape, cfg, torch):
    """C = A @ B.T with B given as (N, K): every kernel shape, and the padded form."""
    import warnings

    M, N, K = shape
    td = getattr(torch, cfg.get("dtype", "bfloat16"))
    A = torch.randn(M, K, device="cuda", dtype=td)
    Bt = torch.randn(N, K, device="cuda", dtype=td)
    C = torch.full((M, N), float("nan"), device="cuda", dtype=td)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tw.TilewisePerformanceWarning)
        k = G.make_gemm(M, N, K, transB=True, **cfg)
    k(A, Bt, C)
    ref = A.double() @ Bt.double().T
    err = (C.double() - ref).abs()
    assert not torch.isnan(C).any()
    assert bool((err <= 2.0 ** -7 * ref.abs() + 2.0 ** -6 * (K / 128) ** 0.5).all()), \
        float(err.max())


def test_m_up_to_512_takes_swapped_tiles_cut_to_fit_m():
    """Above M = 128 the swapped tiles are M rounded up to 8, or cut into 2-4 equal column
    tiles (>= 32 rows each, at most 256): M = 200 tries 200, 104, 72 and 56 rows of A; the
    tuner times the three best normal tiles and one swapped beside the plan (the estimate
    ranks a swapped 128 x 128 like the normal one at M = 256, and the normal ones won
    there on the H200); M <= 128 keeps the measured decode widths."""
    assert [bn for bm, bn in G.swap_widths(200) if bm == 128] == [56, 72, 104, 200]
    assert [bn for bm, bn in G.swap_widths(300) if bm == 128] == [80, 104, 152]  # 304 > 256
    assert [bn for bm, bn in G.swap_widths(64) if bm == 128] == [64]
    assert [bn for bm, bn in G.swap_widths(20) if bm == 128] == [24, 32]
    assert all(bn % 16 == 0 for bm, bn in G.swap_widths(200) if bm == 64)
    for shape in ((200, 5120, 5120), (256, 4096, 14336), (300, 8192, 8192), (512, 4096, 4096)):
        first = G.plan(*shape, 132)
        cs = [c for c in G.tune_configs(*shape, 132, first) if c.get("persistent", True)
              and not c.get("streamk") and c["multicast"] == 1
              and "global_splits" not in c]  # (pairs, splits through memory: their own tests)
        normal = {(c["bm"], c["bn"]) for c in cs[1:] if not c["swap"]}
        assert len(normal) == 3 and sum(c["swap"] for c in cs[1:]) == 1, (shape, cs)
    assert G.wgmma_eff(72) == pytest.approx(0.7 + 0.15 * 8 / 64)


def test_above_m_512_swapped_tiles_cut_to_fit_m_are_taken_where_they_gain():
    """Above SWAP_M the swapped candidates are M cut into column tiles of 128-256 rows; the
    plan (what runs untuned) takes the best swapped shape, and the tuner times it, only
    where the estimate puts it 3 % below the best normal one: a 3000 x 1000 product in 128
    tiles of 128 x 192 (132 SMs) against 96 of 128 x 256, not the transposed twins of a
    large square."""
    # 3000 rows in 12 ... 24 column tiles, each rounded up to 8
    assert [bn for bm, bn in G.swap_widths(3000)] == [
        128, 136, 144, 152, 160, 168, 184, 192, 200, 216, 232, 256]
    assert all(bm == 128 and 128 <= bn <= 256 for bm, bn in G.swap_widths(777))
    for shape in ((3000, 1000, 2560), (777, 11008, 4096), (600, 8192, 4096)):
        first = G.plan(*shape, 132)
        assert first["swap"] and first["bm"] == 128 and 128 <= first["bn"] <= 256, first
        normal = G.plan(*shape, 132, swap=False)
        key = ("bm", "bn", "splits", "multicast", "swap")
        assert G.estimate(*shape, 132, **{k: first[k] for k in key}) < G.SWAP_GAIN * \
            G.estimate(*shape, 132, **{k: normal[k] for k in key})
        cs = G.tune_configs(*shape, 132, first)
        assert sum(not c["swap"] and c.get("persistent", True) and not c.get("streamk")
                   and c["multicast"] == 1
                   for c in cs) == G.TUNE_ALTERNATIVES, cs  # the normal tiles are timed too
    assert G.plan(3000, 1000, 2560, 132)["bn"] == 192  # 128 tiles for 132 SMs
    # what runs untuned (here, in the simulator) is that swapped shape: 1100 rows in 8
    # column tiles of 144 for 8 CTAs
    k = G.make_gemm(1100, 128, 256, num_sms=8)
    cfg = k.configs[0]
    assert cfg["swap"] and cfg["bn"] == 144, cfg
    a, b, c = G.inputs(np.random.default_rng(6), (1100, 128, 256))
    tw.simulate(k, a, b, c)
    _check(c, a, b)
    for shape in ((4096, 4096, 4096), (8192, 8192, 8192), (2048, 4096, 14336)):
        first = G.plan(*shape, 132)
        assert not any(c["swap"] for c in [first] + G.tune_configs(*shape, 132, first)), shape
    assert G.make_gemm(3000, 1000, 2560, bn=192, swap=True).launch_config is not None
    assert G.wgmma_eff(72) == pytest.approx(0.7 + 0.15 * 8 / 64)
