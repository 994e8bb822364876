"""examples/gemm_grouped.py: the grouped (MoE) GEMMs, fp8 with block scales and bf16, in the
contiguous layout (padded segments, m_indices, a group with no rows) and the masked layout
(masked_m, an empty group, a full one), in the simulator against a float64 reference of the
groups' valid rows (tolerances as tests/gemm/test_gemm_fp8.py states; bf16 inputs are exact
in float32 products, so the same bound holds), and (marked gpu) on the H200."""

import numpy as np
import pytest
from exload import load_example
from test_gemm_fp8 import to_torch

import tilewise as tw

GG = load_example("gemm_grouped")


def _check(c, ref, atol=1e-5):
    got = c.astype(np.float64)
    valid = ~np.isnan(ref)
    assert not np.isnan(got[valid]).any(), "some of a group's rows were never written"
    bad = np.abs(got - ref)[valid] > (2.0 ** -8 * np.abs(ref) + atol * np.nanmax(np.abs(ref)))[
        valid]
    assert not bad.any(), f"{int(bad.sum())} entries off"


CASES = [  # (id, layout, counts, fp8, options)
    ("fp8-contiguous", "contiguous", (100, 0, 130), True, dict(bn=64)),
    ("fp8-masked", "masked", (70, 0, 136), True, dict(bm=64, bn=64)),
    ("bf16-contiguous", "contiguous", (60, 128), False, {}),
    ("bf16-masked", "masked", (0, 130), False, dict(bn=64)),
    ("fp8-contiguous-overlap", "contiguous", (60, 128), True, dict(bn=64, overlap=True)),
]


@pytest.mark.parametrize("cid,layout,counts,fp8,kw", CASES, ids=[c[0] for c in CASES])
def test_grouped_gemms_in_the_simulator(cid, layout, counts, fp8, kw):
    N, K = 72, 144 if fp8 else 136
    args = GG.grouped_inputs(np.random.default_rng(6), layout, counts, N, K, fp8)
    make = GG.make_grouped_gemm_fp8 if fp8 else GG.make_grouped_gemm_bf16
    assert tw.simulate(make(len(counts), N, K, layout, num_sms=2, **kw), *args).ok
    _check(args[-2], GG.grouped_reference(args, layout, fp8))
    if layout == "masked":  # rows past the last tile of a group are not written
        empty = [g for g, n in enumerate(counts) if n == 0]
        assert np.isnan(args[-2][empty].astype(np.float32)).all()


def test_contiguous_indices_pad_each_segment():
    L = GG.contiguous_indices([3, 0, 128, 1], align=4)
    assert L.tolist() == [0, 0, 0, -1] + [2] * 128 + [3, -1, -1, -1]


@pytest.mark.parametrize("kw,msg", [(dict(layout="dense"), "layout='dense'"),
                                    (dict(bm=256), "bm=256")])
def test_grouped_factory_arguments_are_checked(kw, msg):
    with pytest.raises(ValueError, match=msg):
        GG.make_grouped_gemm_fp8(**{"num_groups": 4, "N_": 256, "K_": 256, **kw})


def test_grouped_fp8_sizes_from_1024_rows_tune_the_model_tile_against_the_overlap():
    """With N, K and the rows known (contiguous M_, masked expected_m x groups) from 1024
    rows on, the fp8 factory tunes on its first launch between the model's wide tile and
    128 x 128 with overlap=True, the overlapped one first (the heuristic) for the contiguous
    layout and the model's for the masked one; candidates rebuild in the compile workers
    (a recipe); pinned tiles, unknown rows, bf16 and few rows take one kernel."""
    from tilewise.autotune import Autotuned
    from tilewise.compile_pool import Recipe
    from tilewise.ir import PrimFunc

    for layout, kw in (("contiguous", dict(M_=27675)), ("masked", dict(expected_m=256))):
        k = GG.make_grouped_gemm_fp8(8, 4096, 7168, layout, num_sms=132, **kw)
        assert isinstance(k, Autotuned), layout
        ovl = {"bm": 128, "bn": 128, "overlap": True}
        assert k.configs == ([ovl, {}] if layout == "contiguous" else [{}, ovl]), layout
        assert Recipe.of(k.factory) is not None
        assert isinstance(k.kernel(0), PrimFunc) and isinstance(k.kernel(1), PrimFunc)
        assert k.kernel(0) is not k.kernel(1)
    for args, kw in (((8, 4096, 7168, "contiguous"), dict(M_=27675, bm=128, bn=128)),
                     ((8, 4096, 7168, "masked"), {}),
                     ((8, 4096, 7168, "contiguous"), dict(M_=512))):
        assert isinstance(GG.make_grouped_gemm_fp8(*args, num_sms=132, **kw), PrimFunc), kw
    assert isinstance(GG.make_grouped_gemm_bf16(4, 4096, 7168, M_=27675), PrimFunc)


@pytest.mark.gpu
@pytest.mark.parametrize("layout,counts", [
    ("contiguous", (1000, 0, 4096, 37)), ("masked", (256, 0, 100, 512))])
@pytest.mark.parametrize("fp8", [True, False], ids=["fp8", "bf16"])
def test_grouped_gemms_on_the_gpu(layout, counts, fp8):
    torch = pytest.importorskip("torch")
    N, K = 4096, 7168 if fp8 else 2048
    args = GG.grouped_inputs(np.random.default_rng(7), layout, counts, N, K, fp8)
    dev = [to_torch(torch, x) for x in args]
    make = GG.make_grouped_gemm_fp8 if fp8 else GG.make_grouped_gemm_bf16
    make(len(counts), N, K, layout)(*dev)
    _check(dev[-2].float().cpu().numpy(), GG.grouped_reference(args, layout, fp8), atol=2e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("layout,counts", [
    ("contiguous", (1000, 0, 4096, 37)), ("masked", (256, 0, 100, 512))])
def test_the_tuned_grouped_fp8_gemm_on_the_gpu(layout, counts):
    """The sizes given (rows known): the factory tunes on the first launch (both candidates
    run on these arrays) and the winner's output is checked."""
    torch = pytest.importorskip("torch")
    N, K = 4096, 2048
    args = GG.grouped_inputs(np.random.default_rng(9), layout, counts, N, K, True)
    dev = [to_torch(torch, x) for x in args]
    rows = dict(M_=dev[0].shape[0]) if layout == "contiguous" else dict(expected_m=512)
    k = GG.make_grouped_gemm_fp8(len(counts), N, K, layout, **rows)
    k(*dev)
    _check(dev[-2].float().cpu().numpy(), GG.grouped_reference(args, layout, True), atol=2e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("layout,counts,K", [
    ("contiguous", (1000, 0, 4096, 37), 7168), ("masked", (256, 0, 100, 512), 1040)])
def test_grouped_overlapped_promotion_on_the_gpu(layout, counts, K):
    """overlap=True (128 x 128 tiles, k-blocks in pairs) on the hardware: an even and an
    odd number of k-blocks."""
    torch = pytest.importorskip("torch")
    args = GG.grouped_inputs(np.random.default_rng(8), layout, counts, 4096, K, True)
    dev = [to_torch(torch, x) for x in args]
    GG.make_grouped_gemm_fp8(len(counts), 4096, K, layout, bm=128, bn=128,
                             overlap=True)(*dev)
    _check(dev[-2].float().cpu().numpy(), GG.grouped_reference(args, layout, True), atol=2e-3)
