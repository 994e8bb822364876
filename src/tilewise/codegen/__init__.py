"""Flat IR -> LLVM IR (NVPTX) -> PTX -> cubin.

``generate(func, options)`` builds the llvmlite module (:mod:`.emitter`; the
lowering of each PTX-table entry in :mod:`.lowerings`, generated from the table where the
row names an intrinsic); :func:`.backend.emit_ptx` turns its text into PTX (linking
libdevice, :mod:`.libdevice`); :func:`.cubin.link_cubin` assembles PTX with nvJitLink.
``tw.compile`` (:mod:`tilewise.compiler`) drives the three and caches the results.
"""

from .check import OPTIONS, check_options
from .emitter import Emitted, generate
from .registry import all_lowerings, lowering

__all__ = ["OPTIONS", "Emitted", "all_lowerings", "check_options", "generate", "lowering"]
