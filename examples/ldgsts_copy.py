"""The seed's copy_async -> ldgsts demonstration (tirx-copy_async-ldgsts.rst), with only its
imports changed: a CTA of 128 threads loads a 128x32 float16 tile global -> shared with
cp.async, commits and waits, then copies the tile back out to B."""

import numpy as np

from tilewise import T, Tx
from tilewise.layout import S, TileLayout

shape, dtype = (128, 32), "float16"
s_layout = TileLayout(S[shape])
full = (slice(0, 128), slice(0, 32))


@T.prim_func
def copy_async(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, shape, dtype)
    B = T.match_buffer(B_ptr, shape, dtype)
    T.device_entry()
    T.cta_id([1])
    T.warp_id([4])
    T.lane_id([32])
    tid = T.thread_id([128])
    A_smem = T.alloc_buffer(shape, dtype, scope="shared", layout=s_layout)
    Tx.cta.copy_async(A_smem[full], A[full], dispatch="ldgsts")  # async global -> shared
    T.ptx.cp_async.commit_group()  # caller commits ...
    T.ptx.cp_async.wait_group()  # ... and waits
    T.cuda.cta_sync()
    Tx.cta.copy(B[full], A_smem[full])


TARGET = "sm_90a"


def inputs(rng):
    """Random inputs for `tilewise run`: A random, B poisoned."""
    a = rng.standard_normal(shape).astype(np.float16)
    b = np.full(shape, np.nan, dtype=np.float16)
    return [a, b]


def reference(a, b):
    """What the kernel must leave in its arguments."""
    return [a, a.copy()]
