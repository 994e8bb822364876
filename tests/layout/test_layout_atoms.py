"""Instruction atoms against the PTX formulas (written out here as the reference)."""

from __future__ import annotations

import numpy as np
import pytest

from tilewise.layout import (
    S,
    TCol,
    TileLayout,
    TLane,
    laneid,
    ldmatrix_m8n8,
    match_atom,
    mma_m8n8_fragment,
    tcgen05_atom,
    tcgen05_shape,
    tcgen05_warpgroup_atom,
    tid_in_wg,
    tmem_datapath,
)

# ptx-semantics.md §3: per shape, (lanes, registers for .num=N, dl(t, r), c(t, r)).
REFERENCE = {
    "32x32b": (32, lambda n: n, lambda t, r: t, lambda t, r: r),
    "16x64b": (
        16,
        lambda n: n,
        lambda t, r: (t >> 2) + 8 * (t & 1),
        lambda t, r: 2 * r + ((t >> 1) & 1),
    ),
    "16x128b": (
        16,
        lambda n: 2 * n,
        lambda t, r: (t >> 2) + 8 * (r & 1),
        lambda t, r: 4 * (r >> 1) + (t & 3),
    ),
    "16x256b": (
        16,
        lambda n: 4 * n,
        lambda t, r: (t >> 2) + 8 * ((r >> 1) & 1),
        lambda t, r: 8 * (r >> 2) + 2 * (t & 3) + (r & 1),
    ),
}
COLUMNS_32B = {"32x32b": 1, "16x64b": 2, "16x128b": 4, "16x256b": 8}  # per .num


@pytest.mark.parametrize("dtype_bits", [16, 32])
@pytest.mark.parametrize("num", [1, 2, 4, 8])
@pytest.mark.parametrize("shape", list(REFERENCE))
def test_tcgen05_atom_matches_ptx_formulas(shape, num, dtype_bits):
    lanes, regs, dl, c = REFERENCE[shape]
    e = 32 // dtype_bits
    atom = tcgen05_atom(shape, num=num, dtype_bits=dtype_bits)
    tile = (lanes, COLUMNS_32B[shape] * num * e)
    assert tcgen05_shape(shape, num, dtype_bits) == tile
    assert atom.size() == 32 * regs(num) * e == tile[0] * tile[1]
    coords, want_t, want_m = [], [], []
    for t in range(32):
        for r in range(regs(num)):
            for h in range(e):  # element h sits in bits [16h, 16h+16) of register r
                coords.append((dl(t, r), c(t, r) * e + h))
                want_t.append(t)
                want_m.append(r * e + h)
    got = atom.apply_np(np.array(coords), shape=tile)
    assert got["laneid"].tolist() == want_t
    assert got.get("m", np.zeros(len(coords), np.int64)).tolist() == want_m
    assert atom.is_injective() and atom.thread_axes() == (laneid,)


@pytest.mark.parametrize("bits", [16, 32])
@pytest.mark.parametrize("width", [8, 16, 32])
def test_warpgroup_32x32b_is_the_seed_register_layout(width, bits):
    atom = tcgen05_warpgroup_atom("32x32b", num=width * bits // 32, dtype_bits=bits)
    assert atom == TileLayout(S[(128, width) : (1 @ tid_in_wg, 1)])
    assert match_atom(TileLayout(S[(128, width) : (1 @ tid_in_wg, 1)]), atom)


@pytest.mark.parametrize("shape", ["16x64b", "16x128b", "16x256b"])
def test_warpgroup_16_lane_shapes_issue_two_slabs(shape):
    warp = tcgen05_atom(shape, num=2)
    group = tcgen05_warpgroup_atom(shape, num=2)
    rows, cols = tcgen05_shape(shape, 2)
    regs = warp.span("m")
    assert group.size() == 8 * warp.size()
    for w in range(4):
        for s in range(2):
            for dl in range(rows):
                for col in range(cols):
                    one = warp.apply(dl, col, shape=(rows, cols))
                    got = group.apply(32 * w + 16 * s + dl, col, shape=(128, cols))
                    assert got["tid_in_wg"] == 32 * w + one["laneid"]
                    assert got["m"] == s * regs + one.get("m", 0)


def test_warpgroup_datapath_f_uses_one_slab_per_warp():
    group = tcgen05_warpgroup_atom("16x256b", num=1, datapath="F")
    warp = tcgen05_atom("16x256b", num=1)
    for w in range(4):
        for dl in range(16):
            one = warp.apply(dl, 3, shape=(16, 8))
            got = group.apply(16 * w + dl, 3, shape=(64, 8))
            assert got == {"tid_in_wg": 32 * w + one["laneid"], "m": one["m"]}


def test_tmem_datapaths():
    d = tmem_datapath("D", cols=8)
    assert d == TileLayout(S[(128, 8) : (1 @ TLane, 1 @ TCol)])
    f = tmem_datapath("F", cols=4)
    for r in range(64):
        assert f.apply(r, 1, shape=(64, 4)) == {"TLane": 32 * (r // 16) + r % 16, "TCol": 1}
    assert f.is_injective() and not f.is_bijective_on("TLane")


def test_mma_m8n8_fragment():
    frag = mma_m8n8_fragment(16)
    for t in range(32):
        for h in range(2):
            assert frag.apply(t // 4, 2 * (t % 4) + h, shape=(8, 8)) == {"laneid": t, "m": h}
    frag32 = mma_m8n8_fragment(32)
    assert frag32.apply(5, 3, shape=(8, 4)) == {"laneid": 23}


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix(num, trans):
    lay = ldmatrix_m8n8(num, trans=trans)
    for i in range(num):
        for t in range(32):
            for h in range(2):
                row, col = (2 * (t % 4) + h, t // 4) if trans else (t // 4, 2 * (t % 4) + h)
                got = lay.apply(8 * i + row, col, shape=(8 * num, 8))
                assert got == {"laneid": t, "m": 2 * i + h}


def test_match_atom_reasons():
    atom = tcgen05_atom("32x32b", num=8)
    assert match_atom(TileLayout(S[(32, 8) : (1 @ laneid, 1)]), atom)
    bad = match_atom(TileLayout(S[(32, 8) : (1 @ laneid, 2)]), atom)
    assert not bad and bad.reason == "register axis stride 2 where the atom has 1"
    bad = match_atom(TileLayout(S[(64, 8) : (1 @ laneid, 1)]), atom)
    assert bad.reason == "extent 64 on laneid where the atom has 32"
    bad = match_atom(TileLayout(S[(32, 8) : (1 @ tid_in_wg, 1)]), atom)
    assert bad.reason == "an iter on tid_in_wg where the atom has laneid"
    bad = match_atom(TileLayout(S[(2, 32, 8) : (64, 1 @ laneid, 1)]), atom)
    assert bad.reason == "3 iters (512 elements) where the atom has 2 (256 elements)"
    bad = match_atom(TileLayout(S[(32, 8) : (1 @ laneid, 1)]) + 1, atom)
    assert bad.reason == "offset {'m': 1} where the atom has {}"
    wide = tcgen05_atom("16x256b", num=1)
    assert not match_atom(tcgen05_atom("16x128b", num=2), wide)
    assert match_atom(tcgen05_atom("16x256b", num=1), wide)

