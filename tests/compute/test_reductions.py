"""Reductions on both executors: which variant serves which layout (thread-local, warp
shuffles, shared memory across warps, memory), the results against numpy, and the reasons
variants decline.

``max``/``min`` and integer ``sum`` are exact whatever the order, so they are compared bit
for bit; float ``sum`` is folded in a fixed tree order (the same IR on both executors, so
the GPU equals the simulator bit for bit -- tests/gpu/test_compute_gpu.py), here checked
against float64 at float32's accumulated rounding (n * 2^-24 relative to the sum of
magnitudes)."""

import numpy as np
import pytest

from ckernels import dispatched, kernel, rand, run, same_bits
from tilewise.errors import DispatchError
from tilewise.pipeline import lower

# (name, threads, x layout over (4, 256), per-row dst layout over (4, 1), variant)
LAYOUTS = [
    ("row-per-thread", 4, "S[(4, 256):(1@tx, 1)]", "S[(4, 1):(1@tx, 1)]", "thread"),
    ("row-per-warp", 128, "S[(4, 1, 32, 8):(32@tx, 8, 1@tx, 1)]",
     "S[(4, 1):(32@tx, 1)] + R[32:1@tx]", "warp"),
    ("row-per-8-lanes", 32, "S[(4, 4, 8, 8):(8@laneid, 8, 1@laneid, 1)]",
     "S[(4, 1):(8@laneid, 1)] + R[8:1@laneid]", "warp"),
    ("row-per-cta", 256, "S[(4, 1, 64, 4):(64@tx, 4, 1@tx, 1)]",
     "S[(4, 1):(64@tx, 1)] + R[64:1@tx]", "smem"),
    ("row-over-warps", 128, "S[(4, 4, 8, 8):(8@laneid, 1@warpid, 1@laneid, 1)]",
     "S[(4, 1):(8@laneid, 1)] + R[8:1@laneid] + R[4:1@warpid]", "smem"),
]


def _store_kernel(op, dtype, threads, xl, ml, accum=False):
    """x -> m (a replicated register tile); the first holder of each row stores it."""
    regs_x = 4 * 256 // threads
    acc = ", accum=True" if accum else ""
    return kernel([("X", (4, 256), dtype), ("M", (threads,), dtype)], [
        f'xr = T.alloc_local(({regs_x},), "{dtype}")', f"x = xr.view(4, 256, layout={xl})",
        f'mr = T.alloc_local((1,), "{dtype}")', f"m = mr.view(4, 1, layout={ml})",
        "Tx.cta.copy(x, X)", "mr[0] = M[tid]" if accum else "mr[0] = M[tid] * 0",
        f"Tx.cta.{op}(m, x, axes=-1{acc})", "M[tid] = mr[0]"], threads)


def _row_of_thread(dst_layout: str, threads: int):
    """Which row each thread holds in the replicated destination (from the layout)."""
    from tilewise.layout import R, S, laneid, tx, warpid  # noqa: F401
    from tilewise.tile.regtile import RegTile
    from tilewise.ir.expr import BufferRegion, IntImm, Range
    from tilewise.ir.stmt import Buffer

    lay = eval(dst_layout)
    b = Buffer("m", (4, 1), __import__("tilewise").ir.dtype.float32, "local", lay)
    tile = RegTile.of(BufferRegion(b, (Range(IntImm(0), 4), Range(IntImm(0), 1))), threads)
    return tile.elems[:, 0]


@pytest.mark.parametrize("case", LAYOUTS, ids=[c[0] for c in LAYOUTS])
@pytest.mark.parametrize("op", ["max", "min", "sum"])
def test_row_reductions_by_layout(executor, case, op):
    _, threads, xl, ml, variant = case
    dtype = "int32" if op == "sum" else "float32"
    k = _store_kernel(op, dtype, threads, xl, ml)
    assert dispatched(k)[1] == variant
    x = rand((4, 256), dtype)
    m = np.zeros(threads, x.dtype)
    run(executor, k, [x, m])
    want = {"max": x.max(axis=1), "min": x.min(axis=1), "sum": x.sum(axis=1, dtype=x.dtype)}
    assert same_bits(m, want[op][_row_of_thread(ml, threads)])


def test_accum_folds_the_old_value(executor):
    _, threads, xl, ml, _ = LAYOUTS[1]
    k = _store_kernel("sum", "int32", threads, xl, ml, accum=True)
    x = rand((4, 256), "int32")
    m = np.arange(threads, dtype=np.int32)
    run(executor, k, [x, m])
    rows = _row_of_thread(ml, threads)
    assert same_bits(m, (np.arange(threads) + x.sum(axis=1)[rows]).astype(np.int32))


def test_float_sum_is_float32_accurate(executor):
    _, threads, xl, ml, _ = LAYOUTS[3]
    k = _store_kernel("sum", "float32", threads, xl, ml)
    x = rand((4, 256), "float32")
    m = np.zeros(threads, np.float32)
    run(executor, k, [x, m])
    want = x.astype(np.float64).sum(axis=1)[_row_of_thread(ml, threads)]
    assert (np.abs(m - want) <= 256 * 2.0 ** -24 * np.abs(x).sum()).all()


def test_several_partials_per_thread_and_a_column_reduction(executor):
    """Each thread holds parts of 2 rows (2 partials); the columns of (64, 8) reduce over
    axis 0 within threads and across lanes."""
    k = kernel([("X", (8, 64), "int32"), ("M", (8, 32), "int32"),
                ("C", (64, 32), "int32")], [
        'xr = T.alloc_local((16,), "int32")',
        "x = xr.view(8, 64, layout=S[(4, 2, 8, 8):(8@laneid, 8, 1@laneid, 1)])",
        'mr = T.alloc_local((2,), "int32")',
        "m = mr.view(8, layout=S[(4, 2):(8@laneid, 1)] + R[8:1@laneid])",
        "Tx.warp.copy(x, X)", "Tx.warp.sum(m, x, axes=1)",
        "M[0, tid] = mr[0]", "M[1, tid] = mr[1]",
        'cr = T.alloc_local((16,), "int32")',
        "c = cr.view(64, 8, layout=S[(8, 8, 4, 2):(2, 4@laneid, 1@laneid, 1)])",
        'sr = T.alloc_local((2,), "int32")',
        "s = sr.view(8, layout=S[(4, 2):(1@laneid, 1)] + R[8:4@laneid])",
        "Tx.warp.copy(c, C[0:64, 0:8])",
        "Tx.warp.sum(s, c, axes=0)", "M[2, tid] = sr[0]", "M[3, tid] = sr[1]"], 32)
    assert dispatched(k)[1] == "warp" and dispatched(k)[3] == "warp"
    x = rand((8, 64), "int32")
    c = rand((64, 32), "int32", seed=1)
    m = np.zeros((8, 32), np.int32)
    run(executor, k, [x, m, c])
    lane = np.arange(32)
    rows = x.sum(axis=1).astype(np.int32)
    assert same_bits(m[0], rows[(lane // 8) * 2]) and same_bits(m[1], rows[(lane // 8) * 2 + 1])
    cols = c[:, :8].sum(axis=0).astype(np.int32)
    assert same_bits(m[2], cols[(lane % 4) * 2]) and same_bits(m[3], cols[(lane % 4) * 2 + 1])


def test_memory_reductions(executor):
    k = kernel([("X", (6, 40), "float32"), ("A", (40,), "float32"), ("B", (6, 1), "float32"),
                ("C", (1,), "float32")], [
        'S = T.alloc_shared((6, 40), "float32")', "Tx.cta.copy(S, X)", "T.cuda.cta_sync()",
        "Tx.cta.max(A, S, axes=0)", "Tx.cta.min(B, X, axes=-1)", "Tx.cta.max(C, S, axes=(0, 1))",
        "Tx.cta.max(A, X, axes=0, accum=True)"], threads=64)
    assert dispatched(k)[1:] == ["mem"] * 4
    x = rand((6, 40), "float32")
    a, b, c = np.zeros(40, np.float32), np.zeros((6, 1), np.float32), np.zeros(1, np.float32)
    run(executor, k, [x, a, b, c])
    assert same_bits(a, x.max(0)) and same_bits(b[:, 0], x.min(1)) and c[0] == x.max()


def _decline(body, threads, *reasons):
    k = kernel([("X", (4, 256), "float32")], body, threads)
    with pytest.raises(DispatchError) as info:
        lower(k, "sm_90a")
    for r in reasons:
        assert r in str(info.value), str(info.value)


def test_declines_a_replicated_source():
    _decline(['xr = T.alloc_local((32,), "float32")',
              "x = xr.view(4, 256, layout=S[(4, 8, 32):(1@laneid, 4@laneid, 1)] + R[2:1@warpid])",
              'mr = T.alloc_local((1,), "float32")',
              "m = mr.view(4, 1, layout=S[(4, 1):(1@laneid, 1)] + R[8:4@laneid] + R[2:1@warpid])",
              "Tx.cta.max(m, x, axes=-1)"], 64,
             "is replicated", "counted more than once")


def test_shuffles_need_32_bit_values():
    _decline(['xr = T.alloc_local((8,), "float16")',
              "x = xr.view(4, 256, layout=S[(4, 1, 32, 8):(32@tx, 8, 1@tx, 1)])",
              'mr = T.alloc_local((1,), "float16")',
              "m = mr.view(4, 1, layout=S[(4, 1):(32@tx, 1)] + R[32:1@tx])",
              "Tx.cta.max(m, x, axes=-1)"], 128,
             "shfl.sync moves 32-bit values", "Tx.cast first")


def test_declines_a_destination_held_by_threads_that_do_not_reduce_it():
    _decline(['xr = T.alloc_local((8,), "float32")',
              "x = xr.view(4, 256, layout=S[(4, 1, 32, 8):(32@tx, 8, 1@tx, 1)])",
              'mr = T.alloc_local((4,), "float32")',
              "m = mr.view(4, 1, layout=S[(4, 1):(1, 1)] + R[128:1@tx])",
              "Tx.cta.sum(m, x, axes=-1)"], 128,
             "does not reduce it", "warp (priority 30)", "smem (priority 20)",
             "mem (priority 10): src 'x' is a register tile")


def test_warpgroup_reductions_across_warps_need_a_cta_of_one_warpgroup():
    _decline(['xr = T.alloc_local((8,), "float32")',
              "x = xr.view(1, 1024, layout=S[(1, 1, 128, 8):(0, 8, 1@tid_in_wg, 1)])",
              'mr = T.alloc_local((1,), "float32")',
              "m = mr.view(1, 1, layout=S[(1, 1):(0, 1)] + R[128:1@tid_in_wg])",
              "Tx.wg.sum(m, x, axes=-1)"], 256, "needs a barrier of the 128 threads")


def test_reduction_in_a_loop_protects_its_scratch():
    _, threads, xl, ml, _ = LAYOUTS[3]
    k = kernel([("X", (4, 256), "float32"), ("M", (256,), "float32")], [
        'xr = T.alloc_local((4,), "float32")', f"x = xr.view(4, 256, layout={xl})",
        'mr = T.alloc_local((1,), "float32")', f"m = mr.view(4, 1, layout={ml})",
        "Tx.cta.copy(x, X)", "for i in range(3):", "    Tx.cta.max(m, x, axes=-1)",
        "    Tx.cta.add(x, x, m)", "M[tid] = mr[0]"], threads)
    assert lower(k, "sm_90a").func.script().count("T.cuda.cta_sync()") == 2
    x = rand((4, 256), "float32")
    m = np.zeros(256, np.float32)
    run("sim", k, [x, m])  # strict: a missing barrier would be a hazard
    want = x.copy()
    for _ in range(3):
        mx = want.max(axis=1)
        want = want + mx[:, None]
    assert same_bits(m, mx[np.arange(256) // 64])


def test_thread_scope_and_memory_into_registers(executor):
    """A per-thread array reduced by its thread; a shared tile reduced into a replicated
    register tile (each holder folds its rows from memory)."""
    _, threads, _, ml, _ = LAYOUTS[1]
    k = kernel([("X", (4, 256), "int32"), ("M", (threads,), "int32"),
                ("P", (threads,), "int32")], [
        'a = T.alloc_local((8,), "int32")', 'acc = T.alloc_local((1,), "int32")',
        "for i in T.static_range(8):", "    a[i] = X[tid % 4, tid // 4 * 8 + i]",
        "Tx.thread.sum(acc, a, axes=-1)", "P[tid] = acc[0]",
        'Sh = T.alloc_shared((4, 256), "int32")', "Tx.cta.copy(Sh, X)", "T.cuda.cta_sync()",
        'mr = T.alloc_local((1,), "int32")', f"m = mr.view(4, 1, layout={ml})",
        "Tx.cta.max(m, Sh, axes=-1)", "M[tid] = mr[0]"], threads)
    assert dispatched(k)[0] == "mem" and dispatched(k)[2] == "mem"
    x = rand((4, 256), "int32")
    m, p = np.zeros(threads, np.int32), np.zeros(threads, np.int32)
    run(executor, k, [x, m, p])
    t = np.arange(threads)
    parts = np.stack([x[t % 4, t // 4 * 8 + i] for i in range(8)]).sum(axis=0)
    assert same_bits(p, parts.astype(np.int32))
    assert same_bits(m, x.max(axis=1)[_row_of_thread(ml, threads)])
