"""``TileLayout``: the value at the heart of the layout algebra.

A layout is ``shard + replica + offset`` (plus an optional swizzle on ``m``):

* ``shard``: iters ``(extent, stride, axis)``, outermost first. Read row-major, their
  extents are the logical domain; element ``(i0, i1, ...)`` goes to ``sum(ik * stride_k)``
  on each iter's axis.
* ``replica``: iters on execution axes (thread / CTA / cluster) only. Every element is
  *also* held at each place they enumerate (a broadcast). A replica on ``m`` or on tensor
  memory would mean "store the same element at several addresses", which no instruction
  we dispatch to does, so it is rejected.
* ``offset``: a constant per axis.

Equality and hashing use the canonical form, which compares the function from the
*linear* logical index to places: ``S[(128, 32)] == S[4096]``. The row/column split of the
domain is a view of the same layout (see ``group``), kept only for printing and ``apply``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from tilewise.errors import LayoutError
from tilewise.layout.ops import LayoutOps
from tilewise.layout.axes import Axis, Iter, OnAxis, as_int, check_shape, m, merge_iters, rowmajor
from tilewise.layout.swizzle import Swizzle


class Offsets(Mapping[str, int]):
    """An immutable, hashable ``axis name -> int`` mapping (zero entries are dropped)."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping | Iterable = ()) -> None:
        pairs = items.items() if isinstance(items, Mapping) else items
        acc: dict[str, int] = {}
        for key, value in pairs:
            name = Axis.get(key).name
            v = as_int(value, f"the offset on {name}", "offsets are integers, e.g. + 5@warpid")
            if v < 0:
                raise LayoutError(f"offset {v} on {name} is negative", hint="offsets must be >= 0")
            acc[name] = acc.get(name, 0) + v
        self._items = tuple(sorted((k, v) for k, v in acc.items() if v))

    def __getitem__(self, key: str) -> int:
        for k, v in self._items:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Offsets):
            return self._items == other._items
        return isinstance(other, Mapping) and dict(self._items) == dict(other)

    def plus(self, other: Mapping[str, int]) -> Offsets:
        return Offsets([*self._items, *other.items()])

    def __repr__(self) -> str:
        return f"Offsets({dict(self._items)!r})"


def check_replica(iters: Iterable[Iter]) -> tuple[Iter, ...]:
    """The replica iters, or a LayoutError for one on a memory axis or on ``TCol``.

    ``TLane`` takes replicas: ``tcgen05.cp``'s multicasts write one shared row to several
    tensor-memory lanes (``32x128b.warpx4`` is ``R[4 : 32@TLane]``), and TIRx states them in
    the destination's layout."""
    iters = tuple(iters)
    for it in iters:
        if not it.axis.is_execution and it.axis.name != "TLane":
            raise LayoutError(
                f"replica on the {it.axis.kind} axis {it.axis.name} is not allowed",
                hint="a replica copies an element to several threads / CTAs (or tensor-"
                "memory lanes): put it on a thread, CTA, cluster or TLane axis, e.g. "
                "R[2 : 4@warpid]",
            )
    return iters


@dataclass(frozen=True)
class Replica:
    """The result of ``R[...]``: iters to add to a layout with ``+``."""

    iters: tuple[Iter, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "iters", check_replica(self.iters))

    def __repr__(self) -> str:
        return "R" + _iters_text(self.iters, memory_default=False)


@dataclass(frozen=True, eq=False, init=False, repr=False)
class TileLayout(LayoutOps):
    """A layout: logical tile coordinate -> place on each named axis.

    ``TileLayout(S[...])`` wraps a builder expression; ``TileLayout.from_iters(...)`` builds
    one from plain tuples. Immutable; ``==`` and ``hash`` use the canonical form.
    """

    shard: tuple[Iter, ...]
    replica: tuple[Iter, ...]
    offset: Offsets
    swizzling: Swizzle | None
    domain: tuple[int, ...] | None  # the shape :meth:`group` read it as (for pictures only)

    def __init__(self, spec: TileLayout) -> None:
        if not isinstance(spec, TileLayout):
            raise LayoutError(
                f"TileLayout() takes a layout expression, got {spec!r}",
                hint="write TileLayout(S[(128, 32)]) or use TileLayout.from_iters(...)",
            )
        for name in ("shard", "replica", "offset", "swizzling", "domain"):
            object.__setattr__(self, name, getattr(spec, name))

    # ---- construction -------------------------------------------------------------
    @classmethod
    def _build(
        cls,
        shard: Iterable[Iter],
        replica: Iterable[Iter] = (),
        offset: Mapping | Offsets | None = None,
        swizzling: Swizzle | None = None,
        domain: tuple[int, ...] | None = None,
    ) -> TileLayout:
        self = object.__new__(cls)
        rep = check_replica(replica)
        off = offset if isinstance(offset, Offsets) else Offsets(offset or {})
        object.__setattr__(self, "shard", tuple(shard))
        object.__setattr__(self, "replica", rep)
        object.__setattr__(self, "offset", off)
        object.__setattr__(self, "swizzling", swizzling)
        object.__setattr__(self, "domain", domain)
        return self

    def replaced(self, **changes: object) -> TileLayout:
        """A copy with the fields ``changes`` names (shard, replica, offset, swizzling)
        replaced; the ``domain`` a picture reads it as is kept only when given (any other
        change may make it stale)."""
        fields = dict(
            shard=self.shard, replica=self.replica, offset=self.offset, swizzling=self.swizzling
        )
        fields.update(changes)
        return TileLayout._build(**fields)

    @classmethod
    def from_iters(
        cls, shard: Iterable, replica: Iterable = (), offset: Mapping | None = None
    ) -> TileLayout:
        """Build from ``(extent, stride, axis)`` tuples (axis: an Axis or its name)."""
        return cls._build(_iters_from(shard, "shard"), _iters_from(replica, "replica"), offset)

    def swizzle(self, mode: int, dtype_bits: int = 16) -> TileLayout:
        """This layout with the ``mode``-byte shared-memory swizzle applied to ``m``."""
        if self.swizzling is not None:
            raise LayoutError(
                f"{self!r} is already swizzled",
                hint="apply a swizzle once, to the unswizzled layout",
            )
        return self.replaced(swizzling=Swizzle(mode, dtype_bits), domain=self.domain)

    def unswizzled(self) -> TileLayout:
        """The same layout without its swizzle."""
        return self.replaced(swizzling=None, domain=self.domain)

    def __add__(self, other: object) -> TileLayout:
        if isinstance(other, Replica):
            return self.replaced(replica=self.replica + other.iters)
        if isinstance(other, OnAxis):
            return self.replaced(offset=self.offset.plus({other.axis.name: other.value}))
        if isinstance(other, numbers.Integral) and not isinstance(other, bool):
            return self.replaced(offset=self.offset.plus({"m": int(other)}))
        raise LayoutError(
            f"cannot add {other!r} to a layout",
            hint="add a replica R[...], an offset like 5@warpid, or an integer offset on m",
        )

    # ---- shape and axes -----------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """The shard extents as written: the default logical domain."""
        return tuple(it.extent for it in self.shard)

    @property
    def picture_shape(self) -> tuple[int, ...]:
        """The shape pictures draw it in: the one :meth:`group` read it as (``group((64,
        n))`` of the wgmma accumulator, a swizzled tile's ``(rows, cols)``), else the shard
        extents."""
        return self.domain if self.domain is not None else self.shape

    def size(self) -> int:
        """Number of logical elements (the product of the shard extents)."""
        return math.prod(self.shape)

    def axes(self, kind: str | None = None) -> tuple[Axis, ...]:
        """Axes that appear (shard, then replica, then offset), optionally of one kind."""
        seen: dict[str, Axis] = {}
        for it in self.shard + self.replica:
            seen.setdefault(it.axis.name, it.axis)
        for name in self.offset:
            seen.setdefault(name, Axis.get(name))
        return tuple(a for a in seen.values() if kind is None or a.kind == kind)

    def thread_axes(self) -> tuple[Axis, ...]:
        """The thread axes this layout uses."""
        return self.axes("thread")

    def span(self, axis: str | Axis = "m") -> int:
        """The largest index reached on ``axis`` plus one (1 when the axis is unused)."""
        a = Axis.get(axis)
        if self.swizzling is not None and a == m:
            return int(self.places_of(np.arange(self.size()))["m"].max()) + 1
        reach = sum(it.last for it in self.shard + self.replica if it.axis == a)
        return reach + self.offset.get(a.name, 0) + 1

    # ---- canonical form, equality, printing ---------------------------------------
    @cached_property
    def _canonical(self) -> TileLayout:
        shard = merge_iters(self.shard) or (Iter(1, 1, m),)
        rep = sorted(self.replica, key=lambda it: (it.axis.name, -it.stride, -it.extent))
        return TileLayout._build(shard, merge_iters(rep), self.offset, self.swizzling)

    def canonicalize(self) -> TileLayout:
        """Drop extent-1 iters, merge contiguous neighbours on one axis, sort the replica.

        An all-extent-1 (or empty) shard becomes the single iter ``(1, 1, m)``, so the
        canonical shard is never empty. Replica order is irrelevant (it is a set of
        places), so it is sorted by axis name and descending stride, then merged.
        """
        return self._canonical

    def _key(self) -> tuple:
        c = self._canonical
        return (c.shard, c.replica, c.offset, c.swizzling)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TileLayout) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        text = "S" + _iters_text(self.shard, memory_default=True)
        if self.replica:
            text += " + R" + _iters_text(self.replica, memory_default=False)
        for name, value in self.offset.items():
            text += f" + {value}" if name == "m" else f" + {value}@{name}"
        out = f"TileLayout({text})"
        if self.swizzling is not None:
            out += f".swizzle({self.swizzling.mode}, dtype_bits={self.swizzling.dtype_bits})"
        return out

    # ---- evaluation ---------------------------------------------------------------
    def linear_index(self, *coord: int, shape: Sequence[int] | None = None) -> int:
        """Row-major linear index of ``coord`` (see :meth:`apply` for the forms)."""
        if len(coord) == 1 and isinstance(coord[0], (tuple, list)):
            coord = tuple(coord[0])
        idx = tuple(as_int(c, "a coordinate", "coordinates are integers") for c in coord)
        dims = self._domain_for(len(idx), shape)
        if any(not 0 <= c < d for c, d in zip(idx, dims)):
            raise LayoutError(
                f"coordinate {idx} is outside the domain {dims}",
                hint="each index i must satisfy 0 <= i < extent",
            )
        return sum(c * s for c, s in zip(idx, rowmajor(dims)))

    def _domain_for(self, ncoords: int, shape: Sequence[int] | None) -> tuple[int, ...]:
        dims = self.shape if shape is None else check_shape(shape, self.size())
        if shape is None and ncoords == 1:
            return (self.size(),)  # a single linear index
        if ncoords != len(dims):
            raise LayoutError(
                f"got {ncoords} coordinates but the domain {dims} has {len(dims)} dimensions",
                hint="pass one index per dimension, a single linear index, "
                "or shape=(...) to index in another shape",
            )
        return dims

    def apply(self, *coord: int, shape: Sequence[int] | None = None) -> dict[str, int]:
        """The place of one element on every axis that appears (offset included; an
        axis the layout does not mention is at 0).

        ``coord`` is one index per shard iter, a single linear index, or (with ``shape=``)
        a coordinate in ``shape``, whose size must equal the layout's. Replicas are not
        applied: this is the first place; :meth:`apply_all` gives every place.
        """
        lin = self.linear_index(*coord, shape=shape)
        return {k: int(v[0]) for k, v in self.places_of(np.array([lin])).items()}

    def replicas(self) -> list[dict[str, int]]:
        """The replica displacements, one dict per copy (the first is all zeros)."""
        places = [dict.fromkeys((it.axis.name for it in self.replica), 0)]
        for it in self.replica:
            places = [
                {**p, it.axis.name: p[it.axis.name] + i * it.stride}
                for p in places
                for i in range(it.extent)
            ]
        return places

    def apply_all(self, *coord: int, shape: Sequence[int] | None = None) -> list[dict[str, int]]:
        """Every place that holds the element: :meth:`apply` plus each replica."""
        base = self.apply(*coord, shape=shape)
        return [{k: v + rep.get(k, 0) for k, v in base.items()} for rep in self.replicas()]

    def apply_np(
        self, coords: np.ndarray | Sequence, shape: Sequence[int] | None = None
    ) -> dict[str, np.ndarray]:
        """Vectorised :meth:`apply`: ``coords`` is ``(n, ndim)`` or ``(n,)`` linear."""
        arr = np.asarray(coords)
        if arr.dtype.kind not in "iu" or arr.ndim not in (1, 2):
            raise LayoutError(
                f"apply_np needs an integer array of shape (n,) or (n, ndim), got "
                f"dtype {arr.dtype} and shape {arr.shape}",
                hint="pass np.asarray(coords, dtype=np.int64)",
            )
        arr = arr.astype(np.int64, copy=False)
        if arr.ndim == 1:
            arr = arr[:, None]
        dims = self._domain_for(arr.shape[1], shape)
        # One unsigned comparison catches negative indices too.
        if arr.size and (arr.view(np.uint64) >= np.array(dims, np.uint64)).any():
            raise LayoutError(
                f"some coordinates are outside the domain {dims}",
                hint="each index i must satisfy 0 <= i < extent",
            )
        direct = self._one_iter_per_dim(dims)
        if direct is not None:  # skip linearising: each coordinate scales one stride
            terms = [(arr[:, k], it) for k, it in enumerate(direct)]
            return self._finish(terms, len(arr), fresh=False)
        lin = arr[:, -1]
        for col, stride in zip(range(arr.shape[1] - 1), rowmajor(dims)):
            lin = lin + arr[:, col] * stride
        return self.places_of(lin)

    def _one_iter_per_dim(self, dims: tuple[int, ...]) -> tuple[Iter, ...] | None:
        """The shard grouped as ``dims`` when that gives exactly one iter per dimension
        (cached per shape: ``apply_np`` is called on hot paths)."""
        cache = self.__dict__.setdefault("_dims_cache", {})
        if dims not in cache:
            try:
                grouped = self.group(dims).shard if len(dims) > 1 else None
            except LayoutError:
                grouped = None
            cache[dims] = grouped if grouped and len(grouped) == len(dims) else None
        return cache[dims]

    def _finish(
        self, terms: list[tuple[np.ndarray, Iter]], n: int, fresh: bool
    ) -> dict[str, np.ndarray]:
        """Sum ``index * stride`` per axis, add the offsets, then swizzle ``m``. Unless
        the index arrays are ``fresh``, they are the caller's and are never handed back."""
        out: dict[str, np.ndarray] = {}
        for index, it in terms:
            if it.extent == 1 or it.stride == 0:
                continue
            term = index * it.stride if it.stride != 1 else index
            name = it.axis.name
            if name in out:
                out[name] = out[name] + term
            else:
                out[name] = term.copy() if term is index and not fresh else term
        for a in self.axes():
            if a.name not in out:
                out[a.name] = np.zeros(n, np.int64)
        for name, value in self.offset.items():
            out[name] = out[name] + value
        if self.swizzling is not None and "m" in out:
            out["m"] = self.swizzling.apply_np(out["m"])
        return {a.name: out[a.name] for a in self.axes()}

    def places_of(self, lin: np.ndarray) -> dict[str, np.ndarray]:
        """The place on every axis of the elements of row-major linear indices ``lin``."""
        iters = self._canonical.shard
        inner = rowmajor([it.extent for it in iters])
        terms = [
            (_digit(lin, step, it.extent, outermost=k == 0), it)
            for k, (it, step) in enumerate(zip(iters, inner))
            if it.extent > 1
        ]
        return self._finish(terms, len(lin), fresh=True)


def _digit(lin: np.ndarray, step: int, extent: int, outermost: bool) -> np.ndarray:
    """``(lin // step) % extent``, with a shift / mask where a power of two allows."""
    q = lin >> (step.bit_length() - 1) if step & (step - 1) == 0 else lin // step
    if outermost:  # lin < size, so the quotient already is the digit
        return q
    return q & (extent - 1) if extent & (extent - 1) == 0 else q % extent


def _iters_from(items: Iterable, where: str) -> tuple[Iter, ...]:
    out = []
    for item in items:
        if isinstance(item, Iter):
            out.append(item)
        elif isinstance(item, (tuple, list)) and len(item) == 3:
            out.append(Iter(*item))
        else:
            raise LayoutError(
                f"{where} entry {item!r} is not (extent, stride, axis)",
                hint="write e.g. (128, 1, 'tid_in_wg')",
            )
    return tuple(out)


def _stride_text(it: Iter) -> str:
    return str(it.stride) if it.axis == m else f"{it.stride}@{it.axis.name}"


def _iters_text(iters: Sequence[Iter], memory_default: bool) -> str:
    if not iters:
        return "[()]"
    extents = [it.extent for it in iters]
    strides = tuple(it.stride for it in iters)
    plain = all(it.axis == m for it in iters) and strides == rowmajor(extents)
    ext_text = str(extents[0]) if len(iters) == 1 else repr(tuple(extents))
    if memory_default and plain:
        return f"[{ext_text}]"
    if len(iters) == 1:
        return f"[{ext_text} : {_stride_text(iters[0])}]"
    return f"[{ext_text} : ({', '.join(_stride_text(it) for it in iters)})]"
