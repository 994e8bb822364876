"""Tutorial step 2: B = A transposed, through a tile of shared memory (docs/tutorial.md).

A warp's 32 lanes should touch consecutive global addresses (a *coalesced* access: 128
bytes in four 32-byte sectors). A transpose cannot do that on both sides directly: if
lanes read a row of A, they write a column of B. So each CTA stages a 32 x 32 tile:

1. read rows of A (coalesced) and store them as rows of the shared tile;
2. ``T.cuda.cta_sync()``: every thread's stores are visible to every thread;
3. read *columns* of the tile and write them as rows of B (coalesced).

Step 3 reads shared memory down a column, and shared memory is 32 banks of 4 bytes: in a
row-major 32 x 32 float32 tile, a column lies in one bank, so 32 lanes reading it take 32
passes (a 32-way bank conflict). ``layout`` chooses the tile:

* ``"plain"``: row-major ``(32, 32)``: the conflict above.
* ``"padded"``: rows of 33 words (one unused): a column walks through all 32 banks.
* ``"swizzled"``: dense rows, with the 128-byte swizzle: the 16-byte chunk ``k`` of row
  ``r`` is stored at chunk ``k ^ (r % 8)``. Eight consecutive rows of one chunk land in
  eight different chunks, so a warp reading an 8 x 4 block of the tile reaches all 32 banks
  once (``lanes="block"``). This is the layout TMA writes and wgmma reads (tutorial step 4):
  it keeps rows dense and 16-byte aligned, which padding breaks.

``lanes`` chooses how step 3 maps a warp onto the tile: ``"column"`` (32 rows of one
column, the textbook transpose) or ``"block"`` (8 rows x 4 columns; B then gets 4 rows of 8
floats per warp: still whole 32-byte sectors). ``tw.simulate(k, A, B, perf=True).perf`` (or
``tilewise run --sim --perf``) counts the conflicts and sectors per line; the tutorial's
table lists all six combinations. :func:`make_naive_transpose` skips the tile: its stores
touch 32 sectors per warp instead of 4.
"""

import numpy as np

from tilewise import T
from tilewise.layout import S, TileLayout

TARGET = "sm_90a"
TILE = 32  # the tile is TILE x TILE float32; 256 threads move 4 elements each


def _tile(layout: str):
    """The shared tile's allocation arguments: (shape, layout, align) for ``layout``."""
    if layout == "plain":
        return (TILE, TILE), None, 16
    if layout == "padded":
        return (TILE, TILE + 1), None, 16
    if layout == "swizzled":  # swizzled tiles are aligned to the swizzle's 1024-byte repeat
        return (TILE, TILE), TileLayout(S[(TILE, TILE)]).swizzle(128, dtype_bits=32), 1024
    raise ValueError(f"layout={layout!r}: 'plain', 'padded' or 'swizzled'")


def make_transpose(n: int, layout: str = "swizzled", lanes: str = "block"):
    """``k(A, B)``: B = A.T for ``n x n`` float32 arrays, ``n`` a multiple of 32."""
    if n % TILE:
        raise ValueError(f"n={n} is not a multiple of the {TILE}-element tile")
    if lanes not in ("column", "block"):
        raise ValueError(f"lanes={lanes!r}: 'column' or 'block'")
    shape, tile_layout, align = _tile(layout)
    g = n // TILE
    block = lanes == "block"

    @T.prim_func
    def transpose(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (n, n), "float32")
        B = T.match_buffer(B_ptr, (n, n), "float32")
        T.device_entry()
        bx, by = T.cta_id([g, g])  # this CTA's tile: columns bx, rows by of A
        tid = T.thread_id([256])
        tx = tid % 32  # the lane
        ty = tid // 32  # the warp
        tile = T.alloc_shared(shape, "float32", layout=tile_layout, align=align)
        for j in T.static_range(4):  # 1. rows of A -> rows of the tile
            tile[ty + 8 * j, tx] = A[by * TILE + ty + 8 * j, bx * TILE + tx]
        T.cuda.cta_sync()  # 2. the whole tile is written and visible
        for j in T.static_range(4):  # 3. columns of the tile -> rows of B
            if block:
                r = 8 * j + tx % 8  # 8 rows ...
                c = 4 * ty + tx // 8  # ... x 4 columns per warp
                B[bx * TILE + c, by * TILE + r] = tile[r, c]
            else:
                B[bx * TILE + ty + 8 * j, by * TILE + tx] = tile[tx, ty + 8 * j]

    return transpose


def make_naive_transpose(n: int):
    """``k(A, B)``: B = A.T without shared memory: lanes read a row of A (coalesced) and
    write a column of B (32 sectors per warp)."""

    @T.prim_func
    def naive_transpose(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (n, n), "float32")
        B = T.match_buffer(B_ptr, (n, n), "float32")
        T.device_entry()
        bx = T.cta_id([n * n // 256])
        tid = T.thread_id([256])
        i = bx * 256 + tid
        B[i % n, i // n] = A[i // n, i % n]

    return naive_transpose


N = 256
transpose = make_transpose(N)


def inputs(rng, n: int = N):
    """A random, B poisoned with NaN."""
    return [rng.standard_normal((n, n)).astype(np.float32), np.full((n, n), np.nan, np.float32)]


def reference(a, b):
    return [a, np.ascontiguousarray(a.T)]
