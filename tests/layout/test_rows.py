"""RowTiling.plan: every width gets a tiling (no width refused), whose tile covers the row
with whole vectors that keep rows aligned, within the register budget, padding little."""

import pytest

from tilewise.layout.rows import MAX_ELEMS, MAX_THREADS, RowTiling, row_configs
from tilewise.tile.regtile import RegTile
from tilewise.ir.expr import BufferRegion, IntImm, Range
from tilewise.ir.stmt import Buffer
from tilewise.ir import dtype as dt

WIDTHS = [1, 7, 64, 96, 1000, 1001, 3000, 5120, 14336, 32000, 32768, 32769, 50257, 65536,
          128256, 262144]


@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize("eb", [2, 4])
def test_every_width_has_a_tiling(cols, eb):
    t = RowTiling.plan(4096, cols, eb)
    assert cols % t.vec == 0 and t.vec * eb <= 16
    assert t.cols * t.chunks >= cols  # the chunks cover the row
    assert t.cols * (t.chunks - 1) < cols  # and no chunk lies wholly past it
    assert t.threads_per_row <= MAX_THREADS and t.threads <= MAX_THREADS
    limit = MAX_ELEMS if t.threads >= MAX_THREADS else 2 * MAX_ELEMS
    assert t.regs <= limit
    if t.chunks == 1 and cols >= 64:
        assert t.cols - cols <= cols / 4 + 8 * t.threads_per_row


def test_rows_that_fit_are_one_pass_and_longer_ones_chunked():
    assert RowTiling.plan(64, 32768, 2).chunks == 1
    assert RowTiling.plan(64, 32000, 2) == RowTiling(1, 1024, 4, 8, 1, 1)
    long = RowTiling.plan(64, 262144, 2)
    assert long.chunks == 16 and long.cols == 16384
    assert RowTiling.plan(64, 3000, 2) == RowTiling(2, 128, 3, 8, 1, 1)  # 3072: 2.4 % pad
    assert RowTiling.plan(64, 5120, 2).cols == 5120  # 128 x 5 x 8 rather than 256 x 3 x 8


def test_short_rows_share_threads_and_ctas():
    t = RowTiling.plan(65536, 64, 2)
    assert (t.threads_per_row, t.vectors, t.rows) == (2, 4, 128)
    assert RowTiling.plan(1, 64, 2).rows == 1  # one row: no idle row groups
    tiny = RowTiling.plan(3, 1, 2)
    assert tiny.rows_per_thread > 1 and tiny.rows >= 3


@pytest.mark.parametrize("plan", [RowTiling(8, 2, 4, 8, 2), RowTiling(2, 128, 3, 8),
                                  RowTiling(1, 512, 25, 1, 1, 4)])
def test_the_layouts_are_register_tiles(plan):
    """Every thread holds one element per register (RegTile's exhaustive check)."""
    for layout, shape, n in [(plan.tile(), (plan.rows, plan.cols), plan.regs),
                             (plan.per_row(), (plan.rows, 1), plan.rows_per_thread),
                             (plan.columns(), (plan.cols,), plan.vectors * plan.vec)]:
        b = Buffer("x", shape, dt.float32, "local", layout)
        region = BufferRegion(b, tuple(Range(IntImm(0), e) for e in shape))
        assert RegTile.of(region, plan.threads).regs == n


def test_configs_are_distinct_tilings_with_the_plan_first():
    cs = row_configs(4096, 3000, 2)
    assert cs[0] == {"threads": None, "vectors": None}
    plans = [RowTiling.plan(4096, 3000, 2, c["threads"], c["vectors"]) for c in cs]
    assert len(set(plans)) == len(plans) >= 3
