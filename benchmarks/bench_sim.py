"""Benchmark: the CPU simulator on the seed programs, a 64-CTA tiled copy, a TMA copy and a
cluster of CTAs run together.

Run: ``PYTHONPATH=src python benchmarks/bench_sim.py [--cpu-time]`` (``--cpu-time``: CPU
time of this process, best of 5, for comparing two trees on a busy machine). Targets: each
seed program simulates in < 0.5 s; a 64-CTA ldgsts copy of a 1024x1024 float16 array (128x128 tiles,
``Tx.cta.copy_async`` global -> shared, then ``Tx.cta.copy`` shared -> global) in < 5 s on
one core. Times include lowering; prints one markdown table row per case (best of 3).
"""

from __future__ import annotations

import platform
import runpy
import sys
import time
from pathlib import Path

import numpy as np

import tilewise as tw
from tilewise import T, Tx
from tilewise.layout import S, TileLayout

ROOT = Path(__file__).resolve().parent.parent
TILE = 128


@T.prim_func
def tiled_copy(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024, 1024), "float16")
    B = T.match_buffer(B_ptr, (1024, 1024), "float16")
    T.device_entry()
    bx, by = T.cta_id([8, 8])
    T.warp_id([4])
    T.lane_id([32])
    T.thread_id([128])
    A_smem = T.alloc_buffer((TILE, TILE), "float16", scope="shared",
                            layout=TileLayout(S[(TILE, TILE)]))
    r0, c0 = by * TILE, bx * TILE
    Tx.cta.copy_async(A_smem[0:TILE, 0:TILE], A[r0:r0 + TILE, c0:c0 + TILE], dispatch="ldgsts")
    T.ptx.cp_async.commit_group()
    T.ptx.cp_async.wait_group(0)
    T.cuda.cta_sync()
    Tx.cta.copy(B[r0:r0 + TILE, c0:c0 + TILE], A_smem[0:TILE, 0:TILE])


@T.prim_func
def tiled_copy_flat(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024 * 1024,), "float16")
    B = T.match_buffer(B_ptr, (1024 * 1024,), "float16")
    T.device_entry()
    bx, by = T.cta_id([8, 8])
    tid = T.thread_id([128])
    A_smem = T.alloc_shared((TILE * TILE,), "float16")
    for k in range(16):  # 2048 chunks of 16 bytes (8 elements) per tile
        chunk = k * 128 + tid
        r, c = chunk // 16, chunk % 16 * 8
        g = (by * TILE + r) * 1024 + bx * TILE + c
        T.ptx.cp_async(T.address_of(A_smem[r * TILE + c]), T.address_of(A[g]), 16)
    T.ptx.cp_async.commit_group()
    T.ptx.cp_async.wait_group(0)
    T.cuda.cta_sync()
    for k in range(16):
        chunk = k * 128 + tid
        r, c = chunk // 16, chunk % 16 * 8
        g = (by * TILE + r) * 1024 + bx * TILE + c
        T.ptx.ld_st(T.address_of(B[g]), T.address_of(A_smem[r * TILE + c]), 16)


CLOCK, REPEATS = time.perf_counter, 3


def _best(fn, repeats=None) -> float:
    best = float("inf")
    for _ in range(repeats or REPEATS):
        start = CLOCK()
        fn()
        best = min(best, CLOCK() - start)
    return best


def _seed(name, func_name):
    seed = runpy.run_path(str(ROOT / "examples" / name))
    args = seed["inputs"](np.random.default_rng(0))
    return (lambda: tw.simulate(seed[func_name], *args, target=seed["TARGET"])), args, seed


def main() -> None:
    global CLOCK, REPEATS
    if "--cpu-time" in sys.argv:
        CLOCK, REPEATS = time.process_time, 5
    print(f"simulator, {platform.python_implementation()} {platform.python_version()}, "
          f"numpy {np.__version__}, one core\n")
    print("| case | target | time | ok |")
    print("|---|---|---|---|")
    for name, fn_name, limit in (("ldgsts_copy.py", "copy_async", 0.5),
                                 ("tcgen05_roundtrip.py", "copy_async_test", 0.5)):
        try:
            run, args, seed = _seed(name, fn_name)
            t = _best(run)
            ok = all((x == y).all() for x, y in zip(args, seed["reference"](*args)))
            print(f"| {name} | < {limit} s | {t:.3f} s | {ok and t < limit} |")
        except tw.TilewiseError as e:
            print(f"| {name} | < {limit} s | not lowerable yet: "
                  f"{e.message.splitlines()[0][:70]} | - |")
    for label, kernel in (("Tx.cta.copy_async + Tx.cta.copy", tiled_copy),
                          ("hand-written cp.async + ld_st", tiled_copy_flat)):
        _big_copy(label, kernel)
    _tma_copy()
    _cluster_ring()


def _tma_copy():
    """examples/tma_copy.py on a 1024x1024 array: 32 CTAs of 4 TMA boxes each."""
    ex = runpy.run_path(str(ROOT / "examples" / "tma_copy.py"))
    a, b = ex["inputs"](np.random.default_rng(2), (1024, 1024))
    t = _best(lambda: tw.simulate(ex["tma_copy"], a, b, target="sm_90a"))
    ok = a.tobytes() == b.tobytes()
    print(f"| 32-CTA TMA copy 1024x1024 fp16 (examples/tma_copy.py, 64x128 boxes, 4 stages) "
          f"| < 5 s | {t:.3f} s | {ok and t < 5} |")


def _cluster_ring():
    """A dsmem ring round one 8-CTA cluster: the cluster's CTAs run together."""
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "tma"))
    from kernels_cluster import make_ring, ring_expected, ring_inputs

    args = ring_inputs(np.random.default_rng(3), 8, 4096)
    k = make_ring(8, 4096)
    t = _best(lambda: tw.simulate(k, *args, target="sm_90a"))
    ok = all(x.tobytes() == y.tobytes() for x, y in zip(args, ring_expected(*args)))
    print(f"| dsmem ring round an 8-CTA cluster, 8 KB per CTA (tests/tma/kernels_cluster.py) "
          f"| < 5 s | {t:.3f} s | {ok and t < 5} |")


def _big_copy(label, kernel):
    a = np.random.default_rng(1).standard_normal((1024, 1024)).astype(np.float16)
    b = np.full_like(a, np.nan)
    case = f"64-CTA ldgsts copy 1024x1024 fp16 ({label})"
    try:
        t = _best(lambda: tw.simulate(kernel, a, b.reshape(kernel.param_buffers()[1].shape),
                                      target="sm_90a"))
    except tw.TilewiseError as e:
        print(f"| {case} | < 5 s | not lowerable yet: {e.message.splitlines()[0][:70]} | - |")
        return
    ok = (a.view(np.uint16) == b.view(np.uint16)).all()
    print(f"| {case} | < 5 s | {t:.3f} s | {ok and t < 5} |")


if __name__ == "__main__":
    main()
