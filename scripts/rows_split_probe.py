"""Time the forms of a long row's softmax / RMSNorm kernel side by side on the GPU (the plan;
one CTA per row, chunked; split over a cluster in one pass or in chunks, CTA and chunk
sizes), with torch's copy_ of the same bytes as the bar: GB/s of X read + Y written.
    PYTHONPATH=src python scripts/rows_split_probe.py [softmax|rmsnorm] ROWSxCOLS ...
    PROBE_ONLY=plan ncu ... python scripts/rows_split_probe.py softmax 256x262144
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
    variants = [v for v in VARIANTS if only in (None, v[0])]
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
        for name, _ in variants:
            b = next(built)
            if b.blob is None:
                row.append(f"{name} -")
                continue
            k = pickle.loads(b.blob)
            args = (x, y) if op == "softmax" else (x, w, y)
            t = timed(torch, functools.partial(k, *args), 20, 5)
            row.append(f"{name} {nbytes / t / 1e9:.0f}")
        print(" | ".join(row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
