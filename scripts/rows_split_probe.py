"""Time the forms of a long row's softmax / RMSNorm kernel side by side on the GPU (the plan;
one CTA per row, chunked; split over a cluster in one pass or in chunks, CTA and chunk
sizes), with torch's copy_ of the same bytes as the bar: GB/s of X read + Y written.
    PYTHONPATH=src python scripts/rows_split_probe.py [softmax|rmsnorm] ROWSxCOLS ...
    PROBE_ONLY=plan ncu ... python scripts/rows_split_probe.py softmax 256x262144
    PROBE_VARIANTS="plan:;c8ch4k:ctas=8,chunk=4096" python scripts/rows_split_probe.py ...
Each result is checked against torch (softmax / rms_norm in float32) before it is timed.
"""
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from rowbench import example as load_example  # noqa: E402
from timing import timed  # noqa: E402

VARIANTS = [("plan", dict()), ("chunked", dict(ctas=1)), ("split8", dict(ctas=8)),
            ("split8x512", dict(ctas=8, threads=512)), ("split4x512", dict(ctas=4, threads=512)),
            ("c8ch4k", dict(ctas=8, chunk=4096)), ("c8ch8k", dict(ctas=8, chunk=8192)),
            ("c8ch16k", dict(ctas=8, chunk=16384)), ("c8ch8kx512", dict(ctas=8, chunk=8192,
                                                                        threads=512)),
            ("c4ch8k", dict(ctas=4, chunk=8192)), ("c2ch8k", dict(ctas=2, chunk=8192))]


def main(argv):
    import functools
    import pickle

    from tilewise.compile_pool import compile_many

    op = argv[0] if argv and not argv[0][0].isdigit() else "softmax"
    shapes = [tuple(map(int, a.split("x"))) for a in argv if a[0].isdigit()] or \
        [(256, 65536), (256, 128256), (256, 262144), (16, 262144)]
    only = os.environ.get("PROBE_ONLY")  # one variant's name (for ncu)
    given = os.environ.get("PROBE_VARIANTS")  # name:key=value,...;name:...
    table = VARIANTS if not given else [
        (name, {k: int(v) for k, v in (kv.split("=") for kv in rest.split(",") if kv)})
        for name, rest in (item.split(":") for item in given.split(";"))]
    variants = [v for v in table if only in (None, v[0])]
    ex = load_example(op)
    make = getattr(ex, f"{op}_kernel")
    from tilewise.runtime import device_target

    target = str(device_target())
    jobs = [(functools.partial(make, rows, cols, "bfloat16"), kw)
            for rows, cols in shapes for _, kw in variants]
    built = iter(compile_many(jobs, target))
    for rows, cols in shapes:
        x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        nbytes = 2 * x.numel() * 2
        t = timed(torch, functools.partial(y.copy_, x), 20, 5)
        row = [f"{op} {rows}x{cols}: copy {nbytes / t / 1e9:.0f}"]
        if op == "softmax":
            ref = torch.softmax(x.float(), -1)
        else:
            ref = torch.nn.functional.rms_norm(x.float(), (cols,), w.float(), 1e-6)
        for name, _ in variants:
            b = next(built)
            if b.blob is None:
                row.append(f"{name} -")
                continue
            k = pickle.loads(b.blob)
            args = (x, y) if op == "softmax" else (x, w, y)
            y.fill_(float("nan"))
            k(*args)
            err = float(((y.float() - ref).abs() / (ref.abs() + 1e-3)).max())
            if not err < 0.05:
                row.append(f"{name} WRONG (max rel err {err:.3g})")
                continue
            t = timed(torch, functools.partial(k, *args), 20, 5)
            row.append(f"{name} {nbytes / t / 1e9:.0f}{_clusters(k)}")
        print(" | ".join(row), flush=True)


def _clusters(k) -> str:
    """`` (N clusters at once)`` for a kernel launched in clusters: the driver's
    cuOccupancyMaxActiveClusters, against which a persistent grid is checked."""
    cluster = k.launch_config.cluster
    if cluster == (1, 1, 1) or getattr(k, "_launcher", None) is None:
        return ""
    from cuda.bindings import driver

    cfg = driver.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = k.launch_config.cluster[0], 1, 1
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = k.launch_config.block, 1, 1
    cfg.sharedMemBytes = k.dynamic_smem
    cfg.numAttrs = 0
    err, n = driver.cuOccupancyMaxActiveClusters(k._launcher.function, cfg)
    return f" ({n} clusters at once)" if int(err) == 0 else f" (occupancy query: {err})"


if __name__ == "__main__":
    main(sys.argv[1:])
