"""The registry of LLVM lowerings, one per entry of the PTX table.

A lowering is ``fn(emitter, call) -> llvmlite value | None``. Entries whose table row names
an intrinsic or inline PTX (``llvm=``) get a lowering generated from the row
(:mod:`.lowerings.generated`); the others register a hand-written one with
``@lowering("ptx.cp_async")`` beside its implementation in :mod:`.lowerings`. The modules
of that package are discovered, not listed. ``tests/codegen`` asserts that every table
entry has exactly one lowering.
"""

from __future__ import annotations

from collections.abc import Callable

LOWERINGS: dict[str, Callable] = {}
_LOADED = False


def lowering(*names: str):
    """Register the decorated function as the LLVM lowering of the table entries ``names``
    (and of their aliases)."""
    from ..ptx.table import register

    def deco(fn):
        register(LOWERINGS, names, fn, "LLVM lowerings")
        return fn

    return deco


def all_lowerings() -> dict[str, Callable]:
    """Every registered lowering (importing the modules that register them, once)."""
    global _LOADED
    if not _LOADED:
        from .._discover import import_all

        import_all(f"{__package__}.lowerings")
        _LOADED = True
    return LOWERINGS
