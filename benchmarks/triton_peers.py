"""Triton kernels equivalent to tilewise's examples, timed in Triton's *interpreter*
(``TRITON_INTERPRET=1``: the kernel runs on the CPU, numpy over each program's block).

Run by ``benchmarks/bench_sim_triton.py`` with a Python that has triton and torch (not the
project's environment): ``TRITON_PYTHON=/path/to/python``. Prints one JSON object: case ->
CPU seconds of one launch (best of ``--repeats`` after one warm-up call), torch on one
thread (the simulator uses one core). Each kernel does the example's work with its tile
shape where Triton has one (a program per tile, masks for edges)."""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


@triton.jit
def _pow(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.exp2(y * tl.log2(x)), mask=mask)


@triton.jit
def _copy2d(a_ptr, b_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.program_id(1) * BM + tl.arange(0, BM)[:, None]
    c = tl.program_id(0) * BN + tl.arange(0, BN)[None, :]
    mask = (r < M) & (c < N)
    tl.store(b_ptr + r * N + c, tl.load(a_ptr + r * N + c, mask=mask), mask=mask)


@triton.jit
def _softmax(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + c, mask=c < N, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * N + c, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty),
             mask=c < N)


@triton.jit
def _rmsnorm(x_ptr, w_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + c, mask=c < N, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + c, mask=c < N, other=0.0).to(tl.float32)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * N + c, (x * r * w).to(y_ptr.dtype.element_ty), mask=c < N)


@triton.jit
def _epilogue(acc_ptr, bias_ptr, c_ptr, N, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    y = tl.load(acc_ptr + r * N + c) + tl.load(bias_ptr + c)
    y = y / (1.0 + tl.exp(-y))
    tl.store(c_ptr + r * N + c, y.to(c_ptr.dtype.element_ty))


@triton.jit
def _matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
            BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :],
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def _copy_case(M, N, BM, BN, dtype=torch.float16):
    a = torch.randn(M, N).to(dtype)
    b = torch.empty_like(a)
    grid = (triton.cdiv(N, BN), triton.cdiv(M, BM))
    return lambda: _copy2d[grid](a, b, M, N, BM=BM, BN=BN)


def _gemm_case(M, N, K, BM, BN, BK):
    a = torch.randn(M, K).to(torch.bfloat16)
    b = torch.randn(K, N).to(torch.bfloat16)
    c = torch.empty(M, N, dtype=torch.bfloat16)
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    return lambda: _matmul[grid](a, b, c, M, N, K, BM=BM, BN=BN, BK=BK)


def _elementwise(kernel, n, block):
    x, y = torch.rand(n) + 0.5, torch.rand(n)
    out = torch.empty(n)
    return lambda: kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)


def _rows(rows, cols, norm: bool):
    x = torch.randn(rows, cols).to(torch.float16)
    y = torch.empty_like(x)
    if norm:
        w = torch.randn(cols).to(torch.float16)
        return lambda: _rmsnorm[(rows,)](x, w, y, cols, 1e-6, BLOCK=triton.next_power_of_2(cols))
    return lambda: _softmax[(rows,)](x, y, cols, BLOCK=triton.next_power_of_2(cols))


def _epilogue_case(M, N):
    acc, bias = torch.randn(M, N), torch.randn(N)
    c = torch.empty(M, N, dtype=torch.bfloat16)
    return lambda: _epilogue[(M // 64,)](acc, bias, c, N, BM=64, BN=N)


CASES = {  # the example (and shape) -> its Triton peer
    "vector_add (65536)": lambda: _elementwise(_add, 1 << 16, 256),
    "pow (65536)": lambda: _elementwise(_pow, 1 << 16, 256),
    "tiled_copy (1000x1000 fp16)": lambda: _copy_case(1000, 1000, 64, 128),
    "tma_copy (300x520 fp16)": lambda: _copy_case(300, 520, 256, 128),
    "bulk_copy (256x2048 fp16)": lambda: _copy_case(256, 2048, 8, 1024),
    "ldgsts_copy (128x32 fp16)": lambda: _copy_case(128, 32, 128, 32),
    "big_smem_copy (1024x128 fp16)": lambda: _copy_case(1024, 128, 256, 128),
    "tcgen05_roundtrip (128x8 fp16)": lambda: _copy_case(128, 8, 128, 8),
    "softmax (64x1024 fp16)": lambda: _rows(64, 1024, False),
    "rmsnorm (16x2048 fp16)": lambda: _rows(16, 2048, True),
    "gemm_epilogue (128x64)": lambda: _epilogue_case(128, 64),
    "gemm_hopper (256x256x128)": lambda: _gemm_case(256, 256, 128, 128, 256, 64),
    "gemm_hopper (512x512x256)": lambda: _gemm_case(512, 512, 256, 128, 64, 64),
    "gemm_blackwell (256x256x256)": lambda: _gemm_case(256, 256, 256, 128, 128, 64),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    out = {}
    for name, make in CASES.items():
        run = make()
        run()  # the first call sets the interpreter up
        best = float("inf")
        for _ in range(args.repeats):
            t0 = time.process_time()
            run()
            best = min(best, time.process_time() - t0)
        out[name] = best
    print(json.dumps(out))


if __name__ == "__main__":
    main()
