"""Small kernels for the code generator tests (defined in a file: the parser reads source)."""

from tilewise import T


@T.prim_func
def tcgen05_alloc(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "uint32")
    T.device_entry()
    tid = T.thread_id([128])
    addr = T.alloc_shared([1], "uint32")
    T.ptx.tcgen05.alloc(T.address_of(addr), n_cols=32, cta_group=1)  # line 13: wrong on sm_90a
    A[tid] = addr[0]


@T.prim_func
def cp_async_kernel(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (512,), "float32")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared([512], "float32")
    T.ptx.cp_async(T.address_of(S[tid * 4]), T.address_of(A[tid * 4]), 16)  # wrong on sm_75
    T.ptx.cp_async.commit_group()
    T.ptx.cp_async.wait_group(0)
    A[tid] = S[tid]


@T.prim_func
def floor_math(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    B = T.match_buffer(B_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    x = A[tid]
    B[tid] = x // 7 + x % 7 + tid // 3 + tid % 5 + x // 8


saxpy_n = T.int32()


@T.prim_func
def saxpy(X_ptr: T.handle, Y_ptr: T.handle, a: T.float32):
    """Y += a X over a symbolic length (the launcher and saved-kernel tests)."""
    X = T.match_buffer(X_ptr, (saxpy_n,), "float32")
    Y = T.match_buffer(Y_ptr, (saxpy_n,), "float32")
    T.device_entry()
    bx = T.cta_id([(saxpy_n + 127) // 128])
    tx = T.thread_id([128])
    i = bx * 128 + tx
    if i < saxpy_n:
        Y[i] = Y[i] + a * X[i]
