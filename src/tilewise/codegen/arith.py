"""Scalar arithmetic of the flat IR as LLVM instructions.

Integer ``//`` and ``%`` follow Python (floor) semantics. When both operands are provably
non-negative (thread ids, loop variables from a non-negative start, constants, ``x % c``
with ``c > 0``) they become ``udiv``/``urem``, which NVPTX turns into shifts and masks for
powers of two; a power-of-two constant divisor becomes ``ashr``/``and`` even for signed
values (exact for floor semantics in two's complement); anything else is ``sdiv``/``srem``
plus the sign correction.
"""

from __future__ import annotations

from llvmlite import ir

from ..errors import CompileError
from ..ir.dtype import DataType
from ..ir.expr import BinOp, Expr, UnaryOp, Var, as_int
from . import types as ty

_INT_SIMPLE = {"+": "add", "-": "sub", "*": "mul", "&": "and_", "|": "or_", "^": "xor"}
_FLOAT_SIMPLE = {"+": "fadd", "-": "fsub", "*": "fmul", "/": "fdiv"}
_ICMP = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!="}
_FCMP = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!="}


def is_nonneg(e: Expr, nonneg_vars: set[int]) -> bool:
    """Whether ``e`` is provably >= 0 (assuming index math does not overflow)."""
    if not e.dtype.is_int:
        return False
    if not e.dtype.is_signed:
        return True
    c = as_int(e)
    if c is not None:
        return c >= 0
    if isinstance(e, Var):
        return id(e) in nonneg_vars
    if isinstance(e, BinOp):
        a, b = is_nonneg(e.a, nonneg_vars), is_nonneg(e.b, nonneg_vars)
        if e.op == "%":
            return b  # floor modulo by a non-negative divisor is never negative
        if e.op == "&":
            return a or b
        if e.op in ("+", "*", "//", "|", "min", "max", ">>"):
            return a and b
    if isinstance(e, UnaryOp) and e.op == "~":
        return False
    return False


def _pow2(c: int | None) -> int | None:
    if c is not None and c > 0 and c & (c - 1) == 0:
        return c.bit_length() - 1
    return None


def _sign_fix(b: ir.IRBuilder, r: ir.Value, d: ir.Value) -> ir.Value:
    """True where truncated remainder ``r`` of a division by ``d`` needs flooring."""
    zero = ir.Constant(r.type, 0)
    nz = b.icmp_signed("!=", r, zero)
    neg = b.icmp_signed("<", b.xor(r, d), zero)
    return b.and_(nz, neg)


def floordiv(b: ir.IRBuilder, x, y, e: BinOp, unsigned: bool) -> ir.Value:
    if unsigned:
        return b.udiv(x, y)
    k = _pow2(as_int(e.b))
    if k is not None:
        return b.ashr(x, ir.Constant(x.type, k))
    q = b.sdiv(x, y)
    fix = _sign_fix(b, b.srem(x, y), y)
    return b.sub(q, b.zext(fix, x.type))


def floormod(b: ir.IRBuilder, x, y, e: BinOp, unsigned: bool) -> ir.Value:
    if unsigned:
        return b.urem(x, y)
    k = _pow2(as_int(e.b))
    if k is not None:
        return b.and_(x, ir.Constant(x.type, (1 << k) - 1))
    r = b.srem(x, y)
    fix = _sign_fix(b, r, y)
    return b.add(r, b.select(fix, y, ir.Constant(x.type, 0)))


def int_binop(b: ir.IRBuilder, e: BinOp, x, y, nonneg: set[int]) -> ir.Value:
    """``x op y`` for integers of type ``e.a.dtype``."""
    op, t = e.op, e.a.dtype
    if op in _INT_SIMPLE:
        return getattr(b, _INT_SIMPLE[op])(x, y)
    unsigned = not t.is_signed or (is_nonneg(e.a, nonneg) and is_nonneg(e.b, nonneg))
    if op in ("<<", ">>"):
        y = resize_int(b, y, e.b.dtype, x.type)
        if op == "<<":
            return b.shl(x, y)
        return b.ashr(x, y) if t.is_signed else b.lshr(x, y)
    if op == "//":
        return floordiv(b, x, y, e, unsigned)
    if op == "%":
        return floormod(b, x, y, e, unsigned)
    if op == "/":  # C semantics (truncation) for the rare integer true division
        return b.udiv(x, y) if unsigned else b.sdiv(x, y)
    if op in ("min", "max"):
        pred = "<" if op == "min" else ">"
        cmp = b.icmp_unsigned(pred, x, y) if not t.is_signed else b.icmp_signed(pred, x, y)
        return b.select(cmp, x, y)
    if op in _ICMP:
        if t.is_signed and not unsigned:
            return b.icmp_signed(_ICMP[op], x, y)
        return b.icmp_unsigned(_ICMP[op], x, y)
    if op in ("and", "or"):
        return b.and_(x, y) if op == "and" else b.or_(x, y)
    raise CompileError(f"integer operator {op!r} is not supported", e.span)


def float_binop(em, e: BinOp, x, y) -> ir.Value:
    """``x op y`` for floats; ``//`` and ``%`` floor as in Python."""
    b, op = em.b, e.op
    if op in _FLOAT_SIMPLE:
        return getattr(b, _FLOAT_SIMPLE[op])(x, y)
    if op in _FCMP:
        if op == "!=":
            return b.fcmp_unordered("!=", x, y)
        return b.fcmp_ordered(_FCMP[op], x, y)
    if op in ("//", "%"):
        q = em.llvm_intrinsic("llvm.floor", x.type, [b.fdiv(x, y)])
        return q if op == "//" else b.fsub(x, b.fmul(q, y))
    if op in ("min", "max"):
        return em.llvm_intrinsic("llvm.minnum" if op == "min" else "llvm.maxnum", x.type, [x, y])
    raise CompileError(f"floating-point operator {op!r} is not supported", e.span)


def resize_int(b: ir.IRBuilder, v: ir.Value, src: DataType, to: ir.IntType) -> ir.Value:
    if v.type.width == to.width:
        return v
    if v.type.width > to.width:
        return b.trunc(v, to)
    return b.sext(v, to) if src.is_signed else b.zext(v, to)


def convert(b: ir.IRBuilder, v: ir.Value, src: DataType, dst: DataType, span=None) -> ir.Value:
    """Value conversion: ints wrap/extend, float->int truncates, floats round to nearest."""
    if src == dst:
        return v
    if ty.is_opaque_float(src) or ty.is_opaque_float(dst):
        if src.bits == dst.bits and (src.is_int or dst.is_int):
            return v  # reinterpretation of the byte (the only fp8 operation supported)
        raise CompileError(f"conversion {src} -> {dst} is not supported by the code generator",
                           span, hint="fp8 values can only be copied")
    to = ty.value_type(dst)
    if dst.name == "bool":
        zero = ir.Constant(v.type, 0)
        return b.fcmp_unordered("!=", v, zero) if src.is_float else b.icmp_unsigned("!=", v, zero)
    if src.name == "bool" or src.kind in ("int", "uint", "handle"):
        if dst.is_float:
            return b.uitofp(v, to) if src.name == "bool" or not src.is_signed else b.sitofp(v, to)
        return resize_int(b, v, src, to) if src.name != "bool" else b.zext(v, to)
    if dst.is_int or dst.kind == "handle":
        return b.fptosi(v, to) if dst.is_signed else b.fptoui(v, to)
    if src.bits == dst.bits:  # float16 <-> bfloat16
        return b.fptrunc(b.fpext(v, ty.F32), to)
    return b.fpext(v, to) if dst.bits > src.bits else b.fptrunc(v, to)


def const_int(t: DataType, value: int) -> ir.Constant:
    lt = ty.value_type(t)
    bits = lt.width
    value &= (1 << bits) - 1
    if bits > 1 and value >= 1 << (bits - 1):
        value -= 1 << bits
    return ir.Constant(lt, value)
