"""GPU: fused attention (examples/attention.py) against torch SDPA's FlashAttention-2 and
cuDNN backends and a Triton fused-attention kernel (below), in one run, on the same inputs.

The grid (issue 20): bf16 and fp16 x head_dim 64 / 128 / 256 x seq 512 ... 16384 with
batch x seq = 16384 tokens and hidden 2048 (heads = 2048 / head_dim) x causal and not,
seq_q = seq_k. Every kernel's O is first checked against SDPA's flash output (both are
within 2^-7 of the float64 value; tests/attn/ check against float64 itself), then timed
with CUDA events (median of samples of back-to-back calls, kernels interleaved against
drift; timing.py). TFLOP/s count as FlashAttention does: 4·b·h·s²·d, halved for causal
(the backward: 2.5 times that). The tilewise kernels are compiled first, in parallel
worker processes (the on-disk cache then serves this process).

    PYTHONPATH=src python benchmarks/bench_attention.py [--quick] [--backward]
        [--dtypes bfloat16 float16] [--head-dims 64 128 256] [--seqs 512 ... 16384]

``--quick``: bf16, every head_dim, seq 1024 and 8192, causal and not (12 rows, under a
minute). ``--configs "" block_n=176`` times more tilewise forms (make_attention options,
``key=value,...``), each a column ``tilewise[...]``. ``--launch`` only launches each row's
tilewise kernel twice, for ``ncu`` (scripts/gpu-attn-profile). A row reads ``| date | device | dtype
hd seq causal | tilewise | cudnn | flash | triton | tilewise / cudnn | max diff |``.
"""

import argparse
import concurrent.futures
import datetime
import importlib.util
import math
import os
import statistics
import sys

from timing import timed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEQS = [512, 1024, 2048, 4096, 8192, 16384]
HEAD_DIMS = [64, 128, 256]
TOKENS, HIDDEN = 16384, 2048


def example(name: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples",
                                                                     f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def triton_attention():
    """A Triton fused-attention forward in the FlashAttention-2 form: one program per
    (q-block, batch x head), the q-block in registers, key blocks streamed through an online
    softmax in exp2 with the scale folded in; causal blocks past the diagonal skipped.
    Autotuned over the usual Hopper tilings (the peer of the same kind as ours)."""
    import triton
    import triton.language as tl

    configs = [triton.Config({"BM": bm, "BN": bn}, num_stages=s, num_warps=w)
               for bm, bn, s, w in ((128, 64, 3, 8), (128, 128, 3, 8), (64, 64, 4, 4))]

    @triton.autotune(configs=configs, key=["N_Q", "N_K", "HEAD_DIM", "CAUSAL"])
    @triton.jit
    def kernel(Q, K, V, O, qk_scale, N_Q, N_K, H, GROUP, HEAD_DIM: tl.constexpr,  # noqa: E741
               CAUSAL: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
        start_m = tl.program_id(0)
        bh = tl.program_id(1).to(tl.int64)
        hk = bh // GROUP  # (batch x kv-head), heads of a group adjacent
        rows = start_m * BM + tl.arange(0, BM)
        cols = tl.arange(0, BN)
        dims = tl.arange(0, HEAD_DIM)
        q = tl.load(Q + bh * N_Q * HEAD_DIM + rows[:, None] * HEAD_DIM + dims[None, :],
                    mask=rows[:, None] < N_Q, other=0.0)
        m_i = tl.full((BM,), float("-inf"), tl.float32)
        l_i = tl.zeros((BM,), tl.float32)
        acc = tl.zeros((BM, HEAD_DIM), tl.float32)
        hi = N_K
        if CAUSAL:
            hi = tl.minimum(hi, (start_m + 1) * BM)
        kbase = K + hk * N_K * HEAD_DIM
        vbase = V + hk * N_K * HEAD_DIM
        for n0 in range(0, hi, BN):
            keys = n0 + cols
            k = tl.load(kbase + keys[None, :] * HEAD_DIM + dims[:, None],
                        mask=keys[None, :] < N_K, other=0.0)
            s = tl.dot(q, k) * qk_scale
            keep = keys[None, :] < N_K
            if CAUSAL:
                keep = keep & (rows[:, None] >= keys[None, :])
            s = tl.where(keep, s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            p = tl.math.exp2(s - m_new[:, None])
            alpha = tl.math.exp2(m_i - m_new)
            l_i = l_i * alpha + tl.sum(p, 1)
            v = tl.load(vbase + keys[:, None] * HEAD_DIM + dims[None, :],
                        mask=keys[:, None] < N_K, other=0.0)
            acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
            m_i = m_new
        out = acc / l_i[:, None]
        tl.store(O + bh * N_Q * HEAD_DIM + rows[:, None] * HEAD_DIM + dims[None, :],
                 out.to(O.dtype.element_ty), mask=rows[:, None] < N_Q)

    def run(q, k, v, o, causal):
        b, h, nq, d = q.shape
        group = h // k.shape[1]
        grid = lambda meta: (triton.cdiv(nq, meta["BM"]), b * h)  # noqa: E731
        kernel[grid](q, k, v, o, d ** -0.5 * 1.4426950408889634, nq, k.shape[2], h, group,
                     HEAD_DIM=d, CAUSAL=causal)
    return run


def _shape(seq: int, hd: int):
    return TOKENS // seq, HIDDEN // hd, seq, seq, hd  # batch, heads, seq_q, seq_k, head_dim


def _qkv(torch, dtype: str, hd: int, seq: int):
    """Random Q, K, V of a row's shape on the GPU."""
    b, h, sq, sk, d = _shape(seq, hd)
    td = getattr(torch, dtype)
    return tuple(torch.randn(b, h, s, d, device="cuda", dtype=td) for s in (sq, sk, sk))


def _options(config: str) -> dict:
    """``key=value,...`` -> make_attention options (ints as ints)."""
    kw = {}
    for item in filter(None, config.split(",")):
        k, v = item.split("=")
        kw[k] = int(v) if v.isdigit() else v
    return kw


def _compile_one(args):
    """Worker: build and assemble one tilewise kernel into the on-disk cache."""
    dtype, hd, causal, backward, config = args
    sys.path.insert(0, os.path.join(ROOT, "src"))
    import tilewise as tw

    mod = example("attention")
    shape = _shape(SEQS[0], hd)
    ks = [] if backward else [mod.make_attention(*shape, causal=causal, dtype=dtype,
                                                 **_options(config))]
    if backward:
        bwd = mod.make_attention_backward(*shape, causal=causal, dtype=dtype)
        ks += [mod.make_attention(*shape, causal=causal, dtype=dtype, return_lse=True),
               bwd.prep, bwd.main]
    for f in ks:
        tw.compile(f, "sm_90a").cubin  # noqa: B018 - assembled and cached
    return args


def precompile(jobs, workers: int) -> None:
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
        for done in pool.map(_compile_one, jobs):
            print(f"compiled {done}", file=sys.stderr, flush=True)


def _sdpa(torch, backend):
    from torch.nn.attention import sdpa_kernel

    def run(q, k, v, causal):
        with sdpa_kernel(backend):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return run


def _time(torch, fn, samples: int) -> float:
    """Median seconds per call, ~25 ms of back-to-back calls per sample."""
    fn()
    torch.cuda.synchronize()
    once = timed(torch, fn, 1, 3, warmup=2)
    reps = max(1, min(50, int(0.025 / max(once, 1e-6))))
    return timed(torch, fn, reps, samples, warmup=2)


def forward_row(torch, mod, tri, dtype, hd, seq, causal, samples, configs=("",)):
    b, h, sq, sk, d = _shape(seq, hd)
    q, k, v = _qkv(torch, dtype, hd, seq)
    flops = 4 * b * h * sq * sk * d / (2 if causal else 1)
    sd = torch.nn.attention.SDPBackend
    runs, outs = {}, {}
    for cfg in configs:
        name = "tilewise" + (f"[{cfg}]" if cfg else "")
        kern = mod.make_attention(b, h, sq, sk, d, causal=causal, dtype=dtype,
                                  **_options(cfg))
        o = torch.full_like(q, float("nan"))
        runs[name] = lambda kern=kern, o=o: kern(q, k, v, o)
        outs[name] = o
        runs[name]()
    for name, backend in (("cudnn", sd.CUDNN_ATTENTION), ("flash", sd.FLASH_ATTENTION)):
        fn = _sdpa(torch, backend)
        try:
            outs[name] = fn(q, k, v, causal)
            runs[name] = lambda fn=fn: fn(q, k, v, causal)
        except RuntimeError as e:  # the backend does not take this shape
            print(f"{name}: n/a ({str(e).splitlines()[0][:80]})", file=sys.stderr)
    o_tri = torch.full_like(q, float("nan"))
    try:
        tri(q, k, v, o_tri, causal)
        runs["triton"] = lambda: tri(q, k, v, o_tri, causal)
        outs["triton"] = o_tri
    except Exception as e:  # noqa: BLE001 - e.g. its tiles need more shared memory (hd 256)
        print(f"triton: n/a ({type(e).__name__}: {str(e).splitlines()[0][:80]})",
              file=sys.stderr)
    torch.cuda.synchronize()
    ref = outs.get("flash", outs.get("cudnn"))
    errs = {n: float((x.float() - ref.float()).abs().max()) for n, x in outs.items()}
    times = {n: [] for n in runs}
    for _ in range(2):  # interleaved against drift
        for n, fn in runs.items():
            times[n].append(_time(torch, fn, samples))
    tf = {n: flops / statistics.median(t) / 1e12 for n, t in times.items()}
    return tf, errs


def backward_row(torch, mod, dtype, hd, seq, causal, samples):
    """tilewise's backward (from the forward's O and LSE) against SDPA's (autograd, the same
    backend's forward saved), gradients timed only; TFLOP/s = 2.5 x the forward's count."""
    b, h, sq, sk, d = _shape(seq, hd)
    q, k, v = _qkv(torch, dtype, hd, seq)
    do = torch.randn_like(q)
    flops = 2.5 * 4 * b * h * sq * sk * d / (2 if causal else 1)
    o = torch.empty_like(q)
    lse = torch.empty(b, h, sq, device="cuda", dtype=torch.float32)
    mod.make_attention(b, h, sq, sk, d, causal=causal, dtype=dtype, return_lse=True)(
        q, k, v, o, lse)
    bwd = mod.make_attention_backward(b, h, sq, sk, d, causal=causal, dtype=dtype)
    grads = [torch.empty_like(x) for x in (q, k, v)]
    runs = {"tilewise": lambda: bwd(q, k, v, o, do, lse, *grads)}
    sd = torch.nn.attention.SDPBackend
    refs = {}
    for name, backend in (("cudnn", sd.CUDNN_ATTENTION), ("flash", sd.FLASH_ATTENTION)):
        leaves = [x.detach().clone().requires_grad_() for x in (q, k, v)]
        try:
            out = _sdpa(torch, backend)(*leaves, causal)
        except RuntimeError:
            continue
        out.backward(do, retain_graph=True)
        refs[name] = [x.grad for x in leaves]
        runs[name] = lambda out=out, leaves=leaves: torch.autograd.grad(out, leaves, do,
                                                                        retain_graph=True)
    runs["tilewise"]()
    torch.cuda.synchronize()
    ref = refs.get("flash", refs.get("cudnn"))
    errs = {"tilewise": max(float((g.float() - r.float()).abs().max() / r.float().abs().max())
                            for g, r in zip(grads, ref))}
    times = {n: [] for n in runs}
    for _ in range(2):
        for n, fn in runs.items():
            times[n].append(_time(torch, fn, samples))
    return {n: flops / statistics.median(t) / 1e12 for n, t in times.items()}, errs


def launch_only(a) -> None:
    """Each row's tilewise forward launched twice, nothing else (``ncu -k regex:attention
    --launch-skip 1 --launch-count 1`` profiles the second, warm launch)."""
    import torch

    mod = example("attention")
    for dtype in a.dtypes:
        for hd in a.head_dims:
            for seq in a.seqs:
                for causal in (bool(c) for c in a.causal):
                    b, h, sq, sk, d = _shape(seq, hd)
                    q, k, v = _qkv(torch, dtype, hd, seq)
                    kern = mod.make_attention(b, h, sq, sk, d, causal=causal, dtype=dtype,
                                              **_options(a.configs[0]))
                    o = torch.empty_like(q)
                    for _ in range(2):
                        kern(q, k, v, o)
                    torch.cuda.synchronize()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--backward", action="store_true", help="time the backward pass instead")
    p.add_argument("--dtypes", nargs="+", default=["bfloat16", "float16"])
    p.add_argument("--head-dims", nargs="+", type=int, default=HEAD_DIMS)
    p.add_argument("--seqs", nargs="+", type=int, default=SEQS)
    p.add_argument("--causal", nargs="+", type=int, default=[0, 1])
    p.add_argument("--samples", type=int, default=5)
    p.add_argument("--workers", type=int, default=min(12, os.cpu_count() or 1))
    p.add_argument("--configs", nargs="+", default=[""],
                   help="make_attention options per tilewise column, e.g. '' 'block_n=176'")
    p.add_argument("--launch", action="store_true",
                   help="only launch tilewise's kernel twice per row (for ncu), time nothing")
    a = p.parse_args()
    if a.launch:
        return launch_only(a)
    if a.quick:
        a.dtypes, a.seqs = ["bfloat16"], [1024, 8192]
    import torch

    jobs = [(dt, hd, bool(c), a.backward, cfg) for dt in a.dtypes for hd in a.head_dims
            for c in a.causal for cfg in (a.configs if not a.backward else [""])]
    precompile(jobs, a.workers)
    mod = example("attention")
    tri = None if a.backward else triton_attention()
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(20):  # working clocks before anything is timed
        x @ x
    torch.cuda.synchronize()
    bad = []
    device = torch.cuda.get_device_name()
    for dtype in a.dtypes:
        for hd in a.head_dims:
            for seq in a.seqs:
                for causal in (bool(c) for c in a.causal):
                    if a.backward:
                        tf, errs = backward_row(torch, mod, dtype, hd, seq, causal, a.samples)
                        tol = 2.0 ** -5
                    else:
                        tf, errs = forward_row(torch, mod, tri, dtype, hd, seq, causal,
                                               a.samples, a.configs)
                        tol = 2.0 ** -5
                    bad += [f"{n} {dtype} hd{hd} s{seq}" for n, e in errs.items()
                            if not e <= tol]
                    cols = " | ".join(f"{n} {t:.0f}" for n, t in tf.items())
                    vs = tf["tilewise"] / tf["cudnn"] if "cudnn" in tf else math.nan
                    err = max(errs.values())
                    print(f"| {datetime.date.today()} | {device} | {dtype} hd{hd} s{seq}"
                          f"{' causal' if causal else ''} | {cols} | {vs:.3f} x cuDNN | max "
                          f"diff {err:.1e} |", flush=True)
    if bad:
        raise SystemExit("outputs off beyond 2^-5: " + ", ".join(bad))


if __name__ == "__main__":
    main()
