"""Cold start: a fresh process that imports tilewise and compiles the seed program
(examples/ldgsts_copy.py) to a cubin (benchmarks/cold_compile.py), against a fresh
``python -c "import numpy"`` run by the same interpreter.

Both are timed from outside, whole process (start-up included), in pairs A B A B ...;
the figure is the median of the per-pair ratios A/B (pairing keeps the ratio meaningful
when the machine's speed drifts). A compiles with an empty on-disk cache of its own
(``TILEWISE_CACHE_DIR`` a fresh temporary folder per run), so the front end, LLVM and
nvJitLink all run. One unmeasured warm-up run of each
writes the byte-code caches first, as any install does. Target: A/B <= 2.

    python benchmarks/bench_cold_start.py [PAIRS [BASELINE_PYTHON]]

BASELINE_PYTHON (default: this interpreter) runs B, e.g. ``python3`` to compare with
whatever ``python3`` starts (a version-manager shim adds its own start-up to B).
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

COLD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cold_compile.py")


def _run(argv, env) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _compile(env) -> float:
    with tempfile.TemporaryDirectory() as cache:
        return _run([sys.executable, COLD], dict(env, TILEWISE_CACHE_DIR=cache))


def main():
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    baseline = sys.argv[2] if len(sys.argv) > 2 else sys.executable
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    numpy = [baseline, "-c", "import numpy"]
    _compile(env), _run(numpy, env)  # warm-up: byte-code caches, page cache
    a, b = [], []
    for _ in range(pairs):
        a.append(_compile(env))
        b.append(_run(numpy, env))
    ratios = [x / y for x, y in zip(a, b)]
    print(f"A (import tilewise + compile seed to cubin): median {statistics.median(a):.3f} s "
          f"(min {min(a):.3f}, max {max(a):.3f})")
    print(f"B ({baseline} -c 'import numpy'): median {statistics.median(b):.3f} s "
          f"(min {min(b):.3f}, max {max(b):.3f})")
    print(f"A/B per pair: median {statistics.median(ratios):.2f} "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f}), {pairs} pairs")


if __name__ == "__main__":
    main()
