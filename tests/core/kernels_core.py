"""Kernels for the language core, each with its inputs and an independent numpy
reference: loop-carried and branch-assigned locals, while/break/continue, scalar
parameters, symbolic sizes and PTX-exact arithmetic. Shared by the simulator and GPU runs
(``test_core_executors.py``)."""

import numpy as np

from tilewise import T, Tx

N = 128
M = T.int32()  # a symbolic size: one kernel for every array length
R = T.int32()
C = T.int32()
LD = T.int32()


def poison(n, dtype):
    return np.full(n, 77, dtype) if np.dtype(dtype).kind in "iu" else np.full(n, np.nan, dtype)


# ---------------------------------------------------------------- loop-carried reduction
def make_row_sum(dtype="float32", width=8):
    @T.prim_func
    def row_sum(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (N, width), dtype)
        B = T.match_buffer(B_ptr, (N,), dtype)
        T.device_entry()
        tid = T.thread_id([N])
        s = 0.0  # promoted to a run-time local of A's dtype: the loop changes it
        for j in range(width):
            s = s + A[tid, j]
        B[tid] = s

    return row_sum


def row_sum_inputs(rng, dtype="float32", width=8):
    return [rng.standard_normal((N, width)).astype(dtype), poison(N, dtype)]


def row_sum_reference(a, b):
    s = np.zeros(N, a.dtype)
    for j in range(a.shape[1]):  # the same order and rounding as the kernel
        s = (s + a[:, j]).astype(a.dtype)
    return [a, s]


# ---------------------------------------------------------------- branch assignment
@T.prim_func
def branch_assign(A_ptr: T.handle, B_ptr: T.handle, Cc_ptr: T.handle):
    A = T.match_buffer(A_ptr, (N,), "float32")
    B = T.match_buffer(B_ptr, (N,), "float32")
    Cc = T.match_buffer(Cc_ptr, (N,), "int32")
    T.device_entry()
    tid = T.thread_id([N])
    x = 0.0
    if tid > 5:
        x = A[tid]
    if tid % 3 == 0:
        y = 1
    elif tid % 3 == 1:
        y = 20
    else:
        y = tid * 100
    B[tid] = x
    Cc[tid] = y


def branch_assign_inputs(rng):
    return [rng.standard_normal(N).astype(np.float32), poison(N, np.float32),
            poison(N, np.int32)]


def branch_assign_reference(a, b, c):
    t = np.arange(N)
    y = np.where(t % 3 == 0, 1, np.where(t % 3 == 1, 20, t * 100)).astype(np.int32)
    return [a, np.where(t > 5, a, 0).astype(np.float32), y]


# ---------------------------------------------------------------- while, break, continue
@T.prim_func
def collatz(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (N,), "int32")
    B = T.match_buffer(B_ptr, (N,), "int32")
    T.device_entry()
    tid = T.thread_id([N])
    n = A[tid]
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
        if steps >= 200:
            break
    B[tid] = steps


def collatz_inputs(rng):
    return [rng.integers(1, 5000, N).astype(np.int32), poison(N, np.int32)]


def collatz_reference(a, b):
    out = []
    for n in a.tolist():
        s = 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            s += 1
            if s >= 200:
                break
        out.append(s)
    return [a, np.array(out, np.int32)]


@T.prim_func
def skip_and_stop(A_ptr: T.handle, B_ptr: T.handle):
    """continue skips odd elements, break stops at the first negative one (per thread)."""
    A = T.match_buffer(A_ptr, (N, 16), "int32")
    B = T.match_buffer(B_ptr, (N,), "int32")
    T.device_entry()
    tid = T.thread_id([N])
    total = 0
    phase = 0
    for j in range(16):
        phase = phase ^ 1  # a uniform loop-carried toggle
        v = A[tid, j]
        if v < 0:
            break
        if v % 2 == 1:
            continue
        total += v * (phase + 1)
    B[tid] = total


def skip_and_stop_inputs(rng):
    return [rng.integers(-3, 40, (N, 16)).astype(np.int32), poison(N, np.int32)]


def skip_and_stop_reference(a, b):
    out = []
    for row in a.tolist():
        total, phase = 0, 0
        for v in row:
            phase ^= 1
            if v < 0:
                break
            if v % 2 == 1:
                continue
            total += v * (phase + 1)
        out.append(total)
    return [a, np.array(out, np.int32)]


@T.prim_func
def carried_pair(B_ptr: T.handle):
    """Promotion to a fixpoint: `b = a` reads a value only the loop changes."""
    B = T.match_buffer(B_ptr, (N,), "int32")
    T.device_entry()
    tid = T.thread_id([N])
    a = 0
    b = 0
    for i in range(tid % 7):
        b = a
        a = a + i + 1
    B[tid] = a * 1000 + b


def carried_pair_inputs(rng):
    return [poison(N, np.int32)]


def carried_pair_reference(b):
    out = []
    for t in range(N):
        a = bb = 0
        for i in range(t % 7):
            bb = a
            a = a + i + 1
        out.append(a * 1000 + bb)
    return [np.array(out, np.int32)]


@T.prim_func
def stepped(B_ptr: T.handle, n: T.int32):
    """range with a step: up from the thread id by 7 to a run-time stop, down by 3."""
    B = T.match_buffer(B_ptr, (N,), "int32")
    T.device_entry()
    tid = T.thread_id([N])
    s = 0
    for i in range(tid, n, 7):
        s = s + i
    for j in range(10, tid % 16, -3):
        s = s + 100 * j
    B[tid] = s


def stepped_inputs(rng):
    return [poison(N, np.int32), 50]


def stepped_reference(b, n):
    return [np.array([sum(range(t, n, 7)) + 100 * sum(range(10, t % 16, -3)) for t in range(N)],
                     np.int32), n]


# ---------------------------------------------------------------- scalar parameters
@T.prim_func
def scalars(A_ptr: T.handle, B_ptr: T.handle, n: T.int32, alpha: T.float32, off: T.uint32,
            flag: T.bool, h: T.float16, k: T.int8, big: T.int64):
    A = T.match_buffer(A_ptr, (N,), "float32")
    B = T.match_buffer(B_ptr, (N, 4), "float32")
    T.device_entry()
    tid = T.thread_id([N])
    if tid < n:
        B[tid, 0] = alpha * A[tid]
    else:
        B[tid, 0] = -1.0
    B[tid, 1] = T.cast(off + T.cast(tid, "uint32"), "float32")
    B[tid, 2] = T.cast(h, "float32") if flag else T.cast(k, "float32")
    B[tid, 3] = T.cast(big // 1000000, "float32")


def scalars_args(rng, flag=True):
    return [rng.standard_normal(N).astype(np.float32), poison(N * 4, np.float32).reshape(N, 4),
            100, 0.25, 4000000000, flag, np.float16(1.5), -7, 5_000_000_000_000]


def scalars_reference(a, b, n, alpha, off, flag, h, k, big):
    t = np.arange(N)
    out = np.empty((N, 4), np.float32)
    out[:, 0] = np.where(t < n, np.float32(alpha) * a, -1.0)
    out[:, 1] = ((off + t) % 2**32).astype(np.float32)
    out[:, 2] = np.float32(h) if flag else np.float32(k)
    out[:, 3] = np.float32(big // 1000000)
    return [a, out, n, alpha, off, flag, h, k, big]


# ---------------------------------------------------------------- symbolic sizes
@T.prim_func
def axpy(A_ptr: T.handle, B_ptr: T.handle, alpha: T.float32):
    A = T.match_buffer(A_ptr, (M,), "float32")
    B = T.match_buffer(B_ptr, (M,), "float32")
    T.device_entry()
    bx = T.cta_id([T.ceildiv(M, 128)])
    tid = T.thread_id([128])
    i = bx * 128 + tid
    if i < M:
        B[i] = alpha * A[i] + B[i]


def axpy_args(rng, m):
    return [rng.standard_normal(m).astype(np.float32),
            rng.standard_normal(m).astype(np.float32), 0.5]


def axpy_reference(a, b, alpha):
    return [a, (np.float32(alpha) * a + b).astype(np.float32), alpha]


@T.prim_func
def strided_transpose(A_ptr: T.handle, B_ptr: T.handle):
    """A (R, C) view with a leading dimension LD (a slice of a wider array) into B^T."""
    A = T.match_buffer(A_ptr, (R, C), "int32", strides=(LD, 1))
    B = T.match_buffer(B_ptr, (C, R), "int32")
    T.device_entry()
    bx = T.cta_id([R])
    tid = T.thread_id([32])
    c = tid
    while c < C:
        B[c, bx] = A[bx, c]
        c += 32


def strided_args(rng, rows, cols, ld):
    base = rng.integers(-1000, 1000, (rows, ld)).astype(np.int32)
    return [base[:, :cols], np.full((cols, rows), 77, np.int32)]


def strided_reference(a, b):
    return [a, np.ascontiguousarray(a.T)]


# ---------------------------------------------------------------- PTX-exact arithmetic
@T.prim_func
def int_edges(A_ptr: T.handle, S_ptr: T.handle, O_ptr: T.handle, Q_ptr: T.handle):
    """Shifts at and past the width, division by zero and MIN // -1, int8 wrap."""
    A = T.match_buffer(A_ptr, (N,), "int32")
    S = T.match_buffer(S_ptr, (N,), "int32")
    O = T.match_buffer(O_ptr, (N, 6), "int32")  # noqa: E741
    Q = T.match_buffer(Q_ptr, (N, 3), "int8")
    T.device_entry()
    tid = T.thread_id([N])
    a = A[tid]
    s = S[tid]
    O[tid, 0] = a << s
    O[tid, 1] = a >> s
    O[tid, 2] = T.cast(T.cast(a, "uint32") >> T.cast(s, "uint32"), "int32")
    O[tid, 3] = a // s
    O[tid, 4] = a % s
    O[tid, 5] = a >> 33
    q = T.cast(a, "int8")
    Q[tid, 0] = q << 9
    Q[tid, 1] = q << T.cast(s, "int8")
    Q[tid, 2] = q * q


def int_edges_inputs(rng):
    a = rng.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    a[:4] = [-2**31, -2**31, 7, -9]
    s = rng.integers(-40, 40, N).astype(np.int32)
    s[:4] = [-1, 0, 0, 0]  # MIN // -1, MIN // 0, 7 // 0, -9 // 0
    s[4:12] = [31, 32, 33, 64, -1, -32, 1, 2]
    return [a, s, poison(N * 6, np.int32).reshape(N, 6), poison(N * 3, np.int8).reshape(N, 3)]


def _shl(a, s, bits):
    c = s % 2**32
    return 0 if c >= bits else a << c


def _shr(a, s, bits, signed):
    c = s % 2**32
    if c >= bits:
        return -1 if signed and a < 0 else 0
    return a >> c


def _wrap(v, bits):
    v %= 2**bits
    return v - 2**bits if v >= 2 ** (bits - 1) else v


def _floordiv(a, b, bits):
    if b == 0:
        return -1
    return _wrap(a // b, bits)


def _mod(a, b):
    return a if b == 0 else a % b


def int_edges_reference(a, s, o, q):
    """PTX semantics, element by element on Python ints (docs/ir.md, "Arithmetic")."""
    out = np.empty((N, 6), np.int64)
    qq = np.empty((N, 3), np.int64)
    for i, (x, c) in enumerate(zip(a.tolist(), s.tolist())):
        xu = x % 2**32
        out[i] = [_wrap(_shl(x, c, 32), 32), _shr(x, c, 32, True),
                  _wrap(_shr(xu, c, 32, False), 32), _floordiv(x, c, 32), _mod(x, c),
                  -1 if x < 0 else 0]
        x8 = _wrap(x, 8)
        qq[i] = [0, _wrap(_shl(x8, _wrap(c, 8) % 2**8, 8), 8), _wrap(x8 * x8, 8)]
    return [a, s, out.astype(np.int32), qq.astype(np.int8)]


@T.prim_func
def float_edges(X_ptr: T.handle, I_ptr: T.handle, U_ptr: T.handle, F_ptr: T.handle):
    """float -> int saturates (NaN -> 0), float // and % floor, min/max ignore NaN."""
    X = T.match_buffer(X_ptr, (N,), "float32")
    I = T.match_buffer(I_ptr, (N, 2), "int32")  # noqa: E741
    U = T.match_buffer(U_ptr, (N, 2), "uint8")
    F = T.match_buffer(F_ptr, (N, 5), "float32")
    T.device_entry()
    tid = T.thread_id([N])
    x = X[tid]
    F[tid, 4] = T.cast(T.cast(x, "float16"), "float32")
    I[tid, 0] = T.cast(x, "int32")
    I[tid, 1] = T.cast(T.cast(x, "int8"), "int32")
    U[tid, 0] = T.cast(x, "uint8")
    U[tid, 1] = T.cast(x * 0.5, "uint8")
    F[tid, 0] = x // 3.0
    F[tid, 1] = x % 3.0
    F[tid, 2] = T.min(x, float("nan"))
    F[tid, 3] = T.max(x, float("-inf"))


def float_edges_inputs(rng):
    x = (rng.standard_normal(N) * 400).astype(np.float32)
    x[:8] = [np.nan, np.inf, -np.inf, 3e9, -3e9, 255.9, -0.7, 1e-30]
    x[8] = np.uint32(0x7FC01234).view(np.float32)  # a NaN with a payload
    return [x, poison(N * 2, np.int32).reshape(N, 2), poison(N * 2, np.uint8).reshape(N, 2),
            poison(N * 5, np.float32).reshape(N, 5)]


def _sat(v, lo, hi):
    if v != v:
        return 0
    if v == float("inf"):
        return hi
    if v == float("-inf"):
        return lo
    return max(lo, min(hi, int(v)))


def float_edges_reference(x, i, u, f):
    ii = np.array([[_sat(v, -2**31, 2**31 - 1), _sat(v, -128, 127)] for v in x.tolist()],
                  np.int32)
    half = (x * np.float32(0.5)).astype(np.float32)
    uu = np.array([[_sat(v, 0, 255), _sat(h, 0, 255)] for v, h in zip(x.tolist(), half.tolist())],
                  np.uint8)
    with np.errstate(all="ignore"):
        q = np.floor((x / np.float32(3.0)).astype(np.float32))
        r = (x - (q * np.float32(3.0)).astype(np.float32)).astype(np.float32)
        h = x.astype(np.float16).astype(np.float32)
    ff = np.stack([q, r, np.fmin(x, np.float32(np.nan)), np.fmax(x, np.float32(-np.inf)), h],
                  axis=1).astype(np.float32)
    canonical = np.uint32(0x7FFFFFFF).view(np.float32)  # PTX returns the canonical NaN
    return [x, ii, uu, np.where(np.isnan(ff), canonical, ff)]


# ---------------------------------------------------------------- tile primitives, symbolic
def make_tile_copy(dtype="float16", cols=64, tm=32):
    """A (M, cols) array copied through shared memory by 32-row tiles: the last tile hangs
    over the end when M is not a multiple of 32 (loads zero-fill, stores are skipped)."""

    @T.prim_func
    def tile_copy(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M, cols), dtype)
        B = T.match_buffer(B_ptr, (M, cols), dtype)
        T.device_entry()
        bx = T.cta_id([T.ceildiv(M, tm)])
        tid = T.thread_id([128])
        S = T.alloc_shared((tm, cols), dtype)
        r0 = bx * tm
        Tx.cta.copy_async(S[0:tm, 0:cols], A[r0:r0 + tm, 0:cols], dispatch="ldgsts")
        T.ptx.cp_async.commit_group()
        T.ptx.cp_async.wait_group(0)
        T.cuda.cta_sync()
        Tx.cta.copy(B[r0:r0 + tm, 0:cols], S[0:tm, 0:cols])

    return tile_copy


def tile_copy_args(rng, m, dtype="float16", cols=64):
    from tilewise.ir.dtype import dtype as tw_dtype

    d = tw_dtype(dtype).numpy()
    a = rng.standard_normal((m, cols)).astype(d)
    return [a, np.full((m, cols), 7, d)]


def tile_copy_reference(a, b):
    return [a, a.copy()]
