"""What the row-wise benchmarks (softmax, RMSNorm) share: the command line, the shape sweep,
loading an example, the copy bandwidth of the same run, the correctness check, interleaved
timing of every kernel, the result rows, the geometric means and worst cases, and the
verdict on the targets.

Bandwidth counts the bytes the operation must read plus write (each row read once, written
once), over the median time of CUDA-event samples of back-to-back launches (timing.py),
every kernel timed twice, interleaved with the others, against clock drift (METHOD.md).
A benchmark describes one shape with a :class:`Case`; :func:`main` does the rest.

``--sweep``: widths 64 ... 262144 (powers of two and not: 1000, 3000, 5120, 14336, 32000,
50257, 128256) x rows 1 ... 65536, arrays up to 2^27 elements, in float16 and bfloat16.
The tilewise kernels are ``tilewise.autotune`` kernels: every candidate of every shape is
compiled first in one batch (``tilewise.autotune.precompile``), then each shape's first
launch tunes it (on its own arrays) before it is checked and timed.
"""

import argparse
import datetime
import importlib.util
import math
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from timing import timed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SWEEP_WIDTHS = [64, 512, 1000, 3000, 4096, 5120, 8192, 14336, 32000, 50257, 65536, 128256,
                262144]
SWEEP_ROWS = [1, 16, 256, 4096, 16384, 65536]
SWEEP_MAX = 1 << 27  # elements of the largest array: 256 MB in 16 bits
BIG = 64 << 20  # bytes from which the 0.85 x copy target applies


def example(name: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples",
                                                                     name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@dataclass
class Case:
    """One shape of one operation: the kernels' inputs (the output is their last argument,
    shaped as ``inputs[0]``), a float32 reference, the torch operation, the Triton peer
    ``triton(*inputs, out)``, the tilewise kernel (a tuned ``k(*inputs, out)``), the allowed
    error, the bytes moved."""

    inputs: tuple
    ref: object
    torch_name: str
    torch_op: Callable
    triton: Callable
    tilewise: object
    error: Callable  # (out, ref) -> float
    tol: float
    nbytes: int


def warm_up(torch):
    """Bring the GPU to its working clocks before anything is timed."""
    a = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    for _ in range(100):
        b.copy_(a)
    torch.cuda.synchronize()


def sweep_shapes() -> list[tuple[int, int]]:
    return [(r, c) for c in SWEEP_WIDTHS for r in SWEEP_ROWS if r * c <= SWEEP_MAX]


def main(op: str, shapes: list[str], make_kernel: Callable, make_case: Callable, doc: str):
    """``make_kernel(rows, cols, dtype)``: the tilewise kernel; ``make_case(torch, rows,
    cols, dtype, kernel) -> Case``; for each shape (``--shapes``, or ``--sweep``) x
    ``--dtypes``: check, time, report; then the summary."""
    p = argparse.ArgumentParser(description=doc)
    p.add_argument("--shapes", nargs="+", default=shapes, help="ROWSxCOLS")
    p.add_argument("--sweep", action="store_true", help="the shape sweep (module doc)")
    p.add_argument("--dtypes", nargs="+", default=["float16", "bfloat16"])
    p.add_argument("--samples", type=int, default=5)
    p.add_argument("--reps", type=int, default=10)
    a = p.parse_args()

    import tilewise
    import torch

    grid = sweep_shapes() if a.sweep else [tuple(int(v) for v in s.split("x"))
                                           for s in a.shapes]
    t0 = time.perf_counter()
    kernels = {(r, c, d): make_kernel(r, c, d) for d in a.dtypes for r, c in grid}
    tilewise.autotune.precompile(*kernels.values())
    print(f"# compiled the tilewise candidates of {len(kernels)} shapes in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    warm_up(torch)
    rows_out, failed = [], False
    for (r, c, d), k in kernels.items():
        case = make_case(torch, r, c, d, k)
        row, bad = _one(torch, case, a.reps, a.samples)
        rows_out.append((d, r, c, case.nbytes, row, _config(k, case)))
        failed |= bool(bad)
        print(_line(d, r, c, case.nbytes, row, rows_out[-1][-1], bad), flush=True)
        del case
        torch.cuda.empty_cache()
    _summary(torch, op, rows_out, a, time.perf_counter() - t0)
    if failed:
        raise SystemExit(f"a {op} result differs from the reference")


def _config(k, case) -> str:
    cfg = k.select(*case.inputs, case.inputs[0])
    return ",".join(f"{n}={v}" for n, v in cfg.items() if v is not None) or "plan"


def _one(torch, case: Case, reps: int, samples: int):
    """GB/s of each kernel on one shape, and the kernels whose result is wrong."""
    x = case.inputs[0]
    copy_dst = torch.empty_like(x)
    outs = {n: torch.full_like(x, float("nan")) for n in ("torch", "triton", "tilewise")}
    runs = {"copy": lambda: copy_dst.copy_(x),
            "torch": lambda: case.torch_op(*case.inputs),
            "triton": lambda: case.triton(*case.inputs, outs["triton"]),
            "tilewise": lambda: case.tilewise(*case.inputs, outs["tilewise"])}
    outs["torch"] = case.torch_op(*case.inputs)
    runs["triton"]()
    runs["tilewise"]()  # the first launch of a shape tunes it
    torch.cuda.synchronize()
    errors = {n: case.error(o, case.ref) for n, o in outs.items()}
    bad = [n for n, e in errors.items() if not e <= case.tol]  # NaN fails too
    times = {n: [] for n in runs}
    for _ in range(2):
        for n, fn in runs.items():
            times[n].append(timed(torch, fn, reps, samples))
    return {n: case.nbytes / statistics.median(t) / 1e9 for n, t in times.items()}, bad


def _line(d, r, c, nbytes, g, cfg, bad) -> str:
    return (f"| {d} | {r}x{c} | {nbytes / 2**20:.1f} | {g['copy']:.0f} | {g['torch']:.0f} | "
            f"{g['triton']:.0f} | {g['tilewise']:.0f} | {g['tilewise'] / g['copy']:.3f} | "
            f"{g['tilewise'] / g['triton']:.3f} | {cfg} |"
            + (f" MISMATCH {bad}" if bad else ""))


def _geo(xs) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def _summary(torch, op: str, rows, a, secs: float) -> None:
    cmd = f"python benchmarks/bench_{op}.py " + ("--sweep" if a.sweep else
                                                  "--shapes " + " ".join(a.shapes))
    print(f"\n## {op}: {datetime.date.today()}, {torch.cuda.get_device_name()}, `{cmd}` "
          f"({secs:.0f} s)\n")
    print("| dtype | rows x cols | MB | copy GB/s | torch | Triton | tilewise | of copy | "
          "of Triton | tilewise config |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for d, r, c, nbytes, g, cfg in rows:
        print(_line(d, r, c, nbytes, g, cfg, None))
    for d in a.dtypes:
        sel = [(r, c, n, g) for dd, r, c, n, g, _ in rows if dd == d]
        if not sel:
            continue
        vs_copy = [g["tilewise"] / g["copy"] for *_, g in sel]
        vs_tri = [g["tilewise"] / g["triton"] for *_, g in sel]
        big = [(r, c, g["tilewise"] / g["copy"]) for r, c, n, g in sel if n >= BIG]
        worst_tri = min(zip(vs_tri, sel), key=lambda t: t[0])
        print(f"\n{op} {d}: {len(sel)} shapes; tilewise / copy geomean {_geo(vs_copy):.3f}, "
              f"worst {min(vs_copy):.3f}; tilewise / Triton geomean {_geo(vs_tri):.3f}, "
              f"worst {worst_tri[0]:.3f} ({worst_tri[1][0]}x{worst_tri[1][1]}); "
              f">= Triton on {sum(v >= 1 for v in vs_tri)}/{len(sel)}")
        if big:
            ok = [b for b in big if b[2] >= 0.85]
            worst = min(big, key=lambda b: b[2])
            print(f"{op} {d}: arrays >= 64 MB: {len(ok)}/{len(big)} at >= 0.85 x copy "
                  f"(geomean {_geo([b[2] for b in big]):.3f}, worst {worst[2]:.3f} at "
                  f"{worst[0]}x{worst[1]})")
