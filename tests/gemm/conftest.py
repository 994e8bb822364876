"""Make ``kernels_gemm`` importable (pytest runs with importlib)."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
