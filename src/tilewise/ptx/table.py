"""The one table of instructions a kernel may call (``T.ptx.*``, ``T.cuda.*``, math).

The rows are written family by family, each in a module beside the facts it draws on
(:data:`FAMILIES`: ``rows_copy.py`` cp.async, bulk and tensor copies; ``rows_sync.py``
barriers, fences and mbarriers; ``rows_mma.py`` wgmma, mma.sync, ldmatrix; ``rows_tcgen05.py``;
``rows_warp.py`` shuffle and vote; ``rows_math.py`` packed, approximate and libdevice math;
``rows_printf.py`` printf and assert), each row a :class:`~tilewise.ptx.op.PtxOp` (what a row
says and how it is lowered: :mod:`tilewise.ptx.op`). Here they become the one table:
:data:`ROWS` in that order, :data:`PTX_OPS` every spelling of each. The code generator, the
simulator, the ``T.ptx.*`` namespace and the docs all read it; nothing else lists
instructions.

The simulator semantics are registered with ``@semantics(name)`` in :mod:`tilewise.sim.ops`,
the hand-written lowerings with ``@lowering(name)`` in :mod:`tilewise.codegen.lowerings`.
Tests assert that every entry (every spelling, aliases included) has both.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ScriptError, did_you_mean
from . import rows_copy, rows_math, rows_mma, rows_printf, rows_sync, rows_tcgen05, rows_warp
from .op import Asm, PtxOp
from .operands import REQUIRED, Param

__all__ = ["Asm", "FAMILIES", "MATH_OPS", "PTX_OPS", "Param", "PtxOp", "REQUIRED", "ROWS",
           "lookup", "prefixes", "register", "uses"]

#: The modules that write the rows, in the table's order.
FAMILIES = (rows_copy, rows_sync, rows_mma, rows_tcgen05, rows_warp, rows_math, rows_printf)


def _spellings(op: PtxOp):
    yield op.name, op
    for alias in op.aliases:  # a call keeps the spelling it was written with
        yield alias, replace(op, name=alias, aliases=(), alias_of=op.name)


#: The rows of the table, one per instruction.
ROWS: tuple[PtxOp, ...] = tuple(op for family in FAMILIES for op in family.ROWS)
#: Every spelling (aliases included) -> its entry.
PTX_OPS: dict[str, PtxOp] = {name: entry for op in ROWS for name, entry in _spellings(op)}
MATH_OPS = frozenset(op.name for op in ROWS if op.math)


def uses(node, which) -> bool:
    """Whether ``node`` (a flat kernel's body, or a statement of it) calls an instruction
    whose table row ``which`` accepts (the simulator's async-proxy and blocking tests, the
    compiler's check that a programmatic kernel waits)."""
    from ..ir.expr import Call
    from ..ir.visitor import walk

    found = []
    walk(node, lambda n: found.append(1) if isinstance(n, Call)
         and which(PTX_OPS[n.op]) else None)
    return bool(found)


def register(registry: dict, names, fn, what: str) -> None:
    """Enter ``fn`` in ``registry`` (the LLVM lowerings, the simulator semantics) for the
    entries ``names`` and every spelling of each; an entry registered twice is an error
    naming ``what``."""
    for name in names:
        for spelling in PTX_OPS[name].names:
            if spelling in registry:
                raise RuntimeError(f"two {what} registered for {spelling!r}")
            registry[spelling] = fn


def lookup(name: str, span=None) -> PtxOp:
    op = PTX_OPS.get(name)
    if op is None:
        raise ScriptError(f"T.{name} is not an instruction tilewise knows", span,
                          hint=did_you_mean(name, PTX_OPS))
    return op


def prefixes() -> frozenset[str]:
    """Every dotted prefix of a table name ("ptx", "ptx.cp_async", ...); computed once per
    size of the table (the parser asks for every ``T.ptx.a.b`` it reads)."""
    n = len(PTX_OPS)
    if _PREFIXES[0] != n:
        out = set()
        for name in PTX_OPS:
            parts = name.split(".")
            for i in range(1, len(parts) + 1):
                out.add(".".join(parts[:i]))
        _PREFIXES[:] = [n, frozenset(out)]
    return _PREFIXES[1]


_PREFIXES: list = [-1, frozenset()]  # [len(PTX_OPS) when computed, the prefixes]
