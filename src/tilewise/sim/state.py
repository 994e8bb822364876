"""The state of one executing CTA (:class:`Ctx`) and the run's report (:class:`SimReport`).

Execution is vectorised SIMT: ``ctx.act`` is the sorted array of the thread ids that
execute the current statement (``None`` when every thread of the CTA does), and every
value is a numpy array with one entry per active thread (or a scalar when uniform).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..errors import HazardError, SimulationWarning
from ..ir.launch import WARP
from .async_core import AsyncCore
from .checks import FULL
from .memory import SHARED, offset_of, space_name, space_of
from .registry import mechanism
from .values import fit

_MAX_RECORDED = 200


@dataclass
class CtaStats:
    """What one CTA did: its index, statements run, barriers, bytes cp.async-copied,
    tensor-memory columns at their peak, and (``simulate(..., keep_tmem=True)``) its tensor
    memory at exit as a 128 x 512 uint32 array (None when it never touched any)."""

    cta: tuple
    statements: int = 0
    barriers: int = 0
    cp_async_bytes: int = 0
    tmem_peak_cols: int = 0
    tmem: object = None


@dataclass
class SimReport:
    """The result of :func:`tilewise.sim.simulate`.

    ``instructions``: PTX-table op -> thread-level executions; ``hazards``: the
    HazardErrors found (non-strict mode only; strict mode raises the first); ``warnings``:
    benign races (two CTAs writing identical bytes), one SimulationWarning per line and kind,
    never raised (``simulate(..., strict_races=True)`` makes them hazards); ``ctas``:
    one :class:`CtaStats` per CTA; ``grid``/``block``: the launch simulated; ``perf``:
    the performance counters (:class:`tilewise.sim.perf.PerfReport`) of a run with
    ``perf=True``.
    """

    grid: tuple
    block: int
    instructions: Counter = field(default_factory=Counter)
    hazards: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    ctas: list = field(default_factory=list)
    seconds: float = 0.0
    warned: set = field(default_factory=set, repr=False)
    perf_report: object = None

    @property
    def ok(self) -> bool:
        return not self.hazards

    @property
    def perf(self):
        """The :class:`~tilewise.sim.perf.PerfReport` (bank conflicts, sectors per request,
        dispatch warnings); a SimulationError when the run did not count them."""
        if self.perf_report is None:
            from ..errors import SimulationError

            raise SimulationError("this run did not count performance hazards",
                                  hint="run tw.simulate(kernel, ..., perf=True) to get "
                                       "report.perf")
        return self.perf_report

    def __str__(self) -> str:
        ops = ", ".join(f"{k} x{v}" for k, v in sorted(self.instructions.items()))
        return (f"simulated grid={self.grid} block={self.block} in {self.seconds:.3f}s; "
                f"{len(self.hazards)} hazard(s); "
                + (f"{len(self.warnings)} warning(s); " if self.warnings else "")
                + f"instructions: {ops or 'none'}")


class Ctx:
    """One CTA under execution: threads, active mask, scalar slots, memories, and the
    state the instructions keep: ``asyncs`` (:class:`~.async_core.AsyncCore`: mbarriers,
    copies in flight) and ``tmem`` (tensor memory, created on first use)."""

    def __init__(self, n_threads, n_slots, cta, mem, report, strict, params):
        self.n = n_threads
        self.tids = np.arange(n_threads, dtype=np.int32)
        self.act: np.ndarray | None = None
        self.vals: list = [None] * n_slots
        self.cta = cta
        self.mem = mem
        self.report = report
        self.strict = strict
        self.params = params
        self.asyncs = AsyncCore(self)
        self.loop = None  # the innermost executing loop (break/continue)
        self.parked: np.ndarray | None = None  # threads that broke/continued, per thread
        self.stats = CtaStats(cta)
        self.sched = None  # the Scheduler running this CTA (sim/scheduler.py), set at start
        self.cluster = None  # sim/cluster.Cluster when the kernel declares one
        self.rank = 0  # %cluster_ctarank
        self.cluster_started = False  # waited on a cluster barrier once: every CTA started
        self.checks = FULL  # the check level (:mod:`.checks`; the runner sets the launch's)

    @mechanism("blocks")
    def block(self, poll, wait) -> bool:
        """Wait for ``poll()`` while the other thread sets of this CTA and the other CTAs of
        its cluster run (:meth:`~.scheduler.Scheduler.block`; ``wait``: a
        :class:`~.scheduler.Wait` describing it); False when nothing can make it hold (a
        deadlock)."""
        return self.sched.block(poll, wait)

    def blocked_elsewhere(self) -> str:
        """'; meanwhile <every other blocked wait, of any thread set of any CTA>', or ''
        (for the message of a deadlock)."""
        texts = self.sched.blocked_elsewhere()
        return "; meanwhile " + "; ".join(texts) if texts else ""

    def peer(self, rank: int, span, what: str):
        """The context of CTA ``rank`` of this CTA's cluster (this CTA for its own rank)."""
        if self.cluster is not None:
            return self.cluster.peer(self, rank, span, what)
        if rank != 0:
            from ..errors import SimulationError

            raise SimulationError(f"{what} names CTA rank {rank} of the cluster, but the "
                                  "kernel declares no cluster (a cluster of one CTA)", span,
                                  "declare the cluster with T.cta_id_in_cluster([n])")
        return self

    @property
    def tmem(self):
        """The CTA's tensor memory (:mod:`tilewise.sim.ops.tcgen05.tmem`, made on first
        use)."""
        return self.asyncs.part("tmem")

    @property
    def tmem_if_used(self):
        """The CTA's tensor memory, None when no instruction touched it."""
        return self.asyncs.part_if_used("tmem")

    # -- threads ---------------------------------------------------------------
    def active(self) -> np.ndarray:
        """The ids of the threads executing now."""
        return self.tids if self.act is None else self.act

    def n_active(self) -> int:
        return self.n if self.act is None else len(self.act)

    def per_thread(self, v) -> np.ndarray:
        """``v`` as an array with one entry per active thread."""
        return fit(v, (self.n_active(),))

    # -- hazards -----------------------------------------------------------------
    def where(self, tid=None, addr=None) -> str:
        """'CTA (x, y, z), warp w, lane l, address ...' for messages."""
        out = f"CTA {self.cta}"
        if tid is not None:
            out += f", warp {int(tid) // WARP}, lane {int(tid) % WARP} (thread {int(tid)})"
        if addr is not None:
            out += f", address {self.describe_addr(int(addr))}"
        return out

    def describe_addr(self, addr: int) -> str:
        sp, off = int(space_of(addr)), int(offset_of(addr))
        if sp == SHARED:
            name = self.mem.plan.shared_element(off)
            return f"shared+{off:#x}" + (f" ({name})" if name else "")
        return f"{space_name(sp, self.params)}+{off:#x}"

    def hazard(self, message, span, hint=None, tid=None, addr=None) -> None:
        """Report a hazard: raise in strict mode, else record it and carry on."""
        err = HazardError(f"{message} [{self.where(tid, addr)}]", span, hint)
        if self.strict:
            raise err
        if len(self.report.hazards) < _MAX_RECORDED:
            self.report.hazards.append(err)

    def warn(self, message, span, hint=None, tid=None, addr=None) -> None:
        """Record a benign finding (never raised): the first of each line and kind (the
        message up to its first colon)."""
        key = (str(span), message.split(":")[0])
        if key in self.report.warned or len(self.report.warnings) >= _MAX_RECORDED:
            return
        self.report.warned.add(key)
        self.report.warnings.append(SimulationWarning(f"{message} [{self.where(tid, addr)}]",
                                                      span, hint))


def masked(ctx, act, fn, *args):
    """Run ``fn(ctx, *args)`` with only the threads ``act`` active."""
    old = ctx.act
    ctx.act = None if len(act) == ctx.n else act
    try:
        return fn(ctx, *args)
    finally:
        ctx.act = old
