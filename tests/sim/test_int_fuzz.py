"""Integer arithmetic against an independent evaluator, on random expressions
(wrap-around, floor division/modulo, shifts, select): the simulator always, the code
generator on the GPU (marked ``gpu``), the same cases and checks on both."""

import importlib.util
import os

import pytest

from executors import run
from tilewise.ir import verify

_spec = importlib.util.spec_from_file_location(
    "int_fuzz", os.path.join(os.path.dirname(__file__), "..", "gpu", "int_fuzz.py"))
F = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(F)


@pytest.mark.parametrize("seed", range(40))
def test_random_int_expression(executor, seed):
    func, arrays, want = F.make_case(seed)
    verify(func, flat=True)
    run(executor, func, arrays)
    assert arrays[3].tolist() == want.tolist()
