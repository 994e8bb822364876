"""The ``[outer, threads, vec]`` partition shared by the copy variants (ldgsts, gmem_smem).

A tile of ``N`` elements copied by the ``T`` threads of a scope is cut into ``outer``
steps of ``T`` vectors of ``vec`` elements: element at position
``p = f * (T * vec) + t * vec + v`` (step ``f``, thread ``t``, lane ``v`` of the vector).

* **Order.** Positions follow the *driving* side's memory order (the global side of a
  global<->shared copy): the region's dimensions are ordered by that side's stride,
  outermost = largest; if that order does not walk memory monotonically, the region's
  own row-major order is used.
* **Vector width.** The widest candidate (in bytes, from the variant) such that
  ``N % (T * vec) == 0`` and, on *both* sides, every vector is contiguous in memory and
  its first byte is aligned to the vector size. Alignment is that of the byte offset from
  the buffer base, and base buffers are **16-byte aligned by contract** (the runtime checks
  data pointers; shared allocations are aligned by the code generator). A symbolic region
  start contributes the largest number known to divide its element offset
  (``known_multiple``: sums, products, shifts, ``//`` and ``%`` by constants). Swizzled
  shared layouts are evaluated exactly (a swizzle keeps aligned 16-byte chunks whole).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..ir.expr import BufferRegion, Expr, IntImm, Var, as_int, binop
from ..ir.stmt import For, Stmt
from ..passes.indexing import memory_offset
from ..passes.simplify import simplify_expr
from ..script.analysis import affine, known_multiple
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
        """Element offsets of region-relative coordinates ``rel`` (n, ndim)."""
        coords = rel + np.asarray(self.const_starts(), np.int64)
        layout = self.buffer.layout
        if layout is None:
            strides = np.asarray(_row_major(self.buffer.shape), np.int64)
            return (coords * strides).sum(axis=1)
        return layout.apply_np(coords, shape=self.buffer.shape)["m"]

    def alignment(self, starts: np.ndarray) -> int:
        """Bytes every one of the element offsets ``starts`` is known to be aligned to
        (their constant part exactly, the symbolic region start by ``symbolic_align``)."""
        return math.gcd(self.symbolic_align(), *(int(x) * self.elem_bytes for x in starts))

    def symbolic_align(self) -> int:
        """Alignment in bytes contributed by symbolic region starts (BASE_ALIGN if none)."""
        starts = [r.start for r in self.region.region]
        if all(as_int(s) is not None for s in starts):
            return BASE_ALIGN
        off = simplify_expr(memory_offset(self.buffer.layout, self.buffer.shape, starts))
        k = known_multiple(off)
        return BASE_ALIGN if k == 0 else math.gcd(k * self.elem_bytes, BASE_ALIGN)


def _row_major(shape: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for e in reversed(shape):
        out.append(acc)
        acc *= e
    return out[::-1]


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
    """The chosen partition: position ``f*threads*vec + t*vec`` of ``order``."""

    vec: int
    threads: int
    outer: int
    order: tuple[int, ...]
    shape: tuple[int, ...]
    elem_bytes: int

    @property
    def vec_bytes(self) -> int:
        return self.vec * self.elem_bytes

    def describe(self) -> str:
        return (f"vec {self.vec} ({self.vec_bytes * 8} bits), {self.threads} threads, "
                f"outer {self.outer}")

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
        """(outer, threads) positions of every vector start, for analysis."""
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
                   vec_bytes: Sequence[int]) -> Plan:
    """The widest legal partition, or DispatchFail naming the rule that failed."""
    shape = dst.region.shape
    n = dst.region.size
    if src.region.size != n:
        raise DispatchFail(f"{dst.text} has {n} elements but {src.text} has "
                           f"{src.region.size}")
    if n % threads:
        raise DispatchFail(f"the tile has {n} elements, not a multiple of the {threads} "
                           "threads of the scope")
    order = drive_order(drive) if shape == src.region.shape else tuple(range(len(shape)))
    rel = unravel(np.arange(n), [shape[d] for d in order])[:, np.argsort(order)]
    offs = {"dst": dst.offsets(rel), "src": src.offsets(_src_rel(src, rel, shape))}
    eb = dst.elem_bytes
    reason = None
    for nbytes in sorted(vec_bytes, reverse=True):
        vec = nbytes // eb
        if vec < 1 or nbytes % eb:
            reason = reason or f"a {nbytes}-byte vector is not a whole number of elements"
            continue
        if n % (threads * vec):
            reason = (f"the tile has {n} elements, not a multiple of {threads} threads x "
                      f"{vec} elements ({nbytes} bytes)")
            continue
        reason = _side_reason(dst, offs["dst"], vec) or _side_reason(src, offs["src"], vec)
        if reason is None:
            return Plan(vec, threads, n // (threads * vec), order, shape, eb)
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
        lin = sum((c * s for c, s in zip(rel, _row_major(plan.shape))), IntImm(0))
        rel = Plan(1, 1, 1, tuple(range(len(side.region.shape))), side.region.shape,
                   1).rel_coords(lin)
    return tuple(r.start + c for r, c in zip(side.region.region, rel))


def emit(plan: Plan, scope_tid: Expr, dst: Side, src: Side,
         make: Callable[[tuple[Expr, ...], tuple[Expr, ...]], Stmt]) -> Stmt:
    """``make(dst_coords, src_coords)`` for this thread's vector of every outer step,
    inside ``for f in range(outer)`` when ``outer > 1``."""
    f = Var("f")
    step = f if plan.outer > 1 else IntImm(0)
    p = step * (plan.threads * plan.vec) + scope_tid * plan.vec
    body = make(abs_coords(dst, plan, p), abs_coords(src, plan, p))
    if plan.outer == 1:
        return body
    return For(f, IntImm(0), IntImm(plan.outer), "serial", body)
