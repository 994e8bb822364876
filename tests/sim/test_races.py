"""The race, uninitialised-register and proxy checks stay quiet on correct kernels (the
planted bugs they catch are tests/sanitizer/), and the details of what they report."""

import numpy as np
import pytest

import tilewise as tw

FILE = "race_kernels.py"


def kernel(*body: str, threads: int = 128, ctas: int = 1, n: int = 128, dtype="int32"):
    head = [f'A = T.match_buffer(A_ptr, ({n},), "{dtype}")',
            f'B = T.match_buffer(B_ptr, ({n},), "{dtype}")', "T.device_entry()",
            f"bx = T.cta_id([{ctas}])", f"tid = T.thread_id([{threads}])"]
    lines = "".join(f"    {ln}\n" for ln in head + list(body))
    return tw.from_source(f"@T.prim_func\ndef k(A_ptr: T.handle, B_ptr: T.handle):\n{lines}",
                          filename=FILE)


def run(k, n=128, dtype=np.int32, **kw):
    a, b = np.arange(n).astype(dtype), np.zeros(n, dtype)
    report = tw.simulate(k, a, b, **kw)
    return a, b, report


CLEAN = {
    "accumulate-in-registers": ('acc = T.alloc_local((4,), "int32")',
                                "for j in range(4):", "    acc[j] = 0",
                                "for i in range(3):", "    for j in range(4):",
                                "        acc[j] = acc[j] + A[tid] + i",
                                "B[tid] = acc[0] + acc[3]"),
    "loop-carried-scalars": ("x: T.int32 = 0", "i: T.int32 = 0", "while i < tid % 5:",
                             "    x = x + A[tid]", "    i = i + 1", "B[tid] = x"),
    "broadcast-shared-read": ('S = T.alloc_shared((1,), "int32")', "if tid == 0:",
                              "    S[0] = A[7]", "T.cuda.cta_sync()", "B[tid] = S[0] + tid"),
    "rewrite-own-shared-element": ('S = T.alloc_shared((128,), "int32")', "S[tid] = A[tid]",
                                   "S[tid] = S[tid] * 2", "T.cuda.cta_sync()",
                                   "B[tid] = S[127 - tid]"),
    "refill-with-both-barriers": ('S = T.alloc_shared((128,), "int32")', "for k in range(3):",
                                  "    S[tid] = A[tid] + k", "    T.cuda.cta_sync()",
                                  "    B[tid] = B[tid] + S[127 - tid]", "    T.cuda.cta_sync()"),
    "in-place-global": ("A[tid] = A[tid] * 2", "B[tid] = A[tid]"),
    "global-exchange-after-barrier": ("B[tid] = A[tid]", "T.cuda.cta_sync()",
                                      "A[tid] = B[127 - tid]"),
    "one-thread-writes": ("if tid == 0:", "    B[0] = A[5]"),
}


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_correct_kernels_raise_nothing(name):
    a, b, report = run(kernel(*CLEAN[name]))
    assert report.ok


def test_ctas_writing_their_own_parts_do_not_race():
    k = kernel("B[bx * 64 + tid] = A[bx * 64 + tid] + 1", threads=64, ctas=2)
    a, b, report = run(k)
    assert report.ok and (b == np.arange(128) + 1).all()


def test_the_results_of_correct_kernels_are_unchanged():
    a, b, _ = run(kernel(*CLEAN["accumulate-in-registers"]))
    assert (b == 2 * (3 * np.arange(128) + 3)).all()
    a, b, _ = run(kernel(*CLEAN["loop-carried-scalars"]))
    assert (b == np.arange(128) * (np.arange(128) % 5)).all()


def test_a_racing_store_in_non_strict_mode_keeps_one_value():
    a, b, report = run(kernel("B[3] = A[tid]  # <-"), strict=False)
    assert b[3] in a and len(report.hazards) == 1
    assert "write-write race on global memory" in str(report.hazards[0])


def test_partly_initialised_registers():
    k = kernel('r = T.alloc_local((4,), "int32")', "for j in range(3):", "    r[j] = j",
               "B[tid] = r[0] + r[1] + r[2]", "B[tid] = r[3]  # <- never written")
    with pytest.raises(tw.HazardError) as info:
        run(k)
    text = str(info.value)
    assert "reads 'r' (registers / local memory) where this thread has not written" in text
    assert "address local+0xc" in text and "# <-" in info.value.span.source_line


def test_registers_written_through_ld_st_count_as_written():
    k = kernel('r = T.alloc_local((4,), "int32")',
               "T.ptx.ld_st(T.address_of(r[0]), T.address_of(A[tid // 4 * 4]), 16)",
               "B[tid] = r[tid % 4]")
    a, b, report = run(k)
    assert report.ok and (b == np.arange(128)).all()


def test_a_write_after_read_names_the_reader():
    k = kernel('S = T.alloc_shared((128,), "int32")', "S[tid] = A[tid]", "T.cuda.cta_sync()",
               "B[tid] = S[(tid + 5) % 128]", "S[tid] = 0  # <-")
    with pytest.raises(tw.HazardError) as info:
        run(k)
    assert "write-after-read race on shared memory: thread 123 read these bytes" in str(
        info.value)


def test_the_fence_orders_generic_writes_before_a_bulk_store():
    body = ('S = T.alloc_shared((1024,), "float16")', "for i in range(8):",
            "    S[i * 128 + tid] = A[i * 128 + tid]", "T.ptx.fence.proxy_async()",
            "T.cuda.cta_sync()", "if tid == 0:",
            "    T.ptx.cp_async.bulk.s2g(T.address_of(B[0]), T.address_of(S[0]), 2048)",
            "    T.ptx.cp_async.bulk.commit_group()", "    T.ptx.cp_async.bulk.wait_group(0)")
    a, b, report = run(kernel(*body, n=1024, dtype="float16"), n=1024, dtype=np.float16)
    assert report.ok and (a == b).all()


def test_a_fence_in_one_thread_does_not_cover_the_others():
    body = ('S = T.alloc_shared((1024,), "float16")', "for i in range(8):",
            "    S[i * 128 + tid] = A[i * 128 + tid]", "if tid == 0:",
            "    T.ptx.fence.proxy_async()", "T.cuda.cta_sync()", "if tid == 0:",
            "    T.ptx.cp_async.bulk.s2g(T.address_of(B[0]), T.address_of(S[0]), 2048)  # <-",
            "    T.ptx.cp_async.bulk.commit_group()", "    T.ptx.cp_async.bulk.wait_group(0)")
    with pytest.raises(tw.HazardError) as info:
        run(kernel(*body, n=1024, dtype="float16"), n=1024, dtype=np.float16)
    assert "that thread 1 wrote with ordinary stores and no fence.proxy.async since" in str(
        info.value)


def test_two_cp_async_into_one_destination_race():
    k = kernel('S = T.alloc_shared((1024,), "float16")',
               "T.ptx.cp_async(T.address_of(S[tid // 2 * 8]), T.address_of(A[tid * 8]), 16)"
               "  # <-", "T.ptx.cp_async.wait_all()", n=1024, dtype="float16")
    with pytest.raises(tw.HazardError) as info:
        run(k, n=1024, dtype=np.float16)
    assert "write-write race on shared memory: thread 0 writes the same bytes in the same " \
           "statement" in str(info.value)
    assert "warp 0, lane 1" in str(info.value)


def test_the_race_report_names_the_other_cta():
    k = kernel("B[tid] = A[tid] + bx  # <-", threads=64, ctas=3)
    with pytest.raises(tw.HazardError) as info:
        run(k)
    text = str(info.value)
    assert "this thread writes bytes CTA (0, 0, 0) wrote in the same launch" in text
    assert "[CTA (1, 0, 0), warp 0, lane 0 (thread 0), address global (B)+0x0]" in text
    assert "index with T.cta_id" in info.value.hint


def test_mbarrier_tx_count_beyond_20_bits():
    k = kernel('bar = T.alloc_shared((1,), "uint64")', "if tid == 0:",
               "    T.ptx.mbarrier.init(T.address_of(bar[0]), 1)", "T.cuda.cta_sync()",
               "if tid == 0:", "    T.ptx.mbarrier.expect_tx(T.address_of(bar[0]), 1 << 19)",
               "    T.ptx.mbarrier.expect_tx(T.address_of(bar[0]), 1 << 19)  # <-")
    with pytest.raises(tw.HazardError) as info:
        run(k)
    assert "mbarrier transaction count 1048576 is outside [-1048575, 1048575] after " \
           "expect_tx(524288)" in str(info.value)
    assert "# <-" in info.value.span.source_line


def test_many_reads_between_barriers_are_folded_and_still_checked():
    # 600 reads with no barrier: the read log folds into the shadow (bounded memory), and a
    # write over another thread's read is still seen
    body = ('S = T.alloc_shared((128,), "int32")', "S[tid] = A[tid]", "T.cuda.cta_sync()",
            "acc: T.int32 = 0", "for i in range(600):", "    acc = acc + S[(tid + i) % 128]",
            "B[tid] = acc")
    a, b, report = run(kernel(*body))
    t = np.arange(128)
    want = sum((t + i) % 128 for i in range(600))
    assert report.ok and (b == want).all()
    with pytest.raises(tw.HazardError, match="write-after-read race on shared memory"):
        run(kernel(*body, "S[tid] = 0  # <-"))


def test_an_mbarrier_phase_orders_plain_stores_both_ways():
    # the producer warpgroup writes S and arrives; the consumer warpgroup waits, reads it and
    # arrives on the other barrier; the producer waits and overwrites S: a completed phase
    # releases its arrivals' accesses (no read-after-write, no write-after-read race), and
    # the consumer's global writes after its wait are ordered with the producer's reads
    body = ('S = T.alloc_shared((128,), "int32")', 'bar = T.alloc_shared((2,), "uint64")',
            "if tid == 0:", "    T.ptx.mbarrier.init(T.address_of(bar[0]), 128)",
            "    T.ptx.mbarrier.init(T.address_of(bar[1]), 128)", "T.cuda.cta_sync()",
            "if tid < 128:", "    for k in range(3):",
            "        T.ptx.mbarrier.try_wait(T.address_of(bar[1]), (k + 1) % 2)",
            "        S[tid] = A[tid] + k + B[tid]",
            "        T.ptx.mbarrier.arrive(T.address_of(bar[0]))",
            "else:", "    for k in range(3):",
            "        T.ptx.mbarrier.try_wait(T.address_of(bar[0]), k % 2)",
            "        B[tid - 128] = S[255 - tid]",
            "        T.ptx.mbarrier.arrive(T.address_of(bar[1]))")
    a, b, report = run(kernel(*body, threads=256))
    assert report.ok
    want = np.zeros(128, np.int64)
    for k in range(3):
        want = (np.arange(128) + k + want)[::-1]
    assert (b == want).all()


def test_a_named_barrier_orders_its_participants_like_bar_sync():
    # warpgroup 1 exchanges through shared and global memory with bar.sync(1, 128) only;
    # warpgroup 0 does its own work meanwhile
    body = ('S = T.alloc_shared((128,), "int32")', "if tid >= 128:",
            "    S[tid - 128] = A[tid - 128]", "    B[tid - 128] = A[tid - 128] * 2",
            "    T.ptx.bar.sync(1, 128)",
            "    A[tid - 128] = S[255 - tid] + B[255 - tid]", "    T.ptx.bar.sync(1, 128)",
            "    S[tid - 128] = 0", "else:", "    T.ptx.bar.sync(2, 128)")
    a, b, report = run(kernel(*body, threads=256))
    assert report.ok and (a == 3 * np.arange(128)[::-1]).all()
    racy = body[:6] + ("    S[tid - 128] = 0  # <- no second barrier",) + body[8:]
    with pytest.raises(tw.HazardError, match="write-after-read race on shared memory"):
        run(kernel(*racy, threads=256))


CLUSTER = '''
@T.prim_func
def k(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    B = T.match_buffer(B_ptr, (128,), "int32")
    T.device_entry()
    bx = T.cta_id([{ctas}])
    rank = T.cta_id_in_cluster([2])
    tid = T.thread_id([128])
    if rank == 0:
        B[tid] = A[tid]
    {sync}
    if rank == 1:
        B[tid] = B[tid] + 1  # <-
'''


def test_the_ctas_of_a_cluster_are_ordered_by_its_barrier_and_clusters_never_are():
    def src(ctas, sync):
        return tw.from_source(CLUSTER.format(ctas=ctas, sync=sync), filename=FILE)

    a, b, report = run(src(2, "T.cuda.cluster_sync()"))
    assert report.ok and (b == np.arange(128) + 1).all()
    with pytest.raises(tw.HazardError) as info:
        run(src(2, ""))  # no cluster barrier
    assert "read-after-write race on global memory: this thread reads bytes thread 0 of CTA " \
        "rank 0 of this cluster wrote with no bar.sync in between" in str(info.value)
    with pytest.raises(tw.HazardError) as info:
        run(src(4, "T.cuda.cluster_sync()"))
    assert "this thread writes bytes the cluster of CTA (0, 0, 0) wrote in the same launch" \
        in str(info.value)
