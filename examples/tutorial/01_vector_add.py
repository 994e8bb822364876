"""Tutorial step 1: C = A + B, one thread per element (docs/tutorial.md).

A kernel is a Python function under ``@T.prim_func``. It declares its arrays
(``T.match_buffer``: shape and dtype, checked at every launch), then how it is launched:
``T.cta_id([ctas])`` is the CTA's index in a grid of ``ctas`` CTAs (CUDA's ``blockIdx.x``)
and ``T.thread_id([threads])`` the thread's index in its CTA (``threadIdx.x``). The rest
reads like CUDA: every thread computes its element's index and, if it is inside the array,
adds. The sizes come from Python (``n`` is a number when the kernel is made), so each
``make_vector_add(n)`` is a kernel specialised for ``n``.

Run it::

    tilewise run examples/tutorial/01_vector_add.py --sim     # on the CPU simulator
    tilewise run examples/tutorial/01_vector_add.py           # on the GPU, if there is one

or from Python: ``tw.simulate(k, a, b, c)`` (numpy arrays, written in place) or
``k(a, b, c)`` (torch / CuPy arrays on the GPU).
"""

import numpy as np

from tilewise import T

TARGET = "sm_90a"


def make_vector_add(n: int, threads: int = 256):
    """``k(A, B, C)``: C = A + B for float32 vectors of length ``n``."""
    ctas = (n + threads - 1) // threads  # enough CTAs to cover n, the last one partly

    @T.prim_func
    def vector_add(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, (n,), "float32")
        B = T.match_buffer(B_ptr, (n,), "float32")
        C = T.match_buffer(C_ptr, (n,), "float32")
        T.device_entry()
        bx = T.cta_id([ctas])
        tx = T.thread_id([threads])
        i = bx * threads + tx
        if i < n:  # the last CTA's threads past the end do nothing
            C[i] = A[i] + B[i]

    return vector_add


N = 10_000  # not a multiple of 256: the guard matters
vector_add = make_vector_add(N)


def inputs(rng, n: int = N):
    """A and B random, C poisoned with NaN (an element the kernel misses stays NaN)."""
    return [rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32),
            np.full(n, np.nan, np.float32)]


def reference(a, b, c):
    return [a, b, a + b]
