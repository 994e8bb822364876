"""The instructions themselves: ``T.ptx.mma_sync`` / ``mma_sync_fp8`` on fragments packed by
numpy, ``T.ptx.ldmatrix`` / ``stmatrix`` against the PTX ISA's thread <-> row mapping written
out (kernels_mma.matrix_words), in the simulator and (marked gpu) on the H200; their hazards
at the user's line."""

import numpy as np
import pytest

import kernels_mma as G
import tilewise as tw
from executors import run
from tilewise import from_source
from tilewise.errors import HazardError
from tilewise.ir.dtype import dtype as tw_dtype
from tilewise.ptx import mma

FORMS = [(a, b, acc) for a in mma.IN_TYPE for b in mma.FAMILIES[a] for acc in mma.ACCUMULATORS[a]]


def _fragments(rng, a_t, b_t, acc):
    """Random A (16, K), B (K, 8), C (16, 8) and their packed registers."""
    k = mma.k_of(a_t)
    a, b, c = G.inputs(rng, 16, 8, k, a_t, b_t, acc)
    regs = (G.pack(a, lambda t, i: mma.a_coords(t, i, mma.per_reg(a_t)), mma.A_REGS),
            G.pack(b, lambda t, i: mma.b_coords(t, i, mma.per_reg(b_t)), mma.B_REGS),
            G.pack(c, mma.c_coords, mma.c_regs(acc)))
    return (a, b, c), regs


def _d_tile(words, acc):
    d = np.zeros((16, 8), tw_dtype(acc).numpy())
    vals = np.ascontiguousarray(words).view(np.uint8).view(d.dtype).reshape(32, 4)
    lane, i = np.meshgrid(np.arange(32), np.arange(4), indexing="ij")
    d[mma.c_coords(lane, i)] = vals
    return d


def _one_rounding(a, b, c, a_t, b_t, acc):
    return G.reference(a, b, c, a_t, b_t, acc, True, mma.k_of(a_t))


@pytest.mark.parametrize("a_t,b_t,acc", FORMS, ids=["-".join(f) for f in FORMS])
def test_one_mma_rounds_once(executor, a_t, b_t, acc):
    """The simulator rounds once, bit for bit. The GPU (sm_90a) against the simulator run
    for sm_90a: integers bit for bit, floats within one rounding of the accumulator type
    (2 ulp of the largest |D|)."""
    (a, b, c), (ra, rb, rc) = _fragments(np.random.default_rng(3), a_t, b_t, acc)
    target = "sm_89" if a_t in mma.FP8 else "sm_80"
    sim = rc.copy()
    run(executor, G.direct_mma(a_t, b_t, acc), [ra, rb, rc], target)
    if executor == "sim":
        assert np.array_equal(_d_tile(rc, acc), _one_rounding(a, b, c, a_t, b_t, acc))
        return
    tw.simulate(G.direct_mma(a_t, b_t, acc), ra, rb, sim, target="sm_90a")
    d_gpu, d_sim = _d_tile(rc, acc), _d_tile(sim, acc)
    if acc == "int32":
        assert np.array_equal(d_gpu, d_sim)
    else:
        ulp = 2.0**-10 if acc == "float16" else 2.0**-23
        big = np.abs(d_sim.astype(np.float64)).max()
        assert np.abs(d_gpu.astype(np.float64) - d_sim).max() <= 2 * ulp * big


@pytest.mark.parametrize("store", [False, True], ids=["ldmatrix", "stmatrix"])
@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True], ids=["plain", "trans"])
def test_ldmatrix_and_stmatrix_move_rows_as_the_isa_says(executor, store, num, trans):
    s = np.random.default_rng(num).integers(1, 65535, (32, 8)).astype(np.uint16)
    words = G.matrix_words(s, num, trans)
    if store:
        g = np.zeros_like(s)
        run(executor, G.direct_matrix(True, num, trans), [g, words.copy()])
        assert np.array_equal(g[:8 * num], s[:8 * num]) and not g[8 * num:].any()
    else:
        w = np.zeros_like(words)
        run(executor, G.direct_matrix(False, num, trans), [s, w])
        assert np.array_equal(w, words)


# ---- hazards, at the user's line ---------------------------------------------------------
HEAD = '''
@T.prim_func
def k(G_ptr: T.handle, W_ptr: T.handle):
    G = T.match_buffer(G_ptr, (32, 8), "uint16")
    W = T.match_buffer(W_ptr, (32, 4), "uint32")
    T.device_entry()
    lane = T.thread_id([32])
    S = T.alloc_shared((32, 8), "uint16")
    R = T.alloc_local((4,), "uint32")
'''

HAZARDS = [
    ("ldmatrix-without-barrier", "reads shared memory written by thread", [
        "for j in T.unroll(8):", "    S[lane, j] = G[lane, j]",
        "T.ptx.ldmatrix(T.address_of(S[lane, 0]), 4, False, R[0], R[1], R[2], R[3])  # BUG"]),
    ("ldmatrix-unwritten", "reads shared memory that nothing has written", [
        "T.ptx.ldmatrix(T.address_of(S[lane, 0]), 4, True, R[0], R[1], R[2], R[3])  # BUG"]),
    ("ldmatrix-misaligned-row", "ldmatrix row address: misaligned address", [
        "for j in T.unroll(8):", "    S[lane, j] = G[lane, j]", "T.cuda.cta_sync()",
        "T.ptx.ldmatrix(T.address_of(S[lane, 4]), 1, False, R[0])  # BUG"]),
    ("ldmatrix-partial-warp", "ldmatrix is .sync.aligned: all 32 threads of warp 0", [
        "for j in T.unroll(8):", "    S[lane, j] = G[lane, j]", "T.cuda.cta_sync()",
        "if lane < 16:",
        "    T.ptx.ldmatrix(T.address_of(S[lane, 0]), 2, False, R[0], R[1])  # BUG"]),
    ("stmatrix-read-without-barrier", "reads shared memory written by thread", [
        "for j in T.unroll(4):", "    R[j] = W[lane, j]",  # registers written first
        "T.ptx.stmatrix(T.address_of(S[lane, 0]), 4, False, R[0], R[1], R[2], R[3])",
        "G[lane, 0] = S[lane, 0]  # BUG"]),
    ("mma-partial-warp", "mma.sync is .sync.aligned: all 32 threads of warp 0", [
        "for j in T.unroll(4):", "    R[j] = W[lane, j]",  # registers written first
        "if lane % 2 == 0:",
        "    T.ptx.mma_sync('float16', 'float16', 'float32', R[0], R[1], R[2], R[3], R[0], "
        "R[1], W[lane, 0], W[lane, 1], W[lane, 2], W[lane, 3])  # BUG"]),
]


@pytest.mark.parametrize("hid,message,lines", HAZARDS, ids=[h[0] for h in HAZARDS])
def test_hazards_name_the_line(hid, message, lines):
    src = HEAD + "".join("    " + ln + "\n" for ln in lines)
    func = from_source(src, filename="warpmatrix.py")
    g = np.arange(1, 257, dtype=np.uint16).reshape(32, 8)
    w = np.ones((32, 4), np.uint32)
    with pytest.raises(HazardError, match=message) as e:
        tw.simulate(func, g, w, target="sm_90a")
    want = next(i for i, ln in enumerate(src.splitlines(), 1) if "# BUG" in ln)
    assert e.value.span.line == want, str(e.value)
