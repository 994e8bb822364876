"""C = pow(A, B) on float32 vectors through libdevice's ``__nv_powf``: "Linking with
Libdevice" of the LLVM NVPTX guide, written in tilewise. The code generator links only the
libdevice functions the kernel calls and resolves ``__nvvm_reflect`` (``ftz=`` option)."""

import numpy as np

from tilewise import T

TARGET = "sm_90a"
RTOL = 4 * float(np.finfo(np.float32).eps)  # libdevice powf vs numpy: a few ulps


def make_pow(n: int, threads: int = 256):
    """A kernel computing ``C[i] = A[i] ** B[i]`` for float32 vectors of length ``n``."""
    ctas = (n + threads - 1) // threads

    @T.prim_func
    def pow_kernel(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, (n,), "float32")
        B = T.match_buffer(B_ptr, (n,), "float32")
        C = T.match_buffer(C_ptr, (n,), "float32")
        T.device_entry()
        bx = T.cta_id([ctas])
        tx = T.thread_id([threads])
        i = bx * threads + tx
        if i < n:
            C[i] = T.pow(A[i], B[i])

    return pow_kernel


N = 1 << 16
pow_kernel = make_pow(N)


def inputs(rng, n: int = N):
    """Positive bases (a real result), exponents in [-4, 4], C poisoned."""
    a = rng.uniform(0.01, 10.0, n).astype(np.float32)
    b = rng.uniform(-4.0, 4.0, n).astype(np.float32)
    return [a, b, np.full(n, np.nan, dtype=np.float32)]


def reference(a, b, c):
    return [a, b, np.power(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)]
