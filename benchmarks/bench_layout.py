"""Benchmark: ``TileLayout.apply_np`` on 1,000,000 coordinates (target: < 50 ms).

Run: ``PYTHONPATH=src python benchmarks/bench_layout.py``. Prints one markdown table row
per case: best of several runs, wall-clock, on the CPU.
"""

from __future__ import annotations

import platform
import time

import numpy as np

from tilewise.layout import R, S, TileLayout, laneid, tid_in_wg, warpid

N = 1_000_000
REPEATS = 7


def _best_ms(fn) -> float:
    fn()  # warm up (canonical form, numpy dispatch)
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def _cases():
    rng = np.random.default_rng(0)
    reg = TileLayout(S[(128, 8) : (1 @ tid_in_wg, 1)])
    big = TileLayout(S[(1024, 1024)])
    swz = TileLayout(S[(1024, 1024)]).swizzle(128, dtype_bits=16)
    mixed = TileLayout(
        S[(8, 2, 4, 2) : (4 @ laneid, 1 @ warpid, 1 @ laneid, 1)] + R[2 : 4 @ warpid] + 5 @ warpid
    )
    yield "S[(1024, 1024)], (n, 2) coords", big, rng.integers(0, 1024, (N, 2))
    yield "S[(1024, 1024)] + swizzle 128B, (n, 2)", swz, rng.integers(0, 1024, (N, 2))
    yield "S[(128, 8):(1@tid_in_wg, 1)], linear", reg, rng.integers(0, 1024, N)
    yield (
        "S[(8,2,4,2):(...)] + R + offset, (n, 4)",
        mixed,
        np.stack([rng.integers(0, e, N) for e in (8, 2, 4, 2)], axis=1),
    )


def main() -> None:
    print(f"| case | coords | apply_np best of {REPEATS} (ms) | machine |")
    print("|---|---|---|---|")
    for name, layout, coords in _cases():
        ms = _best_ms(lambda lay=layout, c=coords: lay.apply_np(c))
        print(f"| {name} | {N:,} | {ms:.1f} | {platform.processor() or platform.machine()} |")


if __name__ == "__main__":
    main()
