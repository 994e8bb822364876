"""Kernels of issue 23's features, as seeds of the fuzzer (tests/fuzz: mutants of every
``tests/*/kernels*.py``) and for the tests that import them: copies between memory and
per-thread register arrays, unary math from one float dtype into another, TIRx's
``zero(dst, src)`` and positional ``bias, scale``, and two CTAs storing the same tile."""

from tilewise import T, Tx
from tilewise.layout import S, TileLayout


@T.prim_func
def row_roundtrip(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128, 16), "float16")
    B = T.match_buffer(B_ptr, (128, 16), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    row = T.alloc_local((16,), "float16")
    Tx.thread.copy(row[:], A[tid, :])
    Tx.thread.sqrt(row[:], row[:])
    Tx.cta.copy(B[tid, :], row[:])


@T.prim_func
def converting_unary(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (32, 32), "float32")
    B = T.match_buffer(B_ptr, (32, 32), "float16")
    T.device_entry()
    T.thread_id([64])
    A_s = T.alloc_buffer((32, 32), "float32", scope="shared", layout=TileLayout(S[(32, 32)]))
    B_s = T.alloc_buffer((32, 32), "float16", scope="shared", layout=TileLayout(S[(32, 32)]))
    Tx.cta.copy(A_s[:, :], A[:, :])
    Tx.cta.zero(B_s[:, :], A_s[:, :])
    T.cuda.cta_sync()
    Tx.cta.exp(B_s[0:16, :], A_s[0:16, :], 0.5, 1.5)
    T.cuda.cta_sync()
    Tx.cta.copy(B[:, :], B_s[:, :])


@T.prim_func
def same_tile_two_ctas(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64, 64), "float16")
    B = T.match_buffer(B_ptr, (64, 64), "float16")
    T.device_entry()
    T.cta_id([2])
    T.thread_id([32])
    A_s = T.alloc_buffer((32, 32), "float16", scope="shared", layout=TileLayout(S[(32, 32)]))
    Tx.cta.copy(A_s[:, :], A[32:64, 32:64])
    T.cuda.cta_sync()
    Tx.cta.copy(B[32:64, 32:64], A_s[:, :])


@T.prim_func
def local_to_local(B_ptr: T.handle):
    B = T.match_buffer(B_ptr, (64, 4), "float32")
    T.device_entry()
    tid = T.thread_id([64])
    src = T.alloc_local((4,), "float32")
    dst = T.alloc_local((8,), "float32")
    for i in range(4):
        src[i] = T.cast(tid + i, "float32")
    Tx.thread.copy(dst[2:6], src[:])
    Tx.thread.copy(B[tid, :], dst[2:6])
