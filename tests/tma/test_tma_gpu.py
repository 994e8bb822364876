"""On the GPU (marked ``gpu``; skipped without one): TMA round trips over the swizzle x
dtype x rank x edge matrix, multicast over a cluster, a dsmem ring and TMA reductions leave
exactly the bytes the simulator leaves, which are numpy's.

    PYTHONPATH=src python -m pytest -q -m gpu tests/tma
"""

import numpy as np
import pytest

from kernels_cluster import (make_multicast, make_ring, multicast_expected, multicast_inputs,
                             ring_expected, ring_inputs)
from kernels_tma import expected, inputs, make_roundtrip
from matrix import CASES
from tilewise.runner import _run_gpu
from tilewise.sim import simulate

pytestmark = pytest.mark.gpu


def _target():
    from tilewise.runtime import device_target

    return str(device_target())


def _three_ways(func, arrays, want):
    """GPU bytes == simulator bytes == numpy, naming the first array that differs."""
    gpu = [a.copy() for a in arrays]
    sim = [a.copy() for a in arrays]
    _run_gpu(func, gpu, _target())
    simulate(func, *sim, target="sm_90a")
    for i, (g, s, w) in enumerate(zip(gpu, sim, want)):
        assert s.tobytes() == w.tobytes(), f"argument {i}: simulator != numpy"
        if g.tobytes() != s.tobytes():
            bad = np.flatnonzero(g.reshape(-1).view(np.uint8) != s.reshape(-1).view(np.uint8))
            pytest.fail(f"argument {i}: GPU != simulator at {len(bad)} byte(s), first at "
                        f"byte {bad[0]}")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_roundtrip(case):
    func = make_roundtrip(case.rank, case.dtype, case.swizzle, case.tile, case.blocked,
                          case.oob)
    arrays = inputs(np.random.default_rng(11), case.shape, case.tile, case.dtype)
    _three_ways(func, arrays, expected(arrays[0], case.tile, case.dtype, case.swizzle,
                                       case.blocked, case.oob))


@pytest.mark.parametrize("cluster", [2, 4])
def test_multicast(cluster):
    arrays = multicast_inputs(np.random.default_rng(12), 8, cluster)
    _three_ways(make_multicast(8, cluster), arrays,
                multicast_expected(*arrays, cluster=cluster))


@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_dsmem_ring(cluster):
    arrays = ring_inputs(np.random.default_rng(13), cluster, 4096)
    _three_ways(make_ring(cluster, 4096), arrays, ring_expected(*arrays))


@pytest.mark.parametrize("op, dtype", [("add", "float32"), ("add", "float16"),
                                       ("add", "bfloat16"), ("add", "int32"), ("min", "int32"),
                                       ("max", "float16"), ("min", "bfloat16"),
                                       ("max", "uint32")])
def test_store_reduction(op, dtype):
    from kernels_tma import make_reduce, reduce_expected, reduce_inputs

    arrays = reduce_inputs(np.random.default_rng(14), dtype)
    _three_ways(make_reduce(dtype, op), arrays, reduce_expected(*arrays, op))


@pytest.mark.parametrize("shape", [(128, 448), (100, 200), (1000, 1000)])
def test_gemm_producer_loop(shape):
    from kernels_tma import make_staged_k_loop

    from tilewise.runner import random_bits

    rng = np.random.default_rng(15)
    a = random_bits(rng, shape, "bfloat16")
    b = random_bits(rng, shape, "bfloat16", fill=0xA5)
    _three_ways(make_staged_k_loop(), [a, b], [a, a.copy()])
