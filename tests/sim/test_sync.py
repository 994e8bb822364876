"""Simulator semantics of the synchronisation instructions the next issues build on:
elect.sync, the blocking mbarrier.try_wait, the (remote) mbarrier.arrive.expect_tx,
setmaxnreg and fence.proxy.async."""

import numpy as np
import pytest

import tilewise as tw
from tilewise import T
from simhelpers import line_of, poison


@T.prim_func
def elect(E_ptr: T.handle):
    E = T.match_buffer(E_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    E[tid] = T.cast(T.ptx.elect_sync(), "int32")
    if tid % 32 >= 5:
        E[tid] = E[tid] + 2 * T.cast(T.ptx.elect_sync(), "int32")


def test_elect_sync_elects_the_lowest_active_lane_of_each_warp():
    e = poison(128, np.int32)
    report = tw.simulate(elect, e)
    lane = np.arange(128) % 32
    assert (e == (lane == 0) + 2 * (lane == 5)).all()
    assert report.instructions["ptx.elect_sync"] == 128 + 4 * 27


@T.prim_func
def fences(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    T.ptx.fence.proxy_async()
    T.ptx.fence.proxy_async("shared::cta")
    T.ptx.fence.proxy_async("shared::cluster")
    T.ptx.fence.proxy_async(space="global")
    A[tid] = tid


def test_fence_proxy_async_takes_the_tirx_space_and_has_no_effect():
    a = poison(128, np.int32)
    report = tw.simulate(fences, a)
    assert (a == np.arange(128)).all() and report.instructions["ptx.fence.proxy_async"] == 512


@T.prim_func
def phase_loop(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    bar = T.alloc_shared((1,), "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 128)
    T.cuda.cta_sync()
    phase: T.int32 = 0
    for k in range(5):
        T.ptx.mbarrier.arrive(T.address_of(bar[0]))
        T.ptx.mbarrier.try_wait(T.address_of(bar[0]), phase)
        phase = phase ^ 1
        A[tid] = A[tid] + 1


def test_mbarrier_try_wait_blocks_on_the_parity_of_each_phase():
    a = np.zeros(128, np.int32)
    report = tw.simulate(phase_loop, a)
    assert (a == 5).all() and report.instructions["ptx.mbarrier.try_wait"] == 5 * 128


@T.prim_func
def wrong_phase(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    bar = T.alloc_shared((1,), "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 128)
    T.cuda.cta_sync()
    T.ptx.mbarrier.arrive(T.address_of(bar[0]))
    T.ptx.mbarrier.try_wait(T.address_of(bar[0]), 1)  # BUG: phase 0 completed, 1 is open
    A[tid] = tid


def test_mbarrier_try_wait_on_an_open_phase_is_a_deadlock():
    with pytest.raises(tw.HazardError) as info:
        tw.simulate(wrong_phase, np.zeros(128, np.int32))
    err = info.value
    assert "mbarrier wait can never complete (deadlock): waiting for parity 1" in str(err)
    assert err.span.line == line_of(__file__, "# BUG: phase 0 completed")


@T.prim_func
def tirx_bulk_load(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    bar = T.alloc_shared((1,), "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.cp_async.bulk.g2s(T.address_of(S[0]), T.address_of(A[0]), 2048,
                                T.address_of(bar[0]))
    T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 2048, remote=0, pred=tid == 0)
    T.ptx.mbarrier.try_wait(T.address_of(bar[0]), 0)
    for i in range(8):
        B[i * 128 + tid] = S[i * 128 + tid]


def test_tirx_arrive_expect_tx_on_this_ctas_rank_completes_a_bulk_load():
    a, b = np.arange(1024).astype(np.float16), poison(1024, np.float16)
    report = tw.simulate(tirx_bulk_load, a, b)
    assert (a.view(np.uint16) == b.view(np.uint16)).all()
    assert report.instructions["ptx.mbarrier.arrive.expect_tx"] == 128  # 1 arrives (pred)


@T.prim_func
def arrive_in_halves(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    bar = T.alloc_shared((1,), "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 128)
    T.cuda.cta_sync()
    T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 0, pred=tid < 64)
    A[tid] = T.cast(T.ptx.mbarrier.try_wait_parity(T.address_of(bar[0]), 0), "int32")
    T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 0, pred=tid >= 64)
    A[tid] = A[tid] + 2 * T.cast(T.ptx.mbarrier.try_wait_parity(T.address_of(bar[0]), 0),
                                 "int32")


def test_pred_selects_the_threads_that_arrive():
    a = poison(128, np.int32)
    with pytest.raises(tw.HazardError, match="deadlock"):  # after 64 of 128 arrivals
        tw.simulate(arrive_in_halves, a)
    report = tw.simulate(arrive_in_halves, a, strict=False)
    assert (a == 2).all() and len(report.hazards) == 1


@T.prim_func
def remote_peer(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    bar = T.alloc_shared((1,), "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    T.cuda.cta_sync()
    T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 0, remote=1, pred=tid == 0)  # peer
    A[tid] = tid


def test_remote_arrive_on_another_cta_is_a_clear_simulation_error():
    with pytest.raises(tw.SimulationError) as info:
        tw.simulate(remote_peer, np.zeros(128, np.int32))
    err = info.value
    assert not isinstance(err, tw.HazardError)
    assert "CTA rank 1 of the cluster" in str(err) and "multi-CTA clusters" in str(err)
    assert err.span.line == line_of(__file__, "remote=1, pred=tid == 0)  # peer")


def _setmaxnreg_kernel(threads: int, cond: str):
    return tw.from_source(f'''
@T.prim_func
def k(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, ({threads},), "int32")
    T.device_entry()
    tid = T.thread_id([{threads}])
    if {cond}:
        T.ptx.setmaxnreg(False, 56)  # <-
    A[tid] = tid
''', filename="regs.py")


def test_setmaxnreg_is_a_no_op_for_whole_warpgroups():
    a = poison(256, np.int32)
    report = tw.simulate(_setmaxnreg_kernel(256, "tid >= 128"), a)
    assert (a == np.arange(256)).all() and report.instructions["ptx.setmaxnreg"] == 128


@pytest.mark.parametrize("threads,cond,partial", [(256, "tid >= 96", "warpgroup 0"),
                                                  (64, "tid >= 0", "warpgroup 0")])
def test_setmaxnreg_from_part_of_a_warpgroup_is_a_hazard(threads, cond, partial):
    with pytest.raises(tw.HazardError) as info:
        tw.simulate(_setmaxnreg_kernel(threads, cond), np.zeros(threads, np.int32))
    err = info.value
    assert f"setmaxnreg is .sync.aligned: all 128 threads of {partial} must execute it" in str(err)
    assert err.span.file == "regs.py" and err.span.line == 8  # the line marked <-
