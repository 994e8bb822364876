"""GPU: does ``tilewise.autotune`` rank a factory's candidates as the benchmarks do?

For each case (bf16 ``make_gemm`` and block-scaled ``make_gemm_fp8`` shapes where the tuner
and the sweep have disagreed): every candidate timed as the sweep times it
(``benchmarks/timing.timed_all``: back to back, interleaved), then the tuner run afresh
(no disk cache) twice with each timer of ``TIMERS`` (``CudaTimer`` with and without its
heat), printing the config it keeps and its own TFLOP/s for each candidate.

    PYTHONPATH=src python scripts/tuner_probe.py [bf16|fp8 ...]
"""

import importlib
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "examples"), os.path.join(ROOT, "benchmarks")]

import torch  # noqa: E402

import bench_gemm_fp8 as BG  # noqa: E402
import gemm_fp8 as F  # noqa: E402
import gemm_hopper as G  # noqa: E402
import timing  # noqa: E402
from tilewise.runtime.timer import CudaTimer  # noqa: E402

AT = importlib.import_module("tilewise.autotune")  # the module (tilewise.autotune: the function)
AT._cached_result = lambda *a: None  # tune afresh every time: nothing read from disk
AT._cache_store = lambda *a: None  # nor written
TIMERS = {"heat 0.05 s (default)": lambda: CudaTimer(), "heat 0": lambda: CudaTimer(heat_s=0)}
BF16 = ((512, 14336, 4096), (256, 28672, 8192), (1024, 4096, 4096), (1024, 14336, 4096),
        (128, 6144, 4096), (4096, 4096, 4096))
FP8 = ((4096, 7168, 2048), (4096, 7168, 16384), (4096, 2112, 7168))


def bf16(M, N, K):
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    return (lambda: G.make_gemm(M, N, K, "bfloat16")), (a, b, c)


def fp8(M, N, K):
    a, b, sa, sb, _ = BG.problem(torch, M, N, K, "block")
    c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
    return (lambda: F.make_gemm_fp8(M, N, K, "block")), (a, b, sa, sb, c)


def probe(kind, shape):
    make, args = (bf16 if kind == "bf16" else fp8)(*shape)
    flops = 2.0 * shape[0] * shape[1] * shape[2]
    k = make()
    if not hasattr(k, "configs"):
        print(f"== {kind} {shape}: one kernel, not tuned")
        return
    names = [AT._cfg(c) for c in k.configs]
    fns = {}
    for i, name in enumerate(names):
        kern = k.kernel(i)
        kern(*args)
        fns[name] = lambda kern=kern: kern(*args)
    torch.cuda.synchronize()
    bench = timing.timed_all(torch, fns, reps=20, samples=5)
    print(f"== {kind} {'x'.join(map(str, shape))}", flush=True)
    print("  benchmark: " + ", ".join(f"[{n}] {flops / t / 1e12:.0f}" for n, t in
                                      bench.items()), flush=True)
    for label, timer in TIMERS.items():
        for _ in range(2):
            kk = make()
            kk._timer = timer()
            t0 = time.time()
            won = AT._cfg(kk.select(*args))
            r = next(iter(kk.results.values()))
            tf = [f"{flops / t / 1e12:.0f}" if t else "-" for t in r.times]
            print(f"  tuner, {label}: keeps [{won}] in {time.time() - t0:.2f} s; "
                  f"its TFLOP/s {', '.join(tf)}", flush=True)


if __name__ == "__main__":
    kinds = sys.argv[1:] or ["bf16", "fp8"]
    for kind in kinds:
        for shape in BF16 if kind == "bf16" else FP8:
            probe(kind, shape)
