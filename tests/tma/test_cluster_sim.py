"""Clusters in the simulator and (marked ``gpu``) on the GPU: the CTAs of a cluster run
together (switching where one waits for another), a TMA multicast lands in every CTA of
its mask and completes each one's mbarrier, a ring of shared -> shared copies goes round a
cluster; in the simulator, the cluster barrier, remote arrives and their misuses are
reported at the user's line. The GPU runs bigger grids (``_size``) than the simulator."""

import numpy as np
import pytest

import tilewise as tw
from tilewise import T
from executors import assert_same_bytes, run
from kernels_cluster import (make_multicast, make_ring, make_ws_multicast, multicast_expected,
                             multicast_inputs, ring_expected, ring_inputs,
                             ws_multicast_expected, ws_multicast_inputs)
from tilewise.ir.launch import cluster_rank


def _size(executor, sim, gpu):
    return sim if executor == "sim" else gpu


@pytest.mark.parametrize("cluster", [2, 4])
def test_multicast_fills_every_cta_of_the_cluster(executor, cluster):
    n = _size(executor, 3, 8)  # clusters in the grid
    arrays = multicast_inputs(np.random.default_rng(1), n, cluster)
    want = multicast_expected(*arrays, cluster=cluster)
    report = run(executor, make_multicast(n, cluster), arrays)
    assert_same_bytes(arrays, want)
    if report is not None:  # each CTA issued one slice; every slice landed in every CTA
        assert len(report.ctas) == n * cluster
        assert report.instructions["ptx.cp_async.bulk.tensor.g2c"] == n * cluster


@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_dsmem_ring_round_a_cluster(executor, cluster):
    size = _size(executor, 1024, 4096)
    arrays = ring_inputs(np.random.default_rng(2), cluster, size)
    want = ring_expected(*arrays)
    run(executor, make_ring(cluster, size), arrays)
    assert_same_bytes(arrays, want)


def test_the_ring_without_the_proxy_fence_is_reported():
    arrays = ring_inputs(np.random.default_rng(3), 2, 1024)
    with pytest.raises(tw.HazardError) as info:
        tw.simulate(make_ring(2, 1024, fence=False), *arrays)
    text = str(info.value)
    assert "wrote with ordinary stores and no fence.proxy.async since" in text
    assert "kernels_cluster.py" in text and "fence.proxy_async" in info.value.hint


def test_cluster_rank_is_x_fastest():
    assert [cluster_rank((x, y, 0), (2, 2, 1)) for y in range(2) for x in range(2)] == \
        [0, 1, 2, 3]


@pytest.mark.parametrize("cluster, stages", [(2, 2), (2, 3), (2, 4), (4, 2), (4, 3)])
def test_warp_specialised_multicast_pipeline(executor, cluster, stages):
    """Fibers inside each CTA and the CTAs of the cluster take turns: a producer waits for
    consumers of every CTA (remote arrives), consumers wait for every CTA's multicast."""
    n = _size(executor, 5, 16)
    arrays = ws_multicast_inputs(np.random.default_rng(4), n, cluster)
    report = run(executor, make_ws_multicast(n, stages, cluster), arrays)
    assert_same_bytes(arrays, ws_multicast_expected(*arrays))
    if report is not None:
        assert report.instructions["ptx.cp_async.bulk.tensor.g2c"] == n * cluster


@T.prim_func
def split_cluster_barrier(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (2, 256), "int32")
    T.device_entry()
    T.cta_id([2])
    rank = T.cta_id_in_cluster([2])
    tid = T.thread_id([256])
    bar = T.alloc_shared([1], "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    T.cuda.cta_sync()
    if tid >= 128:  # waits for the other warpgroup, then meets every thread of the cluster
        T.ptx.mbarrier.try_wait(T.address_of(bar[0]), 0)
        T.ptx.barrier.cluster.arrive()
        T.ptx.barrier.cluster.wait()
        A[rank, tid] = tid
    else:
        if tid == 0:
            T.ptx.mbarrier.arrive(T.address_of(bar[0]))
        T.ptx.barrier.cluster.arrive()
        T.ptx.barrier.cluster.wait()
        A[rank, tid] = tid + 1000


def test_a_cluster_barrier_met_on_both_sides_of_a_warp_specialised_branch():
    a = np.zeros((2, 256), np.int32)
    assert tw.simulate(split_cluster_barrier, a).ok
    want = np.where(np.arange(256) >= 128, np.arange(256), np.arange(256) + 1000)
    np.testing.assert_array_equal(a, np.stack([want, want]))


@T.prim_func
def remote_arrive_releases_nothing(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (2, 32), "int32")
    T.device_entry()
    T.cta_id([2])
    rank = T.cta_id_in_cluster([2])
    tid = T.thread_id([32])
    bar = T.alloc_shared([1], "uint64")
    S = T.alloc_shared([32], "int32")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
        T.ptx.fence.mbarrier_init()
    T.cuda.cluster_sync()
    if rank == 1:
        if tid == 5:
            S[0] = 7
        if tid == 0:
            T.ptx.mbarrier.try_wait(T.address_of(bar[0]), 0)
            A[1, 0] = S[0]  # BUG: thread 5 of this CTA never synchronised with thread 0
    elif tid == 5:  # thread 5 of the *other* CTA completes the phase
        T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), 0, remote=1)
    T.cuda.cluster_sync()


def test_a_remote_arrive_does_not_release_the_peer_threads_writes():
    with pytest.raises(tw.HazardError, match="written by thread 5") as info:
        tw.simulate(remote_arrive_releases_nothing, np.zeros((2, 32), np.int32))
    lines = open(__file__).read().splitlines()
    assert "# BUG" in lines[info.value.span.line - 1]
