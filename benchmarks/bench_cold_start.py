"""Cold start: a fresh process that imports tilewise and compiles the seed program
(examples/ldgsts_copy.py) to a cubin (benchmarks/cold_compile.py), against a fresh
``python -c "import numpy"`` run by the same interpreter; and a fresh process whose kernel
is in the disk cache reaching its first launch (benchmarks/cold_launch.py: on a GPU it
launches and synchronises), against the same baseline, with the modules it loaded (no
llvmlite, no nvJitLink).

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
LAUNCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cold_launch.py")


def _run(argv, env) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _compile(env) -> float:
    with tempfile.TemporaryDirectory() as cache:
        return _run([sys.executable, COLD], dict(env, TILEWISE_CACHE_DIR=cache))


def _pairs(a_fn, b_fn, pairs: int):
    a, b = [], []
    for _ in range(pairs):
        a.append(a_fn())
        b.append(b_fn())
    return a, b


def _report(label: str, a, b, baseline: str) -> None:
    ratios = [x / y for x, y in zip(a, b)]
    print(f"{label}: median {statistics.median(a):.3f} s (min {min(a):.3f}, max {max(a):.3f})"
          f"; B ({baseline} -c 'import numpy'): median {statistics.median(b):.3f} s; "
          f"A/B per pair: median {statistics.median(ratios):.2f} "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f}), {len(a)} pairs")


def main():
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    baseline = sys.argv[2] if len(sys.argv) > 2 else sys.executable
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    numpy = [baseline, "-c", "import numpy"]
    _compile(env), _run(numpy, env)  # warm-up: byte-code caches, page cache
    a, b = _pairs(lambda: _compile(env), lambda: _run(numpy, env), pairs)
    _report("A (import tilewise + compile the seed to a cubin, empty cache)", a, b, baseline)
    with tempfile.TemporaryDirectory() as cache:
        warm = dict(env, TILEWISE_CACHE_DIR=cache)
        first = subprocess.run([sys.executable, LAUNCH], env=warm, check=True,
                               capture_output=True, text=True).stdout.strip()
        again = subprocess.run([sys.executable, LAUNCH], env=warm, check=True,
                               capture_output=True, text=True).stdout.strip()
        a, b = _pairs(lambda: _run([sys.executable, LAUNCH], warm), lambda: _run(numpy, env),
                      pairs)
    _report("C (import tilewise + the seed from the disk cache to its first launch)", a, b,
            baseline)
    print(f"C's first process (cache empty): {first}; a later one: {again}")


if __name__ == "__main__":
    main()
