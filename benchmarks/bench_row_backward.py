"""GPU: the gradients of row softmax and RMSNorm (examples/softmax_backward.py,
examples/rmsnorm_backward.py: the kernels the ``tilewise::softmax`` / ``tilewise::rmsnorm``
torch ops' autograd launches) against torch's and a Triton peer (written here), with torch
``copy_`` as the yardstick, in one run.

* softmax: ``dX = Y * (dY - sum(dY * Y))``; tilewise ``make_softmax_backward`` (rows too long
  for one CTA split over a cluster; also timed walked by one CTA in chunks, "one CTA"); torch
  ``torch._softmax_backward_data`` (what autograd runs); Triton one program per row block
  (rows up to 32768 columns in registers, longer ones in two passes over tiles).
* RMSNorm: ``dX`` and ``dW``; tilewise ``make_rmsnorm_grads`` (the fused backward, dX and
  dW's partial sums from one read, then their sum; rows too long for it: dX and each row's
  r, then the two-kernel weight gradient, also timed where the fused one applies, as "two
  passes"); torch: autograd of ``F.rms_norm`` (its
  backward kernels, launched from Python: timed without a CUDA graph, so its host time
  counts where its kernels are shorter); Triton: persistent programs over the rows, each
  accumulating its rows' ``dY * X * r`` in registers, then ``torch.sum`` of the programs'
  partial rows (Liger-Kernel's scheme; rows up to 32768 columns).

Every result is checked against a float64 reference (error relative to the largest value;
at most 2^-6) before it is timed. GB/s count the bytes the gradient must move at least:
Y (or X), dY read and dX written, 3 x rows x cols x itemsize (RMSNorm's r and W not
counted); the copy moves 2 x. Timing: timing.timed_all (interleaved medians; CUDA graphs for
the tilewise, Triton and copy launches, plain back-to-back launches for torch's autograd).

    PYTHONPATH=src python benchmarks/bench_row_backward.py [--ops softmax rmsnorm]
        [--shapes 4096x4096 ...] [--dtypes bfloat16 float16]
"""

import argparse
import datetime
import math
import statistics
import sys
import time
from pathlib import Path

from timing import timed_all

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

SHAPES = ["16384x4096", "4096x4096", "4096x1000", "4096x3000", "4096x5120", "8192x8192",
          "4096x14336", "65536x1024", "256x16384", "2048x32000", "1024x50257", "256x128256",
          "256x262144", "64x300000", "16x4096"]
ONE_PASS = 32768  # the widest row the Triton peers hold in registers
EPS = 1e-6
VARIANTS = ("two passes", "prefetch", "wide", "narrow", "one CTA")  # forms timed beside


def triton_peers():
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def softmax_bwd_rows(dx, y, dy, n_rows, n_cols, BLOCK_M: tl.constexpr,
                         BLOCK_N: tl.constexpr):
        rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tl.arange(0, BLOCK_N)
        keep = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        offs = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
        yv = tl.load(y + offs, mask=keep, other=0.0).to(tl.float32)
        gv = tl.load(dy + offs, mask=keep, other=0.0).to(tl.float32)
        d = tl.sum(yv * gv, axis=1)
        tl.store(dx + offs, (yv * (gv - d[:, None])).to(dx.dtype.element_ty), mask=keep)

    @triton.jit
    def softmax_bwd_long(dx, y, dy, n_cols, TILE: tl.constexpr):
        base = tl.program_id(0).to(tl.int64) * n_cols
        cols = tl.arange(0, TILE)
        acc = tl.zeros([TILE], tl.float32)
        for start in range(0, n_cols, TILE):
            keep = start + cols < n_cols
            yv = tl.load(y + base + start + cols, mask=keep, other=0.0).to(tl.float32)
            gv = tl.load(dy + base + start + cols, mask=keep, other=0.0).to(tl.float32)
            acc += yv * gv
        d = tl.sum(acc, axis=0)
        for start in range(0, n_cols, TILE):
            keep = start + cols < n_cols
            yv = tl.load(y + base + start + cols, mask=keep, other=0.0).to(tl.float32)
            gv = tl.load(dy + base + start + cols, mask=keep, other=0.0).to(tl.float32)
            tl.store(dx + base + start + cols, (yv * (gv - d)).to(dx.dtype.element_ty),
                     mask=keep)

    @triton.jit
    def rmsnorm_bwd(dx, dwp, x, w, dy, n_rows, n_cols, eps, BLOCK_N: tl.constexpr):
        pid = tl.program_id(0)
        cols = tl.arange(0, BLOCK_N)
        cm = cols < n_cols
        wv = tl.load(w + cols, mask=cm, other=0.0).to(tl.float32)
        acc = tl.zeros([BLOCK_N], tl.float32)
        for row in range(pid, n_rows, tl.num_programs(0)):
            base = row.to(tl.int64) * n_cols
            xv = tl.load(x + base + cols, mask=cm, other=0.0).to(tl.float32)
            gv = tl.load(dy + base + cols, mask=cm, other=0.0).to(tl.float32)
            r = tl.rsqrt(tl.sum(xv * xv, axis=0) / n_cols + eps)
            gw = gv * wv
            c = r * r * tl.sum(gw * xv, axis=0) / n_cols
            tl.store(dx + base + cols, (r * (gw - xv * c)).to(dx.dtype.element_ty), mask=cm)
            acc += gv * xv * r
        tl.store(dwp + pid.to(tl.int64) * n_cols + cols, acc, mask=cm)

    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def warps(bn):
        return max(1, min(16, bn // 256))

    def softmax(y, dy, dx):
        rows, cols = y.shape
        if cols > ONE_PASS:
            softmax_bwd_long[(rows,)](dx, y, dy, cols, TILE=8192, num_warps=16)
            return
        bn = triton.next_power_of_2(cols)
        bm = max(1, 4096 // bn)
        softmax_bwd_rows[(triton.cdiv(rows, bm),)](dx, y, dy, rows, cols, BLOCK_M=bm,
                                                   BLOCK_N=bn, num_warps=warps(bm * bn))

    def rmsnorm(x, w, dy, dx, dw, dwp):
        rows, cols = x.shape
        bn = triton.next_power_of_2(cols)
        rmsnorm_bwd[(dwp.shape[0],)](dx, dwp, x, w, dy, rows, cols, EPS, BLOCK_N=bn,
                                     num_warps=warps(bn))
        torch.sum(dwp, 0, out=dw)  # dW in float32 (its rounding to the dtype not timed)

    return softmax, rmsnorm, sms


def err(got, want) -> float:
    return float((got.double() - want).abs().max() / want.abs().max())


def bench_softmax(torch, tri, rows, cols, dtype):
    import softmax_backward as SB

    td = getattr(torch, dtype)
    y = torch.softmax(torch.randn(rows, cols, device="cuda") * 2, -1).to(td)
    dy = torch.randn(rows, cols, device="cuda").to(td)
    k = SB.make_softmax_backward(rows, cols, dtype)
    k2 = (SB.make_softmax_backward(rows, cols, dtype, split=False)
          if k.name == "softmax_backward_split" else None)
    outs = {n: torch.full_like(y, float("nan")) for n in ("tw", "triton", "tw2")}
    yf, gf = y.double(), dy.double()
    ref = yf * (gf - (yf * gf).sum(-1, keepdim=True))
    runs = {"tilewise": lambda: k(y, dy, outs["tw"]),
            "one CTA": (lambda: k2(y, dy, outs["tw2"])) if k2 else None,
            "triton": lambda: tri(y, dy, outs["triton"]),
            "torch": lambda: torch._softmax_backward_data(dy, y, -1, td)}
    for fn in runs.values():
        if fn:
            fn()
    torch.cuda.synchronize()
    errors = {"tilewise": err(outs["tw"], ref), "triton": err(outs["triton"], ref),
              "one CTA": err(outs["tw2"], ref) if k2 else 0.0,
              "torch": err(runs["torch"](), ref)}
    return runs, errors, {}, k.name


def fused_variant(torch, RB, x, w, dy, rows, cols, dtype, vectors, plan):
    """The fused backward with ``vectors`` vectors of a row a thread, and its sum: (run,
    dX, dW)."""
    kf = RB.make_rmsnorm_backward_fused(rows, cols, dtype, EPS, vectors=vectors)
    ks = RB.make_rmsnorm_weight_sum(plan[2], cols, dtype)
    p = torch.empty(plan[2], cols, device="cuda")
    dx, dw = torch.full_like(x, float("nan")), torch.full_like(w, float("nan"))

    def run():
        kf(x, w, dy, dx, p)
        ks(p, dw)
    return run, dx, dw


def bench_rmsnorm(torch, tri, sms, rows, cols, dtype):
    import rmsnorm_backward as RB

    F = torch.nn.functional
    td = getattr(torch, dtype)
    x = torch.randn(rows, cols, device="cuda").to(td)
    w = (1 + 0.5 * torch.randn(cols, device="cuda")).to(td)
    dy = torch.randn(rows, cols, device="cuda").to(td)
    k = RB.make_rmsnorm_grads(rows, cols, dtype, EPS)
    k2 = RB.make_rmsnorm_grads(rows, cols, dtype, EPS, fused=False) if k.fused else None
    k3 = RB.make_rmsnorm_grads(rows, cols, dtype, EPS, prefetch=True) if k.fused else None
    dx, dw = torch.full_like(x, float("nan")), torch.full_like(w, float("nan"))
    dx2, dw2 = torch.full_like(x, float("nan")), torch.full_like(w, float("nan"))
    dx3, dw3 = torch.full_like(x, float("nan")), torch.full_like(w, float("nan"))
    tdx, tdw = torch.full_like(x, float("nan")), torch.empty(cols, device="cuda")
    tdwp = torch.empty(min(rows, 4 * sms), cols, device="cuda")
    variants = {}
    for name, vectors in (("wide", 4), ("narrow", 1)):  # the fused kernel with 64 / 16 bytes
        plan = (RB.fused_plan(rows, cols, dtype, vectors=vectors)  # of a row a thread (the
                if k.fused and cols % 8 == 0 and x.element_size() == 2 else None)  # plan: 32)
        if plan:
            variants[name] = fused_variant(torch, RB, x, w, dy, rows, cols, dtype, vectors,
                                           plan)
    xr, wr = x.double().requires_grad_(), w.double().requires_grad_()
    gx, gw = torch.autograd.grad(F.rms_norm(xr, (cols,), wr, EPS), (xr, wr), dy.double())
    xt, wt = x.clone().requires_grad_(), w.clone().requires_grad_()
    yt = F.rms_norm(xt, (cols,), wt, EPS)

    runs = {"tilewise": lambda: k(x, w, dy, dx, dw),
            "two passes": (lambda: k2(x, w, dy, dx2, dw2)) if k2 else None,
            "prefetch": (lambda: k3(x, w, dy, dx3, dw3)) if k3 else None,
            **{n: v[0] for n, v in variants.items()},
            "triton": (lambda: tri(x, w, dy, tdx, tdw, tdwp)) if cols <= ONE_PASS else None,
            "torch": lambda: torch.autograd.grad(yt, (xt, wt), dy, retain_graph=True)}
    for fn in runs.values():
        if fn:
            fn()
    torch.cuda.synchronize()
    got = runs["torch"]()
    errors = {"tilewise": max(err(dx, gx), err(dw, gw)),
              "two passes": max(err(dx2, gx), err(dw2, gw)) if k2 else 0.0,
              "prefetch": max(err(dx3, gx), err(dw3, gw)) if k3 else 0.0,
              **{n: max(err(v[1], gx), err(v[2], gw)) for n, v in variants.items()},
              "triton": max(err(tdx, gx), err(tdw, gw)) if runs["triton"] else 0.0,
              "torch": max(err(got[0], gx), err(got[1], gw))}
    return runs, errors, {"torch"}, repr(k)


def timed_gbs(torch, runs, plain, rows, cols, dtype, a) -> dict:
    """GB/s of each run and of the copy: two rounds, each interleaved (timing.py); the
    ``plain`` runs without a CUDA graph."""
    src = torch.empty(rows, cols, device="cuda", dtype=getattr(torch, dtype))
    dst = torch.empty_like(src)
    runs = {n: f for n, f in runs.items() if f is not None}
    graphed = {n: f for n, f in runs.items() if n not in plain}
    graphed["copy"] = lambda: dst.copy_(src)
    t = {}
    for _ in range(2):
        for n, s in {**timed_all(torch, graphed, a.reps, a.samples, 3, graph=True),
                     **timed_all(torch, {n: runs[n] for n in plain}, a.reps,
                                 a.samples, 3)}.items():
            t.setdefault(n, []).append(s)
    t = {n: statistics.median(v) for n, v in t.items()}
    nb = 3 * rows * cols * src.element_size()
    gbs = {n: nb / s / 1e9 for n, s in t.items()}
    gbs["copy"] = 2 * rows * cols * src.element_size() / t["copy"] / 1e9
    return gbs


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", nargs="+", default=["softmax", "rmsnorm"])
    p.add_argument("--shapes", nargs="+", default=SHAPES, help="ROWSxCOLS")
    p.add_argument("--dtypes", nargs="+", default=["bfloat16"])
    p.add_argument("--samples", type=int, default=7)
    p.add_argument("--reps", type=int, default=10)
    a = p.parse_args()
    import torch

    tri_sm, tri_rms, sms = triton_peers()
    t0 = time.perf_counter()
    lines, ratios, failed = [], {}, False
    for op in a.ops:
        for dtype in a.dtypes:
            for shape in a.shapes:
                rows, cols = (int(v) for v in shape.split("x"))
                try:
                    if op == "softmax":
                        runs, errors, plain, cfg = bench_softmax(torch, tri_sm, rows, cols,
                                                                 dtype)
                    else:
                        runs, errors, plain, cfg = bench_rmsnorm(torch, tri_rms, sms, rows,
                                                                 cols, dtype)
                except Exception as e:  # noqa: BLE001 - a benchmark reports and goes on
                    print(f"| {op} | {dtype} | {shape} | FAILED: {type(e).__name__}: "
                          f"{str(e).splitlines()[0][:200]} |", flush=True)
                    failed = True
                    continue
                bad = [n for n, e in errors.items() if not e <= 2.0 ** -6]
                gbs = timed_gbs(torch, runs, plain, rows, cols, dtype, a)
                tri = gbs.get("triton")
                r = (gbs["tilewise"] / gbs["copy"], gbs["tilewise"] / gbs["torch"],
                     gbs["tilewise"] / tri if tri else float("nan"))
                ratios.setdefault((op, dtype), []).append(r)
                mb = 3 * rows * cols * (4 if dtype == "float32" else 2) / 2**20
                line = (f"| {op} | {dtype} | {rows}x{cols} | {mb:.1f} | "
                        f"{gbs['copy']:.0f} | {gbs['torch']:.0f} | "
                        f"{tri and f'{tri:.0f}' or '-'} | {gbs['tilewise']:.0f} | "
                        f"{r[0]:.3f} | {r[1]:.2f} | {tri and f'{r[2]:.2f}' or '-'} | "
                        f"{errors['tilewise']:.1e} | {cfg} |"
                        + "".join(f" {v} {gbs[v]:.0f} |" for v in VARIANTS if v in gbs)
                        + (f" MISMATCH {bad}" if bad else ""))
                failed |= bool(bad)
                lines.append(line)
                print(line, flush=True)
                del runs
                torch.cuda.empty_cache()
    print(f"\n## row backward: {datetime.date.today()}, {torch.cuda.get_device_name()}, "
          f"`python benchmarks/bench_row_backward.py --ops {' '.join(a.ops)} --shapes "
          f"{' '.join(a.shapes)} --dtypes {' '.join(a.dtypes)}` "
          f"({time.perf_counter() - t0:.0f} s)\n")
    print("| op | dtype | rows x cols | MB moved | copy GB/s | torch | Triton | tilewise | "
          "of copy | of torch | of Triton | error | tilewise kernels |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for line in lines:
        print(line)
    for (op, dtype), rs in ratios.items():
        geo = [math.exp(sum(math.log(r[i]) for r in rs if r[i] == r[i]) /
                        max(1, sum(r[i] == r[i] for r in rs))) for i in range(3)]
        print(f"\n{op} {dtype}: {len(rs)} shapes; of copy geomean {geo[0]:.3f} worst "
              f"{min(r[0] for r in rs):.3f}; of torch geomean {geo[1]:.2f} worst "
              f"{min(r[1] for r in rs):.2f}; of Triton geomean {geo[2]:.2f} worst "
              f"{min((r[2] for r in rs if r[2] == r[2]), default=float('nan')):.2f}")
    if failed:
        raise SystemExit("a result differs from the reference, or a shape failed")


if __name__ == "__main__":
    main()
