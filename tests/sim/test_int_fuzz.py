"""The simulator's integer arithmetic against an independent evaluator, on random
expressions (wrap-around, floor division/modulo, shifts, select)."""

import importlib.util
import os

import pytest

from tilewise.ir import verify
from tilewise.sim import simulate

_spec = importlib.util.spec_from_file_location(
    "int_fuzz", os.path.join(os.path.dirname(__file__), "..", "gpu", "int_fuzz.py"))
F = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(F)


@pytest.mark.parametrize("seed", range(40))
def test_random_int_expression(seed):
    func, arrays, want = F.make_case(seed)
    verify(func, flat=True)
    simulate(func, *arrays)
    assert arrays[3].tolist() == want.tolist()
