"""The layout algebra: where each element of a tile lives.

A **layout** maps a *logical tile coordinate* to a *place* on named axes. The compiler
reads layouts to choose instructions, to compute addresses and to split work between
threads, so they are plain immutable values with pure operations.

Axes
----
Each axis has a kind: the memory offset ``m`` (``"memory"``, in elements); thread axes
``laneid``, ``warpid``, ``wid_in_wg``, ``tid_in_wg``, ``wgid``, ``tx`` (``"thread"``); CTA
axes ``bx``, ``by``, ``bz`` (``"cta"``); cluster axes ``cbx``, ``cby``, ``cbz``
(``"cluster"``); tensor-memory ``TLane``, ``TCol`` (``"tmem"``). ``Axis.get("laneid")``
looks one up by name; a misspelt name is a ``LayoutError`` that suggests the nearest.

Writing a layout
----------------
::

    S[(128, 32)]                                # row-major on m: (i, j) -> m = 32 i + j
    S[(128, 8) : (1@tid_in_wg, 1)]              # row i in thread i, column j in register j
    S[(128, 8) : (1@TLane, 1@TCol)]             # tensor memory: row -> lane, column -> column
    S[8 : 4@laneid]                             # 1-D: element i in lane 4 i
    S[(8, 2, 4, 2) : (4@laneid, 1@warpid, 1@laneid, 1)] + R[2 : 4@warpid] + 5@warpid

``S[extents : strides]`` is the **shard**: iters ``(extent, stride, axis)``, outermost
first; the extents read row-major are the logical domain, and element ``(i0, i1, ...)``
goes to ``sum(ik * stride_k)`` on each axis. A bare integer stride is on ``m``.
``R[...]`` adds a **replica**: every element is also held at each place the replica
iters enumerate — allowed on thread / CTA / cluster axes only (a replica on ``m`` or
tensor memory would store one element at several addresses; no instruction does that,
so it is rejected). ``+ 5@warpid`` (or ``+ 5`` on ``m``) adds an **offset**. Wrap it as
``TileLayout(S[...])`` (optional: ``S[...]`` already is a ``TileLayout``) or build it with
``TileLayout.from_iters(shard=[(128, 1, "tid_in_wg"), (8, 1, "m")])``.

Extents are positive and strides non-negative. Every malformed layout is a
``LayoutError`` whose message says what is wrong and whose hint says what to change.

Using a layout
--------------
* ``apply(i, j)`` / ``apply(lin)`` / ``apply(i, j, shape=(64, 64))`` -> ``{"tid_in_wg": 5,
  "m": 3}``: the first place of an element (offset included, replica index 0);
  ``apply_all`` lists every replica; ``apply_np(coords)`` is the vectorised form.
* ``size()``, ``shape`` (the extents as written), ``span(axis)`` (largest index + 1),
  ``axes()``, ``thread_axes()``.
* ``canonicalize()`` drops extent-1 iters and merges contiguous neighbours on one axis;
  an empty shard becomes ``(1, 1, m)``; the replica is sorted. ``==`` and ``hash`` use it,
  so they compare the function of the *linear* index: ``S[(128, 32)] == S[4096]``.
* ``group(shape)`` re-splits the iters so the domain reads as ``shape``; ``slice(region,
  shape=)`` returns the sub-tile as a layout whose offset absorbs the start
  (``slice(r).apply(c, shape=r_shape) == apply(c + start)``); ``permute(order)``.
* ``storage()`` keeps the memory / tensor-memory part (for a register view: the
  per-thread register index); ``split_threads()`` returns ``(who, where)``.
* ``contiguous_run()`` and ``vector_width(dtype_bits)`` say how many consecutive
  innermost elements one access may move; ``is_bijective_on("m")``, ``is_injective()``.
* ``repr`` reads back as the builder syntax; ``render_ascii`` / ``render_svg`` draw it
  (``_repr_svg_`` shows it in notebooks).

Swizzles
--------
``TileLayout(S[(64, 64)]).swizzle(128, dtype_bits=16)`` applies the 128-byte shared-memory
swizzle (32 and 64 too; ptx-semantics.md §5) to ``m`` after the affine map, relative to a
buffer base aligned to the swizzle repeat. Every operation keeps it; ``contiguous_run``
sees through it: runs inside an aligned 16-byte chunk stay contiguous.

Row tilings
-----------
``RowTiling.plan(rows, cols, elem_bytes)`` lays whole rows out in registers with 16-byte
vectors and enough bytes in flight (``tile()``, ``per_row()``, ``columns()``), for kernels
such as softmax and RMSNorm.

Instruction atoms
-----------------
Built from the PTX formulas, never typed in: ``tcgen05_atom(shape, num, dtype_bits)``
(one warp, ``laneid`` x register element ``m``) and ``tcgen05_warpgroup_atom`` (four warps,
``tid_in_wg``, datapath ``"D"`` or ``"F"``), ``tmem_datapath("D"|"F", cols)``,
``mma_m8n8_fragment(dtype_bits)``, ``ldmatrix_m8n8(num, trans)``,
``wgmma_accumulator(n)`` (the (64, n) accumulator fragment of one warpgroup) with
``wgmma_accumulator_rows()`` (one value per row, (64, 1): a row max or sum of the
accumulator, in registers) and ``wgmma_accumulator_columns(n)`` (one value per column,
(n,): a bias row); ``wgmma_a_fragment(k)`` (the (64, k) A operand of a register-sourced
wgmma: the accumulator's places, so an accumulator cast to 16 bits in place is an A
operand);
``mma_a_atom(dtype_bits)``, ``mma_b_atom(dtype_bits)``, ``mma_c_atom()``: the A (16, K),
B (K, 8) and C (16, 8) register fragments of one ``mma.sync.m16n8kK`` (K = 256 /
dtype_bits: 16 for f16/bf16, 8 for tf32, 32 for 8-bit inputs), fitted from the PTX ISA
formulas of ``tilewise.ptx.mma`` and checked against them; ``mma_fragment(operand, shape,
dtype_bits, warps=(wm, wn), warp_axis=...)`` a whole operand tile of a warp (or of a
``wm x wn`` grid of warps, A replicated across a row of the grid and B down a column):
the register layouts ``Tx.<scope>.gemm`` (mma.sync) and ``Tx.warp.copy`` (ldmatrix /
stmatrix) read.
``swizzled_tile(rows, cols, dtype_bits, swizzle)`` is the shared tile TMA writes in
boxes ``swizzle`` bytes wide: a canonical wgmma / tcgen05 operand; ``widest_swizzle(cols,
dtype_bits)`` the widest swizzle whose blocks split a row of ``cols``. ``match_atom(layout,
atom)`` returns a truthy ``MatchResult``, or one whose ``reason`` says what differs.
"""

from tilewise.layout.atoms import (
    MatchResult,
    ldmatrix_m8n8,
    match_atom,
    mma_a_atom,
    mma_b_atom,
    mma_c_atom,
    mma_fragment,
    mma_m8n8_fragment,
    tcgen05_atom,
    tcgen05_shape,
    tcgen05_warpgroup_atom,
    swizzled_tile,
    widest_swizzle,
    tmem_datapath,
    wgmma_a_fragment,
    wgmma_accumulator,
    wgmma_accumulator_columns,
    wgmma_accumulator_rows,
)
from tilewise.layout.axes import (
    Axis,
    Iter,
    OnAxis,
    TCol,
    TLane,
    bx,
    by,
    bz,
    cbx,
    cby,
    cbz,
    laneid,
    m,
    tid_in_wg,
    tx,
    warpid,
    wgid,
    wid_in_wg,
)
from tilewise.layout.builder import R, S
from tilewise.layout.layout import Replica, TileLayout
from tilewise.layout.render import render_ascii, render_svg
from tilewise.layout.rows import RowTiling
from tilewise.layout.swizzle import Swizzle

__all__ = [
    "Axis",
    "Iter",
    "MatchResult",
    "OnAxis",
    "R",
    "Replica",
    "RowTiling",
    "S",
    "Swizzle",
    "TCol",
    "TLane",
    "TileLayout",
    "bx",
    "by",
    "bz",
    "cbx",
    "cby",
    "cbz",
    "laneid",
    "ldmatrix_m8n8",
    "m",
    "match_atom",
    "mma_a_atom",
    "mma_b_atom",
    "mma_c_atom",
    "mma_fragment",
    "mma_m8n8_fragment",
    "render_ascii",
    "render_svg",
    "tcgen05_atom",
    "tcgen05_shape",
    "tcgen05_warpgroup_atom",
    "tid_in_wg",
    "tmem_datapath",
    "tx",
    "warpid",
    "swizzled_tile",
    "widest_swizzle",
    "wgid",
    "wgmma_a_fragment",
    "wgmma_accumulator",
    "wgmma_accumulator_columns",
    "wgmma_accumulator_rows",
    "wid_in_wg",
]
