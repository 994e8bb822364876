"""``wgmma_accumulator_rows()`` and ``wgmma_accumulator_columns(n)``: the per-row and
per-column register layouts of the wgmma accumulator, spelled as the issue derived them by
hand, and used by row reductions, row broadcasts and a bias row in the simulator."""

import numpy as np
import pytest

import tilewise as tw
from tilewise import T, Tx
from tilewise.errors import LayoutError
from tilewise.layout import (R, S, laneid, wgmma_accumulator, wgmma_accumulator_columns,
                             wgmma_accumulator_rows, wid_in_wg)


def test_the_rows_layout_is_the_hand_derived_one():
    want = S[(4, 2, 8, 1):(1 @ wid_in_wg, 1, 4 @ laneid, 1)] + R[4:1 @ laneid]
    assert wgmma_accumulator_rows() == want
    assert wgmma_accumulator_rows().size() == 64
    # row 16 w + 8 h + q: warp w, register h, lanes 4 q .. 4 q + 3
    places = wgmma_accumulator_rows().apply_all(16 * 2 + 8 + 3, 0, shape=(64, 1))
    assert sorted((p["wid_in_wg"], p["m"], p["laneid"]) for p in places) == [
        (2, 1, 12), (2, 1, 13), (2, 1, 14), (2, 1, 15)]


@pytest.mark.parametrize("n", [8, 64, 256])
def test_the_columns_layout_holds_what_each_thread_holds_of_the_accumulator(n):
    cols = wgmma_accumulator_columns(n)
    assert cols.size() == n
    acc = wgmma_accumulator(n)
    for c in (0, 3, n - 1):  # column c: register 2 (c // 8) + c % 2 of the lanes l % 4 = c % 8 // 2
        holders = {(p["wid_in_wg"], p["laneid"]) for p in cols.apply_all(c)}
        assert holders == {(p["wid_in_wg"], p["laneid"]) for r in range(64)
                           for p in acc.apply_all(r, c, shape=(64, n))}
        assert {p["m"] for p in cols.apply_all(c)} == {2 * (c // 8) + c % 2}


def test_the_columns_layout_needs_a_wgmma_width():
    with pytest.raises(LayoutError, match="no wgmma accumulator for N = 12"):
        wgmma_accumulator_columns(12)


def _row_ops(n: int):
    @T.prim_func
    def row_ops(ACC_ptr: T.handle, BIAS_ptr: T.handle, OUT_ptr: T.handle):
        ACC = T.match_buffer(ACC_ptr, (64, n), "float32")
        BIAS = T.match_buffer(BIAS_ptr, (n,), "float32")
        OUT = T.match_buffer(OUT_ptr, (64, n), "float32")
        T.device_entry()
        T.warpgroup_id([1])
        acc = T.alloc_local((64, n), "float32", layout=wgmma_accumulator(n))
        m = T.alloc_local((64, 1), "float32", layout=wgmma_accumulator_rows())
        s = T.alloc_local((64, 1), "float32", layout=wgmma_accumulator_rows())
        b = T.alloc_local((n,), "float32", layout=wgmma_accumulator_columns(n))
        Tx.wg.copy(acc[:, :], ACC[:, :])
        Tx.wg.copy(b[:], BIAS[:])
        Tx.wg.max(m[:, :], acc[:, :], axes=-1)
        Tx.wg.sub(acc[:, :], acc[:, :], m[:, :])  # each row minus its maximum
        Tx.wg.exp(acc[:, :])
        Tx.wg.sum(s[:, :], acc[:, :], axes=-1)
        Tx.wg.reciprocal(s[:, :])
        Tx.wg.mul(acc[:, :], acc[:, :], s[:, :])  # a softmax of each row
        Tx.wg.add(acc[:, :], acc[:, :], b[:])  # plus a bias row from registers
        Tx.wg.copy(OUT[:, :], acc[:, :])
    return row_ops


@pytest.mark.parametrize("n", [16, 64])
def test_row_softmax_and_bias_on_the_accumulator_in_the_simulator(n):
    rng = np.random.default_rng(7)
    acc = (rng.standard_normal((64, n)) * 3).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    out = np.full((64, n), np.nan, np.float32)
    tw.simulate(_row_ops(n), acc, bias, out)
    e = np.exp(acc - acc.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True) + bias, rtol=1e-5,
                               atol=1e-6)
