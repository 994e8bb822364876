import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped cleanly without one)")


def pytest_collection_modifyitems(config, items):
    from tilewise.runtime import gpu_available

    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def example():
    def load(name):
        spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples",
                                                                         name + ".py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    return load


@pytest.fixture
def torch():
    return pytest.importorskip("torch")
