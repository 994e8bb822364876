"""TIRx's TMA test programs, ported with spelling changes (tirx_ports.py), run in the
simulator and on the GPU (marked ``gpu``) against numpy, byte for byte."""

import pytest

from executors import assert_same_bytes, run
from tilewise.pipeline import lower
from tirx_ports import PORTS, port


def _tma_copies(func) -> int:
    log = lower(func, "sm_90a").dispatch_log
    return sum(int(d.info[0].split()[0]) for d in log if d.chosen == "tma")


@pytest.mark.parametrize("name", sorted(PORTS))
def test_port(executor, name):
    func, scalars, arrays, reference = port(name)
    want = reference(*[a.copy() for a in arrays])
    run(executor, func, [*scalars, *arrays])
    assert_same_bytes(arrays, want)


def test_the_3d_view_is_one_tma_copy():
    func, *_ = port("view-3d-one-copy")
    assert _tma_copies(func) == 1


def test_the_swizzled_8x256_tile_is_one_box_per_atom_column():
    func, *_ = port("g2s-2d-basic")
    assert lower(func, "sm_90a").dispatch_log[0].info == [
        "4 TMA load(s) of a 2-D box 8x64, 128B swizzle, oob zero (1024 bytes each)"]
