"""Front-end latency: `import tilewise` in a new process, and parse + print of each seed
program (warm, same process). Prints markdown rows for benchmarks/RESULTS.md.

    python benchmarks/bench_frontend.py
"""

from __future__ import annotations

import datetime
import pathlib
import platform
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
SEEDS = ["ldgsts_copy.py", "tcgen05_roundtrip.py"]


def import_time(runs: int = 15) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import tilewise"], check=True)
        out.append(time.perf_counter() - t0)
    return out


def parse_print_time(path: pathlib.Path, runs: int = 50) -> list[float]:
    import tilewise as tw

    src = path.read_text()
    env: dict = {"__name__": path.stem, "__file__": str(path)}
    exec(compile(src, str(path), "exec"), env)  # the module's compile-time values
    kernel = next(v for v in env.values() if isinstance(v, tw.ir.PrimFunc))
    text = kernel.script()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f = tw.from_source(text, env=env)
        f.script()
        out.append(time.perf_counter() - t0)
    return out


def row(what, samples, unit_scale, unit, target):
    med = statistics.median(samples) * unit_scale
    lo, hi = min(samples) * unit_scale, max(samples) * unit_scale
    day = datetime.date.today().isoformat()
    machine = f"{platform.machine()} {platform.python_version()}"
    return (f"| {day} | {machine} (CPU) | `python benchmarks/bench_frontend.py` | {what} | "
            f"median {med:.1f} {unit} (min {lo:.1f}, max {hi:.1f}) | target {target} |")


def main():
    sys.path.insert(0, str(ROOT / "src"))
    print(row("`import tilewise`, new process", import_time(), 1000, "ms", "< 300 ms"))
    for seed in SEEDS:
        samples = parse_print_time(ROOT / "examples" / seed)
        print(row(f"parse + print {seed} (warm)", samples, 1000, "ms", "< 20 ms"))


if __name__ == "__main__":
    main()
