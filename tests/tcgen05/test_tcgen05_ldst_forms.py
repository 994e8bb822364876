"""copy_async -> tcgen05_ldst, the forms issue 15 adds: datapath F classified from a 64-row
half of a 128-lane buffer, 8-bit elements, run-time column starts, ``.16x32bx2`` and
``.pack::16b`` / ``.unpack::16b`` — each lowered, assembled for sm_100a, simulated, and the
tensor-memory cells compared with two independent predictions (tmem_check.py)."""

from __future__ import annotations

import kernels_tcgen05 as K
import numpy as np
import pytest
import tmem_check as TM

import tilewise as tw
from tilewise.errors import DispatchError
from tilewise.layout import S, TCol, TileLayout, TLane, tcgen05_warpgroup_atom
from tilewise.pipeline import lower
from tilewise.sim import simulate

TARGET = "sm_100a"
BITS = {"float32": 32, "float16": 16, "bfloat16": 16, "uint8": 8, "int8": 8}


def _chosen(low) -> list[str]:
    return [d.info[0] for d in low.dispatch_log if d.chosen == "tcgen05_ldst"]


def _ptx_lines(func, word: str) -> list[str]:
    k = tw.compile(func, target=TARGET)  # assembled for sm_100a through nvJitLink
    assert k.cubin[:4] == b"\x7fELF"
    return [ln.strip() for ln in k.ptx.splitlines() if ln.strip().startswith(word)]


def _run(func, layout, rows, width, dtype, seed=0, reg_width=None):
    low = lower(func, TARGET)
    a, _ = K.inputs(rows, reg_width or width, dtype, seed=seed)
    b = np.full_like(a, 0x5A) if a.dtype.itemsize == 1 else np.full(
        a.shape, 0x7FC1, np.uint16).view(a.dtype) if a.dtype.itemsize == 2 else np.full(
        a.shape, np.nan, a.dtype)  # poisoned
    report = simulate(low, a, b, target=TARGET, keep_tmem=True)
    regs = TM.thread_registers(a, layout, K.regs_elems(layout))
    return low, a, b, report.ctas[0].tmem, regs


# ---- datapath F from a 64-row half of a 128-lane D buffer ----
@pytest.mark.parametrize("shape, num, dtype, half", [
    ("16x256b", 1, "float32", 0), ("16x256b", 2, "float32", 1), ("16x128b", 2, "float16", 1),
    ("16x64b", 4, "float32", 0), ("16x32bx2", 4, "float32", 1),
])
def test_half_of_a_d_buffer_is_datapath_f(shape, num, dtype, half):
    lay = tcgen05_warpgroup_atom(shape, num, BITS[dtype], "F")
    width = lay.size() // 64
    f = K.roundtrip(lay, width, dtype, "F", tmem_rows=128, tmem_row0=64 * half)
    low, a, b, cells, regs = _run(f, lay, 64, width, dtype, seed=num)
    st, ld = _chosen(low)
    lanes = " lanes +16" if half else ""
    assert st.startswith(f"tcgen05.st datapath F{lanes}: .{shape}.x{num} row 0 col 0")
    assert ld == "tcgen05.ld" + st[len("tcgen05.st"):]
    assert np.array_equal(b.view(np.uint8), a.view(np.uint8))
    by_formula = TM.cells_from_issues(TM.st_issues(low.func), regs, lane0=16 * half)
    TM.check_cells(cells, by_formula, TM.cells_from_tile(a, "F", 0, lane0=16 * half))
    assert len(_ptx_lines(f, f"tcgen05.st.sync.aligned.{shape}.x{num}.b32")) == 1


def test_a_d_buffer_half_with_the_32x32b_fragment_declines():
    lay = K.row_major_regs(8, rows=64)
    f = K.one_copy(lay, (64, 8), "float32", TileLayout(S[(128, 8) : (1 @ TLane, 1 @ TCol)]),
                   tmem_shape=(128, 8), tmem_region=((64, 128), (0, 8)))
    with pytest.raises(DispatchError, match="datapath F .M=64. has no .32x32b form"):
        lower(f, TARGET)


# ---- 8-bit elements: four to a 32-bit register / cell ----
@pytest.mark.parametrize("layout, dtype, dp, want", [
    (K.row_major_regs(16), "uint8", "D", ".32x32b.x4 row 0 col 0 regs 0..3"),
    (tcgen05_warpgroup_atom("16x256b", 1, 8), "int8", "D",
     ".16x256b.x1 row 0 col 0 regs 0..3, .16x256b.x1 row 16 col 0 regs 4..7"),
    (tcgen05_warpgroup_atom("16x64b", 2, 8, "F"), "uint8", "F",
     ".16x64b.x2 row 0 col 0 regs 0..1"),
])
def test_8bit_elements(layout, dtype, dp, want):
    rows = K.ROWS[dp]
    width = layout.size() // rows
    f = K.roundtrip(layout, width, dtype, dp)
    low, a, b, cells, regs = _run(f, layout, rows, width, dtype, seed=3)
    st, _ = _chosen(low)
    assert st == f"tcgen05.st datapath {dp}: {want}"
    assert np.array_equal(b, a)
    TM.check_cells(cells, TM.cells_from_issues(TM.st_issues(low.func), regs),
                   TM.cells_from_tile(a, dp, 0))


def test_8bit_width_must_fill_registers():
    f = K.one_copy(K.row_major_regs(6), (128, 6), "uint8",
                   TileLayout(S[(128, 6) : (1 @ TLane, 1 @ TCol)]))
    with pytest.raises(DispatchError, match="4 uint8 elements share a 32-bit register, so the "
                                            "width must be a multiple of 4"):
        lower(f, TARGET)


# ---- run-time column starts ----
@pytest.mark.parametrize("layout, width, dtype", [
    (K.row_major_regs(8), 8, "float32"),
    (tcgen05_warpgroup_atom("16x256b", 1, 16), 16, "bfloat16"),
])
def test_run_time_column_start(layout, width, dtype):
    f = K.roundtrip_blocks(layout, width, 3, dtype)
    low = lower(f, TARGET)
    st, ld = _chosen(low)
    assert "+ run-time column" in st and "+ run-time column" in ld
    a, _ = K.inputs(128, 3 * width, dtype, seed=5)
    b = np.zeros_like(a)
    report = simulate(low, a, b, target=TARGET, keep_tmem=True)
    assert np.array_equal(b.view(np.uint8), a.view(np.uint8))
    TM.check_cells(report.ctas[0].tmem, TM.cells_from_tile(a, "D", 0))
    assert _ptx_lines(f, "tcgen05.st.sync.aligned")


def test_run_time_column_start_not_whole_cells_declines():
    from tilewise import T, Tx

    lay = K.row_major_regs(8)

    @T.prim_func
    def odd(addr_ptr: T.handle):
        addr = T.match_buffer(addr_ptr, (1,), "uint32")
        T.device_entry()
        tid = T.thread_id([128])
        tmem = T.decl_buffer((128, 32), "float16", scope="tmem", allocated_addr=addr[0],
                             layout=TileLayout(S[(128, 32) : (1 @ TLane, 1 @ TCol)]))
        R = T.alloc_local((8,), "float16")
        V = R.view(128, 8, layout=lay)
        for j in range(3):
            Tx.wg.copy_async(tmem[:, j * 3 + 1:j * 3 + 9], V[:, :])  # COPY

    with pytest.raises(DispatchError, match="is not known to be a multiple of 2"):
        lower(odd, TARGET)


def test_run_time_register_start_declines():
    from tilewise import T, Tx

    lay = K.row_major_regs(16)

    @T.prim_func
    def regs_rt(addr_ptr: T.handle):
        addr = T.match_buffer(addr_ptr, (1,), "uint32")
        T.device_entry()
        tid = T.thread_id([128])
        tmem = T.decl_buffer((128, 8), "float32", scope="tmem", allocated_addr=addr[0],
                             layout=TileLayout(S[(128, 8) : (1 @ TLane, 1 @ TCol)]))
        R = T.alloc_local((16,), "float32")
        V = R.view(128, 16, layout=lay)
        for j in range(2):
            Tx.wg.copy_async(tmem[:, :], V[:, j * 8:j * 8 + 8])  # COPY

    with pytest.raises(DispatchError, match="registers are named at compile time"):
        lower(regs_rt, TARGET)


# ---- .16x32bx2: two half-warps side by side ----
@pytest.mark.parametrize("num, dtype, dp", [(1, "float32", "D"), (8, "float32", "D"),
                                            (4, "float16", "F")])
def test_16x32bx2(num, dtype, dp):
    lay = tcgen05_warpgroup_atom("16x32bx2", num, BITS[dtype], dp)
    rows = K.ROWS[dp]
    width = lay.size() // rows
    f = K.roundtrip(lay, width, dtype, dp)
    low, a, b, cells, regs = _run(f, lay, rows, width, dtype, seed=num)
    st, _ = _chosen(low)
    assert f".16x32bx2.x{num} row 0 col 0" in st
    assert np.array_equal(b.view(np.uint8), a.view(np.uint8))
    TM.check_cells(cells, TM.cells_from_issues(TM.st_issues(low.func), regs),
                   TM.cells_from_tile(a, dp, 0))
    lines = _ptx_lines(f, "tcgen05.st.sync.aligned.16x32bx2")
    assert lines and all(ln.endswith(f", {num}, {{") or f"], {num}, {{" in ln for ln in lines)


# ---- .pack::16b / .unpack::16b: 16-bit elements one to a cell ----
@pytest.mark.parametrize("layout, width", [
    (K.row_major_regs(8), 8), (tcgen05_warpgroup_atom("16x256b", 1, 16), 16),
    (tcgen05_warpgroup_atom("16x32bx2", 2, 16), 8),
])
def test_pack_unpack_16b(layout, width):
    one_per_cell = TileLayout(S[(128, width) : (1 @ TLane, 2 @ TCol)])
    f = K.roundtrip(layout, width, "bfloat16", tmem_lay=one_per_cell)
    low, a, b, cells, regs = _run(f, layout, 128, width, "bfloat16", seed=width)
    st, ld = _chosen(low)
    assert ".unpack::16b" in st and ".pack::16b" in ld
    assert np.array_equal(b.view(np.uint16), a.view(np.uint16))
    TM.check_cells(cells, TM.cells_from_issues(TM.st_issues(low.func), regs),
                   TM.cells_from_tile(a, "D", 0, one_per_cell=True))
    assert all(".unpack::16b" in ln for ln in _ptx_lines(f, "tcgen05.st.sync.aligned"))
    assert all(".pack::16b" in ln for ln in _ptx_lines(f, "tcgen05.ld.sync.aligned"))
