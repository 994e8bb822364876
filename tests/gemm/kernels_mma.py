"""mma.sync kernels for the gemm tests: A (M, K) and B (K, N) staged in shared memory, loaded
into register fragments by ``Tx.<scope>.copy`` (ldmatrix), multiplied by ``Tx.<scope>.gemm``
(mma.sync), the accumulator written back (through shared memory by stmatrix, or straight
to global memory)."""

import numpy as np

from tilewise import T, Tx
from tilewise.ir.dtype import dtype as tw_dtype
from tilewise.layout import S, TileLayout, mma_fragment, swizzled_tile

SCOPES = {"warp": ((1, 1), "warpid", 32), "wg": ((4, 1), "wid_in_wg", 128),
          "cta": ((2, 2), "warpid", 128)}


def shared_layout(rows, cols, bits, major="row", swizzle=0):
    """``"row"``: row-major (``swizzle`` > 0: :func:`swizzled_tile` blocks of that many
    bytes); ``"col"``: column-major (the other dimension contiguous)."""
    if major == "col":
        return TileLayout(S[(rows, cols):(1, rows)])
    if swizzle:
        return swizzled_tile(rows, cols, bits, swizzle)
    return TileLayout(S[(rows, cols)])


def make_mma(M=16, N=8, K=16, a="float16", b=None, acc="float32", scope="warp", accum=False,
             b_major=None, swizzle=0, chunks=1, store="global"):
    """C (+)= A @ B. ``chunks`` > 1: K in that many register loads, each followed by one
    gemm with the run-time ``accum=kk > 0`` (or True with ``accum``). ``store``:
    ``"global"`` (registers -> global) or ``"stmatrix"`` (registers -> shared -> global)."""
    b = b or a
    bits_a, bits_b = tw_dtype(a).bits, tw_dtype(b).bits
    b_major = b_major or ("row" if bits_b == 16 else "col")
    warps, axis, threads = SCOPES[scope]
    kc = K // chunks
    la = mma_fragment("A", (M, kc), bits_a, warps, axis)
    lb = mma_fragment("B", (kc, N), bits_b, warps, axis)
    lc = mma_fragment("C", (M, N), 32, warps, axis)
    sa = shared_layout(M, K, bits_a, "row", swizzle)
    sb = shared_layout(K, N, bits_b, b_major, swizzle if b_major == "row" else 0)
    tx = {"warp": Tx.warp, "wg": Tx.wg, "cta": Tx.cta}[scope]
    runtime = chunks > 1 and not accum

    @T.prim_func
    def mma_tile(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, (M, K), a)
        B = T.match_buffer(B_ptr, (K, N), b)
        C = T.match_buffer(C_ptr, (M, N), acc)
        T.device_entry()
        tid = T.thread_id([threads])
        As = T.alloc_shared((M, K), a, layout=sa, align=1024)
        Bs = T.alloc_shared((K, N), b, layout=sb, align=1024)
        Ar = T.alloc_local((M, kc), a, layout=la)
        Br = T.alloc_local((kc, N), b, layout=lb)
        Cr = T.alloc_local((M, N), acc, layout=lc)
        Tx.cta.copy(As[:, :], A[:, :])
        Tx.cta.copy(Bs[:, :], B[:, :])
        if accum:
            tx.copy(Cr[:, :], C[:, :])
        T.cuda.cta_sync()
        for kk in range(chunks):
            tx.copy(Ar[:, :], As[:, kk * kc:kk * kc + kc])
            tx.copy(Br[:, :], Bs[kk * kc:kk * kc + kc, :])
            if accum:
                tx.gemm(Cr[:, :], Ar[:, :], Br[:, :], accum=True)
            elif runtime:
                tx.gemm(Cr[:, :], Ar[:, :], Br[:, :], accum=kk > 0)
            else:
                tx.gemm(Cr[:, :], Ar[:, :], Br[:, :])
        if store == "stmatrix":
            Cs = T.alloc_shared((M, N), acc)
            tx.copy(Cs[:, :], Cr[:, :])
            T.cuda.cta_sync()
            Tx.cta.copy(C[:, :], Cs[:, :])
        else:
            tx.copy(C[:, :], Cr[:, :])

    return mma_tile


def inputs(rng, M, N, K, a="float16", b=None, acc="float32", dyadic=False):
    """Random A, B (never zero) and a C of random values (the accumulator's start)."""
    b = b or a
    return [_values(rng, (M, K), a, dyadic), _values(rng, (K, N), b, dyadic),
            _values(rng, (M, N), acc, dyadic)]


def _values(rng, shape, dtype, dyadic):
    d = tw_dtype(dtype).numpy()
    if dtype in ("int8", "uint8", "int32"):
        lo, hi = {"int8": (-128, 128), "uint8": (1, 256), "int32": (-2**20, 2**20)}[dtype]
        v = rng.integers(lo, hi, shape)
        return np.where(v == 0, 1, v).astype(d)
    if dyadic:  # multiples of 1/8: every product and sum is exact in float64
        v = rng.integers(1, 64, shape) * rng.choice([-1, 1], shape) / 8
        return v.astype(d)
    v = rng.standard_normal(shape) * (4.0 if "float8" in dtype else 1.0)
    v = np.where(np.abs(v) < 1e-3, 0.5, v)
    return v.astype(d)


def poison(c: np.ndarray) -> np.ndarray:
    """C filled with a value no correct kernel leaves (NaN for floats, a marker for ints)."""
    out = np.empty_like(c)
    if np.issubdtype(c.dtype, np.integer):
        out[...] = -0x5A5A5A5A
    else:
        out[...] = np.nan
    return out


def as_f64(x: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "float32":  # tf32: the 13 low mantissa bits are ignored
        return (x.view(np.uint32) & 0xFFFFE000).view(np.float32).astype(np.float64)
    return x.astype(np.float64 if not np.issubdtype(x.dtype, np.integer) else np.int64)


def reference(a, b, c0, a_t, b_t, acc, accum, k_inst):
    """C as the simulator defines it: per K-step of ``k_inst``, C = round_acc(C + A_k @ B_k)
    with the step's sum exact (integer or float64) and the int32 accumulator wrapping."""
    a64, b64 = as_f64(a, a_t), as_f64(b, b_t)
    if acc == "int32":
        c = c0.astype(np.int64) if accum else np.zeros(c0.shape, np.int64)
        c = c + a64 @ b64
        return ((c + 2**31) % 2**32 - 2**31).astype(np.int32)
    d = tw_dtype(acc).numpy()
    c = c0.astype(d) if accum else np.zeros(c0.shape, d)
    for k0 in range(0, a.shape[1], k_inst):
        c = (c.astype(np.float64) + a64[:, k0:k0 + k_inst] @ b64[k0:k0 + k_inst]).astype(d)
    return c


# ---- the instructions themselves (T.ptx.*), one warp, registers from global memory --------
def direct_mma(a, b, acc):
    """``T.ptx.mma_sync`` (``mma_sync_fp8``) once: lane l's A, B and C registers are rows l
    of the uint32 arrays A (32, 4), B (32, 2), C (32, 2 or 4); D is written over C."""
    from tilewise.ptx import mma

    nc = mma.c_regs(acc)
    fp8 = a in mma.FP8

    @T.prim_func
    def mma_direct(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, (32, 4), "uint32")
        B = T.match_buffer(B_ptr, (32, 2), "uint32")
        C = T.match_buffer(C_ptr, (32, nc), "uint32")
        T.device_entry()
        lane = T.thread_id([32])
        R = T.alloc_local((nc,), "uint32")
        for i in T.unroll(nc):
            R[i] = C[lane, i]
        if fp8:
            T.ptx.mma_sync_fp8(a, b, acc, A[lane, 0], A[lane, 1], A[lane, 2], A[lane, 3],
                               B[lane, 0], B[lane, 1], *[R[i] for i in range(nc)])
        else:
            T.ptx.mma_sync(a, b, acc, A[lane, 0], A[lane, 1], A[lane, 2], A[lane, 3],
                           B[lane, 0], B[lane, 1], *[R[i] for i in range(nc)])
        for i in T.unroll(nc):
            C[lane, i] = R[i]

    return mma_direct


def pack(tile: np.ndarray, coords, regs: int) -> np.ndarray:
    """(32, regs) uint32: the fragment registers of ``tile`` (element i of lane l at
    ``coords(l, i)``; little-endian halves/bytes in register order)."""
    e = 4 // tile.dtype.itemsize
    lane, i = np.meshgrid(np.arange(32), np.arange(regs * e), indexing="ij")
    r, c = coords(lane, i)
    return np.ascontiguousarray(tile[r, c]).view(np.uint8).view(np.uint32).reshape(32, regs)


def direct_matrix(store: bool, num: int, trans: bool):
    """One ``T.ptx.ldmatrix`` (or ``stmatrix``) of ``num`` matrices: lane l addresses row l
    of a (32, 8) uint16 shared tile S (matrix j = rows 8j..8j+7). Load: S from G, the
    registers to W (32, num) uint32. Store: the registers from W, S's rows 0..8 num - 1
    to G."""

    @T.prim_func
    def matrix_direct(G_ptr: T.handle, W_ptr: T.handle):
        G = T.match_buffer(G_ptr, (32, 8), "uint16")
        W = T.match_buffer(W_ptr, (32, num), "uint32")
        T.device_entry()
        lane = T.thread_id([32])
        S = T.alloc_shared((32, 8), "uint16")
        R = T.alloc_local((num,), "uint32")
        if store:
            for i in T.unroll(num):
                R[i] = W[lane, i]
            T.ptx.stmatrix(T.address_of(S[lane, 0]), num, trans, *[R[i] for i in range(num)])
            T.cuda.cta_sync()
            if lane < 8 * num:  # the rows the matrices cover
                for j in T.unroll(8):
                    G[lane, j] = S[lane, j]
        else:
            for j in T.unroll(8):
                S[lane, j] = G[lane, j]
            T.cuda.cta_sync()
            T.ptx.ldmatrix(T.address_of(S[lane, 0]), num, trans, *[R[i] for i in range(num)])
            for i in T.unroll(num):
                W[lane, i] = R[i]

    return matrix_direct


def matrix_words(s: np.ndarray, num: int, trans: bool) -> np.ndarray:
    """(32, num) uint32 the registers ldmatrix gives (PTX ISA §9.7.14.5.15, written out):
    lane l, register j: row l // 4, elements 2 (l % 4) and 2 (l % 4) + 1 of matrix j, or
    with .trans rows 2 (l % 4) and 2 (l % 4) + 1 of column l // 4."""
    out = np.zeros((32, num), np.uint32)
    for lane in range(32):
        for j in range(num):
            m = s[8 * j:8 * j + 8].astype(np.uint32)
            g, t = lane // 4, lane % 4
            lo, hi = ((m[2 * t, g], m[2 * t + 1, g]) if trans
                      else (m[g, 2 * t], m[g, 2 * t + 1]))
            out[lane, j] = lo | (hi << 16)
    return out


# ---- copy -> ld_stmatrix round trips ----------------------------------------------------
def roundtrip(reg_layout, shape, dtype="float16", smem_layout=None, store=False, scope="warp",
              threads=32, col0=0):
    """G (shape) -> registers -> Out through shared memory. Load (``store=False``): G -> S
    (``smem_layout``) by Tx.cta.copy, S -> R by ``Tx.<scope>.copy`` (the copy under test),
    R -> Out. Store: G -> R, R -> S by the copy under test, S -> Out. ``col0``: the register
    tile sits at column ``col0`` of a wider shared tile."""
    rows, cols = shape
    tx = {"warp": Tx.warp, "wg": Tx.wg, "cta": Tx.cta}[scope]
    scols = cols + col0

    @T.prim_func
    def ldst_roundtrip(G_ptr: T.handle, Out_ptr: T.handle):
        G = T.match_buffer(G_ptr, (rows, cols), dtype)
        Out = T.match_buffer(Out_ptr, (rows, cols), dtype)
        T.device_entry()
        tid = T.thread_id([threads])
        S = T.alloc_shared((rows, scols), dtype, layout=smem_layout, align=1024)
        R = T.alloc_local((rows, cols), dtype, layout=reg_layout)
        if store:
            tx.copy(R[:, :], G[:, :])
            tx.copy(S[:, col0:col0 + cols], R[:, :])
            T.cuda.cta_sync()
            Tx.cta.copy(Out[:, :], S[:, col0:col0 + cols])
        else:
            Tx.cta.copy(S[:, col0:col0 + cols], G[:, :])
            T.cuda.cta_sync()
            tx.copy(R[:, :], S[:, col0:col0 + cols])
            tx.copy(Out[:, :], R[:, :])

    return ldst_roundtrip
