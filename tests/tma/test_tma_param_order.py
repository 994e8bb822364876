"""The simulator binds each TMA tensor map to its array by *parameter* position, as the
runtime does, whatever order the T.match_buffer lines come in (it used the match order,
so a kernel matching B before A copied to and from the wrong arrays, or crashed)."""

import numpy as np

import tilewise as tw
from tilewise import T, Tx
from tilewise.layout import S, TileLayout


def make_copy():
    @T.prim_func
    def tma_swapped(A_ptr: T.handle, P_ptr: T.handle, B_ptr: T.handle):
        B = T.match_buffer(B_ptr, (64, 64), "float16")  # matched before A and P
        P = T.match_buffer(P_ptr, (16,), "float16")
        A = T.match_buffer(A_ptr, (64, 64), "float16")
        T.device_entry()
        tid = T.thread_id([128])
        Sh = T.alloc_buffer((64, 64), "float16", scope="shared.dyn",
                            layout=TileLayout(S[(64, 64)]).swizzle(128, dtype_bits=16))
        bar = T.alloc_shared([1], "uint64")
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
        T.cuda.cta_sync()
        if tid == 0:
            T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 64 * 64 * 2)
        Tx.cta.copy_async(Sh[:, :], A[:, :], dispatch="tma", mbar=T.address_of(bar[0]))
        T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 0)
        if tid == 0:
            P[0] = A[0, 0]
            Tx.thread.copy_async(B[:, :], Sh[:, :], dispatch="tma")
            T.ptx.cp_async.bulk.commit_group()
            T.ptx.cp_async.bulk.wait_group(0)

    return tma_swapped


def test_tensor_maps_follow_the_parameters_not_the_match_order():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    p = np.zeros(16, np.float16)
    b = np.zeros((64, 64), np.float16)
    tw.simulate(make_copy(), a, p, b, target="sm_90a")
    assert np.array_equal(b, a) and p[0] == a[0, 0]
