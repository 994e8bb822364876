"""GPU: row softmax (examples/softmax.py, tuned by tilewise.autotune) against torch.softmax
and a Triton softmax (autotuned, written here), with torch ``copy_`` of the same bytes as
the yardstick, in one run.

Every kernel is checked against torch.softmax computed in float32 (two units in the last
place at 1), then timed (rowbench.py). GB/s count the bytes read plus written
(2 x rows x cols x itemsize). Targets (issue 19): tilewise >= 0.85 x the copy wherever the
array is >= 64 MB, and >= Triton on every shape.

    PYTHONPATH=src python benchmarks/bench_softmax.py [--shapes 8192x8192 4096x3000]
    PYTHONPATH=src python benchmarks/bench_softmax.py --sweep [--dtypes float16 bfloat16]
"""

import rowbench

SHAPES = ["8192x8192", "32768x1024", "4096x3000", "64x128256"]
ONE_PASS = 32768  # widest row the Triton peer holds in registers; wider ones loop


def triton_softmax():
    """The Triton peer. A row of up to 32768 columns: ``BLOCK_M`` rows per program (enough
    to give a program ~4096 elements), the rows in registers, max / exp / sum / divide in one
    pass, ``num_warps`` autotuned (2 / 4 / 8 / 16, pruned to 4..64 elements per thread). A
    longer row: one program per row, two passes over tiles of ``TILE`` columns with a
    per-lane online maximum and sum, ``TILE`` x ``num_warps`` autotuned."""
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
    def rows_kernel(y, x, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
        rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tl.arange(0, BLOCK_N)
        keep = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        offs = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
        v = tl.load(x + offs, mask=keep, other=-float("inf")).to(tl.float32)
        e = tl.exp(v - tl.max(v, axis=1)[:, None])
        out = e / tl.sum(e, axis=1)[:, None]
        tl.store(y + offs, out.to(y.dtype.element_ty), mask=keep)

    @triton.autotune(configs=[triton.Config({"TILE": t}, num_warps=w)
                              for t in (4096, 8192, 16384) for w in (8, 16)], key=["n_cols"])
    @triton.jit
    def long_kernel(y, x, n_cols, TILE: tl.constexpr):
        base = tl.program_id(0).to(tl.int64) * n_cols
        cols = tl.arange(0, TILE)
        m = tl.full([TILE], -float("inf"), tl.float32)
        s = tl.zeros([TILE], tl.float32)
        for start in range(0, n_cols, TILE):
            v = tl.load(x + base + start + cols, mask=start + cols < n_cols,
                        other=-float("inf")).to(tl.float32)
            mn = tl.maximum(m, v)
            live = mn > -float("inf")
            s = tl.where(live, s * tl.exp(m - mn) + tl.exp(v - mn), 0.0)
            m = mn
        mx = tl.max(m, axis=0)
        total = tl.sum(tl.where(m > -float("inf"), s * tl.exp(m - mx), 0.0), axis=0)
        for start in range(0, n_cols, TILE):
            keep = start + cols < n_cols
            v = tl.load(x + base + start + cols, mask=keep, other=0.0).to(tl.float32)
            tl.store(y + base + start + cols, (tl.exp(v - mx) / total).to(y.dtype.element_ty),
                     mask=keep)

    def run(x, y):
        rows, cols = x.shape
        if cols > ONE_PASS:
            long_kernel[(rows,)](y, x, cols)
            return
        bn = triton.next_power_of_2(cols)
        bm = max(1, 4096 // bn)  # not by rows: one compile per width
        rows_kernel[(triton.cdiv(rows, bm),)](y, x, rows, cols, BLOCK_M=bm, BLOCK_N=bn)
    return run


def kernel(rows, cols, dtype):
    return EX.make_softmax(rows, cols, dtype)


def case(torch, rows, cols, dtype, k):
    x = torch.randn(rows, cols, device="cuda").mul_(3).to(getattr(torch, dtype))
    return rowbench.Case(
        (x,), torch.softmax(x.float(), dim=-1), "torch.softmax",
        lambda x: torch.softmax(x, dim=-1), TRITON, k,
        lambda o, ref: float((o.float() - ref).abs().max()),
        2 * torch.finfo(x.dtype).eps, EX.bytes_moved(rows, cols, dtype))


if __name__ == "__main__":
    EX = rowbench.example("softmax")
    TRITON = triton_softmax()
    rowbench.main("softmax", SHAPES, kernel, case, __doc__)
