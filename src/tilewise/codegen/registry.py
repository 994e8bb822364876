"""The registry of LLVM lowerings, one per entry of the PTX table.

A lowering is ``fn(emitter, call) -> llvmlite value | None`` registered with
``@lowering("ptx.cp_async")`` next to its implementation (:mod:`.intrinsics`,
:mod:`.bulk`, :mod:`.mathlib`). ``tests/codegen`` asserts that every table entry has one.
"""

from __future__ import annotations

from collections.abc import Callable

LOWERINGS: dict[str, Callable] = {}


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
