"""A multi-CTA copy B = A through shared memory by the TMA unit (``cp.async.bulk``): per CTA,
one thread asks for the tile's bytes with ``Tx.cta.copy_async(..., mbar=bar)`` (dispatched to
the ``bulk`` variant: one bulk load per contiguous run), every thread waits on the mbarrier,
then one thread stores the tile with ``Tx.cta.copy_async`` shared -> global (bulk stores)
and waits for its bulk group. Tiles of ``TM`` rows x ``TN`` columns; the tile must divide the
array (cp.async.bulk moves multiples of 16 bytes from 16-byte aligned addresses).

``stages > 1`` keeps several tiles in flight per CTA: the CTA walks ``stages`` consecutive
tiles, all loads issued up front on one mbarrier each, each tile stored once its barrier
completes. The tiles live in dynamic shared memory, so ``stages`` x tile may exceed the 48 KB
a static allocation is limited to (the runtime raises the launch's limit).
"""

import numpy as np

from tilewise import T, Tx, config_error
from tilewise.runner import random_bits

TARGET = "sm_90a"


def make_bulk_copy(M: int, N: int, dtype: str = "float16", tile=(8, 1024), threads: int = 32,
                   stages: int = 1):
    """A kernel copying an ``M x N`` array of ``dtype`` in ``tile = (TM, TN)`` tiles with
    bulk copies, ``stages`` tiles per CTA."""
    TM, TN = tile
    if M % (TM * stages) or N % TN:
        raise config_error(f"tile {tile} x {stages} stages must divide the array {(M, N)}")
    itemsize = 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize
    nbytes = TM * TN * itemsize
    gm, gn = M // (TM * stages), N // TN

    @T.prim_func
    def bulk_copy(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M, N), dtype)
        B = T.match_buffer(B_ptr, (M, N), dtype)
        T.device_entry()
        bx, by = T.cta_id([gn, gm])
        tid = T.thread_id([threads])
        S = T.alloc_buffer((stages, TM, TN), dtype, scope="shared.dyn")
        bar = T.alloc_shared([stages], "uint64")
        if tid == 0:
            for s in T.static_range(stages):
                T.ptx.mbarrier.init(T.address_of(bar[s]), 1)
        T.cuda.cta_sync()
        for s in T.static_range(stages):
            r = (by * stages + s) * TM
            if tid == 0:
                T.ptx.mbarrier.arrive_expect_tx(T.address_of(bar[s]), nbytes)
            Tx.cta.copy_async(S[s, :, :], A[r:r + TM, bx * TN:bx * TN + TN],
                              mbar=T.address_of(bar[s]))
        for s in T.static_range(stages):
            r = (by * stages + s) * TM
            T.ptx.mbarrier.wait_parity(T.address_of(bar[s]), 0)
            Tx.cta.copy_async(B[r:r + TM, bx * TN:bx * TN + TN], S[s, :, :])
            T.ptx.cp_async.bulk.commit_group()
        T.ptx.cp_async.bulk.wait_group(0)

    return bulk_copy


def make_bulk_stream(M: int, N: int, dtype: str = "float16", tile=(8, 1024), stages: int = 4,
                     ctas: int = 132 * 3, threads: int = 32):
    """A persistent, streaming variant: ``ctas`` CTAs walk the tiles with stride ``ctas``
    through a ring of ``stages`` shared buffers. Step ``i`` waits for its tile, stores it,
    then refills the buffer of step ``i - 1`` (whose store is one bulk group older, so
    ``wait_group_read(1)`` leaves this step's store in flight) with the tile of step
    ``i - 1 + stages``. The mbarrier parity is ``i // stages % 2``: each buffer's barrier
    completes once per lap of the ring."""
    TM, TN = tile
    if M % TM or N % TN:
        raise config_error(f"tile {tile} must divide the array {(M, N)}")
    itemsize = 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize
    nbytes = TM * TN * itemsize
    gn = N // TN
    total = (M // TM) * gn
    G = min(ctas, total)
    iters = (total + G - 1) // G

    @T.prim_func
    def bulk_stream(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M, N), dtype)
        B = T.match_buffer(B_ptr, (M, N), dtype)
        T.device_entry()
        cta = T.cta_id([G])
        tid = T.thread_id([threads])
        S = T.alloc_buffer((stages, TM, TN), dtype, scope="shared.dyn")
        bar = T.alloc_shared([stages], "uint64")
        if tid == 0:
            for s in T.static_range(stages):
                T.ptx.mbarrier.init(T.address_of(bar[s]), 1)
        T.cuda.cta_sync()
        for s in T.static_range(stages):
            t0 = cta + s * G
            if t0 < total:
                if tid == 0:
                    T.ptx.mbarrier.arrive_expect_tx(T.address_of(bar[s]), nbytes)
                r0, c0 = t0 // gn * TM, t0 % gn * TN
                Tx.cta.copy_async(S[s, :, :], A[r0:r0 + TM, c0:c0 + TN],
                                  mbar=T.address_of(bar[s]))
        for i in range(iters):
            t = cta + i * G
            b = i % stages
            if t < total:
                T.ptx.mbarrier.wait_parity(T.address_of(bar[b]), i // stages % 2)
                Tx.cta.copy_async(B[t // gn * TM:t // gn * TM + TM, t % gn * TN:t % gn * TN + TN],
                                  S[b, :, :])
                T.ptx.cp_async.bulk.commit_group()
            # refill the buffer of the previous step: its store is one group older than
            # the one just committed, so waiting for it leaves this step's store in flight
            pb = (i + stages - 1) % stages
            n = t + (stages - 1) * G
            if i > 0 and n < total:
                if tid == 0:
                    T.ptx.cp_async.bulk.wait_group_read(1)
                    T.ptx.mbarrier.arrive_expect_tx(T.address_of(bar[pb]), nbytes)
                Tx.cta.copy_async(S[pb, :, :],
                                  A[n // gn * TM:n // gn * TM + TM, n % gn * TN:n % gn * TN + TN],
                                  mbar=T.address_of(bar[pb]))
        T.ptx.cp_async.bulk.wait_group(0)

    return bulk_stream


SHAPE = (256, 2048)
bulk_copy = make_bulk_copy(*SHAPE, "float16")


def inputs(rng, shape=SHAPE, dtype="float16"):
    """A: random bit patterns of ``dtype`` (a copy must move every bit); B poisoned."""
    return [random_bits(rng, shape, dtype), random_bits(rng, shape, dtype, fill=0xA5)]


def reference(a, b):
    return [a, a.copy()]
