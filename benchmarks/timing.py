"""One way to time a GPU call in the benchmarks (METHOD.md): warm up, then the median of
``samples`` CUDA-event measurements of ``reps`` back-to-back launches each, so that the
GPU never idles on Python launch overhead.

``graph=True`` captures the ``reps`` launches in a CUDA graph and times its replays: the
kernels' own time, with no host launch cost in it (for kernels shorter than a launch's
host time, which the plain form would measure instead). Every implementation compared in
one table is timed the same way."""

import statistics


def timed(torch, fn, reps: int, samples: int, warmup: int = 10, graph: bool = False) -> float:
    """Median seconds per call of ``fn``."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    run = fn
    if graph:
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
        run, reps = g.replay, reps

    times = []
    for _ in range(samples):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        if graph:
            run()
        else:
            for _ in range(reps):
                run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / reps)
    return statistics.median(times)
