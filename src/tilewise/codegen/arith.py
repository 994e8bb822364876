"""Facts about scalar values the code generator uses to pick cheaper instructions.

The operators themselves live in the arithmetic table (:mod:`tilewise.ir.alu`); this module
only answers "is this value provably non-negative" (so ``//``, ``%`` and comparisons may use
their unsigned forms, which NVPTX turns into shifts and masks for powers of two) and builds
integer constants wrapped to their type.
"""

from __future__ import annotations

from llvmlite import ir

from ..ir.dtype import DataType
from ..ir.expr import BinOp, Expr, UnaryOp, Var, as_int
from . import types as ty


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
        if e.op == "%":  # floor modulo: the divisor's sign, or x itself for x % 0
            k = as_int(e.b)
            return (k is not None and k > 0) or (a and b)
        if e.op == "&":
            return a or b
        if e.op in ("+", "*", "//", "|", "min", "max", ">>"):
            return a and b
    if isinstance(e, UnaryOp) and e.op == "~":
        return False
    return False


def const_int(t: DataType, value: int) -> ir.Constant:
    lt = ty.value_type(t)
    bits = lt.width
    value &= (1 << bits) - 1
    if bits > 1 and value >= 1 << (bits - 1):
        value -= 1 << bits
    return ir.Constant(lt, value)
