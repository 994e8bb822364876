"""The flat IR keeps only what the program uses."""

import tcgen05_roundtrip
import tiled_copy

from tilewise.ir import script
from tilewise.pipeline import lower


def test_consumed_register_views_are_dropped():
    text = script(lower(tcgen05_roundtrip.copy_async_test, "sm_100a").func)
    assert "A_local" not in text and "B_local" not in text
    assert "A_reg_32b = A_reg.view(4" in text  # the view the instructions read stays


def test_a_path_removed_at_parse_time_takes_its_locals_and_buffers_along():
    text = script(lower(tiled_copy.make_tiled_copy(64, 777, "float16"), "sm_90a").func)
    assert "scope=\"shared\"" not in text  # the fast path's tile is gone with it
    assert "T.ptx.cp_async" not in text


def test_unused_pure_locals_are_dropped_but_calls_stay():
    flat = script(lower(tiled_copy.make_tiled_copy(64, 4096, "float16", (8, 2048), 256,
                                                   chunks=4), "sm_90a").func)
    assert "r_1" not in flat  # the chunk origins were inlined into the addresses
    assert flat.count("T.ptx.cp_async.commit_group()") == 4
