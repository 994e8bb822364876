"""Make ``kernels_core`` importable (pytest runs with importlib); ``executor`` comes from
tests/conftest.py."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
