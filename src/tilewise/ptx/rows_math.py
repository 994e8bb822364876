"""The rows of math (:mod:`tilewise.ptx.table`): packed two-lane arithmetic and
conversions, the correctly rounded and the approximate float instructions (facts in
:mod:`tilewise.ptx.packed`), and the functions lowered through libdevice.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir.dtype import DataType
from . import packed
from .op import PtxOp
from .op import param as _p

ROWS: list[PtxOp] = []


# ---- packed two-lane arithmetic and conversions, approximate math (facts in ptx/packed.py)
def _typed(*names: str, t: DataType):
    def check(values) -> str | None:
        for n in names:
            if values[n].dtype != t:
                return (f"operand {n!r} must be a {t} value, got {values[n].dtype}"
                        + (" (a packed register: a uint view of the data)" if t.is_int else
                           f' (convert it with T.cast(x, "{t}"))'))
        return None
    return check


for _pk in packed.PACKED.values():
    _names = "abc"[:_pk.arity]
    _w = _pk.lanes.word
    ROWS.append(PtxOp(_pk.name, tuple(_p(n, dtype=_w) for n in _names), _pk.ptx,
                      _pk.lanes.feature, returns=_w, check=_typed(*_names, t=_w),
                      doc=f"{_pk.op} of two {_pk.lanes.elem} lanes packed in a {_w} "
                          "(lane 0 in the low bits), each rounded as the scalar instruction"))
for _name, _lanes in packed.CVT_PACK.items():
    ROWS.append(PtxOp(_name, (_p("a", dtype=dt.float32), _p("b", dtype=dt.float32)),
                      f"cvt.rn.{_lanes.name}.f32 d, a, b", None, returns=_lanes.word,
                      check=_typed("a", "b", t=dt.float32),
                      doc=f"two float32 values rounded to {_lanes.elem} and packed: a in the "
                          "upper half, b in the lower"))


def _same_float(values) -> str | None:
    t = values["a"].dtype
    if t.name not in ("float16", "bfloat16", "float32"):
        return f"fma.rn takes float16, bfloat16 or float32 values, got {t}"
    bad = [n for n in "bc" if values[n].dtype != t]
    return f"operand {bad[0]!r} must be {t} like 'a', got {values[bad[0]].dtype}" if bad \
        else None


ROWS += [
    PtxOp("ptx.fma.rn", tuple(_p(n, dtype=dt.float32) for n in "abc"),
          "fma.rn.<type> d, a, b, c", None,
          result=lambda v: v["a"].dtype, check=_same_float,
          doc="a * b + c rounded once, in the operands' type (float16, bfloat16, float32)"),
    PtxOp("ptx.sqrt.rn", (_p("x", dtype=dt.float32),), "sqrt.rn.f32 d, x", None,
          returns=dt.float32, llvm="llvm.nvvm.sqrt.rn.f", check=_typed("x", t=dt.float32),
          doc="the correctly rounded square root"),
]
for _ap in packed.APPROX.values():
    ROWS.append(PtxOp(_ap.name, (_p("x", dtype=dt.float32),), f"{_ap.ptx} d, x", None,
                      returns=dt.float32, llvm=_ap.llvm, check=_typed("x", t=dt.float32),
                      doc=f"{_ap.doc}; {_ap.bound} (PTX ISA)"))

# ---- math, lowered through libdevice (__nv_<name>f / __nv_<name>)
_MATH1 = ("exp", "exp2", "log", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
          "floor", "ceil", "fabs", "erf", "trunc", "round")
ROWS += [PtxOp(n, (_p("x"),), f"__nv_{n}", math=True, doc=f"libdevice {n}") for n in _MATH1]
ROWS += [PtxOp(n, (_p("x"), _p("y")), f"__nv_{n}", math=True, doc=f"libdevice {n}")
         for n in ("pow", "atan2", "fmod")]
ROWS += [PtxOp("fma", (_p("a"), _p("b"), _p("c")), "__nv_fma", math=True)]
