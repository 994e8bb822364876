"""The analysis the register reductions share: which registers each thread folds, which
threads combine their partial results, and how (:func:`plan`).

With ``src`` and ``dst`` register tiles of one scope instance of ``T`` threads
(:class:`tilewise.tile.regtile.RegTile`):

1. ``part[t, r]``: the destination element src register ``r`` of thread ``t`` reduces into
   (the src coordinates without the reduced axes). The registers of a thread fall into
   groups with one destination element each; the grouping must be the same in every
   thread (register lists ``groups[j]``), so each thread computes ``J`` partial results.
2. ``pval[t, j]``: the element of thread ``t``'s partial ``j``. The *reduced thread bits*
   ``B`` are the bits ``b`` of the scope-relative thread id with ``pval[t ^ 2^b] ==
   pval[t]`` for every thread: the threads combining one element are exactly an orbit
   ``t xor span(B)`` (checked by counting: each element has ``2^|B|`` partials, so no other
   thread and no other group contributes to it, and no src element is held twice).
3. Lane bits of ``B`` (0..4) are combined by ``shfl.sync.bfly`` butterflies, warp bits
   (5..) through shared memory: the first lane of each orbit's warp part writes its
   partial to slot ``(orbit * J + j) * W + rank``, a barrier, then every thread folds the
   ``W`` slots of its orbit in one fixed order, so all threads of an orbit hold the same
   bits.
4. Each destination register ``rd`` takes the total of the group ``j(rd)`` whose element it
   holds (the same ``j`` in every thread; a thread holding a destination element it does not
   help reduce is declined).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilewise.tile.regtile import RegTile
from tilewise.tile.registry import DispatchFail
from tilewise.tile.compute import region_text

WARP_BITS = 5


@dataclass
class RedPlan:
    src: RegTile
    dst: RegTile
    groups: list[list[int]]  # src registers folded into partial j
    dst_group: list[int]  # partial j of each dst register
    bits: list[int]  # reduced thread bits (B)
    threads: int

    @property
    def lane_bits(self) -> list[int]:
        return [b for b in self.bits if b < WARP_BITS]

    @property
    def warp_bits(self) -> list[int]:
        return [b for b in self.bits if b >= WARP_BITS]

    @property
    def orbits(self) -> int:
        return self.threads >> len(self.bits)

    def describe(self) -> str:
        parts = [f"{len(self.groups)} partial(s) of {len(self.groups[0])} register(s) per "
                 "thread"]
        if self.lane_bits:
            parts.append(f"{len(self.lane_bits)} shfl.sync.bfly step(s) (lane masks "
                         f"{', '.join(str(1 << b) for b in self.lane_bits)})")
        if self.warp_bits:
            parts.append(f"{1 << len(self.warp_bits)} warps through shared memory")
        return ", ".join(parts)


def _projection(src_shape, dst_shape, axes):
    kept = [d for d in range(len(src_shape)) if d not in axes]

    def f(lin: np.ndarray) -> np.ndarray:
        c = np.unravel_index(lin, tuple(src_shape))
        dims = [src_shape[d] for d in kept] or [1]
        cc = [c[d] for d in kept] or [np.zeros_like(lin)]
        return np.ravel_multi_index(cc, tuple(dims))
    return f


def plan(ctx) -> RedPlan:
    T = ctx.thread_count
    src = RegTile.of(ctx.src, T, "src")
    dst = RegTile.of(ctx.dst, T, "dst")
    axes = ctx.option("axes")
    part = _projection(src.shape, dst.shape, axes)(src.elems.reshape(-1)).reshape(src.elems.shape)
    if np.unique(src.elems).size != src.elems.size:
        raise DispatchFail(f"src {region_text(ctx.src)} is replicated (an element is held by "
                           "several threads): it would be counted more than once")
    groups, labels = _groups(part)
    first = [g[0] for g in groups]
    pval = part[:, first]
    bits = _reduced_bits(pval, T)
    _, counts = np.unique(pval, return_counts=True)
    if (counts != (1 << len(bits))).any():
        raise DispatchFail(
            f"the threads that reduce one destination element are not a group of threads "
            f"whose ids differ in fixed bits ({int(counts.max())} partials per element, "
            f"bits {bits}); lay the reduced axis out along lanes and warps")
    return RedPlan(src, dst, groups, _dst_groups(dst, pval), bits, T)


def _groups(part: np.ndarray):
    """Registers grouped by destination element, the same grouping in every thread."""
    _, first_idx, labels = np.unique(part[0], return_index=True, return_inverse=True)
    order = np.argsort(first_idx)  # groups in order of their first register
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    labels = rank[labels]
    groups = [np.nonzero(labels == j)[0].tolist() for j in range(len(order))]
    lead = np.array([g[0] for g in groups])[labels]
    same = (part == part[:, lead]).all()
    distinct = all(np.unique(part[t]).size == len(groups) for t in range(part.shape[0]))
    if not (same and distinct):
        t = next(t for t in range(part.shape[0]) if not (
            (part[t] == part[t, lead]).all() and np.unique(part[t]).size == len(groups)))
        raise DispatchFail(f"thread {t} groups its src registers by destination element "
                           "differently from thread 0; the registers folded together must be "
                           "the same in every thread")
    return groups, labels


def _reduced_bits(pval: np.ndarray, T: int) -> list[int]:
    if T & (T - 1):
        if np.unique(pval).size != pval.size:
            raise DispatchFail(f"the scope has {T} threads, not a power of two; only "
                               "thread-local reductions are supported then")
        return []
    t = np.arange(T)
    return [b for b in range(T.bit_length() - 1) if (pval[t ^ (1 << b)] == pval).all()]


def _dst_groups(dst: RegTile, pval: np.ndarray) -> list[int]:
    out = []
    for rd in range(dst.regs):
        want = dst.elems[:, rd:rd + 1]
        hit = pval == want
        j = int(np.argmax(hit[0])) if hit[0].any() else -1
        if j < 0 or not hit[:, j].all():
            t = 0 if j < 0 else int(np.argmax(~hit[:, j]))
            raise DispatchFail(
                f"thread {t} holds destination element "
                f"{tuple(int(x) for x in np.unravel_index(int(want[t, 0]), dst.shape))} in "
                f"register {rd} but does not reduce it (in the same partial as thread 0); "
                "the destination must be held by the threads that reduce its elements")
        out.append(j)
    return out
