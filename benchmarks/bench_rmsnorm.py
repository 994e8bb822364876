"""GPU: RMSNorm (examples/rmsnorm.py) against torch.nn.functional.rms_norm and a Triton
RMSNorm kernel, with torch ``copy_`` of the same bytes as the yardstick, in one run.

Every kernel is checked against a float32 computation first, then timed (rowbench.py).
GB/s count the bytes read plus written (X and Y once, W once). Targets (issue 14):
tilewise >= 0.9 x the copy and >= Triton. Extra tilewise configurations are
``threads:vectors`` (threads per CTA, 16-byte vectors per thread).

    PYTHONPATH=src python benchmarks/bench_rmsnorm.py [--shapes 16384x4096]
        [--dtypes float16 bfloat16] [--configs 512:4 256:2 1024:1]
"""

import argparse

import rowbench

SHAPES = ["16384x4096"]
CONFIGS = ["512:4", "256:2", "1024:1", "128:4"]
EPS = 1e-6


def triton_rmsnorm():
    """A fused Triton RMSNorm: one program per row, float32 inside, num_warps tuned (the
    best of 4 / 8 / 16 is the peer)."""
    import triton
    import triton.language as tl

    @triton.autotune(configs=[triton.Config({}, num_warps=w) for w in (4, 8, 16)],
                     key=["n_cols"])
    @triton.jit
    def kernel(y, x, w, n_cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        keep = cols < n_cols
        v = tl.load(x + row * n_cols + cols, mask=keep, other=0.0).to(tl.float32)
        g = tl.load(w + cols, mask=keep, other=0.0).to(tl.float32)
        r = tl.rsqrt(tl.sum(v * v, axis=0) / n_cols + eps)
        tl.store(y + row * n_cols + cols, (v * r * g).to(y.dtype.element_ty), mask=keep)

    def run(x, w, y):
        rows, cols = x.shape
        kernel[(rows,)](y, x, w, cols, EPS, BLOCK=triton.next_power_of_2(cols))
    return run


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", nargs="+", default=SHAPES, help="ROWSxCOLS")
    p.add_argument("--dtypes", nargs="+", default=["float16", "bfloat16"])
    p.add_argument("--configs", nargs="*", default=CONFIGS, help="extra threads:vectors")
    p.add_argument("--samples", type=int, default=15)
    p.add_argument("--reps", type=int, default=20)
    a = p.parse_args()

    import torch
    import torch.nn.functional as F

    import tilewise as tw
    from tilewise.runtime import device_target

    ex = rowbench.example("rmsnorm")
    tri = triton_rmsnorm()
    target = str(device_target())
    rowbench.warm_up(torch)
    failed = False
    for dtype in a.dtypes:
        for shape in a.shapes:
            rows, cols = (int(v) for v in shape.split("x"))
            td = getattr(torch, dtype)
            x = torch.randn(rows, cols, device="cuda").to(td)
            w = (1 + 0.5 * torch.randn(cols, device="cuda")).to(td)
            xf = x.float()
            ref = xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS) * w.float()
            copy_dst = torch.empty_like(x)
            runs = {"torch copy_": lambda x=x, d=copy_dst: d.copy_(x),
                    "torch rms_norm": lambda x=x, w=w, c=cols: F.rms_norm(x, (c,), w, EPS)}
            outs = {"torch rms_norm": F.rms_norm(x, (cols,), w, EPS)}
            y_tri = torch.empty_like(x)
            runs["triton"] = lambda x=x, w=w, y=y_tri: tri(x, w, y)
            tri(x, w, y_tri)
            outs["triton"] = y_tri
            kernels = {"tilewise": ex.make_rmsnorm(rows, cols, dtype, EPS)}
            for cfg in a.configs:
                t, v = rowbench.parse_config(cfg)
                kernels[f"tilewise {cfg}"] = ex.make_rmsnorm(rows, cols, dtype, EPS, t, v)
            for name, func in kernels.items():
                k = tw.compile(func, target)
                y = torch.full_like(x, float("nan"))
                k(x, w, y)
                outs[name] = y
                runs[name] = lambda k=k, x=x, w=w, y=y: k(x, w, y)
            torch.cuda.synchronize()
            scale = float(ref.abs().max())
            errors = {n: float((o.float() - ref).abs().max()) / scale for n, o in outs.items()}
            bad = [n for n, e in errors.items() if not e <= 1e-2]  # NaN fails too
            failed |= bool(bad)
            secs = rowbench.time_all(torch, runs, a.reps, a.samples)
            cmd = f"python benchmarks/bench_rmsnorm.py --shapes {shape} --dtypes {dtype}"
            rowbench.report(torch, "rmsnorm", f"{dtype} {rows}x{cols}",
                            ex.bytes_moved(rows, cols, dtype), secs, errors, cmd)
            if bad:
                print(f"MISMATCH against the float32 RMSNorm: {bad}", flush=True)
    if failed:
        raise SystemExit("an RMSNorm differs from the float32 one by more than 1e-2")


if __name__ == "__main__":
    main()
