"""Partial tiles and run-time sizes: which accesses of a copy need a bounds check, and when a
vector of ``v`` elements stays legal.

A copy's memory operand may extend past the end of its buffer (a *partial tile*: the last
row block of a matrix whose row count the tile does not divide, a row of 3000 elements read
as a tile of 3072). The copy then reads and writes only the elements inside the buffer:

* a dimension ``d`` is **guarded** when the region may reach past the buffer's extent
  there: the extent is symbolic (``M = T.int32()``), or the region's last coordinate
  (its start's upper bound, :meth:`DispatchContext.bound`, plus its extent) is past a
  compile-time extent. A start the compiler cannot bound is trusted to stay inside, unless
  the copy names ``fill=`` (then every dimension whose start is unbounded is guarded);
* a guarded load reads ``fill`` (default 0) for the elements outside; a guarded store
  skips them. Guards are per vector: a vector is wholly inside or wholly outside, which the
  variants ensure by choosing the vector width (:func:`vector_reason`);
* **run-time strides**: a symbolic stride (a ``(M, N)`` array with ``N`` symbolic) is
  treated while planning as a stand-in multiple of every vector size
  (:data:`STAND_IN`); the vectorised code is then valid only when, at run time, every such
  stride (and every symbolic extent a vector could straddle) is a multiple of the vector
  width. :func:`runtime_conditions` gives those conditions; the variant emits
  ``if conditions: <vector code> else: <element code>`` (a uniform branch).
"""

from __future__ import annotations

import numpy as np

from ..ir import dtype as dt
from ..ir.expr import BufferRegion, Expr, FloatImm, IntImm, as_int, binop, cmp
from ..ir.analysis import known_multiple

#: The value a symbolic stride takes while a vector plan is chosen: a multiple of every
#: vector size and larger than any tile, so a vector never spans it.
STAND_IN = 1 << 24


def guarded_dims(region: BufferRegion, ctx) -> tuple[int, ...]:
    """The dimensions of ``region`` whose coordinates need a ``< extent`` check."""
    force = ctx.option("fill") is not None
    out = []
    for d, (r, n) in enumerate(zip(region.region, region.buffer.shape)):
        n = as_int(n)
        if n is None:
            out.append(d)
            continue
        b = ctx.bound(r.start)
        if b is None:
            if force:
                out.append(d)
        elif b[1] + r.extent > n:
            out.append(d)
    return tuple(out)


def in_range(region: BufferRegion, dims, idx, ctx=None) -> Expr | None:
    """``idx[d] < extent`` for each guarded dimension (None when there is none); with
    ``ctx``, a check the coordinate's bounds already prove is left out."""
    out = None
    for d in dims:
        n = as_int(region.buffer.shape[d])
        b = ctx.bound(idx[d]) if ctx is not None and n is not None else None
        if b is not None and b[1] < n:
            continue
        c = cmp("<", idx[d], region.buffer.shape[d])
        out = c if out is None else binop("and", out, c)
    return out


def conjunction(conds) -> Expr | None:
    """``c1 and c2 and ...`` of the conditions that are not None, each once."""
    from ..ir.printer import script

    out, seen = None, set()
    for c in conds:
        if c is not None and script(c) not in seen:
            seen.add(script(c))
            out = c if out is None else binop("and", out, c)
    return out


def fill_value(ctx, t: dt.DataType) -> Expr:
    """The ``fill=`` of the call (0 by default) as an immediate of dtype ``t``."""
    v = ctx.option("fill")
    v = 0 if v is None else v
    return FloatImm(float(v), t) if t.is_float else IntImm(int(v), t)


def stand_in_strides(buffer) -> list[int]:
    """The buffer's element strides with :data:`STAND_IN` for each symbolic one."""
    return [as_int(s) if as_int(s) is not None else STAND_IN for s in buffer.elem_strides()]


def symbolic_strides(region: BufferRegion) -> list[Expr]:
    """Symbolic strides of the dimensions the region moves along (or starts inside)."""
    out = []
    for st, r in zip(region.buffer.elem_strides(), region.region):
        if as_int(st) is None and (r.extent > 1 or as_int(r.start) != 0):
            out.append(st)
    return out


def vector_reason(region: BufferRegion, dims, coords: np.ndarray, v: int) -> str | None:
    """Why ``v``-element vectors would straddle a bound (None when they do not).

    ``coords``: (runs, v, ndim) region-relative coordinates of each vector's elements. A
    guarded dimension must be constant within a vector, or the vector must move along it
    starting at a multiple of ``v`` from a start known to be a multiple of ``v``, with a
    compile-time extent that is a multiple of ``v`` (a symbolic one is checked at run time:
    :func:`runtime_conditions`)."""
    if v == 1:
        return None
    name = region.buffer.name
    for d in dims:
        c = coords[:, :, d]
        if (c == c[:, :1]).all():
            continue
        r = region.region[d]
        n = as_int(region.buffer.shape[d])
        s = as_int(r.start)
        if s is not None and n is not None:
            inside = c + s < n
            if (inside == inside[:, :1]).all():
                continue
            return (f"a vector of {v} elements would straddle the end of dimension {d} of "
                    f"{name!r} (extent {n})")
        if (c[:, 0] % v).any() or known_multiple(r.start) % v:
            return (f"vectors of {v} elements along dimension {d} of {name!r} do not start at "
                    f"multiples of {v} from a start known to be one")
        if n is not None and n % v:
            return (f"dimension {d} of {name!r} has {n} elements, not a multiple of {v}: a "
                    "vector would straddle its end")
    return None


def runtime_conditions(region: BufferRegion, dims, coords: np.ndarray, v: int) -> list[Expr]:
    """What must hold at run time for ``v``-element vectors planned with stand-in strides:
    each symbolic stride, and each symbolic extent a vector moves along, a multiple of ``v``
    (strides known to be multiples of ``v`` need no check)."""
    if v == 1:
        return []
    out = [st for st in symbolic_strides(region) if known_multiple(st) % v]
    for d in dims:
        c = coords[:, :, d]
        n = region.buffer.shape[d]
        if as_int(n) is None and not (c == c[:, :1]).all() and known_multiple(n) % v:
            out.append(n)
    return [cmp("==", binop("%", e, v), 0) for e in out]
