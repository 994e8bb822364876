"""A multi-CTA tiled copy B = A of a large 2-D array: each CTA moves one TM x TN tile
global -> shared with cp.async (``Tx.cta.copy_async(..., dispatch="ldgsts")``, 16-byte
``cp.async.cg`` per thread and step), commits, waits, synchronises the CTA, then copies the
tile shared -> global (``Tx.cta.copy``, 16-byte vector load/store).

Tiles that do not divide the array: the grid covers ``ceil(M/TM) x ceil(N/TN)`` tiles. CTAs
whose tile lies wholly inside the array take the fast path above; the CTAs on the ragged
right/bottom edge copy their part element by element with a bounds check (a predicated
scalar path). When the tile divides the array the edge path is never taken. cp.async moves
at least 4 naturally aligned bytes, so when a row is not a multiple of 4 bytes (e.g. 777
float16 values) no tile start is aligned: the fast path is then dropped at compile time
(``fast and ...`` short-circuits while parsing) and every CTA takes the scalar path.

Performance (bench_copy.py): 128 threads, a 64 x 128 float16 tile (16 KB shared, 8
cp.async of 16 bytes per thread in flight), many resident CTAs per SM.
"""

import numpy as np

from tilewise import T, Tx, config_error
from tilewise.runner import random_bits

TARGET = "sm_90a"


def default_tile(dtype: str) -> tuple[int, int]:
    """16 KB tiles whose rows are 256 bytes (16-byte vectors, whole 128-byte lines)."""
    itemsize = np.dtype(dtype if dtype != "bfloat16" else "float16").itemsize
    return 64, 256 // itemsize


def make_tiled_copy(M: int, N: int, dtype: str = "float16", tile=None, threads: int = 128,
                    chunks: int = 1, prefetch: int | None = None):
    """A kernel copying an ``M x N`` array of ``dtype`` with ``tile = (TM, TN)`` tiles.

    ``chunks > 1`` pipelines inside the tile: the tile's rows are loaded as ``chunks``
    cp.async groups, and chunk ``j`` is stored as soon as ``wait_group(chunks - 1 - j)``
    says it landed, with no CTA barrier: the load and the store partition the chunk the
    same way, so every thread reads back only bytes it loaded itself (the simulator's
    hazard checks verify exactly that). ``prefetch`` (64/128/256) adds the cp.async L2
    prefetch-size hint."""
    TM, TN = tile or default_tile(dtype)
    if TM % chunks:
        raise config_error(f"chunks={chunks} must divide the tile's {TM} rows")
    CR = TM // chunks
    gm, gn = (M + TM - 1) // TM, (N + TN - 1) // TN
    fm, fn = M // TM, N // TN  # tiles wholly inside the array
    steps = (TM * TN + threads - 1) // threads
    itemsize = 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize
    fast = N * itemsize % 4 == 0  # else no tile start is 4-byte aligned: scalar path only

    @T.prim_func
    def tiled_copy(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M, N), dtype)
        B = T.match_buffer(B_ptr, (M, N), dtype)
        T.device_entry()
        bx, by = T.cta_id([gn, gm])
        tid = T.thread_id([threads])
        S = T.alloc_buffer((TM, TN), dtype, scope="shared")
        if fast and by < fm and bx < fn:
            if chunks == 1:
                Tx.cta.copy_async(S[0:TM, 0:TN], A[by * TM:by * TM + TM, bx * TN:bx * TN + TN],
                                  dispatch="ldgsts", prefetch_size=prefetch)
                T.ptx.cp_async.commit_group()
                T.ptx.cp_async.wait_group(0)
                T.cuda.cta_sync()
                Tx.cta.copy(B[by * TM:by * TM + TM, bx * TN:bx * TN + TN], S[0:TM, 0:TN])
            else:
                for j in T.static_range(chunks):
                    r = by * TM + j * CR
                    Tx.cta.copy_async(S[j * CR:j * CR + CR, 0:TN],
                                      A[r:r + CR, bx * TN:bx * TN + TN], dispatch="ldgsts",
                                      prefetch_size=prefetch)
                    T.ptx.cp_async.commit_group()
                for j in T.static_range(chunks):
                    r = by * TM + j * CR
                    T.ptx.cp_async.wait_group(chunks - 1 - j)
                    Tx.cta.copy(B[r:r + CR, bx * TN:bx * TN + TN], S[j * CR:j * CR + CR, 0:TN])
        else:
            for k in range(steps):
                e = k * threads + tid
                r = by * TM + e // TN
                c = bx * TN + e % TN
                if r < M and c < N:
                    B[r, c] = A[r, c]

    return tiled_copy


def make_pipelined_copy(M: int, N: int, dtype: str = "float16", tile=(8, 1024),
                        threads: int = 256, ctas: int = 132 * 6):
    """A persistent, double-buffered copy for arrays the tile divides: ``ctas`` CTAs walk the
    tiles with stride ``ctas``; while a CTA stores tile ``i`` from one shared buffer, the
    cp.async loads of tile ``i + 1`` land in the other, so every SM always has loads in
    flight. One (possibly empty) cp.async group is committed per step, so ``wait_group(1)``
    always means "everything but the newest tile has landed"."""
    TM, TN = tile
    if M % TM or N % TN:
        return make_tiled_copy(M, N, dtype, tile, threads)
    gn = N // TN
    total = (M // TM) * gn
    G = min(ctas, total)
    iters = (total + G - 1) // G

    @T.prim_func
    def pipelined_copy(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M, N), dtype)
        B = T.match_buffer(B_ptr, (M, N), dtype)
        T.device_entry()
        cta = T.cta_id([G])
        tid = T.thread_id([threads])
        S0 = T.alloc_buffer((TM, TN), dtype, scope="shared")
        S1 = T.alloc_buffer((TM, TN), dtype, scope="shared")
        r0 = cta // gn * TM
        c0 = cta % gn * TN
        Tx.cta.copy_async(S0[:, :], A[r0:r0 + TM, c0:c0 + TN], dispatch="ldgsts")
        T.ptx.cp_async.commit_group()
        for i in range(iters):
            t = cta + i * G
            n = t + G
            if n < total:
                rn = n // gn * TM
                cn = n % gn * TN
                if i % 2 == 0:
                    Tx.cta.copy_async(S1[:, :], A[rn:rn + TM, cn:cn + TN], dispatch="ldgsts")
                else:
                    Tx.cta.copy_async(S0[:, :], A[rn:rn + TM, cn:cn + TN], dispatch="ldgsts")
            T.ptx.cp_async.commit_group()
            T.ptx.cp_async.wait_group(1)
            T.cuda.cta_sync()
            if t < total:
                r = t // gn * TM
                c = t % gn * TN
                if i % 2 == 0:
                    Tx.cta.copy(B[r:r + TM, c:c + TN], S0[:, :])
                else:
                    Tx.cta.copy(B[r:r + TM, c:c + TN], S1[:, :])
            T.cuda.cta_sync()

    return pipelined_copy


SHAPE = (1000, 1000)
tiled_copy = make_tiled_copy(*SHAPE, "float16")


def inputs(rng, shape=SHAPE, dtype="float16"):
    """A: random bit patterns of ``dtype`` (a copy must move every bit); B poisoned."""
    return [random_bits(rng, shape, dtype), random_bits(rng, shape, dtype, fill=0xA5)]


def reference(a, b):
    return [a, a.copy()]
