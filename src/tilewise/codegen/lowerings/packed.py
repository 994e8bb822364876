"""Lowerings of the warp shuffle, the packed two-lane arithmetic and the packing
conversions (facts in :mod:`tilewise.ptx.packed`).

* ``shfl.sync``: ``llvm.nvvm.shfl.sync.<mode>.{f32,i32}(mask, value, b, c)`` (LLVM 22,
  every target); ``c`` defaults to 0 for ``up`` and 31 otherwise (the whole warp).
* ``vote.sync``: ``llvm.nvvm.vote.{any,all,uni}.sync(mask, i1)`` and
  ``llvm.nvvm.vote.ballot.sync(mask, i1) -> i32``.
* packed arithmetic: the register is bitcast to a two-element vector and the operator of
  the arithmetic table (:mod:`tilewise.ir.alu`) is applied to the vector (``fma``:
  ``llvm.fma``); LLVM selects ``add.rn.f16x2`` / ``mul.rn.bf16x2`` / ``add.rn.f32x2``
  (sm_100) from vector arithmetic, never contracting it.
* ``cvt.rn.{f16x2,bf16x2}.f32``: ``fptrunc <2 x float> <b, a>`` (element 0 is the low half).
"""

from __future__ import annotations

from llvmlite import ir

from ...ir import alu
from ...ir import dtype as dt
from ...ir.expr import BinOp, Var
from ...ptx.packed import CVT_PACK, PACKED
from .. import types as ty
from ..registry import lowering
from .args import i32


@lowering("ptx.shfl_sync")
def _shfl(em, c):
    mode, value, b, clamp, mask = c.args
    t = value.dtype
    suffix = "f32" if t.is_float else "i32"
    lane_c = i32(0 if mode.value == "up" else 31) if clamp is None else em.typed(clamp, dt.int32)
    member = i32(-1) if mask is None else em.typed(mask, dt.uint32)
    v = em.expr(value)
    return em.call(f"llvm.nvvm.shfl.sync.{mode.value}.{suffix}", v.type,
                   [member, v, em.typed(b, dt.int32), lane_c])


@lowering("ptx.vote_sync")
def _vote(em, c):
    mode, pred, mask = c.args
    member = i32(-1) if mask is None else em.typed(mask, dt.uint32)
    p = em.typed(pred, dt.bool_)
    if mode.value == "ballot":
        return em.call("llvm.nvvm.vote.ballot.sync", ir.IntType(32), [member, p])
    return em.call(f"llvm.nvvm.vote.{mode.value}.sync", ir.IntType(1), [member, p])


class _Pair(ir.VectorType):
    """``<2 x T>`` with the name overloaded intrinsics take (``llvm.minnum.v2f16``)."""

    @property
    def intrinsic_name(self) -> str:
        return f"v{self.count}{self.element.intrinsic_name}"


@lowering("ptx.fma.rn")
def _fma_rn(em, c):
    t = c.args[0].dtype
    xs = [em.typed(a, t) for a in c.args]
    return em.llvm_intrinsic("llvm.fma", ty.value_type(t), xs)


def _vector(lanes) -> ir.VectorType:
    return _Pair(ty.value_type(lanes.elem), 2)


def _packed(em, c):
    p = PACKED[c.op]
    vt = _vector(p.lanes)
    xs = [em.b.bitcast(em.typed(a, p.lanes.word), vt) for a in c.args]
    if p.alu == "fma":
        r = em.llvm_intrinsic("llvm.fma", vt, xs)
    else:
        node = BinOp(p.alu, Var("a", p.lanes.elem), Var("b", p.lanes.elem))
        r = alu.llvm_binary(em, node, xs[0], xs[1])
    return em.b.bitcast(r, ty.value_type(p.lanes.word))


lowering(*sorted(PACKED))(_packed)


def _cvt_pack(em, c):
    lanes = CVT_PACK[c.op]
    a, b = (em.typed(x, dt.float32) for x in c.args)
    vec = ir.VectorType(ty.F32, 2)
    v = em.b.insert_element(ir.Constant(vec, ir.Undefined), b, i32(0))
    v = em.b.insert_element(v, a, i32(1))
    return em.b.bitcast(em.b.fptrunc(v, _vector(lanes)), ty.value_type(lanes.word))


lowering(*sorted(CVT_PACK))(_cvt_pack)

