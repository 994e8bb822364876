"""The builder syntax, construction, equality, printing and the basic operations."""

from __future__ import annotations

import numpy as np
import pytest

import tilewise.layout as tl
from tilewise.layout import (
    Axis,
    Iter,
    R,
    S,
    TCol,
    TileLayout,
    TLane,
    laneid,
    m,
    tid_in_wg,
    warpid,
)

SEED_LAYOUTS = [
    "TileLayout(S[(128, 8) : (1@tid_in_wg, 1)])",
    "TileLayout(S[(128, 8) : (1@TLane, 1@TCol)])",
    "TileLayout(S[(128, 32)])",
    "TileLayout(S[8 : 4@laneid])",
    "TileLayout(S[(8, 2, 4, 2) : (4@laneid, 1@warpid, 1@laneid, 1)] + R[2 : 4@warpid] + 5@warpid)",
    "TileLayout(S[(64, 64)]).swizzle(128, dtype_bits=16)",
]


def _eval(text: str) -> TileLayout:
    names = {n: getattr(tl, n) for n in tl.__all__}
    return eval(text, {"__builtins__": {}}, names)


def test_seed_syntax_is_plain_python():
    width = 8
    shape = (128, 32)
    local_view = TileLayout(S[(128, width) : (1 @ tid_in_wg, 1)])
    tmem = TileLayout(S[(128, width) : (1 @ TLane, 1 @ TCol)])
    smem = TileLayout(S[shape])
    assert local_view.apply(5, 3) == {"tid_in_wg": 5, "m": 3}
    assert tmem.apply(7, 2) == {"TLane": 7, "TCol": 2}
    assert smem.apply(2, 3) == {"m": 67}
    assert smem == TileLayout(S[(128, 32)])


def test_axis_kinds_and_lookup():
    assert Axis.get("laneid") is laneid
    assert {a.kind for a in Axis.known()} == {"memory", "thread", "cta", "cluster", "tmem"}
    assert m.kind == "memory" and TLane.kind == "tmem" and tl.bx.kind == "cta"
    assert tl.cbx.kind == "cluster" and tid_in_wg.kind == "thread"
    assert repr(4 @ laneid) == "4@laneid"


def test_example_layout_places_and_replicas():
    lay = TileLayout(
        S[(8, 2, 4, 2) : (4 @ laneid, 1 @ warpid, 1 @ laneid, 1)] + R[2 : 4 @ warpid] + 5 @ warpid
    )
    assert lay.size() == 128
    assert lay.apply(1, 1, 1, 1) == {"laneid": 5, "warpid": 6, "m": 1}
    assert lay.apply_all(1, 1, 1, 1) == [
        {"laneid": 5, "warpid": 6, "m": 1},
        {"laneid": 5, "warpid": 10, "m": 1},
    ]
    assert lay.replicas() == [{"warpid": 0}, {"warpid": 4}]
    assert lay.span("warpid") == 1 + 4 + 5 + 1
    assert lay.span("laneid") == 32 and lay.span() == 2
    assert lay.thread_axes() == (laneid, warpid)


@pytest.mark.parametrize("text", SEED_LAYOUTS)
def test_repr_reads_back(text):
    lay = _eval(text)
    assert repr(lay) == text
    assert _eval(repr(lay)) == lay
    assert hash(_eval(repr(lay))) == hash(lay)


def test_repr_of_canonical_and_from_iters():
    lay = TileLayout.from_iters(
        shard=[(128, 1, "tid_in_wg"), (8, 1, m)], replica=[(2, 32, "tid_in_wg")], offset={"m": 3}
    )
    assert repr(lay) == "TileLayout(S[(128, 8) : (1@tid_in_wg, 1)] + R[2 : 32@tid_in_wg] + 3)"
    assert _eval(repr(lay)) == lay
    assert TileLayout(lay) == lay and TileLayout(lay) is not lay
    assert repr(TileLayout(S[()])) == "TileLayout(S[()])"


def test_equality_is_on_the_canonical_form():
    assert TileLayout(S[(128, 32)]) == TileLayout(S[4096])
    assert TileLayout(S[(1, 8) : (1 @ laneid, 1)]) == TileLayout(S[8])
    assert TileLayout(S[(128, 32)]) != TileLayout(S[(128, 32) : (1, 128)])
    assert len({TileLayout(S[(128, 32)]), TileLayout(S[(64, 64)]), TileLayout(S[4096])}) == 1
    with_r = S[4 : 1 @ laneid] + R[(2, 2) : (8 @ warpid, 1 @ warpid)]
    assert with_r == S[4 : 1 @ laneid] + R[(2, 2) : (1 @ warpid, 8 @ warpid)]


def test_canonicalize():
    lay = TileLayout(S[(2, 1, 4, 8) : (32, 7, 8, 1)])
    assert lay.canonicalize().shard == (Iter(64, 1, m),)
    assert TileLayout(S[(1, 1)]).canonicalize().shard == (Iter(1, 1, m),)
    split = TileLayout(S[(4, 8) : (1 @ laneid, 1)]).canonicalize()
    assert split.shard == (Iter(4, 1, laneid), Iter(8, 1, m))


def test_apply_forms():
    lay = TileLayout(S[(4, 8) : (8, 1)])
    assert lay.apply(2, 3) == lay.apply(19) == lay.apply((2, 3)) == {"m": 19}
    assert lay.apply(1, 3, shape=(8, 4)) == {"m": 7}
    assert lay.apply(1, 0, 3, shape=(2, 2, 8)) == {"m": 19}


def test_apply_np_vectorised_forms():
    lay = TileLayout(S[(4, 8) : (1 @ laneid, 1)])
    coords = np.array([[0, 0], [3, 7], [2, 5]])
    got = lay.apply_np(coords)
    assert got["laneid"].tolist() == [0, 3, 2] and got["m"].tolist() == [0, 7, 5]
    got = lay.apply_np(np.array([0, 31, 21]))
    assert got["laneid"].tolist() == [0, 3, 2]
    got = lay.apply_np(np.array([[0, 1], [15, 1]]), shape=(16, 2))
    assert got["laneid"].tolist() == [0, 3] and got["m"].tolist() == [1, 7]


def test_apply_np_does_not_alias_the_coordinates():
    coords = np.arange(32)
    out = TileLayout(S[32]).apply_np(coords)
    out["m"][0] = 99
    assert coords[0] == 0


def test_slice_group_permute():
    lay = TileLayout(S[(128, 32)])
    sub = lay.slice(((8, 16), slice(4, 12)))
    assert sub.apply(1, 1, shape=(8, 8)) == lay.apply(9, 5)
    assert lay.slice([(0, 64)], shape=(64, 64)).size() == 64 * 64
    assert lay.group((64, 64)).shape == (64, 64)
    tr = lay.permute((1, 0))
    assert tr.shape == (32, 128) and tr.apply(5, 9) == lay.apply(9, 5)
    four = TileLayout(S[(8, 2, 4, 2) : (4 @ laneid, 1 @ warpid, 1 @ laneid, 1)])
    grouped = four.group((16, 8))
    assert grouped == four and grouped.shape == (8, 2, 4, 2)
    assert four.permute((1, 0), shape=(16, 8)).apply(3, 2, shape=(8, 16)) == four.apply(
        2, 3, shape=(16, 8)
    )


def test_slice_inside_a_multi_iter_dimension():
    lay = TileLayout(S[(8, 2, 4, 2) : (4 @ laneid, 1 @ warpid, 1 @ laneid, 1)])
    sub = lay.slice(((2, 4), (4, 8)), shape=(16, 8))  # rows 2:4 = 8-iter digit 1
    for i in range(2):
        for j in range(4):
            assert sub.apply(i, j, shape=(2, 4)) == lay.apply(2 + i, 4 + j, shape=(16, 8))


def test_storage_and_split_threads():
    lay = TileLayout(S[(128, 8) : (1 @ tid_in_wg, 1)])
    assert lay.storage() == TileLayout(S[8])
    who, where = lay.split_threads()
    assert who == TileLayout(S[128 : 1 @ tid_in_wg]) and where == TileLayout(S[8])
    rep = TileLayout(S[(4, 2) : (1 @ laneid, 1)] + R[2 : 1 @ warpid] + 2 @ warpid + 3)
    who, where = rep.split_threads()
    assert who == TileLayout(S[4 : 1 @ laneid] + R[2 : 1 @ warpid] + 2 @ warpid)
    assert where == TileLayout(S[2] + 3)


def test_contiguous_run_and_vector_width():
    assert TileLayout(S[(128, 8) : (1 @ tid_in_wg, 1)]).contiguous_run() == 8
    assert TileLayout(S[(8, 128) : (1, 1 @ tid_in_wg)]).contiguous_run() == 1
    lay = TileLayout(S[(128, 32)])
    assert lay.contiguous_run() == 4096
    assert lay.contiguous_run(shape=(128, 32)) == 32
    assert TileLayout(S[(32, 48) : (64, 1)]).contiguous_run(shape=(48, 32)) == 16
    assert lay.vector_width(dtype_bits=16) == 8  # 16 bytes
    assert lay.vector_width(dtype_bits=32, max_bytes=4) == 1
    assert (TileLayout(S[(128, 32)]) + 4).vector_width(dtype_bits=16) == 4  # misaligned
    assert TileLayout(S[(16, 6) : (8, 1)]).vector_width(dtype_bits=16) == 2


def test_bijective_and_injective():
    assert TileLayout(S[(128, 32)]).is_bijective_on("m")
    assert TileLayout(S[(32, 128) : (1, 32)]).is_bijective_on()
    assert not TileLayout(S[(128, 32) : (40, 1)]).is_bijective_on("m")
    reg = TileLayout(S[(128, 8) : (1 @ tid_in_wg, 1)])
    assert not reg.is_bijective_on("m") and reg.is_bijective_on("tid_in_wg", "m")
    assert reg.is_injective()
    assert not TileLayout(S[(4, 4) : (1, 1)]).is_injective()


def test_axes_helpers():
    lay = TileLayout(S[(2, 4, 8) : (1 @ tl.bx, 1 @ laneid, 1)] + 1 @ TLane)
    assert [a.name for a in lay.axes()] == ["bx", "laneid", "m", "TLane"]
    assert lay.axes("cta") == (tl.bx,)
    assert lay.thread_axes() == (laneid,)
