"""copy_async -> tcgen05_cp: shared memory -> tensor memory with ``tcgen05.cp``, one thread.

PTX ISA §9.7.16.9.2 ``tcgen05.cp``: a single thread issues the copy of a shared-memory tile,
named by a shared-memory descriptor, into tensor memory; the shape and its multicast say how
many rows (lanes) of how many bits each and to which lanes each row goes
(:data:`tilewise.ptx.tcgen05.CP_SHAPES`, from CUTLASS's UTCCP traits and TIRx):

=========================  =============================================================
shape                      source row ``r`` lands in lanes (relative to the address)
=========================  =============================================================
``128x256b``, ``128x128b``  ``r``
``4x256b``                  ``32 r``
``64x128b.warpx2::02_13``   ``r`` and ``r + 64``
``64x128b.warpx2::01_23``   ``64 (r // 32) + r % 32`` and that ``+ 32``
``32x128b.warpx4``          ``r``, ``r + 32``, ``r + 64``, ``r + 96``
=========================  =============================================================

As in TIRx, the destination's layout states the multicast: a replica on ``TLane``
(``R[4 : 32@TLane]`` for ``warpx4``); the shape is never inferred beyond what the layout says.

Algorithm:

1. Accept a copy from a ``shared`` region to a ``tmem`` region of one dtype (whole bytes) and
   one shape, in thread scope with at most one thread reaching it, on a target with tcgen05;
   options ``cta_group`` (1, the default, or 2) and ``dispatch``.
2. Evaluate the tensor-memory region through its layout, replicas included: every row must sit
   in the lanes of one shape (rows = the shape's rows), at one lane offset, its columns
   consecutive cells ``TCol = col0 + j`` (``e`` elements a cell). Try the shapes in the table's
   order; a 128-row region takes ``128x256b`` when its width is a multiple of 256 bits, else
   ``128x128b``.
3. The source region, ``rows x width``, must be a canonical K-major tile for steps of the
   shape's row bits (:func:`tilewise.tile.matrix_desc.plan_operand`, the layouts the MMA
   operands use): one ``tcgen05.cp`` per step, at the step's first element (the source's
   descriptor bound once, plus the step's constant offset:
   :func:`tilewise.tile.matrix_desc.step_descriptors`) and at the destination column
   ``col0 + step * row bits / 32``.
4. No commit: completion (``T.ptx.tcgen05.commit`` to an mbarrier, then the wait) is the
   caller's; a later ``tcgen05.mma`` of the same thread is ordered after the copy by the
   tensor pipe.
"""

from __future__ import annotations

import numpy as np

from tilewise.ir.expr import Cast, IntImm, as_int
from tilewise.ir.stmt import Evaluate, seq
from tilewise.ptx import tcgen05
from tilewise.ptx.table import PTX_OPS
from tilewise.tile import options as O
from tilewise.tile import predicates as P
from tilewise.tile.matrix_desc import plan_operand, step_descriptors
from tilewise.tile.registry import DispatchFail, predicate, register_dispatch

PAIRS = (("tmem", "shared*"),)  # (dst, src)
LANES_TEXT = {"128x256b": "r", "128x128b": "r", "4x256b": "32 r",
              "64x128b.warpx2::02_13": "r and r + 64",
              "64x128b.warpx2::01_23": "64 (r // 32) + r % 32 and that + 32",
              "32x128b.warpx4": "r, r + 32, r + 64 and r + 96"}
ORDER = ("128x256b", "128x128b", "32x128b.warpx4", "64x128b.warpx2::02_13",
         "64x128b.warpx2::01_23", "4x256b")


def _same_shape(ctx):
    d, s = ctx.dst.shape, ctx.src.shape
    if d == s and len(d) == 2:
        return True
    return False, f"dst is {d} but src is {s}; tcgen05.cp copies 2-D tiles of one shape"


def _places(region):
    """Per region element (rows x cols): the sets of lanes (replicas) and the TCol."""
    b = region.buffer
    if b.layout is None:
        raise DispatchFail(f"tensor-memory buffer {b.name!r} has no layout")
    if any(as_int(x.start) is None for x in region.region):
        raise DispatchFail(f"the region of {b.name!r} starts at a run-time position; "
                           "tcgen05_cp needs constant starts")
    (r0, rows), (c0, cols) = [(as_int(x.start), x.extent) for x in region.region]
    rr, cc = np.meshgrid(np.arange(r0, r0 + rows), np.arange(c0, c0 + cols), indexing="ij")
    got = b.layout.apply_np(np.stack([rr.ravel(), cc.ravel()], 1), shape=b.shape)
    zero = np.zeros(rows * cols, np.int64)
    lane = got.get("TLane", zero).reshape(rows, cols)
    reps = sorted({rep.get("TLane", 0) for rep in b.layout.replicas()})
    if any(k != "TLane" for rep in b.layout.replicas() for k, v in rep.items() if v):
        raise DispatchFail(f"the layout {b.layout!r} of {b.name!r} replicates on an axis "
                           "other than TLane")
    return lane, reps, got.get("TCol", zero).reshape(rows, cols)


def _shape_of(region, e: int) -> tuple[str, int, int]:
    """``(shape, lane offset, first cell)`` of the destination, or DispatchFail."""
    lane, reps, tcol = _places(region)
    rows, cols = lane.shape
    if not (lane == lane[:, :1]).all():
        raise DispatchFail("a row of the destination spans several lanes")
    if not (tcol == tcol[0, 0] + np.arange(cols)).all():
        raise DispatchFail(f"the destination columns are not consecutive elements (TCol = "
                           f"col0 + j) in {region.buffer.name!r}'s layout {region.buffer.layout!r}")
    why = []
    for name in ORDER:
        s = tcgen05.CP_SHAPES[name]
        if s.rows != rows:
            continue
        want = np.array([sorted(s.lanes(r)) for r in range(rows)])
        got = np.sort(lane[:, :1] + np.array(reps)[None, :], axis=1)
        if got.shape != want.shape or not (got - want == got[0, 0] - want[0, 0]).all():
            why.append(f".{name}: row r must sit in lanes {LANES_TEXT[name]}")
            continue
        if (cols // e) % s.cols == 0 and cols % e == 0:
            return name, int(got[0, 0] - want[0, 0]), int(tcol[0, 0])
        why.append(f".{name}: the width, {cols // e} 32-bit columns, is not a multiple of "
                   f"{s.cols}")
    if not why:
        raise DispatchFail(f"the destination has {rows} rows; tcgen05.cp copies 128, 64, 32 "
                           "or 4 rows (shapes 128x256b / 128x128b, 64x128b.warpx2, "
                           "32x128b.warpx4, 4x256b)")
    raise DispatchFail("the destination layout fits no tcgen05.cp shape: " + "; ".join(why) +
                       " (a multicast is stated by a replica on TLane, e.g. R[4 : 32@TLane])")


def _emit(ctx):
    dst, src = ctx.dst, ctx.src
    bits = src.buffer.dtype.bits
    if bits not in (8, 16, 32):
        raise DispatchFail(f"{src.buffer.dtype} elements are {bits}-bit; tcgen05_cp copies "
                           "8-, 16- or 32-bit elements")
    e = 32 // bits
    name, lane0, col0 = _shape_of(dst, e)
    if col0 % e:
        raise DispatchFail(f"the destination starts at element column {col0}, inside a 32-bit "
                           "cell")
    s = tcgen05.CP_SHAPES[name]
    plan = plan_operand(src, 0, s.row_bytes * 8 // bits, False, "the source", "tcgen05.cp")
    fields = tcgen05.smem_desc_fields(plan.lbo, plan.sbo, plan.swizzle)
    addr = dst.buffer.allocated_addr
    if addr is None:
        raise DispatchFail(f"tensor-memory buffer {dst.buffer.name!r} has no allocated_addr")
    let, descs = step_descriptors(plan, fields, src.buffer)
    out = [let]
    for i, desc in enumerate(descs):
        off = tcgen05.address(lane0, col0 // e + i * s.cols)
        taddr = addr + Cast(addr.dtype, IntImm(off)) if off else addr
        call = PTX_OPS["ptx.tcgen05.cp"].call(
            [taddr, desc, name, int(ctx.option("cta_group", 1))], {}, span=ctx.span)
        out.append(Evaluate(call, span=ctx.span))
    ctx.info.append(f"{len(descs)} x tcgen05.cp.{name} (lanes +{lane0}, column {col0 // e}; "
                    f"source K-major, swizzle {plan.swizzle or 'none'})")
    return seq(*out)


@register_dispatch("copy_async", "cuda", variant="tcgen05_cp", priority=13,
                   options=(O.CTA_GROUP,),
                   declines={"*": "option {option}= does not apply to tcgen05.cp (completion "
                             "is T.ptx.tcgen05.commit, issued by the caller)"}, when=[
    predicate("target has tcgen05", P.has_feature, feature="tcgen05", what="tcgen05.cp"),
    predicate("operands are regions", P.operands_are_regions),
    predicate("shared -> tmem", P.direction, pairs=PAIRS),
    predicate("whole tiles", P.whole_tiles),
    predicate("scope", P.scope_in, scopes=("thread",)),
    predicate("one issuing thread", P.one_issuer, what="tcgen05.cp"),
    predicate("same dtype", P.same_dtype),
    predicate("same shape", _same_shape),
])
def tcgen05_cp(ctx):
    return _emit(ctx)
