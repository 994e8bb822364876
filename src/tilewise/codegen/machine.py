"""llvmlite's LLVM, initialised on first use, and the NVPTX target machines.

The one place that imports ``llvmlite.binding``: the back end (:mod:`.backend`) and the
libdevice slicer (:mod:`.libdevice`) both come here, so importing tilewise never loads
LLVM and a kernel loads it only when its PTX is emitted.
"""

from __future__ import annotations

import functools

from .emitter import TRIPLE


@functools.lru_cache(maxsize=1)
def llvm():
    """``llvmlite.binding`` with the NVPTX target and asm printer initialised."""
    import llvmlite.binding as binding

    binding.initialize_all_targets()
    binding.initialize_all_asmprinters()
    return binding


@functools.lru_cache(maxsize=64)
def target_machine(cpu: str, features: str):
    """A cached NVPTX64 TargetMachine for ``cpu`` (``sm_90a``) and ``features`` (``+ptx80``)."""
    target = llvm().Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=cpu, features=features, opt=3)


def llvm_version() -> str:
    """``llvmlite X / LLVM Y`` (part of every cache key)."""
    import llvmlite

    return f"llvmlite {llvmlite.__version__} / LLVM {'.'.join(map(str, llvm().llvm_version_info))}"
