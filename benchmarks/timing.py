"""One way to time a GPU call in the benchmarks (METHOD.md): warm up, then the median of
``samples`` CUDA-event measurements of ``reps`` back-to-back launches each, so that the
GPU never idles on Python launch overhead.

``graph=True`` captures the ``reps`` launches in a CUDA graph and times its replays: the
kernels' own time, with no host launch cost in it (for kernels shorter than a launch's
host time, which the plain form would measure instead). Every implementation compared in
one table is timed the same way.

:func:`timed_all` times several implementations of one problem *interleaved*: sample r of
every one (in an order that rotates with r) before sample r + 1 of any. A tensor-bound
kernel holds an H200 at its power limit, where the SM clock wanders between ~1.3 and
1.98 GHz (nvidia-smi, 2026-12-02): timed one after another, whichever comes first runs on
a cooler chip (the same kernel read 709 then 655 TFLOP/s, two passes of one call, while
cuBLAS timed first read 804 both times). Interleaved, each sees the same mix of clocks."""

import statistics


def timed(torch, fn, reps: int, samples: int, warmup: int = 10, graph: bool = False) -> float:
    """Median seconds per call of ``fn``."""
    return timed_all(torch, {"fn": fn}, reps, samples, warmup, graph)["fn"]


def timed_all(torch, fns: dict, reps: int, samples: int, warmup: int = 10,
              graph: bool = False) -> dict:
    """Median seconds per call of each of ``fns`` (name -> callable), their samples
    interleaved as the module docstring says; each is warmed up (and captured) first."""
    if not fns:
        return {}
    runs = {}
    for name, fn in fns.items():
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        runs[name] = _graph(torch, fn, reps) if graph else fn
    times = {name: [] for name in fns}
    names = list(fns)
    for r in range(samples):
        for name in names[r % len(names):] + names[:r % len(names)]:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            if graph:
                runs[name]()
            else:
                for _ in range(reps):
                    runs[name]()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end) / 1e3 / reps)
    return {name: statistics.median(t) for name, t in times.items()}


def _graph(torch, fn, reps: int):
    """The replay of a CUDA graph of ``reps`` calls of ``fn``."""
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()  # once on the side stream first, as torch's graph docs advise
        torch.cuda.synchronize()
        with torch.cuda.graph(g, stream=s):
            for _ in range(reps):
                fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    return g.replay
