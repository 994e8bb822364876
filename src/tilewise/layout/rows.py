"""Row tilings: register layouts for kernels that keep whole rows in registers (softmax,
normalisations), with 16-byte vector accesses and enough bytes in flight.

A tiling puts ``rows`` rows in a CTA, ``threads_per_row`` threads on each row, and gives
every thread ``vectors`` vectors of ``vec`` consecutive elements of its row, the vectors of
a row's threads interleaved so that a warp's accesses are contiguous (coalesced)::

    element (r, k * G * vec + g * vec + v) -> thread r * G + g (tx), register k * vec + v

:meth:`RowTiling.plan` chooses it: the widest vector up to 16 bytes that divides a row, then
the most threads per row (a power of two, at most 1024) that still leaves each thread
``vectors`` vectors (4 by default: 64 bytes in flight per thread), then as many rows as
fill ``threads`` threads per CTA (256 by default) and divide the row count.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilewise.layout.axes import tx
from tilewise.layout.builder import R, S
from tilewise.layout.layout import TileLayout


@dataclass(frozen=True)
class RowTiling:
    rows: int  # rows per CTA (R)
    threads_per_row: int  # G
    vectors: int  # vectors per thread (K)
    vec: int  # elements per vector

    @property
    def threads(self) -> int:
        return self.rows * self.threads_per_row

    @property
    def cols(self) -> int:
        return self.vectors * self.threads_per_row * self.vec

    @property
    def regs(self) -> int:
        """Registers (elements) per thread of a row tile."""
        return self.vectors * self.vec

    @classmethod
    def plan(cls, rows: int, cols: int, elem_bytes: int, threads: int | None = None,
             vectors: int = 4) -> RowTiling:
        """The tiling of ``rows x cols`` elements of ``elem_bytes`` bytes (see the module
        doc); ValueError when a row does not split into whole vectors over a power-of-two
        number of threads with at most 64 vectors each."""
        vec = max(16 // elem_bytes, 1)
        while cols % vec:
            vec //= 2
        chunks = cols // vec
        g = 1
        while (g * 2 <= min(chunks, 1024) and chunks % (g * 2) == 0
               and chunks // (g * 2) >= vectors):
            g *= 2
        if chunks % g or chunks // g > 64:
            raise ValueError(f"a row of {cols} elements does not split into whole vectors "
                             "over a power-of-two number of threads")
        r = max(1, (threads or 256) // g)
        while rows % r:
            r //= 2
        return cls(r, g, chunks // g, vec)

    def tile(self) -> TileLayout:
        """``(rows, cols)``: the CTA's rows in registers."""
        g = self.threads_per_row
        return S[(self.rows, self.vectors, g, self.vec):(g @ tx, self.vec, 1 @ tx, 1)]

    def per_row(self) -> TileLayout:
        """``(rows, 1)``: one value per row, held by each of the row's threads."""
        g = self.threads_per_row
        return S[(self.rows, 1):(g @ tx, 1)] + R[g:1 @ tx]

    def columns(self) -> TileLayout:
        """``(cols,)``: a row vector (weights), each thread holding its columns, replicated
        over the CTA's rows."""
        g = self.threads_per_row
        return S[(self.vectors, g, self.vec):(self.vec, 1 @ tx, 1)] + R[self.rows:g @ tx]


def persistent_ctas(groups: int, sms: int = 132, per_sm: int = 3) -> int:
    """CTAs of a persistent kernel walking ``groups`` row groups two at a time:
    ``sms * per_sm`` (the H200's 132 SMs; 3 CTAs of 256 threads fit at up to 85 registers),
    or the nearest number at most 10 % below it that gives every CTA the same even number
    of groups (no tail)."""
    want = min(sms * per_sm, groups)
    for c in range(want, int(want * 0.9), -1):
        if groups % (2 * c) == 0:
            return c
    return want
