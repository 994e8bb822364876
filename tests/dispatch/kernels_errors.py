"""Kernels with dispatch mistakes; each mistake's line carries a '# ERR <name>' marker."""

from tilewise import T, Tx
from tilewise.layout import S, TileLayout


@T.prim_func
def unknown_variant(a_ptr: T.handle):
    A = T.match_buffer(a_ptr, (128, 32), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    A_smem = T.alloc_shared((128, 32), "float16")
    Tx.cta.copy_async(A_smem[:, :], A[:, :], dispatch="ldgst")  # ERR unknown


@T.prim_func
def with_mbar(a_ptr: T.handle):
    A = T.match_buffer(a_ptr, (128, 32), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    bar = T.alloc_shared((1,), "uint64")
    A_smem = T.alloc_shared((128, 32), "float16")
    Tx.cta.copy_async(A_smem[:, :], A[:, :], mbar=T.address_of(bar[0]))  # ERR mbar


@T.prim_func
def user_cp_async(a_ptr: T.handle):
    A = T.match_buffer(a_ptr, (128,), "float32")
    T.device_entry()
    tid = T.thread_id([32])
    A_smem = T.alloc_shared((128,), "float32")
    T.ptx.cp_async(T.address_of(A_smem[tid * 4]), T.address_of(A[tid * 4]), 16)  # ERR sm75


@T.prim_func
def dispatch_on_sm75(a_ptr: T.handle):
    A = T.match_buffer(a_ptr, (128, 32), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    A_smem = T.alloc_shared((128, 32), "float16")
    Tx.cta.copy_async(A_smem[:, :], A[:, :])  # ERR ldgsts75


@T.prim_func
def dtype_mismatch(a_ptr: T.handle):
    A = T.match_buffer(a_ptr, (128, 32), "float32")
    T.device_entry()
    tid = T.thread_id([128])
    A_smem = T.alloc_shared((128, 32), "float16")
    Tx.cta.copy_async(A_smem[:, :], A[:, :])  # ERR dtype


@T.prim_func
def size_mismatch(a_ptr: T.handle):
    A = T.match_buffer(a_ptr, (128, 32), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    A_smem = T.alloc_shared((128, 32), "float16")
    Tx.cta.copy_async(A_smem[0:64, :], A[:, :])  # ERR size


@T.prim_func
def unknown_condition(a_ptr: T.handle, n_ptr: T.handle):
    A = T.match_buffer(a_ptr, (128, 32), "float16")
    N = T.match_buffer(n_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    A_smem = T.alloc_shared((128, 32), "float16")
    if N[tid] > 0:
        Tx.cta.copy_async(A_smem[:, :], A[:, :])  # ERR unknowncond


@T.prim_func
def cluster_scope(a_ptr: T.handle):
    A = T.match_buffer(a_ptr, (128, 32), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    A_smem = T.alloc_shared((128, 32), "float16")
    Tx.cluster.copy_async(A_smem[:, :], A[:, :])  # ERR cluster


@T.prim_func
def column_major_smem(a_ptr: T.handle):
    A = T.match_buffer(a_ptr, (32, 32), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    A_smem = T.alloc_shared((32, 32), "float16", layout=TileLayout(S[(32, 32) : (1, 32)]))
    Tx.cta.copy_async(A_smem[:, :], A[:, :])  # ERR colmajor


@T.prim_func
def copy_partial_first(a_ptr: T.handle, b_ptr: T.handle):
    A = T.match_buffer(a_ptr, (100,), "int8")
    B = T.match_buffer(b_ptr, (100,), "int8")
    T.device_entry()
    tid = T.thread_id([64])
    if tid > 0:
        Tx.cta.copy(B[:], A[:])  # ERR copyfirst


@T.prim_func
def warp_elect(a_ptr: T.handle):
    A = T.match_buffer(a_ptr, (4, 256), "float16")
    T.device_entry()
    warp_id = T.warp_id([4])
    tid = T.thread_id([128])
    A_smem = T.alloc_shared((4, 256), "float16")
    if T.ptx.elect_sync():
        Tx.warp.copy_async(A_smem[warp_id, :], A[warp_id, :])  # ERR elect
