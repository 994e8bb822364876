"""GPU: RMSNorm (examples/rmsnorm.py, tuned by tilewise.autotune) against
torch.nn.functional.rms_norm and a Triton RMSNorm (autotuned, written here), with torch
``copy_`` of the same bytes as the yardstick, in one run.

Every kernel is checked against a float32 RMSNorm first (error relative to the largest
result, at most 2^-7), then timed (rowbench.py). GB/s count the bytes read plus written
(X and Y once, W once). Targets (issue 19): tilewise >= 0.85 x the copy wherever the array
is >= 64 MB, and >= Triton on every shape.

    PYTHONPATH=src python benchmarks/bench_rmsnorm.py [--shapes 16384x4096 4096x5120]
    PYTHONPATH=src python benchmarks/bench_rmsnorm.py --sweep [--dtypes float16 bfloat16]
"""

import rowbench

SHAPES = ["16384x4096", "4096x5120", "4096x14336", "64x128256"]
EPS = 1e-6
ONE_PASS = 32768  # widest row the Triton peer holds in registers; wider ones loop


def triton_rmsnorm():
    """The Triton peer: ``BLOCK_M`` rows per program for rows of up to 32768 columns (one
    pass in registers, ``num_warps`` autotuned as in bench_softmax.py), one program per row
    and two passes over ``TILE`` columns beyond (``TILE`` x ``num_warps`` autotuned)."""
    import triton
    import triton.language as tl

    def prune(configs, named_args, **kw):
        a = {**named_args, **kw}  # the block sizes come as keyword arguments
        n = a["BLOCK_M"] * a["BLOCK_N"]
        keep = [c for c in configs if 4 <= n // (32 * c.num_warps) <= 64]
        return keep or configs[:1]

    @triton.autotune(configs=[triton.Config({}, num_warps=w) for w in (2, 4, 8, 16)],
                     key=["n_cols", "BLOCK_M"], prune_configs_by={"early_config_prune": prune})
    @triton.jit
    def rows_kernel(y, x, w, n_rows, n_cols, eps, BLOCK_M: tl.constexpr,
                    BLOCK_N: tl.constexpr):
        rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tl.arange(0, BLOCK_N)
        keep = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        offs = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
        v = tl.load(x + offs, mask=keep, other=0.0).to(tl.float32)
        g = tl.load(w + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        r = tl.rsqrt(tl.sum(v * v, axis=1) / n_cols + eps)
        tl.store(y + offs, (v * r[:, None] * g[None, :]).to(y.dtype.element_ty), mask=keep)

    @triton.autotune(configs=[triton.Config({"TILE": t}, num_warps=w)
                              for t in (4096, 8192, 16384) for w in (8, 16)], key=["n_cols"])
    @triton.jit
    def long_kernel(y, x, w, n_cols, eps, TILE: tl.constexpr):
        base = tl.program_id(0).to(tl.int64) * n_cols
        cols = tl.arange(0, TILE)
        acc = tl.zeros([TILE], tl.float32)
        for start in range(0, n_cols, TILE):
            v = tl.load(x + base + start + cols, mask=start + cols < n_cols,
                        other=0.0).to(tl.float32)
            acc += v * v
        r = tl.rsqrt(tl.sum(acc, axis=0) / n_cols + eps)
        for start in range(0, n_cols, TILE):
            keep = start + cols < n_cols
            v = tl.load(x + base + start + cols, mask=keep, other=0.0).to(tl.float32)
            g = tl.load(w + start + cols, mask=keep, other=0.0).to(tl.float32)
            tl.store(y + base + start + cols, (v * r * g).to(y.dtype.element_ty), mask=keep)

    def run(x, w, y):
        rows, cols = x.shape
        if cols > ONE_PASS:
            long_kernel[(rows,)](y, x, w, cols, EPS)
            return
        bn = triton.next_power_of_2(cols)
        bm = max(1, 4096 // bn)  # not by rows: one compile per width
        rows_kernel[(triton.cdiv(rows, bm),)](y, x, w, rows, cols, EPS, BLOCK_M=bm,
                                              BLOCK_N=bn)
    return run


def kernel(rows, cols, dtype):
    return EX.make_rmsnorm(rows, cols, dtype, EPS)


def case(torch, rows, cols, dtype, k):
    import torch.nn.functional as F

    td = getattr(torch, dtype)
    x = torch.randn(rows, cols, device="cuda").to(td)
    w = (1 + 0.5 * torch.randn(cols, device="cuda")).to(td)
    xf = x.float()
    ref = xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS) * w.float()
    return rowbench.Case(
        (x, w), ref, "torch rms_norm", lambda x, w: F.rms_norm(x, (cols,), w, EPS), TRITON, k,
        lambda o, ref: float((o.float() - ref).abs().max() / ref.abs().max()), 2.0 ** -7,
        EX.bytes_moved(rows, cols, dtype))


if __name__ == "__main__":
    EX = rowbench.example("rmsnorm")
    TRITON = triton_rmsnorm()
    rowbench.main("rmsnorm", SHAPES, kernel, case, __doc__)
