"""Small kernels the tilewise.torch tests register as ops."""

from tilewise import T

n_ = T.int32()
m_ = T.int32()


@T.prim_func
def vadd(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
    A = T.match_buffer(A_ptr, (n_,), "float32")
    B = T.match_buffer(B_ptr, (n_,), "float32")
    C = T.match_buffer(C_ptr, (n_,), "float32")
    T.device_entry()
    bx = T.cta_id([(n_ + 127) // 128])
    tx = T.thread_id([128])
    i = bx * 128 + tx
    if i < n_:
        C[i] = A[i] + B[i]


@T.prim_func
def axpy_inplace(X_ptr: T.handle, Y_ptr: T.handle, alpha: T.float32):
    X = T.match_buffer(X_ptr, (n_,), "float32")
    Y = T.match_buffer(Y_ptr, (n_,), "float32")
    T.device_entry()
    bx = T.cta_id([(n_ + 127) // 128])
    tx = T.thread_id([128])
    i = bx * 128 + tx
    if i < n_:
        Y[i] = Y[i] + alpha * X[i]


@T.prim_func
def row_sums_and_copy(X_ptr: T.handle, S_ptr: T.handle, Z_ptr: T.handle):
    """Two outputs, one of a shape computed from the sizes: S (m,) row sums, Z a copy of
    X's first half of columns (m, n // 2)."""
    X = T.match_buffer(X_ptr, (m_, n_), "float32")
    S = T.match_buffer(S_ptr, (m_,), "float32")
    Z = T.match_buffer(Z_ptr, (m_, n_ // 2), "float32")
    T.device_entry()
    bx = T.cta_id([m_])
    tx = T.thread_id([32])
    if tx == 0:
        s = T.float32(0.0)
        for j in range(n_):
            s = s + X[bx, j]
        S[bx] = s
        for j in range(n_ // 2):
            Z[bx, j] = X[bx, j]


def make_scale(n: int, dtype: str = "float32"):
    """A fixed-size factory kernel ``k(X, Y)``: Y = 2 X."""

    @T.prim_func
    def scale(X_ptr: T.handle, Y_ptr: T.handle):
        X = T.match_buffer(X_ptr, (n,), dtype)
        Y = T.match_buffer(Y_ptr, (n,), dtype)
        T.device_entry()
        bx = T.cta_id([(n + 63) // 64])
        tx = T.thread_id([64])
        i = bx * 64 + tx
        if i < n:
            Y[i] = X[i] * T.cast(2.0, dtype)

    return scale
