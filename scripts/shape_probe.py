"""Look for cliffs on shapes no benchmark lists: every example kernel family on a handful
of shapes a user might bring (decode attention, odd GEMM sizes, odd row widths, fp8 at odd
M), each checked against torch first, then timed interleaved with its torch peer (CUDA
graph replays) and printed as a ratio. A design probe, not a benchmark table.

    PYTHONPATH=src python scripts/shape_probe.py [attn] [gemm] [rows] [fp8] [cliff] [cliff2]
        [split] [consumers] [pitch] [mid]
"""
import sys
import time
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from rowbench import example  # noqa: E402
from timing import timed_all  # noqa: E402

F = torch.nn.functional


def timed(fns, reps=20, samples=7):
    return timed_all(torch, fns, reps, samples, warmup=3, graph=True)


def line(*parts):
    print(" | ".join(str(p) for p in parts), flush=True)


def guard(fn, *args):
    t0 = time.time()
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 - a probe reports and goes on
        print(f"FAILED {fn.__name__}{args}:\n{traceback.format_exc()}", flush=True)
    print(f"  ({time.time() - t0:.1f} s)", flush=True)


def attn(A, b, h, kvh, sq, sk, d, causal, dtype="bfloat16", consumers=None):
    dt = getattr(torch, dtype)
    q = torch.randn(b, h, sq, d, device="cuda", dtype=dt)
    k = torch.randn(b, kvh, sk, d, device="cuda", dtype=dt)
    v = torch.randn(b, kvh, sk, d, device="cuda", dtype=dt)
    o = torch.full_like(q, float("nan"))
    kern = A.make_attention(b, h, sq, sk, d, causal=causal, dtype=dtype,
                            kv_heads=None if kvh == h else kvh, consumers=consumers)
    kern(q, k, v, o)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=kvh != h)
    err = float((o.float() - ref.float()).abs().max())
    t = timed({"tw": lambda: kern(q, k, v, o),
               "sdpa": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                               enable_gqa=kvh != h)})
    gb = (q.numel() * 2 + k.numel() * 4) / 1e9
    line("attn", dtype, f"b{b} h{h}/{kvh} sq{sq} sk{sk} d{d}{' causal' if causal else ''}"
         + (f" consumers={consumers}" if consumers else ""),
         f"err {err:.1e}", f"tw {t['tw'] * 1e6:.1f} us", f"sdpa {t['sdpa'] * 1e6:.1f} us",
         f"ratio {t['sdpa'] / t['tw']:.2f}", f"tw {gb / t['tw']:.0f} GB/s")


def gemm(G, M, N, K, dtype, transB=False):
    dt = getattr(torch, dtype)
    a = torch.randn(M, K, device="cuda", dtype=dt)
    b = torch.randn(*((N, K) if transB else (K, N)), device="cuda", dtype=dt)
    bm = b.t() if transB else b  # (K, N) either way, for torch
    c = torch.full((M, N), float("nan"), device="cuda", dtype=dt)
    kern = G.make_gemm(M, N, K, dtype, transB=transB)
    kern(a, b, c)
    ref = a.float() @ bm.float()
    err = float((c.float() - ref).norm() / ref.norm())
    t = timed({"tw": lambda: kern(a, b, c), "torch": lambda: torch.matmul(a, bm, out=c)})
    fl = 2 * M * N * K
    line("gemm", dtype + (" B(N,K)" if transB else ""), f"{M}x{N}x{K}", f"err {err:.1e}",
         f"tw {fl / t['tw'] / 1e12:.0f} TF", f"cuBLAS {fl / t['torch'] / 1e12:.0f} TF",
         f"ratio {t['torch'] / t['tw']:.2f}")


def rows(S, R, name, r, c, dtype):
    dt = getattr(torch, dtype)
    x = torch.randn(r, c, device="cuda").mul_(3).to(dt)
    y = torch.full_like(x, float("nan"))
    if name == "softmax":
        kern = S.make_softmax(r, c, dtype)
        kern(x, y)
        ref = torch.softmax(x.float(), -1)
        peer = lambda: torch.softmax(x, -1)  # noqa: E731
        run = lambda: kern(x, y)  # noqa: E731
    else:
        w = torch.randn(c, device="cuda").to(dt)
        kern = R.make_rmsnorm(r, c, dtype)
        kern(x, w, y)
        ref = F.rms_norm(x.float(), (c,), w.float(), 1e-6)
        peer = lambda: F.rms_norm(x, (c,), w, 1e-6)  # noqa: E731
        run = lambda: kern(x, w, y)  # noqa: E731
    err = float((y.float() - ref).abs().max())
    z = torch.empty_like(x)
    t = timed({"tw": run, "torch": peer, "copy": lambda: z.copy_(x)})
    gb = 2 * x.numel() * x.element_size() / 1e9
    line(name, dtype, f"{r}x{c}", f"err {err:.1e}", f"tw {gb / t['tw']:.0f} GB/s",
         f"torch {gb / t['torch']:.0f}", f"copy {gb / t['copy']:.0f}",
         f"of copy {t['copy'] / t['tw']:.2f}", f"vs torch {t['torch'] / t['tw']:.2f}")


def fp8(E, Q, M, N, K, mode):
    a, b, sa, sb, ref = Q.problem(torch, M, N, K, mode)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    kern = E.make_gemm_fp8(M, N, K, mode)
    kern(a, b, sa, sb, c)
    err = Q.rel_err(torch, c, ref)
    peer = Q.cublas(torch, mode, a, b, sa, sb)
    fns = {"tw": lambda: kern(a, b, sa, sb, c)}
    if peer is not None:
        fns["lt"] = peer
    t = timed(fns)
    fl = 2 * M * N * K
    line("fp8", mode, f"{M}x{N}x{K}", f"err {err:.1e}", f"tw {fl / t['tw'] / 1e12:.0f} TF",
         f"cuBLASLt {fl / t['lt'] / 1e12:.0f} TF" if "lt" in t else "cuBLASLt -",
         f"ratio {t['lt'] / t['tw']:.2f}" if "lt" in t else "")


def main(which):
    print(torch.cuda.get_device_name(), flush=True)
    if "attn" in which:
        A = example("attention")
        for args in [(8, 32, 8, 1, 8192, 128, False), (8, 32, 8, 16, 4096, 128, False),
                     (1, 32, 32, 1, 32768, 128, False), (32, 32, 8, 1, 2048, 128, False),
                     (4, 32, 8, 128, 8192, 128, True), (2, 16, 16, 1000, 1000, 64, True),
                     (1, 8, 8, 3000, 3000, 128, False), (16, 12, 12, 197, 197, 64, False),
                     (1, 32, 8, 2048, 2048, 128, True)]:
            guard(attn, A, *args)
    if "gemm" in which:
        G = example("gemm_hopper")
        for M, N, K in [(3, 4096, 4096), (200, 5120, 5120), (777, 11008, 4096),
                        (3000, 1000, 2560), (5000, 3072, 768), (2048, 2048, 128),
                        (4096, 1024, 16384), (96, 768, 3072), (8192, 8192, 512),
                        (33, 49152, 4096), (160, 8192, 8192), (129, 4096, 4096),
                        (300, 8192, 8192), (384, 4096, 4096), (200, 1000, 4096)]:
            guard(gemm, G, M, N, K, "bfloat16")
        guard(gemm, G, 1536, 6144, 1536, "float16")
    if "rows" in which:
        S, R = example("softmax"), example("rmsnorm")
        for name in ("softmax", "rmsnorm"):
            for r, c, dt in [(7, 100, "bfloat16"), (4096, 2000, "bfloat16"),
                             (1, 100000, "bfloat16"), (8192, 12288, "bfloat16"),
                             (30000, 777, "bfloat16"), (2048, 4096, "float32"),
                             (512, 24576, "float16"), (100000, 96, "bfloat16")]:
                guard(rows, S, R, name, r, c, dt)
    if "fp8" in which:
        E = example("gemm_fp8")
        import bench_gemm_fp8 as Q  # its quantiser, float64 reference and cuBLASLt call
        for M, N, K, mode in [(1000, 3072, 1024, "row"), (2000, 5120, 5120, "block"),
                              (300, 7168, 2048, "block"), (8192, 8192, 8192, "tensor"),
                              (16, 18432, 7168, "block")]:
            guard(fp8, E, Q, M, N, K, mode)


    if "cliff" in which:  # shapes of other models and other dtypes, none in the lists above
        A, G = example("attention"), example("gemm_hopper")
        S, R = example("softmax"), example("rmsnorm")
        for args in [(1, 32, 8, 4096, 4096, 128, True), (2, 16, 16, 513, 513, 96, False),
                     (4, 8, 8, 1, 100000, 128, False), (1, 28, 4, 1500, 1500, 128, True, "float16"),
                     (8, 12, 12, 1024, 1024, 64, False, "float16")]:
            guard(attn, A, *args)
        bf, f16 = "bfloat16", "float16"
        for M, N, K, dt, tb in [(4096, 50257, 768, bf, True), (1, 50257, 768, bf, True),
                                (2000, 2000, 2000, bf, False), (8192, 1000, 1000, f16, False),
                                (32, 4096, 11008, bf, True), (512, 3000, 1000, f16, False),
                                (8192, 14336, 4096, f16, True), (1234, 5678, 4321, bf, False)]:
            guard(gemm, G, M, N, K, dt, tb)
        for name in ("softmax", "rmsnorm"):
            for r, c, dt in [(65536, 1000, "float16"), (16, 128256, "bfloat16"),
                             (4, 262144, "bfloat16"), (65536, 4096, "float32"), (3, 5, "float16")]:
                guard(rows, S, R, name, r, c, dt)
        E = example("gemm_fp8")
        import bench_gemm_fp8 as Q
        for M, N, K, mode in [(4096, 4096, 4096, "row"), (128, 7168, 16384, "block"),
                              (2048, 2048, 2048, "tensor"), (600, 1536, 7168, "block")]:
            guard(fp8, E, Q, M, N, K, mode)
    if "cliff2" in which:  # narrow N (MoE routers), long K, tiny K; long decode, wide heads
        A, G = example("attention"), example("gemm_hopper")
        bf = "bfloat16"
        for M, N, K, tb in [(8192, 8, 4096, True), (8192, 64, 4096, False),
                            (16384, 128, 7168, True), (4096, 256, 4096, False),
                            (512, 512, 8192, False), (256, 256, 16384, False),
                            (1024, 1024, 1024, False), (65536, 4096, 64, False)]:
            guard(gemm, G, M, N, K, bf, tb)
        for args in [(1, 32, 8, 1, 262144, 128, False), (2, 8, 8, 8192, 8192, 256, True),
                     (1, 64, 8, 16, 16384, 128, False), (4, 16, 16, 2048, 2048, 80, True)]:
            guard(attn, A, *args)
    if "split" in which:  # few output tiles and a long K: the split's tree of partial sums
        A, G = example("attention"), example("gemm_hopper")
        for M, N, K in [(512, 512, 8192), (96, 768, 3072), (64, 1024, 8192), (256, 256, 16384),
                        (128, 128, 65536), (16, 4096, 65536), (1, 4096, 4096), (300, 300, 30000),
                        (1024, 1024, 16384)]:
            guard(gemm, G, M, N, K, "bfloat16")
        for dt in ("float16", "bfloat16"):
            guard(attn, A, 8, 12, 12, 1024, 1024, 64, False, dt)
    if "consumers" in which:  # head_dim 64 without a mask: 2 or 3 consumers by rounds
        A = example("attention")
        for b, h, sq in [(8, 12, 1024), (16, 12, 197), (16, 32, 1024), (4, 16, 2048),
                         (2, 16, 1000), (1, 32, 16384), (32, 8, 512)]:
            for dt in ("bfloat16", "float16") if sq == 1024 and b == 8 else ("bfloat16",):
                for c in (None, 2, 3):
                    guard(attn, A, b, h, h, sq, sq, 64, False, dt, c)
    if "mid" in which:  # mid-size problems, whose L2 reads multicast pairs halve
        G = example("gemm_hopper")
        for M, N, K in [(2048, 1000, 4096), (1024, 3000, 1024), (3000, 1000, 2560),
                        (8192, 1000, 1024), (4096, 3000, 4096), (2000, 2000, 2000),
                        (1234, 5678, 4321), (777, 11008, 4096), (2048, 2048, 4096),
                        (1536, 6144, 1536)]:
            guard(gemm, G, M, N, K, "bfloat16")
    if "pitch" in which:  # B (K, N) with N = 8 mod 16 (rows an odd multiple of 16 bytes):
        # the kernel on B as it is, on B copied into rows of N + 8 (a strided view), and
        # that copy's cost with it
        G = example("gemm_hopper")
        for M, N, K in [(8192, 1000, 1024), (8192, 1000, 4096), (4096, 3000, 4096),
                        (2048, 1000, 4096), (1024, 3000, 1024), (3000, 1000, 2560),
                        (16384, 1000, 1000)]:
            guard(pitch, G, M, N, K)


def pitch(G, M, N, K):
    dt = torch.bfloat16
    a = torch.randn(M, K, device="cuda", dtype=dt)
    b = torch.randn(K, N, device="cuda", dtype=dt)
    bp = torch.zeros(K, N + 8, device="cuda", dtype=dt)[:, :N]
    bp.copy_(b)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=dt)
    k0 = G.make_gemm(M, N, K, "bfloat16")
    k1 = G.make_gemm(M, N, K, "bfloat16", strided=True)
    ref = a.float() @ b.float()
    err = 0.0
    for k, bb in ((k0, b), (k1, bp)):  # each form checked, C poisoned before each
        c.fill_(float("nan"))
        k(a, bb, c)
        err = max(err, float((c.float() - ref).norm() / ref.norm()))

    def copied():
        bp.copy_(b)
        k1(a, bp, c)

    t = timed({"tw": lambda: k0(a, b, c), "pitched": lambda: k1(a, bp, c),
               "copy+pitched": copied, "torch": lambda: torch.matmul(a, b, out=c)})
    fl = 2 * M * N * K
    line("pitch", f"{M}x{N}x{K}", f"err {err:.1e}",
         *(f"{n} {fl / v / 1e12:.0f} TF" for n, v in t.items()),
         f"copy+pitched / tw {t['tw'] / t['copy+pitched']:.2f}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["attn", "gemm", "rows", "fp8"])
