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


def make_ws_multicast(iters: int = 5, stages: int = 2, cluster: int = 2, tm: int = 64,
                      tn: int = 64, dtype: str = "float16"):
    """A GEMM's operand feed over a cluster, warp-specialised: in every CTA one producer
    thread (warpgroup 1) loads its ``tm / cluster`` rows of tile ``k`` with ``cta_mask`` =
    all ranks into a ring of ``stages`` 128B-swizzled slots, so each CTA's slot fills from
    every producer of the cluster (``full[s]``: one local arrive + the tile's bytes). The
    consumer warpgroup waits on ``full[s]``, stores the tile to ``B[rank, k]`` and frees
    the slot in *every* CTA (a remote arrive on each ``empty[s]``), since each producer
    writes into all of them. ``B[r, k] = A[k]`` for every rank r."""
    h = tm // cluster
    es = 4 if dtype == "float32" else 2
    nbytes = tm * tn * es
    mask = (1 << cluster) - 1
    per = tm * tn // 128
    layout = TileLayout(S[(stages, tm, tn)]).swizzle(128, dtype_bits=8 * es)

    @T.prim_func
    def ws_multicast(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (iters * tm, tn), dtype)
        B = T.match_buffer(B_ptr, (cluster, iters * tm, tn), dtype)
        T.device_entry()
        T.cta_id([cluster])
        rank = T.cta_id_in_cluster([cluster])
        tid = T.thread_id([256])
        Sh = T.alloc_buffer((stages, tm, tn), dtype, scope="shared.dyn", layout=layout)
        full = T.alloc_shared([stages], "uint64")
        empty = T.alloc_shared([stages], "uint64")
        if tid == 0:
            for s in T.static_range(stages):
                T.ptx.mbarrier.init(T.address_of(full[s]), 1)
                T.ptx.mbarrier.init(T.address_of(empty[s]), 128 * cluster)
            T.ptx.fence.mbarrier_init()
        T.cuda.cluster_sync()
        if tid >= 128:  # producer warpgroup: one thread issues
            if tid == 128:
                for k in range(iters):
                    s = k % stages
                    T.ptx.mbarrier.try_wait(T.address_of(empty[s]), (k // stages + 1) % 2)
                    T.ptx.mbarrier.arrive.expect_tx(T.address_of(full[s]), nbytes)
                    Tx.thread.copy_async(Sh[s, rank * h:rank * h + h, :],
                                         A[k * tm + rank * h:k * tm + rank * h + h, :],
                                         dispatch="tma", mbar=T.address_of(full[s]),
                                         cta_mask=mask)
        else:  # consumer warpgroup
            for k in range(iters):
                s = k % stages
                T.ptx.mbarrier.try_wait(T.address_of(full[s]), k // stages % 2)
                for i in range(per):
                    e = i * 128 + tid
                    B[rank, k * tm + e // tn, e % tn] = Sh[s, e // tn, e % tn]
                for r in T.static_range(cluster):
                    T.ptx.mbarrier.arrive.expect_tx(T.address_of(empty[s]), 0, remote=r)
        T.cuda.cluster_sync()

    return ws_multicast


def ws_multicast_inputs(rng, iters=5, cluster=2, tm=64, tn=64, dtype="float16"):
    return [random_bits(rng, (iters * tm, tn), dtype),
            random_bits(rng, (cluster, iters * tm, tn), dtype, fill=0xA5)]


def ws_multicast_expected(a, b):
    return [a, np.broadcast_to(a, b.shape).copy()]
