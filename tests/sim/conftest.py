"""Make ``simhelpers`` importable from the simulator tests (pytest runs with importlib)."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
