"""GPU: tilewise copies of a >= 2 GiB array vs torch copy_: the TMA tensor copy
(examples/tma_copy.py), the bulk copy (examples/bulk_copy.py) and the tiled ldgsts copy
(examples/tiled_copy.py).

Both run in the same process on the same buffers; CUDA events; median of several runs after
warm-up; bandwidth counts the bytes read plus written. Target: >= 1.0 of torch (TMA).

    PYTHONPATH=src python benchmarks/bench_copy.py [--rows 32768 --cols 32768 --dtype float16]
    PYTHONPATH=src python benchmarks/bench_copy.py --config tma:64x128:4 tma:32x256:4:32:evict_first
"""

import argparse
import datetime
import importlib.util
import os
import statistics

from timing import timed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples",
                                                                     name + ".py"))
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    return ex


def _example():
    return _load("tiled_copy")


def _kernel(ex, cfg: str, rows: int, cols: int, dtype: str):
    """``tiled:TMxTN:threads[:chunks[:prefetch]]``, ``pipelined:TMxTN:threads:ctas``,
    ``bulk:TMxTN:threads[:stages]`` / ``stream:TMxTN:stages:ctas`` (examples/bulk_copy.py,
    the TMA unit; stream is the persistent ring of buffers) or
    ``tma:BRxBC:stages[:threads[:cache_hint[:l2_promotion]]]`` (examples/tma_copy.py, TMA
    tensor copies; one kernel for every size; a hint of ``-`` means none)."""
    kind, tile, *rest = cfg.split(":")
    tm, tn = (int(x) for x in tile.split("x"))
    if kind == "tma":
        threads = int(rest[1]) if len(rest) > 1 else 32
        hint = rest[2] if len(rest) > 2 and rest[2] != "-" else None
        l2 = int(rest[3]) if len(rest) > 3 else None
        return _load("tma_copy").make_tma_copy(dtype, (tm, tn), int(rest[0]), threads, hint, l2)
    if kind == "stream":
        stages, ctas = int(rest[0]), int(rest[1])
        return _load("bulk_copy").make_bulk_stream(rows, cols, dtype, (tm, tn), stages, ctas)
    if kind == "bulk":
        stages = int(rest[1]) if len(rest) > 1 else 1
        return _load("bulk_copy").make_bulk_copy(rows, cols, dtype, (tm, tn), int(rest[0]),
                                                 stages)
    if kind == "tiled":
        chunks = int(rest[1]) if len(rest) > 1 else 1
        prefetch = int(rest[2]) if len(rest) > 2 else None
        return ex.make_tiled_copy(rows, cols, dtype, (tm, tn), int(rest[0]), chunks, prefetch)
    return ex.make_pipelined_copy(rows, cols, dtype, (tm, tn), int(rest[0]), int(rest[1]))


DEFAULT_CONFIGS = ["tma:64x128:4", "tma:32x256:4", "tma:64x256:3", "tma:64x128:4:32:evict_first",
                   "tma:32x256:4:32:evict_first:256", "tma:128x128:2", "tma:16x256:8",
                   "bulk:8x1024:32:4", "tiled:4x2048:256:4"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=32768)
    p.add_argument("--cols", type=int, default=32768)
    p.add_argument("--dtype", default="float16")
    p.add_argument("--config", nargs="+", default=DEFAULT_CONFIGS,
                   help="kernels to time: tma:BRxBC:stages[:threads[:hint[:l2]]], "
                        "tiled:TMxTN:threads[:chunks[:prefetch]], "
                        "pipelined:TMxTN:threads:ctas, bulk:TMxTN:threads[:stages] or "
                        "stream:TMxTN:stages:ctas")
    p.add_argument("--samples", type=int, default=15)
    p.add_argument("--reps", type=int, default=10)
    a = p.parse_args()

    import torch

    import tilewise as tw
    from tilewise.runtime import device_target

    ex = _example()
    src = torch.randn(a.rows, a.cols, device="cuda").to(getattr(torch, a.dtype))
    dst = torch.empty_like(src)
    nbytes = 2 * src.numel() * src.element_size()
    gbs = lambda t: nbytes / t / 1e9  # noqa: E731
    for _ in range(200):  # bring the GPU to its working clocks before anything is timed
        dst.copy_(src)
    torch.cuda.synchronize()
    failed = False
    for cfg in a.config:
        k = tw.compile(_kernel(ex, cfg, a.rows, a.cols, a.dtype), str(device_target()))
        dst.zero_()
        k(src, dst)
        torch.cuda.synchronize()
        ok = torch.equal(src.view(torch.uint8), dst.view(torch.uint8))
        t_tw, t_torch = [], []
        for _ in range(2):  # A B A B, against drift
            t_tw.append(timed(torch, lambda k=k: k(src, dst), a.reps, a.samples))
            t_torch.append(timed(torch, lambda: dst.copy_(src), a.reps, a.samples))
        tw_t, torch_t = statistics.median(t_tw), statistics.median(t_torch)
        print(f"| {datetime.date.today()} | {torch.cuda.get_device_name()} | "
              f"`python benchmarks/bench_copy.py --rows {a.rows} --cols {a.cols} --dtype "
              f"{a.dtype} --config {cfg}` | {src.numel() * src.element_size() / 2**30:.2f} GiB "
              f"| tilewise {gbs(tw_t):.0f} GB/s | torch {gbs(torch_t):.0f} GB/s | ratio "
              f"{torch_t / tw_t:.3f} | exact {ok} |", flush=True)
        failed |= not ok
    if failed:
        raise SystemExit("a copy result differs from the source")


if __name__ == "__main__":
    main()
