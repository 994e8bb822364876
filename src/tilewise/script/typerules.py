"""How the parser types values: literals meeting run-time values, implicit conversions, and
the errors for what would silently change a value.

* A Python literal takes the type of the run-time value it meets (``x_f16 + 1.0`` is
  float16) and must fit it: ``tid + 3000000000``, ``x: T.int8 = 300`` and ``u32 - (-1)``
  are errors; so is a float literal where an integer is wanted.
* A run-time value is never converted implicitly: mixing int32 with float16, assigning a
  float to an integer local or buffer, ``T.select``/``a if c else b`` with a float on one
  side and an integer on the other are errors that suggest ``T.cast``.
* Integer constants fold exactly; a result the type cannot hold is an overflow error.
* An operator the arithmetic table does not define on a type (``~`` on a float, ``&`` on
  a float, ``+`` on a bool, ``/`` on integers) is an error naming the alternative.
"""

from __future__ import annotations

from ..ir import alu
from ..ir import dtype as dt
from ..ir.expr import Expr, FloatImm, IntImm, UnaryOp, as_int, cmp, const
from .values import (describe, is_ir, is_scalar, literal_type, show_number,
                     unify_literal_types)

_OP_HINTS = {
    "/": 'integers have no true division here: write // for floor division, or convert '
         'first with T.cast(x, "float32")',
    "~": "~ flips the bits of an integer; use `not` for a bool",
    "-": 'convert first, e.g. T.cast(x, "int32")',
}


def fits_text(t: dt.DataType) -> str:
    if t.is_int or t.kind == "bool":
        lo, hi = alu.int_range(t) if t.kind != "bool" else (0, 1)
        return f"{t} holds {lo}..{hi}"
    return f"{t} overflows to infinity"


def literal(p, v, t: dt.DataType, what: str) -> Expr:
    """The compile-time number ``v`` as an immediate of type ``t`` (checked)."""
    import numpy as np

    if isinstance(v, (np.number, np.bool_)):
        v = v.item()
    if isinstance(v, bool) or t.kind == "bool":
        if t.kind == "bool":
            if not isinstance(v, bool) and v not in (0, 1):
                raise p.error(f"{what} is bool, the value {v!r} is not 0/1 or True/False")
            return const(bool(v))
        v = int(v)
    if isinstance(v, int):
        if t.is_int:
            if not alu.fits(v, t):
                raise p.error(f"the constant {show_number(v)} does not fit {what} "
                              f"({fits_text(t)})",
                              f'use a wider type, or write T.cast({show_number(v)}, "{t}") to '
                              "wrap it on purpose")
            return IntImm(v, t)
        if t.is_float:
            v = float(v) if abs(v) < 1 << 1000 else float("inf")  # checked as a float below
    if isinstance(v, float):
        if not t.is_float:
            raise p.error(f"{what} is {t}, the value {v!r} is a float",
                          f'write T.cast({v!r}, "{t}") or use an int')
        if not alu.float_fits(v, t):
            raise p.error(f"the constant {v!r} does not fit {what} ({fits_text(t)})",
                          "use a wider float type")
        return FloatImm(v, t)
    raise p.error(f"{what} cannot hold {describe(v)}")


def coerce(p, value, t: dt.DataType, what: str) -> Expr:
    """``value`` as a value of type ``t``: literals converted (checked), run-time values
    must already have the type."""
    if not is_ir(value):
        if is_scalar(value):
            return literal(p, value, t, what)
        raise p.error(f"{what} cannot hold {describe(value)}")
    if value.dtype == t:
        return value
    if isinstance(value, IntImm) and t.is_int and value.dtype.kind != "bool":
        return literal(p, value.value, t, what)
    if value.dtype.is_float and t.is_int:
        raise p.error(f"{what} holds {t} but the value is {value.dtype}; a float is never "
                      "narrowed to an integer implicitly",
                      f'write T.cast(value, "{t}") to convert (it truncates toward zero)')
    raise p.error(f"{what} holds {t} but the value is {value.dtype}",
                  f'write T.cast(value, "{t}") to convert')


def operand_types(p, op: str, a, b):
    """Check and type the operands of ``a op b`` (at least one is a run-time value);
    returns them as IR expressions of one type (a shift count keeps its own)."""
    for x in (a, b):
        if not is_ir(x) and not is_scalar(x):
            raise p.error(f"cannot combine {describe(x)} with a run-time value by {op!r}")
    ir_side = a if is_ir(a) else b
    if op in ("<<", ">>"):
        ea = a if is_ir(a) else literal(p, a, literal_type(a), "the shifted value")
        eb = b if is_ir(b) else literal(p, b, _count_type(b), "the shift count")
        if not eb.dtype.is_int:
            raise p.error(f"a shift count must be an integer, not {eb.dtype}")
    elif is_ir(a) and is_ir(b):
        if a.dtype != b.dtype:
            raise p.error(f"operands of {op!r} have different types: {a.dtype} and {b.dtype}",
                          f'convert one side with T.cast(value, "{a.dtype}")')
        ea, eb = a, b
    else:
        t = ir_side.dtype
        lit = b if is_ir(a) else a
        if isinstance(lit, float) and not t.is_float:
            raise p.error(f"mixing {t} with the float literal {lit!r}",
                          'cast the run-time value with T.cast(value, "float32"), or write '
                          "an integer")
        if t.kind == "bool" and isinstance(lit, int) and not isinstance(lit, bool) \
                and op not in alu.COMPARISONS:
            raise p.error(f"operator {op!r} on a bool and the integer {lit!r}",
                          'convert the bool first with T.cast(flag, "int32")')
        e_lit = literal(p, lit, t, f"the other operand of {op!r} ({t})")
        ea, eb = (ir_side, e_lit) if is_ir(a) else (e_lit, ir_side)
    check_op(p, op, ea.dtype)
    return ea, eb


def _count_type(v) -> dt.DataType:
    return dt.uint32 if isinstance(v, int) and v >= 0 and v < 2**32 else literal_type(v)


def check_op(p, op: str, t: dt.DataType) -> None:
    row = alu.BINARY.get(op)
    if row is None:
        raise p.error(f"operator {op!r} is not supported on run-time values",
                      "use T.pow(a, b) for powers" if op == "**" else None)
    if not row.takes(t):
        raise p.error(f"operator {op!r} is not defined on {t} (it takes "
                      f"{alu.describe_kinds(row.kinds)})", _OP_HINTS.get(op))


def check_overflow(p, op: str, a: Expr, b: Expr, result) -> None:
    """``a op b`` of two integer constants: the exact result must fit the type."""
    ia, ib = as_int(a), as_int(b)
    if ia is None or ib is None or not a.dtype.is_int or op not in ("+", "-", "*", "<<"):
        return
    exact = {"+": ia + ib, "-": ia - ib, "*": ia * ib,
             "<<": ia << ib if 0 <= ib < 128 else 0}[op]
    if not alu.fits(exact, a.dtype):
        raise p.error(f"integer constant overflow: {ia} {op} {ib} = {exact} does not fit "
                      f"{a.dtype} ({fits_text(a.dtype)})",
                      "use a wider type (T.int64) or compute it in Python outside the kernel")


def unify_branches(p, t, f, what: str):
    """The two values of ``T.select``/``a if c else b`` as expressions of one type."""
    if is_ir(t) and is_ir(f):
        if t.dtype != f.dtype:
            raise p.error(f"{what} has a {t.dtype} value on one side and {f.dtype} on the "
                          "other", f'convert one side with T.cast(value, "{t.dtype}")')
        return t, f
    if is_ir(t):
        return t, coerce(p, f, t.dtype, f"the other side of {what} ({t.dtype})")
    if is_ir(f):
        return coerce(p, t, f.dtype, f"the other side of {what} ({f.dtype})"), f
    lt = unify_literal_types(literal_type(t), literal_type(f))
    return literal(p, t, lt, what), literal(p, f, lt, what)


def unary(p, op: str, v):
    """``op v`` for a run-time ``v`` (``not`` of a non-bool compares with zero)."""
    if op == "not" and v.dtype.kind != "bool":
        return cmp("==", v, 0)
    row = alu.UNARY[op]
    if not row.takes(v.dtype):
        raise p.error(f"unary {op!r} is not defined on {v.dtype} (it takes "
                      f"{alu.describe_kinds(row.kinds)})", _OP_HINTS.get(op))
    return UnaryOp(op, v, span=p.span())
