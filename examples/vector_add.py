"""C = A + B on float32 vectors: "A Simple Compute Kernel" of the LLVM NVPTX guide, written in
tilewise. One thread per element, many CTAs; the guard handles a length that is not a
multiple of the CTA size."""

import numpy as np

from tilewise import T

TARGET = "sm_90a"


def make_vector_add(n: int, threads: int = 256):
    """A kernel adding two float32 vectors of length ``n``, ``threads`` threads per CTA."""
    ctas = (n + threads - 1) // threads

    @T.prim_func
    def vector_add(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, (n,), "float32")
        B = T.match_buffer(B_ptr, (n,), "float32")
        C = T.match_buffer(C_ptr, (n,), "float32")
        T.device_entry()
        bx = T.cta_id([ctas])
        tx = T.thread_id([threads])
        i = bx * threads + tx
        if i < n:
            C[i] = A[i] + B[i]

    return vector_add


N = 1 << 16
vector_add = make_vector_add(N)


def inputs(rng, n: int = N):
    """A and B random, C poisoned."""
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    return [a, b, np.full(n, np.nan, dtype=np.float32)]


def reference(a, b, c):
    return [a, b, a + b]
