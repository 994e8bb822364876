"""The CPU simulator: executes the *lowered* (flat) IR of a kernel with numpy.

    report = tilewise.simulate(kernel, A, B, target="sm_100a")

Threads of a CTA run together, vectorised (one numpy lane per thread); CTAs run one after
another. The asynchrony the lowering relies on is modelled (cp.async groups, mbarriers,
tcgen05 tensor memory) and misuse is reported as a :class:`tilewise.HazardError` naming
the kernel's line, the CTA, warp, lane and address. See docs/simulator.md.
"""

from .registry import SEMANTICS, semantics
from .runner import simulate
from .state import CtaStats, SimReport

__all__ = ["simulate", "SimReport", "CtaStats", "semantics", "SEMANTICS"]
