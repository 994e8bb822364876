"""The cold-start program: import tilewise and compile the seed (examples/ldgsts_copy.py)
to a cubin, nothing else. Run it in a fresh process with an empty TILEWISE_CACHE_DIR;
benchmarks/bench_cold_start.py times it against ``python -c "import numpy"``."""

import importlib.util
import os
import sys

SEED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                    "ldgsts_copy.py")
spec = importlib.util.spec_from_file_location("seed", SEED)
seed = importlib.util.module_from_spec(spec)
spec.loader.exec_module(seed)

import tilewise as tw  # noqa: E402 - the seed imports it first; this is the public name

cubin = tw.compile(seed.copy_async, target=seed.TARGET).cubin
sys.stdout.write(f"{len(cubin)}\n")
