"""Round trips through shared memory by TMA, for the swizzle x dtype x rank x edge matrix.

Each kernel has a symbolic array ``A`` (2, 3 or 5 dimensions), one CTA per tile: the tile is
loaded by a TMA copy into a (swizzled) shared tile, the shared tile's raw bytes are dumped
to ``R[t]`` (so the placement in shared memory, swizzle included, is checked byte for
byte), and the tile is stored back by a TMA store into ``B``. Arrays that are not a
multiple of the tile leave the last tiles hanging over the edge: the load fills the
missing elements (zeros or NaN), the store skips them. :func:`expected` computes ``B`` and
``R`` with numpy from the tilewise layout alone, independently of the TMA model.
"""

from __future__ import annotations

import math

import numpy as np

from tilewise import T, Tx
from tilewise.layout import TileLayout
from tilewise.layout.builder import S
from tilewise.ptx.tma import NAN_BITS
from tilewise.runner import random_bits

THREADS = 128


def elem_bits(dtype: str) -> int:
    from tilewise.ir.dtype import dtype as tw_dtype

    return tw_dtype(dtype).bits


def shared_layout(tile, dtype: str, swizzle: int, blocked: bool):
    """The shared tile's layout: row-major, or (``blocked``) the inner dimension cut into
    column blocks of one swizzle row each, laid one after another (the layout of wgmma's
    swizzled operands); with the ``swizzle`` applied."""
    bits = elem_bits(dtype)
    inner = tile[-1]
    atom = swizzle * 8 // bits if swizzle else inner
    if blocked and inner > atom:
        outer = math.prod(tile[:-1])
        strides, acc = [], atom
        for e in reversed(tile[:-1]):
            strides.append(acc)
            acc *= e
        ext = tuple(tile[:-1]) + (inner // atom, atom)
        layout = TileLayout(S[ext:tuple(reversed(strides)) + (outer * atom, 1)])
    else:
        layout = TileLayout(S[tuple(tile)])
    return layout.swizzle(swizzle, dtype_bits=bits) if swizzle else layout


def tile_count(shape, tile) -> int:
    return math.prod(-(-n // t) for n, t in zip(shape, tile))


def make_roundtrip(rank: int, dtype: str, swizzle: int, tile, blocked=False, oob="zero"):
    """The round-trip kernel for ``rank``-dimensional arrays."""
    layout = shared_layout(tile, dtype, swizzle, blocked)
    nbytes = math.prod(tile) * elem_bits(dtype) // 8
    return {2: _k2, 3: _k3, 5: _k5}[rank](dtype, tile, layout, nbytes, oob)


def _k2(dtype, tile, layout, nbytes, oob):
    TM, TN = tile
    M, N, NT = T.int32(), T.int32(), T.int32()

    @T.prim_func
    def tma_roundtrip_2d(A_ptr: T.handle, B_ptr: T.handle, R_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M, N), dtype)
        B = T.match_buffer(B_ptr, (M, N), dtype)
        R = T.match_buffer(R_ptr, (NT, nbytes), "uint8")
        T.device_entry()
        t = T.cta_id([NT])
        tid = T.thread_id([THREADS])
        Sh = T.alloc_buffer((TM, TN), dtype, scope="shared.dyn", layout=layout)
        bar = T.alloc_shared([1], "uint64")
        gn = T.ceildiv(N, TN)
        r0 = t // gn * TM
        c0 = t % gn * TN
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
        T.cuda.cta_sync()
        if tid == 0:
            T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), nbytes)
        Tx.cta.copy_async(Sh[:, :], A[r0:r0 + TM, c0:c0 + TN], dispatch="tma",
                          mbar=T.address_of(bar[0]), oob=oob)
        T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 0)
        raw = Sh.view(nbytes, dtype="uint8")
        Tx.cta.copy(R[t, :], raw[:])
        if tid == 0:
            Tx.thread.copy_async(B[r0:r0 + TM, c0:c0 + TN], Sh[:, :], dispatch="tma")
            T.ptx.cp_async.bulk.commit_group()
            T.ptx.cp_async.bulk.wait_group(0)

    return tma_roundtrip_2d


def _k3(dtype, tile, layout, nbytes, oob):
    TD, TM, TN = tile
    D, M, N, NT = T.int32(), T.int32(), T.int32(), T.int32()

    @T.prim_func
    def tma_roundtrip_3d(A_ptr: T.handle, B_ptr: T.handle, R_ptr: T.handle):
        A = T.match_buffer(A_ptr, (D, M, N), dtype)
        B = T.match_buffer(B_ptr, (D, M, N), dtype)
        R = T.match_buffer(R_ptr, (NT, nbytes), "uint8")
        T.device_entry()
        t = T.cta_id([NT])
        tid = T.thread_id([THREADS])
        Sh = T.alloc_buffer((TD, TM, TN), dtype, scope="shared.dyn", layout=layout)
        bar = T.alloc_shared([1], "uint64")
        gn = T.ceildiv(N, TN)
        gm = T.ceildiv(M, TM)
        d0 = t // (gm * gn) * TD
        r0 = t // gn % gm * TM
        c0 = t % gn * TN
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
        T.cuda.cta_sync()
        if tid == 0:
            T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), nbytes)
        Tx.cta.copy_async(Sh[:, :, :], A[d0:d0 + TD, r0:r0 + TM, c0:c0 + TN], dispatch="tma",
                          mbar=T.address_of(bar[0]), oob=oob)
        T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 0)
        raw = Sh.view(nbytes, dtype="uint8")
        Tx.cta.copy(R[t, :], raw[:])
        if tid == 0:
            Tx.thread.copy_async(B[d0:d0 + TD, r0:r0 + TM, c0:c0 + TN], Sh[:, :, :],
                                 dispatch="tma")
            T.ptx.cp_async.bulk.commit_group()
            T.ptx.cp_async.bulk.wait_group(0)

    return tma_roundtrip_3d


def _k5(dtype, tile, layout, nbytes, oob):
    T0, T1, T2, T3, T4 = tile
    D0, D1, D2, D3, D4, NT = (T.int32() for _ in range(6))

    @T.prim_func
    def tma_roundtrip_5d(A_ptr: T.handle, B_ptr: T.handle, R_ptr: T.handle):
        A = T.match_buffer(A_ptr, (D0, D1, D2, D3, D4), dtype)
        B = T.match_buffer(B_ptr, (D0, D1, D2, D3, D4), dtype)
        R = T.match_buffer(R_ptr, (NT, nbytes), "uint8")
        T.device_entry()
        t = T.cta_id([NT])
        tid = T.thread_id([THREADS])
        Sh = T.alloc_buffer((T0, T1, T2, T3, T4), dtype, scope="shared.dyn", layout=layout)
        bar = T.alloc_shared([1], "uint64")
        g4 = T.ceildiv(D4, T4)
        g3 = T.ceildiv(D3, T3)
        g2 = T.ceildiv(D2, T2)
        g1 = T.ceildiv(D1, T1)
        i4 = t % g4 * T4
        i3 = t // g4 % g3 * T3
        i2 = t // (g4 * g3) % g2 * T2
        i1 = t // (g4 * g3 * g2) % g1 * T1
        i0 = t // (g4 * g3 * g2 * g1) * T0
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
        T.cuda.cta_sync()
        if tid == 0:
            T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), nbytes)
        Tx.cta.copy_async(Sh[:, :, :, :, :],
                          A[i0:i0 + T0, i1:i1 + T1, i2:i2 + T2, i3:i3 + T3, i4:i4 + T4],
                          dispatch="tma", mbar=T.address_of(bar[0]), oob=oob)
        T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 0)
        raw = Sh.view(nbytes, dtype="uint8")
        Tx.cta.copy(R[t, :], raw[:])
        if tid == 0:
            Tx.thread.copy_async(B[i0:i0 + T0, i1:i1 + T1, i2:i2 + T2, i3:i3 + T3, i4:i4 + T4],
                                 Sh[:, :, :, :, :], dispatch="tma")
            T.ptx.cp_async.bulk.commit_group()
            T.ptx.cp_async.bulk.wait_group(0)

    return tma_roundtrip_5d


def inputs(rng, shape, tile, dtype):
    """A: random bits; B and R poisoned."""
    nbytes = math.prod(tile) * elem_bits(dtype) // 8
    return [random_bits(rng, shape, dtype), random_bits(rng, shape, dtype, fill=0xA5),
            random_bits(rng, (tile_count(shape, tile), nbytes), "uint8", fill=0xA5)]


def expected(a, tile, dtype, swizzle, blocked=False, oob="zero"):
    """``[A, B, R]`` as the kernel must leave them: B == A, and R[t] the shared tile of tile
    t placed by the tilewise layout (swizzle included), out-of-bounds elements filled."""
    layout = shared_layout(tile, dtype, swizzle, blocked)
    es = elem_bits(dtype) // 8
    grid = [-(-n // t) for n, t in zip(a.shape, tile)]
    coords = np.stack(np.unravel_index(np.arange(math.prod(tile)), tile), axis=1)
    offs = layout.apply_np(coords, shape=tuple(tile))["m"]
    fill = (NAN_BITS[dtype] if oob == "nan" else 0).to_bytes(es, "little")
    raw = a.reshape(-1).view(np.uint8).reshape(-1, es)
    rows = []
    for org in np.stack(np.unravel_index(np.arange(math.prod(grid)), grid), axis=1):
        x = coords + org * np.asarray(tile)
        ok = (x < np.asarray(a.shape)).all(axis=1)
        tile_bytes = np.frombuffer(fill * len(x), np.uint8).reshape(-1, es).copy()
        tile_bytes[ok] = raw[np.ravel_multi_index(tuple(x[ok].T), a.shape)]
        image = np.empty((math.prod(tile), es), np.uint8)
        image[offs] = tile_bytes
        rows.append(image.reshape(-1))
    return [a, a.copy(), np.stack(rows)]


def make_reduce(dtype: str, op: str, shape=(40, 128), tile=(16, 64)):
    """B op= A, tile by tile: a TMA load of A's tile, then a TMA store that reduces it into
    B (``use_tma_reduce``); the last row of tiles hangs over the edge."""
    TM, TN = tile
    M, N = shape
    nbytes = TM * TN * elem_bits(dtype) // 8
    gm, gn = -(-M // TM), -(-N // TN)

    @T.prim_func
    def tma_reduce(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M, N), dtype)
        B = T.match_buffer(B_ptr, (M, N), dtype)
        T.device_entry()
        t = T.cta_id([gm * gn])
        tid = T.thread_id([THREADS])
        Sh = T.alloc_buffer((TM, TN), dtype, scope="shared.dyn")
        bar = T.alloc_shared([1], "uint64")
        r0 = t // gn * TM
        c0 = t % gn * TN
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
        T.cuda.cta_sync()
        if tid == 0:
            T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), nbytes)
        Tx.cta.copy_async(Sh[:, :], A[r0:r0 + TM, c0:c0 + TN], dispatch="tma",
                          mbar=T.address_of(bar[0]))
        T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 0)
        if tid == 0:
            Tx.thread.copy_async(B[r0:r0 + TM, c0:c0 + TN], Sh[:, :], dispatch="tma",
                                 use_tma_reduce=op)
            T.ptx.cp_async.bulk.commit_group()
            T.ptx.cp_async.bulk.wait_group(0)

    return tma_reduce


def reduce_inputs(rng, dtype, shape=(40, 128)):
    from tilewise.ir.dtype import dtype as tw_dtype

    t = tw_dtype(dtype)
    if t.is_float:  # finite values whose sums stay finite
        vals = (rng.standard_normal((2,) + shape) * 8).astype(np.float32)
        return [v.astype(t.numpy()) for v in vals]
    return [rng.integers(-1000, 1000, shape).astype(t.numpy()) for _ in range(2)]


def reduce_expected(a, b, op):
    """numpy's answer, in the element type's own arithmetic (float sums rounded once)."""
    if op == "add":
        wide = np.float64 if a.dtype.kind == "f" or a.dtype.name == "bfloat16" else a.dtype
        out = (a.astype(wide) + b.astype(wide)).astype(a.dtype)
    else:
        out = (np.minimum if op == "min" else np.maximum)(a, b)
    return [a, out]


def make_staged_k_loop(BM=64, BK=64, stages=3, dtype="bfloat16"):
    """The shape of a GEMM's producer loop: ``A[m0:m0 + BM, k0:k0 + BK]`` tiles of a symbolic
    ``M x K`` array stream through a ring of ``stages`` 128B-swizzled shared tiles
    (``A_smem[s, :, :]``, ``s = k % stages``, parity ``k // stages % 2``); each tile, once its
    mbarrier phase completes, is stored to ``B`` at the same place by a TMA store, and its
    buffer is refilled ``stages`` steps ahead."""
    M, K = T.int32(), T.int32()
    nbytes = BM * BK * elem_bits(dtype) // 8
    layout = TileLayout(S[(stages, BM, BK)]).swizzle(128, dtype_bits=elem_bits(dtype))

    @T.prim_func
    def staged_k_loop(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M, K), dtype)
        B = T.match_buffer(B_ptr, (M, K), dtype)
        T.device_entry()
        bm = T.cta_id([T.ceildiv(M, BM)])
        tid = T.thread_id([THREADS])
        A_smem = T.alloc_buffer((stages, BM, BK), dtype, scope="shared.dyn", layout=layout)
        bar = T.alloc_shared([stages], "uint64")
        m0 = bm * BM
        nk = T.ceildiv(K, BK)
        if tid == 0:
            for s in T.static_range(stages):
                T.ptx.mbarrier.init(T.address_of(bar[s]), 1)
        T.cuda.cta_sync()
        if tid == 0:
            for s in T.static_range(stages):
                if s < nk:
                    T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[s]), nbytes)
                    Tx.thread.copy_async(A_smem[s, :, :], A[m0:m0 + BM, s * BK:s * BK + BK],
                                         dispatch="tma", mbar=T.address_of(bar[s]))
        for k in range(nk):
            s = k % stages
            T.ptx.mbarrier.wait_parity(T.address_of(bar[s]), k // stages % 2)
            if tid == 0:
                Tx.thread.copy_async(B[m0:m0 + BM, k * BK:k * BK + BK], A_smem[s, :, :],
                                     dispatch="tma")
                T.ptx.cp_async.bulk.commit_group()
                T.ptx.cp_async.bulk.wait_group_read(0)
                if k + stages < nk:
                    T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[s]), nbytes)
                    Tx.thread.copy_async(A_smem[s, :, :],
                                         A[m0:m0 + BM, (k + stages) * BK:(k + stages) * BK + BK],
                                         dispatch="tma", mbar=T.address_of(bar[s]))
            T.cuda.cta_sync()
        if tid == 0:
            T.ptx.cp_async.bulk.wait_group(0)

    return staged_k_loop
