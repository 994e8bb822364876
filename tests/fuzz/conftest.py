"""Make the fuzzer's modules importable from its test (pytest runs with importlib)."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
