"""``T.ptx.st_cluster`` (``mapa`` + ``st.shared::cluster.b32``): a 32-bit store into another
CTA's shared memory. The simulator moves the bytes into that CTA and checks the ordering
the cluster barrier gives: a read before the destination's barrier, a store racing with the
destination's own accesses, and a store into a CTA that has exited are hazards."""

import numpy as np
import pytest

import tilewise as tw

FILE = "st_cluster_kernels.py"


def kernel(*body: str, cluster: int = 4, ctas: int = 8):
    head = ['A = T.match_buffer(A_ptr, (8, 64), "float32")',
            'B = T.match_buffer(B_ptr, (8, 4), "float32")', "T.device_entry()",
            f"bx = T.cta_id([{ctas}])", f"rank = T.cta_id_in_cluster([{cluster}])",
            "tid = T.thread_id([64])", 'part = T.alloc_shared((4,), "float32")']
    lines = "".join(f"    {ln}\n" for ln in head + list(body))
    return tw.from_source(f"@T.prim_func\ndef k(A_ptr: T.handle, B_ptr: T.handle):\n{lines}",
                          filename=FILE)


START = ("T.ptx.barrier.cluster.arrive(relaxed=True)", "T.ptx.barrier.cluster.wait()")
SEND = ("if tid < 4:",  # thread t of every CTA sends one value to CTA t: an all-to-all
        "    T.ptx.st_cluster(T.address_of(part[rank]), A[bx, rank * 16 + tid], tid)  # <-")
READ = ("if tid < 4:", "    B[bx, tid] = part[tid]  # <- read")


def run(k, **kw):
    a = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
    b = np.full((8, 4), np.nan, np.float32)
    return a, b, tw.simulate(k, a, b, **kw)


def test_an_all_to_all_exchange_lands_in_every_cta():
    a, b, report = run(kernel(*START, *SEND, "T.cuda.cluster_sync()", *READ), strict=True)
    assert report.ok
    want = np.empty((8, 4), np.float32)
    for bx in range(8):  # CTA bx's part[s]: what CTA s of its cluster sent it
        c0, rank = bx // 4 * 4, bx % 4
        want[bx] = [a[c0 + s, s * 16 + rank] for s in range(4)]
    assert np.array_equal(b, want)


def test_the_store_is_st_shared_cluster_through_mapa():
    ptx = tw.compile(kernel(*START, *SEND, "T.cuda.cluster_sync()", *READ),
                     "sm_90a").source("ptx")
    assert "mapa.shared::cluster.u64" in ptx and "st.shared::cluster.b32" in ptx


def test_a_read_ordered_by_a_relaxed_cluster_barrier_only_is_reported():
    """Rank 1 waits (a relaxed phase: it orders no memory) while rank 0 stores into it."""
    body = (*START, "if rank == 0 and tid == 0:",
            "    T.ptx.st_cluster(T.address_of(part[0]), A[bx, tid], 1)", *START,
            "if rank == 1 and tid == 0:", "    B[bx, 0] = part[0]  # <- read")
    with pytest.raises(tw.HazardError) as info:
        run(kernel(*body, cluster=2, ctas=2), strict=True)
    assert "reads shared memory written by thread 0 of CTA rank 0 (st_cluster) with no " \
        "bar.sync in between" in str(info.value)
    assert "# <- read" in info.value.span.source_line


def test_a_cta_barrier_of_the_destination_does_not_publish_the_store():
    """bar.sync orders a CTA's own threads; only the cluster barrier orders another CTA's
    store (the destination reads after a __syncthreads, the bug DSMEM code makes)."""
    body = (*START, "if rank == 0 and tid == 0:",
            "    T.ptx.st_cluster(T.address_of(part[0]), A[bx, tid], 1)", *START,
            "T.cuda.cta_sync()", "if rank == 1 and tid == 0:", "    B[bx, 0] = part[0]  # <- read")
    with pytest.raises(tw.HazardError) as info:
        run(kernel(*body, cluster=2, ctas=2), strict=True)
    assert "written by thread 0 of CTA rank 0 (st_cluster)" in str(info.value)
    assert "# <- read" in info.value.span.source_line


def test_a_store_before_any_cluster_barrier_is_reported():
    body = ("if tid == 0:", "    T.ptx.st_cluster(T.address_of(part[0]), A[bx, tid], 1 - rank)"
            "  # <-", "T.cuda.cluster_sync()")
    with pytest.raises(tw.HazardError, match="may not have started") as info:
        run(kernel(*body, cluster=2, ctas=2), strict=True)
    assert "# <-" in info.value.span.source_line


def test_a_store_racing_with_the_destinations_own_write_is_reported():
    body = (*START, "if tid == 0:", "    part[(rank + 1) % 4] = 1.0", *SEND,
            "T.cuda.cluster_sync()", *READ)
    with pytest.raises(tw.HazardError) as info:
        run(kernel(*body), strict=True)
    assert "race on the shared memory of CTA rank" in str(info.value)


def test_a_store_into_a_cta_that_has_exited_is_reported():
    """Rank 0 ends while rank 1 waits on a second phase; rank 1 then stores into it."""
    body = (*START, "if rank == 1:", *(f"    {ln}" for ln in START), "if rank == 1 and tid == 0:",
            "    T.ptx.st_cluster(T.address_of(part[0]), A[bx, tid], 0)  # <-")
    with pytest.raises(tw.HazardError, match="which has exited"):
        run(kernel(*body, cluster=2, ctas=2), strict=True)


def test_st_cluster_takes_32_bit_values():
    with pytest.raises(tw.TilewiseError, match="st_cluster stores one 32-bit value"):
        kernel(*START, "T.ptx.st_cluster(T.address_of(part[0]), T.float16(1.0), 0)")


@pytest.mark.parametrize("call,why", [
    ("T.ptx.st_cluster(T.address_of(A[0, 0]), 1.0, 0)", "shared"),  # a global address
    ("T.ptx.st_cluster(T.address_of(part[0]), 1.0, 0.5)", "CTA rank"),  # a float rank
])
def test_a_misused_st_cluster_names_the_line(call, why):
    with pytest.raises(tw.TilewiseError, match=why) as info:
        kernel(*START, f"{call}  # <- here")
    assert "# <- here" in str(info.value)


def test_st_cluster_needs_a_target_with_clusters():
    k = kernel(*START, *SEND, "T.cuda.cluster_sync()", *READ)
    with pytest.raises(tw.TilewiseError, match="cluster"):
        tw.compile(k, "sm_80")


def test_a_phase_releases_the_stores_of_the_threads_that_arrived_with_release():
    """The senders (warp 0) arrive with release, the other warps ``.relaxed`` (the row
    kernels' exchange): the stores are ordered before the reads, no hazard."""
    body = (*START, *SEND, "if tid < 32:", "    T.ptx.barrier.cluster.arrive(aligned=True)",
            "else:", "    T.ptx.barrier.cluster.arrive(relaxed=True, aligned=True)",
            "T.ptx.barrier.cluster.wait(aligned=True)", *READ)
    a, b, report = run(kernel(*body), strict=True)
    assert report.ok
    want = np.array([[a[bx // 4 * 4 + s, s * 16 + bx % 4] for s in range(4)]
                     for bx in range(8)], np.float32)
    assert np.array_equal(b, want)


def test_a_sender_that_arrived_relaxed_is_reported_though_others_released():
    """Warp 0 (the senders) arrives ``.relaxed``, warp 1 with release: the stores are not
    ordered before the destination's reads."""
    body = (*START, *SEND, "if tid < 32:",
            "    T.ptx.barrier.cluster.arrive(relaxed=True, aligned=True)",
            "else:", "    T.ptx.barrier.cluster.arrive(aligned=True)",
            "T.ptx.barrier.cluster.wait(aligned=True)", *READ)
    with pytest.raises(tw.HazardError) as info:
        run(kernel(*body), strict=True)
    assert "(st_cluster) with no bar.sync in between" in str(info.value)
    assert "# <- read" in info.value.span.source_line


def test_a_write_of_a_thread_that_arrived_relaxed_stays_unordered_in_its_own_cta():
    """A thread's own shared write, read by another thread of its CTA after a cluster phase
    the writer arrived on ``.relaxed``: not ordered; with release it is."""
    for arrive, ok in (("relaxed=True, aligned=True", False), ("aligned=True", True)):
        body = (*START, "if tid == 40:", "    part[0] = A[bx, 0]", "if tid < 32:",
                "    T.ptx.barrier.cluster.arrive(aligned=True)", "else:",
                f"    T.ptx.barrier.cluster.arrive({arrive})",
                "T.ptx.barrier.cluster.wait(aligned=True)", "if tid == 0:",
                "    B[bx, 0] = part[0]  # <- read")
        if ok:
            assert run(kernel(*body), strict=True)[2].ok
        else:
            with pytest.raises(tw.HazardError, match="thread 40"):
                run(kernel(*body), strict=True)
