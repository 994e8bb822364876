"""Register fragments: where the elements of a register region live, numerically and as
expressions. Shared by the variants that move or compute register tiles (``copy -> reg``,
``copy -> ld_stmatrix``, ``gemm -> mma_sync``).

A register buffer's layout sends a logical element to a place on thread axes (which thread
holds it) and on ``m`` (its index in that thread's fragment). Inside a scope instance the
thread axes combine into one *scope thread* ``s``: ``laneid``, ``tid_in_wg`` and ``tx``
count threads, ``wid_in_wg`` and ``warpid`` count warps (``32 s``); warp ``s // 32`` of the
scope, lane ``s % 32``. A replica on a warp axis gives the element to several warps at the
same lane and register (A and B of a GEMM split over warps); any other replica is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.expr import BufferRegion, Expr, IntImm, as_int, binop
from ..ir.launch import WARP, WARPGROUP
from ..layout.ops import split_into
from .registry import DispatchFail

#: Thread axes -> scope threads per unit.
THREAD_SCALE = {"laneid": 1, "tid_in_wg": 1, "tx": 1, "wid_in_wg": WARP, "warpid": WARP}


def axis_value(name: str, tid: Expr) -> Expr:
    """The value of thread axis ``name`` in the thread whose CTA-linear id is ``tid``."""
    table = {"tid_in_wg": lambda: tid % WARPGROUP, "laneid": lambda: tid % WARP,
             "warpid": lambda: tid // WARP, "wid_in_wg": lambda: (tid // WARP) % 4,
             "wgid": lambda: tid // WARPGROUP, "tx": lambda: tid}
    if name not in table:
        raise DispatchFail(f"register layouts on the {name} axis are not supported")
    return table[name]()


def logical_coords(layout, shape, r: Expr, tid: Expr) -> list[Expr]:
    """The logical coordinates (one per dimension of ``shape``) of register element ``r``
    of the thread ``tid``: each iter's digit is ``(place // stride) % extent``, its place
    ``r`` on ``m`` and the thread's axis value on a thread axis."""
    out = []
    for iters in split_into(layout.canonicalize().shard, tuple(shape)):
        c: Expr = IntImm(0)
        inner = 1
        for it in reversed(iters):
            place = r if it.axis.name == "m" else axis_value(it.axis.name, tid)
            digit = binop("%", binop("//", place, it.stride), it.extent)
            c = c + digit * inner
            inner *= it.extent
        out.append(c)
    return out


@dataclass(frozen=True)
class Places:
    """Where the elements of a register region live: for region-relative ``[row, col]``,
    the scope thread of its first copy and its fragment element ``m``; ``shifts`` are the
    replicas' displacements in scope threads (multiples of 32; the first is 0)."""

    name: str
    thread: np.ndarray
    m: np.ndarray
    shifts: tuple[int, ...]

    def owners(self, first_thread: int) -> list[int]:
        """The warps (of the scope) holding an element whose first copy is in
        ``first_thread``."""
        return [(first_thread + s) // WARP for s in self.shifts]


def region_starts(r: BufferRegion, what: str) -> list[int]:
    starts = [as_int(x.start) for x in r.region]
    if any(s is None for s in starts):
        raise DispatchFail(f"{what} ({r.buffer.name!r}) starts at a run-time position; a "
                           "register tile is addressed with constant indices")
    return starts


def places(r: BufferRegion, thread_count: int, what: str) -> Places:
    """The :class:`Places` of register region ``r`` (2-D) in a scope of ``thread_count``
    threads, or DispatchFail naming what the layout does that registers cannot."""
    b = r.buffer
    if b.layout is None or not b.layout.thread_axes():
        raise DispatchFail(f"{what} ({b.name!r}) has no thread axes in its layout; give it a "
                           "fragment layout (e.g. layout=mma_fragment(...))")
    layout = b.layout
    for a in layout.axes():
        if a.name != "m" and a.name not in THREAD_SCALE:
            raise DispatchFail(f"{what}'s layout uses the {a.name} axis; a register tile is "
                               "laid out on m and thread axes")
    starts = region_starts(r, what)
    rows, cols = r.shape
    rr, cc = np.meshgrid(np.arange(rows) + starts[0], np.arange(cols) + starts[1],
                         indexing="ij")
    got = layout.apply_np(np.stack([rr.ravel(), cc.ravel()], 1), shape=b.shape)
    thread = sum(got[name] * k for name, k in THREAD_SCALE.items() if name in got)
    shifts = _shifts(layout, what)
    last = int(thread.max()) + max(shifts)
    if last >= thread_count:
        raise DispatchFail(f"{what}'s layout puts elements in thread {last} of the scope, "
                           f"which has {thread_count} threads")
    return Places(b.name, thread.reshape(rows, cols), got["m"].reshape(rows, cols), shifts)


def _shifts(layout, what: str) -> tuple[int, ...]:
    out = []
    for rep in layout.replicas():
        s = sum(v * THREAD_SCALE.get(k, 0) for k, v in rep.items())
        if s % WARP or any(k not in THREAD_SCALE for k in rep):
            raise DispatchFail(f"{what}'s layout replicates elements inside a warp ({rep}); "
                               "only whole warps may hold copies of an element")
        out.append(s)
    return tuple(out)


def word_view(root, need: int, what: str):
    """A ``uint32`` view (``<root>_32b``) of register storage ``root``, whose word ``k`` is
    bytes ``4k..4k+3`` of every thread's fragment; DispatchFail when the storage has fewer
    than ``need`` whole words."""
    from ..ir import dtype as dt
    from ..ir.stmt import Buffer
    from ..passes.indexing import storage_size

    nbits = storage_size(root.shape, root.layout) * root.dtype.bits  # one thread's part
    if nbits % 32 or nbits // 32 < need:
        raise DispatchFail(f"register buffer {root.name!r} holds {nbits // 8} bytes per thread; "
                           f"{what} needs {need} whole 32-bit registers")
    return Buffer(root.name + "_32b", (nbits // 32,), dt.uint32, "local", view_of=root,
                  span=root.span)
