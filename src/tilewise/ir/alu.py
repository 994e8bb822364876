"""The one table of scalar arithmetic: every operator once, with its semantics on numpy
values and its LLVM emission, read by constant folding (:func:`fold`), the simulator
(:func:`numpy_binary`, :func:`numpy_unary`, :func:`numpy_cast`) and the code generator
(:func:`llvm_binary`, :func:`llvm_unary`, :func:`llvm_cast`).

Semantics are PTX's and never LLVM poison (docs/ir.md, "Arithmetic"):

* integers wrap at their width; ``//`` and ``%`` floor (Python); ``x // 0`` is all ones
  (-1, or the maximum of an unsigned type) and ``x % 0`` is ``x``; ``MIN // -1`` wraps to
  ``MIN`` and ``MIN % -1`` is 0;
* shift counts are unsigned; a count at or beyond the width gives PTX's clamped result:
  ``<<`` gives 0, ``>>`` gives the sign fill (signed) or 0 (unsigned);
* floats are IEEE with round-to-nearest-even in their own type, no contraction into fma;
  ``/`` is correctly rounded; ``//`` is ``floor(x / y)``, ``%`` is ``x - floor(x / y) * y``
  (each step rounded); ``min``/``max`` ignore a NaN operand (PTX ``min.f32``);
  ``!=`` is true for NaN, the other comparisons false;
* conversions: int -> int wraps, float -> int truncates toward zero and saturates with NaN
  giving 0 (``cvt.rzi.sat``), int -> float and float -> narrower float round to nearest
  even, anything -> bool is ``!= 0``.

The LLVM emitters receive the code generator (``em``: ``em.b`` is the llvmlite builder,
``em.is_nonneg(expr)``, ``em.constant(expr)`` and ``em.llvm_intrinsic``) and import neither
llvmlite nor the IR nodes: constants are made by calling an LLVM type (``x.type(0)``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .dtype import DTYPES, DataType, bool_, float32

KINDS = ("int", "uint", "float", "bool")


class _Numpy:
    """numpy, imported at first use (``import tilewise`` loads no numpy): the first
    attribute read puts the real module in its place."""

    def __getattr__(self, name):
        import numpy

        globals()["np"] = numpy
        return getattr(numpy, name)


np = _Numpy()


@dataclass(frozen=True)
class BinaryOp:
    """One binary operator: the dtype kinds it takes, whether it yields bool, its numpy
    semantics ``np(a, b, d)`` (``d``: the operands' numpy dtype) and its LLVM emission
    ``llvm(em, e, x, y)`` (``e``: the BinOp node)."""

    name: str
    kinds: frozenset
    np: Callable
    llvm: Callable
    predicate: bool = False  # the result is bool

    def result(self, operand: DataType) -> DataType:
        return bool_ if self.predicate else operand

    def takes(self, t: DataType) -> bool:
        return t.kind in self.kinds


@dataclass(frozen=True)
class UnaryOp:
    name: str
    kinds: frozenset
    np: Callable
    llvm: Callable
    predicate: bool = False

    def takes(self, t: DataType) -> bool:
        return t.kind in self.kinds


# ----------------------------------------------------------------------------- numpy helpers
def _arr(v, d):
    return np.asarray(v).astype(d, copy=False)


def _scalar_if(v, *like):
    """Keep numpy scalars scalar (a value uniform over threads stays uniform)."""
    if all(np.ndim(x) == 0 for x in like):
        return np.asarray(v)[()]
    return v


def _all_ones(d: np.dtype):
    return d.type(-1) if d.kind == "i" else d.type(np.iinfo(d).max)


def _np_floordiv(a, b, d):
    a, b = _arr(a, d), _arr(b, d)
    zero = b == 0
    safe = np.where(zero, d.type(1), b)
    q = np.where(zero, _all_ones(d), np.floor_divide(a, safe))
    return _scalar_if(q.astype(d, copy=False), a, b)


def _np_mod(a, b, d):
    a, b = _arr(a, d), _arr(b, d)
    zero = b == 0
    safe = np.where(zero, d.type(1), b)
    r = np.where(zero, a, np.mod(a, safe))
    return _scalar_if(r.astype(d, copy=False), a, b)


def _np_float_floordiv(a, b, d):
    q = np.floor(np.true_divide(_arr(a, d), _arr(b, d))).astype(d)
    return _scalar_if(canonical_nan(q, d), a, b)


def _np_float_mod(a, b, d):
    a, b = _arr(a, d), _arr(b, d)
    q = np.floor(np.true_divide(a, b)).astype(d)
    r = np.subtract(a, np.multiply(q, b).astype(d)).astype(d)
    return _scalar_if(canonical_nan(r, d), a, b)


def _count(b) -> np.ndarray:
    """A shift count as an unsigned 64-bit number (its bits read as unsigned)."""
    b = np.asarray(b)
    if b.dtype.kind == "i":
        b = b.view(np.dtype(f"u{b.dtype.itemsize}"))
    return b.astype(np.uint64)


def _np_shl(a, b, d):
    a, cnt = _arr(a, d), _count(b)
    big = cnt >= d.itemsize * 8
    r = np.left_shift(a, np.where(big, 0, cnt).astype(d))
    return _scalar_if(np.where(big, d.type(0), r).astype(d, copy=False), a, b)


def _np_shr(a, b, d):
    a, cnt = _arr(a, d), _count(b)
    w = d.itemsize * 8
    big = cnt >= w
    r = np.right_shift(a, np.where(big, 0, cnt).astype(d))
    fill = np.where(a < 0, d.type(-1), d.type(0)) if d.kind == "i" else d.type(0)
    return _scalar_if(np.where(big, fill, r).astype(d, copy=False), a, b)


def _np(name: str):
    """The numpy ufunc ``name`` as ``(a, b, d)``; a float result that is NaN is the GPU's
    canonical NaN (all mantissa bits set, sign clear), as PTX arithmetic returns it."""
    def f(a, b, d):
        r = getattr(np, name)(a, b)
        return canonical_nan(r, d) if _is_float(d) else r
    return f


_CANONICAL_NAN_BITS = {2: 0x7FFF, 4: 0x7FFFFFFF, 8: 0x7FFFFFFFFFFFFFFF}


def canonical_nan(v, d: np.dtype):
    """``v`` with every NaN replaced by the canonical NaN of float dtype ``d``."""
    bits = _CANONICAL_NAN_BITS.get(d.itemsize)
    isnan = np.isnan(v)
    if bits is None or not np.any(isnan):
        return v
    nan = np.array(bits, dtype=f"u{d.itemsize}").view(d)[()]
    out = np.where(isnan, nan, v).astype(d, copy=False)
    return out if np.ndim(v) else out[()]


# ----------------------------------------------------------------------------- LLVM helpers
_ICMP = ("<", "<=", ">", ">=", "==", "!=")


def _c(x, v):
    return x.type(v)


def _pow2(c) -> int | None:
    if c is not None and c > 0 and c & (c - 1) == 0:
        return c.bit_length() - 1
    return None




def _int_constant(em, e):
    v = em.constant(e)
    return v if isinstance(v, int) else None


def _unsigned(em, e) -> bool:
    t = e.a.dtype
    return not t.is_signed or (em.is_nonneg(e.a) and em.is_nonneg(e.b))


def _ll_int_or_float(int_name: str, float_name: str):
    def f(em, e, x, y):
        return getattr(em.b, float_name if e.a.dtype.is_float else int_name)(x, y)
    return f


def _ll_bitwise(name: str):
    def f(em, e, x, y):
        return getattr(em.b, name)(x, y)
    return f


def _ll_guarded_divisor(em, e, x, y):
    """``(safe divisor, y == 0, y == -1)`` for a divisor that is not a known constant."""
    b = em.b
    zero = b.icmp_unsigned("==", y, _c(y, 0))
    minus1 = b.icmp_unsigned("==", y, _c(y, -1)) if e.a.dtype.is_signed else None
    bad = zero if minus1 is None else b.or_(zero, minus1)
    return b.select(bad, _c(y, 1), y), zero, minus1


def _ll_floor_fix(b, r, d):
    """True where the truncated remainder ``r`` of a division by ``d`` needs flooring."""
    nz = b.icmp_signed("!=", r, _c(r, 0))
    neg = b.icmp_signed("<", b.xor(r, d), _c(r, 0))
    return b.and_(nz, neg)


def _ll_floordiv(em, e, x, y):
    b = em.b
    if e.a.dtype.is_float:
        return em.llvm_intrinsic("llvm.floor", x.type, [b.fdiv(x, y)])
    k = _int_constant(em, e.b)
    if k is not None and k > 0:
        if _unsigned(em, e):
            return b.udiv(x, y)
        p = _pow2(k)
        if p is not None:
            return b.ashr(x, _c(x, p))
        q = b.sdiv(x, y)
        return b.sub(q, b.zext(_ll_floor_fix(b, b.srem(x, y), y), x.type))
    safe, zero, minus1 = _ll_guarded_divisor(em, e, x, y)
    if _unsigned(em, e):
        q = b.udiv(x, safe)
    else:
        q = b.sdiv(x, safe)
        q = b.sub(q, b.zext(_ll_floor_fix(b, b.srem(x, safe), safe), x.type))
        q = b.select(minus1, b.neg(x), q)
    return b.select(zero, _c(x, -1), q)


def _ll_mod(em, e, x, y):
    b = em.b
    if e.a.dtype.is_float:
        q = em.llvm_intrinsic("llvm.floor", x.type, [b.fdiv(x, y)])
        return b.fsub(x, b.fmul(q, y))
    k = _int_constant(em, e.b)
    if k is not None and k > 0:
        if _unsigned(em, e):
            return b.urem(x, y)
        p = _pow2(k)
        if p is not None:
            return b.and_(x, _c(x, k - 1))
        r = b.srem(x, y)
        return b.add(r, b.select(_ll_floor_fix(b, r, y), y, _c(x, 0)))
    safe, zero, minus1 = _ll_guarded_divisor(em, e, x, y)
    if _unsigned(em, e):
        r = b.urem(x, safe)
    else:
        r = b.srem(x, safe)
        r = b.add(r, b.select(_ll_floor_fix(b, r, safe), safe, _c(x, 0)))
        r = b.select(minus1, _c(x, 0), r)
    return b.select(zero, x, r)


def _ll_count(em, e, x, y):
    """The shift count widened (unsigned) or narrowed to ``x``'s width, and whether the
    original count is at or beyond that width (checked before any narrowing)."""
    b = em.b
    width = x.type.width
    big = b.icmp_unsigned(">=", y, _c(y, width)) if y.type.width > width.bit_length() else None
    if y.type.width < x.type.width:
        y = b.zext(y, x.type)
    elif y.type.width > x.type.width:
        y = b.trunc(y, x.type)
    if big is None:  # a count type too narrow to reach the width (never big)
        return y, None
    return y, big


def _ll_shl(em, e, x, y):
    b = em.b
    cnt, big = _ll_count(em, e, x, y)
    k = _int_constant(em, e.b)
    if k is not None and 0 <= k < x.type.width:
        return b.shl(x, cnt)
    safe = cnt if big is None else b.select(big, _c(cnt, 0), cnt)
    r = b.shl(x, safe)
    return r if big is None else b.select(big, _c(x, 0), r)


def _ll_shr(em, e, x, y):
    b = em.b
    cnt, big = _ll_count(em, e, x, y)
    signed = e.a.dtype.is_signed
    k = _int_constant(em, e.b)
    shift = b.ashr if signed else b.lshr
    if k is not None and 0 <= k < x.type.width:
        return shift(x, cnt)
    if signed:  # a count past the width shifts by width - 1: the sign fill
        top = _c(cnt, x.type.width - 1)
        safe = cnt if big is None else b.select(big, top, cnt)
        return b.ashr(x, safe)
    safe = cnt if big is None else b.select(big, _c(cnt, 0), cnt)
    r = b.lshr(x, safe)
    return r if big is None else b.select(big, _c(x, 0), r)


def _nan_constant(em, e) -> bool:
    v = em.constant(e)
    return isinstance(v, float) and v != v


def _ll_minmax(op: str):
    def f(em, e, x, y):
        b, t = em.b, e.a.dtype
        if t.is_float:
            if _nan_constant(em, e.a) or _nan_constant(em, e.b):
                # LLVM folds minnum(v, NaN) to v, keeping a NaN v's payload where min.f32
                # of two NaNs gives the canonical NaN: emit what the hardware does
                v = y if _nan_constant(em, e.a) else x
                bits = DTYPES[f"uint{t.bits}"]
                nan = b.bitcast(em.value_type(bits)(_CANONICAL_NAN_BITS[t.bits // 8]), v.type)
                return b.select(b.fcmp_unordered("uno", v, v), nan, v)
            name = "llvm.minnum" if op == "min" else "llvm.maxnum"
            return em.llvm_intrinsic(name, x.type, [x, y])
        pred = "<" if op == "min" else ">"
        c = b.icmp_signed(pred, x, y) if t.is_signed else b.icmp_unsigned(pred, x, y)
        return b.select(c, x, y)
    return f


def _ll_compare(op: str):
    def f(em, e, x, y):
        b, t = em.b, e.a.dtype
        if t.is_float:
            return b.fcmp_unordered("!=", x, y) if op == "!=" else b.fcmp_ordered(op, x, y)
        if t.is_signed and not _unsigned(em, e):
            return b.icmp_signed(op, x, y)
        return b.icmp_unsigned(op, x, y)
    return f


def _ll_float_only(name: str):
    def f(em, e, x, y):
        return getattr(em.b, name)(x, y)
    return f


_I, _U, _F, _B = "int", "uint", "float", "bool"
_NUM = frozenset({_I, _U, _F})
_INTS = frozenset({_I, _U})
_INTB = frozenset({_I, _U, _B})
_ALL = frozenset(KINDS)

_BINARY = [
    BinaryOp("+", _NUM, _np("add"), _ll_int_or_float("add", "fadd")),
    BinaryOp("-", _NUM, _np("subtract"), _ll_int_or_float("sub", "fsub")),
    BinaryOp("*", _NUM, _np("multiply"), _ll_int_or_float("mul", "fmul")),
    BinaryOp("/", frozenset({_F}), _np("true_divide"), _ll_float_only("fdiv")),
    BinaryOp("//", _NUM, lambda a, b, d: (_np_float_floordiv if _is_float(d) else
                                          _np_floordiv)(a, b, d), _ll_floordiv),
    BinaryOp("%", _NUM, lambda a, b, d: (_np_float_mod if _is_float(d) else _np_mod)(a, b, d),
             _ll_mod),
    BinaryOp("&", _INTB, _np("bitwise_and"), _ll_bitwise("and_")),
    BinaryOp("|", _INTB, _np("bitwise_or"), _ll_bitwise("or_")),
    BinaryOp("^", _INTB, _np("bitwise_xor"), _ll_bitwise("xor")),
    BinaryOp("<<", _INTS, _np_shl, _ll_shl),
    BinaryOp(">>", _INTS, _np_shr, _ll_shr),
    BinaryOp("min", _NUM, lambda a, b, d: _np("fmin" if _is_float(d) else "minimum")(a, b, d),
             _ll_minmax("min")),
    BinaryOp("max", _NUM, lambda a, b, d: _np("fmax" if _is_float(d) else "maximum")(a, b, d),
             _ll_minmax("max")),
    *(BinaryOp(op, _ALL, _np(fn), _ll_compare(op), predicate=True) for op, fn in (
        ("<", "less"), ("<=", "less_equal"), (">", "greater"), (">=", "greater_equal"),
        ("==", "equal"), ("!=", "not_equal"))),
    BinaryOp("and", frozenset({_B}), _np("logical_and"), _ll_bitwise("and_"),
             predicate=True),
    BinaryOp("or", frozenset({_B}), _np("logical_or"), _ll_bitwise("or_"),
             predicate=True),
]


def _is_float(d: np.dtype) -> bool:
    return d.kind == "f" or d.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2")


def _ll_neg(em, e, x):
    return em.b.fneg(x) if e.a.dtype.is_float else em.b.neg(x)


_UNARY = [
    UnaryOp("-", _NUM, lambda a, d: np.negative(a), _ll_neg),
    UnaryOp("~", _INTS, lambda a, d: np.invert(a), lambda em, e, x: em.b.not_(x)),
    UnaryOp("not", frozenset({_B}), lambda a, d: np.logical_not(a),
            lambda em, e, x: em.b.not_(x), predicate=True),
]

BINARY: dict[str, BinaryOp] = {op.name: op for op in _BINARY}
UNARY: dict[str, UnaryOp] = {op.name: op for op in _UNARY}
COMPARISONS = frozenset(op.name for op in _BINARY if op.predicate and op.name in _ICMP)


def describe_kinds(kinds: frozenset) -> str:
    names = {"int": "signed integers", "uint": "unsigned integers", "float": "floats",
             "bool": "bools"}
    return ", ".join(names[k] for k in KINDS if k in kinds)


# ----------------------------------------------------------------------------- the simulator
def numpy_binary(op: str, operand: DataType) -> Callable:
    """``f(a, b)`` computing ``a op b`` for operands of IR type ``operand``."""
    row = BINARY[op]
    d = operand.numpy() if operand.kind not in ("bool", "handle") else (
        np.dtype(np.bool_) if operand.kind == "bool" else np.dtype(np.int64))
    fn = row.np
    return lambda a, b: fn(a, b, d)


def numpy_unary(op: str, operand: DataType) -> Callable:
    row = UNARY[op]
    d = operand.numpy() if operand.kind != "bool" else np.dtype(np.bool_)
    return lambda a: row.np(a, d)


def numpy_cast(v, src: DataType, dst: DataType):
    """Convert ``v`` (of IR type ``src``) to IR type ``dst`` with the GPU's rules."""
    d = _np_dtype(dst)
    if dst.kind == "bool":
        return np.not_equal(v, 0)
    if src.is_float and dst.is_int:
        info = np.iinfo(d)
        f = np.trunc(np.asarray(v, dtype=np.float64))
        f = np.where(np.isnan(f), 0.0, np.clip(f, info.min, info.max))
        if d.itemsize == 8:  # float64 cannot hold the int64 bounds exactly
            big = f >= 2.0 ** (64 if d.kind == "u" else 63)
            out = np.where(big, info.max, f.astype(d))
        else:
            out = f.astype(d)
        return out if isinstance(v, np.ndarray) else d.type(out)
    if src.is_float and dst.is_float and _np_dtype(src).itemsize < 4 and d.itemsize < 4:
        v = np.asarray(v).astype(np.float32)  # fp8 <-> fp16/bf16 through float32 (exact)
    out = np.asarray(v).astype(d)
    if src.is_float and dst.is_float and d.itemsize > 1:
        out = canonical_nan(out, d)  # cvt between float types returns the canonical NaN
    return out if isinstance(v, np.ndarray) else out[()]


def numpy_fma(a, b, c, d: np.dtype):
    """``a * b + c`` with one rounding to float dtype ``d`` (``fma.rn``; at most 24 significand
    bits). The product is exact in float64; the sum's float64 rounding error (TwoSum) turns
    the sum into its round-to-odd value, which rounds to ``d`` exactly as the unrounded
    result does (float64 has more than ``p + 2`` bits for every ``d`` here); a 16-bit ``d``
    goes through float32 the same way."""
    a64, b64, c64 = (np.asarray(x, np.float64) for x in (a, b, c))
    with np.errstate(all="ignore"):
        p = a64 * b64
        s = p + c64
        z = s - p
        err = (p - (s - z)) + (c64 - z)
        s = _to_odd(s, err, np.float64)
        if d.itemsize < 4:
            s32 = s.astype(np.float32)
            s = _to_odd(s32, s - s32.astype(np.float64), np.float32)
        out = canonical_nan(np.asarray(s).astype(d), d)
    return out if any(np.ndim(x) for x in (a, b, c)) else np.asarray(out)[()]


def _to_odd(s, err, f):
    """``s`` moved one unit toward the exact value when ``err`` (exact - s) is non-zero and
    ``s`` is even: round-to-odd from round-to-nearest."""
    bits = np.asarray(s, f).view(np.int64 if f == np.float64 else np.int32)
    fix = (np.asarray(err) != 0) & ((bits & 1) == 0) & np.isfinite(s)
    if not fix.any():
        return s
    toward = np.where(np.asarray(err) > 0, np.inf, -np.inf).astype(f)
    return np.where(fix, np.nextafter(np.asarray(s, f), toward), s).astype(f)


def _np_dtype(t: DataType) -> np.dtype:
    if t.kind == "handle":
        return np.dtype(np.int64)
    if t.kind == "bool":
        return np.dtype(np.bool_)
    return t.numpy()


# ----------------------------------------------------------------------------- folding
def fold(op: str, a, b, t: DataType):
    """``a op b`` for constants of IR type ``t`` (Python numbers), by the table's numpy
    semantics; returns a Python number, or None when ``op`` does not take ``t``."""
    row = BINARY.get(op)
    if row is None or not row.takes(t) or t.kind == "handle":
        return None
    d = _np_dtype(t)
    with np.errstate(all="ignore"):
        v = row.np(d.type(a), d.type(b), d)
    v = np.asarray(v)[()]
    if row.predicate:
        return bool(v)
    return int(v) if t.is_int or t.kind == "bool" else float(v)


def fits(value: int, t: DataType) -> bool:
    """Whether the integer ``value`` is representable in integer type ``t``."""
    if t.kind == "bool":
        return value in (0, 1)
    lo, hi = int_range(t)
    return lo <= value <= hi


def int_range(t: DataType) -> tuple[int, int]:
    if t.kind == "uint":
        return 0, 2**t.bits - 1
    return -(2 ** (t.bits - 1)), 2 ** (t.bits - 1) - 1


def float_fits(value: float, t: DataType) -> bool:
    """Whether a finite Python float stays finite in float type ``t``."""
    import math

    if not math.isfinite(value):
        return True
    with np.errstate(all="ignore"):
        return bool(np.isfinite(np.asarray(value).astype(_np_dtype(t))))


# ----------------------------------------------------------------------------- the code generator
def llvm_binary(em, e, x, y):
    """LLVM for BinOp ``e`` with operand values ``x`` and ``y`` (already of ``e.a``'s type)."""
    return BINARY[e.op].llvm(em, e, x, y)


def llvm_unary(em, e, x):
    return UNARY[e.op].llvm(em, e, x)


def llvm_cast(em, v, src: DataType, dst: DataType):
    """Value conversion of LLVM value ``v`` from ``src`` to ``dst`` (see the module doc)."""
    b = em.b
    if src == dst:
        return v
    to = em.value_type(dst)
    if dst.kind == "bool":
        zero = v.type(0)
        return b.fcmp_unordered("!=", v, zero) if src.is_float else b.icmp_unsigned(
            "!=", v, zero)
    if src.kind == "bool":
        return b.uitofp(v, to) if dst.is_float else b.zext(v, to)
    if src.kind in ("int", "uint", "handle"):
        if dst.is_float:
            return b.sitofp(v, to) if src.is_signed else b.uitofp(v, to)
        return resize_int(b, v, src, to)
    if dst.is_int or dst.kind == "handle":
        sat = "llvm.fptosi.sat" if dst.is_signed else "llvm.fptoui.sat"
        return em.call(f"{sat}.{to.intrinsic_name}.{v.type.intrinsic_name}", to, [v])
    if src.bits == dst.bits:  # float16 <-> bfloat16
        return b.fptrunc(b.fpext(v, em.value_type(float32)), to)
    return b.fpext(v, to) if dst.bits > src.bits else b.fptrunc(v, to)


def resize_int(b, v, src: DataType, to):
    if v.type.width == to.width:
        return v
    if v.type.width > to.width:
        return b.trunc(v, to)
    return b.sext(v, to) if src.is_signed else b.zext(v, to)
