"""The box planner of the ``tma`` variant: which tensor map describes the global array, and
which boxes, written where in shared memory, make up the tile.

A TMA copy moves one *box* of the tensor map: ``box[0] x box[1] x ...`` elements at tensor
coordinates ``c`` (innermost first), written to shared memory **densely, box-linear order**
from the destination address, and swizzled by the absolute shared address (PTX ISA §5.5;
ptx-semantics.md §5). A tilewise shared layout with the same swizzle applies it to the
element offset relative to a base aligned to the swizzle repeat; the two agree whenever
the box's elements lie at consecutive *unswizzled* offsets. So the planner:

1. Takes the tensor map straight from the global buffer: one dimension per buffer
   dimension (at most 5), innermost first, extents and element strides as the buffer
   declares them (symbolic sizes are evaluated at launch). The innermost dimension must be
   contiguous; a stride known at compile time must be a multiple of 16 bytes (a symbolic
   one is checked at launch).
2. Computes, for every element of the global region in row-major order, the unswizzled
   shared element offset it goes to (regions of different shapes correspond in row-major
   order, as for every copy), with the layout evaluated exactly.
3. Chooses the box: for each candidate inner extent (a divisor of the region's inner
   extent, at most 256 elements, a multiple of 16 bytes and, with a swizzle, at most the
   swizzle span), grows the outer box dimensions greedily from the inside out, each to the
   largest divisor of the region's extent (at most 256) that keeps every box dense in
   shared memory. The candidate with the most elements per box wins: fewest copies.
4. Tiles the region with that box: one copy per box, at the region's start plus the box's
   origin; each box's shared destination must be 128-byte aligned.

Every refusal is a :class:`DispatchFail` naming the rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tilewise.ir.expr import as_int
from tilewise.ptx import tma
from tilewise.tile.partition import Side, unravel
from tilewise.tile.registry import DispatchFail

DST_ALIGN = 128  # bytes: the CUDA guide's alignment of a TMA shared destination


@dataclass(frozen=True)
class Issue:
    """One box copy: its first element's unswizzled shared offset (elements, relative to the
    region's start) and its origin in region coordinates (per buffer dimension)."""

    shared_off: int
    origin: tuple[int, ...]


@dataclass(frozen=True)
class BoxPlan:
    box: tuple[int, ...]  # per global buffer dimension, outermost first
    issues: tuple[Issue, ...]


def global_strides(side: Side) -> tuple:
    """Element strides of the global buffer's dimensions (ints or size expressions); a
    global layout must be one memory stride per dimension."""
    buf = side.buffer
    layout = buf.layout
    if layout is None:
        return tuple(buf.elem_strides())
    iters = [it for it in layout.canonicalize().shard]
    shape = tuple(buf.shape)
    if (len(iters) != len(shape) or any(it.axis.name != "m" for it in iters)
            or tuple(it.extent for it in iters) != shape or layout.swizzling is not None):
        raise DispatchFail(f"the layout {layout!r} of {buf.name!r} is not one memory stride "
                           "per dimension; a tensor map describes strided arrays only")
    return tuple(it.stride for it in iters)


def check_global(side: Side, strides: tuple) -> None:
    """The tensor-map rules on the global buffer known at compile time."""
    buf, eb = side.buffer, side.elem_bytes
    n = len(buf.shape)
    if n > tma.MAX_RANK:
        raise DispatchFail(f"{buf.name!r} has {n} dimensions; a tensor map has at most "
                           f"{tma.MAX_RANK}")
    inner = as_int(strides[-1])
    if inner != 1:
        raise DispatchFail(f"the innermost dimension of {buf.name!r} has stride "
                           f"{_text(strides[-1])}; TMA reads the innermost dimension "
                           "contiguously")
    for d, st in enumerate(strides[:-1]):
        v = as_int(st)
        if v is not None and (v * eb) % tma.ALIGN:
            raise DispatchFail(f"the stride of dimension {d} of {buf.name!r} is {v * eb} bytes, "
                               f"not a multiple of {tma.ALIGN}; a tensor map needs 16-byte "
                               "strides (pad the rows)")


def _text(e) -> str:
    from tilewise.ir.printer import script

    return str(e) if isinstance(e, int) else script(e)


def shared_offsets(g: Side, s: Side) -> np.ndarray:
    """Unswizzled shared element offsets of the global region's elements (row-major order),
    shaped like the global region, relative to the shared region's symbolic start."""
    n = g.region.size
    rel = unravel(np.arange(n), s.region.shape)
    coords = rel + np.asarray(s.const_starts(), np.int64)
    layout = s.buffer.layout
    if layout is None:
        offs = (coords * np.asarray(s.strides(), np.int64)).sum(axis=1)
    else:
        offs = layout.unswizzled().apply_np(coords, shape=s.buffer.shape)["m"]
    return np.asarray(offs, np.int64).reshape(g.region.shape)


def _boxes(offs: np.ndarray, box: tuple[int, ...]) -> np.ndarray:
    """(boxes, elements per box) offsets of the tiling of ``offs`` by ``box``."""
    grid = [e // b for e, b in zip(offs.shape, box)]
    split = offs.reshape([x for g, b in zip(grid, box) for x in (g, b)])
    nd = len(box)
    order = [2 * i for i in range(nd)] + [2 * i + 1 for i in range(nd)]
    return split.transpose(order).reshape(math.prod(grid), math.prod(box))


def _dense(offs: np.ndarray, box: tuple[int, ...]) -> bool:
    per = _boxes(offs, box)
    return bool((per - per[:, :1] == np.arange(per.shape[1])).all())


def _divisors(n: int, most: int) -> list[int]:
    return [d for d in range(min(n, most), 0, -1) if n % d == 0]


def _inner_candidates(extent: int, eb: int, swizzle: int) -> list[int]:
    most = min(tma.MAX_BOX, swizzle // eb) if swizzle else tma.MAX_BOX
    out = [b for b in _divisors(extent, most) if (b * eb) % tma.ALIGN == 0]
    if not out:
        span = f" and at most the {swizzle}-byte swizzle span" if swizzle else ""
        raise DispatchFail(f"the tile's rows are {extent} elements ({extent * eb} bytes); a "
                           f"TMA box row must be a multiple of {tma.ALIGN} bytes{span}")
    return out


def _grow(offs: np.ndarray, inner: int) -> tuple[int, ...] | None:
    shape = offs.shape
    box = [1] * len(shape)
    box[-1] = inner
    if not _dense(offs, tuple(box)):
        return None
    for d in range(len(shape) - 2, -1, -1):
        for b in _divisors(shape[d], tma.MAX_BOX):
            trial = box[:d] + [b] + box[d + 1:]
            if b == 1 or _dense(offs, tuple(trial)):
                box = trial
                break
    return tuple(box)


def check_symbolic_starts(s: Side) -> None:
    """A shared dimension the copy spans may start at a run-time index only where the layout
    is affine along it (one memory iter): then every element moves by the same offset."""
    layout = s.buffer.layout
    if layout is None:
        return
    from tilewise.layout.ops import split_into

    groups = split_into(layout.canonicalize().shard, tuple(s.buffer.shape))
    for d, r in enumerate(s.region.region):
        if as_int(r.start) is None and r.extent > 1 and len(groups[d]) > 1:
            raise DispatchFail(f"{s.text}: dimension {d} starts at a run-time index and the "
                               "layout splits it; start it at a compile-time index or copy "
                               "one index of it at a time")


def plan_boxes(g: Side, s: Side, swizzle: int) -> BoxPlan:
    """The boxes of a copy between global region ``g`` and shared region ``s``."""
    check_symbolic_starts(s)
    offs = shared_offsets(g, s)
    eb = g.elem_bytes
    boxes = [b for b in (_grow(offs, inner) for inner in
                         _inner_candidates(offs.shape[-1], eb, swizzle)) if b is not None]
    if not boxes:
        raise DispatchFail(f"{s.text} does not hold the tile's rows at consecutive offsets "
                           "(unswizzled); a TMA box is written densely, row after row")
    box = max(boxes, key=lambda b: (math.prod(b), b[-1]))
    grid = [e // b for e, b in zip(offs.shape, box)]
    origins = unravel(np.arange(math.prod(grid)), grid) * np.asarray(box, np.int64)
    first = _boxes(offs, box)[:, 0]
    issues = tuple(Issue(int(o), tuple(int(x) for x in org)) for o, org in zip(first, origins))
    _check_alignment(s, first, eb)
    return BoxPlan(box, issues)


def _check_alignment(s: Side, first: np.ndarray, eb: int) -> None:
    align = math.gcd(_symbolic_align(s), *(int(x) * eb for x in first))
    if align % DST_ALIGN:
        raise DispatchFail(f"{s.text}: a box starts only {align}-byte aligned in shared memory; "
                           f"a TMA destination must be {DST_ALIGN}-byte aligned")


def _symbolic_align(s: Side) -> int:
    """The alignment in bytes the symbolic part of the shared region's start keeps (0: the
    start is a compile-time constant, which the offsets already hold)."""
    from tilewise.passes.indexing import memory_offset
    from tilewise.passes.simplify import simplify_expr
    from tilewise.ir.analysis import known_multiple

    starts = [r.start for r in s.region.region]
    if all(as_int(x) is not None for x in starts):
        return 0
    layout = s.buffer.layout.unswizzled() if s.buffer.layout is not None else None
    off = simplify_expr(memory_offset(layout, s.buffer.shape, starts))
    return known_multiple(off) * s.elem_bytes
