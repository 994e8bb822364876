"""Register tiles: what each thread holds, computed once per call and checked exhaustively.

A *register tile* is the whole of a ``local`` view whose layout has thread axes, e.g.
``x.view(4, 1024, layout=S[(4, 4, 32, 8) : (32@tx, 8, 1@tx, 1)])``: each element is held
by the threads its thread-axis places name (and, with a replica, by the threads the
replica adds), at the register its place on ``m`` names. Thread axes are read relative to
the scope instance: for a call by ``T`` threads, thread ``t`` (``scope_tid``) has
``laneid = t % 32``, ``warpid = t // 32``, ``wid_in_wg = t // 32 % 4``,
``tid_in_wg = t % 128``, ``wgid = t // 128``, ``tx = t`` (:data:`THREAD_AXES`, one formula
for numpy arrays and IR expressions alike).

:meth:`RegTile.of` evaluates the layout for every thread of the scope instance and every
element (numpy) and builds ``elems[t, r]``: the element thread ``t`` holds in register
``r``. A tile is accepted only when that table is full (every thread holds exactly
``regs`` elements, one per register) and when the per-register coordinate formula the
variants emit (:meth:`coords`: the layout's digits of ``r`` and of the thread's axis
values) reproduces the table for every thread; otherwise the variant declines with the
reason. The variants then emit straight-line code per register, indexing a flat view of
the registers with constants, so the registers stay registers after SROA.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..ir.expr import BufferRegion, as_int
from ..ir.stmt import Buffer
from ..layout.ops import split_into
from .registry import DispatchFail

#: Thread-axis values of the scope-relative thread id ``t`` (numpy arrays or IR exprs).
THREAD_AXES = {
    "laneid": lambda t: t % 32, "warpid": lambda t: t // 32,
    "wid_in_wg": lambda t: t // 32 % 4, "tid_in_wg": lambda t: t % 128,
    "wgid": lambda t: t // 128, "tx": lambda t: t,
}


def root(buf: Buffer) -> Buffer:
    while buf.view_of is not None:
        buf = buf.view_of
    return buf


def is_reg_tile(region) -> bool:
    """A region of a local buffer whose layout has thread axes."""
    if not isinstance(region, BufferRegion):
        return False
    b = region.buffer
    return b.scope == "local" and b.layout is not None and bool(b.layout.thread_axes())


def flat_view(buf: Buffer, dtype=None, regs: int | None = None, tag: str = "r") -> Buffer:
    """A 1-D view of ``buf``'s registers (its root allocation), indexed by register."""
    base = root(buf)
    t = dtype or buf.dtype
    n = regs if regs is not None else base.size * base.dtype.bits // t.bits
    return Buffer(f"{buf.name}_{tag}", (n,), t, "local", None, view_of=base, span=buf.span)


@dataclass
class RegTile:
    region: BufferRegion
    threads: int
    regs: int
    elems: np.ndarray  # (threads, regs): linear element index held by thread t at register r

    @property
    def buffer(self) -> Buffer:
        return self.region.buffer

    @property
    def layout(self):
        return self.buffer.layout

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.buffer.shape)

    @property
    def dtype(self):
        return self.buffer.dtype

    @classmethod
    def of(cls, region: BufferRegion, threads: int, what: str = "register tile") -> RegTile:
        """The tile of ``region`` for a scope of ``threads`` threads (DispatchFail with the
        reason when the layout is not one the variants can serve)."""
        b = region.buffer
        layout = b.layout
        name = f"{what} {b.name!r}"
        if not is_reg_tile(region):
            raise DispatchFail(f"{name} is not a register tile (a local view whose layout has "
                               "thread axes, e.g. S[(128, 8):(1@tid_in_wg, 1)])")
        if region.shape != tuple(b.shape) or any(as_int(r.start) != 0 for r in region.region):
            raise DispatchFail(f"{name}: the operand must be the whole view {b.name}")
        if layout.swizzling is not None:
            raise DispatchFail(f"{name}: a register layout cannot be swizzled")
        bad = [a.name for a in layout.thread_axes() if a.name not in THREAD_AXES]
        if bad:
            raise DispatchFail(f"{name}: register layouts on the {bad[0]} axis are not "
                               "supported")
        if any(it.stride == 0 and it.extent > 1 for it in layout.shard):
            raise DispatchFail(f"{name}: a stride-0 iter in the layout places several "
                               "elements at one place")
        regs = layout.storage().span("m")
        elems = _table(layout, tuple(b.shape), threads, regs, name)
        tile = cls(region, threads, regs, elems)
        tile._check_coords(name)
        return tile

    # ---- who holds what ---------------------------------------------------------------
    @cached_property
    def _places(self):
        return self.layout.apply_np(np.arange(math.prod(self.shape)))

    def locate(self, tids: np.ndarray, elems: np.ndarray) -> np.ndarray:
        """The register at which thread ``tids[i]`` holds element ``elems[i]``, -1 where it
        does not hold it."""
        pl = {k: v[elems] for k, v in self._places.items()}
        held = np.zeros(len(elems), bool)
        axes = [a.name for a in self.layout.thread_axes()]
        for disp in self.layout.replicas():
            ok = np.ones(len(elems), bool)
            for a in axes:
                ok &= THREAD_AXES[a](tids) == pl[a] + disp.get(a, 0)
            held |= ok
        m = pl.get("m", np.zeros(len(elems), np.int64))
        return np.where(held, m, -1)

    def registers_for(self, other: RegTile, mapping) -> list[int]:
        """For each register ``r`` of ``other`` (a destination), the register of this tile
        that holds, in the same thread, the element ``mapping(other's element)`` -- the
        same register in every thread; DispatchFail otherwise."""
        t = np.repeat(np.arange(other.threads), other.regs)
        want = mapping(other.elems.reshape(-1))
        got = self.locate(t, want).reshape(other.threads, other.regs)
        if (got < 0).any():
            tt, r = (int(x[0]) for x in np.nonzero(got < 0))
            raise DispatchFail(
                f"{self.buffer.name!r} does not hold, in thread {tt}, the element that "
                f"thread's register {r} of {other.buffer.name!r} needs (element "
                f"{_coord(int(want.reshape(got.shape)[tt, r]), self.shape)}); register "
                "operands must be held by the threads that hold the destination's elements")
        if (got != got[:1]).any():
            tt, r = (int(x[0]) for x in np.nonzero(got != got[:1]))
            raise DispatchFail(
                f"{self.buffer.name!r} holds the operand of register {r} of "
                f"{other.buffer.name!r} in register {int(got[tt, r])} in thread {tt} but in "
                f"register {int(got[0, r])} in thread 0; the register must be the same in "
                "every thread")
        return got[0].tolist()

    # ---- coordinates as IR --------------------------------------------------------------
    def coords(self, r: int, t):
        """The logical coordinates of register ``r`` in thread ``t`` (an IR expression or a
        numpy array of scope thread ids)."""
        layout = self.layout.canonicalize()
        off = dict(layout.offset)
        out = []
        for iters in split_into(layout.shard, self.shape):
            c, inner = 0, 1
            for it in reversed(iters):
                if it.axis.name == "m":
                    place = r - off.get("m", 0)
                else:
                    place = THREAD_AXES[it.axis.name](t) - off.get(it.axis.name, 0)
                c = c + (place // it.stride) % it.extent * inner
                inner *= it.extent
            out.append(c)
        return out

    def _check_coords(self, name: str) -> None:
        t = np.arange(self.threads)
        dims = np.asarray(self.shape)
        for r in range(self.regs):
            cs = [np.broadcast_to(np.asarray(c, np.int64), t.shape) for c in self.coords(r, t)]
            lin = np.ravel_multi_index(cs, dims, mode="wrap")
            if (lin != self.elems[:, r]).any():
                tt = int(np.argmax(lin != self.elems[:, r]))
                raise DispatchFail(f"{name}: register {r} of thread {tt} holds element "
                                   f"{_coord(int(self.elems[tt, r]), self.shape)}, which the "
                                   "layout's per-axis digits do not give back (a replica that "
                                   "overlaps the shard?)")

    def flat(self, dtype=None) -> Buffer:
        return flat_view(self.buffer, dtype, self.regs if dtype is None else None)


def _coord(lin: int, shape) -> tuple[int, ...]:
    return tuple(int(x) for x in np.unravel_index(lin, shape))


def _table(layout, shape, threads: int, regs: int, name: str) -> np.ndarray:
    """``elems[t, r]`` from the layout evaluated for every element and replica."""
    n = math.prod(shape)
    places = layout.apply_np(np.arange(n))
    axes = [a.name for a in layout.thread_axes()]
    tids = np.arange(threads)
    own = {a: np.asarray(THREAD_AXES[a](tids)) for a in axes}
    base = 1 + max([threads] + [int(places[a].max()) + _reach(layout, a) for a in axes])
    key_t = sum(own[a] * base ** k for k, a in enumerate(axes))
    order = np.argsort(key_t, kind="stable")
    sorted_keys = key_t[order]
    m = places.get("m", np.zeros(n, np.int64))
    elems = np.full((threads, regs), -1, np.int64)
    count = np.zeros((threads, regs), np.int64)
    e = np.arange(n)
    for disp in layout.replicas():
        key_e = sum((places[a] + disp.get(a, 0)) * base ** k for k, a in enumerate(axes))
        lo = np.searchsorted(sorted_keys, key_e, "left")
        hi = np.searchsorted(sorted_keys, key_e, "right")
        if (hi == lo).any():
            bad = int(np.argmax(hi == lo))
            raise DispatchFail(f"{name}: element {_coord(bad, shape)} is held by no thread of "
                               f"the {threads}-thread scope (its place "
                               f"{ {a: int(places[a][bad] + disp.get(a, 0)) for a in axes} })")
        for k in range(int((hi - lo).max())):
            sel = lo + k < hi
            t = order[lo[sel] + k]
            np.add.at(count, (t, m[sel]), 1)
            elems[t, m[sel]] = e[sel]
    if (count != 1).any():
        t, r = (int(x[0]) for x in np.nonzero(count != 1))
        what = "no element" if count[t, r] == 0 else f"{int(count[t, r])} elements"
        raise DispatchFail(f"{name}: thread {t} holds {what} at register {r}; every thread of "
                           f"the scope must hold one element in each of the {regs} registers")
    return elems


def _reach(layout, axis: str) -> int:
    return sum(it.last for it in layout.replica if it.axis.name == axis)
