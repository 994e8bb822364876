"""TIRx's compute and copy tests that move per-thread register arrays (apache/tvm,
tests/python/tirx/operator/tile_primitive/cuda/elementwise/test_unary.py and
copy/test_reg.py), written in tilewise. The changes are spelling only:

* TIRx's default scope ``Tx.copy`` / ``Tx.zero`` / ``Tx.fill`` ... is ``Tx.thread.*``;
* a partial index ``A[tid]`` as a tile operand is ``A[tid, :]`` (``A[tid, :, :]`` for 3-D);
* ``def k(A: T.Buffer(shape, dtype, layout=...))`` is ``A = T.match_buffer(A_ptr, ...)``;
* ``T.FloatImm(src_dtype, 1.5)`` / ``T.float16(7.89)`` are the plain numbers;
* ``ComposeLayout(2, 3, 3, TileLayout(...))`` (16-byte float32 chunks, 8 of them) is
  ``TileLayout(...).swizzle(128, dtype_bits=32)``; ``dispatch="vec_128b"`` is left out
  (tilewise names its variants otherwise and picks the 16-byte vectors by itself);
* a 64 KB ``scope="shared"`` buffer is ``scope="shared.dyn"`` (TIRx makes shared memory
  dynamic by itself; tilewise keeps static shared memory within 48 KB and says so);
* ``tvm.testing.assert_allclose`` tolerances are kept.

Each factory returns ``(kernel, arrays(rng), reference(*arrays) -> arrays, atol)``.
"""

from __future__ import annotations

import numpy as np

from tilewise import T, Tx
from tilewise.ir.dtype import dtype as tw_dtype
from tilewise.layout import S, TileLayout


def _np(dtype: str):
    return tw_dtype(dtype).numpy()


# ---------------------------------------------------------------- test_unary_op_local_thread_wise
def unary_local_thread_wise(op_type: str, dtype: str = "float16"):
    shape = (64, 32)
    local_shape = shape[1:]

    @T.prim_func
    def kernel(A_ptr: T.handle) -> None:
        A = T.match_buffer(A_ptr, shape, dtype, layout=TileLayout(S[shape]))
        T.device_entry()
        _bx = T.cta_id([1])  # noqa: F841
        tid = T.thread_id([64])
        a_local = T.alloc_buffer(local_shape, dtype, scope="local",
                                 layout=TileLayout(S[local_shape]))
        Tx.thread.copy(a_local, A[tid, :])
        if op_type == "zero":
            Tx.thread.zero(a_local, a_local)
        elif op_type == "sqrt":
            Tx.thread.sqrt(a_local, a_local)
        elif op_type == "reciprocal":
            Tx.thread.reciprocal(a_local, a_local)
        elif op_type == "exp":
            Tx.thread.exp(a_local, a_local)
        elif op_type == "silu":
            Tx.thread.silu(a_local, a_local)
        Tx.thread.copy(A[tid, :], a_local)

    def arrays(rng):
        return [(np.abs(rng.random(shape)) + 0.1).astype(dtype)]

    def reference(a):
        x = a.astype(np.float32)
        out = {"zero": np.zeros_like(x), "sqrt": np.sqrt(x), "reciprocal": 1.0 / x,
               "exp": np.exp(x), "silu": x / (1.0 + np.exp(-x))}[op_type]
        return [out.astype(dtype)]

    return kernel, arrays, reference, 1e-2


# ---------------------------------------------------------------- test_unary_op_vectorized
def unary_vectorized(shape, storage_scope: str, dtype: str = "float16"):
    """``fill`` then ``copy`` by each thread of its own row ``tx`` (thread scope)."""
    value = 7.89

    @T.prim_func
    def test_unary_thread(A_ptr: T.handle) -> None:
        A = T.match_buffer(A_ptr, shape, dtype, layout=TileLayout(S[shape]))
        T.device_entry()
        _bx = T.cta_id([1])  # noqa: F841
        tx = T.thread_id([128])
        if storage_scope == "shared" and len(shape) == 2:
            a_smem = T.alloc_buffer(shape, dtype=dtype, layout=TileLayout(S[shape]),
                                    scope="shared")
            Tx.thread.fill(a_smem[tx, :], value)
            Tx.thread.copy(A[tx, :], a_smem[tx, :])
        elif storage_scope == "shared":
            a_smem = T.alloc_buffer(shape, dtype=dtype, layout=TileLayout(S[shape]),
                                    scope="shared")
            Tx.thread.fill(a_smem[tx, :, :], value)
            Tx.thread.copy(A[tx, :, :], a_smem[tx, :, :])
        elif len(shape) == 2:
            a_local = T.alloc_buffer(shape[1:], dtype=dtype, layout=TileLayout(S[shape[1:]]),
                                     scope="local")
            Tx.thread.fill(a_local, value)
            Tx.thread.copy(A[tx, :], a_local)
        else:
            a_local = T.alloc_buffer(shape[1:], dtype=dtype, layout=TileLayout(S[shape[1:]]),
                                     scope="local")
            Tx.thread.fill(a_local, value)
            Tx.thread.copy(A[tx, :, :], a_local)

    def arrays(rng):
        return [rng.random(shape).astype(dtype)]

    def reference(a):
        return [np.full(shape, value, dtype)]

    return test_unary_thread, arrays, reference, 1e-2


# ---------------------------------------------------------------- test_unary_op_shared
SHARED_INPUTS = {  # g_shape, st_a, st_res, extent
    "basic": ((32, 32), (0, 0), (0, 0), (32, 32)),
    "offset": ((32, 8, 12), (10, 0, 3), (20, 0, 2), (5, 6, 7)),
}


def unary_shared(case: str, op_type: str, src_dtype: str, dst_dtype: str, bias="none"):
    """``Tx.cta.<op>(B_smem[res], A_smem[a][, bias, scale])``: zero / sqrt / exp from a
    ``src_dtype`` tile into a ``dst_dtype`` one (the source's dtype is the compute dtype),
    ``bias``: "none", "const" or "region" (then with scale 1.5)."""
    g_shape, st_a, st_res, ext = SHARED_INPUTS[case]
    s_layout = TileLayout(S[g_shape])
    copy_slice = tuple(slice(None) for _ in g_shape)
    map_a = tuple(slice(s, s + e) for s, e in zip(st_a, ext))
    map_res = tuple(slice(s, s + e) for s, e in zip(st_res, ext))
    scale, const_bias = 1.5, 0.88
    in_place = src_dtype == dst_dtype

    @T.prim_func
    def unary_op(A_ptr: T.handle, B_ptr: T.handle, bias_ptr: T.handle) -> None:
        A = T.match_buffer(A_ptr, g_shape, src_dtype, layout=s_layout)
        B = T.match_buffer(B_ptr, g_shape, dst_dtype, layout=s_layout)
        bias_g = T.match_buffer(bias_ptr, g_shape, src_dtype, layout=s_layout)
        T.device_entry()
        _bx = T.cta_id([1])  # noqa: F841
        _tx = T.thread_id([64])  # noqa: F841
        A_smem = T.alloc_buffer(g_shape, src_dtype, scope="shared", layout=s_layout)
        B_smem = T.alloc_buffer(g_shape, dst_dtype, scope="shared", layout=s_layout)
        bias_smem = T.alloc_buffer(g_shape, src_dtype, scope="shared", layout=s_layout)
        Tx.cta.copy(A_smem[copy_slice], A[copy_slice])
        Tx.cta.copy(bias_smem[copy_slice], bias_g[copy_slice])
        if not in_place:
            Tx.cta.copy(B_smem[copy_slice], B[copy_slice])
        T.cuda.cta_sync()
        out = A_smem if in_place else B_smem
        if op_type == "zero":
            Tx.cta.zero(out[map_res], A_smem[map_a])
        elif bias == "none":
            Tx.cta.sqrt(out[map_res], A_smem[map_a])
        elif bias == "const" and op_type == "sqrt":
            Tx.cta.sqrt(out[map_res], A_smem[map_a], const_bias, scale)
        elif bias == "const":
            Tx.cta.exp(out[map_res], A_smem[map_a], const_bias, scale)
        elif op_type == "sqrt":
            Tx.cta.sqrt(out[map_res], A_smem[map_a], bias_smem[map_a], scale)
        else:
            Tx.cta.exp(out[map_res], A_smem[map_a], bias_smem[map_a], scale)
        T.cuda.cta_sync()
        if in_place:
            Tx.cta.copy(A[copy_slice], A_smem[copy_slice])
        else:
            Tx.cta.copy(B[copy_slice], B_smem[copy_slice])

    def arrays(rng):
        a = (np.abs(rng.random(g_shape)) + 0.1).astype(src_dtype)
        return [a, np.zeros(g_shape, _np(dst_dtype)), rng.random(g_shape).astype(src_dtype)]

    def reference(a, b, bias_np):
        x = a[map_a].astype(np.float64)
        if bias == "const":
            x = x * scale + const_bias
        elif bias == "region":
            x = x * scale + bias_np[map_a].astype(np.float64)
        y = {"zero": np.zeros_like(x), "sqrt": np.sqrt(x), "exp": np.exp(x)}[op_type]
        out = a.copy() if in_place else b.copy()
        out[map_res] = y.astype(out.dtype)
        return [out, b, bias_np] if in_place else [a, out, bias_np]

    atol = 1e-1 if op_type == "exp" and src_dtype == "float16" else 1e-2
    return unary_op, arrays, reference, atol


# ------------------------------------------- test_copy_forced_vec_dynamic_swizzled_shared
def copy_per_thread_swizzled_shared():
    smem_layout = TileLayout(S[(64, 8, 32):(32, 2048, 1)]).swizzle(128, dtype_bits=32)

    @T.prim_func
    def kernel(B_ptr: T.handle) -> None:
        B = T.match_buffer(B_ptr, (128, 4), "float32")
        T.device_entry()
        T.cta_id([1])
        tid = T.thread_id([128])
        smem = T.alloc_buffer((64, 256), "float32", scope="shared.dyn", layout=smem_layout)
        reg = T.alloc_local((4,), "float32")
        out = T.alloc_local((4,), "float32")
        for i in range(4):
            reg[i] = T.cast(tid * 16 + i + 1, "float32")
        row = tid % 64
        col = (tid // 64) * 4
        Tx.thread.copy(smem[row, col:col + 4], reg[:])
        T.cuda.cta_sync()
        Tx.thread.copy(out[:], smem[row, col:col + 4])
        for i in range(4):
            B[tid, i] = out[i]

    def arrays(rng):
        return [np.zeros((128, 4), np.float32)]

    def reference(b):
        return [np.array([[t * 16 + i + 1 for i in range(4)] for t in range(128)], np.float32)]

    return kernel, arrays, reference, 0.0


# ---------------------------------------------------------------- test_copy_fallback_handles_scalar_regions
def copy_local_scalar_regions():
    @T.prim_func
    def kernel(B_ptr: T.handle) -> None:
        B = T.match_buffer(B_ptr, (1,), "float32")
        T.device_entry()
        T.cta_id([1])
        T.thread_id([1])
        src = T.alloc_local((1,), "float32")
        dst = T.alloc_local((4,), "float32")
        src[0] = T.cast(7, "float32")
        Tx.thread.copy(dst[2:3], src[:])
        B[0] = dst[2]

    return kernel, lambda rng: [np.zeros(1, np.float32)], lambda b: [
        np.array([7], np.float32)], 0.0


# ---------------------------------------------------------------- test_copy_explicit_vec_auto_uses_auto_family
def copy_per_thread_shared_roundtrip():
    @T.prim_func
    def kernel(B_ptr: T.handle) -> None:
        B = T.match_buffer(B_ptr, (4,), "float32")
        T.device_entry()
        T.cta_id([1])
        T.thread_id([1])
        smem = T.alloc_buffer((4,), "float32", scope="shared")
        reg = T.alloc_buffer((4,), "float32", scope="local", layout=TileLayout(S[4]))
        out = T.alloc_buffer((4,), "float32", scope="local", layout=TileLayout(S[4]))
        for i in range(4):
            reg[i] = T.cast(i + 1, "float32")
        Tx.thread.copy(smem[:], reg[:])
        T.cuda.cta_sync()
        Tx.thread.copy(out[:], smem[:])
        for i in range(4):
            B[i] = out[i]

    return kernel, lambda rng: [np.zeros(4, np.float32)], lambda b: [
        np.arange(1, 5, dtype=np.float32)], 0.0
