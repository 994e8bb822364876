"""GPU: the Hopper GEMM (examples/gemm_hopper.py) against cuBLAS (torch.matmul) and a Triton
``tl.dot`` matmul, in one run, on the same inputs.

C = A @ B with A (M, K) and B (K, N) row-major, bf16 or fp16 in, float32 accumulation, the
input dtype out. Every kernel is checked against torch.matmul first (relative Frobenius
error), then timed with CUDA events (median of samples of back-to-back launches, A/B/C
interleaved against drift; METHOD.md). TFLOP/s count 2·M·N·K.

    PYTHONPATH=src python benchmarks/bench_gemm.py [--shapes 4096x4096x4096 ...] [--dtypes bfloat16]
        [--transB]   # B given as (N, K): C = A @ B.T, make_gemm(..., transB=True)
    PYTHONPATH=src python benchmarks/bench_gemm.py --sweep [--explore N] [--dtypes bfloat16]
    PYTHONPATH=src python benchmarks/bench_gemm.py --sweep --shapes 1x4096x4096 16x4096x4096

``--sweep``: the model-layer shapes of issue 19 (M from 1 to 8192 against the (N, K) of
7B-70B layers), one line per shape with cuBLAS, Triton, tilewise in the cost model's
kernel shape (``plan``) and ``tuned``: ``make_gemm(M, N, K)`` as a user calls it, tuned on
its first launch (``tilewise.autotune``; the pick is printed), then the geometric mean and
the worst ratio of each. Every call is timed as replays of a CUDA graph of back-to-back
launches: small shapes run in less time than a launch takes on the host, and the table
compares kernels, not launch paths (bench_launch.py measures those). ``--explore N`` also
times the N next-best kernel shapes of ``gemm_hopper.candidates`` by its estimate and
reports the best of them (what an autotuner would find among those), and ``--all`` prints
each explored shape's TFLOP/s and the tuner's own timings of its candidates. ``--shapes``
with ``--sweep`` times only those of the sweep's shapes (any MxNxK). GB/s: the bytes of A,
B and C once over the kernel's time (what bounds the decode shapes, M <= 16: B streamed
once).
"""

import argparse
import datetime
import importlib.util
import os
import statistics
import time

from timing import timed, timed_all

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES = ["4096x4096x4096", "8192x8192x8192", "16384x2048x8192", "512x512x8192"]
SWEEP_M = (1, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
SWEEP_NK = ((4096, 4096), (14336, 4096), (4096, 14336), (6144, 4096), (28672, 8192),
            (8192, 28672), (32000, 4096), (128256, 4096))


def triton_matmul():
    """A plain Triton tl.dot matmul with Triton's usual autotuning configurations for
    Hopper (the peer of the same kind as ours: a tile-level kernel, not a library)."""
    import triton
    import triton.language as tl

    configs = [triton.Config({"BM": bm, "BN": bn, "BK": bk, "G": 8}, num_stages=s, num_warps=w)
               for bm, bn, bk, s, w in ((128, 256, 64, 3, 8), (128, 128, 64, 4, 4),
                                        (128, 256, 64, 4, 8), (256, 128, 64, 3, 8),
                                        (128, 128, 128, 3, 8), (64, 256, 64, 4, 4))]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, G: tl.constexpr):
        pid = tl.program_id(0)
        npm, npn = tl.cdiv(M, BM), tl.cdiv(N, BN)
        group = pid // (G * npn)
        first = group * G
        size = min(npm - first, G)
        pm = first + (pid % (G * npn)) % size
        pn = (pid % (G * npn)) // size
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        pa = a + rm[:, None] * sam + rk[None, :] * sak
        pb = b + rk[:, None] * sbk + rn[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            ka = tl.load(pa, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
            kb = tl.load(pb, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(ka, kb, acc)
            pa += BK * sak
            pb += BK * sbk
        pc = c + rm[:, None] * scm + rn[None, :] * scn
        tl.store(pc, acc.to(c.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))

    def run(a, b, c):
        M, K = a.shape
        N = b.shape[1]
        grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)  # noqa
        kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                     c.stride(0), c.stride(1))
    return run


def _tilewise(shape, dtype, config=""):
    """The example's kernel; ``config`` is ``key=value,...`` passed to make_gemm (ints as
    ints), e.g. ``producer=warp`` or ``stages=4``."""
    spec = importlib.util.spec_from_file_location(
        "gemm_hopper", os.path.join(ROOT, "examples", "gemm_hopper.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    kw = {}
    for item in filter(None, config.split(",")):
        k, v = item.split("=")
        kw[k] = int(v) if v.isdigit() else v
    return mod.make_gemm(*shape, dtype=dtype, **kw)


def _module():
    spec = importlib.util.spec_from_file_location(
        "gemm_hopper", os.path.join(ROOT, "examples", "gemm_hopper.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _compile_one(job):
    """Worker: build and assemble one sweep kernel into the on-disk compile cache."""
    import tilewise as tw

    dtype, sms, cfg = job
    tw.compile(_module()._kernel(dtype, sms, "warpgroup", **dict(cfg)), "sm_90a").cubin  # noqa: B018
    return job


def _sweep_configs(G, M, N, K, sms, explore) -> list[dict]:
    """The kernel shapes the sweep times for a problem: the plan's, then the next
    ``explore`` shapes by the cost model."""
    plan = G.plan(M, N, K, sms)
    others = sorted((c for c in G.candidates(M, N, K, sms)
                     if {**c, "stages": plan["stages"]} != plan),
                    key=lambda c: G.estimate(M, N, K, sms, **c))[:explore]
    return [plan] + [G.plan(M, N, K, sms, **c) for c in others]


def _precompile(G, dtypes, shapes, sms, explore) -> None:
    """Every kernel shape the sweep will time, compiled in parallel processes first (the
    main process then reads them from the cache): a fresh machine's serial compiles would
    take most of a device call."""
    import concurrent.futures

    jobs = {(dtype, sms, tuple(sorted(cfg.items()))) for dtype in dtypes
            for M, N, K in shapes for cfg in _sweep_configs(G, M, N, K, sms, explore)}
    t0 = time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(_compile_one, sorted(jobs)))
    print(f"# compiled {len(jobs)} kernel shapes in {time.perf_counter() - t0:.0f} s",
          flush=True)


def sweep(a):
    """Issue 19's sweep: per shape cuBLAS, Triton, tilewise (and the best explored shape)."""
    import math

    import torch

    G = _module()
    tri = triton_matmul()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    kernels = {}  # one symbolic kernel per (dtype, kernel shape): compiled once

    def kernel(dtype, cfg):
        key = (dtype, tuple(sorted(cfg.items())))
        if key not in kernels:  # (stream-K and splits through global memory with their
            k = G._kernel(dtype, sms, "warpgroup", **cfg)  # workspace, as make_gemm's)
            kernels[key] = G._streamk_wrap(cfg, k, dtype) or k
        return kernels[key]

    ratios = {"plan": [], "best": [], "triton": [], "tuned": [], "tuned-triton": []}
    shapes = ([tuple(int(v) for v in s.split("x")) for s in a.shapes] if a.shapes else
              [(M, N, K) for N, K in SWEEP_NK for M in SWEEP_M])
    _precompile(G, a.dtypes, shapes, sms, a.explore)
    for dtype in a.dtypes:
        td = getattr(torch, dtype)
        for M, N, K in shapes:
            A = torch.randn(M, K, device="cuda", dtype=td)
            B = torch.randn(K, N, device="cuda", dtype=td)
            ref = A.float() @ B.float()
            cfgs = _sweep_configs(G, M, N, K, sms, a.explore)
            runs = {"cublas": lambda A=A, B=B: torch.matmul(A, B)}
            C_tri = torch.empty(M, N, device="cuda", dtype=td)
            runs["triton"] = lambda A=A, B=B, C=C_tri: tri(A, B, C)
            errs = {}
            names = []
            for cfg in cfgs:
                name = _name(cfg)
                k = kernel(dtype, cfg)
                C = torch.full((M, N), float("nan"), device="cuda", dtype=td)
                k(A, B, C)
                torch.cuda.synchronize()
                errs[name] = _error(torch, C, ref)
                runs[name] = lambda A=A, B=B, C=C, k=k: k(A, B, C)
                names.append(name)
            # what a user gets: make_gemm(M, N, K) tuned on its first launch (cached after)
            tuned = G.make_gemm(M, N, K, dtype=dtype, num_sms=sms)
            C = torch.full((M, N), float("nan"), device="cuda", dtype=td)
            tuned(A, B, C)
            torch.cuda.synchronize()
            errs["tuned"] = _error(torch, C, ref)
            runs["tuned"] = lambda A=A, B=B, C=C, k=tuned: k(A, B, C)
            pick = _name(tuned.select(A, B, C))
            flops = 2 * M * N * K
            reps = max(1, min(50, int(2e-3 / max(flops / 600e12, 2e-6))))
            tf = {n: flops / t / 1e12  # interleaved: each sees the same clocks (timing.py)
                  for n, t in timed_all(torch, runs, reps, a.samples, graph=True).items()}
            best = max(names, key=lambda n: tf[n])
            gbs = {n: 2 * (M * K + K * N + M * N) * tf[n] * 1e12 / flops / 1e9 for n in tf}
            r_plan, r_best = tf[names[0]] / tf["cublas"], tf[best] / tf["cublas"]
            ratios["plan"].append(r_plan)
            ratios["best"].append(r_best)
            ratios["triton"].append(tf[names[0]] / tf["triton"])
            ratios["tuned"].append(tf["tuned"] / tf["cublas"])
            ratios["tuned-triton"].append(tf["tuned"] / tf["triton"])
            bad = [n for n, e in errs.items() if not e < 2e-2]
            print(f"| {dtype} | {M}x{N}x{K} | cuBLAS {tf['cublas']:.0f} | Triton "
                  f"{tf['triton']:.0f} | tilewise {names[0]} {tf[names[0]]:.0f} "
                  f"({r_plan:.2f}x cuBLAS, {ratios['triton'][-1]:.2f}x Triton) | best "
                  f"{best} {tf[best]:.0f} ({r_best:.2f}x) | tuned {pick} {tf['tuned']:.0f} "
                  f"({ratios['tuned'][-1]:.2f}x cuBLAS, {ratios['tuned-triton'][-1]:.2f}x "
                  f"Triton) | GB/s cuBLAS {gbs['cublas']:.0f}, tilewise {gbs[names[0]]:.0f}, "
                  f"tuned {gbs['tuned']:.0f} |" + (f" WRONG: {bad}" if bad else ""),
                  flush=True)
            if a.all:
                print("    " + ", ".join(f"{n} {tf[n]:.1f} ({tf[n] / tf['cublas']:.2f}x)"
                                         for n in names), flush=True)
                print("    the tuner's view (one cold-L2 launch a sample):\n    " +
                      tuned.report().replace("\n", "\n    "), flush=True)
            del A, B, C_tri, runs
    for key, rs in ratios.items():
        g = math.exp(sum(math.log(r) for r in rs) / len(rs))
        what = "vs Triton" if key.endswith("triton") else "vs cuBLAS"
        print(f"{key} {what}: geomean {g:.3f}, worst {min(rs):.3f} over {len(rs)} shapes")


def _name(cfg) -> str:
    """A kernel shape as the tables print it: ``64x128s3/7`` (bm x bn, splits, stages), ``T``
    first for swap-AB (bm columns of B x bn rows of A), ``m2`` last for a multicast pair,
    ``np`` for one CTA per tile (``persistent=False``), ``k`` for stream-K (``streamk``),
    ``+G`` for K split G ways through global memory (``global_splits``)."""
    return (("T" if cfg.get("swap") else "") + f"{cfg['bm']}x{cfg['bn']}s{cfg['splits']}/"
            f"{cfg['stages']}" + ("m2" if cfg["multicast"] > 1 else "")
            + ("np" if cfg.get("persistent") is False else "")
            + ("k" if cfg.get("streamk") else "")
            + (f"+{cfg['global_splits']}" if cfg.get("global_splits", 1) > 1 else ""))


def _error(torch, c, ref) -> float:
    return float(torch.linalg.norm(c.double() - ref.double()) / torch.linalg.norm(ref.double()))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", nargs="+", default=None,
                   help="MxNxK (default: the four of SHAPES; with --sweep: the sweep's)")
    p.add_argument("--dtypes", nargs="+", default=["bfloat16", "float16"])
    p.add_argument("--samples", type=int, default=11)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--peers-only", action="store_true", help="time cuBLAS and Triton only")
    p.add_argument("--configs", nargs="+", default=[""],
                   help="make_gemm options per tilewise row, e.g. '' 'producer=warp'")
    p.add_argument("--sweep", action="store_true", help="issue 19's model-layer shapes")
    p.add_argument("--transB", action="store_true",
                   help="B given as (N, K) (nn.Linear's weight): C = A @ B.T for all three")
    p.add_argument("--explore", type=int, default=0, help="--sweep: also time N more shapes")
    p.add_argument("--all", action="store_true", help="--sweep: print every explored shape")
    a = p.parse_args()
    if a.sweep:
        return sweep(a)
    a.shapes = a.shapes or SHAPES

    import torch

    tri = triton_matmul()
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(20):  # working clocks before anything is timed
        x @ x
    torch.cuda.synchronize()
    failed = False
    for dtype in a.dtypes:
        td = getattr(torch, dtype)
        for s in a.shapes:
            M, N, K = (int(v) for v in s.split("x"))
            A = torch.randn(M, K, device="cuda", dtype=td)
            B = torch.randn(K, N, device="cuda", dtype=td)
            ref = A.float() @ B.float()
            Bk = B.t().contiguous() if a.transB else B  # what tilewise takes
            Bv = Bk.t() if a.transB else B  # (K, N), a strided view with --transB
            runs = {"cublas": lambda A=A, B=Bv: torch.matmul(A, B)}
            C_tri = torch.empty(M, N, device="cuda", dtype=td)
            runs["triton"] = lambda A=A, B=Bv, C=C_tri: tri(A, B, C)
            errs = {"cublas": _error(torch, torch.matmul(A, Bv), ref)}
            tri(A, Bv, C_tri)
            errs["triton"] = _error(torch, C_tri, ref)
            B = Bk
            if not a.peers_only:
                for cfg in a.configs:
                    name = "tilewise" + (f"[{cfg}]" if cfg else "")
                    if a.transB:
                        cfg = ",".join(filter(None, [cfg, "transB=1"]))
                    k = _tilewise((M, N, K), dtype, cfg)
                    C = torch.full((M, N), float("nan"), device="cuda", dtype=td)
                    k(A, B, C)
                    torch.cuda.synchronize()
                    errs[name] = _error(torch, C, ref)
                    runs[name] = lambda A=A, B=B, C=C, k=k: k(A, B, C)
            host = {}
            for n, fn in runs.items():  # CPU time per launch (the GPU must not wait on it)
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(20):
                    fn()
                host[n] = (time.perf_counter() - t0) / 20 * 1e6
                torch.cuda.synchronize()
            times = {n: [] for n in runs}
            for _ in range(2):  # interleaved against drift
                for n, fn in runs.items():
                    times[n].append(timed(torch, fn, a.reps, a.samples))
            tf = {n: 2 * M * N * K / statistics.median(t) / 1e12 for n, t in times.items()}
            ok = all(e < 2e-2 for e in errs.values())
            failed |= not ok
            cols = " | ".join(f"{n} {tf[n]:.0f} TFLOP/s (err {errs[n]:.1e}, host "
                              f"{host[n]:.0f} us/launch)" for n in runs)
            ratio = "".join(f" | {n} vs cuBLAS {tf[n] / tf['cublas']:.3f}, vs Triton "
                            f"{tf[n] / tf['triton']:.3f}" for n in tf if n.startswith("tilewise"))
            print(f"| {datetime.date.today()} | {torch.cuda.get_device_name()} | {dtype} "
                  f"{M}x{N}x{K}{' B(N,K)' if a.transB else ''} | {cols}{ratio} |", flush=True)
    if failed:
        raise SystemExit("a product differs from torch.matmul beyond 2e-2")


if __name__ == "__main__":
    main()
