"""Tile primitives over buffers with symbolic sizes: dispatched with a guard per vector
(loads zero-fill past the end, stores stop at it), or declined with a reason that names
the symbolic size."""

import numpy as np
import pytest

import kernels_core as K
import tilewise as tw
from tilewise import T, Tx
from tilewise.errors import DispatchError
from tilewise.pipeline import lower

N = T.int32()
M = T.int32()


def _log(func):
    return {d.call.split("(")[0]: d for d in lower(func, "sm_90a").dispatch_log}


def test_a_tail_tile_is_guarded_and_keeps_full_vectors():
    log = _log(K.make_tile_copy("float16"))
    assert log["Tx.cta.copy_async"].chosen == "ldgsts"
    assert "vec 8 (128 bits)" in log["Tx.cta.copy_async"].info[0]
    assert log["Tx.cta.copy"].chosen == "gmem_smem"
    text = lower(K.make_tile_copy("float16"), "sm_90a").func.script()
    assert "16, None, not bx * 32 + f * 16 + tid // 8 < M)" in text


def test_loads_zero_fill_past_the_end():
    func = K.make_tile_copy("float32")
    a = np.random.default_rng(0).standard_normal((40, 64)).astype(np.float32)
    b = np.full((40, 64), 7, np.float32)
    tw.simulate(func, a, b)
    assert (b == a).all()


def _inner_symbolic(dispatch=None, dtype="float16"):
    opts = {} if dispatch is None else {"dispatch": dispatch}

    @T.prim_func
    def k(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (16, N), dtype)
        B = T.match_buffer(B_ptr, (16, 64), dtype)
        T.device_entry()
        tid = T.thread_id([128])
        S = T.alloc_shared((16, 64), dtype)
        Tx.cta.copy(S[0:16, 0:64], A[0:16, 0:64], **opts)
        T.cuda.cta_sync()
        Tx.cta.copy(B[0:16, 0:64], S[0:16, 0:64])

    return k


def test_a_symbolic_stride_is_named_when_a_variant_declines():
    with pytest.raises(DispatchError, match="dimension 0 of 'A' has the symbolic stride N"):
        lower(_inner_symbolic("gmem_smem"), "sm_90a")
    log = lower(_inner_symbolic(), "sm_90a").dispatch_log
    assert log[0].chosen == "fallback"  # the scalar loop, guarded element by element
    a = np.arange(16 * 70, dtype=np.float16).reshape(16, 70)
    b = np.zeros((16, 64), np.float16)
    tw.simulate(_inner_symbolic(), a, b)
    assert (b == a[:, :64]).all()
    b[...] = 0
    tw.simulate(_inner_symbolic(), a[:, :40].copy(), b)  # N = 40 < 64: zeros past the end
    assert (b[:, :40] == a[:, :40]).all() and (b[:, 40:] == 0).all()


def test_vectors_cannot_straddle_a_symbolic_contiguous_dimension():
    @T.prim_func
    def k(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M,), "float16")
        T.device_entry()
        bx = T.cta_id([T.ceildiv(M, 256)])
        tid = T.thread_id([128])
        S = T.alloc_shared((256,), "float16")
        Tx.cta.copy_async(S[0:256], A[bx * 256:bx * 256 + 256], dispatch="ldgsts")

    with pytest.raises(DispatchError, match="dimension 0 has the symbolic extent M; a vector "
                       "of 2 elements could straddle its end"):
        lower(k, "sm_90a")


def test_variants_that_cannot_guard_name_the_size():
    @T.prim_func
    def k(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M, 64), "float16")
        T.device_entry()
        tid = T.thread_id([128])
        S = T.alloc_shared((8, 64), "float16")
        bar = T.alloc_shared([1], "uint64")
        Tx.cta.copy_async(S[0:8, 0:64], A[0:8, 0:64], dispatch="bulk",
                          mbar=T.address_of(bar[0]))

    with pytest.raises(DispatchError, match="'A' has the symbolic size M; this variant needs "
                       "sizes known at compile time"):
        lower(k, "sm_90a")
