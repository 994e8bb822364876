"""Hand-written lowerings of ``T.print`` and ``T.device_assert``: calls of the CUDA system
calls ``vprintf`` and ``__assertfail`` (facts in :mod:`tilewise.ptx.printf`), as clang
lowers device ``printf`` and ``assert``.

* ``print``: the format (with length modifiers for the promoted values) and every string
  are private constants in the global space (``addrspace(1)``), passed as generic
  pointers; the values are promoted (ints below 64 bits to ``i32``, sign- or zero-extended
  by their signedness; floats to ``double``) and stored in a stack struct whose natural
  layout aligns each to its size, which is vprintf's argument buffer (a null pointer when
  there are none).
* ``device_assert``: ``br cond, ok, fail``; ``fail`` calls ``__assertfail(msg, file, line,
  kernel, 1)`` with the assert's source file and line, then ``llvm.trap`` (the kernel stops
  there even if the system call returned) and ``unreachable``.
"""

from __future__ import annotations

from llvmlite import ir

from ...ir import dtype as dt
from ...ptx import printf
from .. import types as ty
from ..registry import lowering

_PROMOTED = {"i32": (ty.I32, dt.DTYPES["int32"]), "i64": (ty.I64, dt.DTYPES["int64"]),
             "f64": (ty.F64, dt.DTYPES["float64"])}


def _string(em, text: str) -> ir.Value:
    """A generic pointer to a NUL-terminated private constant holding ``text`` (one global
    per distinct text)."""
    data = bytearray(text.encode()) + b"\0"
    cache = em.__dict__.setdefault("_tw_strings", {})
    g = cache.get(text)
    if g is None:
        arr = ir.ArrayType(ty.I8, len(data))
        g = ir.GlobalVariable(em.module, arr, em.module.get_unique_name("tw_str"),
                              addrspace=ty.GLOBAL)
        g.linkage, g.global_constant, g.unnamed_addr = "private", True, True
        g.initializer = ir.Constant(arr, data)
        g.type = ty.ptr(ty.GLOBAL)
        cache[text] = g
    return em.b.addrspacecast(g, ty.ptr(ty.GENERIC))


def _promote(em, e, promotion: str) -> ir.Value:
    """A print value after C's default argument promotions."""
    llvm_t, wide = _PROMOTED[promotion]
    src = e.dtype
    if src.kind == "float" or src.bits == 64:
        return em.typed(e, wide)
    v = em.expr(e)
    if src.kind == "bool" or src.bits == 1:
        return em.b.zext(v, llvm_t) if v.type != llvm_t else v
    if src.bits == 32:
        return v
    return em.b.sext(v, llvm_t) if src.kind == "int" else em.b.zext(v, llvm_t)


@lowering("print")
def _print(em, c):
    fmt, values = c.args[0].value, c.args[1:]
    promotions = [printf.promoted(v.dtype.kind, v.dtype.bits) for v in values]
    text = _string(em, printf.device_format(fmt, promotions))
    if not values:
        buf = ir.Constant(ty.ptr(ty.GENERIC), None)
    else:
        struct = ir.LiteralStructType([_PROMOTED[p][0] for p in promotions])
        slot = em.alloca(struct, "printf_args")
        slot.type = ty.ptr(ty.GENERIC)
        for k, (v, p) in enumerate(zip(values, promotions)):
            field = em.b.gep(slot, [ir.Constant(ty.I32, 0), ir.Constant(ty.I32, k)],
                             source_etype=struct)
            em.b.store(_promote(em, v, p), field)
        buf = slot
    em.call("vprintf", ty.I32, [text, buf])


@lowering("device_assert")
def _device_assert(em, c):
    cond, msg = c.args
    span = c.span or em.span
    ok = em.fn.append_basic_block("assert_ok")
    fail = em.fn.append_basic_block("assert_fail")
    em.b.cbranch(em.truth(cond), ok, fail)
    em.b.position_at_end(fail)
    text = msg.value if msg is not None and msg.value else "T.device_assert"
    args = [_string(em, text), _string(em, span.file if span else "<kernel>"),
            ir.Constant(ty.I32, span.line if span else 0), _string(em, em.func.name),
            ir.Constant(ty.I64, 1)]
    em.call("__assertfail", ty.VOID, args)
    em.call("llvm.trap", ty.VOID, [])
    em.b.unreachable()
    em.b.position_at_end(ok)
