"""Time examples/gemm_hopper.py's splits through global memory with their second kernel
launched programmatically (``GlobalSplit``, the factory's form: programmatic dependent
launch) and plainly (the same kernels, the reduction launched by ``cuLaunchKernel``), bf16,
CUDA-graph replays interleaved with cuBLAS; each launcher checked against torch first (and
two launches bit-identical). Kernel shapes are ``scripts/gemm_probe.py``'s specs.

    PYTHONPATH=src python scripts/split_launch_probe.py
"""
import functools
import pickle
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "scripts"))
import bench_gemm  # noqa: E402
import gemm_probe  # noqa: E402
from timing import timed_all  # noqa: E402

import tilewise  # noqa: E402
from tilewise.compile_pool import compile_many  # noqa: E402
from tilewise.runtime import device_target  # noqa: E402

G = bench_gemm._module()


class Plain(G.GlobalSplit):
    """The same split with its second kernel compiled without ``programmatic=True``."""

    def _launched_reduce(self):
        k = getattr(self, "_plain", None)
        if k is None:
            k = self._plain = tilewise.compile(self.reduce, device_target())
        return k


CASES = [((96, 768, 3072), ["T64x96s1/8+5", "T64x96s1/8+11"]),
         ((256, 256, 16384), ["128x64s1/6+16", "64x128s1/6+16"]),
         ((64, 1024, 8192), ["T64x64s1/8+8"]),
         ((128, 128, 65536), ["128x64s1/8+66"]),
         ((512, 512, 8192), ["128x128s1/6+8"]),
         ((1024, 1024, 16384), ["128x256s1/4+4", "128x128s1/4+2"]),
         ((16, 4096, 14336), ["T128x16s1/8+4"])]
sms = torch.cuda.get_device_properties(0).multi_processor_count
target = str(device_target())
specs = sorted({s for _, ss in CASES for s in ss})
jobs = []
for s in specs:
    kw = gemm_probe.parse(s, sms)
    jobs.append((functools.partial(G._kernel, "bfloat16", kw.pop("sms"), "warpgroup", **kw), {}))
built = dict(zip(specs, compile_many(jobs, target)))
for (M, N, K), ss in CASES:
    A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    B = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    ref = A.float() @ B.float()
    runs = {"cublas": functools.partial(torch.matmul, A, B)}
    for s in ss:
        k = pickle.loads(built[s].blob)
        cfg = gemm_probe.parse(s, sms)
        for name, cls in (("pdl", G.GlobalSplit), ("plain", Plain)):
            w = cls(k, cfg)
            C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            w(A, B, C)
            C2 = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            w(A, B, C2)
            torch.cuda.synchronize()
            err = float((C.float() - ref).norm() / ref.norm())
            assert err < 1e-2 and torch.equal(C, C2), (s, name, err)
            runs[f"{s}/{name}"] = functools.partial(w, A, B, C)
    flops = 2.0 * M * N * K
    for rnd in range(2):
        t = timed_all(torch, runs, 20, 5, warmup=5, graph=True)
        print(f"{M}x{N}x{K} round {rnd}: " + " | ".join(
            f"{n} {flops / v / 1e12:.1f}" for n, v in t.items()), flush=True)
