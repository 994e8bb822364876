import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))




@pytest.fixture
def example():
    def load(name):
        spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples",
                                                                         name + ".py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    return load

