#!/usr/bin/env python3
"""Launch examples/gemm_hopper.py's kernel for one problem in forced kernel shapes, each
twice (the first compiles and warms), for Nsight Compute to profile (scripts/gpu-smallm).

    python scripts/ncu_gemm.py 1x4096x4096 "bm=64,bn=128,splits=3" "bm=128,bn=8,splits=3,swap=1"
"""

import importlib.util
import pathlib
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("gemm_hopper", ROOT / "examples" / "gemm_hopper.py")
G = importlib.util.module_from_spec(spec)
spec.loader.exec_module(G)

M, N, K = (int(v) for v in sys.argv[1].split("x"))
A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
B = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
for spec_ in sys.argv[2:]:
    kw = {k: int(v) for k, v in (item.split("=") for item in spec_.split(","))}
    kw["swap"] = bool(kw.get("swap", 0))
    k = G.make_gemm(M, N, K, **kw)
    for _ in range(2):
        k(A, B, C)
    torch.cuda.synchronize()
    err = float((C.double() - A.double() @ B.double()).norm() / (A.double() @ B.double()).norm())
    print(f"{spec_}: rel err {err:.1e}", flush=True)
