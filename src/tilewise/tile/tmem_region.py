"""Tensor-memory regions of the tcgen05 variants: which datapath a region is, where it
starts, and whether its 16-bit elements sit one to a cell — found from the buffer's layout,
or the reason it is none of them.

Tensor memory is 128 lanes x 512 columns of 32-bit cells (PTX ISA §9.7.16.1). A tmem buffer's
layout sends element ``(row, col)`` to ``TLane`` and ``TCol``; ``TCol`` counts elements,
``e = 32 // bits`` of them to a cell (two bfloat16, four fp8), low half first. A region is:

* **datapath D** (PTX §9.7.16.10.5 Layout D, M = 128): 128 rows, row ``r`` in lane ``r``;
* **datapath F** (Layout F, M = 64): 64 rows, row ``r`` in lane ``32 (r // 16) + r % 16`` plus
  a lane alignment of 0 or 16. A buffer laid out that way (``tmem_datapath("F")``) is F; so is
  a 64-row region of a 128-lane D buffer, **classified automatically** as TIRx does: rows
  0..63 are the F rows at alignment 0, rows 64..127 the F rows at alignment 16 (the two M = 64
  tiles a 128-lane allocation holds side by side). The F placement of those rows is the
  hardware's; the region only names which of the two tiles it is.

Columns must be consecutive elements (``TCol = col0 + j``), or every other element slot for
16-bit types (``TCol = col0 + 2 j``: one element in the low half of each cell, the *unpacked*
tensor-memory format that ``.pack::16b`` / ``.unpack::16b`` and 16-bit MMA results use).
A column start computed at run time (``tmem[:, j * 64 : j * 64 + 64]``) is accepted when the
buffer's layout is the same in every column block (``TCol = c`` + a per-row constant);
``col_rt`` is then that expression, in elements.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.expr import BufferRegion, Expr, IntImm, as_int
from ..ptx import tcgen05
from ..ir.analysis import known_multiple
from .registry import DispatchFail


@dataclass(frozen=True)
class TmemRegion:
    region: BufferRegion
    datapath: str  # "D" | "F"
    lane0: int  # the lane field of the region's address: 0 (D); 0 or 16 (F)
    col0: int  # first element column (TCol), compile-time part
    col_rt: Expr | None  # run-time part of the first element column (TCol units), or None
    packed: bool  # 16-bit elements one to a cell (TCol stride 2)
    e: int  # elements per 32-bit cell of the dtype

    @property
    def rows(self) -> int:
        return self.region.shape[0]

    @property
    def cols(self) -> int:
        return self.region.shape[1]

    def cell0(self) -> int:
        """The first cell column (compile-time part)."""
        return self.col0 // self.e

    def cell_rt(self) -> Expr | None:
        """The run-time part of the first cell column."""
        if self.col_rt is None:
            return None
        return self.col_rt // self.e if self.e > 1 else self.col_rt

    def text(self) -> str:
        r = self.region
        return f"{r.buffer.name}[{', '.join(_bound_text(x) for x in r.region)}]"


def _bound_text(x) -> str:
    from ..ir.printer import script

    start = as_int(x.start)
    if start is None:
        return f"{script(x.start)}:{script(x.start)} + {x.extent}"
    return f"{start}:{start + x.extent}"


def classify(region: BufferRegion, what: str) -> TmemRegion:
    """The datapath, start and packing of tensor-memory ``region`` (or DispatchFail)."""
    b = region.buffer
    if b.layout is None:
        raise DispatchFail(f"tensor-memory buffer {b.name!r} has no layout; declare it with "
                           f"layout=TileLayout(S[({b.shape[0]}, {b.shape[1]}) : "
                           "(1@TLane, 1@TCol)])")
    if len(region.region) != 2:
        raise DispatchFail(f"{what} region of {b.name!r} is {len(region.region)}-D; tensor "
                           "memory tiles are 2-D (rows x columns)")
    row, col = region.region
    if as_int(row.start) is None:
        raise DispatchFail(f"{what} region of {b.name!r} starts at a run-time row; rows are "
                           "lanes, fixed by the datapath: start the rows at a constant")
    col_rt = None
    if as_int(col.start) is None:  # TCol units: the layout's column stride times the start
        col_rt = col.start * _column_stride(b) if _column_stride(b) != 1 else col.start
    c0 = as_int(col.start) if col_rt is None else 0
    lane, tcol = _places(b, as_int(row.start), c0, row.extent, col.extent)
    e = 32 // b.dtype.bits
    packed = _packing(b, tcol, e, what)
    dp, lane0 = _datapath(region, lane, what)
    col0 = int(tcol[0, 0])
    if col_rt is not None and known_multiple(col_rt) % e:
        raise DispatchFail(f"{what} column start {_bound_text(col).split(':')[0]} is not known "
                           f"to be a multiple of {e} ({e} {b.dtype} to a 32-bit cell): a "
                           "tensor-memory address names whole cells")
    if col0 % e:
        raise DispatchFail(f"{what} region starts at element column {col0}, inside a 32-bit "
                           f"cell ({e} {b.dtype} per cell); start it at a multiple of {e}")
    return TmemRegion(region, dp, lane0, col0, col_rt, packed, e)


def _places(b, r0: int, c0: int, rows: int, cols: int):
    rr, cc = np.meshgrid(np.arange(r0, r0 + rows), np.arange(c0, c0 + cols), indexing="ij")
    got = b.layout.apply_np(np.stack([rr.ravel(), cc.ravel()], 1), shape=b.shape)
    others = [a.name for a in b.layout.axes() if a.name not in ("TLane", "TCol")]
    if others:
        raise DispatchFail(f"tensor-memory buffer {b.name!r} has layout {b.layout!r} with "
                           f"axis {others[0]}; a tmem layout uses TLane and TCol only")
    zero = np.zeros(rows * cols, np.int64)
    return (got.get("TLane", zero).reshape(rows, cols),
            got.get("TCol", zero).reshape(rows, cols))


def _column_stride(b) -> int:
    """The TCol stride of the layout's columns (1, or 2 for one 16-bit element a cell) when
    every column block looks the same, for a run-time column start; else DispatchFail."""
    lane, tcol = _places(b, 0, 0, b.shape[0], b.shape[1])
    cols = np.arange(b.shape[1])
    same_lanes = np.array_equal(lane, lane[:, :1].repeat(b.shape[1], 1))
    for stride in (1, 2):
        if same_lanes and np.array_equal(tcol - tcol[:, :1],
                                         np.broadcast_to(stride * cols, tcol.shape)):
            return stride
    raise DispatchFail(f"the column start is computed at run time, but the layout "
                       f"{b.layout!r} of {b.name!r} is not the same in every column (TCol = "
                       "column + a per-row constant, TLane independent of the column); use a "
                       "constant start or a (1@TLane, 1@TCol)-style layout")


def _packing(b, tcol, e: int, what: str) -> bool:
    j = np.arange(tcol.shape[1])
    if np.array_equal(tcol, tcol[:, :1] + j) and (tcol[:, 0] == tcol[0, 0]).all():
        return False
    if e == 2 and np.array_equal(tcol, tcol[:, :1] + 2 * j) and (tcol[:, 0] == tcol[0, 0]).all():
        return True
    raise DispatchFail(f"{what}: the columns of {b.name!r} with layout {b.layout!r} are not "
                       "consecutive elements starting at one column for every row (TCol = "
                       "col0 + j; for 16-bit data also col0 + 2 j, one element a cell)")


def _datapath(region, lane, what: str) -> tuple[str, int]:
    rows = lane.shape[0]
    if not (lane == lane[:, :1]).all():
        raise DispatchFail(f"{what}: one row of {region.buffer.name!r} spans several lanes")
    L = lane[:, 0]
    r = np.arange(rows)
    if rows == 128 and np.array_equal(L, r):
        return "D", 0
    if rows == 64:
        f = tcgen05.DATAPATHS["F"][1](r)
        for lane0 in (0, 16):
            if np.array_equal(L, f + lane0):
                return "F", lane0
        for base in (0, 64):  # a 64-row half of a 128-lane D buffer: automatic F
            if np.array_equal(L, r + base):
                return "F", base // 4
    raise DispatchFail(
        f"{what}: tensor-memory region {_region(region)} is neither datapath D (128 rows, row "
        "r -> TLane r) nor datapath F (64 rows: rows 0..63 or 64..127 of a 128-lane buffer, or "
        "a tmem_datapath('F') buffer)")


def _region(region) -> str:
    return f"{region.buffer.name}[{', '.join(_bound_text(x) for x in region.region)}]"


def cell_offset(t: TmemRegion, extra_cells: int = 0) -> Expr:
    """The address offset of the region's first cell plus ``extra_cells``: lane field and
    column, with the run-time column part added."""
    off = IntImm(tcgen05.address(t.lane0, t.cell0() + extra_cells))
    rt = t.cell_rt()
    return off if rt is None else off + rt


__all__ = ["TmemRegion", "cell_offset", "classify"]
