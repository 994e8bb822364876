"""One scheduler for the forked thread sets of a CTA and the CTAs of a cluster
(tilewise/sim/scheduler.py): one baton, one abort, one deadlock rule, and a deadlock report
that names every blocked wait -- which CTA and threads, the instruction, the user's line."""

import numpy as np
import pytest

import tilewise as tw
from tilewise import from_source

FILE = "sched.py"

MIXED = '''
@T.prim_func
def k(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (2, 64), "int32")
    T.device_entry()
    T.cta_id([2])
    rank = T.cta_id_in_cluster([2])
    tid = T.thread_id([64])
    bars = T.alloc_shared((2,), "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bars[0]), 32)
        T.ptx.mbarrier.init(T.address_of(bars[1]), 32)
    T.cuda.cluster_sync()
    if tid < 32:
        T.ptx.mbarrier.try_wait(T.address_of(bars[0]), 0)  # MBAR
        T.ptx.mbarrier.arrive(T.address_of(bars[1]))
    else:
        if rank == 0:
            T.ptx.bar.sync(1, 64)  # NAMED
        else:
            T.ptx.barrier.cluster.arrive()
            T.ptx.barrier.cluster.wait()  # CLUSTER
    A[rank, tid] = tid
'''


def _line(src, mark):
    return next(i for i, ln in enumerate(src.splitlines(), 1) if f"# {mark}" in ln)


def test_a_deadlock_across_fibers_and_ctas_names_every_blocked_wait():
    """Four waits, two per CTA, each on a side of a warp-specialised branch: none can
    complete. The first to notice reports, and names the three others."""
    func = from_source(MIXED, filename=FILE)
    with pytest.raises(tw.HazardError, match=r"mbarrier wait can never complete \(deadlock\)"
                       ) as e:
        tw.simulate(func, np.zeros((2, 64), np.int32))
    text = str(e.value)
    mbar, named, cluster = (_line(MIXED, m) for m in ("MBAR", "NAMED", "CLUSTER"))
    assert e.value.span.line == mbar and "[CTA (0, 0, 0), warp 0, lane 0 (thread 0)" in text
    others = text.split("; meanwhile ")[1]
    assert (f"CTA (0, 0, 0), warp 1, lane 0 (thread 32) waits at line {named} in "
            "T.ptx.bar.sync(1, 64): 32 of 64 threads arrived") in others
    assert (f"CTA (1, 0, 0), warp 0, lane 0 (thread 0), address shared+0x0 (bars[0]) waits at "
            f"line {mbar} in T.ptx.mbarrier.try_wait: parity 0") in others
    assert (f"CTA (1, 0, 0), warp 1, lane 0 (thread 32) waits at line {cluster} in "
            "T.ptx.barrier.cluster.wait: 96 thread(s) of the cluster have not arrived") in others


def test_non_strict_reports_each_deadlock_and_every_thread_finishes():
    a = np.zeros((2, 64), np.int32)
    rep = tw.simulate(from_source(MIXED, filename=FILE), a, strict=False)
    assert sum("can never complete (deadlock)" in h.message for h in rep.hazards) == 4
    np.testing.assert_array_equal(a, np.tile(np.arange(64, dtype=np.int32), (2, 1)))


FAILS = '''
@T.prim_func
def k(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (2, 64), "int32")
    T.device_entry()
    T.cta_id([2])
    rank = T.cta_id_in_cluster([2])
    tid = T.thread_id([64])
    bar = T.alloc_shared((1,), "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 32)
    T.cuda.cluster_sync()
    if tid < 32:
        T.ptx.mbarrier.try_wait(T.address_of(bar[0]), 0)
    else:
        if rank == 1:
            A[rank, tid + 64] = 1  # BAD
        T.ptx.mbarrier.arrive(T.address_of(bar[0]))
    T.cuda.cluster_sync()
'''


def test_an_error_in_one_fiber_of_one_cta_stops_the_cluster_and_is_raised():
    """CTA 0's producer fiber is blocked when CTA 1's consumer fiber goes out of bounds:
    every task unwinds and the error is the one raised, at its line."""
    with pytest.raises(tw.HazardError, match="out-of-bounds access") as e:
        tw.simulate(from_source(FAILS, filename=FILE), np.zeros((2, 64), np.int32))
    assert e.value.span.line == _line(FAILS, "BAD")
    assert "CTA (1, 0, 0)" in str(e.value)


NESTED = '''
@T.prim_func
def k(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    T.device_entry()
    T.cta_id([1])
    tid = T.thread_id([128])
    bars = T.alloc_shared((2,), "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bars[0]), 32)
        T.ptx.mbarrier.init(T.address_of(bars[1]), 64)
    T.cuda.cta_sync()
    if tid < 64:
        if tid < 32:
            T.ptx.mbarrier.try_wait(T.address_of(bars[0]), 0)
        else:
            A[tid + 128] = 1  # BAD
            T.ptx.mbarrier.arrive(T.address_of(bars[0]))
        T.ptx.mbarrier.arrive(T.address_of(bars[1]))
    else:
        T.ptx.mbarrier.try_wait(T.address_of(bars[1]), 0)
    A[tid] = tid
'''


def test_an_error_in_a_fiber_forked_inside_another_fiber_is_raised():
    """The inner branch forks inside the outer one's first side: its second side goes out
    of bounds while its first waits. The error is raised at its line (not lost while the
    outer fibers unwind, nor turned into a deadlock of the waits left behind)."""
    with pytest.raises(tw.HazardError, match="out-of-bounds access") as e:
        tw.simulate(from_source(NESTED, filename=FILE), np.zeros(128, np.int32))
    assert e.value.span.line == _line(NESTED, "BAD")


def test_nested_forks_run_to_the_end():
    src = NESTED.replace("A[tid + 128] = 1  # BAD", "A[tid] = -1")
    a = np.zeros(128, np.int32)
    tw.simulate(from_source(src, filename=FILE), a)
    np.testing.assert_array_equal(a, np.arange(128, dtype=np.int32))
