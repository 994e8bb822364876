"""Run one kernel on the executor a test was given (the ``executor`` fixture of
tests/conftest.py): ``"sim"`` simulates it for ``target`` (strict: the first hazard raises),
``"gpu"`` compiles it for the device's own target and launches it. Either way the numpy
``arrays`` are written in place, so one test checks both executors with the same
assertions (docs/testing.md)."""

from __future__ import annotations

import numpy as np
import pytest


def run(executor: str, func, arrays, target: str = "sm_90a"):
    """Execute ``func`` on ``arrays`` (scalars may stand among them, in parameter order).
    Returns the simulator's report for ``"sim"`` (hazard-free, else this raised), None for
    ``"gpu"``."""
    if executor == "sim":
        from tilewise.sim import simulate

        report = simulate(func, *arrays, target=target, strict=True)
        assert report.ok, report.hazards
        return report
    if executor != "gpu":
        raise ValueError(f"executor is 'sim' or 'gpu', not {executor!r}")
    from tilewise.runner import _run_gpu
    from tilewise.runtime import device_target

    _run_gpu(func, arrays, str(device_target()))
    return None


def assert_same_bytes(got, want) -> None:
    """Each array of ``got`` holds exactly the bytes of its partner in ``want``; a failure
    names the argument, how many bytes differ and the first."""
    assert len(got) == len(want), (len(got), len(want))
    for i, (g, w) in enumerate(zip(got, want)):
        gb, wb = np.frombuffer(g.tobytes(), np.uint8), np.frombuffer(w.tobytes(), np.uint8)
        if gb.shape != wb.shape:
            pytest.fail(f"argument {i}: {gb.size} bytes, expected {wb.size}")
        bad = np.flatnonzero(gb != wb)
        if bad.size:
            pytest.fail(f"argument {i}: {bad.size} byte(s) differ, the first at byte {bad[0]}")
