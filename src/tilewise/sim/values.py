"""Scalar semantics of the flat IR on numpy values, one table per kind of operation.

A value is a numpy array with one entry per active thread, or a numpy scalar when it is
the same for every thread. Results always carry the numpy dtype of the IR type
(:meth:`DataType.numpy`; ml_dtypes for bfloat16/fp8). The operators and conversions
themselves are the arithmetic table's (:mod:`tilewise.ir.alu`), shared with constant
folding and the code generator.
"""

from __future__ import annotations

import numpy as np

from ..ir import alu
from ..ir.dtype import DataType

_NP_CACHE: dict[str, np.dtype] = {}


def np_dtype(t: DataType) -> np.dtype:
    """The numpy dtype of an IR type (pointers and handles are int64 byte addresses)."""
    d = _NP_CACHE.get(t.name)
    if d is None:
        d = np.dtype(np.int64) if t.kind == "handle" else (
            np.dtype(np.bool_) if t.kind == "bool" else t.numpy())
        _NP_CACHE[t.name] = d
    return d


def fit(v, shape: tuple, dtype=None) -> np.ndarray:
    """``v`` (a value per thread, or one for all) as an array of ``shape`` (and ``dtype``):
    ``v`` itself when it has the shape, a filled array for a scalar. A fast
    ``np.broadcast_to`` for the simulator's per-thread operands (which read, never write,
    the result)."""
    if isinstance(v, np.ndarray):
        if dtype is not None and v.dtype != dtype:
            v = v.astype(dtype)
        if v.shape == shape:
            return v
        if v.ndim == 0:
            return np.full(shape, v)
        return np.broadcast_to(v, shape)
    return np.full(shape, v, dtype)


def as_type(v, d: np.dtype):
    """``v`` converted to numpy dtype ``d`` (array stays array, scalar stays scalar)."""
    if isinstance(v, np.ndarray):
        return v if v.dtype == d else v.astype(d)
    return d.type(v)


# Integer (and bool) operators whose numpy ufunc is already the arithmetic table's answer:
# wrapping at the operands' width, no NaN to canonicalise (a fast path: no wrapper).
_PLAIN_INT = {"+": np.add, "-": np.subtract, "*": np.multiply, "&": np.bitwise_and,
              "|": np.bitwise_or, "^": np.bitwise_xor, "<": np.less, "<=": np.less_equal,
              ">": np.greater, ">=": np.greater_equal, "==": np.equal, "!=": np.not_equal,
              "min": np.minimum, "max": np.maximum, "and": np.logical_and,
              "or": np.logical_or}
# ... and those that equal it when the right operand is a uniform value in range (a divisor
# other than 0, a shift count below the width); otherwise the table's function decides.
_SCALAR_INT = {"//": (np.floor_divide, lambda b, w: b != 0),
               "%": (np.mod, lambda b, w: b != 0),
               "<<": (np.left_shift, lambda b, w: 0 <= b < w),
               ">>": (np.right_shift, lambda b, w: 0 <= b < w)}


#: operators whose :func:`binop_fn` on integer / bool operands returns the operands' type
FUSABLE = frozenset(_PLAIN_INT) | frozenset(_SCALAR_INT)


def binop_fn(op: str, operand: DataType):
    """The numpy function computing ``a op b`` for operands of IR type ``operand`` (the
    arithmetic table, :mod:`tilewise.ir.alu`), or None when the operator does not take it."""
    row = alu.BINARY.get(op)
    if row is None or not row.takes(operand):
        return None
    general = alu.numpy_binary(op, operand)
    if operand.kind not in ("int", "uint", "bool"):
        return general
    plain = _PLAIN_INT.get(op)
    if plain is not None:
        return plain
    fast = _SCALAR_INT.get(op)
    if fast is None:
        return general
    ufunc, in_range = fast
    width = operand.bits

    def fn(a, b):
        if isinstance(b, np.generic) and in_range(int(b), width):
            return ufunc(a, b)
        return general(a, b)
    return fn


def unary_fn(op: str, operand: DataType):
    row = alu.UNARY.get(op)
    if row is None or not row.takes(operand):
        return None
    return alu.numpy_unary(op, operand)


cast = alu.numpy_cast


def constant(value, t: DataType):
    """An immediate as a numpy scalar of its IR type."""
    d = np_dtype(t)
    if t.is_int and not isinstance(value, float):
        return np.array(value).astype(d)[()]  # wraps out-of-range literals
    return d.type(value)
