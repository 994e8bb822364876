"""The ``S[...]`` / ``R[...]`` builder syntax.

``S[extents : strides]`` builds a shard and ``R[extents : strides]`` a replica; both take
one extent or a tuple of extents, and one stride or a tuple with one stride per extent.
A stride is an int (on the memory axis ``m``) or ``N@axis``. ``S[extents]`` alone is
row-major on ``m``. These are ordinary Python subscripts: ``S[(128, 8) : (1@tid_in_wg, 1)]``
passes ``slice((128, 8), (OnAxis(1, tid_in_wg), 1), None)`` to ``__getitem__``.
"""

from __future__ import annotations

import numbers

from tilewise.errors import LayoutError, api_boundary
from tilewise.layout.axes import Iter, OnAxis, m, rowmajor
from tilewise.layout.layout import Replica, TileLayout


def _as_tuple(value: object) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _parse(key: object, name: str) -> tuple[Iter, ...]:
    """The iters written inside ``S[...]`` or ``R[...]``."""
    example = f"{name}[(128, 8) : (1@tid_in_wg, 1)]"
    if isinstance(key, slice):
        if key.step is not None:
            raise LayoutError(
                f"{name}[a : b : c] has a third part",
                hint=f"write {name}[extents : strides], e.g. {example}",
            )
        if key.start is None or key.stop is None:
            raise LayoutError(
                f"{name}[...] is missing its extents or its strides",
                hint=f"write {name}[extents : strides], e.g. {example}",
            )
        extents, strides = _as_tuple(key.start), _as_tuple(key.stop)
        if len(extents) != len(strides):
            raise LayoutError(
                f"{name}[...] has {len(extents)} extents but {len(strides)} strides",
                hint=f"give one stride per extent, e.g. {example}",
            )
    elif isinstance(key, (tuple, list, numbers.Integral)):
        extents = _as_tuple(key)
        _check_extents(extents)
        strides = rowmajor(extents)
    else:
        raise LayoutError(
            f"{name}[{key!r}] is not a layout expression",
            hint=f"write {name}[extents] or {name}[extents : strides]",
        )
    return tuple(_iter(e, s) for e, s in zip(extents, strides))


def _check_extents(extents: tuple) -> None:
    # Row-major strides are computed from the extents, so they must be valid first.
    for e in extents:
        Iter(e, 0, m)


def _iter(extent: object, stride: object) -> Iter:
    if isinstance(stride, OnAxis):
        return Iter(extent, stride.value, stride.axis)
    return Iter(extent, stride, m)


class _ShardBuilder:
    """``S[...]``: a layout from a shard."""

    @api_boundary
    def __getitem__(self, key: object) -> TileLayout:
        return TileLayout._build(_parse(key, "S"))

    def __repr__(self) -> str:
        return "S"


class _ReplicaBuilder:
    """``R[...]``: replica iters, added to a layout with ``+``."""

    @api_boundary
    def __getitem__(self, key: object) -> Replica:
        return Replica(_parse(key, "R"))

    def __repr__(self) -> str:
        return "R"


S = _ShardBuilder()
R = _ReplicaBuilder()
