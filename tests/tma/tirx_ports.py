"""TIRx's TMA test programs (apache/tvm, tests/python/tirx/operator/tile_primitive/cuda/
copy_async/test_tma.py) written in tilewise. The changes are spelling only:

* ``mbarrier.ptr_to([0])`` / ``T.meta_var(...)`` -> ``T.address_of(bar[0])``;
* a buffer declared over ``dyn.data`` with ``T.decl_buffer(..., layout=)`` -> an allocation
  ``T.alloc_buffer(..., scope="shared.dyn", layout=)`` (and the mbarrier its own allocation);
* TIRx's ``ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(...))`` -> ``TileLayout(...)
  .swizzle(128, dtype_bits=16)``; ``mma_shared_layout`` -> :func:`mma_shared_layout`
  below (128-byte swizzle atoms of 8 rows, the column blocks one after another);
* ``Tx.copy_async`` (thread scope) -> ``Tx.thread.copy_async``, ``Tx.copy`` (CTA) ->
  ``Tx.cta.copy``; ``T.thread_id_in_wg`` -> ``T.thread_id``;
* ``Q_smem.view(...)`` keeps no layout in tilewise: the view names its layout;
* a per-thread copy between shared memory and a register array (``Tx.copy(reg[:],
  sm[tid, :])``, which tilewise's copy variants do not take without a thread layout) is
  written as its element loop.

One fix: the three-stage pipeline reloads the tile that every thread just read, so it
needs a barrier before the next load (a write-after-read race in the original).
"""

from __future__ import annotations

import numpy as np

from tilewise import T, Tx
from tilewise.layout import TileLayout
from tilewise.layout.builder import S
from tilewise.runner import random_bits


def mma_shared_layout(dtype: str, swizzle_len: int, shape) -> TileLayout:
    """TIRx's swizzled operand layout: ``2**swizzle_len * 16``-byte swizzle rows; the last
    dimension cut into column blocks of one row each, the blocks of each leading index one
    after another."""
    bits = {"float16": 16, "bfloat16": 16, "float32": 32, "int8": 8}[dtype]
    swz = (1 << swizzle_len) * 16 if swizzle_len else 0
    *lead, rows, cols = shape
    atom = swz * 8 // bits if swz else cols
    nb = cols // atom
    strides, acc = [], rows * cols
    for e in reversed(lead):
        strides.append(acc)
        acc *= e
    layout = TileLayout(S[tuple(lead) + (rows, nb, atom):
                          tuple(reversed(strides)) + (atom, rows * atom, 1)])
    return layout.swizzle(swz, dtype_bits=bits) if swz else layout


# ---------------------------------------------------------------- g2s 2-D, 8 x 256
def g2s_2d_basic(dtype="float16"):
    g_shape, s_shape = (8, 256), (8, 256)
    total_bytes = 8 * 256 * 2
    layout = mma_shared_layout(dtype, 3, s_shape)

    @T.prim_func
    def copy_async(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, g_shape, dtype)
        B = T.match_buffer(B_ptr, g_shape, dtype)
        T.device_entry()
        T.cta_id([1])
        tid = T.thread_id([8])
        A_smem = T.alloc_buffer(s_shape, dtype, scope="shared.dyn", layout=layout)
        mbarrier = T.alloc_buffer([1], "uint64", scope="shared.dyn")
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(mbarrier[0]), 1)
        T.ptx.fence.proxy_async("shared::cta")
        T.cuda.cta_sync()
        if tid == 0:
            Tx.thread.copy_async(A_smem[0:8, 0:256], A[0:8, 0:256], dispatch="tma",
                                 mbar=T.address_of(mbarrier[0]))
            T.ptx.mbarrier.arrive.expect_tx(T.address_of(mbarrier[0]), total_bytes)
        T.ptx.mbarrier.try_wait(T.address_of(mbarrier[0]), 0)
        T.cuda.cta_sync()
        Tx.cta.copy(B[0:8, 0:256], A_smem[0:8, 0:256])

    return copy_async, [g_shape, g_shape], lambda a, b: [a, a.copy()]


# ---------------------------------------------------------------- g2s 3-stage pipeline
def g2s_3d_pipeline(dtype="float16"):
    g_shape, s_shape = (3, 8, 256), (8, 256)
    n = g_shape[0]
    smem_bytes = 8 * 256 * 2
    layout = mma_shared_layout(dtype, 3, s_shape)

    @T.prim_func
    def copy_async(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, g_shape, dtype)
        B = T.match_buffer(B_ptr, g_shape, dtype)
        T.device_entry()
        T.cta_id([1])
        tid = T.thread_id([8])
        A_smem = T.alloc_buffer(s_shape, dtype, scope="shared.dyn", layout=layout)
        mbarrier = T.alloc_buffer([1], "uint64", scope="shared.dyn")
        phase: T.int32 = 0
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(mbarrier[0]), 1)
        T.ptx.fence.proxy_async("shared::cta")
        T.cuda.cta_sync()
        for stage in range(n):
            if tid == 0:
                Tx.thread.copy_async(A_smem[0:8, 0:256], A[stage:stage + 1, 0:8, 0:256],
                                     dispatch="tma", mbar=T.address_of(mbarrier[0]))
                T.ptx.mbarrier.arrive.expect_tx(T.address_of(mbarrier[0]), smem_bytes)
            T.ptx.mbarrier.try_wait(T.address_of(mbarrier[0]), phase)
            phase = phase ^ 1
            T.ptx.fence.proxy_async("shared::cta")
            T.cuda.cta_sync()
            Tx.cta.copy(B[stage:stage + 1, 0:8, 0:256], A_smem[0:8, 0:256])
            T.cuda.cta_sync()  # the fix: every thread has read the tile before the next load

    return copy_async, [g_shape, g_shape], lambda a, b: [a, a.copy()]


# ---------------------------------------------------------------- g2s 4-D with unit dims
def g2s_4d_unit_dims(dtype="float16"):
    g_shape, s_shape = (2, 2, 128, 64), (128, 64)
    total_bytes = 128 * 64 * 2
    layout = mma_shared_layout(dtype, 3, s_shape)

    @T.prim_func
    def copy_async(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, g_shape, dtype)
        B = T.match_buffer(B_ptr, g_shape, dtype)
        T.device_entry()
        T.cta_id([1])
        tid = T.thread_id([128])
        A_smem = T.alloc_buffer(s_shape, dtype, scope="shared.dyn", layout=layout)
        mbarrier = T.alloc_buffer([1], "uint64", scope="shared.dyn")
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(mbarrier[0]), 1)
        T.ptx.fence.proxy_async("shared::cta")
        T.cuda.cta_sync()
        if tid == 0:
            Tx.thread.copy_async(A_smem[0:128, 0:64], A[0:1, 0:1, 0:128, 0:64], dispatch="tma",
                                 mbar=T.address_of(mbarrier[0]))
            T.ptx.mbarrier.arrive.expect_tx(T.address_of(mbarrier[0]), total_bytes)
        T.ptx.mbarrier.try_wait(T.address_of(mbarrier[0]), 0)
        T.cuda.cta_sync()
        Tx.cta.copy(B[0:1, 0:1, 0:128, 0:64], A_smem[0:128, 0:64])

    def reference(a, b):
        out = b.copy()
        out[0, 0] = a[0, 0]
        return [a, out]

    return copy_async, [g_shape, g_shape], reference


# ---------------------------------------------------------------- s2g stores, per stage
def s2g_stores(dtype="float16"):
    g_shape, s_shape = (3, 8, 256), (8, 256)
    n = g_shape[0]
    layout = mma_shared_layout(dtype, 3, s_shape)

    @T.prim_func
    def copy_async(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, g_shape, dtype)
        B = T.match_buffer(B_ptr, g_shape, dtype)
        T.device_entry()
        T.cta_id([1])
        tid = T.thread_id([8])
        A_smem = T.alloc_buffer(s_shape, dtype, scope="shared.dyn", layout=layout)
        for stage in range(n):
            Tx.cta.copy(A_smem[0:8, 0:256], A[stage:stage + 1, 0:8, 0:256])
            T.ptx.fence.proxy_async("shared::cta")
            T.cuda.cta_sync()
            if tid == 0:
                Tx.thread.copy_async(B[stage:stage + 1, 0:8, 0:256], A_smem[0:8, 0:256],
                                     dispatch="tma")
                T.ptx.cp_async.bulk.commit_group()
                T.ptx.cp_async.bulk.wait_group(0)
            T.cuda.cta_sync()

    return copy_async, [g_shape, g_shape], lambda a, b: [a, a.copy()]


# ---------------------------------------------------------------- symbolic dimension
def symbolic_dimension(dtype="float16", m_concrete=128):
    K, BLK_M, BLK_K, DEPTH = 256, 64, 64, 2
    copy_bytes = BLK_M * BLK_K * 2
    layout = TileLayout(S[(DEPTH, BLK_M, BLK_K):(BLK_M * BLK_K, BLK_K, 1)]).swizzle(
        128, dtype_bits=16)
    M = T.int32()

    @T.prim_func
    def copy_async(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, [M, K], dtype)
        B = T.match_buffer(B_ptr, [DEPTH, BLK_M, BLK_K], dtype)
        T.device_entry()
        T.cta_id([1])
        tid = T.thread_id([128])
        A_smem = T.alloc_buffer([DEPTH, BLK_M, BLK_K], dtype, scope="shared.dyn",
                                layout=layout)
        mbarrier = T.alloc_buffer([1], "uint64", scope="shared.dyn")
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(mbarrier[0]), 1)
        T.ptx.fence.proxy_async("shared::cta")
        T.cuda.cta_sync()
        for ks in range(DEPTH):
            if tid == 0:
                Tx.thread.copy_async(A_smem[ks, :, :], A[0:BLK_M, ks * BLK_K:(ks + 1) * BLK_K],
                                     dispatch="tma", mbar=T.address_of(mbarrier[0]))
                T.ptx.mbarrier.arrive.expect_tx(T.address_of(mbarrier[0]), copy_bytes)
            T.ptx.mbarrier.try_wait(T.address_of(mbarrier[0]), ks % 2)
        T.ptx.fence.proxy_async("shared::cta")
        T.cuda.cta_sync()
        for ks in range(DEPTH):
            Tx.cta.copy(B[ks, :, :], A_smem[ks, :, :])

    def reference(a, b):
        out = np.stack([a[0:BLK_M, k * BLK_K:(k + 1) * BLK_K] for k in range(DEPTH)])
        return [a, out]

    return copy_async, [(m_concrete, K), (DEPTH, BLK_M, BLK_K)], reference


# ---------------------------------------------------------------- a 3-D view, one TMA copy
def view_3d_one_copy(dtype="float16"):
    copy_bytes = 32 * 4 * 64 * 2
    base = TileLayout(S[(2, 2, 128, 64)]).swizzle(128, dtype_bits=16)
    view_layout = TileLayout(S[(2, 2, 32, 4, 64)]).swizzle(128, dtype_bits=16)

    @T.prim_func
    def copy_async(Q_ptr: T.handle, B_ptr: T.handle):
        Q = T.match_buffer(Q_ptr, (2, 128, 8, 128), dtype)
        B = T.match_buffer(B_ptr, (32, 4, 64), dtype)
        T.device_entry()
        T.cta_id([1])
        tid = T.thread_id([128])
        Q_smem = T.alloc_buffer((2, 2, 128, 64), dtype, scope="shared.dyn", layout=base)
        mbarrier = T.alloc_buffer([1], "uint64", scope="shared.dyn")
        Q_smem_5d = Q_smem.view(2, 2, 32, 4, 64, layout=view_layout)
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(mbarrier[0]), 1)
        T.ptx.fence.proxy_async("shared::cta")
        T.cuda.cta_sync()
        if tid == 0:
            Tx.thread.copy_async(Q_smem_5d[0, 0, :, :, :], Q[0, 0:32, 0:4, 0:64],
                                 dispatch="tma", mbar=T.address_of(mbarrier[0]))
            T.ptx.mbarrier.arrive.expect_tx(T.address_of(mbarrier[0]), copy_bytes)
        T.ptx.mbarrier.try_wait(T.address_of(mbarrier[0]), 0)
        T.ptx.fence.proxy_async("shared::cta")
        T.cuda.cta_sync()
        Tx.cta.copy(B[:, :, :], Q_smem_5d[0, 0, :, :, :])

    return copy_async, [(2, 128, 8, 128), (32, 4, 64)], \
        lambda q, b: [q, q[0, 0:32, 0:4, 0:64].copy()]


# ---------------------------------------------------------------- a uint32 slice base
def uint32_slice_base(dtype="float16", offset=1000):
    BK = 64
    layout = mma_shared_layout(dtype, 3, (128, BK))

    @T.prim_func
    def tma_off(off: T.uint32, a_ptr: T.handle, o_ptr: T.handle):
        A = T.match_buffer(a_ptr, (4096, BK), dtype)
        Out = T.match_buffer(o_ptr, (128, BK), dtype)
        T.device_entry()
        T.warp_id([4])
        T.cta_id([1])
        T.warpgroup_id([1])
        tid = T.thread_id([128])
        sm = T.alloc_buffer((128, BK), dtype, scope="shared", layout=layout)
        mb = T.alloc_shared([1], "uint64")
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(mb[0]), 1)
        T.ptx.fence.proxy_async("shared::cta")
        T.cuda.cta_sync()
        if tid == 0:
            Tx.thread.copy_async(sm[:, :], A[off:off + 128, 0:BK], dispatch="tma",
                                 mbar=T.address_of(mb[0]))
            T.ptx.mbarrier.arrive.expect_tx(T.address_of(mb[0]), 128 * BK * 2)
        T.ptx.mbarrier.try_wait(T.address_of(mb[0]), 0)
        T.cuda.cta_sync()
        reg = T.alloc_local(BK, dtype)
        for j in range(BK):  # Tx.copy(reg[:], sm[tid, 0:BK])
            reg[j] = sm[tid, j]
        for j in range(BK):  # Tx.copy(Out[tid, 0:BK], reg[:])
            Out[tid, j] = reg[j]

    return tma_off, [(4096, BK), (128, BK)], \
        lambda a, o: [a, a[offset:offset + 128].copy()], offset


PORTS = {"g2s-2d-basic": g2s_2d_basic, "g2s-3d-pipeline": g2s_3d_pipeline,
         "g2s-4d-unit-dims": g2s_4d_unit_dims, "s2g-stores": s2g_stores,
         "symbolic-dimension": symbolic_dimension, "view-3d-one-copy": view_3d_one_copy,
         "uint32-slice-base": uint32_slice_base}


def port(name, dtype="float16"):
    """``(kernel, arguments, reference)`` of port ``name``: random inputs, poisoned
    outputs, scalar parameters first where the kernel takes them."""
    made = PORTS[name](dtype)
    func, shapes, reference = made[:3]
    scalars = list(made[3:])
    rng = np.random.default_rng(21)
    arrays = [random_bits(rng, shapes[0], dtype), random_bits(rng, shapes[1], dtype, fill=0xA5)]
    return func, scalars, arrays, reference
