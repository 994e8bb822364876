"""TMA round trips over the swizzle x dtype x rank x edge matrix, in the simulator and
(marked ``gpu``) on the GPU: the tile the load places in shared memory (swizzle included)
and the array the store writes back equal numpy's model of the tilewise layout, byte for
byte; out-of-bounds elements are filled (zero or NaN) on loads and skipped on stores. TMA
store reductions, a staged producer loop and TMA feeding wgmma, on both executors too.

    PYTHONPATH=src python -m pytest -q -m gpu tests/tma
"""

import numpy as np
import pytest

import tilewise as tw
from executors import assert_same_bytes, run
from kernels_tma import expected, inputs, make_roundtrip
from matrix import CASES
from tilewise.pipeline import lower


@pytest.mark.parametrize("case", [  # every 2-D case; the 3-D and 5-D ones sampled
    pytest.param(c, id=c.id, marks=pytest.mark.slow if c.rank > 2 else ()) for c in CASES])
def test_roundtrip_matches_numpy(executor, case):
    k = make_roundtrip(case.rank, case.dtype, case.swizzle, case.tile, case.blocked, case.oob)
    arrays = inputs(np.random.default_rng(7), case.shape, case.tile, case.dtype)
    want = expected(arrays[0], case.tile, case.dtype, case.swizzle, case.blocked, case.oob)
    run(executor, k, arrays)
    assert_same_bytes(arrays, want)


def test_a_blocked_tile_is_one_box_per_column_block():
    c = next(c for c in CASES if c.blocked and c.swizzle == 128 and c.dtype == "float16")
    k = make_roundtrip(c.rank, c.dtype, c.swizzle, c.tile, c.blocked)
    log = lower(k, "sm_90a").dispatch_log
    assert log[0].info == ["2 TMA load(s) of a 2-D box 8x64, 128B swizzle, oob zero "
                           "(1024 bytes each)"]
    assert log[-1].info == ["2 TMA store(s) of a 2-D box 8x64, 128B swizzle, oob zero "
                            "(1024 bytes each)"]


def test_the_five_dimensional_tile_is_one_box():
    c = next(c for c in CASES if c.rank == 5 and c.swizzle == 64 and c.dtype == "int8")
    k = make_roundtrip(c.rank, c.dtype, c.swizzle, c.tile)
    info = lower(k, "sm_90a").dispatch_log[0].info
    assert info == ["1 TMA load(s) of a 5-D box 2x1x2x4x64, 64B swizzle, oob zero "
                    "(1024 bytes each)"]


REDUCTIONS = [("add", "float32"), ("add", "float16"), ("add", "bfloat16"), ("add", "int32"),
              ("min", "int32"), ("max", "float16"), ("min", "bfloat16"), ("max", "uint32")]


@pytest.mark.parametrize("op, dtype", REDUCTIONS, ids=[f"{o}-{d}" for o, d in REDUCTIONS])
def test_store_reduction(executor, op, dtype):
    from kernels_tma import make_reduce, reduce_expected, reduce_inputs

    arrays = reduce_inputs(np.random.default_rng(5), dtype)
    want = reduce_expected(*arrays, op)
    run(executor, make_reduce(dtype, op), arrays)
    assert_same_bytes(arrays, want)


def test_reduction_refuses_types_the_engine_lacks():
    from kernels_tma import make_reduce

    with pytest.raises(tw.DispatchError, match="a TMA add reduction takes float16, bfloat16, "
                       "float32, int32, uint32, uint64 elements, not int8"):
        lower(make_reduce("int8", "add"), "sm_90a")


@pytest.mark.parametrize("shape", [(128, 448), (100, 200),
                                   pytest.param((1000, 1000), marks=pytest.mark.slow)])
def test_a_gemm_producer_loop_streams_staged_tiles(executor, shape):
    """A_smem[s, :, :] with s = k % stages (a run-time index), 128B-swizzled, over a
    symbolic K: every tile arrives on its stage's mbarrier phase and the parity flips per
    lap of the ring."""
    from kernels_tma import make_staged_k_loop

    from tilewise.runner import random_bits

    rng = np.random.default_rng(9)
    a = random_bits(rng, shape, "bfloat16")
    b = random_bits(rng, shape, "bfloat16", fill=0xA5)
    want = [a.copy(), a.copy()]  # A untouched, B a copy of it
    run(executor, make_staged_k_loop(), [a, b])
    assert_same_bytes([a, b], want)


def test_rows_wider_than_the_swizzle_are_copied_row_by_row():
    """A row-major tile whose rows (256 bytes) exceed the 128-byte swizzle: each box is half
    a row; 32 boxes become an unrolled loop whose shared offsets and coordinates are affine
    in the box's grid index, and the placement is still the layout's."""
    tile, shape = (16, 128), (20, 240)
    k = make_roundtrip(2, "float16", 128, tile)
    d = lower(k, "sm_90a")
    assert d.dispatch_log[0].info == ["32 TMA load(s) of a 2-D box 1x64, 128B swizzle, oob "
                                      "zero (128 bytes each)"]
    assert "for f in T.unroll(32):" in d.func.script()
    arrays = inputs(np.random.default_rng(8), shape, tile, "float16")
    want = expected(arrays[0], tile, "float16", 128)
    tw.simulate(k, *arrays)
    for got, w in zip(arrays, want):
        assert got.tobytes() == w.tobytes()


def test_rows_that_do_not_start_128_byte_aligned_are_declined_as_docs_dispatch_md_says():
    """192-byte rows under a 128-byte swizzle: the second row's box would start at shared
    offset 192, and a TMA destination must be 128-byte aligned."""
    k = make_roundtrip(2, "float16", 128, (16, 96))
    with pytest.raises(tw.DispatchError, match="a box starts only 96-byte aligned in shared "
                       "memory; a TMA destination must be 128-byte aligned"):
        lower(k, "sm_90a")


@pytest.mark.parametrize("N, K, dtype, swizzle", [(64, 128, "bfloat16", 128),
                                                  (128, 64, "float16", 128),
                                                  (64, 64, "bfloat16", 64)])
def test_tma_feeds_wgmma(executor, N, K, dtype, swizzle):
    """TMA lands A and B in the column-block swizzled layout that wgmma's descriptors read:
    a GEMM tile from TMA-loaded operands is numpy's product."""
    from kernels_tma import make_tma_wgmma, tma_wgmma_error, tma_wgmma_inputs

    arrays = tma_wgmma_inputs(np.random.default_rng(7), N, K, dtype)
    run(executor, make_tma_wgmma(N, K, dtype, swizzle), arrays)
    assert tma_wgmma_error(*arrays) < 1e-5
