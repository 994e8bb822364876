"""``T.ptx.st_async`` (``st.async.shared::cluster.mbarrier::complete_tx::bytes.b32``): a
32-bit store into another CTA's shared memory that completes on that CTA's mbarrier, so the
receiver waits for its data on its own mbarrier instead of a cluster barrier (no fence, no
round trip). The simulator lands the bytes in the destination owned by the store, counts
four bytes on its mbarrier, and reports a read before the receiver has waited for the phase,
a store into a CTA that may not have started or has exited, and a misused operand."""

import numpy as np
import pytest

import tilewise as tw

FILE = "st_async_kernels.py"


def kernel(*body: str, cluster: int | None = 4, ctas: int = 8, env: dict | None = None):
    """A kernel of ``ctas`` CTAs of 64 threads in clusters of ``cluster`` (None: no cluster
    declared) with ``part`` (4 floats) and ``bar`` (an mbarrier) in shared memory."""
    head = ['A = T.match_buffer(A_ptr, (8, 64), "float32")',
            'B = T.match_buffer(B_ptr, (8, 4), "float32")', "T.device_entry()",
            f"bx = T.cta_id([{ctas}])",
            *([f"rank = T.cta_id_in_cluster([{cluster}])"] if cluster else []),
            "tid = T.thread_id([64])", 'part = T.alloc_shared((4,), "float32")',
            'bar = T.alloc_shared((1,), "uint64")']
    lines = "".join(f"    {ln}\n" for ln in head + list(body))
    return tw.from_source(f"@T.prim_func\ndef k(A_ptr: T.handle, B_ptr: T.handle):\n{lines}",
                          env=env, filename=FILE)


def init(cluster: int = 4):  # the receiving mbarrier: one arrival, every sender's 4 bytes
    return ("if tid == 0:", "    T.ptx.mbarrier.init(T.address_of(bar[0]), 1)",
            "    T.ptx.fence.mbarrier_init()",
            f"    T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), {4 * cluster})",
            "T.ptx.barrier.cluster.arrive(aligned=True)",  # (releases the init to the CTA)
            "T.ptx.barrier.cluster.wait(aligned=True)")


SEND = ("if tid < 4:",  # thread t of every CTA sends one value to CTA t: an all-to-all
        "    T.ptx.st_async(T.address_of(part[rank]), A[bx, rank * 16 + tid], tid,"
        " T.address_of(bar[0]))  # <- send")
WAIT = ('T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 0, scope="cluster")',)
READ = ("if tid < 4:", "    B[bx, tid] = part[tid]  # <- read")


def run(k, **kw):
    a = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
    b = np.full((8, 4), np.nan, np.float32)
    return a, b, tw.simulate(k, a, b, **kw)


def all_to_all(a):
    """What SEND then READ leave in B: CTA bx's part[s] is what CTA s of its cluster sent."""
    want = np.empty((8, 4), np.float32)
    for bx in range(8):
        c0, rank = bx // 4 * 4, bx % 4
        want[bx] = [a[c0 + s, s * 16 + rank] for s in range(4)]
    return want


def test_an_all_to_all_exchange_lands_in_every_cta_after_its_mbarrier_wait():
    a, b, report = run(kernel(*init(), *SEND, *WAIT, *READ), strict=True)
    assert report.ok
    assert np.array_equal(b, all_to_all(a))
    assert report.instructions["ptx.st_async"] == 8 * 4


def test_the_store_is_st_async_through_mapa_at_ptx_8_1():
    k = tw.compile(kernel(*init(), *SEND, *WAIT, *READ), "sm_90a")
    ptx = k.source("ptx")
    assert "mapa.shared::cluster.u32" in ptx
    assert "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32" in ptx
    assert ".version 8.1" in ptx  # st.async's PTX ISA; the kernel's version rises to it
    assert "mbarrier.try_wait.parity.acquire.cluster.shared" in ptx  # the receiver's wait
    assert len(k.cubin) > 0  # ptxas / nvJitLink accept it


def test_a_read_before_the_mbarrier_wait_is_reported():
    with pytest.raises(tw.HazardError) as info:
        run(kernel(*init(), *SEND, "T.ptx.barrier.cluster.arrive(aligned=True)",
                   "T.ptx.barrier.cluster.wait(aligned=True)", *READ), strict=True)
    assert "read before the st.async's mbarrier completed" in str(info.value)
    assert "# <- read" in info.value.span.source_line


def test_a_cta_scope_wait_does_not_acquire_another_ctas_store():
    """st.async's complete-tx releases at cluster scope (PTX ISA §9.7.9.12); an acquire at
    CTA scope (the wait's default) does not synchronize with a thread of another CTA."""
    cta_wait = ("T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 0)",)
    with pytest.raises(tw.HazardError) as info:
        run(kernel(*init(), *SEND, *cta_wait, *READ), strict=True)
    text = str(info.value)
    assert "with a CTA-scope acquire, but a store from another CTA is released at " \
        "cluster scope" in text
    assert 'scope="cluster"' in info.value.hint
    assert "# <- read" in info.value.span.source_line
    # a store a CTA sends itself is acquired at CTA scope
    own = ("if tid == 0:", "    T.ptx.st_async(T.address_of(part[0]), A[bx, 0], rank, "
           "T.address_of(bar[0]))", *cta_wait, "if tid == 0:", "    B[bx, 0] = part[0]")
    _, _, report = run(kernel(*init(1), *own), strict=True)
    assert report.ok


def test_a_receiver_that_waits_before_all_its_bytes_can_arrive_deadlocks():
    """Each CTA announces 16 bytes but only three CTAs send: the phase never completes."""
    body = (*init(), "if tid < 4 and rank < 3:", "    T.ptx.st_async(T.address_of(part[rank]),"
            " A[bx, tid], tid, T.address_of(bar[0]))", *WAIT)
    with pytest.raises(tw.HazardError, match="mbarrier wait can never complete .deadlock.*"
                       "4 transaction byte.s. outstanding"):
        run(kernel(*body), strict=True)


def test_a_store_before_any_cluster_barrier_is_reported():
    body = ("if tid == 0:", "    T.ptx.mbarrier.init(T.address_of(bar[0]), 1)",
            "if tid == 0:", "    T.ptx.st_async(T.address_of(part[0]), A[bx, tid], 1 - rank, "
            "T.address_of(bar[0]))  # <-", "T.cuda.cluster_sync()")
    with pytest.raises(tw.HazardError, match="may not have started") as info:
        run(kernel(*body, cluster=2, ctas=2), strict=True)
    assert "# <-" in info.value.span.source_line


def test_a_store_into_a_cta_that_has_exited_is_reported():
    """Rank 0 ends at once; rank 1 then stores into it."""
    body = (*init(2), "if rank == 1:", "    T.ptx.barrier.cluster.arrive(relaxed=True)",
            "    T.ptx.barrier.cluster.wait()", "if rank == 1 and tid == 0:",
            "    T.ptx.st_async(T.address_of(part[0]), A[bx, tid], 0, T.address_of(bar[0]))")
    with pytest.raises(tw.HazardError, match="into CTA rank 0 of the cluster, which has exited"):
        run(kernel(*body, cluster=2, ctas=2), strict=True)


def test_st_async_without_a_cluster_is_reported():
    body = ("if tid == 0:", "    T.ptx.mbarrier.init(T.address_of(bar[0]), 1)",
            "    T.ptx.st_async(T.address_of(part[0]), A[bx, 0], 0, T.address_of(bar[0]))"
            "  # <-")
    with pytest.raises(tw.HazardError, match="without a cluster of two or more CTAs") as info:
        run(kernel(*body, cluster=None), strict=True)
    assert "# <-" in info.value.span.source_line


def test_st_async_takes_32_bit_values():
    with pytest.raises(tw.TilewiseError, match="st_async stores one 32-bit value"):
        kernel(*init(), "T.ptx.st_async(T.address_of(part[0]), T.float16(1.0), 0, "
               "T.address_of(bar[0]))")


@pytest.mark.parametrize("call,why", [
    ("T.ptx.st_async(T.address_of(A[0, 0]), 1.0, 0, T.address_of(bar[0]))", "shared"),
    ("T.ptx.st_async(T.address_of(part[0]), 1.0, 0.5, T.address_of(bar[0]))", "CTA rank"),
    ("T.ptx.st_async(T.address_of(part[0]), 1.0, 0)", "mbar"),
])
def test_a_misused_st_async_names_the_line(call, why):
    with pytest.raises(tw.TilewiseError, match=why) as info:
        kernel(*init(), f"{call}  # <- here")
    assert "# <- here" in str(info.value)


def test_st_async_needs_sm_90():
    k = kernel(*init(), *SEND, *WAIT, *READ)
    with pytest.raises(tw.TilewiseError, match="st.async|cluster"):
        tw.compile(k, "sm_80")


def test_the_dsmem_helpers_exchange_a_value_between_every_pair_of_ctas():
    """tilewise.dsmem: exchange_start (the mbarrier announcing 4 C bytes, the cluster
    barrier's arrive), a send by thread r to CTA r, exchange_wait (scope="cluster")."""
    from tilewise.dsmem import exchange_start, exchange_wait

    body = ("exchange_start(bar, 16, tid)", "T.ptx.barrier.cluster.wait(aligned=True)", *SEND,
            "exchange_wait(bar)", *READ)
    k = kernel(*body, env={"exchange_start": exchange_start, "exchange_wait": exchange_wait})
    a, b, report = run(k, strict=True)
    assert report.ok
    assert np.array_equal(b, all_to_all(a))
    ptx = tw.compile(k, "sm_90a").source("ptx")
    assert "mbarrier.try_wait.parity.acquire.cluster" in ptx
