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


def test_kernels_that_take_clusters_split_long_rows():
    """A row too long for one CTA's registers is split over the most CTAs (8, 4, 2) that
    leave each more than one chunk of 256 threads x 64 bytes, each CTA walking its part in
    chunks; none of the parts is empty. Without clusters it is chunked in one CTA."""
    for cols, ctas, chunks in [(65536, 4, 2), (128256, 8, 2), (262144, 8, 4), (50257, 4, 2),
                               (100000, 4, 4), (1000000, 8, 16)]:
        t = RowTiling.plan(64, cols, 2, max_ctas=8)
        assert (t.ctas, t.chunks, t.threads) == (ctas, chunks, 256), (cols, t)
        part = t.cols * t.chunks
        assert t.part_cols == part
        assert part * t.ctas >= cols > part * (t.ctas - 1)  # the last part is not empty
    for cols in range(32769, 400000, 997):  # and every width between
        t = RowTiling.plan(64, cols, 2, max_ctas=8)
        assert t.cols * t.chunks * (t.ctas - 1) < cols <= t.cols * t.chunks * t.ctas, cols
    assert RowTiling.plan(64, 65536, 2, max_ctas=2).ctas == 2
    assert RowTiling.plan(64, 262144, 2).ctas == 1  # a kernel without clusters
    assert RowTiling.plan(64, 32000, 2, max_ctas=8).ctas == 1  # fits one CTA: not split


def test_a_split_rows_part_is_kept_in_shared_memory_up_to_96_kb():
    """RowTiling.staged: the row kernels keep a CTA's part of a split row in shared memory
    (their second pass reads it there) when it is at most STAGE_BYTES; never without a
    cluster."""
    from tilewise.layout.rows import STAGE_BYTES

    t = RowTiling.plan(256, 262144, 2, max_ctas=8)  # 8 parts of 32768 halves: 64 KB
    assert t.part_cols * 2 == 64 * 1024 <= STAGE_BYTES and t.staged(2)
    assert not t.staged(4)  # the same part in float32: 128 KB
    big = RowTiling.plan(16, 1048576, 2, max_ctas=8)  # parts of 256 KB
    assert big.part_cols * 2 > STAGE_BYTES and not big.staged(2)
    assert not RowTiling.plan(256, 262144, 2).staged(2)  # no cluster: nothing to keep
    assert STAGE_BYTES == 96 * 1024


def test_a_split_row_can_be_pinned_to_one_pass_or_chunks():
    one = RowTiling.plan(64, 65536, 2, threads=512, ctas=4)
    assert (one.threads, one.ctas, one.chunks, one.cols) == (512, 4, 1, 16384)
    chunked = RowTiling.plan(64, 65536, 2, ctas=2, chunk=8192)
    assert (chunked.ctas, chunked.chunks, chunked.cols) == (2, 4, 8192)
    too_long = RowTiling.plan(64, 262144, 2, ctas=2, threads=256)  # a part over registers
    assert too_long.chunks > 1 and too_long.threads == 256


@pytest.mark.parametrize("kw,why", [({"ctas": 3}, "one of (2, 4, 8, 16)"),
                                    ({"ctas": 8, "threads": 1024}, "does not split")])
def test_a_split_that_cannot_be_is_refused(kw, why):
    with pytest.raises(ValueError, match=why.replace("(", r"\(").replace(")", r"\)")):
        RowTiling.plan(64, 8192, 2, **kw)


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
    assert cs[0] == {}
    plans = [RowTiling.plan(4096, 3000, 2, c.get("threads"), c.get("vectors")) for c in cs]
    assert len(set(plans)) == len(plans) >= 3


def test_long_rows_are_tuned_over_cluster_sizes_and_the_chunked_form():
    cs = row_configs(256, 262144, 2, max_ctas=8)
    plans = [RowTiling.plan(256, 262144, 2, c.get("threads"), c.get("vectors"), c.get("chunk"),
                            ctas=c.get("ctas"), max_ctas=8) for c in cs]
    assert cs[0] == {} and len(set(plans)) == len(plans) >= 6
    assert (plans[0].ctas, plans[0].chunks) == (8, 4)
    assert any(p.ctas == 8 and p.chunks == 1 for p in plans)  # one pass over 8 CTAs
    assert any(p.ctas == 1 and p.chunks > 1 for p in plans)  # one CTA per row, chunked
    assert {p.threads for p in plans} >= {256, 512}
    wide = row_configs(16, 32000, 2, max_ctas=8)  # fits one CTA; few rows: one-pass splits
    assert wide[0] == {} and {c.get("ctas") for c in wide} >= {None, 4, 8}
    assert all("ctas" not in c for c in row_configs(16, 32000, 2))  # no clusters asked


def test_the_longest_rows_also_try_16_ctas_but_plans_stay_portable():
    """A kernel that takes 16 CTAs a row (max_ctas=16) still plans at most 8 (the portable
    cluster); where the plan's 8 parts take 4 chunks or more the tuner also times 16 CTAs
    with half the chunk and with the chunk (RMSNorm 256 x 262144 ran 3-4 % faster so,
    128 x 524288 12-20 %, measured on the H200), and nowhere shorter (softmax 256 x 128256
    ran 10-20 % slower)."""
    for cols in (262144, 524288, 1000000):
        assert RowTiling.plan(256, cols, 2, max_ctas=16).ctas == 8
        sixteen = [c for c in row_configs(256, cols, 2, max_ctas=16) if c.get("ctas") == 16]
        assert len(sixteen) == 2, cols
        for c in sixteen:
            t = RowTiling.plan(256, cols, 2, c.get("threads"), None, c["chunk"], ctas=16,
                               max_ctas=16)
            assert t.ctas == 16 and t.threads == 256 and t.chunks >= 2
            assert t.part_cols * 15 < cols <= t.part_cols * 16  # every part holds some
    for cols in (65536, 128256, 200000):
        assert all(c.get("ctas") != 16 for c in row_configs(256, cols, 2, max_ctas=16)), cols
    assert all(c.get("ctas") != 16 for c in row_configs(256, 262144, 2, max_ctas=8))
