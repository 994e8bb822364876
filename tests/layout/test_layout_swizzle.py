"""Swizzled layouts: the ptx-semantics.md §5 formula, printing, and seeing through."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sampling import examples
import tilewise.errors as tw_errors
from tilewise.layout import S, Swizzle, TileLayout

MASK = {32: 1, 64: 3, 128: 7}


def swz_bytes(addr: int, mode: int) -> int:
    """The reference formula on byte addresses, written out independently."""
    return addr ^ (((addr >> 7) & MASK[mode]) << 4)


@pytest.mark.parametrize("mode", [32, 64, 128])
@pytest.mark.parametrize("bits", [8, 16, 32])
def test_apply_matches_the_byte_formula(mode, bits):
    lay = TileLayout(S[(64, 64)]).swizzle(mode, dtype_bits=bits)
    nbytes = bits // 8
    got = lay.apply_np(np.arange(lay.size()))["m"]
    for lin in range(lay.size()):
        want = swz_bytes(lin * nbytes, mode) // nbytes
        assert got[lin] == want
    assert lay.apply(3, 5) == {"m": swz_bytes((3 * 64 + 5) * nbytes, mode) // nbytes}


@pytest.mark.parametrize("mode", [32, 64, 128])
def test_swizzle_is_a_permutation_of_the_tile(mode):
    lay = TileLayout(S[(64, 64)]).swizzle(mode, dtype_bits=16)
    assert lay.is_bijective_on("m") and lay.span() == 4096
    assert sorted(lay.apply_np(np.arange(4096))["m"].tolist()) == list(range(4096))


def test_offset_is_swizzled_too():
    base = TileLayout(S[(8, 64)]).swizzle(128, dtype_bits=16)
    shifted = (TileLayout(S[(8, 64)]) + 64).swizzle(128, dtype_bits=16)
    assert shifted.apply(0, 0) == {"m": swz_bytes(128, 128) // 2}
    assert base.slice(((1, 2), (0, 64))).apply(0, 3, shape=(1, 64)) == base.apply(1, 3)


def test_prints_and_compares_like_other_layouts():
    a = TileLayout(S[(64, 64)]).swizzle(128, dtype_bits=16)
    assert repr(a) == "TileLayout(S[(64, 64)]).swizzle(128, dtype_bits=16)"
    assert a == TileLayout(S[4096]).swizzle(128, dtype_bits=16)
    assert a != TileLayout(S[(64, 64)]).swizzle(64, dtype_bits=16)
    assert a != TileLayout(S[(64, 64)])
    assert a.unswizzled() == TileLayout(S[(64, 64)])
    assert a.swizzling == Swizzle(128, 16)
    assert a.canonicalize().swizzling == a.swizzling
    assert a.group((32, 128)).swizzling == a.swizzling


@pytest.mark.parametrize("mode", [32, 64, 128])
@pytest.mark.parametrize("bits,chunk", [(8, 16), (16, 8), (32, 4), (64, 2)])
def test_contiguity_sees_through_to_16_byte_chunks(mode, bits, chunk):
    lay = TileLayout(S[(64, 64)]).swizzle(mode, dtype_bits=bits)
    assert lay.contiguous_run(shape=(64, 64)) == chunk
    assert lay.vector_width(dtype_bits=bits) == chunk
    assert lay.unswizzled().vector_width(dtype_bits=bits) == chunk  # 16 bytes either way


def _runs_are_contiguous(lay: TileLayout, shape: tuple[int, int], run: int) -> bool:
    rows, cols = shape
    m = lay.apply_np(np.arange(lay.size()))["m"].reshape(rows, cols // run, run)
    return bool((np.diff(m, axis=-1) == 1).all())


@settings(max_examples=examples(60), deadline=None)
@given(
    st.sampled_from([32, 64, 128]),
    st.sampled_from([8, 16, 32]),
    st.sampled_from([8, 16, 24, 64, 128]),
    st.sampled_from([8, 16, 64, 72]),
    st.integers(0, 3),
)
def test_reported_runs_stay_contiguous(mode, bits, rows, cols, offset):
    lay = (TileLayout(S[(rows, cols)]) + offset).swizzle(mode, dtype_bits=bits)
    run = lay.contiguous_run(shape=(rows, cols))
    assert run >= 1 and cols % run == 0
    assert _runs_are_contiguous(lay, (rows, cols), run)
    width = lay.vector_width(dtype_bits=bits, shape=(rows, cols))
    assert width * bits <= 128 and _runs_are_contiguous(lay, (rows, cols), width)
    if offset == 0:  # aligned: a whole 16-byte chunk stays a vector
        assert run == min(cols, 128 // bits) or cols % (128 // bits)


@pytest.mark.parametrize("rows,cols,bits,swz,stages", [
    (64, 256, 16, 128, None), (64, 256, 16, 128, 3), (128, 64, 16, 128, 4),
    (16, 64, 32, 64, None), (64, 8, 16, 0, 2), (32, 128, 8, 32, None)])
def test_swizzled_tile_is_blocks_of_one_swizzle_span(rows, cols, bits, swz, stages):
    """Element (s, r, c) sits in column block c // w (w = the span in elements) of stage s,
    row r of the block, column c % w, then the byte address is swizzled."""
    from tilewise.layout import swizzled_tile

    lay = swizzled_tile(rows, cols, bits, swz, stages=stages)
    n = stages or 1
    w = (swz or 16) * 8 // bits
    s, r, c = np.meshgrid(np.arange(n), np.arange(rows), np.arange(cols), indexing="ij")
    flat = (s * rows * cols + r * cols + c).ravel()
    plain = s * rows * cols + (c // w) * rows * w + r * w + c % w
    byte = plain.ravel() * bits // 8
    if swz:
        byte = byte ^ (((byte >> 7) & (swz // 16 - 1)) << 4)
    got = lay.apply_np(flat)["m"]
    np.testing.assert_array_equal(got * (bits // 8), byte)


@pytest.mark.parametrize("args,msg", [((64, 100, 16, 128), "column blocks of 64 elements"),
                                      ((64, 64, 16, 48), "swizzle 48")])
def test_swizzled_tile_refuses_what_it_cannot_build(args, msg):
    from tilewise.layout import swizzled_tile

    with pytest.raises(tw_errors.LayoutError, match=msg):
        swizzled_tile(*args)


def test_widest_swizzle_splits_a_row_and_swizzled_tile_takes_it():
    from tilewise.layout import swizzled_tile, widest_swizzle

    # (cols, bits) -> bytes: 128-byte rows and their multiples, then 64, 32, then none
    cases = {(64, 16): 128, (192, 16): 128, (96, 16): 64, (32, 16): 64, (80, 16): 32,
             (16, 16): 32, (8, 16): 0, (72, 16): 0, (128, 8): 128, (48, 8): 0, (32, 32): 128}
    for (cols, bits), want in cases.items():
        assert widest_swizzle(cols, bits) == want, (cols, bits)
        tile = swizzled_tile(64, cols, bits, want)  # builds: the blocks split the row
        offsets = tile.apply_np(np.arange(tile.size()))["m"]
        assert sorted(offsets.tolist()) == list(range(64 * cols))  # a permutation
    with pytest.raises(tw_errors.LayoutError, match="does not split into column blocks of 64"):
        swizzled_tile(64, 96, 16, 128)  # one wider than widest_swizzle(96) is refused
