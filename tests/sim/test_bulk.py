"""Bulk TMA copies (cp.async.bulk) in the simulator: g2s + mbarrier and s2g + bulk groups
move the bytes exactly; each planted bug is caught with its own message at its own line."""

import numpy as np
import pytest

import tilewise as tw
from tilewise import T
from tilewise.errors import ScriptError
from simhelpers import bits, line_of, poison, rand

NBYTES = 2048  # 1024 float16


def run(kernel, n=1024, dtype=np.float16, **kw):
    a, b = rand(n, dtype), poison(n, dtype)
    report = tw.simulate(kernel, a, b, **kw)
    return a, b, report


def caught(kernel, marker, *patterns, **kw):
    with pytest.raises(tw.HazardError) as info:
        run(kernel, **kw)
    err = info.value
    assert err.span is not None and err.span.line == line_of(__file__, marker), str(err)
    for p in patterns:
        assert p in str(err), str(err)
    assert "tilewise/sim" not in str(err)
    return err


# ------------------------------------------------------------------ round trips
@T.prim_func
def g2s_round_trip(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    bar = T.alloc_shared([1], "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.mbarrier.arrive_expect_tx(T.address_of(bar[0]), 2048)
        T.ptx.cp_async.bulk.g2s(T.address_of(S[0]), T.address_of(A[0]), 2048,
                                T.address_of(bar[0]))
    T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 0)
    for i in range(8):
        B[i * 128 + tid] = S[i * 128 + tid]


def test_g2s_mbarrier_wait_parity_round_trip():
    a, b, report = run(g2s_round_trip)
    assert (bits(a) == bits(b)).all()
    assert report.instructions["ptx.cp_async.bulk.g2s"] == 1
    assert report.instructions["ptx.mbarrier.wait_parity"] == 128


@T.prim_func
def s2g_round_trip(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    for i in range(8):
        S[i * 128 + tid] = A[i * 128 + tid]
    T.ptx.fence.proxy_async()
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.cp_async.bulk.s2g(T.address_of(B[0]), T.address_of(S[0]), 2048)
        T.ptx.cp_async.bulk.commit_group()
        T.ptx.cp_async.bulk.wait_group(0)


def test_s2g_commit_wait_round_trip():
    a, b, _ = run(s2g_round_trip)
    assert (bits(a) == bits(b)).all()


@T.prim_func
def per_thread_pieces(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    bar = T.alloc_shared([1], "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 8)
    T.cuda.cta_sync()
    if tid < 8:  # eight threads, 256 bytes each, one mbarrier phase
        T.ptx.mbarrier.arrive_expect_tx(T.address_of(bar[0]), 256)
        T.ptx.cp_async.bulk.g2s(T.address_of(S[tid * 128]), T.address_of(A[tid * 128]), 256,
                                T.address_of(bar[0]))
    T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 0)
    if tid < 4:  # four stores of 512 bytes, two bulk groups per thread
        T.ptx.cp_async.bulk.s2g(T.address_of(B[tid * 256]), T.address_of(S[tid * 256]), 128)
        T.ptx.cp_async.bulk.commit_group()
        T.ptx.cp_async.bulk.s2g(T.address_of(B[tid * 256 + 64]),
                                T.address_of(S[tid * 256 + 64]), 384)
        T.ptx.cp_async.bulk.commit_group()
        T.ptx.cp_async.bulk.wait_group_read(0)
    T.cuda.cta_sync()
    S[tid] = T.float16(0)  # legal: every store has finished reading


def test_per_thread_copies_and_groups():
    a, b, _ = run(per_thread_pieces)
    assert (bits(a) == bits(b)).all()


@T.prim_func
def one_waiter_then_barrier(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    bar = T.alloc_shared([1], "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.mbarrier.arrive_expect_tx(T.address_of(bar[0]), 2048)
        T.ptx.cp_async.bulk.g2s(T.address_of(S[0]), T.address_of(A[0]), 2048,
                                T.address_of(bar[0]))
        T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 0)
    T.cuda.cta_sync()  # thread 0 observed the copy: the barrier publishes it
    for i in range(8):
        B[i * 128 + tid] = S[i * 128 + tid]


def test_one_waiter_then_barrier_is_legal():
    a, b, _ = run(one_waiter_then_barrier)
    assert (bits(a) == bits(b)).all()


@T.prim_func
def two_phases(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((512,), "float16")
    bar = T.alloc_shared([1], "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    T.cuda.cta_sync()
    for k in range(2):  # the same buffer and barrier twice: phases 0 and 1
        if tid == 0:
            T.ptx.mbarrier.arrive_expect_tx(T.address_of(bar[0]), 1024)
            T.ptx.cp_async.bulk.g2s(T.address_of(S[0]), T.address_of(A[k * 512]), 1024,
                                    T.address_of(bar[0]))
        T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), k % 2)
        for i in range(4):
            B[k * 512 + i * 128 + tid] = S[i * 128 + tid]
        T.cuda.cta_sync()


def test_buffer_reused_across_phases():
    a, b, _ = run(two_phases)
    assert (bits(a) == bits(b)).all()


# ------------------------------------------------------------------ operand checks
@T.prim_func
def misaligned_dst(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    bar = T.alloc_shared([1], "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.mbarrier.arrive_expect_tx(T.address_of(bar[0]), 512)
        T.ptx.cp_async.bulk.g2s(  # BUG: dst 8 bytes off
            T.address_of(S[4]), T.address_of(A[0]), 512, T.address_of(bar[0]))


def test_misaligned_destination():
    caught(misaligned_dst, "# BUG: dst 8 bytes off", "cp.async.bulk destination: misaligned "
           "address (0x8 is not a multiple of 16)", "CTA (0, 0, 0)", "warp 0, lane 0",
           "address shared+0x8")


@T.prim_func
def bad_size(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    bar = T.alloc_shared([1], "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.cp_async.bulk.g2s(  # BUG: 24 bytes
            T.address_of(S[0]), T.address_of(A[0]), 24 + tid, T.address_of(bar[0]))


def test_size_not_a_multiple_of_16():
    # a size known at run time: the simulator reports it (a constant: the compiler does)
    caught(bad_size, "# BUG: 24 bytes", "size 24 is not a positive multiple of 16 bytes",
           "warp 0, lane 0")


def test_a_constant_size_not_a_multiple_of_16_is_refused_at_compile_time():
    src = ("@T.prim_func\ndef k(A_ptr: T.handle, B_ptr: T.handle):\n"
           '    A = T.match_buffer(A_ptr, (1024,), "float16")\n    T.device_entry()\n'
           "    tid = T.thread_id([128])\n    S = T.alloc_shared((1024,), \"float16\")\n"
           '    bar = T.alloc_shared([1], "uint64")\n    if tid == 0:\n'
           "        T.ptx.cp_async.bulk.g2s(T.address_of(S[0]), T.address_of(A[0]), 24, "
           "T.address_of(bar[0]))  # BUG\n")
    func = tw.from_source(src, filename="bulk.py")
    with pytest.raises(tw.CompileError, match="cp_async.bulk.g2s: size 24 is not a positive "
                       "multiple of 16 bytes") as e:
        tw.simulate(func, np.zeros(1024, np.float16), np.zeros(1024, np.float16))
    assert e.value.span.line == next(i for i, ln in enumerate(src.splitlines(), 1)
                                     if "# BUG" in ln)


@T.prim_func
def source_out_of_bounds(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    bar = T.alloc_shared([1], "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.cp_async.bulk.g2s(  # BUG: past the end of A
            T.address_of(S[0]), T.address_of(A[512]), 2048, T.address_of(bar[0]))


def test_source_out_of_bounds():
    caught(source_out_of_bounds, "# BUG: past the end of A", "cp.async.bulk source: out of "
           "bounds (2048 bytes at offset 0x400", "address global (A)+0x400")


def test_s2g_destination_must_be_global():
    """A destination that is statically in the wrong space is an error when the call is
    bound, at the user's line (the simulator never sees it)."""
    with pytest.raises(ScriptError) as ei:
        @T.prim_func
        def s2g_to_shared(A_ptr: T.handle, B_ptr: T.handle):
            A = T.match_buffer(A_ptr, (1024,), "float16")
            T.device_entry()
            tid = T.thread_id([128])
            S = T.alloc_shared((1024,), "float16")
            S[tid] = A[tid]
            T.cuda.cta_sync()
            if tid == 0:
                T.ptx.cp_async.bulk.s2g(T.address_of(S[512]), T.address_of(S[0]), 256)
    msg = str(ei.value)
    assert "operand 'dst' of T.ptx.cp_async.bulk.s2g must be an address in global memory; " \
           "'S' is in shared memory" in msg
    assert "test_bulk.py" in msg and "T.ptx.cp_async.bulk.s2g(" in msg


@T.prim_func
def uninitialised_barrier(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    bar = T.alloc_shared([1], "uint64")
    if tid == 0:
        bar[0] = T.uint64(0)
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.cp_async.bulk.g2s(  # BUG: no init
            T.address_of(S[0]), T.address_of(A[0]), 2048, T.address_of(bar[0]))


def test_g2s_on_an_uninitialised_mbarrier():
    caught(uninitialised_barrier, "# BUG: no init", "cp.async.bulk complete_tx on an mbarrier "
           "that was never initialised")


# ------------------------------------------------------------------ visibility of g2s bytes
@T.prim_func
def read_without_wait(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    bar = T.alloc_shared([1], "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.mbarrier.arrive_expect_tx(T.address_of(bar[0]), 2048)
        T.ptx.cp_async.bulk.g2s(T.address_of(S[0]), T.address_of(A[0]), 2048,
                                T.address_of(bar[0]))
    T.cuda.cta_sync()
    B[tid] = S[tid]  # BUG: nobody waited


def test_read_before_any_wait():
    err = caught(read_without_wait, "# BUG: nobody waited",
                 "read before the bulk copy's mbarrier completed",
                 "this thread has not waited on it", "warp 0, lane 0", "address shared+0x0")
    assert "its own cp.async.bulk" in str(err)


@T.prim_func
def read_before_phase_completes(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    bar = T.alloc_shared([1], "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.cp_async.bulk.g2s(T.address_of(S[0]), T.address_of(A[0]), 2048,
                                T.address_of(bar[0]))
        B[0] = S[0]  # BUG: the phase is still open


def test_read_while_the_phase_is_open():
    caught(read_before_phase_completes, "# BUG: the phase is still open",
           "read before the bulk copy's mbarrier completed",
           "phase 0 is still open with 1 of 1 arrival(s) and -2048 transaction byte(s)")


@T.prim_func
def only_one_thread_waits(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    bar = T.alloc_shared([1], "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.mbarrier.arrive_expect_tx(T.address_of(bar[0]), 2048)
        T.ptx.cp_async.bulk.g2s(T.address_of(S[0]), T.address_of(A[0]), 2048,
                                T.address_of(bar[0]))
        T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 0)
    B[tid] = S[tid]  # BUG: only thread 0 waited, no barrier


def test_other_threads_need_their_own_wait_or_a_barrier():
    err = caught(only_one_thread_waits, "# BUG: only thread 0 waited",
                 "read before the bulk copy's mbarrier completed", "thread 0's cp.async.bulk",
                 "this thread has not waited", "warp 0, lane 1 (thread 1)")
    assert "wait_parity" in err.hint


@T.prim_func
def short_expect_tx(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    bar = T.alloc_shared([1], "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.mbarrier.arrive_expect_tx(T.address_of(bar[0]), 4096)
        T.ptx.cp_async.bulk.g2s(T.address_of(S[0]), T.address_of(A[0]), 2048,
                                T.address_of(bar[0]))
    T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 0)  # BUG: expects 4096 bytes


def test_wait_parity_that_can_never_complete_is_a_deadlock():
    caught(short_expect_tx, "# BUG: expects 4096 bytes",
           "mbarrier wait can never complete (deadlock)", "2048 transaction byte(s)")


@T.prim_func
def overwrite_in_flight(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    bar = T.alloc_shared([1], "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.mbarrier.arrive_expect_tx(T.address_of(bar[0]), 2048)
        T.ptx.cp_async.bulk.g2s(T.address_of(S[0]), T.address_of(A[0]), 2048,
                                T.address_of(bar[0]))
    S[tid] = T.float16(1)  # BUG: races with the bulk copy


def test_write_into_a_bulk_copy_nobody_waited_for():
    caught(overwrite_in_flight, "# BUG: races with the bulk copy",
           "write to shared memory that a cp.async.bulk of thread 0", "is still writing")


# ------------------------------------------------------------------ s2g source reads
@T.prim_func
def overwrite_store_source(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    for i in range(8):
        S[i * 128 + tid] = A[i * 128 + tid]
    T.ptx.fence.proxy_async()
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.cp_async.bulk.s2g(T.address_of(B[0]), T.address_of(S[0]), 2048)
        T.ptx.cp_async.bulk.commit_group()
    S[tid] = T.float16(0)  # BUG: no wait_group_read


def test_store_source_overwritten_before_wait_group_read():
    caught(overwrite_store_source, "# BUG: no wait_group_read",
           "shared memory overwritten while a bulk store still reads it",
           "missing cp.async.bulk.wait_group_read", "warp 0, lane 0")


@T.prim_func
def overwrite_uncommitted(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    for i in range(8):
        S[i * 128 + tid] = A[i * 128 + tid]
    T.ptx.fence.proxy_async()
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.cp_async.bulk.s2g(T.address_of(B[0]), T.address_of(S[0]), 2048)
        T.ptx.cp_async.bulk.wait_group_read(0)
    T.cuda.cta_sync()
    S[tid] = T.float16(0)  # BUG: never committed


def test_store_never_committed():
    caught(overwrite_uncommitted, "# BUG: never committed",
           "shared memory overwritten while a bulk store still reads it",
           "never committed (missing cp.async.bulk.commit_group)")


@T.prim_func
def wait_leaves_group(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    for i in range(8):
        S[i * 128 + tid] = A[i * 128 + tid]
    T.ptx.fence.proxy_async()
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.cp_async.bulk.s2g(T.address_of(B[0]), T.address_of(S[0]), 1024)
        T.ptx.cp_async.bulk.commit_group()
        T.ptx.cp_async.bulk.s2g(T.address_of(B[512]), T.address_of(S[512]), 1024)
        T.ptx.cp_async.bulk.commit_group()
        T.ptx.cp_async.bulk.wait_group_read(1)
    T.cuda.cta_sync()
    S[tid] = T.float16(0)  # legal: the first store's group is done
    S[512 + tid] = T.float16(0)  # BUG: second group in flight


def test_wait_group_read_leaves_the_newest_groups_in_flight():
    caught(wait_leaves_group, "# BUG: second group in flight",
           "shared memory overwritten while a bulk store still reads it",
           "cp.async.bulk.wait_group.read(1) at", "leaves up to 1 bulk group(s) pending")


@T.prim_func
def exit_while_reading(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    for i in range(8):
        S[i * 128 + tid] = A[i * 128 + tid]
    T.ptx.fence.proxy_async()
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.cp_async.bulk.s2g(T.address_of(B[0]), T.address_of(S[0]), 2048)  # BUG: exit
        T.ptx.cp_async.bulk.commit_group()


def test_cta_exit_with_a_store_still_reading():
    caught(exit_while_reading, "# BUG: exit",
           "the CTA exits while a bulk store still reads shared memory")


@T.prim_func
def store_of_unsynced_source(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    for i in range(8):
        S[i * 128 + tid] = A[i * 128 + tid]
    if tid == 0:
        T.ptx.cp_async.bulk.s2g(T.address_of(B[0]), T.address_of(S[0]), 2048)  # BUG: no sync
        T.ptx.cp_async.bulk.commit_group()
        T.ptx.cp_async.bulk.wait_group(0)


def test_store_source_written_by_other_threads_without_barrier():
    caught(store_of_unsynced_source, "# BUG: no sync",
           "reads shared memory written by thread 1 with no bar.sync in between")


def test_non_strict_mode_records_and_finishes():
    a, b, report = run(overwrite_store_source, strict=False)
    assert not report.ok
    assert any("still reads it" in str(h) for h in report.hazards)
    assert (bits(a) == bits(b)).all()  # the store read the source at issue
