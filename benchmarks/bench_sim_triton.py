"""Benchmark: the simulator on every example beside Triton's interpreter on an equivalent
kernel (``benchmarks/triton_peers.py``, run by a Python that has triton and torch).

Run: ``PYTHONPATH=src python benchmarks/bench_sim_triton.py [--repeats N] [CASE ...]`` with
``TRITON_PYTHON=/path/to/python`` (a separate environment: ``python3 -m venv /tmp/tv &&
/tmp/tv/bin/pip install triton numpy torch``); without it only the simulator column is
measured. Times are **CPU seconds of one launch**, best of ``--repeats`` after a warm-up
call (the machine may be shared: CPU time, not wall time), the kernel lowered once
beforehand (Triton's interpreter does not compile either); the simulator at each check
level (``simulate(..., checks=)``), torch on one thread. The GEMM line at 512x512x256 is
the issue's target: <= 2 s with full checks. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import tilewise as tw
from tilewise.pipeline import lower

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"

# case -> (example file, kernel factory call or module attribute, inputs call)
CASES = {
    "vector_add (65536)": ("vector_add.py", "vector_add", None),
    "pow (65536)": ("pow.py", "pow_kernel", None),
    "tiled_copy (1000x1000 fp16)": ("tiled_copy.py", "tiled_copy", None),
    "tma_copy (300x520 fp16)": ("tma_copy.py", "tma_copy", None),
    "bulk_copy (256x2048 fp16)": ("bulk_copy.py", "bulk_copy", None),
    "ldgsts_copy (128x32 fp16)": ("ldgsts_copy.py", "copy_async", None),
    "big_smem_copy (1024x128 fp16)": ("big_smem_copy.py", "big_smem_copy", None),
    "tcgen05_roundtrip (128x8 fp16)": ("tcgen05_roundtrip.py", "copy_async_test", None),
    "softmax (64x1024 fp16)": ("softmax.py", "softmax", None),
    "rmsnorm (16x2048 fp16)": ("rmsnorm.py", "rmsnorm", None),
    "gemm_epilogue (128x64)": ("gemm_epilogue.py", "epilogue", None),
    "gemm_hopper (256x256x128)": ("gemm_hopper.py", "gemm", None),
    "gemm_hopper (512x512x256)": ("gemm_hopper.py", "make_gemm(512, 512, 256)",
                                  "inputs(rng, (512, 512, 256))"),
    "gemm_blackwell (256x256x256)": ("gemm_blackwell.py", "gemm", None),
}
LEVELS = ("full", "races", "none")


def _case(name):
    file, kernel, inputs = CASES[name]
    mod = runpy.run_path(str(EX / file), run_name="bench")
    k = eval(kernel, mod) if "(" in kernel else mod[kernel]  # noqa: S307 - our own table
    args = (eval(inputs, {**mod, "rng": np.random.default_rng(0)}) if inputs  # noqa: S307
            else mod["inputs"](np.random.default_rng(0)))
    return lower(k, mod["TARGET"]), args


def simulator_times(names, repeats: int) -> dict:
    out = {}
    for name in names:
        lowered, args = _case(name)
        for level in LEVELS:
            out[name, level] = _best(lowered, args, level, repeats)
    return out


def _best(lowered, args, level: str, repeats: int) -> float:
    """CPU seconds of one simulated launch at ``level``: best of ``repeats`` after a warm-up."""
    def run():
        tw.simulate(lowered, *[a.copy() for a in args], checks=level)
    run()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        run()
        best = min(best, time.process_time() - t0)
    return best



def triton_times(repeats: int) -> dict:
    py = os.environ.get("TRITON_PYTHON")
    if not py:
        return {}
    proc = subprocess.run([py, str(Path(__file__).with_name("triton_peers.py")),
                           "--repeats", str(repeats)], capture_output=True, text=True,
                          check=True, env={**os.environ, "TRITON_INTERPRET": "1"})
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("cases", nargs="*", default=list(CASES))
    args = ap.parse_args()
    warnings.simplefilter("ignore", tw.SimulationWarning)
    sim = simulator_times(args.cases, args.repeats)
    peer = triton_times(args.repeats)
    print("| example | simulator, full | races | none | Triton interpreter | full / Triton |")
    print("|---|---|---|---|---|---|")
    for name in args.cases:
        t = peer.get(name)
        ratio = f"{sim[name, 'full'] / t:.2f}" if t else "-"
        print(f"| {name} | {sim[name, 'full']:.3f} s | {sim[name, 'races']:.3f} s | "
              f"{sim[name, 'none']:.3f} s | " + (f"{t:.3f} s" if t else "-") + f" | {ratio} |")


if __name__ == "__main__":
    sys.exit(main())
