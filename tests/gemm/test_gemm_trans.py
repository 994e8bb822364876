"""gemm_async with transA / transB (TIRx's spelling): A given as its transpose (K, M), B as
its transpose (N, K) -- the K-major B that fp8 and tf32 wgmma need, a row-major (N, K) tile
as TMA loads it from an (N, K) array. wgmma (sm_90a) and tcgen05 (sm_100a), simulated
against numpy at 1e-5 of the largest |C| (tests/gemm/test_wgmma.py states why); the wgmma
cases also on the GPU (fp8 at 2e-3: Hopper's fp8 accumulation)."""

import numpy as np
import pytest

import tilewise as tw
from tilewise import T, Tx
from tilewise.errors import DispatchError
from tilewise.ir.dtype import dtype as tw_dtype
from tilewise.layout import (S, TCol, TileLayout, TLane, swizzled_tile, tid_in_wg,
                             wgmma_accumulator)
from tilewise.pipeline import lower


def _tiles(dtype, M, N, K, trans_a, trans_b):
    bits = tw_dtype(dtype).bits
    a_shape = (K, M) if trans_a else (M, K)
    b_shape = (N, K) if trans_b else (K, N)
    return (a_shape, swizzled_tile(*a_shape, bits, 128), b_shape,
            swizzled_tile(*b_shape, bits, 128))


def make_wgmma(dtype="bfloat16", N=64, K=64, trans_a=False, trans_b=True):
    """C = op(A) @ op(B) for one warpgroup, A and B staged as given (transposed or not)."""
    a_shape, la, b_shape, lb = _tiles(dtype, 64, N, K, trans_a, trans_b)

    @T.prim_func
    def wgmma_trans(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, a_shape, dtype)
        B = T.match_buffer(B_ptr, b_shape, dtype)
        C = T.match_buffer(C_ptr, (64, N), "float32")
        T.device_entry()
        T.thread_id([128])
        As = T.alloc_shared(a_shape, dtype, layout=la, align=1024)
        Bs = T.alloc_shared(b_shape, dtype, layout=lb, align=1024)
        acc = T.alloc_local((64, N), "float32", layout=wgmma_accumulator(N))
        Tx.cta.copy(As[:, :], A[:, :])
        Tx.cta.copy(Bs[:, :], B[:, :])
        T.ptx.fence.proxy_async()
        T.cuda.cta_sync()
        T.ptx.wgmma.fence()
        Tx.wg.gemm_async(acc, As[:, :], Bs[:, :], transA=trans_a, transB=trans_b)
        T.ptx.wgmma.commit_group()
        T.ptx.wgmma.wait_group(0)
        Tx.wg.copy(C[:, :], acc)

    return wgmma_trans


def make_tcgen05(dtype="bfloat16", N=64, K=64, trans_a=False, trans_b=True):
    """The same product by one tcgen05.mma (M = 128), read back with tcgen05.ld."""
    a_shape, la, b_shape, lb = _tiles(dtype, 128, N, K, trans_a, trans_b)
    regs = TileLayout(S[(128, N):(1 @ tid_in_wg, 1)])

    @T.prim_func
    def tcgen05_trans(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, a_shape, dtype)
        B = T.match_buffer(B_ptr, b_shape, dtype)
        C = T.match_buffer(C_ptr, (128, N), "float32")
        T.device_entry()
        warp_id = T.warp_id([4])
        tid = T.thread_id([128])
        As = T.alloc_shared(a_shape, dtype, layout=la, align=1024)
        Bs = T.alloc_shared(b_shape, dtype, layout=lb, align=1024)
        bar = T.alloc_shared([1], "uint64")
        tmem_addr = T.alloc_shared([1], "uint32")
        acc_reg = T.alloc_local((N,), "float32")
        acc = acc_reg.view(128, N, layout=regs)
        if warp_id == 0:
            T.ptx.tcgen05.alloc(T.address_of(tmem_addr), n_cols=64, cta_group=1)
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
        Tx.cta.copy(As[:, :], A[:, :])
        Tx.cta.copy(Bs[:, :], B[:, :])
        T.ptx.fence.proxy_async()
        T.tvm_storage_sync("shared")
        T.ptx.tcgen05.fence.after_thread_sync()
        tmem = T.decl_buffer((128, 64), "float32", scope="tmem", allocated_addr=tmem_addr[0],
                             layout=TileLayout(S[(128, 64):(1 @ TLane, 1 @ TCol)]))
        if warp_id == 1:
            if T.ptx.elect_sync():
                Tx.gemm_async(tmem[:, 0:N], As[:, :], Bs[:, :], transA=trans_a, transB=trans_b)
                T.ptx.tcgen05.commit(T.address_of(bar[0]))
        T.ptx.mbarrier.try_wait(T.address_of(bar[0]), 0)
        T.ptx.tcgen05.fence.after_thread_sync()
        Tx.wg.copy_async(acc[:, :], tmem[:, 0:N])
        T.ptx.tcgen05.wait.ld()
        Tx.wg.copy(C[:, :], acc[:, :])
        T.ptx.tcgen05.fence.before_thread_sync()
        T.cuda.cta_sync()
        if warp_id == 0:
            T.ptx.tcgen05.relinquish_alloc_permit(cta_group=1)
            T.ptx.tcgen05.dealloc(tmem_addr[0], n_cols=64, cta_group=1)

    return tcgen05_trans


def _inputs(rng, dtype, M, N, K, trans_a, trans_b):
    d = tw_dtype(dtype).numpy()
    scale = 4.0 if "float8" in dtype else 1.0
    a = (rng.standard_normal((M, K)) * scale).astype(d)
    b = (rng.standard_normal((K, N)) * scale).astype(d)
    return (np.ascontiguousarray(a.T) if trans_a else a, np.ascontiguousarray(b.T) if trans_b
            else b, a.astype(np.float64) @ b.astype(np.float64))


CASES = [("e4m3-B-NK", "float8_e4m3", 64, 128, False, True),
         ("bf16-B-NK", "bfloat16", 64, 64, False, True),
         ("bf16-A-KM-B-NK", "bfloat16", 32, 64, True, True),
         ("f16-A-KM", "float16", 64, 32, True, False)]


@pytest.mark.parametrize("cid,dtype,N,K,ta,tb", CASES, ids=[c[0] for c in CASES])
def test_wgmma_with_transposed_operands_in_the_simulator(cid, dtype, N, K, ta, tb):
    a, b, ref = _inputs(np.random.default_rng(7), dtype, 64, N, K, ta, tb)
    c = np.full((64, N), np.nan, np.float32)
    tw.simulate(make_wgmma(dtype, N, K, ta, tb), a, b, c, target="sm_90a")
    assert np.abs(c - ref).max() <= 1e-5 * np.abs(ref).max()


@pytest.mark.parametrize("cid,dtype,N,K,ta,tb", CASES[:3], ids=[c[0] for c in CASES[:3]])
def test_tcgen05_with_transposed_operands_in_the_simulator(cid, dtype, N, K, ta, tb):
    a, b, ref = _inputs(np.random.default_rng(8), dtype, 128, N, K, ta, tb)
    c = np.full((128, N), np.nan, np.float32)
    tw.simulate(make_tcgen05(dtype, N, K, ta, tb), a, b, c, target="sm_100a")
    assert np.abs(c - ref).max() <= 1e-5 * np.abs(ref).max()


def test_the_log_says_k_major_b_and_the_ptx_assembles():
    func = make_wgmma("float8_e4m3", 64, 128)
    (d,) = [x for x in lower(func, "sm_90a").dispatch_log if "gemm_async" in x.call]
    assert d.info == ["4 x wgmma m64n64k32 (A K-major, swizzle 128; B K-major, swizzle 128)"]
    assert tw.compile(func, "sm_90a").cubin[:4] == b"\x7fELF"


def test_a_b_whose_shape_does_not_fit_trans_b_is_declined_with_the_orientation():
    with pytest.raises(DispatchError, match=r"from A \(M, K\) and B \(N, K\) with M = 64"):
        lower(make_wgmma_mismatch(), "sm_90a")


def make_wgmma_mismatch():
    """B staged (K, N) = (64, 32) but called with transB=True: (N, K) would be K = 32 != 64."""
    la = swizzled_tile(64, 64, 16, 128)
    lb = swizzled_tile(64, 32, 16, 64)

    @T.prim_func
    def mismatch(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (64, 64), "bfloat16")
        T.device_entry()
        T.thread_id([128])
        As = T.alloc_shared((64, 64), "bfloat16", layout=la, align=1024)
        Bs = T.alloc_shared((64, 32), "bfloat16", layout=lb, align=1024)
        acc = T.alloc_local((64, 64), "float32", layout=wgmma_accumulator(64))
        Tx.cta.copy(As[:, :], A[:, :])
        T.ptx.wgmma.fence()
        Tx.wg.gemm_async(acc, As[:, :], Bs[:, :], transB=True)
        T.ptx.wgmma.commit_group()
        T.ptx.wgmma.wait_group(0)

    return mismatch


@pytest.mark.gpu
@pytest.mark.parametrize("cid,dtype,N,K,ta,tb", CASES, ids=[c[0] for c in CASES])
def test_wgmma_with_transposed_operands_on_the_gpu(cid, dtype, N, K, ta, tb):
    from tilewise.runner import _run_gpu

    a, b, ref = _inputs(np.random.default_rng(9), dtype, 64, N, K, ta, tb)
    c = np.full((64, N), np.nan, np.float32)
    _run_gpu(make_wgmma(dtype, N, K, ta, tb), [a, b, c], "sm_90a")
    tol = 2e-3 if "float8" in dtype else 1e-5
    assert np.abs(c - ref).max() <= tol * np.abs(ref).max()
