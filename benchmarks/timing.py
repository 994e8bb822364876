"""One way to time a GPU call in the benchmarks (METHOD.md): warm up, then the median of
``samples`` CUDA-event measurements of ``reps`` back-to-back launches each, so that the
GPU never idles on Python launch overhead."""

import statistics


def timed(torch, fn, reps: int, samples: int, warmup: int = 10) -> float:
    """Median seconds per call of ``fn``."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(samples):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / reps)
    return statistics.median(times)
