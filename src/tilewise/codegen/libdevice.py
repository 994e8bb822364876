"""libdevice for the math lowerings (:mod:`.lowerings.math`): finding ``libdevice.10.bc``
and linking the functions a kernel calls (:func:`link_libdevice`), each from a
per-function slice (internalised and dead-stripped once per process and kept as bitcode,
in the compile cache too, kind ``bc``, verified like every entry, so a link costs ~1 ms
instead of parsing 465 KB: compat doc §5). Nothing is read before a kernel calls a math
function.
"""

from __future__ import annotations

import functools
import os

from ..errors import CompileError


def libdevice_path() -> str:
    """``libdevice.10.bc`` from the ``nvidia-nvvm`` wheel (or a CUDA toolkit)."""
    try:
        import nvidia
    except ImportError:
        nvidia = None
    roots = list(getattr(nvidia, "__path__", [])) if nvidia else []
    rels = ("cu13/nvvm/libdevice/libdevice.10.bc", "cuda_nvcc/nvvm/libdevice/libdevice.10.bc",
            "cu12/nvvm/libdevice/libdevice.10.bc", "nvvm/libdevice/libdevice.10.bc")
    cands = [os.path.join(r, rel) for r in roots for rel in rels]
    from ..knobs import knobs

    cands += [os.path.join(knobs.cuda_home, "nvvm/libdevice/libdevice.10.bc")]
    for p in cands:
        if os.path.isfile(p):
            return p
    raise CompileError("libdevice.10.bc was not found (needed for math functions)",
                       hint="pip install nvidia-nvvm (it ships nvvm/libdevice/libdevice.10.bc)")


@functools.lru_cache(maxsize=None)
def _libdevice_bytes() -> bytes:
    with open(libdevice_path(), "rb") as f:
        return f.read()


@functools.lru_cache(maxsize=None)
def _slice(name: str) -> bytes:
    """Bitcode holding libdevice function ``name`` and what it calls, nothing else (from
    the compile cache when a verified entry is there; a damaged one is rebuilt)."""
    import hashlib

    from . import cache

    key = hashlib.sha256(hashlib.sha256(_libdevice_bytes()).digest()
                         + name.encode()).hexdigest()
    data = cache.load(key, "bc")
    if data is not None and data[:4] == b"BC\xc0\xde":
        return data
    data = _make_slice(name)
    cache.store(key, "bc", data)
    return data


def _make_slice(name: str) -> bytes:
    from .emitter import DATA_LAYOUT, TRIPLE
    from .machine import llvm as _llvm
    from .machine import target_machine

    llvm = _llvm()

    lib = llvm.parse_bitcode(_libdevice_bytes())
    lib.triple, lib.data_layout = TRIPLE, DATA_LAYOUT
    if all(fn.name != name for fn in lib.functions):
        raise CompileError(f"libdevice has no function {name!r}")
    for fn in lib.functions:
        if not fn.is_declaration and fn.name != name:
            fn.linkage = "internal"
    pm = llvm.create_new_module_pass_manager()
    pm.add_global_dead_code_eliminate_pass()
    tm = target_machine("sm_80", "+ptx70")
    pm.run(lib, llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options()))
    return lib.as_bitcode()


def link_libdevice(mod, names: set[str]) -> None:
    """Link the libdevice functions ``names`` into llvmlite module ``mod``."""
    from .machine import llvm as _llvm

    llvm = _llvm()

    for name in sorted(names):
        mod.link_in(llvm.parse_bitcode(_slice(name)))
