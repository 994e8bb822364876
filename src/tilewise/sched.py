"""Tile schedulers for persistent kernels: the order of the work, written once.

A persistent kernel runs one CTA (or cluster) per SM and walks a list of work units; in a
warp-specialised kernel every role (the TMA producer, the MMA consumers, the epilogue)
must walk the *same* list, or the pipeline deadlocks or computes the wrong tile. These
``@T.meta_class`` schedulers hold the walk's parameters; each role makes no decision of
its own but calls the scheduler's ``@T.inline`` methods, which the parser writes into each
call site:

.. code-block:: python

    sched = GroupedTiles(m_tiles, n_tiles, first=bx, step=num_ctas)
    if producer:
        for j in sched.tiles():                  # this CTA's tiles, counted 0, 1, ...
            mt, nt = sched.coords(j)
            ...                                  # load the operands of tile (mt, nt)
    else:
        for j in sched.tiles():
            mt, nt = sched.coords(j)
            ...                                  # multiply and store tile (mt, nt)

* :class:`GroupedTiles` — whole output tiles in *grouped* order (``group_m`` tile rows at
  a time, down the columns of the group, so tiles that run together share rows of A and
  columns of B in L2), dealt round robin: CTA ``first`` takes ``first``, ``first + step``…
* :class:`SplitK` — each output tile's K blocks cut into ``splits`` slices of nearly equal
  length (the first ``k_tiles % splits`` one block longer); the slices of a tile are
  consecutive units, so CTAs that run together hold the slices of one tile.
* :class:`Snake` — units of unequal length listed longest first, dealt round by round in
  alternating directions (CTA ``first`` takes the ``first``-th unit of even rounds and the
  ``first``-th from the end of odd ones), so a CTA that drew a long unit in one round draws
  a short one in the next and the CTAs finish together.
* :class:`StreamK` — the K blocks of all tiles laid end to end (tile by tile, in grouped
  order) and cut into ``ctas`` contiguous, equal ranges: CTA ``first`` walks its range as
  *segments* (the blocks of one tile inside it). A tile split between CTAs needs its
  partial sums reduced; the scheduler says which segment is a tile's first and last.
* :class:`HybridStreamK` — whole waves of tiles as :class:`GroupedTiles`, then the K
  blocks of the tiles left over (less than a wave) shared out as stream-K ranges, dealt
  backwards so that the CTA finishing a split tile waits only for lower-numbered CTAs
  (the stream-K GEMM of ``examples/gemm_hopper.py``).

Every size, ``first`` and ``step`` may be a compile-time int or a run-time value. Unit indices
are int32: ``m_tiles · n_tiles · k_tiles · ctas`` must stay below 2³¹ for StreamK.
"""

from __future__ import annotations

from .script import T


@T.inline
def grouped_coords(t, m_tiles, n_tiles, group_m):
    """(tile row, tile column) of tile ``t`` when tiles are walked ``group_m`` rows at a time,
    down each column of the group (the last group may have fewer rows)."""
    in_group = group_m * n_tiles
    first = t // in_group * group_m
    rows = T.min(m_tiles - first, group_m)
    return first + t % in_group % rows, t % in_group // rows


@T.meta_class
class GroupedTiles:
    """Whole output tiles of an ``m_tiles x n_tiles`` grid, grouped, dealt round robin to
    CTAs: this CTA (``first``) takes tiles ``first, first + step, ...``. The loop counts
    this CTA's tiles ``j = 0, 1, ...`` (the count a ring's phase or a double-buffered
    accumulator is derived from); ``coords(j)`` is where tile ``j`` lies."""

    def __init__(self, m_tiles, n_tiles, first, step, group_m=8):
        self.m_tiles, self.n_tiles, self.group_m = m_tiles, n_tiles, group_m
        self.first, self.step = first, step
        self.count = m_tiles * n_tiles

    def tiles(self):
        """The device loop over this CTA's tiles: ``for j in sched.tiles():``."""
        return T.serial(T.max(T.ceildiv(self.count - self.first, self.step), 0))

    def index(self, j):
        """The grid-wide index of this CTA's ``j``-th tile."""
        return self.first + j * self.step

    @T.inline
    def coords(self, j):
        """(tile row, tile column) of this CTA's ``j``-th tile."""
        return grouped_coords(self.index(j), self.m_tiles, self.n_tiles, self.group_m)


@T.meta_class
class SplitK:
    """Units (tile, slice): each tile's ``k_tiles`` K blocks cut into ``splits`` slices,
    the slices of one tile consecutive; dealt round robin like :class:`GroupedTiles`."""

    def __init__(self, m_tiles, n_tiles, k_tiles, splits, first, step, group_m=8):
        self.m_tiles, self.n_tiles, self.k_tiles = m_tiles, n_tiles, k_tiles
        self.splits, self.group_m, self.first, self.step = splits, group_m, first, step
        self.count = m_tiles * n_tiles * splits

    def units(self):
        """The device loop over this CTA's units: ``for j in sched.units():``."""
        return T.serial(T.max(T.ceildiv(self.count - self.first, self.step), 0))

    def index(self, j):
        """The grid-wide index of this CTA's ``j``-th unit."""
        return self.first + j * self.step

    @T.inline
    def coords(self, j):
        """(tile row, tile column, slice, first K block, end K block) of unit ``j``."""
        u = self.index(j)
        s = u % self.splits
        mt, nt = grouped_coords(u // self.splits, self.m_tiles, self.n_tiles, self.group_m)
        kb = s * self.k_tiles // self.splits
        ke = (s + 1) * self.k_tiles // self.splits
        return mt, nt, s, kb, ke


@T.meta_class
class Snake:
    """``count`` units, longest first, dealt to ``step`` CTAs in rounds: round ``r`` holds
    units ``r·step … r·step + step - 1``; CTA ``first`` takes the ``first``-th of them when
    ``r`` is even and the ``(step - 1 - first)``-th when it is odd. Dealt round robin
    instead, CTA 0 would draw the longest unit of every round and finish last; alternating
    pairs each round's long units with the next round's short ones.

    The last round may hold no unit for this CTA, so the walk is guarded:

    .. code-block:: python

        for r in sched.rounds():
            u = sched.index(r)
            if u >= sched.count:
                continue
            ...                                  # unit u

    Every unit is taken by exactly one CTA (``tests/script/test_sched.py``)."""

    def __init__(self, count, first, step):
        self.count, self.first, self.step = count, first, step

    def rounds(self):
        """The device loop over the rounds: ``for r in sched.rounds():``."""
        return T.serial(T.ceildiv(self.count, self.step))

    @T.inline
    def index(self, r):
        """The unit this CTA takes in round ``r`` (``>= count``: none)."""
        return r * self.step + T.select(r % 2 == 0, self.first, self.step - 1 - self.first)


@T.meta_class
class StreamK:
    """The K blocks of every tile end to end, cut into ``ctas`` equal contiguous ranges;
    this CTA (``first``) walks ``[begin, end)`` segment by segment:

    .. code-block:: python

        it = sched.begin
        while it < sched.end:
            mt, nt, kb, ke = sched.segment(it)
            ...                               # K blocks kb..ke-1 of tile (mt, nt)
            it = it + (ke - kb)

    A segment with ``kb > 0`` or ``ke < k_tiles`` holds a partial sum of its tile."""

    def __init__(self, m_tiles, n_tiles, k_tiles, first, ctas, group_m=8):
        self.m_tiles, self.n_tiles, self.k_tiles = m_tiles, n_tiles, k_tiles
        self.group_m = group_m
        self.total = m_tiles * n_tiles * k_tiles
        self.begin = first * self.total // ctas
        self.end = (first + 1) * self.total // ctas

    @T.inline
    def segment(self, it):
        """(tile row, tile column, first K block, end K block) of the segment at ``it``."""
        kb = it % self.k_tiles
        ke = T.min(self.k_tiles, kb + (self.end - it))
        mt, nt = grouped_coords(it // self.k_tiles, self.m_tiles, self.n_tiles, self.group_m)
        return mt, nt, kb, ke


@T.meta_class
class HybridStreamK:
    """Whole waves of tiles, then the rest by K blocks: the tiles that fill whole waves of
    ``ctas`` are dealt round robin as by :class:`GroupedTiles` (``dp`` of them, ``dp /
    ctas`` to each CTA), and the K blocks of the remaining ``sk_tiles`` (fewer than a wave,
    which would leave SMs idle) are laid end to end and cut into ranges of ``q`` blocks
    (at least ``min_blocks``). The ranges are dealt *backwards*: CTA ``first`` takes range
    ``ctas - 1 - first``, walked forwards as segments (the blocks of one tile inside it):

    .. code-block:: python

        for j in sched.tiles():                  # whole tiles, as GroupedTiles
            mt, nt = sched.coords(j)
        for g in sched.segments():               # then this CTA's stream-K segments
            t, mt, nt, kb, ke = sched.segment(g)  # stream-K tile t, its K blocks kb..ke-1
            if kb == 0:                          # the tile's first blocks: its finisher
                lo, hi = sched.helpers(t)        # ranges lo..hi-1 hold the rest of tile t
                ...                              # CTA ctas-1-r for each range r

    So the CTA that holds a tile's first K blocks (its *finisher*) works on them last in
    its range, and the other CTAs on that tile (its *helpers*) have lower indices and did
    their part first in theirs: the finisher waits only for CTAs that started before it
    (what the hardware's in-order start guarantees to make progress, and what the
    simulator's in-order run can check), and rarely waits at all. Each CTA has at most one
    helper segment (the first of its range), so one partial-sum slot per CTA suffices."""

    def __init__(self, m_tiles, n_tiles, k_tiles, first, ctas, group_m=8, min_blocks=1):
        self.m_tiles, self.n_tiles, self.k_tiles = m_tiles, n_tiles, k_tiles
        self.first, self.ctas, self.group_m = first, ctas, group_m
        self.count = m_tiles * n_tiles
        self.waves = self.count // ctas
        self.dp = self.waves * ctas
        self.sk_tiles = self.count - self.dp
        self.total = self.sk_tiles * k_tiles
        self.q = T.max(T.ceildiv(self.total, ctas), min_blocks)
        self.range = ctas - 1 - first
        self.begin = T.min(self.range * self.q, self.total)
        self.end = T.min(self.begin + self.q, self.total)

    def tiles(self):
        """The device loop over this CTA's whole tiles: ``for j in sched.tiles():``."""
        return T.serial(self.waves)

    def index(self, j):
        return self.first + j * self.ctas

    @T.inline
    def coords(self, j):
        """(tile row, tile column) of this CTA's ``j``-th whole tile."""
        return grouped_coords(self.index(j), self.m_tiles, self.n_tiles, self.group_m)

    def segments(self):
        """The device loop over this CTA's stream-K segments (none when its range is empty)."""
        return T.serial(T.select(self.end > self.begin,
                                 (self.end - 1) // self.k_tiles - self.begin // self.k_tiles + 1,
                                 0))

    @T.inline
    def segment(self, g):
        """(stream-K tile, tile row, tile column, first K block, end K block) of segment
        ``g``: stream-K tile ``t`` is tile ``dp + t`` of the grouped order."""
        t = self.begin // self.k_tiles + g
        kb = T.max(self.begin, t * self.k_tiles) - t * self.k_tiles
        ke = T.min(self.end, (t + 1) * self.k_tiles) - t * self.k_tiles
        mt, nt = grouped_coords(self.dp + t, self.m_tiles, self.n_tiles, self.group_m)
        return t, mt, nt, kb, ke

    @T.inline
    def helpers(self, t):
        """The ranges ``lo .. hi - 1`` that hold the rest of stream-K tile ``t`` after its
        finisher's range (``lo == hi``: none); range ``r`` is CTA ``ctas - 1 - r``'s."""
        return self.range + 1, ((t + 1) * self.k_tiles - 1) // self.q + 1
