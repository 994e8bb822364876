"""GPU: row softmax (examples/softmax.py) against torch.softmax and a Triton fused-softmax
kernel, with torch ``copy_`` of the same bytes as the yardstick, in one run.

Every kernel is checked against torch.softmax (computed in float32) first -- two units in
the last place at 1 -- then timed (rowbench.py: CUDA events, interleaved, median). GB/s
count the bytes read plus written (2 x rows x cols x itemsize). Targets (issue 14):
tilewise >= 0.9 x the copy and >= Triton. Several tilewise configurations
(``threads:vectors[:ctas]``: threads per CTA, 16-byte vectors per thread, and a persistent
grid of ``ctas`` CTAs, two row groups in flight, 0 = the example's choice) are timed; the
default plan is ``tilewise``.

    PYTHONPATH=src python benchmarks/bench_softmax.py [--shapes 8192x8192 32768x1024]
        [--dtypes float16 bfloat16] [--configs 512:2 1024:1 128:4 256:4:0 256:4:264 512:2:0]
"""

import rowbench

SHAPES = ["8192x8192", "32768x1024"]
CONFIGS = ["512:2", "1024:1", "128:4", "256:4:0", "256:4:264", "512:2:0"]


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


def case(torch, rows, cols, dtype):
    ex = rowbench.example("softmax")
    x = torch.randn(rows, cols, device="cuda").mul_(3).to(getattr(torch, dtype))
    return rowbench.Case(
        (x,), torch.softmax(x.float(), dim=-1), "torch.softmax",
        lambda x: torch.softmax(x, dim=-1), TRITON, lambda t, v, c: ex.make_softmax(
            rows, cols, dtype, t, v, c), lambda o, ref: float((o.float() - ref).abs().max()),
        2 * torch.finfo(x.dtype).eps, ex.bytes_moved(rows, cols, dtype))


if __name__ == "__main__":
    TRITON = triton_softmax()
    rowbench.main("softmax", SHAPES, CONFIGS, case, __doc__)
