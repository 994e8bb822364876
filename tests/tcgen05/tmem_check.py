"""Independent predictions of the tensor-memory cells a tcgen05 round trip writes.

Two predictions, each written here from its source and not from the implementation:

* ``cells_from_issues``: the ptx-semantics.md §3 register -> (lane, column) formulas applied
  to the ``tcgen05.st`` calls of the lowered program (their row / col / shape / num and
  register operands) and the registers each thread holds (from the register view layout);
* ``cells_from_tile``: the datapath rule (D: row i -> lane i; F: row i -> lane
  32 (i // 16) + i % 16) with two 16-bit elements per 32-bit cell, low half first.

The cells the simulator actually wrote come from ``simulate(..., keep_tmem=True)``
(``report.ctas[i].tmem``).
"""

from __future__ import annotations

import numpy as np

from tilewise.ir.expr import Call, as_int
from tilewise.ir.visitor import walk

# ptx-semantics.md §3 "Mapping formulas": lane offset dl(t, r) and logical column c(t, r).
FORMULAS = {
    "32x32b": (1, lambda t, r: t, lambda t, r: r),
    "16x64b": (1, lambda t, r: (t >> 2) + 8 * (t & 1), lambda t, r: 2 * r + ((t >> 1) & 1)),
    "16x128b": (2, lambda t, r: (t >> 2) + 8 * (r & 1), lambda t, r: 4 * (r >> 1) + (t & 3)),
    "16x256b": (4, lambda t, r: (t >> 2) + 8 * ((r >> 1) & 1),
                lambda t, r: 8 * (r >> 2) + 2 * (t & 3) + (r & 1)),
    "16x32bx2": (1, lambda t, r: t & 15, lambda t, r: r),
}
LANE = {"D": lambda i: i, "F": lambda i: 32 * (i // 16) + i % 16}


def st_issues(flat) -> list[tuple]:
    """``(row, col, shape, num, [register indices], unpack)`` of every tcgen05.st in ``flat``."""
    out = []

    def look(n):
        if isinstance(n, Call) and n.op == "ptx.tcgen05.st":
            _taddr, row, col, shape, num, unpack, *regs = n.args
            out.append((as_int(row), as_int(col), shape.value, as_int(num),
                        [as_int(r.indices[0]) for r in regs], bool(as_int(unpack))))
    walk(flat.body, look)
    return out


def thread_registers(a: np.ndarray, layout, nelem: int) -> np.ndarray:
    """(128, nregs32) uint32: what each thread of the warpgroup holds after loading the view
    ``layout`` (tid_in_wg x m) of ``a``."""
    rows, cols = a.shape
    lin = np.arange(rows * cols)
    place = layout.apply_np(lin)
    tid = place.get("tid_in_wg")
    if tid is None:
        tid = place.get("laneid", 0) + 32 * place.get("wid_in_wg", 0)
    regs = np.zeros((128, nelem), a.dtype)
    regs[tid, place.get("m", 0)] = a.reshape(-1)
    return np.ascontiguousarray(regs).view(np.uint32)


def cells_from_issues(issues, regs32: np.ndarray, lane0: int = 0) -> dict[tuple[int, int], int]:
    """The cells the issues write. ``.16x32bx2``: the upper half-warp adds the half split,
    ``num`` columns (2 num unpacked; CUTLASS's immediate). ``.unpack::16b``: half h of a
    register goes to the low 16 bits of column 2c + h, zeros above (ptx-semantics.md §3).
    ``lane0``: the lane alignment added to every warp's slice (datapath F's upper half)."""
    cells = {}
    for row, col, shape, num, reg_idx, unpack in issues:
        per, dl, c = FORMULAS[shape]
        assert len(reg_idx) == per * num
        for w in range(4):
            for t in range(32):
                split = (2 * num if unpack else num) if shape == "16x32bx2" and t >= 16 else 0
                for r in range(per * num):
                    lane = 32 * w + lane0 + row + dl(t, r)
                    v = int(regs32[32 * w + t, reg_idx[r]])
                    parts = [(2 * c(t, r), v & 0xFFFF), (2 * c(t, r) + 1, v >> 16)] if unpack \
                        else [(c(t, r), v)]
                    for cc, val in parts:
                        key = (lane, col + split + cc)
                        assert key not in cells, f"two registers write cell {key}"
                        cells[key] = val
    return cells


def cells_from_tile(tile: np.ndarray, dp: str, col0: int, lane0: int = 0,
                    one_per_cell: bool = False) -> dict[tuple[int, int], int]:
    """Element (i, j) of ``tile`` at lane LANE[dp](i) + lane0, element column col0 + j; e
    elements per 32-bit cell, low first (``one_per_cell``: 16-bit elements, element j alone
    in the low half of cell col0 + j)."""
    rows, cols = tile.shape
    if one_per_cell:
        half = np.ascontiguousarray(tile).view(np.uint16).astype(np.uint32)
        return {(LANE[dp](i) + lane0, col0 + j): int(half[i, j])
                for i in range(rows) for j in range(cols)}
    e = 4 // tile.dtype.itemsize
    assert col0 % e == 0
    words = np.ascontiguousarray(tile).view(np.uint32)  # (rows, cols // e)
    return {(LANE[dp](i) + lane0, col0 // e + k): int(words[i, k])
            for i in range(rows) for k in range(cols // e)}


def check_cells(sim_cells: np.ndarray, *predictions) -> None:
    first = predictions[0]
    for p in predictions[1:]:
        assert p == first
    mask = np.zeros(sim_cells.shape, bool)
    for (lane, col), v in first.items():
        assert sim_cells[lane, col] == v, f"cell ({lane}, {col})"
        mask[lane, col] = True
    # every other cell keeps the simulator's initial fill
    assert np.unique(sim_cells[~mask]).size <= 1
