"""Clusters in the simulator: the CTAs of a cluster run together (switching where one
waits for another), a TMA multicast lands in every CTA of its mask and completes each
one's mbarrier, a ring of shared -> shared copies goes round a cluster, and the cluster
barrier, remote arrives and their misuses are reported at the user's line."""

import numpy as np
import pytest

import tilewise as tw
from kernels_cluster import (make_multicast, make_ring, multicast_expected, multicast_inputs,
                             ring_expected, ring_inputs)
from tilewise.ir.launch import cluster_rank


def _same(got, want):
    return all(g.tobytes() == w.tobytes() for g, w in zip(got, want))


@pytest.mark.parametrize("cluster", [2, 4])
def test_multicast_fills_every_cta_of_the_cluster(cluster):
    arrays = multicast_inputs(np.random.default_rng(1), 3, cluster)
    report = tw.simulate(make_multicast(3, cluster), *arrays)
    assert report.ok and len(report.ctas) == 3 * cluster
    assert _same(arrays, multicast_expected(*arrays, cluster=cluster))
    # each CTA issued one slice; every slice landed in every CTA of its cluster
    assert report.instructions["ptx.cp_async.bulk.tensor.g2c"] == 3 * cluster


@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_dsmem_ring_round_a_cluster(cluster):
    arrays = ring_inputs(np.random.default_rng(2), cluster, 1024)
    report = tw.simulate(make_ring(cluster, 1024), *arrays)
    assert report.ok
    assert _same(arrays, ring_expected(*arrays))


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
