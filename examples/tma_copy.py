"""A 2-D copy B = A through shared memory by TMA tensor copies: one kernel for any array
size (``M``, ``N`` symbolic). Each CTA owns ``stages`` boxes of ``BR x BC`` elements stacked
along the rows; its first thread asks for all of them at once (``Tx.thread.copy_async(...,
dispatch="tma", mbar=bar[s])``, each box completing on its own mbarrier), then, box by box,
waits for it and stores it back (``Tx.thread.copy_async(B[...], S[s], dispatch="tma")``,
one bulk group per box). Boxes hanging over the array's edge need no code: the load fills
what lies outside with zeros and the store skips it.

``stages`` boxes in flight per CTA and several CTAs per multiprocessor keep the copy engine
busy; ``cache_hint`` (``"evict_first"``: streamed data should not stay in L2) and
``l2_promotion`` are the TMA options a bandwidth sweep turns (benchmarks/bench_copy.py,
configs ``tma:...``).
"""

import numpy as np

from tilewise import T, Tx
from tilewise.runner import random_bits

TARGET = "sm_90a"


def make_tma_copy(dtype: str = "float16", box=(64, 128), stages: int = 4, threads: int = 32,
                  cache_hint: str | None = None, l2_promotion: int | None = None):
    """The copy kernel, ``k(A, B)`` for ``M x N`` arrays of ``dtype`` (rows a multiple of 16
    bytes, as tensor maps need)."""
    BR, BC = box
    itemsize = 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize
    nbytes = BR * BC * itemsize
    M, N = T.int32(), T.int32()

    @T.prim_func
    def tma_copy(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M, N), dtype)
        B = T.match_buffer(B_ptr, (M, N), dtype)
        T.device_entry()
        bx, by = T.cta_id([T.ceildiv(N, BC), T.ceildiv(M, BR * stages)])
        tid = T.thread_id([threads])
        S = T.alloc_buffer((stages, BR, BC), dtype, scope="shared.dyn")
        bar = T.alloc_shared([stages], "uint64")
        c0 = bx * BC
        if tid == 0:
            for s in T.static_range(stages):
                T.ptx.mbarrier.init(T.address_of(bar[s]), 1)
            for s in T.static_range(stages):
                r = (by * stages + s) * BR
                T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[s]), nbytes)
                Tx.thread.copy_async(S[s, :, :], A[r:r + BR, c0:c0 + BC], dispatch="tma",
                                     mbar=T.address_of(bar[s]), cache_hint=cache_hint,
                                     l2_promotion=l2_promotion)
            for s in T.static_range(stages):
                r = (by * stages + s) * BR
                T.ptx.mbarrier.wait_parity(T.address_of(bar[s]), 0)
                Tx.thread.copy_async(B[r:r + BR, c0:c0 + BC], S[s, :, :], dispatch="tma",
                                     cache_hint=cache_hint)
                T.ptx.cp_async.bulk.commit_group()
            T.ptx.cp_async.bulk.wait_group_read(0)

    return tma_copy


SHAPE = (300, 520)  # neither a multiple of the box: the last boxes hang over both edges
tma_copy = make_tma_copy()


def inputs(rng, shape=SHAPE, dtype="float16"):
    """A: random bit patterns of ``dtype`` (a copy must move every bit); B poisoned."""
    return [random_bits(rng, shape, dtype), random_bits(rng, shape, dtype, fill=0xA5)]


def reference(a, b):
    return [a, a.copy()]
