"""The attention tests load examples/attention.py (and its backward) by path."""

import pytest
from exload import load_example


@pytest.fixture(scope="session")
def attn():
    return load_example("attention")
