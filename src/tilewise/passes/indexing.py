"""Symbolic application of a buffer's layout to logical indices.

``TileLayout.apply`` evaluates integers only; lowering needs the same map on IR
expressions. For a buffer of ``shape`` with layout ``L``:

1. split ``L``'s canonical shard into one run of iters per dimension of ``shape``
   (``layout.ops.split_into``), so dimension ``d``'s coordinate ``c_d`` is the
   mixed-radix number of its iters;
2. digit ``k`` of ``c_d`` is ``(c_d // inner_k) % extent_k`` (the outermost digit needs no
   ``%``, a lone iter needs neither); memory iters contribute ``digit * stride`` on ``m``,
   execution iters (threads of a register view) contribute nothing: they select *which*
   thread holds the element, not where;
3. add the layout's offset on ``m`` and apply the swizzle on the final element offset:
   ``o ^ (((o >> (7 - k)) & M) << (4 - k))`` with ``k = log2(element bytes)`` (see
   ``layout/swizzle.py``).

A buffer without a layout is row-major.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from ..ir.expr import Expr, ExprLike, as_int, binop, const
from ..layout import TileLayout
from ..layout.axes import rowmajor
from ..layout.ops import split_into


def storage_size(shape: Sequence[int], layout: TileLayout | None, strides=None) -> int:
    """Elements of storage one buffer (one thread's part, for a register view) needs; with
    explicit ``strides`` (a global buffer), from its first to one past its last element."""
    if strides is not None:
        total: ExprLike = 1
        for n, st in zip(shape, strides):
            total = binop("+", total, binop("*", binop("-", n, 1), st))
        return total
    if layout is None:
        return math.prod(shape)
    return layout.storage().span("m")


def _dim_groups(layout: TileLayout, shape: Sequence[int]):
    if tuple(it.extent for it in layout.shard) == tuple(shape):
        return [[it] for it in layout.shard]
    return split_into(layout.canonicalize().shard, tuple(shape))


def _dim_offset(iters, c: ExprLike, axis: str = "m") -> Expr:
    total: Expr = const(0)
    inner = 1
    for k in range(len(iters) - 1, -1, -1):
        it = iters[k]
        digit = binop("//", c, inner) if inner != 1 else const(c)
        if k != 0:
            digit = binop("%", digit, it.extent)
        inner *= it.extent
        if it.axis.name == axis:
            total = total + digit * it.stride
    return total


def swizzle_expr(offset: Expr, swz) -> Expr:
    """The swizzle of ``layout/swizzle.py`` (:class:`~tilewise.layout.swizzle.Swizzle`) on
    an element-offset expression."""
    return swz.apply(offset)


def memory_offset(layout: TileLayout | None, shape: Sequence[int],
                  coords: Sequence[ExprLike], axis: str = "m", strides=None) -> Expr:
    """The element offset (on ``axis``) of logical element ``coords`` of a buffer
    (``strides``: explicit element strides of a global buffer, else row-major)."""
    ints = tuple(as_int(c) for c in coords)
    if layout is not None and None not in ints and all(isinstance(n, int) for n in shape):
        return const(_constant_offset(layout, tuple(shape), ints, axis))
    return _offset_expr(layout, shape, coords, axis, strides)


@functools.lru_cache(maxsize=1 << 16)
def _constant_offset(layout: TileLayout, shape: tuple, coords: tuple, axis: str) -> int:
    """memory_offset of constant coordinates (a register index, mostly), folded once: the
    same expression, evaluated with numbers (a register tile's element is indexed by every
    primitive that touches it, thousands of times in an attention kernel)."""
    e = _offset_expr(layout, shape, [const(c) for c in coords], axis, None)
    v = as_int(e)
    if v is None:
        raise AssertionError(f"constant coordinates {coords} gave {e!r}")  # folding is exact
    return v


def _offset_expr(layout, shape, coords, axis, strides) -> Expr:
    if layout is None:
        total: Expr = const(0)
        for c, s in zip(coords, strides if strides is not None else rowmajor(shape)):
            total = total + binop("*", c, s)
        return total
    total = const(0)
    for iters, c in zip(_dim_groups(layout, shape), coords):
        total = total + _dim_offset(iters, c, axis)
    total = total + layout.offset.get(axis, 0)
    if layout.swizzling is not None and axis == "m":
        total = swizzle_expr(total, layout.swizzling)
    return total
