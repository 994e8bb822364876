"""Time forced kernel shapes of examples/gemm_hopper.py side by side with cuBLAS and the
benchmark's autotuned Triton matmul, in one process (a design study: which shape, stage
count or grid a problem wants), bf16, CUDA-graph replays as in ``bench_gemm.py --sweep``.

    PYTHONPATH=src python scripts/gemm_probe.py 1x28672x8192 -- T128x8s1/8 T128x8s1/4@264
    PROBE_ONLY=T128x8s1/8 ncu ... python scripts/gemm_probe.py 1x28672x8192 -- T128x8s1/8

A kernel shape is ``[T]BMxBNsS/STAGES[@GRID][m2][gG][k][pP][+G]``: ``T`` swap-AB, ``BM`` x ``BN``
tiles, ``S`` CTAs of a cluster splitting K, the ring's stages, ``@GRID`` the persistent grid
(default: the SM count; ``@0``: one CTA per tile, not persistent), ``m2`` a multicast pair
sharing B, ``gG`` tile rows walked together (default ``GROUP_M``), ``k`` stream-K, ``pP``
the TMA loads' L2 promotion in bytes (0, 64, 128, 256; default 128), ``+G`` K split ``G``
ways over single CTAs, their partial sums added by a second kernel (``global_splits``). Each
result is checked against torch.matmul first.
"""
import functools
import os
import pickle
import re
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_gemm  # noqa: E402
from timing import timed_all  # noqa: E402

SPEC = re.compile(r"(T?)(\d+)x(\d+)s(\d+)/(\d+)(?:@(\d+))?(m2)?(?:g(\d+))?(k)?(?:p(\d+))?"
                  r"(?:\+(\d+))?$")


def parse(spec: str, sms: int) -> dict:
    m = SPEC.match(spec)
    if not m:
        raise SystemExit(f"{spec!r}: a kernel shape is [T]BMxBNsS/STAGES[@GRID][m2][gG][k][pP][+G]")
    t, bm, bn, s, st, grid, mc, g, sk, promo, gs = m.groups()
    return dict(sms=int(grid or 0) or sms, bm=int(bm), bn=int(bn), splits=int(s),
                stages=int(st), swap=bool(t), persistent=grid != "0",
                multicast=2 if mc else 1, **({"group_m": int(g)} if g else {}),
                **({"streamk": True} if sk else {}),
                **({"l2_promotion": int(promo)} if promo else {}),
                **({"global_splits": int(gs)} if gs else {}))


def main(argv):
    from tilewise.compile_pool import compile_many
    from tilewise.runtime import device_target

    cut = argv.index("--") if "--" in argv else len(argv)
    shapes = [tuple(map(int, a.split("x"))) for a in argv[:cut]]
    specs = argv[cut + 1:]
    only = os.environ.get("PROBE_ONLY")
    specs = [s for s in specs if only in (None, s)]
    G = bench_gemm._module()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    target = str(device_target())

    jobs = []
    for s in specs:
        kw = parse(s, sms)
        jobs.append((functools.partial(G._kernel, "bfloat16", kw.pop("sms"), "warpgroup", **kw),
                     {}))
    built = compile_many(jobs, target)
    kernels, reasons = {}, {}
    for s, b in zip(specs, built):
        reasons[s] = b.reason
        kernels[s] = None if b.blob is None else pickle.loads(b.blob)
        if kernels[s] is not None:  # stream-K and global splits: with their workspace
            kernels[s] = G._streamk_wrap(parse(s, sms), kernels[s]) or kernels[s]
    tri = None if only else bench_gemm.triton_matmul()
    for M, N, K in shapes:
        A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        B = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        ref = A.float() @ B.float()
        runs = {}
        if not only:
            runs["cublas"] = functools.partial(torch.matmul, A, B)
            Ct = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
            runs["triton"] = functools.partial(tri, A, B, Ct)
        for s, k in kernels.items():
            if k is None:
                print(f"{s}: did not compile: {reasons[s]}", flush=True)
                continue
            C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            k(A, B, C)
            torch.cuda.synchronize()
            err = float(torch.linalg.norm(C.float() - ref) / torch.linalg.norm(ref))
            if not err < 2e-2:
                print(f"{M}x{N}x{K} {s}: WRONG (relative error {err:.2e})", flush=True)
                continue
            runs[s] = functools.partial(k, A, B, C)
        flops = 2 * M * N * K
        nbytes = 2 * (M * K + K * N + M * N)
        reps = max(1, min(50, int(2e-3 / max(flops / 600e12, 2e-6))))
        ts = timed_all(torch, runs, reps, 5, graph=True)  # interleaved: the same clocks
        cells = [f"{n} {flops / t / 1e12:.1f} TF {nbytes / t / 1e9:.0f} GB/s"
                 for n, t in ts.items()]
        print(f"{M}x{N}x{K}: " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
