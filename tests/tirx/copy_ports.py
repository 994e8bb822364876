"""TIRx's synchronous copy tests (apache/tvm, tests/python/tirx/operator/tile_primitive/cuda/
copy/test_gmem_smem.py ``test_copy_g2s_s2g`` and copy/test_reg.py
``test_copy_g2l_l2g_vec_load``) written in tilewise. The changes are spelling only:

* ``getattr(Tx, scope).copy`` stays; TIRx's default scope ``Tx.copy`` is ``Tx.thread.copy``;
* ``ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[8, 64])).tile_to((16, 128), (8, 64))
  .tile_to((32, 256), (16, 128))`` -> the same atoms of 8 x 64 (row-major within, atoms
  row-major at each level) with tilewise's ``.swizzle(128)``: the 128-byte swizzle of an
  atom-aligned 1024-byte atom is the swizzle of its absolute address;
* ``tvm.testing.generate_random_array`` -> random bytes (every bit pattern a copy keeps).

Every one of these launches **2 CTAs that write the same output with the same bytes**
(``T.cta_id([2])`` with indices that ignore the CTA): a benign race the simulator reports as
a warning (docs/simulator.md, "Races").
"""

from __future__ import annotations

import numpy as np

from tilewise import T, Tx
from tilewise.layout import S, TileLayout
from tilewise.runner import random_bits


def _swizzled_32x256(dtype: str) -> TileLayout:
    bits = {"int8": 8, "float8_e4m3fn": 8, "float8_e5m2": 8, "float16": 16, "bfloat16": 16,
            "float32": 32}[dtype]
    # (i, j) -> outer atom (i // 16, j // 128), inner atom (i // 8 % 2, j // 64 % 2), (i, j) % atom
    layout = TileLayout(S[(2, 2, 8, 2, 2, 64):(8192, 1024, 64, 4096, 512, 1)])
    return layout.swizzle(128, dtype_bits=bits) if bits == 16 else layout


# (g_shape, s_shape, g_region, thread_cnt, layoutS)
G2S_TASKS = {
    "whole-128x32": ((128, 32), (128, 32), ((0, 128), (0, 32)), 32, None),
    "window-32x32": ((64, 64), (32, 32), ((32, 64), (32, 64)), 32, None),
    "3d-slice": ((4, 32, 32), (32, 32), ((0, 1), (0, 32), (0, 32)), 32, None),
    "small-8x8": ((16, 16), (8, 8), ((0, 8), (0, 8)), 32, None),
    "swizzled": ((96, 512), (32, 256), ((16, 48), (256, 512)), 32, "swizzled"),
}


def copy_g2s_s2g(task: str, dtype: str, scope: str):
    """``test_copy_g2s_s2g``: A -> A_smem -> B through ``Tx.<scope>.copy``, two CTAs."""
    g_shape, s_shape, g_region, thread_cnt, swz = G2S_TASKS[task]
    layout_s = _swizzled_32x256(dtype) if swz else TileLayout(S[s_shape])
    r_smem = tuple(slice(None) for _ in range(len(s_shape)))
    r_gmem = tuple(slice(lo, hi) for lo, hi in g_region)
    if scope == "thread":
        thread_cnt = 1

    @T.prim_func
    def copy_sync(A_ptr: T.handle, B_ptr: T.handle) -> None:
        A = T.match_buffer(A_ptr, g_shape, dtype, layout=TileLayout(S[g_shape]))
        B = T.match_buffer(B_ptr, g_shape, dtype, layout=TileLayout(S[g_shape]))
        T.device_entry()
        T.cta_id([2])
        T.thread_id([thread_cnt])
        A_smem = T.alloc_buffer(s_shape, dtype, scope="shared", layout=layout_s)
        getattr(Tx, scope).copy(A_smem[r_smem], A[r_gmem])
        T.cuda.cta_sync()
        getattr(Tx, scope).copy(B[r_gmem], A_smem[r_smem])

    def arrays(rng):
        return [random_bits(rng, g_shape, dtype), np.zeros(g_shape, _np(dtype))]

    def reference(a, b):
        out = b.copy()
        out[r_gmem] = a[r_gmem]
        return [a, out]

    return copy_sync, arrays, reference


def copy_g2l_l2g(dtype: str):
    """``test_copy_g2l_l2g_vec_load``: A[3:4, 8:16, 8:16] -> a per-thread (8, 8) local array
    -> B, one thread in each of two CTAs (``Tx.copy``, TIRx's thread scope)."""
    g_shape, l_shape = (4, 16, 16), (8, 8)
    r_lmem = (slice(None), slice(None))
    r_gmem = (slice(3, 4), slice(8, 16), slice(8, 16))

    @T.prim_func
    def copy_sync(A_ptr: T.handle, B_ptr: T.handle) -> None:
        A = T.match_buffer(A_ptr, g_shape, dtype, layout=TileLayout(S[4, 16, 16]))
        B = T.match_buffer(B_ptr, g_shape, dtype, layout=TileLayout(S[4, 16, 16]))
        T.device_entry()
        T.cta_id([2])
        T.thread_id([1])
        A_local = T.alloc_buffer(l_shape, dtype, scope="local", layout=TileLayout(S[8, 8]))
        Tx.thread.copy(A_local[r_lmem], A[r_gmem])
        Tx.thread.copy(B[r_gmem], A_local[r_lmem])

    def arrays(rng):
        return [random_bits(rng, g_shape, dtype), np.zeros(g_shape, _np(dtype))]

    def reference(a, b):
        out = b.copy()
        out[r_gmem] = a[r_gmem]
        return [a, out]

    return copy_sync, arrays, reference


def _np(dtype: str):
    from tilewise.ir.dtype import dtype as tw_dtype

    return tw_dtype(dtype).numpy()
