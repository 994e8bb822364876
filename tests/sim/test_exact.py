"""Correct programs give exact results (bit for bit where the operation is a copy)."""

import numpy as np
import pytest

import tilewise as tw
from tilewise import T
from simhelpers import bits, poison, rand

N = 4096


@T.prim_func
def flat_copy(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (N,), "float16")
    B = T.match_buffer(B_ptr, (N,), "float16")
    T.device_entry()
    bx = T.cta_id([4])
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    off = tid * 8
    T.ptx.cp_async(T.address_of(S[off]), T.address_of(A[bx * 1024 + off]), 16)
    T.ptx.cp_async.commit_group()
    T.ptx.cp_async.wait_group(0)
    T.cuda.cta_sync()
    for i in range(8):
        B[bx * 1024 + i * 128 + tid] = S[i * 128 + tid]


def test_hand_written_cp_async_copy():
    a, b = rand(N, np.float16), poison(N, np.float16)
    report = tw.simulate(flat_copy, a, b)
    assert (bits(a) == bits(b)).all()
    assert report.instructions["ptx.cp_async"] == 4 * 128
    assert len(report.ctas) == 4 and report.ctas[0].cp_async_bytes == 2048


@T.prim_func
def vector_add(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1000,), "float32")
    B = T.match_buffer(B_ptr, (1000,), "float32")
    C = T.match_buffer(C_ptr, (1000,), "float32")
    T.device_entry()
    bx = T.cta_id([8])
    tid = T.thread_id([128])
    i = bx * 128 + tid
    if i < 1000:
        C[i] = A[i] + B[i]


def test_vector_add():
    a, b, c = rand(1000, np.float32, 1), rand(1000, np.float32, 2), poison(1000, np.float32)
    tw.simulate(vector_add, a, b, c)
    assert (bits(c) == bits(a + b)).all()


@T.prim_func
def power(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
    A = T.match_buffer(A_ptr, (256,), "float32")
    B = T.match_buffer(B_ptr, (256,), "float32")
    C = T.match_buffer(C_ptr, (256,), "float32")
    T.device_entry()
    tid = T.thread_id([256])
    C[tid] = T.pow(A[tid], B[tid])


def test_pow_matches_numpy_float32():
    a = np.abs(rand(256, np.float32, 3)) + np.float32(0.1)
    b = rand(256, np.float32, 4)
    c = poison(256, np.float32)
    tw.simulate(power, a, b, c)
    np.testing.assert_array_equal(c, np.power(a, b))


@T.prim_func
def int_semantics(A_ptr: T.handle, Q_ptr: T.handle, M_ptr: T.handle, W_ptr: T.handle,
                  F_ptr: T.handle, I_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64,), "int32")
    Q = T.match_buffer(Q_ptr, (64,), "int32")
    M = T.match_buffer(M_ptr, (64,), "int32")
    W = T.match_buffer(W_ptr, (64,), "int32")
    F = T.match_buffer(F_ptr, (64,), "float32")
    I = T.match_buffer(I_ptr, (64,), "int32")  # noqa: E741 - the letter the test reads as "int"
    T.device_entry()
    tid = T.thread_id([64])
    Q[tid] = A[tid] // 7
    M[tid] = A[tid] % 7
    W[tid] = A[tid] * 65537
    I[tid] = T.cast(F[tid], "int32")


def test_integer_floor_wrap_and_truncating_cast():
    a = rand(64, np.int32, 5) // 1000
    f = rand(64, np.float32, 6) * 10
    q, m, w, i = (poison(64, np.int32) for _ in range(4))
    tw.simulate(int_semantics, a, q, m, w, f, i)
    np.testing.assert_array_equal(q, a // 7)
    np.testing.assert_array_equal(m, a % 7)
    np.testing.assert_array_equal(w, (a.astype(np.int64) * 65537).astype(np.int32))
    np.testing.assert_array_equal(i, np.trunc(f).astype(np.int32))


@T.prim_func
def divergent(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "bfloat16")
    B = T.match_buffer(B_ptr, (128,), "bfloat16")
    T.device_entry()
    tid = T.thread_id([128])
    acc = T.bfloat16(0)
    for k in range(tid % 5):  # per-thread trip count
        acc = acc + A[tid]
    if tid % 3 == 0:
        B[tid] = acc
    else:
        B[tid] = A[tid] * T.bfloat16(2)


def test_divergent_branches_and_loops_bfloat16():
    import ml_dtypes

    a, b = rand(128, ml_dtypes.bfloat16, 7), poison(128, ml_dtypes.bfloat16)
    tw.simulate(divergent, a, b)
    want = np.empty_like(a)
    for t in range(128):
        acc = ml_dtypes.bfloat16(0)
        for _ in range(t % 5):
            acc = ml_dtypes.bfloat16(acc + a[t])
        want[t] = acc if t % 3 == 0 else ml_dtypes.bfloat16(a[t] * ml_dtypes.bfloat16(2))
    assert (bits(b) == bits(want)).all()


@T.prim_func
def zero_fill(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (512,), "uint8")
    B = T.match_buffer(B_ptr, (512,), "uint8")
    T.device_entry()
    tid = T.thread_id([32])
    S = T.alloc_shared((512,), "uint8")
    T.ptx.cp_async(T.address_of(S[tid * 16]), T.address_of(A[tid * 16]), 16, tid % 17)
    T.ptx.cp_async.wait_all()
    T.ptx.ld_st(T.address_of(B[tid * 16]), T.address_of(S[tid * 16]), 16)


def test_src_size_zero_fill_and_ld_st():
    a, b = rand(512, np.uint8, 8) | 1, poison(512, np.uint8)
    tw.simulate(zero_fill, a, b)
    want = a.reshape(32, 16).copy()
    for t in range(32):
        want[t, t % 17:] = 0
    np.testing.assert_array_equal(b.reshape(32, 16), want)


def test_argument_checks_name_the_parameter():
    a = rand(N, np.float16)
    with pytest.raises(tw.LaunchError, match="'B'.*dtype float32"):
        tw.simulate(flat_copy, a, np.zeros(N, np.float32))
    with pytest.raises(tw.LaunchError, match=r"'A' has shape \(4095,\), the kernel expects "
                       r"\(4096,\)"):
        tw.simulate(flat_copy, a[:-1].copy(), poison(N, np.float16))
    with pytest.raises(tw.LaunchError, match="takes 2 argument"):
        tw.simulate(flat_copy, a)


@T.prim_func
def tile_copy(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (32, 16), "float32")
    B = T.match_buffer(B_ptr, (32, 16), "float32")
    T.device_entry()
    tid = T.thread_id([32])
    for j in range(16):
        B[tid, j] = A[tid, j]


def test_an_array_of_the_right_size_in_another_shape_is_refused_as_on_the_gpu():
    """The GPU launcher checks a constant-shaped buffer's shape exactly; so does the
    simulator (it took any array of the element count, which then failed on the GPU)."""
    a, b = rand((32, 16), np.float32), poison((32, 16), np.float32)
    with pytest.raises(tw.LaunchError, match=r"'A' has shape \(512,\), the kernel expects "
                       r"\(32, 16\)") as e:
        tw.simulate(tile_copy, a.reshape(-1), b)
    assert "x.reshape(32, 16) of a contiguous x" in e.value.hint
    tw.simulate(tile_copy, a, b)
    np.testing.assert_array_equal(b, a)


N_ = T.int32()


@T.prim_func
def strided_fp8_copy(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (N_, 4), "float8_e5m2", strides=(8, 1))
    B = T.match_buffer(B_ptr, (N_, 4), "float8_e5m2")
    T.device_entry()
    tid = T.thread_id([32])
    if tid < N_:
        for j in range(4):
            B[tid, j] = A[tid, j]


def test_symbolic_fp8_arguments_with_strides():
    """A run-time-sized float8_e5m2 argument that is a strided view (4 of every 8 columns):
    numpy cannot rebuild an array of that ml_dtypes type through as_strided ('<f1' not
    understood: found by the fuzzer), so the simulator reads the bytes as words."""
    import ml_dtypes

    whole = rand((20, 8), np.float32).astype(ml_dtypes.float8_e5m2)
    out = np.zeros((20, 4), ml_dtypes.float8_e5m2)
    tw.simulate(strided_fp8_copy, whole[:, :4], out)
    np.testing.assert_array_equal(out.view(np.uint8), whole[:, :4].view(np.uint8))


def test_target_without_the_feature_is_refused():
    with pytest.raises(tw.TilewiseError, match="cp"):
        tw.simulate(flat_copy, rand(N, np.float16), poison(N, np.float16), target="sm_75")


def test_seed_ldgsts_copy_simulates_to_b_equals_a():
    import runpy

    seed = runpy.run_path("examples/ldgsts_copy.py")
    a, b = seed["inputs"](np.random.default_rng(2))
    report = tw.simulate(seed["copy_async"], a, b, target=seed["TARGET"])
    assert (bits(a) == bits(b)).all()
    assert report.instructions["ptx.cp_async"] > 0 and report.ok
