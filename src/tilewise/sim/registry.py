"""The simulator half of the PTX instruction table: ``@semantics("ptx.cp_async")``.

Each entry of :data:`tilewise.ptx.table.PTX_OPS` gets one simulator implementation,
registered beside it in a module of :mod:`tilewise.sim.ops` (discovered, not listed). An
implementation is ``fn(ctx, site, args) -> value | None``: ``ctx`` is the executing CTA
(:class:`tilewise.sim.state.Ctx`, with the active threads), ``site`` the compiled call
(:class:`Site`: the Call node, its span and precompiled helpers) and ``args`` the operand
values in table order (numpy arrays with one entry per active thread, numpy scalars for
uniform values, Python ints/strs for immediates, None for absent optional operands).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

SEMANTICS: dict[str, Callable] = {}
_LOADED = False
EXIT_CHECKS: list[Callable] = []  # fn(ctx, func_span) run when a CTA finishes


def write_regs(ctx, site, values) -> None:
    """Write the destination registers of ``site`` for the active threads (``values[j]``:
    register j's bits; or one (threads, registers) array), in one scatter where the
    registers allow it."""
    if site.block is not None:
        site.block.write(ctx, values)
        return
    if getattr(values, "ndim", 1) == 2:
        values = [values[:, j] for j in range(values.shape[1])]
    for write, v in zip(site.regs, values):
        write(ctx, v)


@dataclass
class Site:
    """One Call of the program, compiled once: ``regs`` holds the register writers of
    ``tcgen05.ld`` (callables ``(ctx, values)``), ``cache`` anything an op precomputes."""

    call: object
    span: object
    op: object
    regs: tuple = ()
    reg_addrs: tuple = ()  # the destination registers' addresses, callables (ctx) -> int64
    block: object = None  # access.RegBlock: every register operand as one gather / scatter
    # the addresses of ``reg32`` operands read from registers (wgmma's A from registers),
    # callables (ctx) -> int64, None for an operand that is not a register element
    operand_addrs: tuple = ()
    cache: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.call.op


def semantics(*names: str):
    """Register the simulator semantics of the PTX-table entries ``names`` (and of their
    aliases). Register operands that are destinations (``regs_out``/``regs_inout`` in the
    table) reach ``fn`` as ``site.regs``, writers ``(ctx, values)``."""
    from ..ptx.table import register

    def deco(fn):
        register(SEMANTICS, names, fn, "simulator semantics")
        return fn

    return deco


#: The mechanisms an instruction's semantics may reach, marked where they are implemented
#: (:func:`mechanism`); the row must declare the matching trait (tests/sim/test_traits.py
#: derives, from the semantics' calls, which instructions reach which mechanism).
MECHANISMS = {"blocks": "traits.blocks (waits while other threads run)",
              "async_proxy": 'traits.proxy == "async" (shared memory through the async proxy)'}


def mechanism(kind: str):
    """Mark ``fn`` as the implementation of a mechanism of :data:`MECHANISMS`: waiting for
    other threads (the scheduler's wait) or an access of shared memory by the async proxy."""
    if kind not in MECHANISMS:
        raise ValueError(f"unknown mechanism {kind!r}")

    def deco(fn):
        fn.__tw_mechanism__ = kind
        return fn

    return deco


def at_cta_exit(fn):
    """Register ``fn(ctx, span)``, run after each CTA (leak checks)."""
    EXIT_CHECKS.append(fn)
    return fn


def load_all() -> dict[str, Callable]:
    """Import every module of :mod:`tilewise.sim.ops` (registering their semantics, once);
    return the registry."""
    global _LOADED
    if not _LOADED:
        from .._discover import import_all

        import_all(f"{__package__}.ops")
        _LOADED = True
    return SEMANTICS
