"""Tensor memory of one CTA (``ctx.tmem``, the async core's part ``"tmem"``),
ptx-semantics.md §1: 128 lanes x 512 columns of 32-bit cells and a private 512-column pool
(one CTA per simulated SM).

The allocator takes the lowest free range aligned to its size; sizes must not grow,
nothing may be allocated after ``relinquish_alloc_permit``, and a dealloc must match a live
allocation exactly. ``st_pending`` remembers, per cell, the thread whose ``tcgen05.st`` has
not been waited for (``tcgen05.wait::st``). Each allocation remembers the warp that made
it: ``dealloc`` must come from that warp (the owner ptxas's debug checks look for)."""

from __future__ import annotations

import numpy as np

from ....ptx.tcgen05 import COLS, LANES
from ...async_core import Part, async_part


@async_part("tmem", order=4)
class TensorMemory(Part):
    def __init__(self, core):
        super().__init__(core)
        self.cells = np.full((LANES, COLS), 0xA5A5A5A5, np.uint32)
        self.owned = np.zeros(COLS, bool)
        self.allocs: dict[int, tuple[int, object, int]] = {}  # start -> (n_cols, span, warp)
        self.freed: dict[tuple[int, int], object] = {}
        self.last_size = COLS
        self.relinquished = None
        self.st_pending = np.full((LANES, COLS), -1, np.int32)

    def take(self, n: int, span, warp: int) -> int | None:
        """The first column of a free, ``n``-aligned range of ``n`` columns, now owned by
        ``warp`` (None when there is none)."""
        for start in range(0, COLS, n):
            if not self.owned[start:start + n].any():
                self.owned[start:start + n] = True
                self.allocs[start] = (n, span, warp)
                self.last_size = n
                return start
        return None

    def free(self, col: int, n: int, span) -> bool:
        """Free the allocation at column ``col`` of ``n`` columns; False if none matches."""
        live = self.allocs.get(col)
        if live is None or live[0] != n:
            return False
        del self.allocs[col]
        self.owned[col:col + n] = False
        self.freed[(col, n)] = span
        return True

    def unallocated(self, lanes, cols) -> int | None:
        """The first column of cells (``lanes``, ``cols``) outside the tensor memory or
        not allocated, None when all are allocated."""
        lanes, cols = np.asarray(lanes), np.asarray(cols)
        bad = (cols < 0) | (cols >= COLS) | (lanes < 0) | (lanes >= LANES)
        bad |= ~self.owned[np.clip(cols, 0, COLS - 1)]
        return int(np.broadcast_to(cols, bad.shape)[bad].flat[0]) if bad.any() else None
