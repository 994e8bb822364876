"""examples/attention_backward.py in the simulator (every hazard check on) against float64
numpy gradients of O = softmax(scale Q Kᵀ) V (top-left causal mask, GQA: the gradients of
a key/value head summed over its query heads).

Tolerance: the kernel rounds P and dS to 16 bits before the gradient GEMMs (2^-9 each) and
the result once more; over the few blocks here |grad - ref| <= 2^-6 max|ref| (measured:
0.005 of max|ref| at most). The same inputs as the forward's tests: unit variance, the
forward's O and LSE computed in float64 and rounded as the forward kernel returns them."""

import numpy as np
import pytest


def reference(q, k, v, do, causal, scale=None):
    """(O, LSE, dQ, dK, dV) in float64."""
    q, k, v, do = (x.astype(np.float64) for x in (q, k, v, do))
    b, h, sq, d = q.shape
    g = h // k.shape[1]
    kr, vr = np.repeat(k, g, 1), np.repeat(v, g, 1)
    sc = scale if scale is not None else d ** -0.5
    s = q @ kr.transpose(0, 1, 3, 2) * sc
    if causal:
        s = np.where(np.arange(k.shape[2])[None, :] > np.arange(sq)[:, None], -np.inf, s)
    mx = s.max(-1, keepdims=True)
    e = np.exp(s - mx)
    total = e.sum(-1, keepdims=True)
    p = e / total
    o = p @ vr
    ds = p * (do @ vr.transpose(0, 1, 3, 2) - (do * o).sum(-1, keepdims=True))
    dq = ds @ kr * sc
    dk = (ds.transpose(0, 1, 3, 2) @ q * sc).reshape(b, -1, g, k.shape[2], d).sum(2)
    dv = (p.transpose(0, 1, 3, 2) @ do).reshape(b, -1, g, k.shape[2], d).sum(2)
    return o, (np.log(total) + mx)[..., 0], dq, dk, dv


def run_backward(attn, shape, causal, kv_heads=None, dtype="bfloat16", seed=0, executor="sim"):
    import ml_dtypes

    b, h, sq, sk, d = shape
    hk = kv_heads or h
    t = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal(s).astype(t) for s in
               ((b, h, sq, d), (b, hk, sk, d), (b, hk, sk, d)))
    do = rng.standard_normal((b, h, sq, d)).astype(t)
    o, lse, *want = reference(q, k, v, do, causal)
    grads = [np.full(x.shape, np.nan, t) for x in (q, k, v)]
    bwd = attn.make_attention_backward(*shape, causal=causal, dtype=dtype, kv_heads=kv_heads,
                                       num_sms=2)
    reports = bwd.simulate(q, k, v, o.astype(t), do, lse.astype(np.float32), *grads)
    assert all(r.ok for r in reports)
    for name, got, ref in zip(("dQ", "dK", "dV"), grads, want):
        g = got.astype(np.float64)
        assert not np.isnan(g).any(), f"some of {name} was never written"
        err = np.abs(g - ref).max() / np.abs(ref).max()
        assert err <= 2.0 ** -6, f"{name}: {err}"


@pytest.mark.slow(group="attention-sim")
def test_backward_causal_one_block(attn):
    run_backward(attn, (1, 1, 64, 64, 64), True)


@pytest.mark.slow(group="attention-sim")
def test_backward_gqa_tails_and_a_key_block_no_query_sees(attn):
    """100 queries, 130 keys, causal: key block 2 (keys 128, 129) is after every query, so
    its dK and dV are zeros written without a loop; two query heads share the K/V head."""
    run_backward(attn, (1, 2, 100, 130, 64), True, kv_heads=1)


@pytest.mark.parametrize("head_dim,causal", [
    (96, True), (72, False), pytest.param(80, False, marks=pytest.mark.slow(group="attention-sim")),
    pytest.param(8, True, marks=pytest.mark.slow(group="attention-sim"))])
def test_backward_at_head_dims_off_the_tuned_ones(attn, head_dim, causal):
    """head_dim 96 (64-byte swizzle), 80 (32-byte, and a Delta row that is not a multiple
    of a warp's 32 lanes), 72 and 8 (tiles of 80 and 16 columns, TMA reading the rest as
    zeros and dropping it on the gradients' stores), both tails ragged."""
    run_backward(attn, (1, 2, 100, 130, head_dim), causal)


def test_backward_sizes_are_checked(attn):
    with pytest.raises(ValueError, match="head_dim=36: a multiple of 8 from 8 to 256"):
        attn.make_attention_backward(1, 1, 64, 64, 36)
