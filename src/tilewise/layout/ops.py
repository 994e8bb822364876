"""Structural operations on layouts: slice, group, permute, storage, contiguity.

Every function is pure and returns a new layout. They work on the canonical shard
(contiguous iters merged), so that a split the user's spelling hides (``S[(128, 32)]``
viewed as ``(64, 64)``) is still found. :class:`LayoutOps` gives them as methods to
``LayoutOps``, which mixes it in; this module imports nothing of ``layout.py``: a layout
reaches it through its public interface (``shard``, ``replica``, ``offset``, ``swizzling``,
``shape``, ``size()``, ``canonicalize()``, ``replaced(**fields)``, ``places_of(lin)``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
import numpy as np

from tilewise.errors import LayoutError
from tilewise.layout.axes import Axis, Iter, as_int, check_shape, m, merge_iters, rowmajor


def _dims(layout: LayoutOps, shape: Sequence[int] | None) -> tuple[int, ...]:
    return layout.shape if shape is None else check_shape(shape, layout.size())


# ---- splitting the shard into dimensions ------------------------------------------
def split_into(iters: Sequence[Iter], dims: Sequence[int]) -> list[list[Iter]]:
    """Cut ``iters`` (outermost first, same size as ``dims``) into one run of iters per
    dimension, splitting an iter where a dimension boundary falls inside it."""
    pending = [it for it in iters if it.extent != 1]
    groups: list[list[Iter]] = []
    for d in dims:
        group, need = [], d
        while need > 1:
            it = pending[0]
            if need % it.extent == 0:
                group.append(pending.pop(0))
                need //= it.extent
            elif it.extent % need == 0:
                rest = it.extent // need
                group.append(Iter(need, it.stride * rest, it.axis))
                pending[0] = Iter(rest, it.stride, it.axis)
                need = 1
            else:
                raise LayoutError(
                    f"cannot view the layout as shape {tuple(dims)}: a dimension of {d} "
                    f"would cut the iter {it} into pieces that are not whole iters",
                    hint=f"pick a shape whose extents divide the layout's iters {tuple(iters)}",
                )
        groups.append(group)
    return groups


def _groups(layout: LayoutOps, shape: Sequence[int] | None) -> list[list[Iter]]:
    if shape is None:
        return [[it] for it in layout.shard]
    return split_into(layout.canonicalize().shard, _dims(layout, shape))


def _placeholder(layout: LayoutOps) -> Iter:
    """The iter standing for a dimension of extent 1 (on an axis the layout uses, so
    that it adds no axis to ``apply``'s answer)."""
    names = [it.axis for it in layout.shard]
    return Iter(1, 1, m if m in names or not names else names[-1])


def group(layout: LayoutOps, shape: Sequence[int]) -> LayoutOps:
    shard: list[Iter] = []
    for g in _groups(layout, shape):
        shard.extend(merge_iters(g) or (_placeholder(layout),))
    return layout.replaced(shard=shard, domain=tuple(int(d) for d in shape))


def permute(layout: LayoutOps, order: Sequence[int], shape: Sequence[int] | None) -> LayoutOps:
    groups = _groups(layout, shape)
    idx = [as_int(i, "a permutation entry", "order lists dimension numbers") for i in order]
    if sorted(idx) != list(range(len(groups))):
        merged = shape is None and len(idx) > len(groups)
        raise LayoutError(
            f"order {tuple(idx)} is not a permutation of the {len(groups)} dimension(s) of "
            f"{layout!r}" + (" (its iters merged: contiguous dimensions fuse into one)"
                             if merged else ""),
            hint=(f"say which shape the {len(idx)} dimensions have: "
                  f"layout.permute({tuple(idx)}, shape=(...)), the shape's extents a "
                  "factoring of the layout's" if merged else
                  f"list each of 0..{len(groups) - 1} exactly once"),
        )
    shard = [it for i in idx for it in (groups[i] or [_placeholder(layout)])]
    return layout.replaced(shard=shard)


# ---- slicing -----------------------------------------------------------------------
def _bounds(region: Sequence, dims: Sequence[int]) -> list[tuple[int, int]]:
    items = list(region) if isinstance(region, (tuple, list)) else [region]
    if len(items) > len(dims):
        raise LayoutError(
            f"region has {len(items)} entries but the domain {tuple(dims)} has "
            f"{len(dims)} dimensions",
            hint="give one (start, stop) per dimension",
        )
    out = []
    for k, d in enumerate(dims):
        item = items[k] if k < len(items) else slice(None)
        start, stop = _one_bound(item, d)
        if not 0 <= start < stop <= d:
            raise LayoutError(
                f"slice {start}:{stop} of dimension {k} is out of bounds for extent {d}",
                hint=f"use 0 <= start < stop <= {d}",
            )
        out.append((start, stop))
    return out


def _one_bound(item: object, extent: int) -> tuple[int, int]:
    hint = "write each entry as (start, stop), start:stop or an index"
    if isinstance(item, slice):
        if item.step not in (None, 1):
            raise LayoutError(f"slice step {item.step} is not supported", hint="use step 1")
        start = 0 if item.start is None else as_int(item.start, "a slice start", hint)
        stop = extent if item.stop is None else as_int(item.stop, "a slice stop", hint)
        return start, stop
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return as_int(item[0], "a slice start", hint), as_int(item[1], "a slice stop", hint)
    i = as_int(item, "a region entry", hint)
    return i, i + 1


def _slice_dim(iters: list[Iter], start: int, stop: int, k: int) -> tuple[list[Iter], dict]:
    """Iters for positions ``start:stop`` of one dimension made of ``iters``, and the
    offsets the fixed part contributes. Possible when the range is whole inner iters
    times a contiguous piece of one iter."""
    n = stop - start
    exts = [it.extent for it in iters]
    inner = rowmajor(exts)
    for j in reversed(range(len(iters))):
        if start % inner[j] or n % inner[j]:
            break  # a larger block cannot be aligned either
        q, count = start // inner[j], n // inner[j]
        local = q % exts[j]
        if local + count > exts[j]:
            continue
        offset: dict[str, int] = {}
        for i in range(j + 1):
            digit = local if i == j else (start // inner[i]) % exts[i]
            name = iters[i].axis.name
            offset[name] = offset.get(name, 0) + digit * iters[i].stride
        return [Iter(count, iters[j].stride, iters[j].axis), *iters[j + 1 :]], offset
    raise LayoutError(
        f"slice {start}:{stop} of dimension {k} crosses an iter boundary of the layout "
        f"({tuple(iters)}), so it is not a tile layout",
        hint="align the slice to the layout's iters, or slice a smaller piece",
    )


def slice_layout(layout: LayoutOps, region: Sequence, shape: Sequence[int] | None) -> LayoutOps:
    dims = _dims(layout, shape)
    bounds = _bounds(region, dims)
    groups = split_into(layout.canonicalize().shard, dims)
    shard: list[Iter] = []
    offset = dict(layout.offset)
    for k, ((start, stop), iters) in enumerate(zip(bounds, groups)):
        if not iters:  # a dimension of extent 1: only 0:1 is in bounds
            shard.append(_placeholder(layout))
            continue
        sub, extra = _slice_dim(iters, start, stop, k)
        shard.extend(sub)
        for name, v in extra.items():
            offset[name] = offset.get(name, 0) + v
    return layout.replaced(shard=shard, offset=offset)


# ---- threads and storage ----------------------------------------------------------
def storage(layout: LayoutOps) -> LayoutOps:
    shard = [it for it in layout.shard if not it.axis.is_execution]
    offset = {k: v for k, v in layout.offset.items() if not Axis.get(k).is_execution}
    return layout.replaced(shard=shard, replica=(), offset=offset)


def split_threads(layout: LayoutOps) -> tuple[LayoutOps, LayoutOps]:
    shard = [it for it in layout.shard if it.axis.is_execution]
    offset = {k: v for k, v in layout.offset.items() if Axis.get(k).is_execution}
    who = layout.replaced(shard=shard, offset=offset, swizzling=None)
    return who, storage(layout)


# ---- contiguity and vectorisation --------------------------------------------------
def _raw_run(layout: LayoutOps, shape: Sequence[int] | None) -> int:
    inner = layout.canonicalize().shard[-1]
    run = inner.extent if inner.axis == m and inner.stride == 1 else 1
    if shape is not None:  # a row of the view ends every run; chunk rows evenly
        run = math.gcd(run, _dims(layout, shape)[-1])
    return run


def _alignment(layout: LayoutOps) -> int:
    """gcd of every run start on ``m``: the offset and the strides of the other m iters
    (0 when they are all zero, i.e. aligned to anything)."""
    shard = layout.canonicalize().shard
    g = layout.offset.get("m", 0)
    for it in shard[:-1]:
        if it.axis == m and it.extent > 1:
            g = math.gcd(g, it.stride)
    return g


def _pow2_dividing(n: int, cap: int) -> int:
    v = 1
    while v * 2 <= cap and n % (v * 2) == 0:
        v *= 2
    return v


def contiguous_run(layout: LayoutOps, shape: Sequence[int] | None) -> int:
    run = _raw_run(layout, shape)
    swz = layout.swizzling
    if swz is None:
        return run
    # A swizzle moves whole aligned 16-byte chunks: a sub-run survives if it is aligned
    # and no longer than a chunk.
    g = math.gcd(run, _alignment(layout)) or run
    return _pow2_dividing(g, min(run, swz.chunk_elems))


def vector_width(
    layout: LayoutOps, dtype_bits: int, max_bytes: int, shape: Sequence[int] | None
) -> int:
    bits = as_int(dtype_bits, "dtype_bits", "pass the element size in bits, e.g. 16")
    if bits <= 0:
        raise LayoutError(f"dtype_bits {bits} is not positive", hint="e.g. dtype_bits=16")
    run = contiguous_run(layout, shape)
    g = math.gcd(run, _alignment(layout)) or run
    return _pow2_dividing(g, max(1, max_bytes * 8 // bits))


# ---- one-to-one checks ------------------------------------------------------------
def _dense(iters: list[Iter]) -> bool:
    """de Bruijn: extents/strides tile [0, N) exactly iff, sorted by stride, each stride
    is the product of the extents below it."""
    acc = 1
    for it in sorted(iters, key=lambda it: it.stride):
        if it.stride != acc:
            return False
        acc *= it.extent
    return True


def is_bijective_on(layout: LayoutOps, axes: Sequence[str | Axis]) -> bool:
    names = {Axis.get(a).name for a in axes}
    shard = [it for it in layout.canonicalize().shard if it.extent > 1]
    if layout.swizzling is None:
        if any(it.axis.name not in names for it in shard):
            return False
        return all(_dense([it for it in shard if it.axis.name == n]) for n in names)
    places = layout.places_of(np.arange(layout.size()))
    cols = [places[n] for n in sorted(names) if n in places]
    box = math.prod(int(c.max() - c.min()) + 1 for c in cols)
    return box == layout.size() and _distinct(cols, layout.size())


def _distinct(cols: list[np.ndarray], n: int) -> bool:
    if not cols:
        return n == 1
    key = np.zeros(n, np.int64)
    for c in cols:
        c = c - c.min()
        key = key * (int(c.max()) + 1) + c
    key.sort()  # not np.unique, which imports numpy.ma (30 ms of a cold start)
    return bool((key[1:] != key[:-1]).all())


def is_injective(layout: LayoutOps) -> bool:
    places = layout.places_of(np.arange(layout.size()))
    return _distinct(list(places.values()), layout.size())


class LayoutOps:
    """The structural operations of a layout, mixed into ``TileLayout`` (see the module
    docstring for what the layout provides)."""

    def slice(self, region: Sequence, shape: Sequence[int] | None = None) -> LayoutOps:
        """The sub-tile ``region`` (per dimension ``(start, stop)`` or a slice) of the
        domain ``shape`` (default: the shard extents). The result's offset absorbs the
        start: ``slice(region).apply(c, shape=region_shape) == apply(c + start)``."""
        return slice_layout(self, region, shape)

    def group(self, shape: Sequence[int]) -> LayoutOps:
        """Split shard iters so that the domain reads as ``shape`` (iters of one
        dimension stay adjacent; contiguous ones are merged). Same function."""
        return group(self, shape)

    def permute(self, order: Sequence[int], shape: Sequence[int] | None = None) -> LayoutOps:
        """Reorder the dimensions of the domain ``shape`` (default: the shard extents):
        dimension ``i`` of the result is dimension ``order[i]`` of this layout."""
        return permute(self, order, shape)

    def storage(self) -> LayoutOps:
        """Only the memory / tensor-memory part: thread, CTA and cluster iters, replica
        and offsets are dropped. For a register view it maps one thread's fragment to
        its register index."""
        return storage(self)

    def split_threads(self) -> tuple[LayoutOps, LayoutOps]:
        """``(who, where)``: the execution part (thread/CTA/cluster iters, replica and
        offsets) and the storage part, each with its iters in their original order."""
        return split_threads(self)

    def contiguous_run(self, shape: Sequence[int] | None = None) -> int:
        """How many logically consecutive innermost elements are contiguous on ``m``
        (a run every row of ``shape`` splits into evenly). Sees through swizzles."""
        return contiguous_run(self, shape)

    def vector_width(
        self, dtype_bits: int, max_bytes: int = 16, shape: Sequence[int] | None = None
    ) -> int:
        """The widest power-of-two element count a vector access may move: contiguous,
        aligned at every start, at most ``max_bytes``."""
        return vector_width(self, dtype_bits, max_bytes, shape)

    def is_bijective_on(self, *axes: str | Axis) -> bool:
        """True when the domain maps one-to-one onto a dense box of the given axes
        (default ``m``): ``[offset, span)`` per axis, e.g. a buffer layout without gaps
        or overlaps. The replica is not considered."""
        return is_bijective_on(self, axes or ("m",))

    def is_injective(self) -> bool:
        """True when no two logical elements share a place (all axes together)."""
        return is_injective(self)
