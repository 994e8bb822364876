"""Named axes, strides on axes (``4@laneid``) and iters ``(extent, stride, axis)``.

An *axis* is a place a layout can send an element to: the memory offset ``m``, a thread
index (``laneid``, ``tid_in_wg``, ...), a CTA or cluster index, or a tensor-memory lane or
column. Every axis has a *kind*; dispatch reads kinds (e.g. "is every non-memory iter a
thread iter?") rather than names.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from tilewise.errors import LayoutError, did_you_mean

AXIS_KINDS = ("memory", "thread", "cta", "cluster", "tmem")
# Axes that say *who* holds an element (as opposed to *where* it is stored).
EXECUTION_KINDS = ("thread", "cta", "cluster")


def as_int(value: object, what: str, hint: str) -> int:
    """``value`` as a Python int, or a LayoutError naming ``what`` (bools are rejected:
    ``True`` as an extent is always a typo)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise LayoutError(f"{what} must be an integer, got {value!r}", hint=hint)
    return int(value)


@dataclass(frozen=True)
class Axis:
    """A named axis of a given kind. Look one up with ``Axis.get("laneid")``.

    ``4 @ laneid`` builds a stride of 4 on ``laneid`` (``Axis.__rmatmul__``).
    """

    name: str
    kind: str

    _registry: ClassVar[dict[str, Axis]] = {}

    @classmethod
    def define(cls, name: str, kind: str) -> Axis:
        """Create and register an axis (the module does this once per known axis)."""
        if kind not in AXIS_KINDS:
            raise LayoutError(f"unknown axis kind {kind!r}", hint=did_you_mean(kind, AXIS_KINDS))
        axis = cls(name, kind)
        cls._registry[name] = axis
        return axis

    @classmethod
    def get(cls, name: str | Axis) -> Axis:
        """The axis called ``name`` (an Axis is returned unchanged)."""
        if isinstance(name, Axis):
            return name
        if not isinstance(name, str):
            raise LayoutError(
                f"an axis must be an axis object or its name, got {name!r}",
                hint="write e.g. 1@laneid, or pass the name 'laneid'",
            )
        try:
            return cls._registry[name]
        except KeyError:
            raise LayoutError(
                f"unknown axis {name!r}", hint=did_you_mean(name, cls._registry)
            ) from None

    @classmethod
    def known(cls) -> tuple[Axis, ...]:
        """Every registered axis, in definition order."""
        return tuple(cls._registry.values())

    @property
    def is_execution(self) -> bool:
        """True for thread, CTA and cluster axes (who holds an element)."""
        return self.kind in EXECUTION_KINDS

    def __rmatmul__(self, value: object) -> OnAxis:
        return OnAxis(value, self)

    def __repr__(self) -> str:
        # The name is also the exported Python name, so reprs read back.
        return self.name


@dataclass(frozen=True)
class OnAxis:
    """An integer on an axis: ``4@laneid``. Used as a stride in ``S[...]`` / ``R[...]``
    and as an offset in ``layout + 5@warpid``."""

    value: int
    axis: Axis

    def __post_init__(self) -> None:
        v = as_int(self.value, "a stride or offset", "write an integer before '@', e.g. 4@laneid")
        object.__setattr__(self, "value", v)
        object.__setattr__(self, "axis", Axis.get(self.axis))

    def __repr__(self) -> str:
        return f"{self.value}@{self.axis.name}"


@dataclass(frozen=True)
class Iter:
    """One dimension of a shard or replica: ``extent`` steps of ``stride`` along ``axis``.

    Extents are positive and strides non-negative: a layout never walks backwards, which
    keeps ``span`` a simple sum (reverse a tile with a permutation, not a negative stride).
    """

    extent: int
    stride: int
    axis: Axis

    def __post_init__(self) -> None:
        ext = as_int(self.extent, "an extent", "extents are positive integers, e.g. S[(128, 32)]")
        if ext <= 0:
            raise LayoutError(
                f"extent {ext} is not positive", hint="every extent must be at least 1"
            )
        stride = self.stride
        axis = self.axis
        if isinstance(stride, OnAxis):
            stride, axis = stride.value, stride.axis
        st = as_int(stride, "a stride", "write an integer stride, or N@axis, e.g. 1@laneid")
        if st < 0:
            raise LayoutError(
                f"stride {st} is negative",
                hint="strides must be >= 0; reorder the tile with permute() instead",
            )
        object.__setattr__(self, "extent", ext)
        object.__setattr__(self, "stride", st)
        object.__setattr__(self, "axis", Axis.get(axis))

    @property
    def last(self) -> int:
        """The largest place this iter reaches on its axis."""
        return (self.extent - 1) * self.stride

    def __repr__(self) -> str:
        return f"Iter({self.extent}, {self.stride}, {self.axis.name})"


def rowmajor(extents: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides of ``extents`` (the last is 1)."""
    strides, acc = [], 1
    for e in reversed(extents):
        strides.append(acc)
        acc *= e
    return tuple(reversed(strides))


def merge_iters(iters: Iterable[Iter]) -> tuple[Iter, ...]:
    """Merge neighbours (outer, inner) on one axis with outer.stride == inner.extent *
    inner.stride: together they walk one contiguous range."""
    out: list[Iter] = []
    for it in iters:
        if it.extent == 1:
            continue
        prev = out[-1] if out else None
        if prev and prev.axis == it.axis and prev.stride == it.extent * it.stride:
            out[-1] = Iter(prev.extent * it.extent, it.stride, it.axis)
        else:
            out.append(it)
    return tuple(out)


def check_shape(shape: object, size: int | None, what: str = "shape") -> tuple[int, ...]:
    """``shape`` as a tuple of positive ints; when ``size`` is given it must match."""
    dims = (shape,) if isinstance(shape, numbers.Integral) else shape
    if not isinstance(dims, (tuple, list)):
        raise LayoutError(
            f"{what} must be a tuple of integers, got {shape!r}", hint="write e.g. shape=(128, 32)"
        )
    out = tuple(as_int(d, f"a {what} extent", "write e.g. shape=(128, 32)") for d in dims)
    if any(d <= 0 for d in out):
        raise LayoutError(
            f"{what} {out} has an extent that is not positive",
            hint="every extent must be at least 1",
        )
    if size is not None and math.prod(out) != size:
        raise LayoutError(
            f"{what} {out} has {math.prod(out)} elements but the layout has {size}",
            hint=f"pick a {what} whose extents multiply to {size}",
        )
    return out


def _define_all() -> dict[str, Axis]:
    table = {
        "memory": ("m",),
        "thread": ("laneid", "warpid", "wid_in_wg", "tid_in_wg", "wgid", "tx"),
        "cta": ("bx", "by", "bz"),
        "cluster": ("cbx", "cby", "cbz"),
        "tmem": ("TLane", "TCol"),
    }
    return {n: Axis.define(n, kind) for kind, names in table.items() for n in names}


AXES = _define_all()
m = AXES["m"]
laneid = AXES["laneid"]
warpid = AXES["warpid"]
wid_in_wg = AXES["wid_in_wg"]
tid_in_wg = AXES["tid_in_wg"]
wgid = AXES["wgid"]
tx = AXES["tx"]
bx, by, bz = AXES["bx"], AXES["by"], AXES["bz"]
cbx, cby, cbz = AXES["cbx"], AXES["cby"], AXES["cbz"]
TLane = AXES["TLane"]
TCol = AXES["TCol"]
