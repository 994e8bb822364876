"""Warp specialisation in the simulator: the two sides of a branch that wait on each
other's mbarriers run as fibers (tilewise.sim.fibers), and a true deadlock is still one."""

import numpy as np
import pytest

import tilewise as tw
from tilewise import T
from simhelpers import line_of, poison, rand

STAGES, ITERS = 2, 7


@T.prim_func
def ring(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (ITERS, 128), "float32")
    B = T.match_buffer(B_ptr, (ITERS, 128), "float32")
    T.device_entry()
    tid = T.thread_id([256])
    buf = T.alloc_shared((STAGES, 128), "float32")
    full = T.alloc_shared((STAGES,), "uint64")
    empty = T.alloc_shared((STAGES,), "uint64")
    if tid == 0:
        for s in range(STAGES):
            T.ptx.mbarrier.init(T.address_of(full[s]), 128)
            T.ptx.mbarrier.init(T.address_of(empty[s]), 128)
    T.cuda.cta_sync()
    if tid < 128:  # producer warpgroup: fills slot k % STAGES once the consumer freed it
        for k in range(ITERS):
            T.ptx.mbarrier.try_wait(T.address_of(empty[k % STAGES]), (k // STAGES + 1) % 2)
            buf[k % STAGES, tid] = A[k, tid] * 2.0
            T.ptx.mbarrier.arrive(T.address_of(full[k % STAGES]))
    else:  # consumer warpgroup
        for k in range(ITERS):
            ok = T.bool(False)
            while not ok:
                ok = T.ptx.mbarrier.try_wait_parity(T.address_of(full[k % STAGES]),
                                                    (k // STAGES) % 2)
            B[k, tid - 128] = buf[k % STAGES, tid - 128] + 1.0
            T.ptx.mbarrier.arrive(T.address_of(empty[k % STAGES]))
    T.cuda.cta_sync()
    B[tid // 128, tid % 128] = B[tid // 128, tid % 128]  # all 256 threads, reconverged


def test_producer_and_consumer_warpgroups_take_turns():
    a, b = rand((ITERS, 128), np.float32), poison((ITERS, 128), np.float32)
    rep = tw.simulate(ring, a, b)
    assert rep.ok
    np.testing.assert_array_equal(b, a * np.float32(2) + np.float32(1))


@T.prim_func
def both_wait(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64,), "int32")
    T.device_entry()
    tid = T.thread_id([64])
    bars = T.alloc_shared((2,), "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bars[0]), 32)
        T.ptx.mbarrier.init(T.address_of(bars[1]), 32)
    T.cuda.cta_sync()
    if tid < 32:
        T.ptx.mbarrier.try_wait(T.address_of(bars[0]), 0)  # BUG: waits for warp 1
        T.ptx.mbarrier.arrive(T.address_of(bars[1]))
    else:
        T.ptx.mbarrier.try_wait(T.address_of(bars[1]), 0)  # BUG: 2
        T.ptx.mbarrier.arrive(T.address_of(bars[0]))
    A[tid] = tid


def test_two_warps_waiting_for_each_other_is_a_deadlock():
    with pytest.raises(tw.HazardError, match=r"can never complete \(deadlock\)") as e:
        tw.simulate(both_wait, poison(64, np.int32))
    first, second = line_of(__file__, "# BUG: waits for warp 1"), line_of(__file__, "# BUG: 2")
    # whichever wait notices is reported, and the message names the other one
    assert e.value.span.line in (first, second)
    assert f"waits at line {first if e.value.span.line == second else second}" in str(e.value)


def test_a_deadlock_in_non_strict_mode_is_recorded_and_the_run_finishes():
    a = poison(64, np.int32)
    rep = tw.simulate(both_wait, a, strict=False)
    assert len(rep.hazards) >= 1 and "deadlock" in str(rep.hazards[0])
    np.testing.assert_array_equal(a, np.arange(64))


@T.prim_func
def named(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (256,), "float32")
    B = T.match_buffer(B_ptr, (256,), "float32")
    T.device_entry()
    tid = T.thread_id([384])
    S = T.alloc_shared((256,), "float32")
    bar = T.alloc_shared((1,), "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    T.cuda.cta_sync()
    if tid >= 128:  # two consumer warpgroups exchange halves through a named barrier
        S[tid - 128] = A[tid - 128] * 3.0
        T.ptx.bar.sync(1, 256)
        B[tid - 128] = S[(tid - 128 + 128) % 256]
        if tid == 128:
            T.ptx.mbarrier.arrive(T.address_of(bar[0]))
    else:  # the producer warpgroup waits for them
        T.ptx.mbarrier.try_wait(T.address_of(bar[0]), 0)


def test_a_named_barrier_joins_two_warpgroups_while_a_third_waits():
    a, b = rand(256, np.float32), poison(256, np.float32)
    tw.simulate(named, a, b)
    np.testing.assert_array_equal(b, np.roll(a * np.float32(3), -128))


@T.prim_func
def short_barrier(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (256,), "float32")
    T.device_entry()
    tid = T.thread_id([256])
    if tid < 128:
        T.ptx.bar.sync(1, 256)  # BUG: only 128 threads come
    A[tid] = 1.0


def test_a_named_barrier_short_of_threads_is_a_deadlock():
    with pytest.raises(tw.HazardError, match=r"bar.sync 1, 256 can never complete \(deadlock\)"
                       r": 128 of 256") as e:
        tw.simulate(short_barrier, poison(256, np.float32))
    assert e.value.span.line == line_of(__file__, "# BUG: only 128 threads come")


def test_named_barriers_lower_to_bar_sync_and_bar_arrive():
    k = tw.compile(named, "sm_90a")
    ptx = " ".join(k.source("ptx").split())
    assert "bar.sync 1, 256;" in ptx, ptx


@T.prim_func
def signal(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (256,), "float32")
    T.device_entry()
    tid = T.thread_id([256])
    S = T.alloc_shared((128,), "float32")
    if tid < 128:
        S[tid] = A[tid] + 1.0
        T.ptx.bar.arrive(2, 256)  # producers signal without waiting
    else:
        T.ptx.bar.sync(2, 256)
        A[tid] = S[tid - 128]


def test_bar_arrive_signals_bar_sync_waiters():
    a = rand(256, np.float32)
    want = np.concatenate([a[:128], a[:128] + np.float32(1)])
    tw.simulate(signal, a)
    np.testing.assert_array_equal(a, want)
    ptx = " ".join(tw.compile(signal, "sm_90a").source("ptx").split())
    assert "bar.arrive 2, 256;" in ptx and "bar.sync 2, 256;" in ptx


@T.prim_func
def odd_count(A_ptr: T.handle, count: T.int32):
    A = T.match_buffer(A_ptr, (64,), "float32")
    T.device_entry()
    tid = T.thread_id([64])
    T.ptx.bar.sync(1, count)  # BUG: not whole warps (known at run time)
    A[tid] = 1.0


@T.prim_func
def odd_count_constant(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64,), "float32")
    T.device_entry()
    tid = T.thread_id([64])
    T.ptx.bar.sync(1, 48)  # BUG: not whole warps, a constant
    A[tid] = 1.0


def test_a_named_barrier_count_that_is_not_whole_warps_is_reported():
    with pytest.raises(tw.HazardError, match=r"bar.sync 1, 48: the id must be 0..15 and the "
                       r"count a positive multiple of 32") as e:
        tw.simulate(odd_count, poison(64, np.float32), 48)
    assert e.value.span.line == line_of(__file__, "# BUG: not whole warps (known at run time)")
    assert "whole warps" in e.value.hint


@pytest.mark.parametrize("run", ["compile", "simulate"])
def test_a_constant_named_barrier_count_is_refused_when_compiling(run):
    # it reached ptxas and was reported as a code generator defect
    with pytest.raises(tw.CompileError, match=r"bar.sync 1, 48: the thread count of a named "
                       r"barrier must be a positive multiple of 32 \(whole warps\), up to the "
                       r"CTA's 64 threads") as e:
        if run == "compile":
            tw.compile(odd_count_constant, "sm_90a")
        else:
            tw.simulate(odd_count_constant, poison(64, np.float32))
    assert e.value.span.line == line_of(__file__, "# BUG: not whole warps, a constant")
