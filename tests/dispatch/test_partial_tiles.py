"""Partial tiles (issue 19): a copy's memory region may reach past the end of its buffer
(a row of 300 read as a tile of 320, the last row block of a matrix the tile does not
divide, a symbolic size): the copy stays on its vectorised path, each vector guarded; loads
fill with ``fill=`` (default 0), stores skip the part outside. Tiles whose element count the
threads do not divide guard their last step. Checked in the simulator against numpy on
random data with poisoned outputs, and in the PTX."""

import warnings

import numpy as np
import pytest

import tilewise as tw
from errcheck import check_error
from tilewise import T, Tx
from tilewise.errors import DispatchError, ScriptError
from tilewise.layout import S, tx
from tilewise.pipeline import lower

NEG = float("-inf")
M = T.int32()


def make_row_copy(rows, cols, width, dtype="float16", fill=NEG, G=8, V=8, RB=2):
    """Rows of ``cols`` read as register tiles ``RB x width`` (width >= cols), then stored."""
    K = width // (G * V)
    grid = -(-rows // RB)

    @T.prim_func
    def row_copy(X_ptr: T.handle, Y_ptr: T.handle, F_ptr: T.handle):
        X = T.match_buffer(X_ptr, (rows, cols), dtype)
        Y = T.match_buffer(Y_ptr, (rows, cols), dtype)
        F = T.match_buffer(F_ptr, (grid * RB, width), dtype)  # what the registers held
        T.device_entry()
        bx = T.cta_id([grid])
        tid = T.thread_id([RB * G])  # noqa: F841
        x = T.alloc_local((K * V,), dtype).view(RB, width,
                                                 layout=S[(RB, K, G, V):(G @ tx, V, 1 @ tx, 1)])
        Tx.cta.copy(x, X[bx * RB:bx * RB + RB, 0:width], fill=fill)
        Tx.cta.copy(Y[bx * RB:bx * RB + RB, 0:width], x)
        Tx.cta.copy(F[bx * RB:bx * RB + RB, 0:width], x)

    return row_copy


@pytest.mark.parametrize("rows,cols,width,dtype,fill", [
    (5, 300, 320, "float16", NEG), (4, 320, 320, "float16", NEG), (3, 120, 128, "float32", 0.0),
    (1, 64, 64, "float16", 7.0)])
def test_a_register_tile_past_the_end_of_the_array(rows, cols, width, dtype, fill):
    k = make_row_copy(rows, cols, width, dtype, fill)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((rows, cols)).astype(dtype)
    y = np.full_like(x, np.nan)
    grid = -(-rows // 2)
    f = np.full((grid * 2, width), np.nan, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tw.TilewisePerformanceWarning)
        tw.simulate(k, x, y, f)
    assert x.tobytes() == y.tobytes()
    want = np.full((grid * 2, width), fill, dtype)
    want[:rows, :cols] = x
    assert np.array_equal(f, want)


def test_the_guards_cover_only_what_may_be_outside():
    low = lower(make_row_copy(5, 300, 320), "sm_90a")
    log = low.dispatch_log
    assert [d.chosen for d in log] == ["reg"] * 3
    assert "guarded dimension(s) [0, 1]" in log[0].info[0]
    assert "vectors of 8 bytes" in log[0].info[0]  # rows of 600 bytes: 8-byte aligned
    text = low.func.script()
    # 5 vectors per thread: columns 4 + 8 * (tid % 8) + 64 k; only k = 4 can pass 300
    assert text.count("< 300") == 2 * 2 and text.count("< 5") >= 5


def test_a_start_made_with_min_or_max_is_bounded_and_guarded():
    """Chunks of 256 of a 1000-element row, walked from the last with ``T.max`` (the next
    chunk, clamped at the first): the start's bounds come through ``T.max`` (it had been
    "unbounded", trusted to stay inside, and the last chunk read past the end), so the
    chunks that may pass 1000 are guarded; the copy is checked in the simulator."""

    @T.prim_func
    def chunks(X_ptr: T.handle, Y_ptr: T.handle):
        X = T.match_buffer(X_ptr, (1000,), "float32")
        Y = T.match_buffer(Y_ptr, (4, 256), "float32")
        T.device_entry()
        tid = T.thread_id([64])  # noqa: F841
        x = T.alloc_local((4,), "float32").view(256, layout=S[(64, 4):(1 @ tx, 1)])
        for c in range(4):
            c0 = T.max(4 - c - 1, T.min(c, 0)) * 256  # 768, 512, 256, 0
            Tx.cta.copy(x, X[c0:c0 + 256])
            Tx.cta.copy(Y[c:c + 1, 0:256], x.view(1, 256, layout=S[(1, 64, 4):(0, 1 @ tx, 1)]))

    text = lower(chunks, "sm_90a").func.script()
    assert "< 1000" in text  # the guard of the chunk that passes the end
    x = np.random.default_rng(3).standard_normal(1000).astype(np.float32)
    y = np.full((4, 256), np.nan, np.float32)
    tw.simulate(chunks, x, y)
    want = np.zeros((4, 256), np.float32)  # outside the row: the copy's fill, 0
    for c in range(4):
        part = x[(3 - c) * 256:(4 - c) * 256]
        want[c, :len(part)] = part
    assert np.array_equal(y, want)


def test_ptx_keeps_16_byte_vectors_under_the_guards():
    ptx = tw.compile(make_row_copy(4, 3000, 3072, RB=1, G=128), "sm_90a").source("ptx")
    assert ptx.count("ld.global.v4.b32") == 3 and ptx.count("st.global.v4.b32") == 6


def _tail_copy(n, threads, dtype="float32", dispatch=None):
    opts = {} if dispatch is None else {"dispatch": dispatch}

    @T.prim_func
    def tail(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (n,), dtype)
        B = T.match_buffer(B_ptr, (n,), dtype)
        T.device_entry()
        tid = T.thread_id([threads])  # noqa: F841
        S_ = T.alloc_shared((n,), dtype)
        Tx.cta.copy_async(S_[0:n], A[0:n], **opts)
        T.ptx.cp_async.commit_group()
        T.ptx.cp_async.wait_group(0)
        T.cuda.cta_sync()
        Tx.cta.copy(B[0:n], S_[0:n])

    return tail


@pytest.mark.parametrize("n,threads,dtype", [(1000, 128, "float32"), (3000, 256, "float16"),
                                             (24, 32, "float16")])
def test_tiles_the_threads_do_not_divide_keep_their_vectors(n, threads, dtype):
    k = _tail_copy(n, threads, dtype)
    log = lower(k, "sm_90a").dispatch_log
    assert [d.chosen for d in log] == ["ldgsts", "gmem_smem"]
    assert all("(128 bits)" in d.info[0] and "last step guarded" in d.info[0] for d in log)
    a = np.random.default_rng(1).standard_normal(n).astype(dtype)
    b = np.full(n, np.nan, dtype)
    tw.simulate(k, a, b)
    assert a.tobytes() == b.tobytes()


def _partial_smem(cols, fill=None, dispatch=None):
    opts = {k: v for k, v in (("fill", fill), ("dispatch", dispatch)) if v is not None}

    @T.prim_func
    def partial(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (4, cols), "float32")
        B = T.match_buffer(B_ptr, (4, 64), "float32")
        T.device_entry()
        tid = T.thread_id([64])  # noqa: F841
        S_ = T.alloc_shared((4, 64), "float32")
        Tx.cta.copy_async(S_[0:4, 0:64], A[0:4, 0:64], **opts)
        T.ptx.cp_async.commit_group()
        T.ptx.cp_async.wait_group(0)
        T.cuda.cta_sync()
        Tx.cta.copy(B[0:4, 0:64], S_[0:4, 0:64])

    return partial


def test_cp_async_zero_fills_a_partial_tile():
    k = _partial_smem(40)
    a = np.random.default_rng(2).standard_normal((4, 40)).astype(np.float32)
    b = np.full((4, 64), np.nan, np.float32)
    tw.simulate(k, a, b)
    assert np.array_equal(b[:, :40], a) and (b[:, 40:] == 0).all()


def test_cp_async_cannot_fill_other_values():
    with pytest.raises(DispatchError, match="fill=-inf: cp.async fills the part of a partial "
                       "tile outside its source with zeros only"):
        lower(_partial_smem(40, fill=NEG, dispatch="ldgsts"), "sm_90a")
    # without dispatch=, the synchronous path is not an async copy: nothing else accepts
    with pytest.raises(DispatchError):
        lower(_partial_smem(40, fill=NEG), "sm_90a")


def test_tma_clips_a_compile_time_partial_tile_as_it_clips_a_symbolic_one():
    """A (100, 72) array through (128, 80) tiles: the engine fills what lies outside on the
    load and drops it on the store, at compile-time sizes as at symbolic ones (a head_dim of
    72 in 80-column tiles). The mbarrier counts the whole box."""
    @T.prim_func
    def k(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (100, 72), "float16")
        B = T.match_buffer(B_ptr, (100, 72), "float16")
        T.device_entry()
        tid = T.thread_id([128])
        S_ = T.alloc_shared((128, 80), "float16")
        bar = T.alloc_shared([1], "uint64")
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
        T.cuda.cta_sync()
        if tid == 0:
            T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 128 * 80 * 2)
            Tx.thread.copy_async(S_[0:128, 0:80], A[0:128, 0:80], dispatch="tma",
                                 mbar=T.address_of(bar[0]))
        T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 0)
        Tx.cta.add(S_[0:128, 0:80], S_[0:128, 0:80], S_[0:128, 0:80])  # the fill is zeros
        T.ptx.fence.proxy_async()
        T.cuda.cta_sync()
        if tid == 0:
            Tx.thread.copy_async(B[0:128, 0:80], S_[0:128, 0:80], dispatch="tma")
            T.ptx.cp_async.bulk.commit_group()
            T.ptx.cp_async.bulk.wait_group(0)

    a = np.random.default_rng(4).standard_normal((100, 72)).astype(np.float16)
    b = np.full((100, 72), np.nan, np.float16)
    assert tw.simulate(k, a, b).ok  # no store past the array (a bounds hazard)
    assert np.array_equal(b, a + a)


def test_variants_that_copy_whole_tiles_decline_a_partial_one():
    @T.prim_func
    def k(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (100, 64), "float16")
        T.device_entry()
        tid = T.thread_id([128])  # noqa: F841
        S_ = T.alloc_shared((128, 64), "float16")
        bar = T.alloc_shared([1], "uint64")
        Tx.cta.copy_async(S_[0:128, 0:64], A[0:128, 0:64], dispatch="bulk",
                          mbar=T.address_of(bar[0]))

    with pytest.raises(DispatchError, match=r"a partial tile.*use dispatch=\"tma\" \(it fills\)"):
        lower(k, "sm_90a")


def test_a_symbolic_array_feeds_registers_with_guards():
    """copy -> reg from a (M, 64) array (declined before: 'compile-time sizes'): 16-byte
    vectors, rows past M filled."""
    @T.prim_func
    def k(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M, 64), "float16")
        B = T.match_buffer(B_ptr, (8, 64), "float16")
        T.device_entry()
        tid = T.thread_id([64])  # noqa: F841
        x = T.alloc_local((8,), "float16").view(8, 64, layout=S[(8, 8, 8):(8 @ tx, 1 @ tx, 1)])
        Tx.cta.copy(x, A[0:8, 0:64], fill=-1.0)
        Tx.cta.copy(B[0:8, 0:64], x)

    (d, _) = lower(k, "sm_90a").dispatch_log
    assert d.chosen == "reg" and "vectors of 16 bytes" in d.info[0]
    a = np.random.default_rng(3).standard_normal((5, 64)).astype(np.float16)
    b = np.full((8, 64), np.nan, np.float16)
    tw.simulate(k, a, b)
    assert np.array_equal(b[:5], a) and (b[5:] == -1).all()


def test_a_symbolic_stride_feeds_registers_by_a_run_time_check():
    N = T.int32()

    @T.prim_func
    def k(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (4, N), "float32")
        B = T.match_buffer(B_ptr, (4, 32), "float32")
        T.device_entry()
        tid = T.thread_id([32])  # noqa: F841
        x = T.alloc_local((4,), "float32").view(4, 32, layout=S[(4, 8, 4):(8 @ tx, 1 @ tx, 1)])
        Tx.cta.copy(x, A[0:4, 0:32])
        Tx.cta.copy(B[0:4, 0:32], x)

    low = lower(k, "sm_90a")
    assert "when the run-time strides allow" in low.dispatch_log[0].info[0]
    assert "if N % 4 == 0:" in low.func.script()
    for n in (36, 33, 20):
        a = np.random.default_rng(n).standard_normal((4, n)).astype(np.float32)
        b = np.full((4, 32), np.nan, np.float32)
        tw.simulate(k, a, b)
        m = min(n, 32)
        assert np.array_equal(b[:, :m], a[:, :m]) and (b[:, m:] == 0).all()


def test_a_local_computed_from_a_symbolic_size_keeps_its_alignment():
    """`col = bx % n_tiles * 64 + tid % 8 * 8` with `n_tiles` derived from `N`: the
    alignment analysis sees through locals defined once (the code keeps them), so each
    thread's 8 registers go out as one 16-byte store under the run-time check of `N`,
    not 8 element stores (split_reduce of examples/gemm_hopper.py stored C so: 19 us of
    L2 writes at 1024 x 1024 x 16384 on the H200). The stores land where numpy says."""
    N = T.int32()

    @T.prim_func
    def k(A_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, (4, N), "float16")
        C = T.match_buffer(C_ptr, (4, N), "float16")
        T.device_entry()
        bx = T.cta_id([4])
        tid = T.thread_id([32])
        x = T.alloc_local((8,), "float16")
        n_tiles = (N + 63) // 64
        row = tid // 8
        col = bx % n_tiles * 64 + tid % 8 * 8
        if bx < n_tiles and col < N:
            Tx.thread.copy(x[0:8], A[row, col:col + 8])
            Tx.thread.copy(C[row, col:col + 8], x[0:8])

    low = lower(k, "sm_90a")
    assert all("vectors of 16 bytes" in d.info[0] for d in low.dispatch_log), [
        d.info for d in low.dispatch_log]
    assert "col: T.int32 = " in low.func.script()  # the local is kept
    ptx = tw.compile(k, "sm_90a").ptx
    assert "st.global.v4.b32" in ptx and "ld.global.v4.b32" in ptx
    for n in (200, 256, 96, 100):  # 100: N % 8 != 0, the element stores' path
        a = np.random.default_rng(n).standard_normal((4, n)).astype(np.float16)
        c = np.full((4, n), np.nan, np.float16)
        tw.simulate(k, a, c)
        assert np.array_equal(c, a), n


def test_a_slice_past_the_end_is_still_an_error_outside_a_copy():
    with pytest.raises(ScriptError, match="slice 0:128 is out of bounds for dimension 0") as e:
        @T.prim_func
        def k(A_ptr: T.handle):
            A = T.match_buffer(A_ptr, (100,), "float32")
            T.device_entry()
            tid = T.thread_id([128])  # noqa: F841
            Tx.cta.exp(A[0:128])

    assert "a Tx.copy may take a partial tile" in str(e.value)


def test_a_copy_starting_past_the_end_is_an_error():
    with pytest.raises(ScriptError, match="slice 100:128 is out of bounds"):
        @T.prim_func
        def k(A_ptr: T.handle, B_ptr: T.handle):
            A = T.match_buffer(A_ptr, (100,), "float32")
            B = T.match_buffer(B_ptr, (128,), "float32")
            T.device_entry()
            tid = T.thread_id([128])  # noqa: F841
            Tx.cta.copy(B[0:28], A[100:128])


FILE = "user_partial.py"
HEAD = """
@T.prim_func
def k(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (100,), "int32")
    B = T.match_buffer(B_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
"""


@pytest.mark.parametrize("line,message,hint", [
    ('Tx.cta.copy(B[0:128], A[0:128], fill=float("-inf"))  # <-',
     "fill=-inf cannot be stored in the int32 destination", "integer fill"),
    ('Tx.cta.copy(B[0:128], A[0:128], fill="-inf")  # <-',
     "option fill= of copy must be a compile-time number", None),
    ("Tx.cta.copy_async(B[0:128], A[0:128], fill=0.5)  # <-",
     "fill=0.5 cannot be stored in the int32 destination", "integer fill"),
])
def test_fill_must_be_a_number_that_fits_the_destination(line, message, hint):
    src = HEAD + "    " + line + "\n"
    with pytest.raises(ScriptError) as info:
        tw.from_source(src, filename=FILE)
    check_error(info.value, message, hint, src, FILE)
