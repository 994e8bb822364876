"""Expressions of the tilewise IR.

Nodes are small frozen dataclasses compared by identity (``eq=False``); structural
comparison lives in :mod:`tilewise.ir.equal`. Arithmetic operators build nodes and fold
constants, so variants and passes write index math as ordinary Python
(``base + tid * 8``). ``==`` is *not* overloaded (nodes stay usable as dict keys): build
comparisons with :func:`cmp`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from ..errors import Span
from . import dtype as dt
from .dtype import DataType

ExprLike = Union["Expr", int, float, bool]

_ARITH = ("+", "-", "*", "/", "//", "%", "&", "|", "^", "<<", ">>", "min", "max")
_CMP = ("<", "<=", ">", ">=", "==", "!=")
_LOGIC = ("and", "or")
BINARY_OPS = _ARITH + _CMP + _LOGIC
UNARY_OPS = ("-", "~", "not")


def _span_field():
    return field(default=None, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True, eq=False)
class Node:
    """Base of every IR node; ``span`` is the user's source place (not compared)."""

    span: Span | None = _span_field()


@dataclass(frozen=True, eq=False)
class Expr(Node):
    @property
    def dtype(self) -> DataType:  # overridden by every concrete node
        raise TypeError(f"{type(self).__name__} is not a typed expression")

    # Arithmetic and ordering build IR (constant-folded), so Python code that builds a
    # kernel (a meta-class method) can write `i < n`; == and != keep Python's identity
    # (IR nodes are dict keys): a kernel writes them, the parser builds them.
    def __lt__(self, o): return binop("<", self, o)
    def __le__(self, o): return binop("<=", self, o)
    def __gt__(self, o): return binop(">", self, o)
    def __ge__(self, o): return binop(">=", self, o)
    def __add__(self, o): return binop("+", self, o)
    def __radd__(self, o): return binop("+", o, self)
    def __sub__(self, o): return binop("-", self, o)
    def __rsub__(self, o): return binop("-", o, self)
    def __mul__(self, o): return binop("*", self, o)
    def __rmul__(self, o): return binop("*", o, self)
    def __floordiv__(self, o): return binop("//", self, o)
    def __rfloordiv__(self, o): return binop("//", o, self)
    def __mod__(self, o): return binop("%", self, o)
    def __rmod__(self, o): return binop("%", o, self)
    def __truediv__(self, o): return binop("/", self, o)
    def __and__(self, o): return binop("&", self, o)
    def __or__(self, o): return binop("|", self, o)
    def __xor__(self, o): return binop("^", self, o)
    def __lshift__(self, o): return binop("<<", self, o)
    def __rshift__(self, o): return binop(">>", self, o)
    def __neg__(self): return binop("-", 0, self)

    def __bool__(self):
        raise TypeError("an IR expression has no truth value at compile time")


@dataclass(frozen=True, eq=False)
class Var(Expr):
    """A scalar variable. Identity matters: two Vars named alike are different."""

    name: str
    type: DataType = dt.int32

    @property
    def dtype(self) -> DataType:
        return self.type

    def __repr__(self) -> str:
        return f"Var({self.name}:{self.type})"


@dataclass(frozen=True, eq=False)
class SizeVar(Var):
    """A symbolic size (``M = T.int32()``): a kernel parameter the runtime binds from the
    arrays' shapes and strides at launch, so one compiled kernel serves every size."""

    def __repr__(self) -> str:
        return f"SizeVar({self.name}:{self.type})"


@dataclass(frozen=True, eq=False)
class IntImm(Expr):
    value: int
    type: DataType = dt.int32

    @property
    def dtype(self) -> DataType:
        return self.type

    def __repr__(self) -> str:
        return f"IntImm({self.value})"


@dataclass(frozen=True, eq=False)
class FloatImm(Expr):
    value: float
    type: DataType = dt.float32

    @property
    def dtype(self) -> DataType:
        return self.type


@dataclass(frozen=True, eq=False)
class StringImm(Expr):
    value: str

    @property
    def dtype(self) -> DataType:
        return dt.handle


@dataclass(frozen=True, eq=False)
class BinOp(Expr):
    """``a op b``. Integer ``//`` and ``%`` follow Python (floor) semantics."""

    op: str
    a: Expr
    b: Expr

    @property
    def dtype(self) -> DataType:
        if self.op in _CMP or self.op in _LOGIC:
            return dt.bool_
        return self.a.dtype


@dataclass(frozen=True, eq=False)
class UnaryOp(Expr):
    op: str
    a: Expr

    @property
    def dtype(self) -> DataType:
        return dt.bool_ if self.op == "not" else self.a.dtype


@dataclass(frozen=True, eq=False)
class Select(Expr):
    cond: Expr
    true_value: Expr
    false_value: Expr

    @property
    def dtype(self) -> DataType:
        return self.true_value.dtype


@dataclass(frozen=True, eq=False)
class Cast(Expr):
    """Value conversion (int<->float, widen, narrow)."""

    type: DataType
    value: Expr

    @property
    def dtype(self) -> DataType:
        return self.type


@dataclass(frozen=True, eq=False)
class BufferLoad(Expr):
    buffer: "Buffer"  # noqa: F821 - defined in buffer.py
    indices: tuple[Expr, ...]

    @property
    def dtype(self) -> DataType:
        return self.buffer.dtype


@dataclass(frozen=True, eq=False)
class AddressOf(Expr):
    """Address of ``buffer[indices]`` (of the buffer's start when ``indices`` is empty).
    In the flat IR the single index is an element offset into the buffer's storage."""

    buffer: "Buffer"  # noqa: F821
    indices: tuple[Expr, ...] = ()

    @property
    def dtype(self) -> DataType:
        return dt.handle


@dataclass(frozen=True, eq=False)
class Call(Expr):
    """An intrinsic call: ``op`` is a dotted name of the PTX table (``ptx.cp_async``) or a
    math function (``math.exp``). ``kwargs`` keep named immediates until the PTX table
    normalises them."""

    op: str
    args: tuple = ()
    type: DataType = dt.handle
    kwargs: tuple[tuple[str, object], ...] = ()

    @property
    def dtype(self) -> DataType:
        return self.type

    def kwarg(self, name: str, default=None):
        for k, v in self.kwargs:
            if k == name:
                return v
        return default


@dataclass(frozen=True, eq=False)
class Range(Node):
    """A half-open interval ``[start, start + extent)`` of one dimension."""

    start: Expr
    extent: int


@dataclass(frozen=True, eq=False)
class BufferRegion(Node):
    """A rectangular region of a buffer: the operand of a tile primitive."""

    buffer: "Buffer"  # noqa: F821
    region: tuple[Range, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(r.extent for r in self.region)

    @property
    def size(self) -> int:
        n = 1
        for r in self.region:
            n *= r.extent
        return n


# ----------------------------------------------------------------------------- builders


def const(value: ExprLike, like: DataType | None = None) -> Expr:
    """Wrap a Python scalar as an immediate (ints are int32 unless ``like`` says otherwise)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return IntImm(int(value), dt.bool_)
    if isinstance(value, int):
        if like is not None and like.is_int:
            return IntImm(value, like)
        return IntImm(value, dt.int64 if not -(2**31) <= value < 2**31 else dt.int32)
    if isinstance(value, float):
        return FloatImm(value, like if like is not None and like.is_float else dt.float32)
    raise TypeError(f"cannot use {type(value).__name__} {value!r} as an IR value")


def as_int(e: ExprLike) -> int | None:
    """The integer value of a constant, else None."""
    if isinstance(e, bool):
        return int(e)
    if isinstance(e, int):
        return e
    if isinstance(e, IntImm):
        return e.value
    return None


def _fold_python(op: str, a: int, b: int):
    """Compile-time Python arithmetic on two Python ints (index math of the passes)."""
    if op not in _PY_FOLD or (op in ("//", "%") and b == 0) or (op in ("<<", ">>") and b < 0):
        return None
    return _PY_FOLD[op](a, b)


_PY_FOLD = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "//": lambda a, b: a // b, "%": lambda a, b: a % b, "&": lambda a, b: a & b,
    "|": lambda a, b: a | b, "^": lambda a, b: a ^ b, "<<": lambda a, b: a << b,
    ">>": lambda a, b: a >> b, "min": min, "max": max, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
    "and": lambda a, b: bool(a and b), "or": lambda a, b: bool(a or b),
}


def _fold(op: str, a: ExprLike, b: ExprLike):
    """The constant ``a op b`` when both are integer constants, else None. Typed
    immediates fold by the arithmetic table (wrapping at their width, PTX shifts and
    division by zero); two Python ints fold as Python does."""
    ia, ib = as_int(a), as_int(b)
    if ia is None or ib is None:
        return None
    typed = a if isinstance(a, Expr) else b if isinstance(b, Expr) else None
    if typed is None:
        v = _fold_python(op, ia, ib)
        return None if v is None else const(v)
    from .alu import BINARY, fold

    t = typed.dtype
    if isinstance(a, Expr) and isinstance(b, Expr) and a.dtype != b.dtype and op not in (
            "<<", ">>"):
        return None
    v = fold(op, ia, ib, t)
    if v is None:
        return None
    if BINARY[op].predicate:
        return IntImm(int(v), dt.bool_)
    return IntImm(v, t)


def _retype(imm: Expr, to: DataType) -> Expr:
    """An immediate converted to the other operand's type (Python-literal promotion)."""
    if isinstance(imm, IntImm) and to.is_int:
        return IntImm(imm.value, to)
    if isinstance(imm, (IntImm, FloatImm)) and to.is_float:
        return FloatImm(float(imm.value), to)
    return imm


def _unify(a: Expr, b: Expr) -> tuple[Expr, Expr]:
    """Literals take the type of the other operand, as in C with suffix-free constants."""
    if a.dtype == b.dtype:
        return a, b
    if isinstance(a, (IntImm, FloatImm)) and not isinstance(b, (IntImm, FloatImm)):
        return _retype(a, b.dtype), b
    if isinstance(b, (IntImm, FloatImm)):
        return a, _retype(b, a.dtype)
    return a, b


def binop(op: str, a: ExprLike, b: ExprLike, span: Span | None = None) -> Expr:
    """Build ``a op b`` with constant folding and the identities x+0, x*1, x*0."""
    if not isinstance(a, float) and not isinstance(b, float):
        folded = _fold(op, a, b)
        if folded is not None:
            return folded
    ia, ib = as_int(a), as_int(b)
    ea = const(a, b.dtype if isinstance(b, Expr) else None)
    eb = const(b, ea.dtype)
    if op in ("and", "or") and (ia is not None or ib is not None):
        known, other = (ia, eb) if ia is not None else (ib, ea)
        if bool(known) == (op == "and"):
            return other  # True and x == x; False or x == x
        return IntImm(int(op == "or"), dt.bool_)  # False and x == False; True or x == True
    if op == "+" and ib == 0 or op == "-" and ib == 0 or op in ("*", "//") and ib == 1:
        return ea
    if op == "+" and ia == 0:
        return eb
    if op == "*" and ia == 1:
        return eb
    if op == "*" and (ia == 0 or ib == 0) and ea.dtype.is_int:
        return IntImm(0, ea.dtype if ia != 0 else eb.dtype)
    ea, eb = _unify(ea, eb)
    return BinOp(op, ea, eb, span=span)


def cmp(op: str, a: ExprLike, b: ExprLike, span: Span | None = None) -> Expr:
    return binop(op, a, b, span)


def select(cond: ExprLike, t: ExprLike, f: ExprLike) -> Expr:
    c = as_int(cond)
    if c is not None:
        return const(t) if c else const(f)
    return Select(const(cond), const(t), const(f))


def cast(to: DataType, value: ExprLike) -> Expr:
    e = const(value)
    if e.dtype == to:
        return e
    if isinstance(e, IntImm) and to.is_int:
        return IntImm(e.value, to)
    return Cast(to, e)
