"""Kernels for the seed's "how inputs change the algorithm" table and its errors.
Line numbers matter: test_errors.py looks them up by the marker comments."""

from tilewise import T, Tx
from tilewise.layout import S, TileLayout


@T.prim_func
def f32_aligned(a_ptr: T.handle):
    A = T.match_buffer(a_ptr, (128, 32), "float32")
    T.device_entry()
    tid = T.thread_id([128])
    A_smem = T.alloc_shared((128, 32), "float32")
    Tx.cta.copy_async(A_smem[:, :], A[:, :])


@T.prim_func
def f16_align8(a_ptr: T.handle):
    A = T.match_buffer(a_ptr, (128, 36), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    A_smem = T.alloc_shared((128, 32), "float16")
    Tx.cta.copy_async(A_smem[:, :], A[0:128, 4:36])


@T.prim_func
def f16_align4(a_ptr: T.handle):
    A = T.match_buffer(a_ptr, (128, 34), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    A_smem = T.alloc_shared((128, 32), "float16")
    Tx.cta.copy_async(A_smem[:, :], A[0:128, 2:34])


@T.prim_func
def f16_align2(a_ptr: T.handle):
    A = T.match_buffer(a_ptr, (128, 34), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    A_smem = T.alloc_shared((128, 32), "float16")
    Tx.cta.copy_async(A_smem[:, :], A[0:128, 1:33])  # ERR align2


@T.prim_func
def smem_to_gmem(a_ptr: T.handle):
    A = T.match_buffer(a_ptr, (128, 32), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    A_smem = T.alloc_shared((128, 32), "float16")
    Tx.cta.copy_async(A[:, :], A_smem[:, :])  # ERR direction


@T.prim_func
def partial_warp(a_ptr: T.handle):
    A = T.match_buffer(a_ptr, (4, 256), "float16")
    T.device_entry()
    warp_id = T.warp_id([4])
    lane_id = T.lane_id([32])
    tid = T.thread_id([128])
    A_smem = T.alloc_shared((4, 256), "float16")
    if lane_id < 16:
        Tx.warp.copy_async(A_smem[warp_id, :], A[warp_id, :])  # ERR partial


@T.prim_func
def not_divisible(a_ptr: T.handle):
    A = T.match_buffer(a_ptr, (10, 10), "float32")
    T.device_entry()
    tid = T.thread_id([128])
    A_smem = T.alloc_shared((10, 10), "float32")
    Tx.cta.copy_async(A_smem[:, :], A[:, :])  # ERR divisible


@T.prim_func
def per_warp(a_ptr: T.handle):
    A = T.match_buffer(a_ptr, (4, 256), "float16")
    T.device_entry()
    warp_id = T.warp_id([4])
    lane_id = T.lane_id([32])
    tid = T.thread_id([128])
    A_smem = T.alloc_shared((4, 256), "float16")
    if warp_id < 2:
        Tx.warp.copy_async(A_smem[warp_id, :], A[warp_id, :])


@T.prim_func
def swizzled(a_ptr: T.handle):
    A = T.match_buffer(a_ptr, (64, 64), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    A_smem = T.alloc_shared((64, 64), "float16",
                            layout=TileLayout(S[(64, 64)]).swizzle(128, 16))
    Tx.cta.copy_async(A_smem[:, :], A[:, :])


@T.prim_func
def tiled_by_cta(a_ptr: T.handle):
    A = T.match_buffer(a_ptr, (1024, 64), "bfloat16")
    T.device_entry()
    bx = T.cta_id([8])
    tid = T.thread_id([256])
    A_smem = T.alloc_shared((128, 64), "bfloat16")
    if bx < 8:
        Tx.cta.copy_async(A_smem[:, :], A[bx * 128 : bx * 128 + 128, :])
