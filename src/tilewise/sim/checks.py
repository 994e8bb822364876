"""The simulator's check levels (``simulate(..., checks=)``): which shadow state is kept and
which per-access checks run. A level removes the work, not only the reports: the loads and
stores of :mod:`.access` are compiled without the checks a level drops.

=========  ==============================================================================
level      checks
=========  ==============================================================================
``full``   everything: races and visibility of shared and global memory, uninitialised
           reads (registers, shared memory, ``outputs=``), async copies in flight, the
           async-proxy fences, wgmma accumulator registers in flight, bounds, deadlocks
``races``  data races and memory ordering: shared- and global-memory races, visibility
           (barriers, mbarrier phases; bytes nothing wrote), async copies in flight, bounds
           and deadlocks; no register tracking, proxy fences or ``outputs=`` tracking
``none``   results only: bounds, pointers, instruction operands and deadlocks (nothing
           else is tracked)
=========  ==============================================================================
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Checks:
    level: str
    shared: bool  # shared-memory owner / readers shadows: visibility and races
    glob: bool  # global-memory race shadows
    regs: bool  # uninitialised registers; wgmma accumulators in flight, missing wgmma.fence
    proxy: bool  # generic-proxy writes read by the async proxy without fence.proxy.async
    outputs: bool  # reads of outputs= bytes nothing wrote

    @classmethod
    def of(cls, level: str) -> Checks:
        full, races = level == "full", level in ("full", "races")
        return cls(level, races, races, full, full, full)


FULL = Checks.of("full")
