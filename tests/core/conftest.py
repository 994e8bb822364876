"""Make ``kernels_core`` importable (pytest runs with importlib) and give every test an
``executor``: the simulator always, the GPU when one is present (marked ``gpu``)."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))


@pytest.fixture(params=["sim", pytest.param("gpu", marks=pytest.mark.gpu)])
def executor(request):
    return request.param

