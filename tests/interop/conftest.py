"""tilewise.torch tests: torch is optional, so every test here that needs it skips where it
is not installed (CI's environment); the CPU ones run the ops in the simulator."""

import itertools
import pathlib
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # kernels_interop
_names = itertools.count()


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


@pytest.fixture
def opname():
    """A fresh op name per test (torch keeps every registered op for the process)."""
    return lambda base: f"tw_test::{base}_{next(_names)}"


@pytest.fixture
def torch_ops(torch):
    """examples/torch_ops.py, imported once per process (its ops register once)."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    import torch_ops

    return torch_ops
