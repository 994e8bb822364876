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


def test_a_symbolic_stride_takes_vectors_checked_at_run_time():
    """Issue 19: a copy from a (16, N) array (N symbolic: the row stride is only known at
    launch) is vectorised for N % 8 == 0 and falls to element copies otherwise, both guarded
    past the end; no one-thread fallback."""
    low = lower(_inner_symbolic(), "sm_90a")
    (d, _) = low.dispatch_log
    assert d.chosen == "gmem_smem"
    assert "vec 8 (128 bits)" in d.info[0] and "vec 1" in d.info[0]
    assert "if N % 8 == 0:\n" in low.func.script()
    for n in (72, 70, 40):  # vectors; elements; elements and zeros past the end
        a = np.arange(16 * n, dtype=np.float16).reshape(16, n)
        b = np.full((16, 64), 7, np.float16)
        tw.simulate(_inner_symbolic(), a, b)
        m = min(n, 64)
        assert (b[:, :m] == a[:, :m]).all() and (b[:, m:] == 0).all()


def test_cp_async_of_a_symbolic_extent_checks_it_at_run_time():
    """ldgsts over an array of M halves: 16-byte cp.async when M % 8 == 0, else element
    copies (cp.async has no 2-byte form), zeros past the end either way."""
    @T.prim_func
    def k(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M,), "float16")
        B = T.match_buffer(B_ptr, (256,), "float16")
        T.device_entry()
        tid = T.thread_id([128])  # noqa: F841
        S = T.alloc_shared((256,), "float16")
        Tx.cta.copy_async(S[0:256], A[0:256], dispatch="ldgsts")
        T.ptx.cp_async.commit_group()
        T.ptx.cp_async.wait_group(0)
        T.cuda.cta_sync()
        Tx.cta.copy(B[0:256], S[0:256])

    low = lower(k, "sm_90a")
    assert "if M % 8 == 0:" in low.func.script() and "vec 1" in low.dispatch_log[0].info[0]
    for m in (256, 200, 101):
        a = np.random.default_rng(m).standard_normal(m).astype(np.float16)
        b = np.full(256, np.nan, np.float16)
        tw.simulate(k, a, b)
        n = min(m, 256)
        assert np.array_equal(b[:n], a[:n]) and (b[n:] == 0).all()


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
