"""GPU: row softmax (examples/softmax.py) against torch.softmax and a Triton fused-softmax
kernel, with torch ``copy_`` of the same bytes as the yardstick, in one run.

Every kernel is checked against torch.softmax (computed in float32) first, then timed
(rowbench.py: CUDA events, interleaved, median). GB/s count the bytes read plus written
(2 x rows x cols x itemsize). Targets (issue 14): tilewise >= 0.9 x the copy and >= Triton.
Several tilewise configurations (``threads:vectors``: threads per CTA, 16-byte vectors per
thread) are timed; the default plan is marked ``tilewise``.

    PYTHONPATH=src python benchmarks/bench_softmax.py [--shapes 8192x8192 32768x1024]
        [--dtypes float16 bfloat16] [--configs 256:4 512:2 1024:1 128:8]
"""

import argparse

import rowbench

SHAPES = ["8192x8192", "32768x1024"]
CONFIGS = ["512:2", "1024:1", "256:8", "128:4"]


def triton_softmax():
    """A fused Triton softmax: one program per row, the row in registers (float32), max,
    exp, sum and the division in one pass; num_warps tuned per row length (the best of
    4 / 8 / 16 is the peer)."""
    import triton
    import triton.language as tl

    @triton.autotune(configs=[triton.Config({}, num_warps=w) for w in (4, 8, 16)],
                     key=["n_cols"])
    @triton.jit
    def kernel(y, x, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        keep = cols < n_cols
        v = tl.load(x + row * n_cols + cols, mask=keep, other=-float("inf")).to(tl.float32)
        e = tl.exp(v - tl.max(v, axis=0))
        out = e / tl.sum(e, axis=0)
        tl.store(y + row * n_cols + cols, out.to(y.dtype.element_ty), mask=keep)

    def run(x, y):
        rows, cols = x.shape
        kernel[(rows,)](y, x, cols, BLOCK=triton.next_power_of_2(cols))
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

    import tilewise as tw
    from tilewise.runtime import device_target

    ex = rowbench.example("softmax")
    tri = triton_softmax()
    target = str(device_target())
    rowbench.warm_up(torch)
    failed = False
    for dtype in a.dtypes:
        for shape in a.shapes:
            rows, cols = (int(v) for v in shape.split("x"))
            x = torch.randn(rows, cols, device="cuda").mul_(3).to(getattr(torch, dtype))
            ref = torch.softmax(x.float(), dim=-1)
            copy_dst = torch.empty_like(x)
            runs = {"torch copy_": lambda x=x, d=copy_dst: d.copy_(x),
                    "torch.softmax": lambda x=x: torch.softmax(x, dim=-1)}
            outs = {"torch.softmax": torch.softmax(x, dim=-1)}
            y_tri = torch.empty_like(x)
            runs["triton"] = lambda x=x, y=y_tri: tri(x, y)
            tri(x, y_tri)
            outs["triton"] = y_tri
            kernels = {"tilewise": ex.make_softmax(rows, cols, dtype)}
            for cfg in a.configs:
                t, v = rowbench.parse_config(cfg)
                kernels[f"tilewise {cfg}"] = ex.make_softmax(rows, cols, dtype, t, v)
            for name, func in kernels.items():
                k = tw.compile(func, target)
                y = torch.full_like(x, float("nan"))
                k(x, y)
                outs[name] = y
                runs[name] = lambda k=k, x=x, y=y: k(x, y)
            torch.cuda.synchronize()
            errors = {n: float((o.float() - ref).abs().max()) for n, o in outs.items()}
            tol = 2 * torch.finfo(x.dtype).eps  # two units in the last place at 1
            bad = [n for n, e in errors.items() if not e <= tol]  # NaN fails too
            failed |= bool(bad)
            secs = rowbench.time_all(torch, runs, a.reps, a.samples)
            cmd = (f"python benchmarks/bench_softmax.py --shapes {shape} --dtypes {dtype}")
            rowbench.report(torch, "softmax", f"{dtype} {rows}x{cols}",
                            ex.bytes_moved(rows, cols, dtype), secs, errors, cmd)
            if bad:
                print(f"MISMATCH against torch.softmax: {bad}", flush=True)
    if failed:
        raise SystemExit("a softmax differs from torch.softmax by more than 2 ulps at 1")


if __name__ == "__main__":
    main()
