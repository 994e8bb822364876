"""A copy through 64 KB of *dynamic* shared memory: above the 48 KB a launch gets by default,
so the runtime must raise the kernel's dynamic shared-memory limit before launching
(cuFuncSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES). One CTA per 256 x 128 float16 tile."""

import numpy as np

from tilewise import T, Tx

M, N, TM = 1024, 128, 256  # four 64 KB tiles
TARGET = "sm_90a"


@T.prim_func
def big_smem_copy(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (M, N), "float16")
    B = T.match_buffer(B_ptr, (M, N), "float16")
    T.device_entry()
    bx = T.cta_id([M // TM])
    tid = T.thread_id([256])
    S = T.alloc_buffer((TM, N), "float16", scope="shared.dyn")
    Tx.cta.copy_async(S[:, :], A[bx * TM:bx * TM + TM, :], dispatch="ldgsts")
    T.ptx.cp_async.commit_group()
    T.ptx.cp_async.wait_group(0)
    T.cuda.cta_sync()
    Tx.cta.copy(B[bx * TM:bx * TM + TM, :], S[:, :])


def inputs(rng):
    a = rng.integers(0, 1 << 16, (M, N), dtype=np.uint16).view(np.float16)
    return [a, np.full((M, N), np.nan, dtype=np.float16)]


def reference(a, b):
    return [a, a.copy()]
