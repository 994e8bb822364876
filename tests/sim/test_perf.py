"""Performance counters of the simulator (``simulate(..., perf=True).perf``, sim/perf.py)
against bank conflicts and sectors computed by hand: 32 banks of 4 bytes; a request of
<= 4-byte accesses is one pass over the warp, 8-byte ones a pass per half-warp, 16-byte
ones (and ldmatrix rows) a pass per quarter-warp; a pass costs as many wavefronts as the
most distinct words one bank serves; 32-byte global sectors per warp request."""

import numpy as np
import perf_kernels as K
import pytest

import tilewise as tw
from tilewise import T, Tx

TRANSPOSE = K.TRANSPOSE


# n = 64: 4 CTAs x 8 warps x 4 steps = 128 warp requests per site. The tile read of step 3:
#  column lanes: 32 rows of one column. plain: one bank, 32 words -> 32 wavefronts;
#    padded (33-word rows): bank (33 r + c) % 32 all distinct -> 1; swizzled: the chunk of
#    row r is c // 4 ^ r % 8: 8 chunks, rows r, r + 8, r + 16, r + 24 share one -> 4.
#  block lanes: rows 8j..8j+7 x columns 4w..4w+3. plain: bank c, 8 rows each -> 8;
#    padded: bank (r + c) % 32, r % 8 + c % 4 takes one value up to 4 times -> 4;
#    swizzled: chunk (c // 4) ^ (r % 8) is 8 distinct chunks x 4 words -> 1.
@pytest.mark.parametrize("lanes,layout,ways", [
    ("column", "plain", 32), ("column", "padded", 1), ("column", "swizzled", 4),
    ("block", "plain", 8), ("block", "padded", 4), ("block", "swizzled", 1)])
def test_transpose_bank_conflicts_by_hand(lanes, layout, ways):
    k = TRANSPOSE.make_transpose(64, layout, lanes)
    a, b = TRANSPOSE.inputs(np.random.default_rng(0), 64)
    perf = tw.simulate(k, a, b, perf=True).perf
    assert np.array_equal(b, a.T)
    (st,), (ld,) = [s for s in perf.shared if s.op == "st"], [
        s for s in perf.shared if s.op == "ld"]
    assert (st.requests, st.wavefronts, st.conflicts) == (128, 128, 0)  # rows: no conflict
    assert (ld.requests, ld.wavefronts, ld.ideal, ld.ways) == (128, 128 * ways, 128, ways)
    assert ld.conflicts == 128 * (ways - 1) == perf.bank_conflicts("ld")
    # both global sides: 4 sectors of 32 bytes per warp, the fewest that hold 128 bytes
    assert perf.sectors("ld") == (512, 128) and perf.sectors("st") == (512, 128)
    assert all(s.coalesced for s in perf.global_)


def test_naive_transpose_stores_are_uncoalesced():
    k = TRANSPOSE.make_naive_transpose(64)
    a, b = TRANSPOSE.inputs(np.random.default_rng(1), 64)
    perf = tw.simulate(k, a, b, perf=True).perf
    (ld,), (st,) = [s for s in perf.global_ if s.op == "ld"], [
        s for s in perf.global_ if s.op == "st"]
    assert (ld.requests, ld.sectors, ld.ideal) == (128, 512, 512)  # a row: 4 sectors
    assert (st.requests, st.sectors, st.ideal) == (128, 4096, 512)  # a column: 32 sectors
    assert st.sectors_per_request == 32.0 and not st.coalesced
    text = str(perf)
    assert "st B (4 B/lane): 128 requests, 4096 sectors (32.0 per request, ideal 4.0): " \
           "uncoalesced: 8.0x the sectors needed" in text
    assert "hint: let consecutive lanes access consecutive addresses" in text


@pytest.mark.parametrize("stride,wavefronts", [(1, 2), (2, 4)])
def test_eight_byte_accesses_go_a_half_warp_at_a_time(stride, wavefronts):
    """Lane l reads float64 element ``stride * l``. stride 1: each half-warp reads 128
    contiguous bytes, one wavefront each: 2, no conflict (a whole-warp count would say
    2-way). stride 2: a half-warp's words 4l, 4l + 1 put lanes l and l + 8 on one bank: 2
    wavefronts per half, 4 in all, 2 of them conflicts."""
    a = np.arange(64, dtype=np.float64)
    b = np.zeros(32)
    perf = tw.simulate(K.wide_reads(stride), a, b, perf=True).perf
    (ld,) = [s for s in perf.shared if s.op == "ld"]
    assert (ld.requests, ld.wavefronts, ld.ideal) == (1, wavefronts, 2)
    assert np.array_equal(b, a[::stride][:32])


@pytest.mark.parametrize("swizzled,ways", [(False, 8), (True, 1)])
def test_sixteen_byte_rows_and_ldmatrix_a_quarter_warp_at_a_time(swizzled, ways):
    """Lane l reads the first 16 bytes of row l of a (32, 64) float16 tile (rows of 128
    bytes), by ldmatrix .x4 and by a 16-byte vector load. Each quarter-warp reads 8 rows'
    first chunk: one group of 4 banks, 8 words each -> 8 wavefronts, 32 per warp against 4.
    The 128-byte swizzle moves row r's chunk to chunk r % 8: one wavefront per quarter."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((32, 64)).astype(np.float16)
    w, v = np.zeros((4, 32), np.uint32), np.zeros((32, 8), np.float16)
    perf = tw.simulate(K.matrix_rows(swizzled), a, w, v, perf=True).perf
    assert np.array_equal(v, a[:, :8])
    for op in ("ldmatrix", "ld"):
        (site,) = [s for s in perf.shared if s.op == op and s.width == 16]
        assert (site.requests, site.wavefronts, site.ideal, site.ways) == (1, 4 * ways, 4, ways)
    (st,) = [s for s in perf.global_ if s.op == "st" and s.width == 16]
    assert (st.requests, st.sectors, st.ideal) == (1, 16, 16)  # 512 contiguous bytes


def test_cp_async_reads_are_counted_as_global_sectors():
    @T.prim_func
    def stage(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (128, 32), "float16")
        B = T.match_buffer(B_ptr, (128, 32), "float16")
        T.device_entry()
        T.thread_id([128])
        tile = T.alloc_shared((128, 32), "float16")
        Tx.cta.copy_async(tile[:, :], A[:, :], dispatch="ldgsts")
        T.ptx.cp_async.commit_group()
        T.ptx.cp_async.wait_group(0)
        T.cuda.cta_sync()
        Tx.cta.copy(B[:, :], tile[:, :])

    a = np.random.default_rng(3).standard_normal((128, 32)).astype(np.float16)
    b = np.zeros_like(a)
    perf = tw.simulate(stage, a, b, perf=True).perf
    (cp,) = [s for s in perf.global_ if s.op == "cp.async"]
    # 8 KB in 16-byte pieces: 4 steps x 4 warps, 512 contiguous bytes (16 sectors) each
    assert (cp.requests, cp.sectors, cp.ideal, cp.width) == (16, 256, 256, 16)
    assert perf.bank_conflicts() == 0 and np.array_equal(a, b)


def test_a_scalar_fallback_copy_is_a_dispatch_warning_at_its_line():
    @T.prim_func
    def widen(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (16, 16), "float16")
        B = T.match_buffer(B_ptr, (16, 16), "float32")
        T.device_entry()
        T.thread_id([32])
        tile = T.alloc_shared((16, 16), "float32")
        Tx.cta.copy(tile[:, :], A[:, :])
        T.cuda.cta_sync()
        Tx.cta.copy(B[:, :], tile[:, :])

    a = np.random.default_rng(4).standard_normal((16, 16)).astype(np.float16)
    b = np.zeros((16, 16), np.float32)
    perf = tw.simulate(widen, a, b, perf=True).perf
    (where, call, text), = perf.warnings
    assert where.endswith(f"test_perf.py:{widen.span.line + 6}") and call.startswith(
        "Tx.cta.copy(tile")
    assert "falls back to a scalar loop" in text and "dispatch warnings:" in str(perf)
    # one thread walks 256 elements: 256 single-lane requests, one sector each
    (ld,) = [s for s in perf.global_ if s.op == "ld"]
    assert (ld.requests, ld.sectors) == (256, 256)
    assert np.array_equal(b, a.astype(np.float32))


def test_the_counters_are_off_unless_asked_for():
    k = TRANSPOSE.make_transpose(32)
    a, b = TRANSPOSE.inputs(np.random.default_rng(5), 32)
    report = tw.simulate(k, a, b)
    with pytest.raises(tw.SimulationError, match="did not count performance hazards") as e:
        report.perf  # noqa: B018
    assert "tw.simulate(kernel, ..., perf=True)" in str(e.value)
