"""The ``[outer, threads, vec]`` partition shared by the copy variants (ldgsts, gmem_smem).

A tile of ``N`` elements copied by the ``T`` threads of a scope is cut into ``outer``
steps of ``T`` vectors of ``vec`` elements: element at position
``p = f * (T * vec) + t * vec + v`` (step ``f``, thread ``t``, lane ``v`` of the vector).

* **Order.** Positions follow the *driving* side's memory order (the global side of a
  global<->shared copy): the region's dimensions are ordered by that side's stride,
  outermost = largest; if that order does not walk memory monotonically, the region's
  own row-major order is used.
* **Vector width.** The widest candidate (in bytes, from the variant) such that
  ``N % vec == 0`` and, on *both* sides, every vector is contiguous in memory and its
  first byte is aligned to the vector size (``outer = ceil(N / (T * vec))``, the last step
  guarded when partial; a partial tile's vectors must not straddle its bounds, and
  symbolic strides become run-time conditions: :mod:`.clip`). Alignment is that of the
  byte offset from the buffer base, and base buffers are **16-byte aligned by contract**
  (the runtime checks data pointers; shared allocations are aligned by the code
  generator). A symbolic region
  start contributes the largest number known to divide its element offset
  (``known_multiple``: sums, products, shifts, ``//`` and ``%`` by constants). Swizzled
  shared layouts are evaluated exactly (a swizzle keeps aligned 16-byte chunks whole).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..ir.expr import BufferRegion, Expr, IntImm, Var, as_int, binop, cmp
from ..ir.stmt import For, IfThenElse, Stmt
from ..layout.axes import rowmajor
from ..passes.indexing import memory_offset
from ..passes.simplify import simplify_expr
from ..ir.analysis import affine, known_multiple
from . import clip
from .clip import STAND_IN, stand_in_strides
from .registry import DispatchFail

BASE_ALIGN = 16  # bytes; see the module docstring


def region_text(r: BufferRegion) -> str:
    from ..ir.printer import Printer

    return Printer().region(r)


@dataclass
class Side:
    """One operand of a copy: its region, element offsets and alignment facts."""

    role: str  # "dst" | "src"
    region: BufferRegion
    stand_in: bool = False  # symbolic strides planned as clip.STAND_IN (checked at run time)

    @property
    def buffer(self):
        return self.region.buffer

    @property
    def elem_bytes(self) -> int:
        return max(self.buffer.dtype.bits // 8, 1)

    @property
    def text(self) -> str:
        return f"{self.role} {region_text(self.region)} ({self.buffer.scope})"

    def const_starts(self) -> list[int]:
        out = []
        for r in self.region.region:
            f = affine(r.start)
            out.append(f.get(1, 0) if f is not None else 0)
        return out

    def offsets(self, rel: np.ndarray) -> np.ndarray:
        """Element offsets of region-relative coordinates ``rel`` (n, ndim), relative to the
        offset of the region's symbolic start."""
        coords = rel + np.asarray(self.const_starts(), np.int64)
        layout = self.buffer.layout
        if layout is None:
            return (coords * np.asarray(self.strides(), np.int64)).sum(axis=1)
        return layout.apply_np(coords, shape=self.buffer.shape)["m"]

    def strides(self) -> list[int]:
        """Element strides of the region's dimensions, known at compile time (DispatchFail
        naming the size when a dimension the region spans has a symbolic stride)."""
        out = []
        for d, (st, r) in enumerate(zip(self.buffer.elem_strides(), self.region.region)):
            if not isinstance(st, int) and as_int(st) is None:
                if self.stand_in:
                    out.append(STAND_IN)
                    continue
                if r.extent > 1:
                    raise DispatchFail(f"{self.text}: dimension {d} of {self.buffer.name!r} "
                                       f"has the symbolic stride {_text(st)}, and this variant "
                                       "needs the strides of the tile at compile time")
                st = 0
            out.append(as_int(st))
        return out

    def alignment(self, starts: np.ndarray) -> int:
        """Bytes every one of the element offsets ``starts`` is known to be aligned to
        (their constant part exactly, the symbolic region start by ``symbolic_align``)."""
        return math.gcd(self.symbolic_align(), *(int(x) * self.elem_bytes for x in starts))

    def symbolic_align(self) -> int:
        """Alignment in bytes contributed by symbolic region starts (BASE_ALIGN if none)."""
        starts = [r.start for r in self.region.region]
        if all(as_int(s) is not None for s in starts):
            return BASE_ALIGN
        strides = self.buffer.strides
        if self.stand_in and self.buffer.layout is None:
            strides = [IntImm(s) for s in stand_in_strides(self.buffer)]
        off = simplify_expr(memory_offset(self.buffer.layout, self.buffer.shape, starts,
                                          strides=strides))
        k = known_multiple(off)
        return BASE_ALIGN if k == 0 else math.gcd(k * self.elem_bytes, BASE_ALIGN)


def _text(e) -> str:
    from ..ir.printer import script

    return script(e)


def unravel(p: np.ndarray, extents: Sequence[int]) -> np.ndarray:
    return np.stack(np.unravel_index(p, tuple(extents)), axis=1).astype(np.int64)


def drive_order(side: Side) -> tuple[int, ...]:
    """Region dimensions outermost-first in ``side``'s memory order (see module doc)."""
    shape = side.region.shape
    nd = len(shape)
    ident = tuple(range(nd))
    base = side.offsets(np.zeros((1, nd), np.int64))[0]
    strides = []
    for d in range(nd):
        e = np.zeros((1, nd), np.int64)
        e[0, d] = 1 if shape[d] > 1 else 0
        strides.append(int(side.offsets(e)[0] - base) if shape[d] > 1 else 0)
    perm = tuple(sorted(ident, key=lambda d: -strides[d]))
    if perm == ident:
        return ident
    rel = unravel(np.arange(side.region.size), [shape[d] for d in perm])[:, np.argsort(perm)]
    return perm if (np.diff(side.offsets(rel)) > 0).all() else ident


@dataclass
class Plan:
    """The chosen partition: position ``f*threads*vec + t*vec`` of ``order``. ``n`` elements
    in all: when ``threads * vec`` does not divide it, the last step is guarded
    (``p < n``). ``runtime``: conditions (symbolic strides and extents multiples of
    ``vec``) under which this plan is valid, ``fallback`` the plan without them."""

    vec: int
    threads: int
    outer: int
    order: tuple[int, ...]
    shape: tuple[int, ...]
    elem_bytes: int
    n: int = 0
    runtime: tuple = ()
    fallback: Plan | None = None

    @property
    def vec_bytes(self) -> int:
        return self.vec * self.elem_bytes

    @property
    def tail(self) -> bool:
        return self.n % (self.threads * self.vec) != 0

    def describe(self) -> str:
        text = (f"vec {self.vec} ({self.vec_bytes * 8} bits), {self.threads} threads, "
                f"outer {self.outer}" + (", last step guarded" if self.tail else ""))
        if self.fallback is not None:
            text += (f"; when the run-time strides are not multiples of {self.vec}: vec "
                     f"{self.fallback.vec}")
        return text

    def rel_coords(self, p: Expr) -> list[Expr]:
        """Region-relative coordinate expressions of position ``p``."""
        out: list[Expr | None] = [None] * len(self.shape)
        inner = 1
        for k in range(len(self.order) - 1, -1, -1):
            d = self.order[k]
            c = binop("//", p, inner) if inner != 1 else p
            out[d] = binop("%", c, self.shape[d]) if k != 0 else c
            inner *= self.shape[d]
        return out

    def positions(self) -> np.ndarray:
        """(outer, threads) positions of every vector start, for analysis (positions at or
        past ``n`` are guarded off)."""
        f = np.arange(self.outer)[:, None] * (self.threads * self.vec)
        return f + np.arange(self.threads)[None, :] * self.vec


def _side_reason(side: Side, offs: np.ndarray, vec: int) -> str | None:
    """Why ``vec``-element vectors fail on ``side`` (None when they fit)."""
    runs = offs.reshape(-1, vec)
    if (runs - runs[:, :1] != np.arange(vec)).any():
        return (f"{side.text} is not contiguous in runs of {vec} elements "
                f"({vec * side.elem_bytes} bytes) in the copy order")
    align = side.alignment(runs[:, 0])
    need = vec * side.elem_bytes
    if align % need:
        return (f"{side.text} is only {align}-byte aligned; a {need}-byte vector needs "
                f"{need}-byte alignment")
    return None


def plan_partition(dst: Side, src: Side, drive: Side, threads: int,
                   vec_bytes: Sequence[int], guards: dict | None = None,
                   fallback_bytes: Sequence[int] = ()) -> Plan:
    """The widest legal partition, or DispatchFail naming the rule that failed.

    ``guards``: the guarded dimensions of each side (``{"dst": dims, "src": dims}``,
    :func:`tilewise.tile.clip.guarded_dims`); a vector never straddles their bounds. With a
    symbolic stride (sides with ``stand_in``) the widest plan may hold only at run time;
    the plan then carries its conditions and the widest plan that needs none, among
    ``vec_bytes`` and then ``fallback_bytes`` (sizes the variant can only copy another way:
    ldgsts's element copies)."""
    shape = dst.region.shape
    n = dst.region.size
    if src.region.size != n:
        raise DispatchFail(f"{dst.text} has {n} elements but {src.text} has "
                           f"{src.region.size}")
    guards = guards or {}
    order = drive_order(drive) if shape == src.region.shape else tuple(range(len(shape)))
    rel = unravel(np.arange(n), [shape[d] for d in order])[:, np.argsort(order)]
    srel = _src_rel(src, rel, shape)
    offs = {"dst": dst.offsets(rel), "src": src.offsets(srel)}
    eb = dst.elem_bytes
    reason, best = None, None
    for nbytes in sorted(vec_bytes, reverse=True):
        vec = nbytes // eb
        if vec < 1 or nbytes % eb:
            reason = reason or f"a {nbytes}-byte vector is not a whole number of elements"
            continue
        if n % vec:
            reason = f"the tile has {n} elements, not a multiple of {vec} ({nbytes} bytes)"
            continue
        coords = {"dst": rel.reshape(-1, vec, rel.shape[-1]),
                  "src": srel.reshape(-1, vec, srel.shape[-1])}
        reason = (_side_reason(dst, offs["dst"], vec) or _side_reason(src, offs["src"], vec)
                  or clip.vector_reason(dst.region, guards.get("dst", ()), coords["dst"], vec)
                  or clip.vector_reason(src.region, guards.get("src", ()), coords["src"], vec))
        if reason is not None:
            continue
        runtime = tuple(clip.runtime_conditions(s.region, guards.get(k, ()), coords[k], vec)
                        for k, s in (("dst", dst), ("src", src)) if s.stand_in)
        runtime = tuple(c for cs in runtime for c in cs)
        plan = Plan(vec, threads, -(-n // (threads * vec)), order, shape, eb, n, runtime)
        if not runtime:
            if best is None:
                return plan
            best.fallback = plan
            return best
        best = best or plan
    if best is not None and fallback_bytes:
        try:
            best.fallback = plan_partition(dst, src, drive, threads, fallback_bytes, guards)
        except DispatchFail:
            pass
        if best.fallback is not None and not best.fallback.runtime:
            return best
    if best is not None:
        raise DispatchFail(f"vectors of {best.vec_bytes} bytes fit only when the run-time "
                           f"sizes (strides, extents) are multiples of {best.vec} elements, "
                           "and no narrower vector this variant has fits otherwise"
                           + (f" ({reason})" if reason else ""))
    raise DispatchFail(reason or "no vector width fits")


def _src_rel(src: Side, rel: np.ndarray, dst_shape) -> np.ndarray:
    """Source coordinates of the same elements (row-major correspondence when the two
    regions have different shapes of one size)."""
    if src.region.shape == tuple(dst_shape):
        return rel
    lin = np.ravel_multi_index(tuple(rel.T), tuple(dst_shape))
    return unravel(lin, src.region.shape)


def abs_coords(side: Side, plan: Plan, p: Expr) -> tuple[Expr, ...]:
    rel = plan.rel_coords(p)
    if side.region.shape != plan.shape:
        lin = sum((c * s for c, s in zip(rel, rowmajor(plan.shape))), IntImm(0))
        rel = Plan(1, 1, 1, tuple(range(len(side.region.shape))), side.region.shape,
                   1).rel_coords(lin)
    return tuple(r.start + c for r, c in zip(side.region.region, rel))


def emit(plan: Plan, ctx, dst: Side, src: Side, make: Callable[..., Stmt],
         source_guard_operand: bool = False, tid: Expr | None = None) -> Stmt:
    """``make(plan, dst_coords, src_coords)`` for this thread's vector of every outer step,
    inside ``for f in range(outer)`` when ``outer > 1``; with run-time conditions
    (``plan.runtime``) ``if conditions: <this> else: <the same with plan.fallback>``.

    Guards per vector (:mod:`tilewise.tile.clip`): past the tile's end (``p < n``) and past
    the end of the destination's buffer nothing is written; past the source's, ``fill=``
    (default 0) is stored instead, as a TMA load fills out-of-bounds elements (element
    stores; or, with ``source_guard_operand``, ``make(plan, dc, sc, src_ok)`` builds an
    instruction that zero-fills by itself where ``src_ok`` is false, such as cp.async
    without source bytes)."""
    guards = {"dst": clip.guarded_dims(dst.region, ctx), "src": clip.guarded_dims(src.region, ctx)}
    tid = ctx.scope_tid if tid is None else tid
    body = _emit_plan(plan, ctx, tid, dst, src, make, source_guard_operand, guards)
    if plan.runtime:
        other = _emit_plan(plan.fallback, ctx, tid, dst, src, make, source_guard_operand,
                           guards)
        body = IfThenElse(clip.conjunction(plan.runtime), body, other)
    return body


def _emit_plan(plan: Plan, ctx, tid, dst: Side, src: Side, make, source_guard_operand: bool,
               guards: dict) -> Stmt:
    f = Var("f")
    step = f if plan.outer > 1 else IntImm(0)
    p = step * (plan.threads * plan.vec) + tid * plan.vec
    dc, sc = abs_coords(dst, plan, p), abs_coords(src, plan, p)
    src_ok = clip.in_range(src.region, guards["src"], sc, ctx)
    if source_guard_operand:
        body = make(plan, dc, sc, src_ok)
    else:
        body = make(plan, dc, sc)
        if src_ok is not None:
            body = IfThenElse(src_ok, body, _fills(ctx, dst, plan, p))
    tail = cmp("<", p, plan.n) if plan.tail else None
    cond = clip.conjunction([tail, clip.in_range(dst.region, guards["dst"], dc, ctx)])
    if cond is not None:
        body = IfThenElse(cond, body)
    if plan.outer == 1:
        return body
    return For(f, IntImm(0), IntImm(plan.outer), "serial", body)


def guarded(ctx, dst: Side, src: Side | None, dc, sc, body: Stmt, zero) -> Stmt:
    """``body`` under the bounds of partial tiles (:mod:`tilewise.tile.clip`): skipped where
    the destination is out of bounds, ``zero()`` where only the source is (no source check
    when ``src`` is None)."""
    src_ok = (clip.in_range(src.region, clip.guarded_dims(src.region, ctx), sc, ctx)
              if src is not None else None)
    dst_ok = clip.in_range(dst.region, clip.guarded_dims(dst.region, ctx), dc, ctx)
    if src_ok is not None:
        body = IfThenElse(src_ok, body, zero())
    if dst_ok is not None:
        body = IfThenElse(dst_ok, body)
    return body


UNROLLED_FILLS = 16  # a longer vector (a bulk copy's thousands of elements) fills in a loop


def _fills(ctx, dst: Side, plan: Plan, p: Expr) -> Stmt:
    """Element stores of ``fill=`` (default 0) over the destination vector at ``p``: one per
    element up to UNROLLED_FILLS elements, else a loop over them (a bulk copy's vector is
    thousands of elements, which unrolled made the IR, the PTX and the lowering many times
    larger for a branch that may never run)."""
    from ..ir.stmt import BufferStore, seq

    v = clip.fill_value(ctx, dst.buffer.dtype)
    if plan.vec <= UNROLLED_FILLS:
        return seq(*(BufferStore(dst.buffer, abs_coords(dst, plan, p + i), v)
                     for i in range(plan.vec)))
    i = Var("i")
    return For(i, IntImm(0), IntImm(plan.vec), "serial",
               BufferStore(dst.buffer, abs_coords(dst, plan, p + i), v))
