"""GPU: the GEMM epilogue written with the tile compute primitives (bias + SiLU + cast on the
wgmma accumulator fragment, examples/gemm_epilogue.py) against the plain cast epilogue, on
the same stand-alone kernel, in one run.

Both kernels read a float32 "accumulator" (where the GEMM runs wgmma) into the
``wgmma_accumulator(N)`` register layout, apply their epilogue and store ``M x N`` of
bfloat16; the only difference is ``Tx.wg.add(acc, acc, bias)`` and ``Tx.wg.silu(acc, acc)``.
The target (issue 14) is no measurable cost: the ratio of their times within the noise of
the run (the two plain-cast samples' spread is printed beside it). Results are checked
against torch first.

    PYTHONPATH=src python benchmarks/bench_epilogue.py [--m 65536] [--n 256]
"""

import argparse
import datetime
import statistics

import rowbench
from timing import timed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--m", type=int, default=65536)
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--samples", type=int, default=15)
    p.add_argument("--reps", type=int, default=20)
    a = p.parse_args()

    import torch

    import tilewise as tw
    from tilewise.runtime import device_target

    ex = rowbench.example("gemm_epilogue")
    target = str(device_target())
    rowbench.warm_up(torch)
    td = getattr(torch, a.dtype)
    acc = torch.randn(a.m, a.n, device="cuda") * 4
    bias = torch.randn(a.n, device="cuda")
    want = {"cast": acc.to(td), "bias+silu+cast": torch.nn.functional.silu(acc + bias).to(td)}
    kernels = {"cast": ex.make_epilogue(a.m, a.n, a.dtype, bias=False, activation=None),
               "bias+silu+cast": ex.make_epilogue(a.m, a.n, a.dtype)}
    runs, ok = {}, True
    for name, func in kernels.items():
        k = tw.compile(func, target)
        c = torch.empty(a.m, a.n, device="cuda", dtype=td)
        k(acc, bias, c)
        torch.cuda.synchronize()
        err = float((c.float() - want[name].float()).abs().max())
        ok &= err <= 2 * torch.finfo(td).eps * float(want[name].float().abs().max())
        print(f"{name}: max error {err:.2e} against torch")
        runs[name] = lambda k=k, c=c: k(acc, bias, c)
    times = {n: [] for n in runs}
    for _ in range(3):
        for n, fn in runs.items():
            times[n].append(timed(torch, fn, a.reps, a.samples))
    med = {n: statistics.median(t) for n, t in times.items()}
    spread = (max(times["cast"]) - min(times["cast"])) / med["cast"]
    nbytes = a.m * a.n * (4 + torch.finfo(td).bits // 8)
    print(f"| {datetime.date.today()} | {torch.cuda.get_device_name()} | `python benchmarks/"
          f"bench_epilogue.py --m {a.m} --n {a.n}` | cast {med['cast'] * 1e6:.1f} us "
          f"({nbytes / med['cast'] / 1e9:.0f} GB/s) | bias+silu+cast "
          f"{med['bias+silu+cast'] * 1e6:.1f} us | ratio "
          f"{med['bias+silu+cast'] / med['cast']:.3f} (cast's own spread {spread:.3f}) |")
    if not ok:
        raise SystemExit("an epilogue differs from torch")


if __name__ == "__main__":
    main()
