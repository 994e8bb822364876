"""examples/gemm_fp8.py: the FP8 GEMM (block / row / tensor scales, two-level accumulation)
in the simulator at small sizes with ragged tails, every hazard check on, against a float64
product of the dequantised inputs; (marked gpu) on the H200 against the same reference and
against torch._scaled_mm (cuBLASLt) on the same inputs.

Tolerance. C is bf16: rounding is at most 2^-9 of |C|. The simulator adds each fp8 wgmma's
exact 32-term sum to the float32 partial with one rounding, and the promotion is float32, so
beyond the bf16 rounding only float32 roundings remain: |C - ref| <= 2^-8 |ref| + 1e-5
max|ref|. Hopper's fp8 wgmma keeps fewer bits while it accumulates (measured on the H200:
3.8e-4 of the largest |partial| after 128 of K; the simulator does not model it), so the GPU
is held to 2^-8 |ref| + 2e-3 max|ref|, and its relative error is compared with cuBLASLt's.
"""

import numpy as np
import pytest
from exload import load_example

import tilewise as tw
from tilewise.autotune import Autotuned
from tilewise.errors import LaunchError
from tilewise.ir import PrimFunc
from tilewise.layout import wgmma_accumulator_columns, wgmma_accumulator_rows
from tilewise.pipeline import lower
from tilewise.ptx import wgmma

F = load_example("gemm_fp8")


def _check(c, args, scaling, atol=1e-5):
    a, b, sa, sb = args[:4]
    a64, b64 = F.dequantize(a, sa, b, sb, scaling)
    ref = a64 @ b64.T
    got = c.astype(np.float64)
    assert not np.isnan(got).any(), "some of C was never written"
    bad = np.abs(got - ref) > 2.0 ** -8 * np.abs(ref) + atol * np.abs(ref).max()
    assert not bad.any(), f"{int(bad.sum())} entries off, first at {tuple(np.argwhere(bad)[0])}"


CASES = [  # (id, scaling, (M, N, K), make_gemm_fp8 options)
    ("block-128x128-tails", "block", (130, 72, 208), {}),
    ("block-64x32-K-tail", "block", (100, 80, 400), dict(bm=64, bn=32)),
    ("block-256x64-two-row-waves", "block", (130, 72, 144), dict(bm=256, bn=64)),
    ("block-cta-pairs-multicast-B", "block", (150, 72, 144), dict(bm=64, bn=64, cluster=2)),
    ("row-cta-pairs-multicast-A", "row", (72, 136, 144), dict(bm=64, bn=64, cluster=2,
                                                            share="a")),
    ("row", "row", (130, 72, 208), {}),
    ("tensor-fast-accum", "tensor", (130, 72, 208), dict(fast_accum=True)),
    ("block-overlap-even-k", "block", (130, 72, 400), dict(overlap=True)),  # 4 blocks: 2 pairs
    ("row-overlap-odd-k-pairs", "row", (72, 136, 272), dict(bm=64, bn=64, cluster=2,
                                                            overlap=True)),  # 3: a pair + 1
    ("row-128x192-straddling", "row", (200, 456, 384), dict(bm=128, bn=192)),  # N: 2.4 tiles
    ("tensor-128x192-straddling", "tensor", (130, 200, 144), dict(bm=128, bn=192)),
    # block scales per 64-column chunk: tiles at columns 0, 192, 384 take SB blocks
    # (0, 0, 1), (1, 2, 2), (3, 3, 4); N = 456 ends in the third tile's second chunk
    ("block-128x192-straddling", "block", (150, 456, 400), dict(bm=128, bn=192)),
]


@pytest.mark.parametrize("cid,scaling,shape,kw", CASES, ids=[c[0] for c in CASES])
def test_the_fp8_gemm_in_the_simulator(cid, scaling, shape, kw):
    args = F.inputs(np.random.default_rng(1), shape, scaling)
    rep = tw.simulate(F.make_gemm_fp8(*shape, scaling=scaling, num_sms=2, **kw), *args)
    assert rep.ok
    _check(args[-1], args, scaling)


def test_two_column_waves_over_two_scale_blocks_in_the_simulator():
    """bn 256: each warpgroup's two waves of 128 columns use two blocks of SB; N = 264 ends
    inside the second tile's first wave (its second wave is past N: its SB row clamps)."""
    args = F.inputs(np.random.default_rng(2), (72, 264, 144))
    assert tw.simulate(F.make_gemm_fp8(72, 264, 144, bm=128, bn=256, num_sms=2), *args).ok
    _check(args[-1], args, "block")


def test_scales_in_deepgemm_mn_major_layout():
    """SA as DeepGEMM lays it out for TMA (MN-major: sa.T.contiguous().T) and SB transposed:
    the kernel binds their strides at launch."""
    shape = (136, 72, 272)
    a, b, sa, sb, c = F.inputs(np.random.default_rng(3), shape)
    sa_mn, sb_t = np.ascontiguousarray(sa.T).T, np.ascontiguousarray(sb.T).T
    assert sa_mn.strides == (4, 4 * 136)
    tw.simulate(F.make_gemm_fp8(*shape, num_sms=2), a, b, sa_mn, sb_t, c)
    _check(c, [a, b, sa, sb], "block")


def test_the_log_shows_k_major_fp8_wgmma_and_the_promotion():
    log = {d.call.split("(")[0] + ":" + d.chosen: d.info
           for d in lower(F.make_gemm_fp8(4096, 4096, 4096, bm=128, bn=128),
                          "sm_90a").dispatch_log}
    assert log["Tx.wg.gemm_async:wgmma"] == [
        "4 x wgmma m64n128k32 (A K-major, swizzle 128; B K-major, swizzle 128)"]
    assert "Tx.wg.fma:reg" in log and "Tx.thread.copy_async:tma" in log
    ptx = tw.compile(F.make_gemm_fp8(4096, 4096, 4096, bm=128, bn=128), "sm_90a").source("ptx")
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3") == 4
    assert ".reqntid 384" in ptx  # so that ptxas honours setmaxnreg (whole-program)


def test_a_pair_frees_each_stage_from_two_warps_at_cta_scope():
    """In CTA pairs each consumer warpgroup frees a stage in both CTAs, warp 0 in rank 0 and
    warp 2 in rank 1 (as CUTLASS spreads them): no warp issues both remote arrivals before
    the warpgroup's next wgmma (H200: the pairs 1-4 % faster, benchmarks/RESULTS.md), and
    no cluster-scope release (the stage's reads are done)."""
    import re

    for share in ("b", "a"):
        k = tw.compile(F.make_gemm_fp8(512, 512, 256, "block", False, 128, 128, None, 4, 2,
                                       share, overlap=True), "sm_90a")
        frees = re.findall(r"if tid % 128 == (\d+):\n\s+T\.ptx\.mbarrier\.arrive\.expect_tx"
                           r"\(T\.address_of\(empty\[[^\]]+\]\), 0, (\d), None, 'cta'\)",
                           k.source("lowered"))
        assert frees and set(frees) == {("0", "0"), ("64", "1")}, frees
        assert "release.cluster.shared::cluster" not in k.ptx


def test_the_vectors_beside_the_accumulator_hold_each_thread_s_rows_and_columns():
    """wgmma_accumulator_rows / _cols: thread t holds, in register i, the row (column) of
    its accumulator values that read it (the ISA formula, ptx/wgmma.py)."""
    rows, cols = wgmma_accumulator_rows(), wgmma_accumulator_columns(32)
    for t in (0, 5, 37, 127):
        for v in range(16):
            r, c = wgmma.acc_coords(t, v)
            assert {"wid_in_wg": t // 32, "laneid": t % 32, "m": v % 4 // 2} in [
                {k: p[k] for k in ("wid_in_wg", "laneid", "m")} for p in rows.apply_all(r, 0, shape=(64, 1))]
            assert {"wid_in_wg": t // 32, "laneid": t % 32, "m": 2 * (v // 4) + v % 2} in [
                {k: p[k] for k in ("wid_in_wg", "laneid", "m")} for p in cols.apply_all(c, shape=(32,))]


def test_wrong_scale_shapes_are_launch_errors_naming_the_parameter():
    a, b, sa, sb, c = F.inputs(np.random.default_rng(4), (136, 72, 272))
    with pytest.raises(LaunchError, match=r"'SA' has shape \(136, 2\), the kernel expects "
                       r"\(M, \(K \+ 127\) // 128\) = \(136, 3\)"):
        tw.simulate(F.make_gemm_fp8(num_sms=2), a, b, sa[:, :2].copy(), sb, c)


@pytest.mark.parametrize("kw,msg", [
    (dict(scaling="rows"), "scaling='rows'"), (dict(bm=96), "bm=96"),
    (dict(scaling="block", fast_accum=True), "fast_accum=True is for 'row' and 'tensor'"),
    (dict(K_=200), "K = 200 is not a multiple of 16"),
    (dict(bn=256, overlap=True), "overlap=True needs a tile of one wave a warpgroup"),
    (dict(scaling="row", bm=128, bn=192, overlap=True), "not 128 x 192: two partials"),
    (dict(scaling="row", fast_accum=True, overlap=True), "fast_accum=True has none"),
])
def test_factory_arguments_are_checked(kw, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(")):
        F.make_gemm_fp8(**{"M_": 128, "N_": 128, "K_": 256, **kw})


def test_the_grouped_kernels_refuse_the_straddling_tile_and_say_why():
    """The dense kernel promotes a 128 x 192 wave per 64-column chunk; the grouped ones
    apply one SB per wave, so they refuse it rather than scale columns wrongly."""
    with pytest.raises(ValueError, match="straddle B's 128-column scale blocks, and this "
                       "kernel applies one scale of B per wave"):
        F.make_grouped_gemm_fp8(3, 136, 272, bm=128, bn=192)


@pytest.mark.parametrize("scaling", ["block", "row", "tensor"])
def test_sizes_from_129_rows_tune_the_model_tile_the_wide_tiles_and_the_overlap(scaling):
    """make_gemm_fp8(M, N, K) tunes on its first launch above M = 128, in every scaling
    (from M = 1024 with the 256-row tile, below it the model's tile first):
    the model's tile (what runs untuned with row / tensor scales), the wide tiles it is not,
    and the overlapped 128 x 128 (first with block scales: what runs untuned there); the
    simulator, forced shapes, fast_accum and small M take one kernel."""
    k = F.make_gemm_fp8(4096, 2112, 7168, scaling, num_sms=132)
    assert isinstance(k, Autotuned)
    model = F.choose_tile(4096, 2112, 132, wide=scaling == "block", straddling=True)
    tiles = F.TUNE_TILES + F.TUNE_STRADDLING
    wide = [{"bm": bm, "bn": bn} for bm, bn in tiles if (bm, bn) != (model.bm, model.bn)]
    ovl = {"bm": 128, "bn": 128, "overlap": True}
    assert k.configs == ([ovl, {}] + wide if scaling == "block" else [{}] + wide + [ovl])
    assert k.heuristic() is k.kernel(0)
    assert len({id(k.kernel(i)) for i in range(len(k.configs))}) == len(k.configs)
    assert k.kernel(1) is not k.kernel(0)
    for kw in ({"bm": 128, "bn": 256}, {"overlap": True, "bm": 128, "bn": 128}, {}):
        shape = (4096, 2112, 7168) if kw else (128, 2112, 7168)  # M <= 128: the model's
        assert isinstance(F.make_gemm_fp8(*shape, scaling, num_sms=132, **kw), PrimFunc), kw
    # M from 129 to 1023: the model's tile first (untuned), then those of <= 128 rows
    mid = F.make_gemm_fp8(300, 7168, 2048, scaling, num_sms=132)
    assert isinstance(mid, Autotuned)
    assert mid.configs == [{}, {"bm": 128, "bn": 256}, {"bm": 128, "bn": 192}, ovl]
    if scaling != "block":
        assert isinstance(F.make_gemm_fp8(4096, 2112, 7168, scaling, fast_accum=True),
                          PrimFunc)


def test_the_tile_model_fills_the_sms():
    """Small M takes narrow tiles (enough CTAs for the bandwidth), M = 4096 wide ones."""
    small = F.choose_tile(64, 2112)
    assert (small.bm, small.bn) == (64, 32) and small.sms == 66
    big = F.choose_tile(4096, 7168)
    assert big.bm * big.bn >= 128 * 128 and big.sms == 132 and big.stages >= 3


# ------------------------------------------------------------------------------------ GPU
def to_torch(torch, x):
    """A numpy array on the GPU (fp8 and bf16 through their bits), strides kept."""
    import ml_dtypes

    if x.dtype == ml_dtypes.float8_e4m3fn:
        return torch.from_numpy(x.view(np.uint8)).cuda().view(torch.float8_e4m3fn)
    if x.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(x.view(np.int16)).cuda().view(torch.bfloat16)
    return torch.from_numpy(x).cuda()


def _torch_inputs(torch, shape, scaling, seed=0):
    """The numpy inputs of :func:`F.inputs` and their copies on the GPU (C poisoned)."""
    args = F.inputs(np.random.default_rng(seed), shape, scaling)
    return args, [to_torch(torch, x) for x in args]


def _rel(got, ref):
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


@pytest.mark.gpu
@pytest.mark.parametrize("scaling", ["block", "row", "tensor"])
@pytest.mark.parametrize("shape", [(200, 136, 272), (1000, 2112, 7168), (64, 4096, 1536),
                                   (1030, 2112, 1024)],
                         ids=["tails", "2112x7168", "M64", "tuned-1030x2112"])
def test_the_fp8_gemm_on_the_gpu(scaling, shape):
    torch = pytest.importorskip("torch")
    args, (a, b, sa, sb, c) = _torch_inputs(torch, shape, scaling)
    F.make_gemm_fp8(*shape, scaling=scaling)(a, b, sa, sb, c)
    got = c.float().cpu().numpy().astype(np.float64)
    _check(got, args, scaling, atol=2e-3)
    a64, b64 = F.dequantize(*[args[i] for i in (0, 2, 1, 3)], scaling)
    ref = a64 @ b64.T
    if scaling == "block":
        return  # cuBLASLt's block scaling is compared in benchmarks/bench_gemm_fp8.py
    if any(d % 16 for d in shape):
        return  # torch._scaled_mm takes sizes in steps of 16 only; the float64 check stands
    scale_a = sa if scaling == "row" else sa.reshape(())
    scale_b = sb if scaling == "row" else sb.reshape(())
    theirs = torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=torch.bfloat16)
    ours_err = _rel(got, ref)
    cublas_err = _rel(theirs.float().cpu().numpy().astype(np.float64), ref)
    assert ours_err <= 1.1 * cublas_err + 1e-5, (ours_err, cublas_err)


@pytest.mark.gpu
@pytest.mark.parametrize("scaling", ["block", "row"])
@pytest.mark.parametrize("K", [7168, 1040], ids=["even-k", "odd-k"])
def test_overlapped_promotion_on_the_gpu(scaling, K):
    """overlap=True (k-blocks in pairs, two partials) on the hardware: an even and an odd
    number of k-blocks, a ragged M and N."""
    torch = pytest.importorskip("torch")
    shape = (1000, 1048, K)
    args, (a, b, sa, sb, c) = _torch_inputs(torch, shape, scaling, seed=6)
    F.make_gemm_fp8(*shape, scaling=scaling, bm=128, bn=128, overlap=True)(a, b, sa, sb, c)
    _check(c.float().cpu().numpy(), args, scaling, atol=2e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("scaling", ["block", "row", "tensor"])
def test_the_straddling_128x192_tile_on_the_gpu(scaling):
    """128 x 192 (its columns straddle B's scale blocks: block scales per 64-column
    chunk) on the hardware: N = 2112 in 11 tiles, and a ragged M, N and K."""
    torch = pytest.importorskip("torch")
    for shape in ((1000, 2112, 1024), (1000, 1048, 1040)):
        args, (a, b, sa, sb, c) = _torch_inputs(torch, shape, scaling, seed=7)
        F.make_gemm_fp8(*shape, scaling=scaling, bm=128, bn=192)(a, b, sa, sb, c)
        _check(c.float().cpu().numpy(), args, scaling, atol=2e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("bm,bn,cluster,share", [
    (64, 32, 1, "b"), (128, 128, 1, "b"), (256, 128, 1, "b"), (128, 256, 2, "b"),
    (64, 64, 2, "a"), (256, 64, 2, "b")])
def test_every_kind_of_tile_on_the_gpu(bm, bn, cluster, share):
    """Each tile shape and both multicasts (TMA into two CTAs, remote mbarrier arrives) on
    the hardware, one ragged shape (an odd number of m- and n-tiles)."""
    torch = pytest.importorskip("torch")
    shape = (1000, 1048, 1040)
    args, (a, b, sa, sb, c) = _torch_inputs(torch, shape, "block", seed=5)
    F.make_gemm_fp8(*shape, bm=bm, bn=bn, cluster=cluster, share=share)(a, b, sa, sb, c)
    _check(c.float().cpu().numpy(), args, "block", atol=2e-3)
