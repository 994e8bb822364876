"""The simulator half of the PTX instruction table: ``@semantics("ptx.cp_async")``.

Each entry of :data:`tilewise.ptx.table.PTX_OPS` gets one simulator implementation,
registered beside it in an ``ops_*.py`` module of this package. An implementation is
``fn(ctx, site, args) -> value | None``: ``ctx`` is the executing CTA
(:class:`tilewise.sim.state.Ctx`, with the active threads), ``site`` the compiled call
(:class:`Site`: the Call node, its span and precompiled helpers) and ``args`` the operand
values in table order (numpy arrays with one entry per active thread, numpy scalars for
uniform values, Python ints/strs for immediates, None for absent optional operands).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

SEMANTICS: dict[str, Callable] = {}
EXIT_CHECKS: list[Callable] = []  # fn(ctx, func_span) run when a CTA finishes
_MODULES = ("ops_cp_async", "ops_bulk", "ops_mbarrier", "ops_tcgen05", "ops_tcgen05_ldst",
            "ops_misc")


@dataclass
class Site:
    """One Call of the program, compiled once: ``regs`` holds the register writers of
    ``tcgen05.ld`` (callables ``(ctx, values)``), ``cache`` anything an op precomputes."""

    call: object
    span: object
    op: object
    regs: tuple = ()
    cache: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.call.op


def semantics(*names: str):
    """Register the simulator semantics of the PTX-table entries ``names`` (and of their
    aliases). Register operands that are destinations (``regs_out``/``regs_inout`` in the
    table) reach ``fn`` as ``site.regs``, writers ``(ctx, values)``."""
    from ..ptx.table import PTX_OPS

    def deco(fn):
        for name in names:
            for spelling in PTX_OPS[name].names:
                if spelling in SEMANTICS:
                    raise ValueError(f"simulator semantics for {spelling!r} registered twice")
                SEMANTICS[spelling] = fn
        return fn

    return deco


def at_cta_exit(fn):
    """Register ``fn(ctx, span)``, run after each CTA (leak checks)."""
    EXIT_CHECKS.append(fn)
    return fn


def load_all() -> dict[str, Callable]:
    """Import every ``ops_*`` module (registering their semantics); return the registry."""
    import importlib

    for m in _MODULES:
        importlib.import_module(f"{__package__}.{m}")
    return SEMANTICS
