"""The tile compute operations: one table of elementwise operations and one of reductions.

Every reader takes its facts from here: the primitive schema (:mod:`.primitives`: operands
and options), the parse-time checks (:func:`check_elementwise`, :func:`check_reduction`),
every variant (the scalar IR of one element, :meth:`Elementwise.build`) and the docs.

Semantics (TIRx's tile layer, ``docs/dispatch.md`` "Compute primitives"):

* ``dst = f(srcs...)`` element by element. Source operands are regions of any memory or
  scalars (a Python number, or a run-time value); a region of lower rank or with extent-1
  dimensions broadcasts as numpy does (``bias[0:N]`` over a ``(M, N)`` tile; a per-row
  ``m[0:M, 0:1]`` over ``(M, N)``).
* No implicit conversion: region operands and run-time scalars have the destination's
  dtype (``cast`` converts; ``select``'s predicate is bool); a number takes the
  destination's dtype and must fit it.
* Arithmetic is the arithmetic table's (:mod:`tilewise.ir.alu`): IEEE, rounded in the
  destination's dtype, never contracted. ``fma`` rounds once. The transcendental ops
  (``exp``, ``exp2``, ``log2``, ``rsqrt``, ``silu``) compute a 16-bit float in float32 and
  round the result; by default through the approximate instructions (``ex2.approx.f32``,
  ``lg2.approx.f32``, ``rsqrt.approx.f32``; error bounds in :mod:`tilewise.ptx.packed`),
  with ``precise=True`` through libdevice (``rsqrt``: ``1 / sqrt``, correctly rounded
  steps). ``exp(x)`` is ``ex2.approx(x * log2 e)`` with the product rounded to float32:
  within 2^-22.5 + |x| * 2^-23.4 of e^x (relative), i.e. 2^-17 at |x| = 87. ``exp`` and
  ``exp2`` take ``ftz=True``: ``ex2.approx.ftz.f32``, subnormal inputs read as 0 and
  subnormal results flushed to +0, one instruction instead of four. ``sqrt``,
  ``reciprocal`` and ``fdiv`` are correctly rounded (IEEE).
* The unary math ops take ``scale=`` and ``bias=`` (numbers, run-time scalars or regions
  that broadcast): ``dst = f(src * scale + bias)``, each step rounded.
* Reductions ``sum``/``max``/``min(dst, src, axes=-1, accum=False)``: ``dst`` has ``src``'s
  shape without the reduced axes, or with them as extent 1; ``accum=True`` folds the old
  ``dst`` in. ``max``/``min`` ignore NaN as ``max.f32`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..ir import dtype as dt
from ..ir.dtype import DataType
from ..ir.expr import BufferRegion, Expr, FloatImm, IntImm, Select, binop, cast
from ..ptx.table import PTX_OPS

LOG2E = 1.4426950408889634  # rounded to float32 when used: ex2(x * log2(e)) = e^x
F32 = dt.float32


def _call(name: str, *args) -> Expr:
    return PTX_OPS[name].call(list(args), {})


def _ex2(ftz: bool) -> str:
    return "ptx.ex2.approx.ftz" if ftz else "ptx.ex2.approx"


def _exp2(x: Expr, precise: bool, ftz: bool = False) -> Expr:
    return _call("exp2", x) if precise else _call(_ex2(ftz), x)


def _exp(x: Expr, precise: bool, ftz: bool = False) -> Expr:
    return _call("exp", x) if precise else _call(_ex2(ftz), x * FloatImm(LOG2E, F32))


def _rsqrt(x: Expr, precise: bool) -> Expr:
    if precise:
        return FloatImm(1.0, F32) / _call("ptx.sqrt.rn", x)
    return _call("ptx.rsqrt.approx", x)


def _silu(x: Expr, precise: bool) -> Expr:
    one = FloatImm(1.0, F32)
    return x / (one + _exp(binop("-", FloatImm(0.0, F32), x), precise))


def _log2(x: Expr, precise: bool) -> Expr:
    return _call("log2", x) if precise else _call("ptx.lg2.approx", x)


#: The ops that take ``ftz=True`` (flush subnormals: ``ex2.approx.ftz.f32``); their
#: variants list ``options.FTZ`` (``variants/elementwise/reg.py`` ``register_each``).
FTZ_OPS = ("exp", "exp2")

#: float32 math of the unary ops: (x, precise) -> Expr
_MATH: dict[str, Callable] = {
    "exp": _exp, "exp2": _exp2, "log2": _log2, "rsqrt": _rsqrt, "silu": _silu,
    "sqrt": lambda x, precise: _call("ptx.sqrt.rn", x),
    "reciprocal": lambda x, precise: FloatImm(1.0, F32) / x,
}

_FLOAT = ("float",)
_NUM = ("int", "uint", "float")
_ANY = ("int", "uint", "float", "bool")


@dataclass(frozen=True)
class Elementwise:
    """One elementwise tile operation.

    ``operands``: the source operands after ``dst`` as (name, kind), kind ``region`` (a
    region of any memory), ``value`` (a region or a scalar) or ``scalar``; ``alu``: the
    arithmetic-table operator of a binary op (``fma`` for the fused one); ``math``: a
    unary math op of :data:`_MATH`."""

    name: str
    operands: tuple[tuple[str, str], ...]
    kinds: tuple[str, ...]
    doc: str
    alu: str | None = None
    math: str | None = None
    in_place: bool = False  # the source may be left out: f(dst) in place

    @property
    def unary_math(self) -> bool:
        return self.math is not None

    def build(self, dst_t: DataType, args: list[Expr], options: dict) -> Expr:
        """The scalar IR of one element: ``args`` are the sources' values (already loaded),
        in the order of ``operands``; ``options`` the call's (scale, bias as values)."""
        if self.name == "zero":
            return _zero(dst_t)
        if self.name == "fill":
            return args[0]
        if self.name == "cast":
            return cast(dst_t, args[0])
        if self.name == "select":
            return Select(args[2], args[0], args[1])
        if self.alu == "fma":
            return _fma(dst_t, *args)
        if self.alu is not None:
            return binop(self.alu, args[0], args[1])
        return self._math(dst_t, args[0], options)

    def _math(self, dst_t: DataType, x: Expr, options: dict) -> Expr:
        scale, bias = options.get("scale"), options.get("bias")
        if scale is not None:
            x = binop("*", x, scale)
        if bias is not None:
            x = binop("+", x, bias)
        wide = cast(F32, x) if x.dtype != F32 else x  # x: the compute dtype (src's)
        if options.get("ftz"):
            r = _MATH[self.math](wide, False, True)
        else:
            r = _MATH[self.math](wide, bool(options.get("precise")))
        return cast(dst_t, r) if dst_t != F32 else r


def _zero(t: DataType) -> Expr:
    return FloatImm(0.0, t) if t.is_float else IntImm(0, t)


def _fma(t: DataType, a: Expr, b: Expr, c: Expr) -> Expr:
    if t.is_float:
        return _call("ptx.fma.rn", a, b, c)
    return binop("+", binop("*", a, b), c)


def _ew(name, operands, kinds, doc, **kw) -> Elementwise:
    return Elementwise(name, tuple(operands), kinds, doc, **kw)


_SRC = (("src", "region"),)
_BIN = (("src1", "value"), ("src2", "value"))

ELEMENTWISE: dict[str, Elementwise] = {e.name: e for e in [
    _ew("zero", (("src", "region"),), _ANY, "dst = 0 (TIRx's zero(dst, src): a src, when "
        "given, has a shape that broadcasts to dst and is not read)", in_place=True),
    _ew("fill", (("value", "scalar"),), _ANY, "dst = value (a number or a run-time scalar)"),
    _ew("cast", _SRC, _ANY, "dst = src converted to dst's dtype (the arithmetic table's "
        "conversions)"),
    _ew("select", (("true_value", "value"), ("false_value", "value"), ("pred", "value")),
        _ANY, "dst = true_value where pred else false_value (pred: a bool region or value)"),
    _ew("add", _BIN, _NUM, "dst = src1 + src2", alu="+"),
    _ew("sub", _BIN, _NUM, "dst = src1 - src2", alu="-"),
    _ew("mul", _BIN, _NUM, "dst = src1 * src2", alu="*"),
    _ew("fdiv", _BIN, _FLOAT, "dst = src1 / src2 (IEEE, correctly rounded)", alu="/"),
    _ew("maximum", _BIN, _NUM, "dst = max(src1, src2) (a NaN operand gives the other)",
        alu="max"),
    _ew("minimum", _BIN, _NUM, "dst = min(src1, src2) (a NaN operand gives the other)",
        alu="min"),
    _ew("fma", (("src", "region"), ("scale", "value"), ("bias", "value")), _NUM,
        "dst = src * scale + bias, rounded once (fma.rn) for floats", alu="fma"),
    *(_ew(m, _SRC, _FLOAT, doc, math=m, in_place=True) for m, doc in [
        ("exp", "dst = e^(src * scale + bias)"), ("exp2", "dst = 2^(src * scale + bias)"),
        ("log2", "dst = log2(src * scale + bias)"),
        ("sqrt", "dst = sqrt(src * scale + bias) (correctly rounded)"),
        ("rsqrt", "dst = 1 / sqrt(src * scale + bias)"),
        ("reciprocal", "dst = 1 / (src * scale + bias) (correctly rounded)"),
        ("silu", "dst = y / (1 + e^-y), y = src * scale + bias")]),
]}

@dataclass(frozen=True)
class Reduction:
    """A reduction: the arithmetic-table operator folding two partial results."""

    name: str
    alu: str
    kinds: tuple[str, ...]
    doc: str

    def combine(self, a: Expr, b: Expr) -> Expr:
        return binop(self.alu, a, b)


REDUCTIONS: dict[str, Reduction] = {r.name: r for r in [
    Reduction("sum", "+", _NUM, "dst = the sum of src over axes"),
    Reduction("max", "max", _NUM, "dst = the maximum of src over axes (NaN ignored)"),
    Reduction("min", "min", _NUM, "dst = the minimum of src over axes (NaN ignored)"),
]}


# ---------------------------------------------------------------------------- parse-time checks
class Checker:
    """What a check needs from the parser: ``error(msg, hint)`` and ``coerce(value, dtype,
    what)`` (a number to a typed immediate; a run-time value must have the type)."""

    def __init__(self, error: Callable, coerce: Callable, op: str):
        self.error, self.coerce, self.op = error, coerce, op

    def fail(self, msg: str, hint: str | None = None):
        raise self.error(f"Tx.{self.op}: {msg}", hint)


def region_text(r: BufferRegion) -> str:
    from ..ir.printer import Printer

    return Printer().region(r)


def broadcasts(shape: tuple[int, ...], to: tuple[int, ...]) -> bool:
    """Whether ``shape`` broadcasts to ``to`` (numpy's rule, right-aligned)."""
    if len(shape) > len(to):
        extra = shape[: len(shape) - len(to)]
        if any(e != 1 for e in extra):
            return False
        shape = shape[len(shape) - len(to):]
    return all(a in (1, b) for a, b in zip(shape, to[len(to) - len(shape):]))


def _kinds_text(kinds) -> str:
    return {_FLOAT: "float", _NUM: "integer or float", _ANY: "any"}.get(kinds, str(kinds))


def check_elementwise(c: Checker, op: Elementwise, dst: BufferRegion, srcs: list,
                      options: dict) -> tuple[list, dict]:
    """Shapes, dtypes and scalars of an elementwise call; returns the sources and options
    with numbers turned into immediates of the right dtype."""
    t = dst.buffer.dtype
    if t.kind not in op.kinds:
        c.fail(f"dst is {t}; {op.name} takes {_kinds_text(op.kinds)} tiles",
               'compute in another dtype and convert with Tx.cast' if t.kind != "bool" else
               None)
    if op.name == "zero":  # the source is not read: only its shape must fit
        for v in srcs:
            _check_source(c, op, "src", v, v.buffer.dtype, dst)
        return [], dict(options)
    compute_t = compute_dtype(op, t, srcs)
    out = []
    for (name, _kind), v in zip(op.operands, srcs):
        want = dt.bool_ if name == "pred" else compute_t
        out.append(_check_source(c, op, name, v, want, dst))
    opts = dict(options)
    if opts.get("ftz") and opts.get("precise"):  # (other ops do not take ftz=: options.FTZ)
        c.fail(f"ftz= is an option of {' and '.join(FTZ_OPS)} through the approximate "
               f"instruction (ex2.approx.ftz.f32), not of {op.name} with precise=True",
               "drop ftz= or precise=")
    for name in ("scale", "bias"):
        if opts.get(name) is not None:
            opts[name] = _check_source(c, op, name, opts[name], compute_t, dst)
    return out, opts


def compute_dtype(op: Elementwise, dst_t: DataType, srcs: list) -> DataType:
    """The dtype a call computes in: the destination's, except for a unary math op whose
    source region is another float type (TIRx: ``sqrt`` of a float32 tile into a float16
    one computes from the float32 values, ``scale=`` and ``bias=`` in float32, and rounds
    the result once into the destination)."""
    src = srcs[0] if srcs else None
    if (op.unary_math and isinstance(src, BufferRegion) and src.buffer.dtype.is_float
            and dst_t.is_float):
        return src.buffer.dtype
    return dst_t


def _check_source(c: Checker, op: Elementwise, name: str, v, want: DataType,
                  dst: BufferRegion):
    if isinstance(v, BufferRegion):
        if op.name != "cast" and v.buffer.dtype != want:
            c.fail(f"{name} {region_text(v)} is {v.buffer.dtype} but must be {want}"
                   + (" (the destination's dtype)" if name != "pred" else ""),
                   "convert it first with Tx.cast into a tile of that dtype"
                   if name != "pred" else "compute the predicate as a bool tile")
        if not broadcasts(v.shape, dst.shape):
            c.fail(f"{name} {region_text(v)} has shape {v.shape}, which does not broadcast "
                   f"to the destination's {dst.shape}",
                   "give it the destination's shape, or extent 1 (or no dimension) where it "
                   "repeats, e.g. a row vector b[0:N] over a (M, N) tile")
        return v
    return c.coerce(v, want, f"{name} of Tx.{op.name}")


def normalize_axes(c: Checker, axes, ndim: int) -> tuple[int, ...]:
    """``axes=`` (an int or a tuple of ints, negative from the end) as sorted dims."""
    raw = (axes,) if isinstance(axes, int) else tuple(axes)
    out = set()
    for a in raw:
        if not isinstance(a, int) or isinstance(a, bool) or not -ndim <= a < ndim:
            c.fail(f"axes={axes!r} names axis {a!r}, but src has {ndim} dimension(s)",
                   f"use axes in {-ndim}..{ndim - 1} (e.g. axes=-1 for the last)")
        out.add(a % ndim)
    if not out:
        c.fail("axes=() reduces nothing", "name at least one axis, e.g. axes=-1")
    return tuple(sorted(out))


def reduced_shapes(shape: tuple[int, ...], axes: tuple[int, ...]):
    """The two destination shapes a reduction accepts: reduced axes dropped or kept as 1."""
    dropped = tuple(e for d, e in enumerate(shape) if d not in axes) or (1,)
    kept = tuple(1 if d in axes else e for d, e in enumerate(shape))
    return dropped, kept


def _squeeze(shape) -> tuple[int, ...]:
    return tuple(e for e in shape if e != 1)


def check_reduction(c: Checker, red: Reduction, dst: BufferRegion, src: BufferRegion,
                    axes) -> tuple[int, ...]:
    if dst.buffer.dtype != src.buffer.dtype:
        c.fail(f"dst is {dst.buffer.dtype} but src is {src.buffer.dtype}; a reduction "
               "accumulates in src's dtype",
               "convert src first with Tx.cast (e.g. into a float32 tile)")
    if src.buffer.dtype.kind not in red.kinds:
        c.fail(f"{red.name} takes integer or float tiles, not {src.buffer.dtype}")
    norm = normalize_axes(c, axes, len(src.shape))
    dropped, kept = reduced_shapes(src.shape, norm)
    if _squeeze(dst.shape) != _squeeze(dropped):
        c.fail(f"dst {region_text(dst)} has shape {dst.shape}; reducing axes {norm} of src's "
               f"{src.shape} gives {dropped} (or {kept} keeping the axes)",
               f"give dst the shape {dropped} or {kept}")
    return norm


def check_permute(c: Checker, dst: BufferRegion, src: BufferRegion) -> list:
    if dst.shape != src.shape:
        c.fail(f"dst {region_text(dst)} has shape {dst.shape} but src {region_text(src)} has "
               f"{src.shape}; permute_layout keeps the logical shape",
               "give both the same shape (only their layouts differ)")
    if dst.buffer.dtype != src.buffer.dtype:
        c.fail(f"dst is {dst.buffer.dtype} but src is {src.buffer.dtype}",
               "permute_layout moves values; convert with Tx.cast")
    return [src]
