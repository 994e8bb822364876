"""copy_async -> tcgen05_ldst: the seed demo (tirx-copy_async-tcgen05_ldst.rst), its
"how inputs change" table, every atom shape, datapath F, slices, and every decline."""

from __future__ import annotations

import re

import kernels_tcgen05 as K
import numpy as np
import pytest
import tcgen05_roundtrip as seed
import tmem_check as TM

import tilewise as tw
from tilewise.errors import DispatchError, TilewiseError
from tilewise.ir import script
from tilewise.layout import S, TCol, TileLayout, TLane, tcgen05_warpgroup_atom, tid_in_wg
from tilewise.layout import laneid, tmem_datapath, wid_in_wg
from tilewise.pipeline import lower
from tilewise.sim import simulate

TARGET = "sm_100a"


def _chosen(low) -> list[str]:
    return [d.info[0] for d in low.dispatch_log if d.chosen == "tcgen05_ldst"]


def _ptx(func) -> list[str]:
    k = tw.compile(func, target=TARGET)
    assert len(k.cubin) > 0  # assembled for sm_100a through nvJitLink
    return [ln.strip() for ln in k.ptx.splitlines() if re.match(r"\s*tcgen05\.(ld|st)\.", ln)]


def _roundtrip(func, low, a, b, expect_b, dp, tmem_col0, reg_layout, nelem):
    """Simulate; B must equal ``expect_b`` bit for bit; the cells must be the predicted."""
    report = simulate(low, a, b, target=TARGET, keep_tmem=True)
    assert np.array_equal(b.view(np.uint8), expect_b.view(np.uint8))
    cells = report.ctas[0].tmem
    assert cells is not None and cells.shape == (128, 512)
    regs = TM.thread_registers(a, reg_layout, nelem)
    by_formula = TM.cells_from_issues(TM.st_issues(low.func), regs)
    return cells, by_formula


# ---- the seed demo ----
SEED_ST = ('T.ptx.tcgen05.st(tmem_addr[0] + T.cast(tid // 32 * 32 << 16, "uint32"), 0, 0, '
           "'32x32b', 4, False, A_reg_32b[0], A_reg_32b[1], A_reg_32b[2], A_reg_32b[3])")
SEED_LD = ('T.ptx.tcgen05.ld(tmem_addr[0] + T.cast(tid // 32 * 32 << 16, "uint32"), 0, 0, '
           "'32x32b', 4, False, B_reg_32b[0], B_reg_32b[1], B_reg_32b[2], B_reg_32b[3])")


def test_seed_lowered_ir():
    low = lower(seed.copy_async_test, TARGET)
    lines = [ln.strip() for ln in script(low.func).splitlines()]
    assert 'A_reg_32b = A_reg.view(4, dtype="uint32")' in lines
    assert 'B_reg_32b = B_reg.view(4, dtype="uint32")' in lines
    assert [ln for ln in lines if "tcgen05.st(" in ln or "tcgen05.ld(" in ln] == [SEED_ST, SEED_LD]
    assert [d.chosen for d in low.dispatch_log] == ["tcgen05_ldst", "tcgen05_ldst"]


def test_seed_emits_no_wait():
    text = script(lower(seed.copy_async_test, TARGET, until="dispatch").func)
    assert text.count("tcgen05.wait.st") == 1 and text.count("tcgen05.wait.ld") == 1


def test_seed_ptx_and_cubin():
    lines = _ptx(seed.copy_async_test)
    assert len(lines) == 2
    assert lines[0].startswith("tcgen05.st.sync.aligned.32x32b.x4.b32 [")
    assert lines[1].startswith("tcgen05.ld.sync.aligned.32x32b.x4.b32 {")


def test_seed_simulated_roundtrip_and_cells():
    a, b = seed.inputs(np.random.default_rng(1))
    low = lower(seed.copy_async_test, TARGET)
    cells, by_formula = _roundtrip(seed.copy_async_test, low, a, b, a, "D", 0,
                                   seed.local_view, 8)
    TM.check_cells(cells, by_formula, TM.cells_from_tile(a, "D", 0))


def test_seed_forced_by_name():
    f = K.forced_store()
    assert _chosen(lower(f, TARGET)) == ["tcgen05.st datapath D: .32x32b.x4 row 0 col 0 "
                                         "regs 0..3"]


# ---- the seed's "how inputs change the algorithm" table, row by row ----
@pytest.mark.parametrize("layout, width, dtype, dp, want", [
    # register layout: an atom -> that shape; no match -> the .32x32b fallback (the demo)
    (tcgen05_warpgroup_atom("16x256b", 1, 32), 8, "float32", "D", ".16x256b.x1"),
    (K.row_major_regs(8), 8, "float32", "D", ".32x32b.x8"),
    # column width / dtype -> num and registers per thread
    (K.row_major_regs(8), 8, "float16", "D", ".32x32b.x4 row 0 col 0 regs 0..3"),
    (K.row_major_regs(16), 16, "float32", "D", ".32x32b.x16 row 0 col 0 regs 0..15"),
    # datapath D -> two slabs for .16x*b; F -> one
    (tcgen05_warpgroup_atom("16x64b", 2, 32), 4, "float32", "D",
     ".16x64b.x2 row 0 col 0 regs 0..1, .16x64b.x2 row 16 col 0 regs 2..3"),
    (tcgen05_warpgroup_atom("16x64b", 2, 32, "F"), 4, "float32", "F",
     ".16x64b.x2 row 0 col 0 regs 0..1"),
])
def test_seed_table(layout, width, dtype, dp, want):
    low = lower(K.roundtrip(layout, width, dtype, dp), TARGET)
    st, ld = _chosen(low)
    # direction: local -> tmem is tcgen05.st, tmem -> local tcgen05.ld, same plan
    assert st == f"tcgen05.st datapath {dp}: " + st.split(": ", 1)[1]
    assert ld == "tcgen05.ld" + st[len("tcgen05.st"):]
    assert want in st


# ---- every atom shape, several widths, 16- and 32-bit, datapaths D and F ----
# the wide ones (0.5-2 s each) are sampled; the narrow ones cover every shape, type and path
WIDE = pytest.mark.slow
ATOMS = [
    ("32x32b", 1, "float32", "D"), ("32x32b", 8, "float32", "D"),
    pytest.param("32x32b", 128, "float32", "D", marks=WIDE),
    ("32x32b", 1, "float16", "D"), pytest.param("32x32b", 32, "float16", "D", marks=WIDE),
    ("16x64b", 1, "float32", "D"), pytest.param("16x64b", 8, "float32", "D", marks=WIDE),
    pytest.param("16x64b", 4, "float16", "D", marks=WIDE),
    ("16x128b", 1, "float32", "D"), pytest.param("16x128b", 4, "float32", "D", marks=WIDE),
    ("16x128b", 2, "float16", "D"),
    ("16x256b", 1, "float32", "D"), pytest.param("16x256b", 4, "float32", "D", marks=WIDE),
    ("16x256b", 1, "float16", "D"), pytest.param("16x256b", 2, "float16", "D", marks=WIDE),
    ("16x64b", 1, "float32", "F"), pytest.param("16x64b", 16, "float16", "F", marks=WIDE),
    ("16x128b", 2, "float32", "F"), ("16x128b", 1, "float16", "F"),
    ("16x256b", 1, "float32", "F"), ("16x256b", 8, "float32", "F"),
    ("16x256b", 2, "float16", "F"),
]


@pytest.mark.parametrize("shape, num, dtype, dp", ATOMS)
def test_atom(shape, num, dtype, dp):
    f = K.atom_roundtrip(shape, num, dtype, dp)
    low = lower(f, TARGET)
    rows = K.ROWS[dp]
    slabs = 2 if dp == "D" and shape != "32x32b" else 1
    st, ld = _chosen(low)
    assert st.count(f".{shape}.x{num} ") == slabs and ld.count(f".{shape}.x{num} ") == slabs
    rows16 = [int(x) for x in re.findall(r"row (\d+)", st)]
    assert rows16 == [16 * s for s in range(slabs)]
    lines = _ptx(f)
    assert lines.count(f"tcgen05.st.sync.aligned.{shape}.x{num}.b32") == 0  # has operands
    assert sum(ln.startswith(f"tcgen05.st.sync.aligned.{shape}.x{num}.b32 ") for ln in lines) \
        == slabs
    assert sum(ln.startswith(f"tcgen05.ld.sync.aligned.{shape}.x{num}.b32 ") for ln in lines) \
        == slabs
    bits = 16 if dtype == "float16" else 32
    layout = tcgen05_warpgroup_atom(shape, num, bits, dp)
    width = layout.size() // rows
    a, b = K.inputs(rows, width, dtype, seed=num)
    cells, by_formula = _roundtrip(f, low, a, b, a, dp, 0, layout, K.regs_elems(layout))
    TM.check_cells(cells, by_formula, TM.cells_from_tile(a, dp, 0))


def test_thread_axes_laneid_wid_in_wg():
    lay = TileLayout(S[(4, 32, 8) : (1 @ wid_in_wg, 1 @ laneid, 1)]).group((128, 8))
    (st, _ld) = _chosen(lower(K.roundtrip(lay, 8, "float32"), TARGET))
    assert ".32x32b.x8 row 0 col 0 regs 0..7" in st


# ---- .32x32b widths that are not a power of two, and slices ----
@pytest.mark.parametrize("width, dtype, want", [
    (24, "float32", ".32x32b.x16 row 0 col 0 regs 0..15, .32x32b.x8 row 0 col 16 regs 16..23"),
    (48, "float16", ".32x32b.x16 row 0 col 0 regs 0..15, .32x32b.x8 row 0 col 16 regs 16..23"),
    (7, "float32", ".32x32b.x4 row 0 col 0 regs 0..3, .32x32b.x2 row 0 col 4 regs 4..5, "
                   ".32x32b.x1 row 0 col 6 regs 6..6"),
])
def test_32x32b_pieces(width, dtype, want):
    lay = K.row_major_regs(width)
    f = K.roundtrip(lay, width, dtype)
    low = lower(f, TARGET)
    st, _ = _chosen(low)
    assert st == "tcgen05.st datapath D: " + want
    nums = re.findall(r"x(\d+) row", want)
    lines = _ptx(f)
    assert [re.match(r"tcgen05\.st\.sync\.aligned\.32x32b\.x(\d+)", ln).group(1)
            for ln in lines if ln.startswith("tcgen05.st")] == nums
    a, b = K.inputs(128, width, dtype)
    cells, by_formula = _roundtrip(f, low, a, b, a, "D", 0, lay, K.regs_elems(lay))
    TM.check_cells(cells, by_formula, TM.cells_from_tile(a, "D", 0))


@pytest.mark.parametrize("kw, dtype, want", [
    # a column slice of a wider tmem buffer: a column offset (32-bit columns)
    (dict(tmem_cols=16, tmem_col0=8), "float32", ".32x32b.x8 row 0 col 8 regs 0..7"),
    (dict(tmem_cols=16, tmem_col0=8), "float16", ".32x32b.x4 row 0 col 4 regs 0..3"),
    # a column slice of a wider register fragment: reduced num, register offset
    (dict(reg_width=16, reg_col0=8), "float32", ".32x32b.x8 row 0 col 0 regs 8..15"),
    (dict(reg_width=16, reg_col0=8), "float16", ".32x32b.x4 row 0 col 0 regs 4..7"),
])
def test_slices_32x32b(kw, dtype, want):
    lay = K.row_major_regs(kw.get("reg_width", 8))
    f = K.roundtrip(lay, 8, dtype, **kw)
    low = lower(f, TARGET)
    st, ld = _chosen(low)
    assert st == "tcgen05.st datapath D: " + want
    _ptx(f)
    r0, rw = kw.get("reg_col0", 0), kw.get("reg_width", 8)
    a, b = K.inputs(128, rw, dtype)
    expect = np.zeros_like(a)
    expect[:, r0:r0 + 8] = a[:, r0:r0 + 8]
    cells, by_formula = _roundtrip(f, low, a, b, expect, "D", 0, lay, K.regs_elems(lay))
    tile = np.ascontiguousarray(a[:, r0:r0 + 8])
    TM.check_cells(cells, by_formula, TM.cells_from_tile(tile, "D", kw.get("tmem_col0", 0)))


def test_slice_of_wide_fragment_on_datapath_f():
    lay = tcgen05_warpgroup_atom("16x256b", 2, 32, "F")  # 64 x 16, 8 registers
    f = K.roundtrip(lay, 8, "float32", "F", reg_width=16, reg_col0=8, tmem_cols=32,
                    tmem_col0=16)
    low = lower(f, TARGET)
    st, _ = _chosen(low)
    assert st == "tcgen05.st datapath F: .16x256b.x1 row 0 col 16 regs 4..7"
    _ptx(f)
    a, b = K.inputs(64, 16, "float32")
    expect = np.zeros_like(a)
    expect[:, 8:] = a[:, 8:]
    cells, by_formula = _roundtrip(f, low, a, b, expect, "F", 16, lay, K.regs_elems(lay))
    TM.check_cells(cells, by_formula, TM.cells_from_tile(np.ascontiguousarray(a[:, 8:]), "F", 16))


# ---- declines: each a DispatchError at the user's line with an actionable reason ----
def _decline(func, text, target=TARGET):
    with pytest.raises(DispatchError) as info:
        lower(func, target)
    msg = str(info.value)
    assert text in msg, msg
    assert "kernels_tcgen05.py:" in msg and "# COPY" in msg  # the user's line, shown
    assert "tcgen05_ldst.py" not in msg  # not the compiler's file
    return msg


D8 = tmem_datapath("D", 8)


def test_decline_32x32b_on_datapath_f():
    lay = K.row_major_regs(8, rows=64)
    f = K.one_copy(lay, (64, 8), "float32", tmem_datapath("F", 8))
    _decline(f, "datapath F (M=64) has no .32x32b form")


def test_decline_num_above_maximum():
    atom = tcgen05_warpgroup_atom("16x256b", 1, 32, "F")
    lay = K.blocks(atom, 64, 8, 64)  # .16x256b.x64 would be needed; the maximum is .x32
    f = K.one_copy(lay, (64, 512), "float32", tmem_datapath("F", 512))
    _decline(f, "need .16x256b.x64; the largest is .x32 (PTX ISA Table 49")


def test_decline_num_above_maximum_16x128b():
    atom = tcgen05_warpgroup_atom("16x128b", 1, 32, "F")
    lay = K.blocks(atom, 64, 4, 128)
    f = K.one_copy(lay, (64, 512), "float32", tmem_datapath("F", 512))
    _decline(f, "need .16x128b.x128; the largest is .x64")


def test_decline_width_not_multiple_of_footprint():
    lay = tcgen05_warpgroup_atom("16x256b", 2, 32)  # 128 x 16
    f = K.one_copy(lay, (128, 16), "float32", tmem_datapath("D", 4), tmem_shape=(128, 4),
                   reg_region=((0, 128), (0, 4)), tmem_region=((0, 128), (0, 4)))
    _decline(f, "not a multiple of the .16x256b column footprint (8 32-bit columns")


def test_decline_num_not_power_of_two():
    atom = tcgen05_warpgroup_atom("16x64b", 1, 32, "F")
    lay = K.blocks(atom, 64, 2, 3)
    f = K.one_copy(lay, (64, 6), "float32", TileLayout(S[(4, 16, 6) : (32 @ TLane, 1 @ TLane,
                                                                         1 @ TCol)]).group((64, 6)))
    _decline(f, "need .16x64b.x3, not a power of two")


def test_decline_not_a_fragment():
    lay = TileLayout(S[(4, 32, 8) : (1 @ tid_in_wg, 4 @ tid_in_wg, 1)]).group((128, 8))
    msg = _decline(K.one_copy(lay, (128, 8), "float32", D8), "is no tcgen05 warpgroup fragment")
    assert ".32x32b.x8: " in msg and ".16x256b.x1: " in msg


def test_decline_unknown_datapath():
    bad = TileLayout(S[(2, 64, 8) : (1 @ TLane, 2 @ TLane, 1 @ TCol)]).group((128, 8))
    _decline(K.one_copy(K.row_major_regs(8), (128, 8), "float32", bad),
             "is neither datapath D (128 rows")


def test_decline_64bit():
    _decline(K.one_copy(K.row_major_regs(8), (128, 8), "float64", D8),
             "float64 elements are 64-bit; tcgen05_ldst moves 8-, 16- or 32-bit elements")


def test_decline_odd_16bit_width():
    t = TileLayout(S[(128, 3) : (1 @ TLane, 1 @ TCol)])
    _decline(K.one_copy(K.row_major_regs(3), (128, 3), "float16", t),
             "2 float16 elements share a 32-bit register, so the width must be a multiple "
             "of 2")


def test_decline_16bit_column_inside_a_cell():
    t = TileLayout(S[(128, 10) : (1 @ TLane, 1 @ TCol)])
    f = K.one_copy(K.row_major_regs(8), (128, 8), "float16", t, tmem_shape=(128, 10),
                   tmem_region=((0, 128), (1, 9)))
    _decline(f, "starts at element column 1, inside a 32-bit cell")


def test_decline_scope_not_warpgroup():
    _decline(K.one_copy(K.row_major_regs(8), (128, 8), "float32", D8, scope="cta"),
             "execution scope 'cta' is not supported (supported: warpgroup)")


def test_decline_partial_warpgroup():
    _decline(K.one_copy(K.row_major_regs(8), (128, 8), "float32", D8, active_rows=64),
             "only 64 of the 128 threads of group 0")


def test_decline_tmem_to_tmem():
    _decline(K.tmem_to_tmem(), "copies tmem -> tmem; this variant handles local -> tmem")


def test_decline_foreign_option():
    _decline(K.one_copy(K.row_major_regs(8), (128, 8), "float32", D8, mbar=True),
             "option mbar= does not apply to tcgen05.ld/st")


def test_decline_load_direction_same_rules():
    lay = K.row_major_regs(8, rows=64)
    _decline(K.one_copy(lay, (64, 8), "float32", tmem_datapath("F", 8), store=False),
             "datapath F (M=64) has no .32x32b form")


# ---- targets without tcgen05 ----
def test_sm90a_dispatch_error_names_target():
    msg = _decline(K.one_copy(K.row_major_regs(8), (128, 8), "float32", D8),
                   "target sm_90a has no tcgen05 tensor memory", target="sm_90a")
    assert "sm_100a" in msg


def test_sm90a_seed_is_a_clear_error():
    with pytest.raises(TilewiseError) as info:
        tw.compile(seed.copy_async_test, target="sm_90a")
    msg = str(info.value)
    assert "sm_90a" in msg and "tcgen05" in msg and "tcgen05_roundtrip.py:" in msg
