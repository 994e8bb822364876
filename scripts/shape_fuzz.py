#!/usr/bin/env python3
"""Random shapes no list names, through the examples' factories in the simulator, against
numpy (CPU, no GPU): softmax / RMSNorm (any width 1-9000, any dtype, a random tuner
candidate), the bf16/fp16 GEMM (``make_gemm``: M 1-199, N and K multiples of 8), the fp8
GEMM (``make_gemm_fp8``: every scaling, sometimes a forced tile), attention (1-139 query
and key rows, head dims 32-128, GQA, causal, with the LSE), the grouped GEMMs (fp8 / bf16,
contiguous / masked, 1-3 groups of 0-149 rows) and the softmax / RMSNorm backward kernels
(chunked at random, and RMSNorm's weight gradient).
Each output is poisoned with NaN first. A TilewiseError (a shape a factory refuses) is
printed and allowed; a wrong result or any other exception is a finding (exit status 1).

    PYTHONPATH=src python scripts/shape_fuzz.py [--seed 1] [--seconds 600]
"""

import argparse
import importlib.util
import pathlib
import sys
import time
import traceback
import warnings

import ml_dtypes
import numpy as np

import tilewise as tw

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))
ROW_RTOL = {"float16": 2.0 ** -9, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -18}


def example(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def close(got, want, rtol, atol) -> bool:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return not np.isnan(got).any() and bool(np.all(np.abs(got - want) <=
                                                   rtol * np.abs(want) + atol))


class Cases:
    def __init__(self, rng):
        self.rng = rng
        self.ex = {name: example(name) for name in (
            "softmax", "rmsnorm", "gemm_hopper", "gemm_fp8", "attention", "gemm_grouped",
            "softmax_backward", "rmsnorm_backward")}

    def row_shape(self, ops):
        """A row kernel of ``ops``, its module, a dtype, 1-4 rows and 1-8999 columns."""
        rng = self.rng
        op = str(rng.choice(ops))
        dt = str(rng.choice(["float16", "bfloat16", "float32"]))
        cols = int(rng.integers(1, 200) if rng.random() < 0.5 else rng.integers(200, 9000))
        return op, self.ex[op], dt, int(rng.integers(1, 5)), cols

    def rows(self):
        rng = self.rng
        op, mod, dt, rows, cols = self.row_shape(["softmax", "rmsnorm"])
        cfgs = mod.configs(rows, cols, dt)
        cfg = cfgs[int(rng.integers(len(cfgs)))]
        k = getattr(mod, f"{op}_kernel")(rows, cols, dt, **cfg)
        args = mod.inputs(rng, (rows, cols), ml_dtypes.bfloat16 if dt == "bfloat16" else dt)
        args[-1][...] = np.nan
        tw.simulate(k, *args, strict=True)
        want = mod.reference(*args)[-1]
        return f"{op} {rows}x{cols} {dt} {cfg}", close(args[-1], want, ROW_RTOL[dt], mod.ATOL)

    def gemm(self):
        rng = self.rng
        dt = str(rng.choice(["bfloat16", "float16"]))
        M, N, K = int(rng.integers(1, 200)), 8 * int(rng.integers(1, 30)), 8 * int(
            rng.integers(1, 40))
        k = self.ex["gemm_hopper"].make_gemm(M, N, K, dt, num_sms=int(rng.integers(1, 5)))
        a, b, c = self.ex["gemm_hopper"].inputs(rng, (M, N, K), dt)
        tw.simulate(k, a, b, c)
        want = a.astype(np.float64) @ b.astype(np.float64)
        return f"gemm {M}x{N}x{K} {dt}", close(c, want, 2.0 ** -7,
                                              2.0 ** -7 * np.abs(want).max())

    def fp8(self):
        rng = self.rng
        sc = str(rng.choice(["block", "row", "tensor"]))
        M, N, K = int(rng.integers(1, 200)), 8 * int(rng.integers(1, 30)), 16 * int(
            rng.integers(1, 25))
        kw = {}
        if rng.random() < 0.3:
            kw = dict(bm=int(rng.choice([64, 128])), bn=int(rng.choice([64, 128])))
        k = self.ex["gemm_fp8"].make_gemm_fp8(M, N, K, sc, num_sms=int(rng.integers(1, 5)), **kw)
        a, b, sa, sb, c = self.ex["gemm_fp8"].inputs(rng, (M, N, K), sc)
        tw.simulate(k, a, b, sa, sb, c)
        a64, b64 = self.ex["gemm_fp8"].dequantize(a, sa, b, sb, sc)
        want = a64 @ b64.T
        return f"fp8 {M}x{N}x{K} {sc} {kw}", close(c, want, 2.0 ** -7,
                                                  2.0 ** -6 * np.abs(want).max())

    def attention(self):
        rng = self.rng
        hd = int(rng.choice([32, 64, 96, 128]))
        sq, sk = int(rng.integers(1, 140)), int(rng.integers(1, 140))
        h = int(rng.choice([1, 2, 4]))
        hk = int(rng.choice([x for x in (1, 2, 4) if h % x == 0]))
        causal = bool(rng.random() < 0.5) and sq <= sk
        A = self.ex["attention"]
        k = A.make_attention(1, h, sq, sk, hd, causal, "bfloat16", kv_heads=hk,
                             return_lse=True, num_sms=2)
        q, kk, v, o, lse = A.inputs(rng, (1, h, sq, sk, hd), "bfloat16", kv_heads=hk)
        tw.simulate(k, q, kk, v, o, lse)
        want, wlse = A.attention_reference(q, kk, v, causal)
        ok = close(o, want, 2.0 ** -6, 2.0 ** -7) and close(lse, wlse, 1e-3, 1e-3)
        return f"attention heads {h}/{hk} {sq}x{sk} d{hd} causal={causal}", ok

    def grouped(self):
        rng = self.rng
        G = self.ex["gemm_grouped"]
        fp8 = bool(rng.random() < 0.5)
        layout = str(rng.choice(["contiguous", "masked"]))
        counts = tuple(int(rng.integers(0, 150)) for _ in range(int(rng.integers(1, 4))))
        N = 8 * int(rng.integers(1, 20))
        K = (16 if fp8 else 8) * int(rng.integers(1, 20))
        args = G.grouped_inputs(rng, layout, counts, N, K, fp8)
        make = G.make_grouped_gemm_fp8 if fp8 else G.make_grouped_gemm_bf16
        tw.simulate(make(len(counts), N, K, layout, num_sms=int(rng.integers(1, 4))), *args)
        ref = G.grouped_reference(args, layout, fp8)
        valid = ~np.isnan(ref)
        got = np.asarray(args[-2], np.float64)
        scale = np.abs(ref[valid]).max() if valid.any() else 1.0
        ok = close(got[valid], ref[valid], 2.0 ** -7, 2.0 ** -6 * scale)
        return f"grouped {'fp8' if fp8 else 'bf16'} {layout} {counts} N {N} K {K}", ok

    def row_backward(self):
        rng = self.rng
        op, mod, dt, rows, cols = self.row_shape(["softmax_backward", "rmsnorm_backward"])
        if rng.random() < 0.25:  # enough rows for the weight gradient's slices
            rows, cols = int(rng.integers(30, 400)), int(rng.integers(1, 600))
        chunk = int(rng.integers(16, cols + 16)) if rng.random() < 0.3 else None
        k = getattr(mod, f"make_{op}")(rows, cols, dt, chunk=chunk)
        npd = ml_dtypes.bfloat16 if dt == "bfloat16" else dt
        args = mod.inputs(rng, (rows, cols), npd)
        tw.simulate(k, *args)
        want = mod.reference(*args)
        outs = slice(3, None) if op == "rmsnorm_backward" else slice(2, None)
        if op == "rmsnorm_backward":  # and dW from X, dY and the kernel's r
            dw = np.full((cols,), np.nan, npd)
            tw.simulate(mod.make_rmsnorm_weight_grad(rows, cols, dt), args[0], args[2],
                        args[4], dw)
            x64, g64 = args[0].astype(np.float64), args[2].astype(np.float64)
            args, want = [*args, dw], [*want, (g64 * x64 * mod.rstd(args[0])).sum(axis=0)]
        ok = all(close(g, w, 2.0 ** -6, 2.0 ** -7 * max(1.0, np.abs(np.asarray(w, np.float64))
                                                        .max()))
                 for g, w in zip(args[outs], want[outs]))
        return f"{op} {rows}x{cols} {dt} chunk={chunk}", ok


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seconds", type=float, default=600)
    a = p.parse_args()
    warnings.simplefilter("ignore", tw.TilewisePerformanceWarning)
    cases = Cases(np.random.default_rng(a.seed))
    kinds = [cases.rows, cases.gemm, cases.fp8, cases.attention, cases.grouped,
             cases.row_backward]
    t0, n, findings = time.time(), 0, []
    while time.time() - t0 < a.seconds:
        kind = kinds[n % len(kinds)]
        n += 1
        try:
            name, ok = kind()
            if not ok:
                findings.append(f"wrong: {name}")
                print(findings[-1], flush=True)
        except tw.TilewiseError as e:  # a refused shape: allowed, shown
            print(f"refused ({kind.__name__}): {str(e).splitlines()[0][:160]}", flush=True)
        except Exception:  # noqa: BLE001 (anything else is a finding)
            findings.append(f"crash ({kind.__name__}): {traceback.format_exc()[-800:]}")
            print(findings[-1], flush=True)
    print(f"seed {a.seed}: {n} cases in {time.time() - t0:.0f} s, {len(findings)} findings",
          flush=True)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
