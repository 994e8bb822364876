"""mma.sync fragment atoms against the PTX ISA tables (§9.7.14.5.7-10), written out here as
the reference, independently of tilewise.ptx.mma."""

from __future__ import annotations

import numpy as np
import pytest

from tilewise.errors import LayoutError
from tilewise.layout import mma_a_atom, mma_b_atom, mma_c_atom, mma_fragment


def ptx_a(bits, lane, i):
    """Row and column of element a_i (PTX ISA: "Matrix fragments for mma.m16n8k*")."""
    g, t = lane >> 2, lane % 4
    if bits == 16:  # .f16/.bf16: a0..a7
        row = g if (i < 2 or 4 <= i < 6) else g + 8
        col = t * 2 + (i & 1) + (8 if i >= 4 else 0)
    elif bits == 32:  # .tf32: a0..a3
        row = g if i in (0, 2) else g + 8
        col = t + (4 if i >= 2 else 0)
    else:  # .s8/.u8/.e4m3/.e5m2: a0..a15
        row = g if (i < 4 or 8 <= i < 12) else g + 8
        col = t * 4 + (i & 3) + (16 if i >= 8 else 0)
    return row, col


def ptx_b(bits, lane, i):
    g, t = lane >> 2, lane % 4
    if bits == 16:  # b0..b3
        row = t * 2 + (i & 1) + (8 if i >= 2 else 0)
    elif bits == 32:  # b0, b1
        row = t + (4 if i >= 1 else 0)
    else:  # b0..b7
        row = t * 4 + (i & 3) + (16 if i >= 4 else 0)
    return row, g


def ptx_c(lane, i):
    g, t = lane >> 2, lane % 4
    return (g if i < 2 else g + 8), t * 2 + (i & 1)


@pytest.mark.parametrize("bits", [8, 16, 32])
def test_a_and_b_atoms_are_the_ptx_tables(bits):
    e = 32 // bits
    a, b = mma_a_atom(bits), mma_b_atom(bits)
    for lane in range(32):
        for i in range(4 * e):
            assert a.apply(*ptx_a(bits, lane, i), shape=(16, 8 * e)) == {"laneid": lane, "m": i}
        for i in range(2 * e):
            assert b.apply(*ptx_b(bits, lane, i), shape=(8 * e, 8)) == {"laneid": lane, "m": i}
    assert a.is_injective() and b.is_injective()


def test_c_atom_is_the_ptx_table():
    c = mma_c_atom()
    for lane in range(32):
        for i in range(4):
            assert c.apply(*ptx_c(lane, i), shape=(16, 8)) == {"laneid": lane, "m": i}


def test_a_warp_tile_is_atoms_in_row_major_order():
    lay = mma_fragment("A", (32, 32), 16)  # 2 x 2 atoms of 16 x 16, 8 elements each
    for bm in range(2):
        for bk in range(2):
            for lane in range(32):
                for i in range(8):
                    r, c = ptx_a(16, lane, i)
                    got = lay.apply(16 * bm + r, 16 * bk + c, shape=(32, 32))
                    assert got == {"laneid": lane, "m": 8 * (2 * bm + bk) + i}


@pytest.mark.parametrize("axis", ["warpid", "wid_in_wg"])
def test_a_grid_of_warps_owns_c_blocks_and_shares_a_and_b(axis):
    """warps (2, 2): warp 2 wm + wn owns C rows 32 wm.., columns 16 wn..; A's rows are held by
    both warps of a grid row, B's columns by both warps of a grid column."""
    c = mma_fragment("C", (64, 32), warps=(2, 2), warp_axis=axis)
    a = mma_fragment("A", (64, 16), 16, warps=(2, 2), warp_axis=axis)
    b = mma_fragment("B", (16, 32), 16, warps=(2, 2), warp_axis=axis)
    r, col = ptx_c(5, 3)
    assert c.apply(32 + 16 + r, 16 + 8 + col, shape=(64, 32)) == {axis: 3, "laneid": 5,
                                                                  "m": 4 * 3 + 3}
    ra, ca = ptx_a(16, 9, 6)
    assert sorted(p[axis] for p in a.apply_all(32 + ra, ca, shape=(64, 16))) == [2, 3]
    rb, cb = ptx_b(16, 30, 1)
    assert sorted(p[axis] for p in b.apply_all(rb, 16 + cb, shape=(16, 32))) == [1, 3]
    assert {p["laneid"] for p in b.apply_all(rb, 16 + cb, shape=(16, 32))} == {30}


def test_an_accumulator_tile_covers_every_element_once_per_warp():
    lay = mma_fragment("C", (64, 64), warps=(4, 1), warp_axis="wid_in_wg")
    got = lay.apply_np(np.arange(64 * 64))
    places = set(zip(got["wid_in_wg"].tolist(), got["laneid"].tolist(), got["m"].tolist()))
    assert len(places) == 64 * 64 and lay.storage().span("m") == 32


@pytest.mark.parametrize("args, message", [
    (("D", (16, 8)), "unknown mma operand 'D'"),
    (("A", (16, 24), 16), "does not split into 16 x 16 blocks"),
    (("C", (48, 8), 32, (2, 1)), "does not split into 32 x 8 blocks"),
    (("A", (16, 16), 12), "mma.sync has no 12-bit inputs"),
    (("B", (16, 8), 16, (1, 1), "laneid"), "is not a warp axis"),
])
def test_fragment_errors_say_what_to_change(args, message):
    with pytest.raises(LayoutError, match=message) as e:
        mma_fragment(*args)
    assert e.value.hint
