"""GPU: a quick probe of the fp8 GEMMs' speed at the shapes issue 24 targets, for one device
call beside Nsight Compute (``scripts/gpu-fp8-profile`` runs both). The full table with
Triton and every shape is ``bench_gemm_fp8.py``; this one times, against torch._scaled_mm
(cuBLASLt, in the same scaling) in the same run:

* the dense GEMM at M = 4096 on the six DeepSeek-V3 (N, K) in the scalings of ``--modes``
  (default block), with the tiles given by ``--dense-tiles`` (``bmxbn`` each; ``auto``:
  ``make_gemm_fp8``'s own choice, tuned on its first launch);
* the grouped GEMMs of bench_gemm_fp8.py (contiguous / masked, fp8 / bf16), each with its
  factory's tile and with the tiles of ``--grouped-tiles``.

A tile ``BMxBNo`` is that tile with ``overlap=True`` (fp8 only; bf16 cases skip it), a
trailing ``c`` the same with ``cluster=2``.

``--launch dense|grouped`` instead launches one kernel twice (4096 x 7168 x 4096 block
scaled; the 4-group contiguous fp8 4096 x 7168): the process ncu profiles.

    PYTHONPATH=src python benchmarks/fp8_probe.py [--dense-tiles auto,128x128]
        [--modes block,row,tensor] [--grouped-tiles 128x256] [--launch dense|grouped] [--tile BMxBN]
        [--shapes 300x7168x2048,1000x3072x1024] [--no-grouped]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_gemm_fp8 as BG  # noqa: E402

GROUPED = BG.GROUPED


def _tile_kw(name):
    """``auto``, ``BMxBN``, ``BMxBNo`` (with ``overlap=True``), either ending in ``c``
    (``cluster=2``: CTA pairs multicasting a tile) as factory options."""
    if name == "auto":
        return {}
    pair = name.endswith("c")
    name = name.rstrip("c")
    bm, bn = name.rstrip("o").split("x")
    return dict(bm=int(bm), bn=int(bn), **({"overlap": True} if name.endswith("o") else {}),
                **({"cluster": 2} if pair else {}))


def dense(torch, F, tiles, log, mode="block", shapes=None):
    for M, N, K in shapes or [(4096, N, K) for N, K in BG.SHAPES_NK]:
        a, b, sa, sb, ref = BG.problem(torch, M, N, K, mode)
        flops = 2.0 * M * N * K
        c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        fns, errs, made = {}, {}, {}
        for name in tiles:
            try:
                k = made[name] = F.make_gemm_fp8(M, N, K, mode, **_tile_kw(name))
            except ValueError as e:  # a tile this scaling refuses: say so, go on
                log(f"{name}: {str(e)[:160]}")
                continue
            c.fill_(float("nan"))
            k(a, b, sa, sb, c)
            torch.cuda.synchronize()
            errs[name] = BG.rel_err(torch, c, ref)
            fns[name] = lambda k=k, x=(a, b, sa, sb, c): k(*x)
        fn = BG.cublas(torch, mode, a, b, sa, sb)
        if fn:
            fns["@cublas"] = fn
        tf = {n: flops / t / 1e12 for n, t in BG._time_all(torch, fns, flops).items()}
        cb = tf.pop("@cublas", float("nan"))
        log(f"dense {mode} {M}x{N}x{K}: cuBLASLt {cb:7.1f} | " + " | ".join(
            f"{n}: {t:7.1f} (err {errs[n]:.1e})" for n, t in tf.items()))
        if hasattr(made.get("auto"), "report"):  # the tuner's time for each candidate
            print(made["auto"].report(), flush=True)


def grouped(torch, GG, tiles, log):
    import numpy as np

    for layout, groups, m, N, K, fp8 in GROUPED:
        rng = np.random.default_rng(0)
        if layout == "contiguous":
            counts = [int(m * f) for f in rng.uniform(0.7, 1.3, groups)]
        else:
            counts = [int(min(2 * m, m * f)) for f in rng.uniform(0.5, 1.5, groups)]
        args, ref = BG._grouped_problem(torch, GG, layout, counts, N, K, fp8, m)
        make = GG.make_grouped_gemm_fp8 if fp8 else GG.make_grouped_gemm_bf16
        flops = 2.0 * sum(counts) * N * K
        out, fns, errs = [], {}, {}
        for name in ["auto"] + [t for t in tiles if fp8 or not t.endswith("o")]:
            try:
                k = make(groups, N, K, layout, M_=args[0].shape[0] if layout == "contiguous"
                         else None, expected_m=m, **_tile_kw(name))
                args[-2].fill_(float("nan"))
                k(*args)
                torch.cuda.synchronize()
                c, valid = args[-2].double(), ~torch.isnan(ref)
                err = float(torch.linalg.norm((c - ref)[valid]) / torch.linalg.norm(ref[valid]))
                fns[name], errs[name] = (lambda k=k, x=args: k(*x)), err
            except Exception as e:  # noqa: BLE001 - one failure must not stop the table
                out.append(f"{name}: {type(e).__name__}: {str(e)[:200]}")
        out += [f"{n}: {flops / t / 1e12:7.1f} (err {errs[n]:.1e})"
                for n, t in BG._time_all(torch, fns, flops).items()]
        log(f"grouped {layout} {'fp8' if fp8 else 'bf16'} G={groups} rows={sum(counts)} "
            f"{N}x{K}: " + " | ".join(out))


def launch(torch, F, GG, what, tile):
    if what == "dense":
        M, N, K = 4096, 7168, 4096
        a, b, sa, sb, _ = BG.problem(torch, M, N, K, "block")
        c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        k = F.make_gemm_fp8(M, N, K, "block", **_tile_kw(tile))
        run = lambda: k(a, b, sa, sb, c)  # noqa: E731
    else:
        layout, groups, m, N, K, fp8 = GROUPED[0]
        import numpy as np

        rng = np.random.default_rng(0)
        counts = [int(m * f) for f in rng.uniform(0.7, 1.3, groups)]
        args, _ = BG._grouped_problem(torch, GG, layout, counts, N, K, fp8, m)
        k = GG.make_grouped_gemm_fp8(groups, N, K, layout, M_=args[0].shape[0],
                                     **_tile_kw(tile))
        run = lambda: k(*args)  # noqa: E731
    for _ in range(2):
        run()
    torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dense-tiles", default="auto,128x128")
    ap.add_argument("--grouped-tiles", default="")
    ap.add_argument("--launch", default=None)
    ap.add_argument("--tile", default="auto")
    ap.add_argument("--no-dense", action="store_true")
    ap.add_argument("--modes", default="block", help="the dense cases' scalings")
    ap.add_argument("--shapes", default="", help="the dense cases' MxNxK, comma-separated "
                    "(default: M = 4096 on the six DeepSeek-V3 N x K)")
    ap.add_argument("--no-grouped", action="store_true")
    opts = ap.parse_args()
    import torch

    t0 = time.time()
    log = lambda s: print(f"[{time.time() - t0:6.1f}s] {s}", flush=True)  # noqa: E731
    F, GG = BG._example("gemm_fp8"), BG._example("gemm_grouped")
    if opts.launch:
        launch(torch, F, GG, opts.launch, opts.tile)
        return
    log(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    if not opts.no_grouped:
        grouped(torch, GG, [t for t in opts.grouped_tiles.split(",") if t], log)
    shapes = [tuple(map(int, s.split("x"))) for s in opts.shapes.split(",") if s]
    if not opts.no_dense:
        for mode in opts.modes.split(","):
            dense(torch, F, [t for t in opts.dense_tiles.split(",") if t], log, mode, shapes)


if __name__ == "__main__":
    main()
