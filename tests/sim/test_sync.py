"""Simulator semantics of the synchronisation instructions the next issues build on:
elect.sync, the blocking mbarrier.try_wait, the (remote) mbarrier.arrive.expect_tx,
setmaxnreg and fence.proxy.async."""

import numpy as np

import tilewise as tw
from tilewise import T
from simhelpers import poison


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
