"""Tutorial step 5: a FlashAttention forward, the teaching form (docs/tutorial.md).

O = softmax(Q K^T / sqrt(d)) V per batch and head, Q, K, V, O (batch, heads, seq, 64)
bfloat16, as ``torch.nn.functional.scaled_dot_product_attention`` computes it. Each CTA is
one warpgroup and owns 64 rows of Q; it walks K and V in blocks of 64 rows and never
stores the (seq x seq) score matrix: the softmax is computed *online* (FlashAttention).
Per block ``j``:

1. TMA brings K_j and V_j into shared memory (one mbarrier, as in step 4).
2. ``S = Q K_j^T`` by wgmma. K_j is stored row-major (a row per key); K_j^T is the same
   bytes read column-major: a *view* of the tile with a transposed layout, which wgmma
   reads as a K-major B operand.
3. The online softmax, on S where it lies in the accumulator's registers. Each row's
   values are spread over the four lanes of a quad and two registers, so a row reduction
   needs a per-row layout: ``wgmma_accumulator_rows()`` (one value per row, held by the
   lanes of the row). ``m`` is the running row maximum and ``l`` the running row sum::

       m_new = max(m, rowmax(S));  alpha = e^(m - m_new)
       P = e^(S - m_new);  l = l * alpha + rowsum(P);  O = O * alpha;  m = m_new

4. ``O += P V_j`` by wgmma. wgmma takes A from shared memory here, so P (cast to bfloat16)
   goes through a shared tile, fenced for the async proxy (``fence.proxy.async``: the
   tensor cores read shared memory through the async proxy, the stores came through the
   generic one). examples/attention.py keeps P in registers (wgmma with A from registers)
   and overlaps the two GEMMs with the softmax: the fast form.

At the end ``O / l`` is cast and stored.
"""

import math

import numpy as np

from tilewise import T, Tx
from tilewise.layout import (S, TileLayout, swizzled_tile, wgmma_accumulator,
                             wgmma_accumulator_rows)

TARGET = "sm_90a"
BM, BN, D = 64, 64, 64  # rows of Q per CTA, rows of K / V per block, the head dimension


def make_attention(batch: int, heads: int, seq: int, head_dim: int = D):
    """``k(Q, K, V, O)`` for (batch, heads, seq, 64) bfloat16 tensors, ``seq`` a multiple
    of 64 (the tutorial's kernel: no causal mask, one head dimension)."""
    if head_dim != D or seq % BN:
        raise ValueError(f"head_dim={head_dim}, seq={seq}: the tutorial's kernel takes "
                         f"head_dim {D} and seq a multiple of {BN}")
    scale = 1.0 / math.sqrt(D)
    kv_bytes = 2 * BN * D * 2  # K_j and V_j, bfloat16
    qkv = (batch, heads, seq, D)
    kt_layout = TileLayout(S[(D, BN):(1, D)]).swizzle(128, dtype_bits=16)  # K_j^T

    @T.prim_func
    def attention(Q_ptr: T.handle, K_ptr: T.handle, V_ptr: T.handle, O_ptr: T.handle):
        Q = T.match_buffer(Q_ptr, qkv, "bfloat16")
        K = T.match_buffer(K_ptr, qkv, "bfloat16")
        V = T.match_buffer(V_ptr, qkv, "bfloat16")
        O = T.match_buffer(O_ptr, qkv, "bfloat16")  # noqa: E741 (the output, as in the paper)
        T.device_entry()
        mb, h, b = T.cta_id([seq // BM, heads, batch])
        tid = T.thread_id([128])
        m0 = mb * BM
        Qs = T.alloc_shared((BM, D), "bfloat16", layout=swizzled_tile(BM, D), align=1024)
        Ks = T.alloc_shared((BN, D), "bfloat16", layout=swizzled_tile(BN, D), align=1024)
        Vs = T.alloc_shared((BN, D), "bfloat16", layout=swizzled_tile(BN, D), align=1024)
        Ps = T.alloc_shared((BM, BN), "bfloat16", layout=swizzled_tile(BM, BN), align=1024)
        KsT = Ks.view(D, BN, layout=kt_layout)  # the same bytes as K_j^T
        bar = T.alloc_shared((2,), "uint64")  # 0: Q, 1: K_j and V_j
        s = T.alloc_local((BM, BN), "float32", layout=wgmma_accumulator(BN))
        p = T.alloc_local((BM, BN), "bfloat16", layout=wgmma_accumulator(BN))
        o = T.alloc_local((BM, D), "float32", layout=wgmma_accumulator(D))
        m = T.alloc_local((BM, 1), "float32", layout=wgmma_accumulator_rows())
        m_new = T.alloc_local((BM, 1), "float32", layout=wgmma_accumulator_rows())
        alpha = T.alloc_local((BM, 1), "float32", layout=wgmma_accumulator_rows())
        lsum = T.alloc_local((BM, 1), "float32", layout=wgmma_accumulator_rows())
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
            T.ptx.mbarrier.init(T.address_of(bar[1]), 1)
        T.cuda.cta_sync()
        if tid == 0:
            T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), BM * D * 2)
            Tx.thread.copy_async(Qs[:, :], Q[b, h, m0:m0 + BM, :], dispatch="tma",
                                 mbar=T.address_of(bar[0]))
        Tx.wg.fill(m[:, :], -math.inf)
        Tx.wg.zero(lsum[:, :])
        Tx.wg.zero(o[:, :])
        T.ptx.mbarrier.try_wait(T.address_of(bar[0]), 0)
        for j in range(seq // BN):
            n0 = j * BN
            if tid == 0:  # 1. K_j and V_j
                T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[1]), kv_bytes)
                Tx.thread.copy_async(Ks[:, :], K[b, h, n0:n0 + BN, :], dispatch="tma",
                                     mbar=T.address_of(bar[1]))
                Tx.thread.copy_async(Vs[:, :], V[b, h, n0:n0 + BN, :], dispatch="tma",
                                     mbar=T.address_of(bar[1]))
            T.ptx.mbarrier.try_wait(T.address_of(bar[1]), j % 2)
            T.ptx.wgmma.fence()  # 2. S = Q K_j^T
            Tx.wg.gemm_async(s[:, :], Qs[:, :], KsT[:, :])
            T.ptx.wgmma.commit_group()
            T.ptx.wgmma.wait_group(0)
            Tx.wg.mul(s[:, :], s[:, :], scale)  # 3. the online softmax
            Tx.wg.max(m_new[:, :], s[:, :], axes=-1)
            Tx.wg.maximum(m_new[:, :], m_new[:, :], m[:, :])
            Tx.wg.sub(alpha[:, :], m[:, :], m_new[:, :])
            Tx.wg.exp(alpha[:, :])
            Tx.wg.sub(s[:, :], s[:, :], m_new[:, :])
            Tx.wg.exp(s[:, :])
            Tx.wg.mul(lsum[:, :], lsum[:, :], alpha[:, :])
            Tx.wg.sum(lsum[:, :], s[:, :], axes=-1, accum=True)
            Tx.wg.mul(o[:, :], o[:, :], alpha[:, :])
            Tx.wg.maximum(m[:, :], m[:, :], m_new[:, :])  # m = m_new (the larger)
            Tx.wg.cast(p[:, :], s[:, :])  # 4. O += P V_j, P through shared memory
            Tx.wg.copy(Ps[:, :], p[:, :])
            T.ptx.fence.proxy_async()
            T.cuda.cta_sync()
            T.ptx.wgmma.fence()
            Tx.wg.gemm_async(o[:, :], Ps[:, :], Vs[:, :], accum=True)
            T.ptx.wgmma.commit_group()
            T.ptx.wgmma.wait_group(0)
            T.cuda.cta_sync()  # K_j, V_j and P are free for the next block
        Tx.wg.reciprocal(lsum[:, :])
        Tx.wg.mul(o[:, :], o[:, :], lsum[:, :])
        out = T.alloc_local((BM, D), "bfloat16", layout=wgmma_accumulator(D))
        Tx.wg.cast(out[:, :], o[:, :])
        Tx.wg.copy(O[b, h, m0:m0 + BM, :], out[:, :])

    return attention


SHAPE = (1, 2, 128)  # batch, heads, seq
attention = make_attention(*SHAPE)
RTOL = 2.0 ** -6  # P rounded to bfloat16 (2^-8) before P V, O rounded once more
ATOL = 2.0 ** -8


def inputs(rng, shape=SHAPE):
    import ml_dtypes

    b, h, n = shape
    bf16 = ml_dtypes.bfloat16
    q, k, v = (rng.standard_normal((b, h, n, D)).astype(bf16) for _ in range(3))
    return [q, k, v, np.full((b, h, n, D), np.nan, bf16)]


def reference(q, k, v, o):
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    s = q64 @ np.swapaxes(k64, -1, -2) / math.sqrt(D)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return [q, k, v, ((e / e.sum(axis=-1, keepdims=True)) @ v64).astype(o.dtype)]
