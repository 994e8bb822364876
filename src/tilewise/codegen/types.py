"""LLVM types and address spaces for tilewise data types (NVPTX conventions).

One table (``_SCALAR``) maps each tilewise dtype to its LLVM *value* type; the *storage*
type (what sits in memory) is derived from it: ``bool`` is stored as ``i8`` and the fp8
formats as raw ``i8`` bytes.
"""

from __future__ import annotations

import re
import struct

from llvmlite import ir

from ..errors import CompileError
from ..ir.dtype import DataType
from ..ptx.tma import TENSORMAP_BYTES

# NVPTX address spaces (llvm-nvptx-usage.rst, "Address Spaces"; 6 = tensor memory)
GENERIC, GLOBAL, SHARED, CONST, LOCAL, TMEM = 0, 1, 3, 4, 5, 6
SCOPE_SPACE = {"global": GLOBAL, "shared": SHARED, "shared.dyn": SHARED, "local": LOCAL}


class BFloatType(ir.types._BaseFloatType):
    """LLVM's ``bfloat`` (llvmlite has no class for it)."""

    null = "0xR0000"
    intrinsic_name = "bf16"

    def __str__(self) -> str:
        return "bfloat"

    def format_constant(self, value) -> str:
        bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest even
        return f"0xR{rounded & 0xFFFF:04X}"


BFloatType._create_instance()

I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
F16, BF16, F32, F64 = ir.HalfType(), BFloatType(), ir.FloatType(), ir.DoubleType()
VOID = ir.VoidType()

_SCALAR = {
    "bool": I1, "int8": I8, "int16": I16, "int32": I32, "int64": I64,
    "uint8": I8, "uint16": I16, "uint32": I32, "uint64": I64,
    "float16": F16, "bfloat16": BF16, "float32": F32, "float64": F64,
    "float8_e4m3": I8, "float8_e5m2": I8, "handle": I64,
}
_STORAGE_OVERRIDE = {"bool": I8}
_OPAQUE_FLOATS = frozenset({"float8_e4m3", "float8_e5m2"})


class NvvmAttributes(ir.values.FunctionAttributes):
    """Function attributes that also take LLVM string attributes (``"nvvm.reqntid"="128"``)."""

    def add(self, name):
        set.add(self, name)


class TensorMapAttributes(ir.values.ArgumentAttributes):
    """A CUtensorMap parameter: ``byval([128 x i8]) align 64 "nvvm.grid_constant"`` (the
    NVPTX guide: without grid_constant a byval whose address escapes is copied to local
    memory, and the copy engine cannot read a tensor map there)."""

    def _to_list(self, typ):
        return [f"byval([{TENSORMAP_BYTES} x i8])", *super()._to_list(typ),
                '"nvvm.grid_constant"']


def value_type(t: DataType) -> ir.Type:
    """The LLVM type of a scalar of tilewise type ``t`` in registers."""
    return _SCALAR[t.name]


def storage_type(t: DataType) -> ir.Type:
    """The LLVM type of one element of a buffer of ``t`` in memory."""
    return _STORAGE_OVERRIDE.get(t.name, _SCALAR[t.name])


def is_opaque_float(t: DataType) -> bool:
    """fp8 values are moved as bytes; the code generator does no arithmetic on them."""
    return t.name in _OPAQUE_FLOATS


def param_type(t: DataType) -> ir.Type:
    """The LLVM type of a kernel parameter: a global pointer for a handle, a generic pointer
    for a tensor map (passed ``byval``), a byte for a bool, the value type otherwise."""
    if t.kind == "handle":
        return ptr(GLOBAL)
    if t.kind == "tensormap":  # byval: a pointer to the 128 bytes in the parameter space
        return ptr(GENERIC)
    return I8 if t.kind == "bool" else _SCALAR[t.name]


def ptr(space: int) -> ir.PointerType:
    """An opaque pointer in ``space``."""
    return ir.PointerType(addrspace=space)


def space_of(scope: str, span=None) -> int:
    """The address space of a buffer scope of the flat IR."""
    space = SCOPE_SPACE.get(scope)
    if space is None:
        raise CompileError(f"buffers in scope {scope!r} cannot be addressed in the flat IR", span,
                           hint="tensor memory must be lowered to tcgen05 addresses first")
    return space


_IDENT_BAD = re.compile(r"[^A-Za-z0-9_$]")
#: Names PTX predefines (PTX ISA §4.5 "Predefined identifiers" without a ``%``), which a
#: symbol may not take; the user's name stays in the IR and in messages.
PTX_PREDEFINED = frozenset({"WARP_SZ"})


def ptx_identifier(name: str) -> str:
    """A valid PTX identifier for ``name`` (LLVM only rewrites internal symbols itself): PTX
    wants a letter first, or ``_``/``$`` followed by more characters, and no predefined
    name."""
    s = _IDENT_BAD.sub("_", name) or "_"
    if s[0].isdigit() or s[0] == "$":
        s = "_" + s
    if (s.startswith("__nv") or s.startswith("llvm") or s in PTX_PREDEFINED
            or s.strip("_$") == ""):
        s = "tw_" + s
    return s
