"""Flat IR -> LLVM IR (NVPTX) -> PTX -> cubin.

``generate(func, options)`` builds the llvmlite module (:mod:`.emitter`; the
lowering of each PTX-table entry in :mod:`.lowerings`, generated from the table where the
row names an intrinsic); :func:`.backend.emit_ptx` turns its text into PTX (linking
libdevice, :mod:`.libdevice`); :func:`.cubin.link_cubin` assembles PTX with nvJitLink.
``tw.compile`` (:mod:`tilewise.compiler`) drives the three and caches the results.

Importing this package loads neither llvmlite nor CUDA: the code generator's names load
on first use, so ``tw.compile(...).source("lowered")`` never imports them.
"""

from .check import OPTIONS, check_options

__all__ = ["OPTIONS", "Emitted", "all_lowerings", "check_options", "generate", "lowering"]


def __getattr__(name):
    if name in ("Emitted", "generate"):
        from . import emitter

        return getattr(emitter, name)
    if name in ("all_lowerings", "lowering"):
        from . import registry

        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
