"""The registry of LLVM lowerings, one per entry of the PTX table.

A lowering is ``fn(emitter, call) -> llvmlite value | None`` registered with
``@lowering("ptx.cp_async")`` next to its implementation (:mod:`.intrinsics`,
:mod:`.bulk`, :mod:`.mathlib`). ``tests/codegen`` asserts that every table entry has one.
"""

from __future__ import annotations

from collections.abc import Callable

LOWERINGS: dict[str, Callable] = {}


def imm(em, e) -> int:
    """The value of an immediate operand (a CompileError at the user's line otherwise)."""
    from ..ir.expr import as_int

    v = as_int(e)
    if v is None:
        raise em.error("this operand must be a compile-time constant", e)
    return v


def i32(v: int):
    from llvmlite import ir

    from . import types as ty

    return ir.Constant(ty.I32, v)


def register_direct(table: dict[str, str]) -> None:
    """Entries whose lowering is one call of an LLVM intrinsic returning nothing and taking
    the entry's immediates as i32 constants (commits, waits, fences)."""
    for op, intrinsic in table.items():
        lowering(op)(_direct(intrinsic))


def _direct(intrinsic: str) -> Callable:
    from . import types as ty

    def lower(em, c):
        em.call(intrinsic, ty.VOID, [i32(imm(em, a)) for a in c.args])

    lower.__name__ = f"direct_{intrinsic.replace('.', '_')}"
    return lower


def lowering(*names: str):
    """Register the decorated function as the LLVM lowering of the table entries ``names``."""

    def deco(fn):
        for name in names:
            if name in LOWERINGS:
                raise RuntimeError(f"two LLVM lowerings registered for {name!r}")
            LOWERINGS[name] = fn
        return fn

    return deco


def all_lowerings() -> dict[str, Callable]:
    """Every registered lowering (importing the modules that register them)."""
    from . import bulk, intrinsics, mathlib  # noqa: F401  (registration happens at import)

    return LOWERINGS
