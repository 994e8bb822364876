"""Tests marked `gpu` need a CUDA GPU and driver; without one they skip cleanly."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # tests/errcheck.py for every folder


@pytest.fixture
def torch():
    """torch, for the GPU tests that launch on its tensors (skipped where it is missing)."""
    return pytest.importorskip("torch")


def pytest_collection_modifyitems(config, items):
    marked = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not marked:
        return
    from tilewise.runtime import gpu_available

    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU on this machine")
    for item in marked:
        item.add_marker(skip)
