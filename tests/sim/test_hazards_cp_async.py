"""Planted cp.async / barrier bugs, each caught with its own message at its own line."""

import numpy as np
import pytest

import tilewise as tw
from tilewise import T
from simhelpers import line_of, poison, rand


def run(kernel, n=1024, dtype=np.float16, **kw):
    return tw.simulate(kernel, rand(n, dtype), poison(n, dtype), **kw)


def caught(kernel, marker, *patterns, **kw):
    with pytest.raises(tw.HazardError) as info:
        run(kernel, **kw)
    err = info.value
    assert err.span is not None and err.span.line == line_of(__file__, marker), str(err)
    for p in patterns:
        assert p in str(err), str(err)
    assert "tilewise/sim" not in str(err)
    return err


@T.prim_func
def missing_wait(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    T.ptx.cp_async(T.address_of(S[tid * 8]), T.address_of(A[tid * 8]), 16)
    T.ptx.cp_async.commit_group()
    T.cuda.cta_sync()
    B[tid] = S[tid]  # BUG: missing wait


def test_missing_wait_group():
    err = caught(missing_wait, "# BUG: missing wait", "read before the cp.async completed",
                 "missing cp.async.wait_group", "CTA (0, 0, 0)", "warp 0, lane 0",
                 "address shared+0x0")
    assert "thread 0's" in str(err) or "its own" in str(err)


@T.prim_func
def missing_commit(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    T.ptx.cp_async(T.address_of(S[tid * 8]), T.address_of(A[tid * 8]), 16)
    T.ptx.cp_async.wait_group(0)
    B[tid * 8] = S[tid * 8]  # BUG: never committed


def test_missing_commit_group():
    caught(missing_commit, "# BUG: never committed", "missing cp.async.commit_group")


@T.prim_func
def wait_one(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([64])
    S = T.alloc_shared((1024,), "float16")
    T.ptx.cp_async(T.address_of(S[tid * 8]), T.address_of(A[tid * 8]), 16)
    T.ptx.cp_async.commit_group()
    T.ptx.cp_async(T.address_of(S[512 + tid * 8]), T.address_of(A[512 + tid * 8]), 16)
    T.ptx.cp_async.commit_group()
    T.ptx.cp_async.wait_group(1)
    B[tid * 8] = S[tid * 8]  # the first group is complete: fine
    B[512 + tid * 8] = S[512 + tid * 8]  # BUG: second group in flight


def test_wait_group_one_where_zero_is_needed():
    caught(wait_one, "# BUG: second group in flight", "cp.async.wait_group(1)",
           "leaves up to 1 group(s) in flight", "address shared+0x400")


@T.prim_func
def missing_sync(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    T.ptx.cp_async(T.address_of(S[tid * 8]), T.address_of(A[tid * 8]), 16)
    T.ptx.cp_async.commit_group()
    T.ptx.cp_async.wait_group(0)
    B[tid] = S[tid]  # BUG: no barrier


def test_missing_cta_sync_after_wait():
    caught(missing_sync, "# BUG: no barrier", "written by thread 0 with no bar.sync",
           "warp 0, lane 1 (thread 1)")


@T.prim_func
def unaligned(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([32])
    S = T.alloc_shared((1024,), "float16")
    T.ptx.cp_async(T.address_of(S[tid * 8 + 2]), T.address_of(A[tid * 8]), 16)  # BUG: align


def test_unaligned_cp_async():
    caught(unaligned, "# BUG: align", "cp.async destination: misaligned address",
           "not a multiple of 16", "address shared+0x4")


@T.prim_func
def out_of_bounds(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([256])
    S = T.alloc_shared((2048,), "float16")
    T.ptx.cp_async(T.address_of(S[tid * 8]), T.address_of(A[tid * 8]), 16)  # BUG: oob


def test_out_of_bounds_global_read():
    caught(out_of_bounds, "# BUG: oob", "cp.async source: out of bounds",
           "warp 4, lane 0 (thread 128)", "global (A)+0x800")


@T.prim_func
def oob_load(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    bx = T.cta_id([2])
    tid = T.thread_id([1024])
    B[tid] = A[tid + bx]  # BUG: plain oob


def test_out_of_bounds_plain_load_names_cta():
    caught(oob_load, "# BUG: plain oob", "A[1024] but 'A' has 1024 element(s)",
           "CTA (1, 0, 0), warp 31, lane 31")


@T.prim_func
def divergent_barrier(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    if tid < 64:
        T.cuda.cta_sync()  # BUG: divergent
    B[tid] = A[tid]


def test_barrier_in_divergent_branch():
    caught(divergent_barrier, "# BUG: divergent", "reached by 64 of 128 threads",
           "divergent branch", "thread 64")


@T.prim_func
def uninitialised(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    B[tid] = S[tid]  # BUG: nothing written


def test_uninitialised_shared_read():
    caught(uninitialised, "# BUG: nothing written", "nothing has written")


def test_non_strict_mode_records_instead_of_raising():
    report = run(missing_sync, strict=False)
    assert not report.ok and len(report.hazards) >= 1
    assert all(isinstance(h, tw.HazardError) for h in report.hazards)
    assert "no bar.sync" in str(report.hazards[0])
