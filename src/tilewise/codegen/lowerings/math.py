"""Math through libdevice: a call of ``__nv_<name>f`` for float32, ``__nv_<name>`` for
float64; float16 and bfloat16 compute in float32 and round back. The functions are linked
in when PTX is emitted (:mod:`tilewise.codegen.libdevice`), only those the kernel calls."""

from __future__ import annotations

from ...ir import dtype as dt
from ...ptx.table import MATH_OPS
from .. import types as ty
from ..registry import lowering


def libdevice_name(op: str, t) -> str:
    return f"__nv_{op}" if t.bits == 64 else f"__nv_{op}f"


def _math(em, c):
    t = c.args[0].dtype if c.args else dt.float32
    if not t.is_float or ty.is_opaque_float(t):
        raise em.error(f"T.{c.op} needs floating-point operands, got {t}", c,
                       hint="cast the operand with T.cast(x, \"float32\")")
    work = dt.DTYPES["float64"] if t.bits == 64 else dt.float32
    args = [em.typed(a, work) for a in c.args]
    name = libdevice_name(c.op, work)
    em.libdevice.add(name)
    v = em.call(name, ty.value_type(work), args)
    return em.b.fptrunc(v, ty.value_type(t)) if work != t else v


lowering(*sorted(MATH_OPS))(_math)
