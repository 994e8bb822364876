"""What the row-wise benchmarks (softmax, RMSNorm) share: loading an example, the copy
bandwidth of the same run, interleaved timing of several kernels, the result rows.

Bandwidth counts the bytes the operation must read plus write (each row read once, written
once), over the median time of CUDA-event samples of back-to-back launches (timing.py),
every kernel timed twice, interleaved with the others, against clock drift (METHOD.md).
"""

import datetime
import importlib.util
import os
import statistics

from timing import timed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def example(name: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples",
                                                                     name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def parse_config(text: str):
    """``threads:vectors`` -> (threads per CTA, 16-byte vectors per thread)."""
    t, v = text.split(":")
    return int(t), int(v)


def warm_up(torch):
    """Bring the GPU to its working clocks before anything is timed."""
    a = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    for _ in range(100):
        b.copy_(a)
    torch.cuda.synchronize()


def time_all(torch, runs: dict, reps: int, samples: int) -> dict:
    """Median seconds per call of each ``runs[name]()``, interleaved A B C A B C."""
    times = {n: [] for n in runs}
    for _ in range(2):
        for n, fn in runs.items():
            times[n].append(timed(torch, fn, reps, samples))
    return {n: statistics.median(t) for n, t in times.items()}


def report(torch, op: str, what: str, nbytes: int, secs: dict, errors: dict, cmd: str):
    """One markdown row per kernel (GB/s, fraction of the copy, against the Triton peer),
    and the verdict on the targets: >= 0.9 x copy and >= Triton."""
    gbs = {n: nbytes / t / 1e9 for n, t in secs.items()}
    copy, tri = gbs["torch copy_"], gbs.get("triton")
    head = f"| {datetime.date.today()} | {torch.cuda.get_device_name()} | `{cmd}` | {what} |"
    for n, g in gbs.items():
        err = f" (max err {errors[n]:.1e})" if n in errors else ""
        vs = f"{g / tri:.3f}" if tri and n != "triton" else ""
        print(f"{head} {n}{err} | {g:.0f} GB/s | {g / copy:.3f} of copy | {vs} |", flush=True)
    ours = [n for n in gbs if n.startswith("tilewise")]
    if ours:
        best = max(ours, key=lambda n: gbs[n])
        ok = gbs[best] >= 0.9 * copy and (tri is None or gbs[best] >= tri)
        print(f"{op} {what}: best {best} {gbs[best]:.0f} GB/s = {gbs[best] / copy:.3f} of copy "
              f"({copy:.0f}), {gbs[best] / tri:.3f} of Triton ({tri:.0f}): targets "
              f"{'MET' if ok else 'NOT met'}", flush=True)
