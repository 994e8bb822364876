"""The code generator's integer arithmetic on the GPU against the same independent evaluator
the simulator is checked with (tests/sim/test_int_fuzz.py)."""

import importlib.util
import os

import pytest

from tilewise.runner import _run_gpu

_spec = importlib.util.spec_from_file_location(
    "int_fuzz", os.path.join(os.path.dirname(__file__), "int_fuzz.py"))
F = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(F)


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(40))
def test_random_int_expression_on_gpu(seed):
    from tilewise.runtime import device_target

    func, arrays, want = F.make_case(seed)
    _run_gpu(func, arrays, str(device_target()))
    assert arrays[3].tolist() == want.tolist()
