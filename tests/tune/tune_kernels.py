"""Small kernel factories for the autotune tests: module-level, so that the compile workers
can rebuild them from this file."""

from tilewise import T, Tx


def make_scale(n: int, *, threads: int = 128, scale: float = 2.0, smem: int = 0):
    """``B = A * scale`` over ``n`` float32 elements; ``smem`` bytes of shared memory (a
    config with too many fails to compile)."""

    @T.prim_func
    def scale_kernel(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (n,), "float32")
        B = T.match_buffer(B_ptr, (n,), "float32")
        T.device_entry()
        tid = T.thread_id([threads])  # noqa: F841
        if smem:
            S = T.alloc_shared((smem // 4,), "float32")
            Tx.cta.copy(S[0:n], A[0:n])
        Tx.cta.mul(B[0:n], A[0:n], scale)

    return scale_kernel
