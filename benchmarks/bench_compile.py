"""Compile latency of tw.compile: the seed demo and vector add, to PTX and to cubin.

Warm: same process, cache off, median of N. Cold: a new process (import included), cache
off. Prints markdown rows for benchmarks/RESULTS.md. Targets: warm PTX <= 20 ms, warm
cubin <= 60 ms, cold <= 0.5 s.

    PYTHONPATH=src python benchmarks/bench_compile.py [N]
"""

import datetime
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = {"seed ldgsts_copy": ("ldgsts_copy", "copy_async"),
           "vector_add": ("vector_add", "vector_add")}

_COLD = """
import time, importlib.util, sys
t0 = time.perf_counter()
import tilewise as tw
spec = importlib.util.spec_from_file_location("ex", sys.argv[1])
ex = importlib.util.module_from_spec(spec); spec.loader.exec_module(ex)
k = tw.compile(getattr(ex, sys.argv[2]), "sm_90a")
k.source("ptx") if sys.argv[3] == "ptx" else k.cubin
print(time.perf_counter() - t0)
"""


def _load(file, name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(file, os.path.join(ROOT, "examples",
                                                                     file + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def warm(func, stage, n):
    import tilewise as tw

    times = []
    for _ in range(n + 2):
        t0 = time.perf_counter()
        k = tw.compile(func, "sm_90a")
        k.source("ptx") if stage == "ptx" else k.cubin
        times.append(time.perf_counter() - t0)
    return statistics.median(times[2:])


def cold(file, name, stage, n=5):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"), TILEWISE_CACHE="0")
    times = []
    for _ in range(n):
        out = subprocess.run([sys.executable, "-c", _COLD, os.path.join(ROOT, "examples",
                                                                        file + ".py"), name,
                              stage], env=env, capture_output=True, text=True, check=True)
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    sys.path.insert(0, os.path.join(ROOT, "src"))
    from tilewise.knobs import override

    date = datetime.date.today().isoformat()
    cpu = platform.processor() or platform.machine()
    machine = f"{platform.node()} ({os.cpu_count()} CPUs, {cpu})"
    print("| date | machine | command | kernel | warm PTX ms | warm cubin ms | cold PTX s "
          "| cold cubin s |")
    print("|---|---|---|---|---|---|---|---|")
    for label, (file, name) in KERNELS.items():
        func = _load(file, name)
        with override(cache_enabled=False):
            wp, wc = warm(func, "ptx", n), warm(func, "cubin", n)
        cp, cc = cold(file, name, "ptx"), cold(file, name, "cubin")
        print(f"| {date} | {machine} | `python benchmarks/bench_compile.py {n}` | {label} | "
              f"{wp * 1e3:.1f} | {wc * 1e3:.1f} | {cp:.3f} | {cc:.3f} |")


if __name__ == "__main__":
    main()
