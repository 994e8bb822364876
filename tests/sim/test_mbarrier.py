"""mbarrier phases, cp.async tracked by an mbarrier, and the deadlock check."""

import numpy as np
import pytest

import tilewise as tw
from tilewise import T
from simhelpers import bits, line_of, poison, rand


@T.prim_func
def tracked_copy(A_ptr: T.handle, B_ptr: T.handle, P_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    P = T.match_buffer(P_ptr, (256,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    bar = T.alloc_shared((1,), "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 128)
    T.cuda.cta_sync()
    P[tid] = T.cast(T.ptx.mbarrier.try_wait_parity(T.address_of(bar[0]), 1), "int32")
    T.ptx.cp_async(T.address_of(S[tid * 8]), T.address_of(A[tid * 8]), 16)
    T.ptx.cp_async.mbarrier_arrive(T.address_of(bar[0]))
    ok = T.ptx.mbarrier.try_wait_parity(T.address_of(bar[0]), 0)
    P[128 + tid] = T.cast(ok, "int32")
    for i in range(8):
        B[i * 128 + tid] = S[i * 128 + tid]


def test_cp_async_tracked_by_mbarrier():
    a, b, p = rand(1024, np.float16), poison(1024, np.float16), poison(256, np.int32)
    tw.simulate(tracked_copy, a, b, p)
    assert (bits(a) == bits(b)).all()
    assert (p == 1).all()  # parity 1 of a fresh barrier: done; parity 0 after 128 arrivals


@T.prim_func
def phases(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64,), "int32")
    B = T.match_buffer(B_ptr, (64,), "int32")
    T.device_entry()
    tid = T.thread_id([64])
    bar = T.alloc_shared((1,), "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 64)
    T.cuda.cta_sync()
    for k in range(3):
        T.ptx.mbarrier.arrive(T.address_of(bar[0]))
        if T.ptx.mbarrier.try_wait_parity(T.address_of(bar[0]), k % 2):
            A[tid] = A[tid] + 1
    B[tid] = T.cast(T.ptx.mbarrier.arrive(T.address_of(bar[0])), "int32")


def test_phases_flip_and_arrive_returns_the_phase():
    a, b = np.zeros(64, np.int32) + 5, poison(64, np.int32)
    tw.simulate(phases, a, b)
    assert (a == 8).all() and (b == 3).all()


@T.prim_func
def nobody_arrives(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64,), "int32")
    B = T.match_buffer(B_ptr, (64,), "int32")
    T.device_entry()
    tid = T.thread_id([64])
    bar = T.alloc_shared((1,), "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    T.cuda.cta_sync()
    done = T.bool(False)
    for it in range(1000):
        if not done:
            done = T.ptx.mbarrier.try_wait_parity(T.address_of(bar[0]), 0)  # BUG: no arrive


def test_wait_nobody_arrives_at_is_a_deadlock():
    with pytest.raises(tw.HazardError) as info:
        tw.simulate(nobody_arrives, rand(64, np.int32), poison(64, np.int32))
    err = info.value
    assert err.span.line == line_of(__file__, "# BUG: no arrive")
    assert "can never complete (deadlock)" in str(err)
    assert "1 of 1 arrival(s)" in str(err) and "address shared+0x0" in str(err)


@T.prim_func
def uninitialised_bar(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64,), "int32")
    B = T.match_buffer(B_ptr, (64,), "int32")
    T.device_entry()
    tid = T.thread_id([64])
    bar = T.alloc_shared((1,), "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 64)
    T.ptx.mbarrier.arrive(T.address_of(bar[0]))  # BUG: init not visible


def test_mbarrier_used_before_its_init_is_visible():
    with pytest.raises(tw.HazardError, match="no bar.sync") as info:
        tw.simulate(uninitialised_bar, rand(64, np.int32), poison(64, np.int32))
    assert info.value.span.line == line_of(__file__, "# BUG: init not visible")
