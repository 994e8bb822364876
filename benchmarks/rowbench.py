"""What the row-wise benchmarks (softmax, RMSNorm) share: the command line, loading an
example, the copy bandwidth of the same run, the correctness check, interleaved timing of
every kernel, the result rows and the verdict on the targets.

Bandwidth counts the bytes the operation must read plus write (each row read once, written
once), over the median time of CUDA-event samples of back-to-back launches (timing.py),
every kernel timed twice, interleaved with the others, against clock drift (METHOD.md).
A benchmark describes one shape with a :class:`Case`; :func:`main` does the rest.
"""

import argparse
import datetime
import importlib.util
import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from timing import timed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def example(name: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples",
                                                                     name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@dataclass
class Case:
    """One shape of one operation: the kernels' inputs (the output is their last
    argument, shaped as ``inputs[0]``), a float32 reference, the torch operation, the
    Triton peer ``triton(*inputs, out)``, the tilewise kernel factory ``make(threads,
    vectors, ctas)`` (``ctas``: None, or a persistent grid), the allowed error, the bytes
    moved."""

    inputs: tuple
    ref: object
    torch_name: str
    torch_op: Callable
    triton: Callable
    make: Callable
    error: Callable  # (out, ref) -> float
    tol: float
    nbytes: int


def warm_up(torch):
    """Bring the GPU to its working clocks before anything is timed."""
    a = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    for _ in range(100):
        b.copy_(a)
    torch.cuda.synchronize()


def main(op: str, shapes: list[str], configs: list[str], make_case: Callable, doc: str):
    """``make_case(torch, rows, cols, dtype) -> Case`` for each ``--shapes`` x ``--dtypes``;
    the tilewise kernel at its default plan and at each ``threads:vectors[:ctas]`` config
    (``ctas``: a persistent grid of that many CTAs, 0 for the example's choice)."""
    p = argparse.ArgumentParser(description=doc)
    p.add_argument("--shapes", nargs="+", default=shapes, help="ROWSxCOLS")
    p.add_argument("--dtypes", nargs="+", default=["float16", "bfloat16"])
    p.add_argument("--configs", nargs="*", default=configs,
                   help="extra threads:vectors[:ctas] (ctas: persistent, 0 = auto)")
    p.add_argument("--samples", type=int, default=15)
    p.add_argument("--reps", type=int, default=20)
    a = p.parse_args()

    import torch

    warm_up(torch)
    failed = False
    for dtype in a.dtypes:
        for shape in a.shapes:
            rows, cols = (int(v) for v in shape.split("x"))
            case = make_case(torch, rows, cols, dtype)
            runs, outs = _kernels(torch, case, a.configs)
            errors = {n: case.error(o, case.ref) for n, o in outs.items()}
            bad = [n for n, e in errors.items() if not e <= case.tol]  # NaN fails too
            failed |= bool(bad)
            secs = _time_all(torch, runs, a.reps, a.samples)
            cmd = f"python benchmarks/bench_{op}.py --shapes {shape} --dtypes {dtype}"
            _report(torch, op, f"{dtype} {rows}x{cols}", case.nbytes, secs, errors, cmd)
            if bad:
                print(f"MISMATCH against the reference beyond {case.tol:.1e}: {bad}", flush=True)
    if failed:
        raise SystemExit(f"a {op} result differs from the reference")


def _kernels(torch, case: Case, configs):
    """The timed calls and their outputs: the copy, torch, Triton, tilewise (each config)."""
    import tilewise as tw
    from tilewise.runtime import device_target

    x = case.inputs[0]
    copy_dst = torch.empty_like(x)
    runs = {"torch copy_": lambda: copy_dst.copy_(x),
            case.torch_name: lambda: case.torch_op(*case.inputs)}
    outs = {case.torch_name: case.torch_op(*case.inputs)}
    y_tri = torch.empty_like(x)
    case.triton(*case.inputs, y_tri)
    runs["triton"], outs["triton"] = (lambda: case.triton(*case.inputs, y_tri)), y_tri
    kernels = {"tilewise": case.make(None, 4, None)}
    for cfg in configs:
        t, v, *c = (int(n) for n in cfg.split(":"))
        kernels[f"tilewise {cfg}"] = case.make(t, v, c[0] if c else None)
    target = str(device_target())
    for name, func in kernels.items():
        k = tw.compile(func, target)
        y = torch.full_like(x, float("nan"))
        k(*case.inputs, y)
        outs[name] = y
        runs[name] = lambda k=k, y=y: k(*case.inputs, y)
    torch.cuda.synchronize()
    return runs, outs


def _time_all(torch, runs: dict, reps: int, samples: int) -> dict:
    """Median seconds per call of each ``runs[name]()``, interleaved A B C A B C."""
    times = {n: [] for n in runs}
    for _ in range(2):
        for n, fn in runs.items():
            times[n].append(timed(torch, fn, reps, samples))
    return {n: statistics.median(t) for n, t in times.items()}


def _report(torch, op: str, what: str, nbytes: int, secs: dict, errors: dict, cmd: str):
    """One markdown row per kernel (GB/s, fraction of the copy, against the Triton peer),
    and the verdict on the targets: >= 0.9 x copy and >= Triton."""
    gbs = {n: nbytes / t / 1e9 for n, t in secs.items()}
    copy, tri = gbs["torch copy_"], gbs["triton"]
    head = f"| {datetime.date.today()} | {torch.cuda.get_device_name()} | `{cmd}` | {what} |"
    for n, g in gbs.items():
        err = f" (max err {errors[n]:.1e})" if n in errors else ""
        vs = f"{g / tri:.3f}" if n != "triton" else ""
        print(f"{head} {n}{err} | {g:.0f} GB/s | {g / copy:.3f} | {vs} |", flush=True)
    best = max((n for n in gbs if n.startswith("tilewise")), key=lambda n: gbs[n])
    ok = gbs[best] >= 0.9 * copy and gbs[best] >= tri
    print(f"{op} {what}: best {best} {gbs[best]:.0f} GB/s = {gbs[best] / copy:.3f} of copy "
          f"({copy:.0f}), {gbs[best] / tri:.3f} of Triton ({tri:.0f}): targets "
          f"{'MET' if ok else 'NOT met'}", flush=True)
