"""What the executors need to know about an instruction besides its operands, declared on
its row of the table (``PtxOp(..., traits=...)``), never listed elsewhere:

* ``blocks``: executing it may wait until *other* threads act (an mbarrier wait, a named
  barrier, the cluster barrier). The simulator runs such an instruction's thread set as a
  fiber when it sits in a divergent branch, and lets the other fibers and CTAs run while it
  waits (:mod:`tilewise.sim.scheduler`). ``bar.sync 0`` (``T.cuda.cta_sync``) is not
  blocking in this sense: every thread of the CTA must reach it, so nobody else can run.
* ``proxy``: ``"async"`` when it reads or writes shared memory through the async proxy (the
  copy engine, the tensor cores reading shared operands); generic-proxy writes must be
  fenced (``fence.proxy.async``) before it sees them. The simulator keeps the fence shadow
  only for kernels with such an instruction.
* ``completion``: how an asynchronous instruction's effects complete, one of
  :data:`COMPLETIONS` (``"none"``: synchronous, done when it retires).
* ``completes``: the mechanism an instruction commits or waits on (``cp.async.wait_group``:
  ``"cp_async_group"``), None for the others.

Registers read and written are not declared here: they follow from the row's register
operand kinds (``regs_in`` / ``regs_out`` / ``regs_inout``: ``PtxOp.reads_regs``,
``PtxOp.writes_regs``).

Most instructions are synchronous, non-blocking and generic: their rows say nothing
(:data:`SYNC`). The others use :func:`blocking`, :func:`async_op` or :func:`completing`.
"""

from __future__ import annotations

from dataclasses import dataclass

GENERIC, ASYNC = "generic", "async"
PROXIES = (GENERIC, ASYNC)

#: Completion mechanisms -> what completes them.
COMPLETIONS = {
    "none": "synchronous: done when the instruction retires",
    "cp_async_group": "the thread's cp.async groups: cp.async.commit_group / wait_group, or "
                      "cp.async.mbarrier.arrive",
    "mbarrier": "an mbarrier phase (complete_tx of the bytes, or an arrival): a wait on it",
    "bulk_group": "the thread's bulk groups: cp.async.bulk.commit_group / wait_group[.read]",
    "wgmma_group": "the warpgroup's wgmma groups: wgmma.commit_group / wait_group",
    "tcgen05_commit": "tcgen05.commit to an mbarrier, then a wait on its phase",
    "tcgen05_ld": "tcgen05.wait::ld",
    "tcgen05_st": "tcgen05.wait::st",
}


@dataclass(frozen=True)
class Traits:
    blocks: bool = False
    proxy: str = GENERIC
    completion: str = "none"
    completes: str | None = None

    def __post_init__(self):
        if self.proxy not in PROXIES:
            raise ValueError(f"proxy={self.proxy!r}: one of {PROXIES}")
        for name in (self.completion, self.completes):
            if name is not None and name not in COMPLETIONS:
                raise ValueError(f"completion {name!r}: one of {tuple(COMPLETIONS)}")

    @property
    def asynchronous(self) -> bool:
        return self.completion != "none"


SYNC = Traits()


def blocking(completes: str | None = None) -> Traits:
    """An instruction that may wait for other threads (and what it waits on)."""
    return Traits(blocks=True, completes=completes)


def async_op(completion: str, proxy: str = GENERIC) -> Traits:
    """An asynchronous instruction: completed by ``completion``; ``proxy="async"`` when it
    accesses shared memory through the async proxy."""
    return Traits(proxy=proxy, completion=completion)


def completing(mechanism: str) -> Traits:
    """A commit or a wait of ``mechanism`` that never waits for other threads."""
    return Traits(completes=mechanism)
