"""The backward pass of examples/attention.py: dQ, dK, dV from Q, K, V, O, dO and the forward's
row log-sum-exp, on Hopper (sm_90a), the FlashAttention-2 algorithm with FlashAttention-3's
tensor-core forms (S, dP and the gradient GEMMs by wgmma, dS fed from registers).

``make_attention_backward(batch, heads, seq_q, seq_k, head_dim, causal=False,
dtype="bfloat16", kv_heads=None, scale=None)`` returns an :class:`AttentionBackward`, called
as ``bwd(Q, K, V, O, dO, LSE, dQ, dK, dV)`` with torch CUDA tensors (the shapes of
``make_attention``; LSE from its ``return_lse=True``; dQ like Q, dK and dV like K and V,
written): exactly the gradients ``torch.autograd`` gives for SDPA's output. ``bwd.simulate``
takes numpy arrays and runs the same two kernels on the CPU.

With ``P = exp(scale · Q Kᵀ - LSE)`` (the softmax, rebuilt from the LSE instead of stored)
and ``Delta = rowsum(dO ∘ O)`` (= rowsum(P ∘ dP)):

    dV = Pᵀ dO        dP = dO Vᵀ        dS = P ∘ (dP - Delta)
    dQ = scale · dS K                   dK = scale · dSᵀ Q

Two kernels:

1. ``prep``: ``Delta`` (float32, batch x heads x seq_q), one warp per row.
2. ``main``: one warpgroup per CTA, persistent CTAs over three kinds of work, each
   accumulating one 64-row tile of one gradient in registers across the blocks it needs:

   * **dQ** of query block i: over key blocks j, ``S = Q_i K_jᵀ`` and ``dP = dO_i V_jᵀ``
     (wgmma, A and B from shared memory), ``P``, ``dS`` on the fragment (per-row LSE and
     Delta in registers), ``dQ_i += dS K_j`` (wgmma with dS from registers: ``wgmma_rs``);
   * **dK** of key block j: the same with the roles of the two sides exchanged, over every
     query block (and, with GQA, every query head of the group) that sees it: ``Sᵀ = K_j
     Q_iᵀ``, ``dPᵀ = V_j dO_iᵀ``, per-column LSE and Delta, ``dK_j += dSᵀ Q_i``;
   * **dV** of key block j: ``Sᵀ``, ``Pᵀ``, ``dV_j += Pᵀ dO_i``.

   So every gradient is written once, by one CTA: no atomics, the result is deterministic.
   The price is recomputation: S is formed three times and dP twice per pair of blocks
   (8 GEMMs per pair where FlashAttention-2 with atomic dQ does 5). The kind of work is a
   compile-time copy of one loop body (``for kind in T.static_range(3)``). The block the
   loop streams (K, V for dQ; Q, dO for dK and dV) comes through a 2-stage TMA ring that
   thread 0 refills one block ahead; each result tile leaves through shared memory and a
   TMA store. Masks: a score is dropped (P = 0) where the key is past seq_k, the query past
   seq_q, or (causal, top-left) the key after the query; causal blocks above the diagonal
   are skipped.

Correctness: float64 numpy in the simulator (``tests/attn/test_backward_sim.py``) and torch
autograd on the GPU. Speed is measured by ``benchmarks/bench_attention.py --backward``; it
has no target yet (the issue sets one once the forward lands).
"""

from __future__ import annotations

import math

from tilewise import T, Tx, config_error, runtime
from tilewise.layout import (R, S, laneid, swizzled_tile, wgmma_a_fragment, wgmma_accumulator,
                             wgmma_accumulator_rows, wid_in_wg, widest_swizzle)

B64 = 64  # rows of every tile: one warpgroup's wgmma M, and the key block
LOG2E = 1.4426950408889634
NEG_INF = float("-inf")
H200_SMS = 132
KINDS = ("dq", "dk", "dv")


class AttentionBackward:
    """The two kernels of the backward pass and how to run them (the module docstring)."""

    def __init__(self, shape, dtype, kv_heads, prep, main):
        self.shape, self.dtype, self.kv_heads = shape, dtype, kv_heads
        self.prep, self.main = prep, main

    def __call__(self, Q, K, V, O, dO, LSE, dQ, dK, dV):  # noqa: E741
        """Run on the GPU (torch CUDA tensors); Delta is a scratch tensor of the call."""
        import torch

        b, h, sq, _, d = self.shape
        delta = torch.empty((b, h, sq), dtype=torch.float32, device=Q.device)
        self.prep(O.reshape(-1, d), dO.reshape(-1, d), delta.reshape(-1))  # rows of O, dO
        self.main(Q, K, V, dO, LSE, delta, dQ, dK, dV)

    def simulate(self, q, k, v, o, do, lse, dq, dk, dv):
        """Run in the simulator (numpy arrays; dq, dk, dv written in place)."""
        import numpy as np

        import tilewise as tw

        d = self.shape[-1]
        delta = np.full(self.shape[:3], np.nan, np.float32)
        reports = [tw.simulate(self.prep, o.reshape(-1, d), do.reshape(-1, d),
                               delta.reshape(-1)),
                   tw.simulate(self.main, q, k, v, do, lse, delta, dq, dk, dv)]
        return reports


@T.inline
def row_stats(LSE, Delta, b, h, q, Sq, lg):
    """(-LSE in log2 units, Delta) of query row ``q`` of head ``h``; zeros past ``Sq``."""
    lv = T.float32(0)
    dv = T.float32(0)
    if q < Sq:
        lv = LSE[b, h, q] * -lg
        dv = Delta[b, h, q]
    return lv, dv


def make_attention_backward(batch: int, heads: int, seq_q: int, seq_k: int, head_dim: int,
                            causal: bool = False, dtype: str = "bfloat16",
                            kv_heads: int | None = None, scale: float | None = None, *,
                            num_sms: int | None = None) -> AttentionBackward:
    """The backward pass of ``make_attention`` with the same arguments (module docstring)."""
    if dtype not in ("bfloat16", "float16"):
        raise config_error(f"make_attention_backward takes bfloat16 or float16, not {dtype!r}")
    if head_dim % 8 or not 8 <= head_dim <= 256:
        raise config_error(f"head_dim={head_dim}: a multiple of 8 from 8 to 256 (TMA's rows are "
                           "16-byte multiples and a gradient tile's width is at most 256)")
    if kv_heads is not None and (kv_heads < 1 or heads % kv_heads):
        raise config_error(f"kv_heads={kv_heads} must divide heads={heads}")
    for name, v in (("batch", batch), ("heads", heads), ("seq_q", seq_q), ("seq_k", seq_k)):
        if not isinstance(v, int) or v < 1:
            raise config_error(f"{name}={v!r} must be a positive int")
    shape = (batch, heads, seq_q, seq_k, head_dim)
    sms = num_sms or runtime.sm_count(default=H200_SMS)
    key = (heads, head_dim, bool(causal), dtype, kv_heads or heads,
           float(scale if scale is not None else 1.0 / math.sqrt(head_dim)), sms)
    if key not in _KERNELS:  # built once per configuration: each compiles once
        _KERNELS[key] = (_make_prep(head_dim, dtype, sms), _make_main(*key))
    prep, main = _KERNELS[key]
    return AttentionBackward(shape, dtype, kv_heads, prep, main)


#: Sizes left symbolic (bound from the arrays at launch): the kernels are built once per
#: (heads, head_dim, causal, dtype, ...) and serve every batch and sequence length.
BATCH, SEQ_Q, SEQ_K, ROWS = T.int32(), T.int32(), T.int32(), T.int32()


_KERNELS: dict = {}


def _make_prep(D: int, dtype: str, sms: int):
    """Delta[r] = sum_d O[r, d] dO[r, d] in float32: a warp per row, lanes over d, then a
    butterfly of shuffles; 4 CTAs of 8 warps per SM stride over the rows."""
    warps = 8
    ctas = 4 * sms
    rows = ROWS

    @T.prim_func
    def attention_bwd_prep(O_ptr: T.handle, dO_ptr: T.handle, Delta_ptr: T.handle):
        O = T.match_buffer(O_ptr, (rows, D), dtype)  # noqa: E741
        dO = T.match_buffer(dO_ptr, (rows, D), dtype)
        Delta = T.match_buffer(Delta_ptr, (rows,), "float32")
        T.device_entry()
        bx = T.cta_id([ctas])
        tid = T.thread_id([warps * 32])
        lane = tid % 32
        for row in range(bx * warps + tid // 32, rows, ctas * warps):
            acc = T.float32(0)
            for d in T.unroll(D // 32):
                acc = acc + T.cast(O[row, d * 32 + lane], "float32") * T.cast(
                    dO[row, d * 32 + lane], "float32")
            if D % 32 != 0 and lane < D % 32:  # the columns past a multiple of 32 (D = 40, 80)
                acc = acc + T.cast(O[row, D // 32 * 32 + lane], "float32") * T.cast(
                    dO[row, D // 32 * 32 + lane], "float32")
            for sh in T.static_range(5):
                acc = acc + T.ptx.shfl_sync("bfly", acc, 1 << sh)
            if lane == 0:
                Delta[row] = acc

    return attention_bwd_prep


def _make_main(H: int, DT: int, causal: bool, dtype: str, Hk: int, scale: float, sms: int):
    D = -(-DT // 16) * 16  # the tiles' head_dim (attention.tile_head_dim): TMA reads columns
    #  DT.. as zeros and drops them on the stores
    b_, Sq, Sk = BATCH, SEQ_Q, SEQ_K
    group = H // Hk
    per_sm = 2 if D <= 128 else 1  # 96 KB of shared memory and 190 registers at D = 128
    ctas = per_sm * sms
    stages = 2
    sl2, lg = scale * LOG2E, LOG2E
    swz = widest_swizzle(D)
    tile = swizzled_tile(B64, D, 16, swz)
    ring = swizzled_tile(B64, D, 16, swz, stages=stages)
    ring_t = ring.permute((0, 2, 1), shape=(stages, B64, D))  # a block viewed (D, 64): Bᵀ
    tile_t = tile.permute((1, 0), shape=(B64, D))
    acc64, accd = wgmma_accumulator(B64), wgmma_accumulator(D)
    rows = wgmma_accumulator_rows()
    # one value per column of a 64 x 64 accumulator: column 8 jj + 2 (lane % 4) + e lives
    # in register 2 jj + e of the 8 lanes (and 4 warps) that share lane % 4
    cols = S[(1, 8, 4, 2):(1, 2, 1 @ laneid, 1)] + R[8:4 @ laneid] + R[4:1 @ wid_in_wg]
    cols = cols.group((1, 64))
    tile_bytes = B64 * D * 2

    @T.prim_func
    def attention_bwd(Q_ptr: T.handle, K_ptr: T.handle, V_ptr: T.handle, dO_ptr: T.handle,
                      LSE_ptr: T.handle, Delta_ptr: T.handle, dQ_ptr: T.handle,
                      dK_ptr: T.handle, dV_ptr: T.handle):
        Q = T.match_buffer(Q_ptr, (b_, H, Sq, DT), dtype)
        K = T.match_buffer(K_ptr, (b_, Hk, Sk, DT), dtype)
        V = T.match_buffer(V_ptr, (b_, Hk, Sk, DT), dtype)
        dO = T.match_buffer(dO_ptr, (b_, H, Sq, DT), dtype)
        LSE = T.match_buffer(LSE_ptr, (b_, H, Sq), "float32")
        Delta = T.match_buffer(Delta_ptr, (b_, H, Sq), "float32")
        dQ = T.match_buffer(dQ_ptr, (b_, H, Sq, DT), dtype)
        dK = T.match_buffer(dK_ptr, (b_, Hk, Sk, DT), dtype)
        dV = T.match_buffer(dV_ptr, (b_, Hk, Sk, DT), dtype)
        T.device_entry()
        bx = T.cta_id([ctas])
        tid = T.thread_id([128])
        lane = tid % 32
        leader = tid == 0
        NQ = (Sq + B64 - 1) // B64
        NK = (Sk + B64 - 1) // B64
        counts = (b_ * H * NQ, b_ * Hk * NK, b_ * Hk * NK)  # dq, dk, dv work items
        # X0, X1: the item's fixed tiles; Y0, Y1: the streamed block, a ring of stages
        X0 = T.alloc_buffer((B64, D), dtype, scope="shared.dyn", layout=tile, align=1024)
        X1 = T.alloc_buffer((B64, D), dtype, scope="shared.dyn", layout=tile, align=1024)
        Y0 = T.alloc_buffer((stages, B64, D), dtype, scope="shared.dyn", layout=ring,
                            align=1024)
        Y1 = T.alloc_buffer((stages, B64, D), dtype, scope="shared.dyn", layout=ring,
                            align=1024)
        Y0t = Y0.view(stages, D, B64, layout=ring_t)
        Y1t = Y1.view(stages, D, B64, layout=ring_t)
        X0t = X0.view(D, B64, layout=tile_t)
        xfull = T.alloc_shared((1,), "uint64")
        yfull = T.alloc_shared((stages,), "uint64")
        if leader:
            T.ptx.mbarrier.init(T.address_of(xfull[0]), 1)
            for s in range(stages):
                T.ptx.mbarrier.init(T.address_of(yfull[s]), 1)
        T.cuda.cta_sync()
        sr = T.alloc_local((B64 // 2,), "float32")
        Sacc = sr.view(64, B64, layout=acc64)  # S (or Sᵀ), then P
        dPacc = T.alloc_local((64, B64), "float32", layout=acc64)  # dP, then dS
        P16 = T.alloc_local((64, B64), dtype, layout=wgmma_a_fragment(B64))
        acc = T.alloc_local((64, D), "float32", layout=accd)  # the gradient tile
        out = T.alloc_local((64, D), dtype, layout=accd)
        lr = T.alloc_local((2,), "float32")  # per row: -LSE log2(e), Delta
        dr = T.alloc_local((2,), "float32")
        lse_r = lr.view(64, 1, layout=rows)
        dl_r = dr.view(64, 1, layout=rows)
        lc = T.alloc_local((16,), "float32")  # per column
        dc = T.alloc_local((16,), "float32")
        lse_c = lc.view(1, 64, layout=cols)
        dl_c = dc.view(1, 64, layout=cols)
        it = 0  # blocks streamed by this CTA (the ring's position)
        xt = 0  # items done (the fixed tiles' phase)
        for kind in T.static_range(3):
            for w in range(bx, counts[kind], ctas):
                # ---- the work item: which (batch, head, 64-row block), how many blocks
                nb = w % (NQ if kind == 0 else NK)
                bh = w // (NQ if kind == 0 else NK)
                b = bh // (H if kind == 0 else Hk)
                h = bh % (H if kind == 0 else Hk)  # the query head (dq), or the kv head
                r0 = nb * B64
                if kind == 0:  # dQ_i: key blocks 0 .. the diagonal
                    first = 0
                    n_inner = T.min(NK, (T.min(r0 + B64, Sk) + B64 - 1) // B64) if causal \
                        else NK
                    count = n_inner
                else:  # dK_j, dV_j: the query blocks (of each head of the group) that see it
                    first = r0 // B64 if causal else 0
                    n_inner = NQ - first
                    count = group * n_inner
                # ---- fixed tiles, then the first streamed block
                if leader:
                    T.ptx.cp_async.bulk.wait_group_read(0)  # the last result tile left X0
                    T.ptx.mbarrier.arrive.expect_tx(T.address_of(xfull[0]),
                                                    (2 if kind != 2 else 1) * tile_bytes)
                    if kind == 0:
                        Tx.thread.copy_async(X0[:, :], Q[b, h, r0:r0 + B64, 0:D],
                                             dispatch="tma", mbar=T.address_of(xfull[0]))
                        Tx.thread.copy_async(X1[:, :], dO[b, h, r0:r0 + B64, 0:D],
                                             dispatch="tma", mbar=T.address_of(xfull[0]))
                    else:
                        Tx.thread.copy_async(X0[:, :], K[b, h, r0:r0 + B64, 0:D],
                                             dispatch="tma", mbar=T.address_of(xfull[0]))
                        if kind == 1:
                            Tx.thread.copy_async(X1[:, :], V[b, h, r0:r0 + B64, 0:D],
                                                 dispatch="tma", mbar=T.address_of(xfull[0]))
                if leader and count > 0:  # (a key block past every query has no work)
                    s = it % stages
                    T.ptx.mbarrier.arrive.expect_tx(T.address_of(yfull[s]), 2 * tile_bytes)
                    if kind == 0:
                        Tx.thread.copy_async(Y0[s, :, :], K[b, h // group, 0:B64, 0:D],
                                             dispatch="tma", mbar=T.address_of(yfull[s]))
                        Tx.thread.copy_async(Y1[s, :, :], V[b, h // group, 0:B64, 0:D],
                                             dispatch="tma", mbar=T.address_of(yfull[s]))
                    else:
                        q0 = first * B64
                        Tx.thread.copy_async(Y0[s, :, :], Q[b, h * group, q0:q0 + B64, 0:D],
                                             dispatch="tma", mbar=T.address_of(yfull[s]))
                        Tx.thread.copy_async(Y1[s, :, :], dO[b, h * group, q0:q0 + B64, 0:D],
                                             dispatch="tma", mbar=T.address_of(yfull[s]))
                if kind == 0:  # LSE (in log2 units) and Delta of this block's 64 rows
                    for i in T.static_range(2):
                        q = r0 + 16 * (tid // 32) + lane // 4 + 8 * i
                        lv, dv = row_stats(LSE, Delta, b, h, q, Sq, lg)
                        lr[i] = lv
                        dr[i] = dv
                Tx.wg.zero(acc)
                T.ptx.mbarrier.try_wait(T.address_of(xfull[0]), xt % 2)
                for u in range(count):
                    s = (it + u) % stages
                    # the block this step multiplies by: key block kb (dq), or query block
                    # qb of query head hq (dk, dv)
                    kb = u
                    hq = h
                    qb = nb
                    if kind != 0:
                        hq = h * group + u // n_inner
                        qb = first + u % n_inner
                        kb = nb
                    if leader and u + 1 < count:  # refill the other stage one block ahead
                        sn = (it + u + 1) % stages
                        T.ptx.mbarrier.arrive.expect_tx(T.address_of(yfull[sn]),
                                                        2 * tile_bytes)
                        if kind == 0:
                            k1 = (u + 1) * B64
                            Tx.thread.copy_async(Y0[sn, :, :], K[b, h // group, k1:k1 + B64, 0:D],
                                                 dispatch="tma", mbar=T.address_of(yfull[sn]))
                            Tx.thread.copy_async(Y1[sn, :, :], V[b, h // group, k1:k1 + B64, 0:D],
                                                 dispatch="tma", mbar=T.address_of(yfull[sn]))
                        else:
                            hn = h * group + (u + 1) // n_inner
                            q1 = (first + (u + 1) % n_inner) * B64
                            Tx.thread.copy_async(Y0[sn, :, :], Q[b, hn, q1:q1 + B64, 0:D],
                                                 dispatch="tma", mbar=T.address_of(yfull[sn]))
                            Tx.thread.copy_async(Y1[sn, :, :], dO[b, hn, q1:q1 + B64, 0:D],
                                                 dispatch="tma", mbar=T.address_of(yfull[sn]))
                    if kind != 0:  # LSE and Delta of the 64 queries: this tile's columns
                        for rr in T.static_range(16):
                            q = qb * B64 + 8 * (rr // 2) + 2 * (lane % 4) + rr % 2
                            lv, dv = row_stats(LSE, Delta, b, hq, q, Sq, lg)
                            lc[rr] = lv
                            dc[rr] = dv
                    T.ptx.mbarrier.try_wait(T.address_of(yfull[s]), (it + u) // stages % 2)
                    T.ptx.wgmma.fence()
                    # S = X0 Y0ᵀ (dq: Q_i K_jᵀ; dk, dv: K_j Q_iᵀ)
                    Tx.wg.gemm_async(Sacc, X0[:, :], Y0t[s, :, :], accum=False)
                    if kind != 2:  # dP = X1 Y1ᵀ (dq: dO_i V_jᵀ; dk: V_j dO_iᵀ)
                        Tx.wg.gemm_async(dPacc, X1[:, :], Y1t[s, :, :], accum=False)
                    T.ptx.wgmma.commit_group()
                    T.ptx.wgmma.wait_group(0)
                    # drop the scores past the ends and (causal) above the diagonal
                    for r in T.static_range(B64 // 2):
                        a = 16 * (tid // 32) + lane // 4 + 8 * (r // 2 % 2)  # fragment row
                        c = 8 * (r // 4) + 2 * (lane % 4) + r % 2  # fragment column
                        qq = r0 + a if kind == 0 else qb * B64 + c
                        kk = kb * B64 + c if kind == 0 else r0 + a
                        drop = (qq >= Sq) | (kk >= Sk)
                        if causal:
                            drop = drop | (kk > qq)
                        sr[r] = T.select(drop, NEG_INF, sr[r])
                    # P = 2^(S scale log2(e) - LSE log2(e)): the forward's softmax again
                    if kind == 0:
                        Tx.wg.fma(Sacc, Sacc, sl2, lse_r)
                    else:
                        Tx.wg.fma(Sacc, Sacc, sl2, lse_c)
                    Tx.wg.exp2(Sacc, Sacc, ftz=True)
                    if kind == 2:
                        Tx.wg.cast(P16, Sacc)  # Pᵀ, the A operand of dV += Pᵀ dO
                    else:  # dS = P (dP - Delta), the A operand of dQ += dS K, dK += dSᵀ Q
                        if kind == 0:
                            Tx.wg.sub(dPacc, dPacc, dl_r)
                        else:
                            Tx.wg.sub(dPacc, dPacc, dl_c)
                        Tx.wg.mul(dPacc, dPacc, Sacc)
                        Tx.wg.cast(P16, dPacc)
                    T.ptx.wgmma.fence()
                    if kind == 2:
                        Tx.wg.gemm_async(acc, P16, Y1[s, :, :], accum=True)
                    else:
                        Tx.wg.gemm_async(acc, P16, Y0[s, :, :], accum=True)
                    T.ptx.wgmma.commit_group()
                    T.ptx.wgmma.wait_group(0)
                    T.ptx.bar.sync(1, 128)  # stage s is read: the leader may refill it
                # ---- the result tile: scale, cast, through X0 to a TMA store
                if kind != 2:
                    Tx.wg.mul(acc, acc, scale)
                Tx.wg.cast(out, acc)
                Tx.wg.copy(X0[:, :], out)
                T.ptx.fence.proxy_async()
                T.ptx.bar.sync(1, 128)
                if leader:
                    if kind == 0:
                        Tx.thread.copy_async(dQ[b, h, r0:r0 + B64, 0:D], X0[:, :], dispatch="tma")
                    elif kind == 1:
                        Tx.thread.copy_async(dK[b, h, r0:r0 + B64, 0:D], X0[:, :], dispatch="tma")
                    else:
                        Tx.thread.copy_async(dV[b, h, r0:r0 + B64, 0:D], X0[:, :], dispatch="tma")
                    T.ptx.cp_async.bulk.commit_group()
                it = it + count
                xt = xt + 1
        if leader:
            T.ptx.cp_async.bulk.wait_group(0)

    return attention_bwd




# ---- `tilewise explain examples/attention_backward.py`: a small causal GQA case ----------
SHAPE = (1, 2, 100, 130, 64)  # batch, heads, seq_q, seq_k, head_dim
_small = make_attention_backward(*SHAPE, causal=True, kv_heads=1, num_sms=H200_SMS)
attention_bwd_prep, attention_bwd = _small.prep, _small.main
TARGET = "sm_90a"
