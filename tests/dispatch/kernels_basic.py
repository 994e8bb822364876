"""Small kernels without tile calls (pass-through of the pipeline)."""

from tilewise import T, Tx


@T.prim_func
def vector_add(a_ptr: T.handle, b_ptr: T.handle, c_ptr: T.handle):
    A = T.match_buffer(a_ptr, (1024,), "float32")
    B = T.match_buffer(b_ptr, (1024,), "float32")
    C = T.match_buffer(c_ptr, (1024,), "float32")
    T.device_entry()
    bx = T.cta_id([8])
    tid = T.thread_id([128])
    C[bx * 128 + tid] = A[bx * 128 + tid] + B[bx * 128 + tid]


@T.prim_func
def matrix_copy_2d(a_ptr: T.handle, b_ptr: T.handle):
    A = T.match_buffer(a_ptr, (64, 32), "float16")
    B = T.match_buffer(b_ptr, (64, 32), "float16")
    T.device_entry()
    tid = T.thread_id([64])
    S = T.alloc_shared((64, 32), "float16")
    for j in range(32):
        S[tid, j] = A[tid, j]
    T.cuda.cta_sync()
    for j in range(32):
        B[tid, j] = S[tid, j]


@T.prim_func
def tile_origin_in_locals(a_ptr: T.handle, b_ptr: T.handle):
    A = T.match_buffer(a_ptr, (256, 256), "float16")
    B = T.match_buffer(b_ptr, (256, 256), "float16")
    T.device_entry()
    bx, by = T.cta_id([4, 4])
    tid = T.thread_id([128])
    s = T.alloc_shared((64, 64), "float16")
    r0, c0 = by * 64, bx * 64
    Tx.cta.copy_async(s[:, :], A[r0:r0 + 64, c0:c0 + 64])
    T.ptx.cp_async.commit_group()
    T.ptx.cp_async.wait_group(0)
    T.cuda.cta_sync()
    Tx.cta.copy(B[r0:r0 + 64, c0:c0 + 64], s[:, :])
