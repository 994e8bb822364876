"""examples/attention.py on the GPU against a float64 reference computed by torch (and its
SDPA, whose contract the kernel follows): random inputs, outputs poisoned with NaN; GQA,
odd lengths, causal with seq_q != seq_k both ways, the LSE against torch.logsumexp, and the
backward against torch autograd.

Tolerance: O as tests/attn/test_attention_sim.py states (2^-7 |ref| + 2^-6); the LSE 1e-4
absolute (float32 over up to 1000 keys); gradients see tests/attn/test_backward_sim.py."""

import math

import pytest

pytestmark = pytest.mark.gpu

FORWARD = [
    # batch, heads, seq_q, seq_k, head_dim, causal, kv_heads, dtype
    (2, 4, 1000, 1000, 128, False, None, "bfloat16"),
    (2, 4, 1000, 1000, 128, True, None, "bfloat16"),
    (1, 8, 77, 300, 64, True, 2, "bfloat16"),
    (1, 4, 300, 77, 64, True, None, "float16"),
    (2, 2, 513, 1000, 256, True, 1, "bfloat16"),
    (1, 2, 1000, 513, 256, False, None, "float16"),
    (4, 8, 512, 512, 64, False, 4, "float16"),
    (1, 1, 1, 1, 128, True, None, "bfloat16"),
    (8, 8, 700, 700, 64, True, None, "bfloat16"),  # 64 heads > CTAs / 4: head by head
    # head_dim off the tuned three: 64-byte swizzle (96, 32), 32-byte (80, 16), 128 (192)
    (2, 4, 1000, 777, 96, True, 2, "bfloat16"),
    (1, 4, 513, 1000, 80, False, None, "float16"),
    (2, 2, 700, 700, 192, True, None, "bfloat16"),
    (1, 2, 1000, 1000, 192, False, 1, "float16"),
    (2, 2, 300, 513, 32, False, None, "bfloat16"),
    (1, 2, 200, 200, 16, True, None, "bfloat16"),
    # not a multiple of 16: tiles of the next multiple, TMA filling and dropping the rest
    (2, 4, 700, 900, 72, True, 2, "bfloat16"),
    (1, 2, 333, 200, 40, False, None, "float16"),
    (1, 2, 100, 100, 8, True, None, "bfloat16"),
]


def reference(torch, q, k, v, causal, scale=None):
    """(O, LSE) in float64: SDPA's definition (top-left causal), GQA by repetition."""
    g = q.shape[1] // k.shape[1]
    q, k, v = q.double(), k.double().repeat_interleave(g, 1), v.double().repeat_interleave(g, 1)
    s = q @ k.transpose(-1, -2) * (scale if scale is not None else q.shape[-1] ** -0.5)
    if causal:
        above = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool, device=q.device).triu(1)
        s = s.masked_fill(above, -math.inf)
    return torch.softmax(s, -1) @ v, torch.logsumexp(s, -1)


def _inputs(torch, b, h, sq, sk, d, hk, dtype, seed=0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    td = getattr(torch, dtype)
    mk = lambda *shape: torch.randn(*shape, device="cuda", dtype=td, generator=gen)  # noqa
    return mk(b, h, sq, d), mk(b, hk or h, sk, d), mk(b, hk or h, sk, d)


@pytest.mark.parametrize("case", FORWARD, ids=[
    f"b{c[0]}h{c[1]}q{c[2]}k{c[3]}d{c[4]}{'-causal' if c[5] else ''}"
    f"{'-gqa' + str(c[6]) if c[6] else ''}-{c[7]}" for c in FORWARD])
def test_forward_matches_sdpa(attn, torch, case):
    b, h, sq, sk, d, causal, hk, dtype = case
    q, k, v = _inputs(torch, b, h, sq, sk, d, hk, dtype)
    o = torch.full_like(q, float("nan"))
    lse = torch.full((b, h, sq), float("nan"), device="cuda", dtype=torch.float32)
    attn.make_attention(b, h, sq, sk, d, causal=causal, dtype=dtype, kv_heads=hk,
                        return_lse=True)(q, k, v, o, lse)
    ref_o, ref_l = reference(torch, q, k, v, causal)
    assert not torch.isnan(o).any() and not torch.isnan(lse).any()
    err = (o.double() - ref_o).abs()
    assert (err <= 2.0 ** -7 * ref_o.abs() + 2.0 ** -6).all(), float(err.max())
    assert float((lse.double() - ref_l).abs().max()) < 1e-4
    sdpa = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=causal, enable_gqa=hk is not None)
    assert float((o.double() - sdpa.double()).abs().max()) < 2.0 ** -5  # both ~2^-8 off


@pytest.mark.parametrize("causal", [False, True])
def test_forward_with_three_consumers(attn, torch, causal):
    """head_dim 64 with 192-row tiles (three consumer warpgroups), GQA and odd lengths."""
    q, k, v = _inputs(torch, 2, 8, 1000, 777, 64, 2, "bfloat16", seed=5)
    o = torch.full_like(q, float("nan"))
    lse = torch.full((2, 8, 1000), float("nan"), device="cuda", dtype=torch.float32)
    attn.make_attention(2, 8, 1000, 777, 64, causal=causal, kv_heads=2, return_lse=True,
                        consumers=3)(q, k, v, o, lse)
    ref_o, ref_l = reference(torch, q, k, v, causal)
    err = (o.double() - ref_o).abs()
    assert (err <= 2.0 ** -7 * ref_o.abs() + 2.0 ** -6).all(), float(err.max())
    assert float((lse.double() - ref_l).abs().max()) < 1e-4


def test_forward_where_later_keys_move_the_maximum(attn, torch):
    """Keys growing 30 x along the sequence: rows' maxima move past RESCALE_AT block after
    block (O rescaled in those warps), while rows of small queries keep theirs."""
    q, k, v = _inputs(torch, 2, 4, 1000, 2000, 128, None, "bfloat16", seed=4)
    k = k * torch.linspace(1, 30, 2000, device="cuda", dtype=k.dtype)[:, None]
    q[:, :, ::3] *= 0.01
    o = torch.full_like(q, float("nan"))
    attn.make_attention(2, 4, 1000, 2000, 128)(q, k, v, o)
    ref_o, _ = reference(torch, q, k, v, False)
    err = (o.double() - ref_o).abs()
    assert (err <= 2.0 ** -7 * ref_o.abs() + 2.0 ** -6).all(), float(err.max())


def test_forward_without_lse_and_with_a_scale(attn, torch):
    q, k, v = _inputs(torch, 1, 4, 640, 640, 128, None, "bfloat16", seed=3)
    o = torch.full_like(q, float("nan"))
    attn.make_attention(1, 4, 640, 640, 128, causal=True, scale=0.05)(q, k, v, o)
    ref, _ = reference(torch, q, k, v, True, 0.05)
    assert ((o.double() - ref).abs() <= 2.0 ** -7 * ref.abs() + 2.0 ** -6).all()


BACKWARD = [
    (2, 4, 1000, 1000, 128, False, None, "bfloat16"),
    (1, 4, 1000, 1000, 64, True, 2, "bfloat16"),
    (1, 2, 300, 77, 128, True, None, "float16"),
    (1, 2, 200, 333, 256, True, 1, "bfloat16"),
    (1, 4, 700, 500, 96, True, 2, "bfloat16"),  # head_dims off the tuned three
    (1, 2, 333, 333, 80, False, None, "float16"),
    (1, 2, 300, 300, 192, True, None, "bfloat16"),
    (1, 4, 500, 700, 72, True, 2, "bfloat16"),
    (1, 2, 200, 200, 24, False, None, "float16"),
]


@pytest.mark.parametrize("case", BACKWARD, ids=[
    f"b{c[0]}h{c[1]}q{c[2]}k{c[3]}d{c[4]}{'-causal' if c[5] else ''}"
    f"{'-gqa' + str(c[6]) if c[6] else ''}-{c[7]}" for c in BACKWARD])
def test_backward_matches_autograd(attn, torch, case):
    """dQ, dK, dV against torch autograd in float64 (of the same definition, GQA summed):
    |grad - ref| <= 2^-6 max|ref| per gradient (tests/attn/test_backward_sim.py)."""
    b, h, sq, sk, d, causal, hk, dtype = case
    q, k, v = _inputs(torch, b, h, sq, sk, d, hk, dtype, seed=7)
    do = torch.randn_like(q)
    o = torch.full_like(q, float("nan"))
    lse = torch.full((b, h, sq), float("nan"), device="cuda", dtype=torch.float32)
    attn.make_attention(b, h, sq, sk, d, causal=causal, dtype=dtype, kv_heads=hk,
                        return_lse=True)(q, k, v, o, lse)
    grads = [torch.full_like(x, float("nan")) for x in (q, k, v)]
    attn.make_attention_backward(b, h, sq, sk, d, causal=causal, dtype=dtype,
                                 kv_heads=hk)(q, k, v, o, do, lse, *grads)
    leaves = [x.double().requires_grad_() for x in (q, k, v)]
    ref_o, _ = reference(torch, *leaves, causal)
    ref_o.backward(do.double())
    for name, got, leaf in zip(("dQ", "dK", "dV"), grads, leaves):
        assert not torch.isnan(got).any(), name
        err = float((got.double() - leaf.grad).abs().max() / leaf.grad.abs().max())
        assert err <= 2.0 ** -6, f"{name}: {err}"


@pytest.mark.parametrize("case", [(8, 32, 1, 8192, 128, 8), (1, 32, 1, 32768, 128, 32),
                                  (4, 16, 4, 5000, 64, 2), (2, 8, 16, 3001, 256, 1),
                                  (32, 32, 1, 2048, 128, 8), (3, 12, 2, 1500, 80, 4)])
def test_decoding_shapes_match_sdpa(attn, torch, case):
    """A few rows a head, no causal mask: the split-keys kernel (grouped heads, key ranges
    combined after), twice on one stream, once on another made current and once on a third
    named by stream= (its partial outputs made on that stream), against float64 and SDPA."""
    b, h, sq, sk, d, hk = case
    q, k, v = _inputs(torch, b, h, sq, sk, d, hk, "bfloat16", seed=7)
    kern = attn.make_attention(b, h, sq, sk, d, kv_heads=hk)
    assert isinstance(kern, attn.SplitKeys)
    ref_o, _ = reference(torch, q, k, v, False)
    side, named = torch.cuda.Stream(), torch.cuda.Stream()
    for launch in range(4):
        o = torch.full_like(q, float("nan"))
        if launch == 2:
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                kern(q, k, v, o)
            torch.cuda.current_stream().wait_stream(side)
        elif launch == 3:
            named.wait_stream(torch.cuda.current_stream())
            kern(q, k, v, o, stream=named)
            torch.cuda.current_stream().wait_stream(named)
        else:
            kern(q, k, v, o)
        assert not torch.isnan(o).any()
        err = (o.double() - ref_o).abs()
        assert (err <= 2.0 ** -7 * ref_o.abs() + 2.0 ** -6).all(), float(err.max())
    sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=hk != h)
    assert float((o.double() - sdpa.double()).abs().max()) < 2.0 ** -5
