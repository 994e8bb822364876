"""Row tilings: register layouts for kernels that keep rows in registers (softmax,
normalisations), with 16-byte vector accesses and enough bytes in flight, for every row
length.

A tiling puts ``rows`` rows in a CTA (``rows_per_thread`` of them in each thread's
registers), ``threads_per_row`` threads on each row, and gives every thread ``vectors``
vectors of ``vec`` consecutive elements of each of its rows; the vectors of a row's
threads are interleaved so that a warp's accesses are contiguous (coalesced)::

    element (rt * RB + rb, k * G * vec + g * vec + i)
        -> thread rb * G + g (tx), register (rt * K + k) * vec + i

A row of ``cols`` elements that is not a whole number of such tiles is a **partial
tile**: the tile is ``chunk = vectors * threads_per_row * vec`` columns wide, and the
copies clip it at the array's end (loads fill, stores skip; docs/dispatch.md "Partial
tiles"). A row longer than one tile in registers is walked in ``chunks`` tiles.

:meth:`RowTiling.plan` chooses the tiling:

1. ``vec``: the widest vector up to 16 bytes that divides the row (so that every row
   starts aligned to it): 8 halves for a row of 3000, 1 for a row of 50257.
2. ``threads_per_row`` G (a power of two up to 1024) and ``vectors`` K per thread: the
   fewest threads whose rows of ``vectors`` (64 bytes by default) vectors cover the row,
   then, if that pads the row by more than an eighth, the neighbouring G with the least
   padding (a row of 5120 halves: 128 threads of 5 vectors, no padding, rather than 256 of
   3). A row that needs more than ``MAX_ELEMS`` elements per thread at 1024 threads is
   chunked: ``chunks`` tiles of K vectors per thread, K chosen so the chunks are about
   equally full: 512 threads per row (up to 128 registers each) and ``max_elems``
   elements per thread by default.
3. Rows per CTA: short rows put several rows in a thread (``rows_per_thread``, up to the
   vectors target) and several row groups in a CTA of about ``threads`` (256) threads,
   never many more rows than the array has.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilewise.layout.axes import tx
from tilewise.layout.builder import R, S
from tilewise.layout.layout import TileLayout

#: Elements of a row per thread above which a row is chunked (at 1024 threads per row:
#: 64 registers per thread is the most a 1024-thread CTA may have).
MAX_ELEMS = 32
MAX_THREADS = 1024
CHUNK_THREADS = 512  # threads per row of a chunked row: up to 128 registers each


@dataclass(frozen=True)
class RowTiling:
    rows: int  # rows per CTA (R = rows_per_thread * row groups)
    threads_per_row: int  # G
    vectors: int  # vectors per thread and row per chunk (K)
    vec: int  # elements per vector
    rows_per_thread: int = 1  # RT
    chunks: int = 1  # tiles per row (1: the row is held in registers)

    @property
    def groups(self) -> int:
        """Row groups per CTA (RB): the rows are ``rows_per_thread`` x ``groups``."""
        return self.rows // self.rows_per_thread

    @property
    def threads(self) -> int:
        return self.groups * self.threads_per_row

    @property
    def cols(self) -> int:
        """Columns of one tile (the chunk width)."""
        return self.vectors * self.threads_per_row * self.vec

    @property
    def regs(self) -> int:
        """Registers (elements) per thread of a row tile."""
        return self.rows_per_thread * self.vectors * self.vec

    @classmethod
    def plan(cls, rows: int, cols: int, elem_bytes: int, threads: int | None = None,
             vectors: int | None = None, chunk: int | None = None,
             max_elems: int = MAX_ELEMS) -> RowTiling:
        """The tiling of ``rows x cols`` elements of ``elem_bytes`` bytes (see the module
        doc). ``threads``: threads per CTA (default 256; for a chunked row, threads per
        row, default 1024); ``vectors``: vectors per thread and row (default 64 bytes);
        ``chunk``: walk the row in chunks of about this many columns even if it would fit
        registers (for tests of the chunked kernels at small sizes); ``max_elems``: elements
        of a row per thread at 1024 threads per row (twice that below), beyond which the
        row is chunked (a kernel with more live tiles per element takes fewer)."""
        if rows < 1 or cols < 1:
            raise ValueError(f"a row tiling needs at least one row and column, got "
                             f"{rows} x {cols}")
        vec = max(16 // elem_bytes, 1)
        while cols % vec:
            vec //= 2
        n = cols // vec
        want = vectors or max(1, 64 // (vec * elem_bytes))
        if chunk is not None:
            g, k = _row_split(-(-chunk // vec), want, vec, max_elems) or (MAX_THREADS, want)
            g = threads or g
            return cls(1, g, k, vec, 1, -(-n // (g * k)))
        split = _row_split(n, want, vec, max_elems)
        if split is None:
            return cls._chunked(n, vec, threads or CHUNK_THREADS,
                                vectors or max(1, max_elems // vec))
        g, k = split
        rt = max(1, min(want // k, _pow2_at_least(rows)))
        per_cta = threads or 256
        rb = 1
        while rb * 2 * g <= per_cta and rb * 2 * rt <= _pow2_at_least(rows):
            rb *= 2
        return cls(rt * rb, g, k, vec, rt)

    @staticmethod
    def plan_rows(rows: int) -> int:
        """The row count a plan for ``rows`` rows may as well be made for: the plan only
        caps its rows per CTA by the array's (rounded up to a power of two), and no plan
        puts more than 256 rows in a CTA except for the narrowest rows; so kernels with a
        symbolic row count made for 256, 4096 and 65536 rows are one kernel."""
        return min(_pow2_at_least(rows), 256)

    @classmethod
    def _chunked(cls, n: int, vec: int, g: int, kmax: int) -> RowTiling:
        chunks = -(-n // (g * kmax))
        return cls(1, g, -(-n // (g * chunks)), vec, 1, chunks)

    def tile(self) -> TileLayout:
        """``(rows, cols)``: the CTA's rows (one chunk of each) in registers."""
        g, k, v, rt = self.threads_per_row, self.vectors, self.vec, self.rows_per_thread
        if rt == 1:
            return S[(self.rows, k, g, v):(g @ tx, v, 1 @ tx, 1)]
        return S[(rt, self.groups, k, g, v):(k * v, g @ tx, v, 1 @ tx, 1)]

    def per_row(self) -> TileLayout:
        """``(rows, 1)``: one value per row, held by each of the row's threads."""
        g, rt = self.threads_per_row, self.rows_per_thread
        if rt == 1:
            return S[(self.rows, 1):(g @ tx, 1)] + R[g:1 @ tx]
        return S[(rt, self.groups, 1):(1, g @ tx, 1)] + R[g:1 @ tx]

    def by_thread(self) -> TileLayout:
        """``(G, K * vec)``: a one-row tile's registers viewed by thread (row g: what thread g
        holds), so a reduction over ``axes=-1`` stays in each thread's registers."""
        g, k, v = self.threads_per_row, self.vectors, self.vec
        return S[(g, k, v):(1 @ tx, v, 1)]

    def per_thread(self) -> TileLayout:
        """``(G, 1)``: one value per thread of a row (a thread's partial result)."""
        return S[(self.threads_per_row, 1):(1 @ tx, 1)]

    def across_threads(self) -> TileLayout:
        """``(1, G)``: the same per-thread values as one row, to reduce across the threads."""
        return S[(1, self.threads_per_row):(1, 1 @ tx)]

    def columns(self) -> TileLayout:
        """``(cols,)``: a row vector (weights), each thread holding its columns, replicated
        over the CTA's row groups."""
        g = self.threads_per_row
        out = S[(self.vectors, g, self.vec):(self.vec, 1 @ tx, 1)]
        return out + R[self.groups:g @ tx] if self.groups > 1 else out


def row_configs(rows: int, cols: int, elem_bytes: int, max_elems: int = MAX_ELEMS) -> list[dict]:
    """Candidate configurations ``{"threads": ..., "vectors": ...}`` of a row kernel for a
    tuner (:func:`tilewise.autotune`), the plan's own first: other CTA sizes and half or
    twice the vectors per thread, and for a row that takes 512 threads or more, the row in
    two chunks (``chunk=``: a second read from L2, but CTAs small enough to overlap); for a
    chunked row, 256 or 1024 threads per row. Each distinct tiling once."""
    base = RowTiling.plan(rows, cols, elem_bytes, max_elems=max_elems)
    out = [{"threads": None, "vectors": None}]
    if base.chunks > 1:
        out += [{"threads": 256, "vectors": None},
                {"threads": MAX_THREADS, "vectors": max(1, max_elems * 3 // 4 // base.vec)}]
    else:
        out += [{"threads": t, "vectors": None} for t in (128, 512)]
        out += [{"threads": None, "vectors": k} for k in (base.vectors // 2, base.vectors * 2)
                if k >= 1]
        if base.threads_per_row >= 512:  # one CTA per SM: two chunks let more CTAs overlap
            out.append({"threads": None, "vectors": None, "chunk": -(-cols // 2)})
    seen, unique = set(), []
    for c in out:
        try:
            key = RowTiling.plan(rows, cols, elem_bytes, c["threads"], c["vectors"],
                                 c.get("chunk"), max_elems)
        except ValueError:
            continue
        if key not in seen:
            seen.add(key)
            unique.append(c)
    return unique


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def _cap(g: int, vec: int, max_elems: int) -> int:
    """Vectors per thread a row may take at ``g`` threads per row: ``max_elems`` elements
    in a CTA of 1024 threads (64 registers each), twice that in smaller ones."""
    return max(1, (max_elems if g >= MAX_THREADS else 2 * max_elems) // vec)


def _row_split(n: int, want: int, vec: int, max_elems: int) -> tuple[int, int] | None:
    """``(G, K)`` for a row of ``n`` vectors held in registers: the fewest threads (a power
    of two) with at most ``want`` vectors each, or a neighbour that pads the row less when
    that one pads it by more than an eighth; None when the row does not fit registers."""
    g = 1
    while g < MAX_THREADS and -(-n // g) > want:
        g *= 2
    k = -(-n // g)
    if k > _cap(g, vec, max_elems):
        return None
    pad = g * k - n
    if pad * 8 <= n:
        return g, k
    best = (pad, g, k)
    for cand in (g // 2, g * 2):
        kc = -(-n // max(cand, 1))
        if 1 <= cand <= MAX_THREADS and kc <= min(_cap(cand, vec, max_elems), 2 * want) \
                and cand * kc - n < best[0]:
            best = (cand * kc - n, cand, kc)
    return best[1], best[2]
