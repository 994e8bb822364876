"""examples/attention.py in the simulator, every hazard check on (strict), against float64
numpy: O as torch SDPA defines it (top-left causal mask, GQA by repeated key/value heads)
and the row log-sum-exp.

Tolerance: P is rounded to 16 bits before P V (2^-9 of each weight for bf16) and O once
more, so against float64 |O - ref| <= 2^-7 |ref| + 2^-6 for inputs of unit variance
(measured: at most 0.008); the LSE is float32 arithmetic on exact scores: 1e-5 absolute.
Shapes are small (one or two tiles of 128 query rows, two or three key blocks) so each case
lowers and runs in seconds."""

import time

import numpy as np
import pytest

import tilewise as tw


def _check(attn, q, k, v, o, lse, causal, scale=None):
    ref_o, ref_l = attn.attention_reference(q, k, v, causal, scale)
    got = o.astype(np.float64)
    assert not np.isnan(got).any(), "some of O was never written"
    bad = np.abs(got - ref_o) > attn.RTOL * np.abs(ref_o) + attn.ATOL
    assert not bad.any(), f"{int(bad.sum())} of O off, first at {tuple(np.argwhere(bad)[0])}"
    if lse is not None:
        assert not np.isnan(lse).any()
        assert np.abs(lse - ref_l).max() < 1e-5


def _run(attn, shape, causal, kv_heads=None, dtype="bfloat16", lse=True, seed=0, num_sms=2,
         **kw):
    rng = np.random.default_rng(seed)
    q, k, v, o, l_ = attn.inputs(rng, shape, dtype, kv_heads)
    kern = attn.make_attention(*shape, causal=causal, dtype=dtype, kv_heads=kv_heads,
                               return_lse=lse, num_sms=num_sms, **kw)
    t0 = time.perf_counter()
    rep = tw.simulate(kern, q, k, v, o, *([l_] if lse else []))
    assert rep.ok
    _check(attn, q, k, v, o, l_ if lse else None, causal, kw.get("scale"))
    return time.perf_counter() - t0


@pytest.mark.slow(group="attention-sim")  # one of the sampled whole-kernel runs
def test_the_example_causal_gqa_with_tails(attn):
    """Both sequence lengths off the block size, two query heads on one key/value head."""
    assert _run(attn, attn.SHAPE, True, attn.KV_HEADS) < 60


@pytest.mark.slow(group="attention-sim")  # one of the sampled whole-kernel runs
def test_causal_tiles_dealt_by_level_across_heads(attn):
    """Two heads and eight CTAs (heads <= CTAs / 4): the causal tiles go by q-block level
    across both heads, dealt in a snake; two CTAs find no tile in the last round."""
    _run(attn, (1, 2, 300, 300, 64), True, num_sms=8, lse=False)


@pytest.mark.slow(group="attention-sim")  # one of the sampled whole-kernel runs
@pytest.mark.parametrize("causal,dtype", [(True, "bfloat16"), (False, "float16")])
def test_three_consumer_warpgroups_at_head_dim_64(attn, causal, dtype):
    """192-row tiles: three consumers take turns on the tensor cores (barriers 1 -> 2 -> 3
    -> 1), each with its 64 rows, with a partial last tile; float16 without a causal mask
    is what make_attention picks at head_dim 64 by default."""
    _run(attn, (1, 2, 300, 300, 64), causal, dtype=dtype, consumers=3)


def test_o_is_rescaled_where_a_later_block_moves_the_maximum(attn):
    """Keys that grow along the sequence (the last block's scores 20 x the first's): the
    rows' maxima move by more than RESCALE_AT in later blocks, so those warps rescale O;
    rows whose maximum stays keep P <= 2^8 and skip it. Both must give SDPA's O."""
    shape, rng = (1, 1, 64, 384, 64), np.random.default_rng(3)
    q, k, v, o, _ = attn.inputs(rng, shape)
    grow = np.linspace(1, 20, shape[3])[None, None, :, None]
    k = (k.astype(np.float64) * grow).astype(k.dtype)
    q[0, 0, :32] = q[0, 0, :32] * 0.01  # half of the rows: scores too small to move m
    kern = attn.make_attention(*shape, causal=False, num_sms=1)
    assert tw.simulate(kern, q, k, v, o).ok
    _check(attn, q, k, v, o, None, False)


@pytest.mark.slow(group="attention-sim")  # one of the sampled whole-kernel runs
def test_head_dim_128_without_causal_mask_nor_lse(attn):
    """77 query rows (one partial tile), 200 keys: a full block and a masked tail block;
    the kernel without the LSE parameter is k(Q, K, V, O)."""
    _run(attn, (1, 2, 77, 200, 128), False, lse=False, dtype="float16", scale=0.3)


@pytest.mark.slow(group="attention-sim")  # one of the sampled whole-kernel runs
def test_the_log_shows_the_fa3_decisions(attn):
    """TMA loads, S = Q Kᵀ from shared memory, P V with P from registers, the row
    reductions on the fragment (shuffles for max, in-thread for the partial sums), the
    flushing exp2 and the stmatrix + TMA epilogue."""
    k = tw.compile(attn.attention, "sm_90a")  # lowers once: its log and its PTX below
    log = k.dispatch_log
    chosen = {}
    for d in log:
        chosen.setdefault(d.call.split("(")[0], set()).add((d.chosen, tuple(d.info)))
    gemms = {c for c, _ in chosen["Tx.wg.gemm_async"]}
    assert gemms == {"wgmma", "wgmma_rs"}
    infos = {i for _, info in chosen["Tx.wg.gemm_async"] for i in info}
    assert "4 x wgmma m64n128k16 (A K-major, swizzle 128; B K-major, swizzle 128)" in infos
    assert "8 x wgmma m64n64k16 (A from registers; B MN-major, swizzle 128)" in infos
    assert {c for c, _ in chosen["Tx.thread.copy_async"]} == {"tma"}
    assert {c for c, _ in chosen["Tx.wg.max"]} == {"warp"}
    assert {c for c, _ in chosen["Tx.wg.sum"]} == {"thread", "warp"}
    assert {c for c, _ in chosen["Tx.wg.copy"]} == {"ld_stmatrix"}
    ptx = k.source("ptx")
    assert "ex2.approx.ftz.f32" in ptx and "ex2.approx.f32" not in ptx
    assert "setmaxnreg.inc.sync.aligned.u32 \t240" in ptx
    assert "ld.local" not in ptx and "st.local" not in ptx


@pytest.mark.slow(group="attention-sim")
@pytest.mark.parametrize("head_dim,causal", [(256, True)])
def test_ptxas_keeps_the_consumers_in_registers(attn, head_dim, causal):
    """Assembled whole-program (setmaxnreg honoured), the consumers fit 240 registers; at
    head_dim 256 (the largest accumulator: 128 registers of O) only the epilogue's store
    addresses and a few per-tile values, hoisted out of the tile loop, may live in local
    memory (measured: 88 bytes: the epilogue's reloads once per tile, one load per key
    block). scripts/gpu-attn reports every head_dim."""
    from ptxas_log import assemble

    log = assemble(tw.compile(attn.make_attention(4, 16, 4096, 4096, head_dim, causal=causal,
                                                  num_sms=132), "sm_90a"))
    assert "C75" not in log, log  # no ignored setmaxnreg, no serialised wgmma
    spill = int(log.split(" bytes spill stores")[0].rsplit(",", 1)[-1])
    assert spill <= (128 if head_dim == 256 else 0), log


@pytest.mark.parametrize("head_dim,causal,swizzle", [
    (96, True, 64), (32, False, 64), (80, True, 32), (72, True, 32), (8, False, 32),
    pytest.param(192, False, 128, marks=pytest.mark.slow(group="attention-sim")),
    pytest.param(40, True, 32, marks=pytest.mark.slow(group="attention-sim"))])
def test_head_dims_off_the_tuned_ones(attn, head_dim, causal, swizzle):
    """head_dim a multiple of 8 that is not 64, 128 or 256: Q, K, V and O tiles of
    ``tile_head_dim`` columns (a multiple of 16: 72 -> 80, the columns past head_dim read as
    zeros by TMA and dropped on the store) in the widest swizzle that splits them; both
    sequence tails ragged."""
    from tilewise.layout import widest_swizzle

    assert attn.tile_head_dim(head_dim) == -(-head_dim // 16) * 16
    assert widest_swizzle(attn.tile_head_dim(head_dim)) == swizzle
    _run(attn, (1, 2, 150, 170, head_dim), causal)


def test_sizes_are_checked_before_building(attn):
    for head_dim in (4, 12, 264):
        with pytest.raises(ValueError, match=f"head_dim={head_dim}: a multiple of 8 from 8"):
            attn.make_attention(1, 1, 64, 64, head_dim)
    with pytest.raises(ValueError, match="kv_heads=3 must divide heads=4"):
        attn.make_attention(1, 4, 64, 64, 64, kv_heads=3)
    with pytest.raises(ValueError, match="bfloat16 or float16"):
        attn.make_attention(1, 1, 64, 64, 64, dtype="float32")
    with pytest.raises(ValueError, match="seq_k=0 must be a positive int"):
        attn.make_attention(1, 1, 64, 0, 64)
    with pytest.raises(ValueError, match="3 at head_dim 64"):
        attn.make_attention(1, 1, 64, 64, 128, consumers=3)
    with pytest.raises(ValueError, match="positive"):
        attn.make_attention(1, 1, 64, 64, 64, scale=-0.1)


@pytest.mark.parametrize("shape,kv_heads,num_sms,splits", [
    pytest.param((1, 4, 1, 700, 64), 2, 8, 3, id="decode-gqa2-3-ranges"),
    pytest.param((2, 4, 3, 1000, 128), 1, 16, 4, id="gqa4-3-rows-4-ranges",
                 marks=pytest.mark.slow),
    pytest.param((1, 2, 2, 600, 256), 1, 8, 4, id="hd256-o-in-q", marks=pytest.mark.slow),
    pytest.param((1, 2, 5, 300, 48), 2, 8, 1, id="hd48-packed-not-cut")])
def test_few_rows_group_the_heads_and_cut_the_keys(attn, monkeypatch, shape, kv_heads,
                                                   num_sms, splits):
    """No causal mask and a few rows a head (decoding): the query heads of a key/value head
    are one tile's rows (a view, no copy), and the keys are cut into ranges whose float32
    partial O and LSE (poisoned with NaN) a second kernel combines; ragged lengths, head_dim
    48 (tiles of 64 columns) and 256 (the output tile in Q's place)."""
    monkeypatch.setattr(attn, "SPLIT_MIN_KEYS", 0)  # small enough to simulate
    b, h, sq, sk, d = shape
    k = attn.make_attention(*shape, kv_heads=kv_heads, num_sms=num_sms)
    assert isinstance(k, attn.SplitKeys) and k.splits_for(b, sq, sk) == splits
    q, kk, v, o, _ = attn.inputs(np.random.default_rng(1), shape, "bfloat16", kv_heads)
    assert tw.simulate(k, q, kk, v, o).ok
    _check(attn, q, kk, v, o, None, False)


def test_a_decode_step_takes_the_split_keys_kernel(attn):
    """8 x 32 query heads on 8 key/value heads, one row each, 8192 keys: 64 tiles for 132
    SMs, cut into 2 ranges (128 items: one round, 97 % of the SMs; 5 ranges would be 2.4
    rounds); causal attention, the LSE, or many rows keep the one kernel."""
    k = attn.make_attention(8, 32, 1, 8192, 128, kv_heads=8, num_sms=132)
    assert isinstance(k, attn.SplitKeys) and k.splits_for(8, 1, 8192) == 2
    assert k.splits_for(1, 1, 32768) == 16  # 8 tiles: 128 items in one round
    assert k.splits_for(2, 1, 32768) == 8  # 16 tiles: 128 items
    assert k.splits_for(64, 1, 8192) == 1  # 512 tiles: enough without cutting
    assert k.splits_for(8, 1, 512) == 1  # few keys
    for kw in ({"causal": True}, {"return_lse": True}):
        assert not isinstance(attn.make_attention(8, 32, 1, 8192, 128, kv_heads=8, **kw),
                              attn.SplitKeys)
    assert not isinstance(attn.make_attention(1, 16, 4096, 4096, 128), attn.SplitKeys)
    with pytest.raises(tw.TilewiseError, match="splits=True .* without a causal mask"):
        attn.make_attention(1, 8, 1, 4096, 128, causal=True, splits=True)
    assert tw.compile(k).launch_config.block  # tw.compile takes the one kernel's contract


def test_head_dim_64_takes_three_consumers_where_their_rounds_of_tiles_cost_less(attn):
    """Without a causal mask the tiles are alike, so the consumer count follows the rounds
    the SMs take: 8 x 12 heads of 1024 rows are 5 rounds of 192-row tiles (the last a third
    full) or 6 full rounds of 128-row ones; 197 rows are two 192-row tiles a head, mostly
    padding. The benchmark's 16 x 32 heads of 1024 rows and long sequences keep three."""
    pick = attn.default_consumers
    assert pick(64, False, 1024, 8 * 12, 132) == 2
    assert pick(64, False, 197, 16 * 12, 132) == 2
    assert pick(64, False, 1024, 16 * 32, 132) == 3
    assert pick(64, False, 16384, 32, 132) == 3
    assert pick(64, False, 1024) == 3  # heads unknown: the measured default
    assert pick(64, True, 1024, 8 * 12, 132) == 2  # causal: by sequence length alone
    assert pick(64, True, 16384, 32, 132) == 3
    assert pick(128, False, 4096, 32, 132) == 2
