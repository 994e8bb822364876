"""Scalar semantics of the flat IR on numpy values, one table per kind of operation.

A value is a numpy array with one entry per active thread, or a numpy scalar when it is
the same for every thread. Results always carry the numpy dtype of the IR type
(:meth:`DataType.numpy`; ml_dtypes for bfloat16/fp8), so integer arithmetic wraps at the
type's width. ``//`` and ``%`` floor (Python semantics, as docs/ir.md says); integer ``/``
truncates toward zero (C). ``min``/``max`` on floats ignore a NaN operand (``fminf``).
Casts float->int truncate toward zero and saturate, NaN giving 0 (PTX ``cvt.rzi.sat``);
float->narrower float rounds to nearest even.
"""

from __future__ import annotations

import numpy as np

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


def as_type(v, d: np.dtype):
    """``v`` converted to numpy dtype ``d`` (array stays array, scalar stays scalar)."""
    if isinstance(v, np.ndarray):
        return v if v.dtype == d else v.astype(d)
    return d.type(v)


def _int_truediv(a, b):
    q = np.floor_divide(np.abs(a), np.abs(b))
    return np.where((a < 0) != (b < 0), -q, q)


def _float_min(a, b):
    return np.fmin(a, b)


def _float_max(a, b):
    return np.fmax(a, b)


def _shift(fn):
    def f(a, b):
        return fn(a, as_type(b, np.asarray(a).dtype))
    return f


_COMMON = {
    "+": np.add, "-": np.subtract, "*": np.multiply,
    "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
    "==": np.equal, "!=": np.not_equal, "and": np.logical_and, "or": np.logical_or,
}
INT_OPS = {**_COMMON, "//": np.floor_divide, "%": np.mod, "/": _int_truediv,
           "&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor,
           "<<": _shift(np.left_shift), ">>": _shift(np.right_shift),
           "min": np.minimum, "max": np.maximum}
FLOAT_OPS = {**_COMMON, "/": np.true_divide, "//": np.floor_divide, "%": np.fmod,
             "min": _float_min, "max": _float_max}
BOOL_OPS = {**_COMMON, "&": np.logical_and, "|": np.logical_or, "^": np.logical_xor}
UNARY_OPS = {"-": np.negative, "~": np.invert, "not": np.logical_not}


def binop_fn(op: str, operand: DataType):
    """The numpy function computing ``a op b`` for operands of IR type ``operand``."""
    table = FLOAT_OPS if operand.is_float else BOOL_OPS if operand.kind == "bool" else INT_OPS
    return table.get(op)


def cast(v, src: DataType, dst: DataType):
    """Convert ``v`` (of IR type ``src``) to IR type ``dst`` with the GPU's rules."""
    d = np_dtype(dst)
    if dst.kind == "bool":
        return np.not_equal(v, 0)
    if src.is_float and dst.is_int:
        info = np.iinfo(d)
        f = np.trunc(np.asarray(v, dtype=np.float64))
        f = np.where(np.isnan(f), 0.0, np.clip(f, info.min, info.max))
        out = f.astype(d)
        return out if isinstance(v, np.ndarray) else d.type(out)
    if src.is_float and dst.is_float and np_dtype(src).itemsize < 4 and d.itemsize < 4:
        v = as_type(v, np.dtype(np.float32))  # fp8 <-> fp16/bf16 through float32 (exact)
    return as_type(v, d)


def constant(value, t: DataType):
    """An immediate as a numpy scalar of its IR type."""
    d = np_dtype(t)
    if t.is_int and not isinstance(value, float):
        return np.array(value).astype(d)[()]  # wraps out-of-range literals
    return d.type(value)
