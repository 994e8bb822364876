"""Kernels that pin down arithmetic semantics both executors must share: floor division
and modulo on signed values, wrap-around, and conversions (docs/ir.md)."""

import numpy as np

from tilewise import T

N = 256


@T.prim_func
def int_divmod(A_ptr: T.handle, B_ptr: T.handle, Q_ptr: T.handle, R_ptr: T.handle,
               W_ptr: T.handle):
    A = T.match_buffer(A_ptr, (N,), "int32")
    B = T.match_buffer(B_ptr, (N,), "int32")
    Q = T.match_buffer(Q_ptr, (N,), "int32")
    R = T.match_buffer(R_ptr, (N,), "int32")
    W = T.match_buffer(W_ptr, (N,), "int32")
    T.device_entry()
    tid = T.thread_id([N])
    Q[tid] = A[tid] // B[tid]
    R[tid] = A[tid] % B[tid]
    W[tid] = A[tid] * 65599 + 2147483000  # wraps at 32 bits


def int_divmod_inputs(rng):
    a = rng.integers(-100000, 100000, N, dtype=np.int32)
    b = rng.integers(1, 1000, N, dtype=np.int32) * rng.choice(np.array([-1, 1], np.int32), N)
    poison = [np.full(N, -7, np.int32) for _ in range(3)]
    return [a, b, *poison]


def int_divmod_reference(a, b, q, r, w):
    with np.errstate(over="ignore"):
        wrap = (a.astype(np.int64) * 65599 + 2147483000).astype(np.int64)
    wrap = ((wrap + 2**31) % 2**32 - 2**31).astype(np.int32)
    return [a, b, a // b, a % b, wrap]


@T.prim_func
def conversions(X_ptr: T.handle, I_ptr: T.handle, H_ptr: T.handle, F_ptr: T.handle):
    X = T.match_buffer(X_ptr, (N,), "float32")
    I = T.match_buffer(I_ptr, (N,), "int32")  # noqa: E741
    H = T.match_buffer(H_ptr, (N,), "float16")
    F = T.match_buffer(F_ptr, (N,), "float32")
    T.device_entry()
    tid = T.thread_id([N])
    I[tid] = T.cast(X[tid], "int32")  # truncates toward zero
    H[tid] = T.cast(X[tid], "float16")  # rounds to nearest even
    F[tid] = T.cast(I[tid], "float32") + T.cast(H[tid], "float32")


def conversions_inputs(rng):
    x = (rng.standard_normal(N) * 3000).astype(np.float32)
    return [x, np.full(N, -7, np.int32), np.full(N, np.nan, np.float16),
            np.full(N, np.nan, np.float32)]


def conversions_reference(x, i, h, f):
    ii = x.astype(np.int32)
    hh = x.astype(np.float16)
    return [x, ii, hh, ii.astype(np.float32) + hh.astype(np.float32)]
