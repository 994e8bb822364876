"""GPU: the FP8 GEMMs of examples/gemm_fp8.py against torch._scaled_mm (cuBLASLt) and a
Triton fp8 ``tl.dot`` kernel, in one run, on the same inputs; then the grouped (MoE) GEMMs
of examples/gemm_grouped.py.

C (M, N) bf16 = (A · SA)(B · SB)ᵀ, A (M, K) and B (N, K) float8_e4m3fn, in three scalings:
``block`` (DeepGEMM's 1 x 128 / 128 x 128 scales; cuBLASLt's ``BlockWise1x128`` x
``BlockWise128x128`` where torch and the shape allow it), ``row`` and ``tensor`` (the two
modes of ``torch._scaled_mm``). Shapes: DeepSeek-V3's (N, K) x M in {64, 128, 4096}.
Every kernel is first checked against a float64 product of the dequantised inputs (relative
Frobenius error; the errors are printed beside each other), then timed with CUDA events
(median of samples of back-to-back launches; benchmarks/timing.py). TFLOP/s count 2·M·N·K.
Every case runs ``make_gemm_fp8(M, N, K, scaling)`` as a user calls it (``auto``: tuned on
its first launch from M = 1024 on), the model's tile and, where that tile has one wave a
warpgroup, the same tile with ``overlap=True`` (tile name ``/ovl``); at M = 4096 the kernel
(every scaling) also runs with the other wide tiles and 128 x 128 with overlap
(``--pairs``: as CTA pairs multicasting B too; ``--no-sweep`` skips them). The tilewise
column is the fastest of them, the ``auto`` column what a user gets. cuBLASLt always gets
the 1 x 128 scales MN-major (as it reads them); ours and Triton get them row-major unless
``--sa-mn`` (the same MN-major array: ours 2-4 % faster at K = 16384, benchmarks/RESULTS.md).
Grouped GEMMs: the factory as a user calls it (``auto``: fp8 tunes between its model's tile
and 128 x 128 with ``overlap=True`` from 1024 rows on; the pick is named) and, for fp8,
128 x 128 with ``overlap=True``.

    PYTHONPATH=src python benchmarks/bench_gemm_fp8.py [--ms 64,128,4096]
        [--modes block,row,tensor] [--no-grouped] [--no-sweep] [--pairs] [--sa-mn]
        [--json OUT.json]
"""

import argparse
import datetime
import importlib.util
import json
import os
import sys
import time

from timing import timed_all

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES_NK = [(2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168),
             (7168, 2048)]
GROUPED = [  # (layout, groups, rows a group (expected), N, K, fp8)
    ("contiguous", 4, 8192, 4096, 7168, True), ("contiguous", 4, 8192, 7168, 2048, True),
    ("masked", 8, 256, 4096, 7168, True), ("masked", 8, 256, 7168, 2048, True),
    ("contiguous", 4, 8192, 4096, 7168, False)]
SWEEP = [(bm, bn, mc) for bm, bn in ((128, 128), (256, 128), (128, 256)) for mc in (1, 2)]
PAIRS = False  # --pairs: the sweep's CTA pairs too (0.6-0.8 x the tile alone on the H200)
SA_MN = False  # --sa-mn: block scales of A MN-major for our kernels too (cuBLASLt's layout)


def _example(name):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples",
                                                                     name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------------- quantisation
def quantize(torch, x, mode, block_rows):
    """x (R, K) float32 -> (fp8 data, float32 scales): ``block``: per 1 x 128
    (``block_rows`` 1) or 128 x 128 block; ``row``: per row; ``tensor``: one."""
    fmax = 448.0
    r, k = x.shape
    if mode == "block":
        kb, rb = -(-k // 128), -(-r // block_rows)
        xp = torch.nn.functional.pad(x, (0, kb * 128 - k, 0, rb * block_rows - r))
        blocks = xp.view(rb, block_rows, kb, 128)
        s = (blocks.abs().amax(dim=(1, 3)) / fmax).clamp(min=1e-8)
        q = (blocks / s[:, None, :, None]).view(rb * block_rows, kb * 128)[:r, :k]
        return q.to(torch.float8_e4m3fn).contiguous(), (s if block_rows > 1 else s.contiguous())
    if mode == "row":
        s = (x.abs().amax(dim=1, keepdim=True) / fmax).clamp(min=1e-8)
    else:
        s = (x.abs().amax() / fmax).clamp(min=1e-8).reshape(1)
    return (x / s).to(torch.float8_e4m3fn).contiguous(), s.float().contiguous()


def dequantize(torch, q, s, mode, block_rows):
    x = q.double()
    r, k = x.shape
    if mode == "block":
        e = s.double().repeat_interleave(128, dim=1)[:, :k]
        if block_rows > 1:
            e = e.repeat_interleave(block_rows, dim=0)[:r]
        return x * e
    return x * (s.double() if mode == "row" else s.double().reshape(()))


def problem(torch, M, N, K, mode, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(M, K, device="cuda", generator=g)
    w = torch.randn(N, K, device="cuda", generator=g) * 0.05
    a, sa = quantize(torch, x, mode, 1)
    b, sb = quantize(torch, w, mode, 128)
    if mode == "row":
        sb = sb.reshape(1, N).contiguous()
    ref = dequantize(torch, a, sa, mode, 1) @ dequantize(
        torch, b, sb.reshape(N, 1) if mode == "row" else sb, mode, 128).T
    return a, b, sa, sb, ref


def rel_err(torch, c, ref):
    return float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref))


# ------------------------------------------------------------------------------ peers
def cublas(torch, mode, a, b, sa, sb):
    """torch._scaled_mm (cuBLASLt) in the same scaling, bf16 out, no fast accumulation;
    None when this torch / shape does not take it."""
    bt = b.t()
    if mode == "tensor":
        return lambda: torch._scaled_mm(a, bt, sa.reshape(()), sb.reshape(()),
                                        out_dtype=torch.bfloat16)
    if mode == "row":
        return lambda: torch._scaled_mm(a, bt, sa, sb, out_dtype=torch.bfloat16)
    sa_mn = sa.t().contiguous().t()  # 1 x 128 scales outer-dim-major, as cuBLASLt reads them
    tries = [lambda: torch._scaled_mm(a, bt, sa_mn, sb.t(), out_dtype=torch.bfloat16),
             lambda: torch._scaled_mm(a, bt, sa_mn, sb, out_dtype=torch.bfloat16)]
    F = getattr(torch.nn.functional, "scaled_mm", None)
    if F is not None:
        st = torch.nn.functional.ScalingType
        tries.append(lambda: F(a, bt, sa_mn, st.BlockWise1x128, sb.t(), st.BlockWise128x128,
                               output_dtype=torch.bfloat16))
    for fn in tries:
        try:
            fn()
            return fn
        except Exception:  # noqa: BLE001 - this torch or shape has no block-scaled path
            continue
    return None


def triton_fp8(tune: bool = True):
    """A Triton fp8 tl.dot GEMM: C = (A · SA)(B · SB)ᵀ, MODE 0 block (the partial of each
    128-deep block scaled and added, as DeepGEMM does), 1 row, 2 tensor; autotuned over
    three tiles (``tune=False``: 64 x 64, for Triton's interpreter)."""
    import triton
    import triton.language as tl

    configs = [triton.Config({"BM": bm, "BN": bn, "G": 8}, num_stages=s, num_warps=w)
               for bm, bn, s, w in ((128, 128, 4, 8), (64, 128, 4, 4), (64, 64, 5, 4))]

    @triton.jit
    def kernel(a, b, sa, sb, c, M, N, K, s_am, s_bn, s_sa0, s_sa1, s_sb0, s_sb1,
               MODE: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, G: tl.constexpr):
        BK: tl.constexpr = 128
        pid = tl.program_id(0)
        npm, npn = tl.cdiv(M, BM), tl.cdiv(N, BN)
        first = pid // (G * npn) * G
        size = min(npm - first, G)
        pm = first + (pid % (G * npn)) % size
        pn = (pid % (G * npn)) // size
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        pa = a + rm[:, None] * s_am + rk[None, :]
        pb = b + rn[None, :] * s_bn + rk[:, None]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kb in range(0, tl.cdiv(K, BK)):
            ka = tl.load(pa, mask=(rm[:, None] < M) & (rk[None, :] < K - kb * BK), other=0.0)
            kt = tl.load(pb, mask=(rk[:, None] < K - kb * BK) & (rn[None, :] < N), other=0.0)
            if MODE == 0:
                scale_a = tl.load(sa + rm * s_sa0 + kb * s_sa1, mask=rm < M, other=0.0)
                scale_b = tl.load(sb + (pn * BN // 128) * s_sb0 + kb * s_sb1)
                acc += tl.dot(ka, kt) * (scale_a[:, None] * scale_b)
            else:
                acc = tl.dot(ka, kt, acc)
            pa += BK
            pb += BK
        if MODE == 1:
            acc *= tl.load(sa + rm, mask=rm < M, other=0.0)[:, None] * tl.load(
                sb + rn, mask=rn < N, other=0.0)[None, :]
        if MODE == 2:
            acc *= tl.load(sa) * tl.load(sb)
        pc = c + rm[:, None] * N + rn[None, :]
        tl.store(pc, acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))

    tuned = triton.autotune(configs=configs, key=["M", "N", "K", "MODE"])(kernel)
    fixed = {} if tune else dict(BM=64, BN=64, G=8)

    def run(mode, a, b, sa, sb, c):
        M, K = a.shape
        N = b.shape[0]
        s2 = (sa.stride(0), sa.stride(1)) if sa.dim() == 2 else (1, 0)
        t2 = (sb.stride(0), sb.stride(1)) if sb.dim() == 2 else (1, 0)
        grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)  # noqa
        (tuned if tune else kernel)[grid](a, b, sa, sb, c, M, N, K, a.stride(0), b.stride(0),
                                          *s2, *t2, MODE={"block": 0, "row": 1, "tensor": 2}[mode],
                                          **fixed)
    return run


# ------------------------------------------------------------------------------- runs
def _reps(flops):
    return max(1, min(50, int(2e-2 / max(flops / 1.0e15, 1e-6))))


def _time_all(torch, fns, flops):
    """Seconds per call of each of ``fns``, interleaved (timing.timed_all: one problem's
    kernels, ours and the peers', see the same clocks)."""
    return timed_all(torch, fns, _reps(flops), samples=5, warmup=3)


def dense(torch, F, ms, modes, sweep, sms, log, deadline, kernels, trit):
    """The dense cases of ``modes``; cases past ``deadline`` (time.time()) are skipped."""
    rows = []
    for mode in modes:
        for M in ms:
            for N, K in SHAPES_NK:
                if time.time() > deadline:
                    log(f"{mode} {M}x{N}x{K}: skipped (time budget)")
                    continue
                rows.append(_dense_case(torch, F, trit, kernels, mode, M, N, K, sweep, sms, log))
    return rows


def _ours(F, kernels, mode, tile, sms, overlap=False):
    key = (mode, tile.bm, tile.bn, tile.stages, tile.cluster, tile.share, overlap)
    if key not in kernels:  # symbolic in M, N, K: one kernel serves every shape
        kernels[key] = F.make_gemm_fp8(scaling=mode, bm=tile.bm, bn=tile.bn,
                                       stages=tile.stages, num_sms=sms, cluster=tile.cluster,
                                       share=tile.share, overlap=overlap)
    return kernels[key]


def _variants(F, M, N, mode, sweep, sms):
    """(tile, overlap) to time: the factory's tile, with overlap where it has one wave;
    at M = 4096 the sweep's tiles (and 128 x 128 with overlap)."""
    blocks = mode == "block"
    first = F.choose_tile(M, N, sms, wide=blocks and M >= 1024, straddling=True)
    out = [(first, False)] + ([(first, True)] if _overlaps(F, first) else [])
    if sweep and M >= 4096:
        for bm, bn, mc in SWEEP + [(*t, 1) for t in F.TUNE_STRADDLING]:
            t = F.choose_tile(M, N, sms, bm=bm, bn=bn, cluster=mc, share="b",
                              straddling=True)
            for ovl in (False, True) if _overlaps(F, t) and mc == 1 else (False,):
                if (mc == 1 or PAIRS) and (t, ovl) not in out:
                    out.append((t, ovl))
    return out


def _overlaps(F, tile) -> bool:
    """Whether ``overlap=True`` builds for ``tile`` (one wave a warpgroup, <= 128 wide)."""
    try:
        F.check_overlap(tile)
    except ValueError:
        return False
    return True


def _dense_case(torch, F, trit, kernels, mode, M, N, K, sweep, sms, log):
    a, b, sa, sb, ref = problem(torch, M, N, K, mode)
    if SA_MN and mode == "block":
        sa = sa.t().contiguous().t()  # the same scales, MN-major (what cuBLASLt gets)
    flops = 2.0 * M * N * K
    c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
    row = dict(mode=mode, M=M, N=N, K=K)
    variants = [("auto", None)] + _variants(F, M, N, mode, sweep, sms)
    fns = {}  # name -> callable, every correct one, timed together below
    for tile, ovl in variants:
        name = "auto" if tile == "auto" else f"{tile.bm}x{tile.bn}/{tile.stages}" + (
            f"/pairs-{tile.share.upper()}" if tile.cluster == 2 else "") + ("/ovl" if ovl else "")
        try:
            # auto: make_gemm_fp8(M, N, K) as a user calls it (tuned on its first launch)
            k = F.make_gemm_fp8(M, N, K, mode, num_sms=sms) if tile == "auto" else _ours(
                F, kernels, mode, tile, sms, ovl)
            c.fill_(float("nan"))
            k(a, b, sa, sb, c)
            torch.cuda.synchronize()
            err = rel_err(torch, c, ref)
            if err < 1e-2:
                fns[name] = lambda k=k: k(a, b, sa, sb, c)
        except Exception as e:  # noqa: BLE001 - one failure must not stop the table
            log(f"tilewise {mode} {M}x{N}x{K} tile {name}: {type(e).__name__}: {e}")
            err = None
        row.setdefault("tiles", {})[name] = None
        if tile == "auto":
            row["tw_err"] = err
    fn = cublas(torch, mode, a, b, sa, sb)
    if fn is not None:
        out = fn()
        row["cublas_err"] = rel_err(torch, out, ref)
        fns["@cublas"] = fn
    try:
        ct = torch.empty_like(c)
        tfn = lambda: trit(mode, a, b, sa, sb, ct)  # noqa: E731
        tfn()
        row["triton_err"] = rel_err(torch, ct, ref)
        fns["@triton"] = tfn
    except Exception as e:  # noqa: BLE001
        log(f"triton {mode} {M}x{N}x{K}: {type(e).__name__}: {e}")
    tf = {n: flops / t / 1e12 for n, t in _time_all(torch, fns, flops).items()}
    for peer in ("cublas", "triton"):
        if "@" + peer in tf:
            row[peer] = tf.pop("@" + peer)
    row["tiles"].update(tf)
    row["auto"] = tf.get("auto")
    best = max(tf, key=tf.get) if tf else None
    row["tw"] = best and tf[best]
    row["tile"] = best
    log(f"{mode} {M}x{N}x{K}: " + json.dumps({k: v for k, v in row.items() if k not in (
        "mode", "M", "N", "K")}, default=str))
    return row


def grouped(torch, GG, log, deadline):
    import numpy as np

    rows = []
    for layout, groups, m, N, K, fp8 in GROUPED:
        if time.time() > deadline:
            log(f"grouped {layout} {groups}x{m} {N}x{K}: skipped (time budget)")
            continue
        rng = np.random.default_rng(0)
        if layout == "contiguous":
            counts = [int(m * f) for f in rng.uniform(0.7, 1.3, groups)]
        else:
            counts = [int(min(2 * m, m * f)) for f in rng.uniform(0.5, 1.5, groups)]
        row = dict(layout=layout, groups=groups, M=sum(counts), N=N, K=K,
                   dtype="fp8" if fp8 else "bf16")
        flops = 2.0 * sum(counts) * N * K
        variants = [("auto", {})] + ([("128x128/ovl", dict(bm=128, bn=128, overlap=True))]
                                     if fp8 else [])
        try:
            args, ref = _grouped_problem(torch, GG, layout, counts, N, K, fp8, m)
        except Exception as e:  # noqa: BLE001
            log(f"grouped {row}: {type(e).__name__}: {e}")
            variants = []
        make = GG.make_grouped_gemm_fp8 if fp8 else GG.make_grouped_gemm_bf16
        fns = {}
        for name, kw in variants:
            try:
                k = make(groups, N, K, layout, M_=args[0].shape[0] if layout == "contiguous"
                         else None, expected_m=m, **kw)
                args[-2].fill_(float("nan"))
                k(*args)  # the factory's kernel tunes here (fp8, from 1024 rows)
                if name == "auto":
                    pick = k.select(*args) if hasattr(k, "select") else {}
                    name = ("auto: 128x128/ovl" if pick.get("overlap") else
                            "auto: " + _tile_name(GG, layout, groups, args, N, K, m, fp8))
                torch.cuda.synchronize()
                c, valid = args[-2].double(), ~torch.isnan(ref)
                err = float(torch.linalg.norm((c - ref)[valid]) / torch.linalg.norm(
                    ref[valid]))
                row.setdefault("err", err)
                if err < 1e-2:
                    fns[name] = lambda k=k, args=args: k(*args)
            except Exception as e:  # noqa: BLE001
                log(f"grouped {row} {name}: {type(e).__name__}: {e}")
        tf = {n: flops / t / 1e12 for n, t in _time_all(torch, fns, flops).items()}
        row["tiles"] = tf
        if tf:
            row["tile"] = max(tf, key=tf.get)
            row["tw"] = tf[row["tile"]]
        log("grouped " + json.dumps(row))
        rows.append(row)
    return rows


def _tile_name(GG, layout, groups, args, N, K, m, fp8):
    """The factory's tile for this grouped case, as ``bmxbn/stages``."""
    t = GG._tile(layout, groups, args[0].shape[0] if layout == "contiguous" else None, N, m,
                 1 if fp8 else 2, 128 if fp8 else 64)
    return f"{t.bm}x{t.bn}/{t.stages}"


def _grouped_problem(torch, GG, layout, counts, N, K, fp8, m):
    """The grouped inputs on the GPU (fp8 block-quantised or bf16) and the float64
    reference of the valid rows (NaN elsewhere)."""
    g = torch.Generator(device="cuda").manual_seed(1)
    G = len(counts)
    if layout == "contiguous":
        L = torch.from_numpy(GG.contiguous_indices(counts)).cuda()
        shape = (L.numel(),)
    else:
        L = torch.tensor(counts, dtype=torch.int32, device="cuda")
        shape = (G, max(2 * m, max(counts)))
    x = torch.randn(*shape, K, device="cuda", generator=g)
    w = torch.randn(G, N, K, device="cuda", generator=g) * 0.05
    ref = torch.full(shape + (N,), float("nan"), dtype=torch.float64, device="cuda")
    c = torch.full(shape + (N,), float("nan"), dtype=torch.bfloat16, device="cuda")
    if fp8:
        a, sa = quantize(torch, x.reshape(-1, K), "block", 1)
        a, sa = a.view(*shape, K), sa.view(*shape, -1)
        qb = [quantize(torch, w[i], "block", 128) for i in range(G)]
        b, sb = torch.stack([q[0] for q in qb]), torch.stack([q[1] for q in qb])
        args = [a, b, sa, sb, c, L]
    else:
        a, b = x.bfloat16(), w.bfloat16()
        args = [a, b, c, L]
    for i, n in enumerate(counts):
        rows = (L == i).nonzero().flatten() if layout == "contiguous" else torch.arange(
            n, device="cuda")
        key = (rows,) if layout == "contiguous" else (i, rows)
        if fp8:
            av = dequantize(torch, a[key], sa[key], "block", 1)
            bv = dequantize(torch, b[i], sb[i], "block", 128)
        else:
            av, bv = a[key].double(), b[i].double()
        ref[key] = av @ bv.T
    return args, ref


# ----------------------------------------------------------------------------- report
def _f(v, fmt="{:7.1f}"):
    return fmt.format(v) if isinstance(v, (int, float)) else "-".rjust(len(fmt.format(0.0)))


def report(dense_rows, grouped_rows, props, args):
    print(f"\n# FP8 GEMM, {props.name}, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d}"
          f", torch {args['torch']}, triton {args['triton']}")
    print("TFLOP/s (2MNK / median time); err: relative Frobenius error against the float64 "
          "product of the dequantised inputs")
    print(f"{'mode':6} {'M':>5} {'N':>6} {'K':>6} | {'tilewise':>8} {'auto':>7} {'cuBLASLt':>8} "
          f"{'triton':>7} | {'tw/cuBLAS':>9} {'tw/triton':>9} {'auto/cuBLAS':>11} | "
          f"{'tw err':>8} {'cuBLAS err':>10} {'tri err':>8} | tile")

    def ratio(r, x, w=9, tw="tw"):
        return _f(r[tw] / r[x], f"{{:{w}.2f}}") if r.get(tw) and r.get(x) else f"{'-':>{w}}"

    for r in dense_rows:
        print(f"{r['mode']:6} {r['M']:5d} {r['N']:6d} {r['K']:6d} | {_f(r.get('tw'), '{:8.1f}')} "
              f"{_f(r.get('auto'))} {_f(r.get('cublas'), '{:8.1f}')} {_f(r.get('triton'))} | "
              f"{ratio(r, 'cublas')} {ratio(r, 'triton')} {ratio(r, 'cublas', 11, 'auto')} | "
              f"{_f(r.get('tw_err'), '{:8.1e}')} "
              f"{_f(r.get('cublas_err'), '{:10.1e}')} {_f(r.get('triton_err'), '{:8.1e}')} | "
              f"{r.get('tile')}  {r.get('tiles') if len(r.get('tiles') or {}) > 1 else ''}")
    if grouped_rows:
        print("\n# grouped GEMMs (one launch for all groups); TFLOP/s over the valid rows")
        print(f"{'layout':10} {'dtype':5} {'G':>3} {'rows':>6} {'N':>6} {'K':>6} | "
              f"{'tilewise':>8} | {'err':>8} | tile")
        for r in grouped_rows:
            print(f"{r['layout']:10} {r['dtype']:5} {r['groups']:3d} {r['M']:6d} {r['N']:6d} "
                  f"{r['K']:6d} | {_f(r.get('tw'), '{:8.1f}')} | {_f(r.get('err'), '{:8.1e}')}"
                  f" | {r.get('tile')}  {r.get('tiles') if len(r.get('tiles') or {}) > 1 else ''}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ms", default="64,128,4096")
    ap.add_argument("--modes", default="block,row,tensor")
    ap.add_argument("--no-grouped", action="store_true")
    ap.add_argument("--no-sweep", action="store_true")
    ap.add_argument("--pairs", action="store_true", help="the sweep's CTA pairs too")
    ap.add_argument("--sa-mn", action="store_true",
                    help="ours and Triton get A's block scales MN-major too, as cuBLASLt does")
    ap.add_argument("--json", default=None)
    ap.add_argument("--budget", type=float, default=170.0,
                    help="seconds; cases that would start later are skipped (tables still print)")
    opts = ap.parse_args()
    global PAIRS, SA_MN
    PAIRS, SA_MN = opts.pairs, opts.sa_mn
    import torch
    import triton

    from tilewise import runtime

    if not torch.cuda.is_available() or not runtime.gpu_available():
        print("no GPU: nothing to measure")
        return
    t0 = time.time()
    log = lambda s: print(f"[{time.time() - t0:6.1f}s] {s}", flush=True)  # noqa: E731
    F, GG = _example("gemm_fp8"), _example("gemm_grouped")
    sms = runtime.sm_count()
    ms, modes = [int(m) for m in opts.ms.split(",")], opts.modes.split(",")
    end = t0 + opts.budget
    kernels, trit = {}, triton_fp8()
    # block scales first (DeepGEMM's case), the grouped GEMMs, then torch's two modes
    drows = dense(torch, F, ms, [m for m in modes if m == "block"], not opts.no_sweep, sms,
                  log, end - 45, kernels, trit)
    grows = [] if opts.no_grouped else grouped(torch, GG, log, end - 30)
    drows += dense(torch, F, ms, [m for m in modes if m != "block"], not opts.no_sweep, sms,
                   log, end, kernels, trit)
    props = torch.cuda.get_device_properties(0)
    report(drows, grows, props, {"torch": torch.__version__, "triton": triton.__version__})
    print(f"\n(total {time.time() - t0:.0f} s)")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"dense": drows, "grouped": grows, "device": props.name}, f, indent=1,
                      default=str)


if __name__ == "__main__":
    main()
