"""Every malformed layout is a LayoutError that says what is wrong and what to change."""

from __future__ import annotations

import numpy as np
import pytest

from tilewise.errors import LayoutError
from tilewise.layout import (
    Axis,
    R,
    S,
    TileLayout,
    laneid,
    match_atom,
    tcgen05_atom,
    tcgen05_warpgroup_atom,
    tid_in_wg,
    tmem_datapath,
    warpid,
)
from tilewise.layout.cli import evaluate

L = TileLayout(S[(128, 32)])
REG = TileLayout(S[(128, 8) : (1 @ tid_in_wg, 1)])

# (id, thunk, text the message must contain, text the hint must contain)
CORPUS = [
    (
        "permute-of-a-merged-layout",  # the iters of a row-major tile fuse into one
        lambda: TileLayout(S[(8, 16)]).canonicalize().permute((1, 0)),
        "order (1, 0) is not a permutation of the 1 dimension(s) of TileLayout(S[128]) (its "
        "iters merged",
        "say which shape the 2 dimensions have: layout.permute((1, 0), shape=(...))",
    ),
    (
        "count-mismatch",
        lambda: S[(128, 8) : (1,)],
        "S[...] has 2 extents but 1 strides",
        "one stride per extent",
    ),
    ("zero-extent", lambda: S[(0, 8)], "extent 0 is not positive", "at least 1"),
    ("negative-extent", lambda: S[(4, -8) : (8, 1)], "extent -8 is not positive", "at least 1"),
    (
        "float-extent",
        lambda: S[(2.5, 8)],
        "an extent must be an integer, got 2.5",
        "positive integers",
    ),
    ("bool-extent", lambda: S[True], "an extent must be an integer, got True", "positive integers"),
    (
        "float-stride",
        lambda: S[(4, 8) : (1.5, 1)],
        "a stride must be an integer, got 1.5",
        "integer stride",
    ),
    ("negative-stride", lambda: S[(4, 8) : (-8, 1)], "stride -8 is negative", "permute"),
    (
        "non-integer-on-axis",
        lambda: S[4 : "x" @ laneid],
        "a stride or offset must be an integer, got 'x'",
        "before '@'",
    ),
    (
        "unknown-axis",
        lambda: Axis.get("lane_id"),
        "unknown axis 'lane_id'",
        "did you mean 'laneid'",
    ),
    (
        "unknown-axis-from-iters",
        lambda: TileLayout.from_iters([(4, 1, "tid")]),
        "unknown axis 'tid'",
        "did you mean",
    ),
    (
        "replica-on-m",
        lambda: S[4 : 1 @ laneid] + R[2:4],
        "replica on the memory axis m is not allowed",
        "thread, CTA, cluster or TLane axis",
    ),
    (
        "replica-on-tmem-column",
        lambda: R[2 : 1 @ Axis.get("TCol")],
        "replica on the tmem axis TCol is not allowed",
        "R[2 : 4@warpid]",
    ),
    (
        "offset-unknown-axis",
        lambda: TileLayout.from_iters([(4, 1, "m")], offset={"foo": 1}),
        "unknown axis 'foo'",
        "known:",
    ),
    (
        "negative-offset",
        lambda: TileLayout.from_iters([(4, 1, "m")], offset={"m": -1}),
        "offset -1 on m is negative",
        ">= 0",
    ),
    ("add-a-string", lambda: L + "x", "cannot add 'x' to a layout", "5@warpid"),
    ("slice-step", lambda: S[4:1:2], "S[a : b : c] has a third part", "extents : strides"),
    (
        "not-a-layout-key",
        lambda: S["big"],
        "S['big'] is not a layout expression",
        "S[extents : strides]",
    ),
    (
        "wrap-non-layout",
        lambda: TileLayout((128, 32)),
        "TileLayout() takes a layout expression",
        "TileLayout(S[(128, 32)])",
    ),
    (
        "group-size",
        lambda: L.group((3, 5)),
        "shape (3, 5) has 15 elements but the layout has 4096",
        "multiply to 4096",
    ),
    (
        "group-impossible",
        lambda: TileLayout(S[(2, 3) : (3 @ laneid, 1)]).group((3, 2)),
        "cannot view the layout as shape (3, 2)",
        "divide the layout's iters",
    ),
    (
        "slice-out-of-bounds",
        lambda: L.slice(((0, 200), (0, 32))),
        "slice 0:200 of dimension 0 is out of bounds for extent 128",
        "0 <= start < stop <= 128",
    ),
    (
        "slice-empty",
        lambda: L.slice(((5, 5),)),
        "slice 5:5 of dimension 0 is out of bounds",
        "start < stop",
    ),
    (
        "slice-too-many-dims",
        lambda: L.slice(((0, 1), (0, 1), (0, 1))),
        "region has 3 entries but the domain (128, 32) has 2 dimensions",
        "one (start, stop)",
    ),
    (
        "slice-crosses-iters",
        lambda: TileLayout(S[(8, 2) : (1 @ laneid, 1 @ warpid)]).slice(((1, 3),), shape=(16,)),
        "slice 1:3 of dimension 0 crosses an iter boundary",
        "align the slice",
    ),
    (
        "apply-coord-count",
        lambda: L.apply(1, 2, 3),
        "got 3 coordinates but the domain (128, 32) has 2 dimensions",
        "shape=(...)",
    ),
    (
        "apply-outside",
        lambda: L.apply(128, 0),
        "coordinate (128, 0) is outside the domain",
        "0 <= i < extent",
    ),
    (
        "apply-negative",
        lambda: L.apply(-1),
        "coordinate (-1,) is outside the domain (4096,)",
        "0 <= i < extent",
    ),
    (
        "apply-bad-shape",
        lambda: L.apply(0, 0, shape=(64, 32)),
        "shape (64, 32) has 2048 elements but the layout has 4096",
        "multiply to 4096",
    ),
    (
        "apply-np-outside",
        lambda: L.apply_np(np.array([[0, 40]])),
        "some coordinates are outside the domain (128, 32)",
        "0 <= i < extent",
    ),
    (
        "apply-np-float",
        lambda: L.apply_np(np.array([0.5])),
        "apply_np needs an integer array",
        "np.int64",
    ),
    (
        "permute-bad-order",
        lambda: L.permute((0, 0)),
        "order (0, 0) is not a permutation",
        "exactly once",
    ),
    ("swizzle-mode", lambda: L.swizzle(48), "swizzle mode 48 is not supported", "32, 64 or 128"),
    (
        "swizzle-elem-size",
        lambda: L.swizzle(128, dtype_bits=12),
        "swizzle element size of 12 bits is not a power of two",
        "dtype_bits=4, 8, 16",
    ),
    ("swizzle-twice", lambda: L.swizzle(128).swizzle(64), "is already swizzled", "once"),
    (
        "atom-shape",
        lambda: tcgen05_atom("16x64"),
        "unknown tcgen05 shape '16x64'",
        "did you mean '16x64b'",
    ),
    (
        "atom-num",
        lambda: tcgen05_atom("32x32b", num=3),
        "num=3 is not a legal .x count for tcgen05 .32x32b",
        "use one of [1, 2, 4",
    ),
    (
        "atom-num-too-many-registers",
        lambda: tcgen05_atom("16x256b", num=64),
        "num=64 is not a legal .x count for tcgen05 .16x256b",
        "[1, 2, 4, 8, 16, 32]",
    ),
    (
        "atom-dtype",
        lambda: tcgen05_atom("32x32b", dtype_bits=64),
        "dtype_bits 64 is not supported",
        "8, 16 or 32",
    ),
    (
        "datapath-kind",
        lambda: tmem_datapath("E"),
        "unknown tensor-memory datapath 'E'",
        "known: D, F",
    ),
    (
        "datapath-f-32-lanes",
        lambda: tcgen05_warpgroup_atom("32x32b", datapath="F"),
        "tcgen05 .32x32b moves 32 lanes per warp",
        ".16x64b",
    ),
    (
        "cli-syntax",
        lambda: evaluate("S[(128, 8):(1@tid_in_wg, 1)"),
        "cannot parse layout expression",
        "S[(128, 8) : (1@tid_in_wg, 1)]",
    ),
    (
        "cli-unknown-name",
        lambda: evaluate("S[(128, 8):(1@tid_in_wgg, 1)]"),
        "unknown name 'tid_in_wgg' in the layout expression",
        "did you mean 'tid_in_wg'",
    ),
    ("cli-no-builtins", lambda: evaluate("open('x')"), "unknown name 'open'", "known:"),
    ("cli-private", lambda: evaluate("S.__class__"), "private attribute '__class__'", "public API"),
    (
        "cli-lambda",
        lambda: evaluate("(lambda: 1)()"),
        "a layout expression cannot contain Lambda",
        "S[(128, 8)",
    ),
    (
        "cli-not-a-layout",
        lambda: evaluate("R[2 : 4@warpid]"),
        "is a Replica, not a layout",
        "S[(128, 8)",
    ),
    (
        "cli-foreign-error",
        lambda: evaluate("S[(4, 4)] @ 3"),
        "layout expression 'S[(4, 4)] @ 3' failed",
        "S[(128, 8)",
    ),
]


@pytest.mark.parametrize("thunk,message,hint", [c[1:] for c in CORPUS], ids=[c[0] for c in CORPUS])
def test_malformed_layout_is_a_layout_error(thunk, message, hint):
    with pytest.raises(LayoutError) as info:
        thunk()
    err = info.value
    assert message in err.message
    assert err.hint and hint in err.hint
    assert "Traceback" not in str(err)


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 15


def test_match_result_is_not_an_error():
    result = match_atom(REG, tcgen05_atom("32x32b"))
    assert not result and result.reason
    assert warpid.kind == "thread"
