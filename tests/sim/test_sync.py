"""Simulator semantics of the synchronisation instructions the next issues build on:
elect.sync, the blocking mbarrier.try_wait, the (remote) mbarrier.arrive.expect_tx,
setmaxnreg and fence.proxy.async.

Most kernels share one prologue (:func:`kernel`): ``threads`` threads, an int32 output
``A`` of one element per thread and, with ``count``, an mbarrier ``bar`` initialised for
``count`` arrivals. The line a message must point at is marked ``# <-``."""

import numpy as np
import pytest

import tilewise as tw
from tilewise import T
from simhelpers import poison

FILE = "sync_kernels.py"


def kernel(*body: str, threads: int = 128, count: int | None = None):
    head = [f'A = T.match_buffer(A_ptr, ({threads},), "int32")', "T.device_entry()",
            f"tid = T.thread_id([{threads}])"]
    if count is not None:
        head += ['bar = T.alloc_shared((1,), "uint64")', "if tid == 0:",
                 f"    T.ptx.mbarrier.init(T.address_of(bar[0]), {count})", "T.cuda.cta_sync()"]
    lines = "".join(f"    {ln}\n" for ln in head + list(body))
    return tw.from_source(f"@T.prim_func\ndef k(A_ptr: T.handle):\n{lines}", filename=FILE)


def caught(func, error, *parts):
    with pytest.raises(error) as info:
        tw.simulate(func, np.zeros(func.param_buffers()[0].size, np.int32))
    err = info.value
    for p in parts:
        assert p in str(err), str(err)
    assert err.span.file == FILE and "# <-" in err.span.source_line
    return err


def test_elect_sync_elects_the_lowest_active_lane_of_each_warp():
    k = kernel('A[tid] = T.cast(T.ptx.elect_sync(), "int32")', "if tid % 32 >= 5:",
               '    A[tid] = A[tid] + 2 * T.cast(T.ptx.elect_sync(), "int32")')
    a = poison(128, np.int32)
    report = tw.simulate(k, a)
    lane = np.arange(128) % 32
    assert (a == (lane == 0) + 2 * (lane == 5)).all()
    assert report.instructions["ptx.elect_sync"] == 128 + 4 * 27


def test_fence_proxy_async_takes_the_tirx_space_and_has_no_effect():
    k = kernel("T.ptx.fence.proxy_async()", 'T.ptx.fence.proxy_async("shared::cta")',
               'T.ptx.fence.proxy_async("shared::cluster")',
               'T.ptx.fence.proxy_async(space="global")', "A[tid] = tid")
    a = poison(128, np.int32)
    report = tw.simulate(k, a)
    assert (a == np.arange(128)).all() and report.instructions["ptx.fence.proxy_async"] == 512


def test_mbarrier_try_wait_blocks_on_the_parity_of_each_phase():
    k = kernel("phase: T.int32 = 0", "for k in range(5):",
               "    T.ptx.mbarrier.arrive(T.address_of(bar[0]))",
               "    T.ptx.mbarrier.try_wait(T.address_of(bar[0]), phase)",
               "    phase = phase ^ 1", "    A[tid] = A[tid] + 1", count=128)
    a = np.zeros(128, np.int32)
    report = tw.simulate(k, a)
    assert (a == 5).all() and report.instructions["ptx.mbarrier.try_wait"] == 5 * 128


def test_mbarrier_try_wait_on_an_open_phase_is_a_deadlock():
    k = kernel("T.ptx.mbarrier.arrive(T.address_of(bar[0]))",
               "T.ptx.mbarrier.try_wait(T.address_of(bar[0]), 1)  # <- phase 1 is open",
               "A[tid] = tid", count=128)
    caught(k, tw.HazardError, "mbarrier wait can never complete (deadlock): waiting for "
                              "parity 1")


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


def test_pred_selects_the_threads_that_arrive():
    wait = 'T.cast(T.ptx.mbarrier.try_wait_parity(T.address_of(bar[0]), 0), "int32")'
    k = kernel("T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 0, pred=tid < 64)",
               f"A[tid] = {wait}  # <- after 64 of 128 arrivals",
               "T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 0, pred=tid >= 64)",
               f"A[tid] = A[tid] + 2 * {wait}", count=128)
    caught(k, tw.HazardError, "deadlock")
    a = poison(128, np.int32)
    report = tw.simulate(k, a, strict=False)
    assert (a == 2).all() and len(report.hazards) == 1


def test_remote_arrive_without_a_cluster_is_a_clear_simulation_error():
    # a rank known only at run time (A[0] is 0); a constant one is refused when compiling
    k = kernel("T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 0, remote=1 + A[0], "
               "pred=tid == 0)  # <- a peer", "A[tid] = tid", count=1)
    err = caught(k, tw.SimulationError, "CTA rank 1 of the cluster",
                 "declares no cluster", "T.cta_id_in_cluster")
    assert not isinstance(err, tw.HazardError)
    k = kernel("T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 0, remote=1, "
               "pred=tid == 0)  # <- a peer", "A[tid] = tid", count=1)
    caught(k, tw.CompileError, "remote= 1 names a CTA of a cluster, but the kernel declares "
           "no cluster", "T.cta_id_in_cluster")


def test_setmaxnreg_is_a_no_op_for_whole_warpgroups():
    k = kernel("if tid >= 128:", "    T.ptx.setmaxnreg(False, 56)", "A[tid] = tid",
               threads=256)
    a = poison(256, np.int32)
    report = tw.simulate(k, a)
    assert (a == np.arange(256)).all() and report.instructions["ptx.setmaxnreg"] == 128


@pytest.mark.parametrize("threads,cond", [(256, "tid >= 96"), (64, "tid >= 0")])
def test_setmaxnreg_from_part_of_a_warpgroup_is_a_hazard(threads, cond):
    k = kernel(f"if {cond}:", "    T.ptx.setmaxnreg(False, 56)  # <-", "A[tid] = tid",
               threads=threads)
    caught(k, tw.HazardError, "setmaxnreg is .sync.aligned: all 128 threads of warpgroup 0 "
                              "must execute it")
