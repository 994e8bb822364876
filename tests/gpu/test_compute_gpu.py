"""The compute primitives on the GPU (marked ``gpu``): the GEMM epilogue against torch (the
row kernels: test_rows_gpu.py), and the simulator against the GPU -- bit for bit where every instruction is
exact (float32 sums in the reduction's fixed tree order, max, packed float16 arithmetic,
fma, packed conversions), within the PTX ISA's bound where one is approximate
(``ex2.approx.f32``: 2^-22.5 relative)."""

import numpy as np
import pytest

import tilewise as tw
from tilewise.ptx.packed import APPROX
from tilewise.runner import _run_gpu
from tilewise.runtime import device_target
from exload import load_example as _example

pytestmark = pytest.mark.gpu


def _target():
    return str(device_target())


def test_gemm_epilogue_matches_torch(torch):
    ex = _example("gemm_epilogue")
    k = tw.compile(ex.make_epilogue(8192, 256), _target())
    acc = torch.randn(8192, 256, device="cuda") * 4
    b = torch.randn(256, device="cuda")
    c = torch.empty(8192, 256, device="cuda", dtype=torch.bfloat16)
    k(acc, b, c)
    ref = torch.nn.functional.silu(acc + b)
    tol = 2 * torch.finfo(torch.bfloat16).eps * ref.abs() + 1e-30
    assert bool(((c.float() - ref).abs() <= tol).all())


EXACT = """
@T.prim_func
def k(X_ptr: T.handle, H_ptr: T.handle, O_ptr: T.handle, Y_ptr: T.handle):
    X = T.match_buffer(X_ptr, (4, 1024), "float32")
    H = T.match_buffer(H_ptr, (4, 1024), "float16")
    Out = T.match_buffer(O_ptr, (4, 64), "float32")
    Y = T.match_buffer(Y_ptr, (4, 1024), "float16")
    T.device_entry()
    tid = T.thread_id([256])
    xr = T.alloc_local((16,), "float32")
    x = xr.view(4, 1024, layout=S[(4, 4, 64, 4):(64@tx, 4, 1@tx, 1)])
    hr = T.alloc_local((16,), "float16")
    h = hr.view(4, 1024, layout=S[(4, 4, 64, 4):(64@tx, 4, 1@tx, 1)])
    sr = T.alloc_local((1,), "float32")
    s = sr.view(4, 1, layout=S[(4, 1):(64@tx, 1)] + R[64:1@tx])
    Tx.cta.copy(x, X)
    Tx.cta.copy(h, H)
    Tx.cta.sum(s, x, axes=-1)
    Tx.cta.fma(x, x, s, 0.375)
    Tx.cta.max(s, x, axes=-1)
    Tx.cta.fdiv(x, x, s)
    Tx.cta.mul(h, h, h)
    Tx.cta.add(h, h, 1.5)
    Out[tid // 64, tid % 64] = sr[0]
    Tx.cta.copy(Y, h)
    Tx.cta.copy(X, x)
"""


def _both(func, arrays):
    sim = [a.copy() for a in arrays]
    tw.simulate(func, *sim, target="sm_90a", strict=True)
    gpu = [a.copy() for a in arrays]
    _run_gpu(func, gpu, _target())
    return sim, gpu


def test_exact_instructions_agree_bit_for_bit_with_the_simulator():
    func = tw.from_source(EXACT, filename="exact.py")
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((4, 1024)) * 3).astype(np.float32)
    h = rng.standard_normal((4, 1024)).astype(np.float16)
    sim, gpu = _both(func, [x, h, np.zeros((4, 64), np.float32),
                            np.zeros((4, 1024), np.float16)])
    for a, b in zip(sim, gpu):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


def test_approximate_instructions_stay_within_the_isa_bound():
    src = """
@T.prim_func
def k(X_ptr: T.handle, Y_ptr: T.handle):
    X = T.match_buffer(X_ptr, (4, 1024), "float32")
    Y = T.match_buffer(Y_ptr, (4, 1024), "float32")
    T.device_entry()
    tid = T.thread_id([256])
    xr = T.alloc_local((16,), "float32")
    x = xr.view(4, 1024, layout=S[(4, 4, 64, 4):(64@tx, 4, 1@tx, 1)])
    Tx.cta.copy(x, X)
    Tx.cta.exp2(x)
    Tx.cta.copy(Y, x)
"""
    func = tw.from_source(src, filename="approx.py")
    x = np.random.default_rng(6).uniform(-100, 100, (4, 1024)).astype(np.float32)
    sim, gpu = _both(func, [x, np.zeros_like(x)])
    bound = APPROX["ptx.ex2.approx"].tol
    assert (np.abs(gpu[1].astype(np.float64) - sim[1]) <= bound * np.abs(sim[1])).all()


def test_warp_votes_agree_with_the_simulator():
    """vote.sync any / all / uni / ballot over three warps whose predicates are mixed,
    all false and all true: the GPU's words equal the simulator's."""
    src = """
@T.prim_func
def k(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (96,), "int32")
    B = T.match_buffer(B_ptr, (4, 96), "uint32")
    T.device_entry()
    tid = T.thread_id([96])
    p = A[tid] > 0
    B[0, tid] = T.cast(T.ptx.vote_sync("any", p), "uint32")
    B[1, tid] = T.cast(T.ptx.vote_sync("all", p), "uint32")
    B[2, tid] = T.cast(T.ptx.vote_sync("uni", p), "uint32")
    B[3, tid] = T.ptx.vote_sync("ballot", p)
"""
    a = np.zeros(96, np.int32)
    a[[1, 5, 30, 31]] = 1
    a[64:] = 1
    sim, gpu = _both(tw.from_source(src, filename="vote.py"),
                     [a, np.full((4, 96), 0xDEAD, np.uint32)])
    assert np.array_equal(sim[1], gpu[1])
    assert gpu[1][3, 0] == (1 << 1) | (1 << 5) | (1 << 30) | (1 << 31)


def test_stores_into_other_ctas_of_a_cluster_agree_with_the_simulator():
    """st.shared::cluster in an all-to-all over clusters of 4 (thread t of every CTA writes
    its CTA's value into CTA t), then the cluster barrier and each CTA's reads: the GPU's
    result equals the simulator's, which is the exchange's definition."""
    src = """
@T.prim_func
def k(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (8, 64), "float32")
    B = T.match_buffer(B_ptr, (8, 4), "float32")
    T.device_entry()
    bx = T.cta_id([8])
    rank = T.cta_id_in_cluster([4])
    tid = T.thread_id([64])
    part = T.alloc_shared((4,), "float32")
    T.ptx.barrier.cluster.arrive(relaxed=True, aligned=True)
    T.ptx.barrier.cluster.wait(aligned=True)
    if tid < 4:
        T.ptx.st_cluster(T.address_of(part[rank]), A[bx, rank * 16 + tid], tid)
    T.cuda.cluster_sync()
    if tid < 4:
        B[bx, tid] = part[tid]
"""
    a = np.random.default_rng(7).standard_normal((8, 64)).astype(np.float32)
    sim, gpu = _both(tw.from_source(src, filename="st_cluster.py"),
                     [a, np.full((8, 4), np.nan, np.float32)])
    assert np.array_equal(sim[1], gpu[1]) and not np.isnan(gpu[1]).any()
