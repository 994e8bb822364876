"""The GEMM epilogue on the accumulator wgmma really leaves: one warpgroup runs
``Tx.wg.gemm_async`` (wgmma m64nNk16, the simulator's numerics), waits, then applies
``Tx.wg.add`` (a bias row broadcast over the rows), ``Tx.wg.silu`` and ``Tx.wg.cast`` to
bfloat16 on the same registers and stores the tile; and the plain cast epilogue beside it.
In the simulator and (marked gpu) on the H200.

Tolerance: the product is exact-sum-per-instruction float32 (1e-5 of the largest |C|, as
tests/gemm says), SiLU's ex2.approx adds 2^-22.5 relative, then one bfloat16 rounding
(2^-9 relative): 2^-8 of each value plus 1e-5 of the largest."""

import numpy as np
import pytest

import tilewise as tw
from executors import run
from tilewise.layout import swizzled_tile, wgmma_accumulator
from tilewise.pipeline import lower

SRC = '''
@T.prim_func
def k(A_ptr: T.handle, B_ptr: T.handle, Bias_ptr: T.handle, C_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64, 64), "bfloat16")
    B = T.match_buffer(B_ptr, (64, N), "bfloat16")
    Bias = T.match_buffer(Bias_ptr, (N,), "float32")
    C = T.match_buffer(C_ptr, (64, N), "bfloat16")
    T.device_entry()
    tid = T.thread_id([128])
    As = T.alloc_shared((64, 64), "bfloat16", layout=LA, align=1024)
    Bs = T.alloc_shared((64, N), "bfloat16", layout=LB, align=1024)
    acc = T.alloc_local((64, N), "float32", layout=wgmma_accumulator(N))
    out = T.alloc_local((64, N), "bfloat16", layout=wgmma_accumulator(N))
    Tx.cta.copy(As[:, :], A[:, :])
    Tx.cta.copy(Bs[:, :], B[:, :])
    T.ptx.fence.proxy_async()
    T.cuda.cta_sync()
    T.ptx.wgmma.fence()
    Tx.wg.gemm_async(acc[:, :], As[:, :], Bs[:, :])
    T.ptx.wgmma.commit_group()
    T.ptx.wgmma.wait_group(0)
    if EPILOGUE:
        Tx.wg.add(acc[:, :], acc[:, :], Bias[0:N])
        Tx.wg.silu(acc[:, :], acc[:, :])
    Tx.wg.cast(out[:, :], acc[:, :])
    Tx.wg.copy(C[:, :], out[:, :])
'''


def make(n: int, epilogue: bool):
    env = {"N": n, "EPILOGUE": epilogue, "wgmma_accumulator": wgmma_accumulator,
           "LA": swizzled_tile(64, 64, 16, 128), "LB": swizzled_tile(64, n, 16, 128)}
    return tw.from_source(SRC, env=env, filename="gemm_epilogue_test.py")


def inputs(n: int, seed: int):
    import ml_dtypes

    rng = np.random.default_rng(seed)
    a = rng.standard_normal((64, 64)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((64, n)).astype(ml_dtypes.bfloat16)
    bias = rng.standard_normal(n).astype(np.float32)
    return a, b, bias, np.zeros((64, n), ml_dtypes.bfloat16)


def check(c, a, b, bias, epilogue: bool):
    y = a.astype(np.float64) @ b.astype(np.float64)
    if epilogue:
        y = y + bias
        y = y / (1 + np.exp(-y))
    err = np.abs(c.astype(np.float64) - y)
    assert (err <= 2.0 ** -8 * np.abs(y) + 1e-5 * np.abs(y).max()).all(), err.max()


@pytest.mark.parametrize("n", [64, 128])
@pytest.mark.parametrize("epilogue", [True, False])
def test_epilogue_after_wgmma(executor, n, epilogue):
    a, b, bias, c = inputs(n, 1)
    k = make(n, epilogue)
    run(executor, k, [a, b, bias, c])
    check(c, a, b, bias, epilogue)
    log = [d for d in lower(k, "sm_90a").dispatch_log if ".wg." in d.call]
    assert [d.chosen for d in log] == ["wgmma"] + ["reg"] * (4 if epilogue else 2)
