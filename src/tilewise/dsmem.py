"""A few 32-bit values handed to every CTA of a cluster through distributed shared memory,
such as the statistics of the parts of a row split over a cluster (each CTA's maximum and
sum, or sum of squares):

.. code-block:: python

    part = T.alloc_shared((C,), "float32")   # CTA r's value lands in part[r] of every CTA
    bar = T.alloc_shared((1,), "uint64")
    exchange_start(bar, 4 * C, tid)          # at the start: the bytes this CTA will receive
    ...                                      # (its loads in flight)
    T.ptx.barrier.cluster.wait(aligned=True) # every CTA has started (and set its mbarrier)
    if tid < C:                              # thread r sends to CTA r
        T.ptx.st_async(T.address_of(part[rank]), value, tid, T.address_of(bar[0]))
    exchange_wait(bar)                       # part[0 .. C) are all here

Each value travels by ``st.async`` (``T.ptx.st_async``): a store into the other CTA's
shared memory that completes on that CTA's mbarrier, which announced the bytes it awaits
when it was set up. The receiver waits on its own mbarrier for exactly the data it needs:
no second cluster barrier, and no release fence in every warp (what ``st.shared::cluster``
and ``T.cuda.cluster_sync()`` cost). The mbarrier is used for one phase; a CTA exits only
after its wait, so no store is still on its way into it.

Measured on the H200 (benchmarks/RESULTS.md, "The st.async exchange, measured"): in the row
kernels, where every thread of a 512-1024-thread CTA waits, this was no faster than
``st.shared::cluster`` + ``T.cuda.cluster_sync()`` (softmax -7 % to +1 %, RMSNorm mostly
slower): the hardware cluster barrier releases many waiting threads more cheaply than an
mbarrier they all spin on, and the wait for the slowest CTA is there either way. The row
kernels keep the cluster barrier, with :func:`cluster_sync_sent`: only the senders' warp
arrives with release; ``exchange_start`` / ``exchange_wait`` suit exchanges where one warp
waits.
"""

from __future__ import annotations

from .script import T


@T.inline
def exchange_start(bar, nbytes, tid):
    """Set up this CTA's mbarrier ``bar[0]`` for ``nbytes`` of st.async stores (one arrival,
    the announcement), then arrive on the cluster barrier: its release publishes the
    mbarrier to this CTA's threads, and its wait, before the first send, says that every
    CTA of the cluster has started and set up its own."""
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
        T.ptx.fence.mbarrier_init()
        T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[0]), nbytes)
    T.ptx.barrier.cluster.arrive(aligned=True)


@T.inline
def exchange_wait(bar):
    """Wait until every byte announced by :func:`exchange_start` has arrived (acquiring at
    cluster scope: each st.async's complete-tx releases its store at cluster scope)."""
    T.ptx.mbarrier.wait_parity(T.address_of(bar[0]), 0, scope="cluster")


@T.inline
def cluster_sync_sent(tid, senders):
    """``T.cuda.cluster_sync()`` after an exchange by ``st.shared::cluster``
    (``T.ptx.st_cluster``) in which only threads ``0 .. senders - 1`` stored into other
    CTAs: their warps arrive with release, which publishes the stores, and the other warps
    ``.relaxed``, which spares them the release fence; then every thread waits (acquire).
    The other warps' own shared-memory writes are not published to the cluster by it (nor
    ordered in their CTA: a ``bar.sync`` does that). On the H200 the row kernels' split
    forms ran 0-5 % faster with it than with ``T.cuda.cluster_sync()``
    (benchmarks/RESULTS.md, "The exchange's release from the senders' warp only")."""
    if tid < (senders + 31) // 32 * 32:
        T.ptx.barrier.cluster.arrive(aligned=True)
    else:
        T.ptx.barrier.cluster.arrive(relaxed=True, aligned=True)
    T.ptx.barrier.cluster.wait(aligned=True)


@T.inline
def cluster_sum(part, value, ctas, rank, tid):
    """The sum over the ``ctas`` CTAs of a cluster of each one's float32 ``value`` (such as
    its part of a row's sum), the same in every CTA: thread ``c`` stores this CTA's value
    into ``part[rank]`` of CTA ``c`` (``part``: ``T.alloc_shared((ctas,), "float32")``),
    :func:`cluster_sync_sent`, then every thread adds ``part[0 .. ctas)`` in rank order.
    Every thread of every CTA calls it (it holds a cluster barrier), with this CTA's rank
    and thread index."""
    if tid < ctas:
        T.ptx.st_cluster(T.address_of(part[rank]), value, tid)
    cluster_sync_sent(tid, ctas)  # the senders release their stores; all acquire
    total: T.float32 = 0.0
    for c in range(ctas):
        total = total + part[c]
    return total
