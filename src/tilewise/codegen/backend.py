"""LLVM IR text -> PTX in process, with llvmlite's LLVM 22.

``emit_ptx``: parse + verify, link the libdevice functions the kernel calls, internalise
everything but the kernel, O3 through the new PassBuilder (NVVMReflect resolves
``__CUDA_ARCH`` from the CPU and ``__CUDA_FTZ`` from the module flag), then the NVPTX
AsmPrinter. The PTX is scanned for ``.extern .func``: LLVM turns an intrinsic name it does
not know into an external call that only the assembler would reject.
"""

from __future__ import annotations

import re
import threading

from ..errors import CompileError
from .emitter import DATA_LAYOUT, TRIPLE
from .machine import llvm as _llvm
from .machine import llvm_version, target_machine

__all__ = ["DATA_LAYOUT", "TRIPLE", "emit_ptx", "target_machine", "llvm_version"]

_LOCK = threading.Lock()  # LLVM contexts are not shared across threads safely by llvmlite
_EXTERN = re.compile(r"^\.extern\s+\.func\s+(?:\([^)]*\)\s*)?([A-Za-z_$.][\w$.]*)", re.M)


def _optimize(mod, tm, kernel: str):
    llvm = _llvm()
    for fn in mod.functions:
        if not fn.is_declaration and fn.name != kernel:
            fn.linkage = "internal"
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


def emit_ptx(llvm_ir: str, kernel: str, cpu: str, features: str,
             libdevice: set[str] = frozenset()) -> str:
    """PTX for LLVM IR text ``llvm_ir`` whose kernel is ``kernel``."""
    llvm = _llvm()
    with _LOCK:
        tm = target_machine(cpu, features)
        try:
            mod = llvm.parse_assembly(llvm_ir)
            mod.verify()
        except RuntimeError as exc:
            raise CompileError(f"internal error: the generated LLVM IR is invalid: {exc}",
                               hint="please report this with the kernel") from exc
        if libdevice:
            from .libdevice import link_libdevice

            link_libdevice(mod, libdevice)
        _optimize(mod, tm, kernel)
        ptx = tm.emit_assembly(mod)
    check_ptx(ptx)
    return ptx


def check_ptx(ptx: str) -> None:
    """Raise CompileError if the PTX calls an external function (an unknown intrinsic)
    other than the system calls ptxas resolves (``vprintf``, ``__assertfail``)."""
    from ..ptx.printf import SYSCALLS

    bad = [name for name in _EXTERN.findall(ptx) if name not in SYSCALLS]
    if bad:
        raise CompileError(f"the kernel calls {', '.join(sorted(set(bad)))}, which LLVM 22 does "
                           "not know as an intrinsic (it became an external function)",
                           hint="this instruction is not available in llvmlite's LLVM; "
                           "report it as a code generator defect")
