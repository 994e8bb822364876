"""TIRx's TMA test programs, ported with spelling changes (tirx_ports.py), run in the
simulator against numpy, and on the GPU (marked ``gpu``) against the simulator's bytes."""

import pytest

import tilewise as tw
from tilewise.pipeline import lower
from tirx_ports import PORTS, port


def _tma_copies(func) -> int:
    log = lower(func, "sm_90a").dispatch_log
    return sum(int(d.info[0].split()[0]) for d in log if d.chosen == "tma")


@pytest.mark.parametrize("name", sorted(PORTS))
def test_port_in_the_simulator(name):
    func, scalars, arrays, reference = port(name)
    want = reference(*[a.copy() for a in arrays])
    report = tw.simulate(func, *scalars, *arrays)
    assert report.ok
    for got, w in zip(arrays, want):
        assert got.tobytes() == w.tobytes()


def test_the_3d_view_is_one_tma_copy():
    func, *_ = port("view-3d-one-copy")
    assert _tma_copies(func) == 1


def test_the_swizzled_8x256_tile_is_one_box_per_atom_column():
    func, *_ = port("g2s-2d-basic")
    assert lower(func, "sm_90a").dispatch_log[0].info == [
        "4 TMA load(s) of a 2-D box 8x64, 128B swizzle, oob zero (1024 bytes each)"]


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(PORTS))
def test_port_on_the_gpu(name):
    from tilewise.runner import _run_gpu
    from tilewise.runtime import device_target

    func, scalars, arrays, reference = port(name)
    sim = [a.copy() for a in arrays]
    tw.simulate(func, *scalars, *sim)
    gpu = [a.copy() for a in arrays]
    _run_gpu(func, scalars + gpu, str(device_target()))
    for g, s in zip(gpu, sim):
        assert g.tobytes() == s.tobytes()
