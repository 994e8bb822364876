"""TIRx's copy tests (copy_ports.py) in the simulator: two CTAs write the same output with
identical bytes, which is a warning in the report, never a hazard; the bytes are TIRx's
expected ones. On the GPU (marked ``gpu``) the result must match byte for byte."""

import warnings

import numpy as np
import pytest

import tilewise as tw
from copy_ports import G2S_TASKS, copy_g2s_s2g

DTYPES = ["int8", "float8_e4m3fn", "float16", "bfloat16", "float32"]
CASES = ([(t, "float16", s) for t in sorted(G2S_TASKS) for s in ("cta", "thread")]
         + [("window-32x32", d, "cta") for d in DTYPES if d != "float16"]
         + [("swizzled", "bfloat16", "cta")])


def _simulate(kernel, arrays, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = tw.simulate(kernel, *arrays, **kw)
    return report, caught


@pytest.mark.parametrize("task,dtype,scope", CASES)
def test_copy_g2s_s2g_two_ctas_in_the_simulator(task, dtype, scope):
    kernel, make, reference = copy_g2s_s2g(task, dtype, scope)
    arrays = make(np.random.default_rng(0))
    want = reference(*[a.copy() for a in arrays])
    report, caught = _simulate(kernel, arrays)
    assert report.ok
    assert all(got.tobytes() == w.tobytes() for got, w in zip(arrays, want))
    assert report.warnings and all("with identical bytes" in str(w) for w in report.warnings)
    assert any(issubclass(c.category, tw.SimulationWarning) for c in caught)


def test_the_same_port_is_a_hazard_under_strict_races():
    kernel, make, _ = copy_g2s_s2g("small-8x8", "float16", "cta")
    with pytest.raises(tw.HazardError, match="with identical bytes"):
        tw.simulate(kernel, *make(np.random.default_rng(0)), strict_races=True)


@pytest.mark.gpu
@pytest.mark.parametrize("task,dtype,scope", CASES[:4])
def test_copy_g2s_s2g_two_ctas_on_the_gpu(task, dtype, scope):
    from tilewise.runner import _run_gpu
    from tilewise.runtime import device_target

    kernel, make, reference = copy_g2s_s2g(task, dtype, scope)
    arrays = make(np.random.default_rng(1))
    want = reference(*[a.copy() for a in arrays])
    _run_gpu(kernel, arrays, str(device_target()))
    assert all(got.tobytes() == w.tobytes() for got, w in zip(arrays, want))
