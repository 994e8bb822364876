"""Cluster kernels: a TMA multicast over a cluster, and a ring of shared -> shared copies
(dsmem) around a cluster. Both run in the simulator (the cluster's CTAs together) and on
the GPU; :func:`multicast_expected` and :func:`ring_expected` are numpy's answers."""

from __future__ import annotations

import numpy as np

from tilewise import T, Tx
from tilewise.layout import TileLayout
from tilewise.layout.builder import S
from tilewise.runner import random_bits


def make_multicast(tiles: int, cluster: int = 2, tm: int = 64, tn: int = 64,
                   dtype: str = "float16"):
    """Clusters of ``cluster`` CTAs; each cluster copies one ``tm x tn`` tile of ``A`` into
    every one of its CTAs: CTA rank r loads rows ``[r*h, (r+1)*h)`` (h = tm / cluster) with
    ``cta_mask`` = all ranks, so each CTA receives every slice. Every CTA then stores the
    tile it holds to ``B[cta]``."""
    h = tm // cluster
    es = np.dtype(np.float16).itemsize if dtype != "float32" else 4
    nbytes = tm * tn * es
    mask = (1 << cluster) - 1
    layout = TileLayout(S[(tm, tn)]).swizzle(128, dtype_bits=8 * es)
    M = T.int32()

    @T.prim_func
    def tma_multicast(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M, tn), dtype)
        B = T.match_buffer(B_ptr, (tiles * cluster, tm, tn), dtype)
        T.device_entry()
        cta = T.cta_id([tiles * cluster])
        rank = T.cta_id_in_cluster([cluster])
        tid = T.thread_id([128])
        Sh = T.alloc_buffer((tm, tn), dtype, scope="shared.dyn", layout=layout)
        bar = T.alloc_shared([1], "uint64")
        r0 = cta // cluster * tm
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
            T.ptx.fence.mbarrier_init()
        T.cuda.cluster_sync()
        if tid == 0:
            T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), nbytes)
        Tx.cta.copy_async(Sh[rank * h:rank * h + h, :], A[r0 + rank * h:r0 + rank * h + h, :],
                          dispatch="tma", mbar=T.address_of(bar[0]), cta_mask=mask)
        T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 0)
        Tx.cta.copy(B[cta, :, :], Sh[:, :])
        T.cuda.cluster_sync()

    return tma_multicast


def multicast_inputs(rng, tiles, cluster=2, tm=64, tn=64, dtype="float16"):
    return [random_bits(rng, (tiles * tm - tm // 2, tn), dtype),
            random_bits(rng, (tiles * cluster, tm, tn), dtype, fill=0xA5)]


def multicast_expected(a, b, cluster=2):
    tiles = b.shape[0] // cluster
    tm = b.shape[1]
    full = np.zeros((tiles * tm,) + a.shape[1:], a.dtype)  # the last tile hangs over: zeros
    full[:a.shape[0]] = a
    out = np.repeat(full.reshape(tiles, tm, -1), cluster, axis=0)
    return [a, out]


def make_ring(cluster: int = 4, n: int = 2048, dtype: str = "float16", fence: bool = True):
    """One cluster; CTA r copies ``A[r]`` into its shared ``src`` with ordinary stores,
    fences them for the copy engine, then copies ``src`` into ``dst`` of CTA ``(r + 1) %
    cluster`` (dsmem), which waits on its own mbarrier and stores ``dst`` to ``B[its
    rank]``: ``B[r] = A[r - 1]``."""
    es = 4 if dtype == "float32" else 2
    nbytes = n * es

    @T.prim_func
    def dsmem_ring(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (cluster, n), dtype)
        B = T.match_buffer(B_ptr, (cluster, n), dtype)
        T.device_entry()
        T.cta_id([cluster])
        rank = T.cta_id_in_cluster([cluster])
        tid = T.thread_id([128])
        src = T.alloc_buffer((n,), dtype, scope="shared.dyn")
        dst = T.alloc_buffer((n,), dtype, scope="shared.dyn")
        bar = T.alloc_shared([1], "uint64")
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
            T.ptx.fence.mbarrier_init()
        Tx.cta.copy(src[:], A[rank, :])
        if fence:
            T.ptx.fence.proxy_async()
        T.cuda.cluster_sync()
        if tid == 0:
            T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), nbytes)
        Tx.cta.copy_async(dst[:], src[:], dispatch="dsmem", mbar=T.address_of(bar[0]),
                          remote_cta_id=(rank + 1) % cluster)
        T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 0)
        Tx.cta.copy(B[rank, :], dst[:])
        T.cuda.cluster_sync()

    return dsmem_ring


def ring_inputs(rng, cluster=4, n=2048, dtype="float16"):
    return [random_bits(rng, (cluster, n), dtype),
            random_bits(rng, (cluster, n), dtype, fill=0xA5)]


def ring_expected(a, b):
    return [a, np.roll(a, 1, axis=0)]
