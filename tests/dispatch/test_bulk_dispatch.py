"""copy_async -> bulk (cp.async.bulk by the TMA unit): when it is chosen, what it emits,
and why it declines."""

import pytest

from tilewise import T, Tx
from tilewise.errors import DispatchError
from tilewise.ir import script
from tilewise.layout import S as Sh
from tilewise.layout import TileLayout
from tilewise.pipeline import lower


def _kernel(dst_cols=(0, 64), src_cols=(0, 64), mbar=True, store=False, layout=None, N=64):
    c0, c1 = src_cols

    @T.prim_func
    def k(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (64, N), "float16")
        B = T.match_buffer(B_ptr, (64, N), "float16")
        T.device_entry()
        bx = T.cta_id([8])
        tid = T.thread_id([128])
        S = T.alloc_buffer((8, c1 - c0), "float16", scope="shared", layout=layout)
        bar = T.alloc_shared([1], "uint64")
        bar_ptr = T.address_of(bar[0]) if mbar else None
        if store:
            Tx.cta.copy_async(B[bx * 8:bx * 8 + 8, c0:c1], S[:, :], mbar=bar_ptr)  # STORE
        else:
            Tx.cta.copy_async(S[:, :], A[bx * 8:bx * 8 + 8, c0:c1], mbar=bar_ptr)  # LOAD

    return k


def _decision(k, target="sm_90a"):
    (d,) = lower(k, target).dispatch_log
    return d


def test_a_load_with_mbar_is_one_bulk_copy_per_row():
    d = _decision(_kernel(src_cols=(0, 32)))
    assert d.chosen == "bulk" and d.info == ["8 bulk load(s) of 64 bytes"]
    text = script(lower(_kernel(src_cols=(0, 32)), "sm_90a").func)
    assert "if tid == 0:" in text and "for f in range(8):" in text
    assert "T.ptx.cp_async.bulk.g2s(T.address_of(S[f * 32]), T.address_of(A[bx * 512 + f * 64])," \
           " 64, T.address_of(bar[0]))" in text
    assert "mbarrier" not in text.replace("T.address_of(bar[0])", "")  # no expect/wait added


def test_whole_rows_are_one_contiguous_bulk_copy():
    assert _decision(_kernel()).info == ["1 bulk load(s) of 1024 bytes"]


def test_without_mbar_a_load_goes_to_cp_async():
    d = _decision(_kernel(mbar=False))
    assert d.chosen == "ldgsts"
    assert "a bulk load completes on an mbarrier: pass mbar=" in dict(
        (n, r) for n, _, r in d.tried)["bulk"]


def test_a_store_is_bulk_and_refuses_an_mbarrier():
    assert _decision(_kernel(store=True, mbar=False)).info == ["1 bulk store(s) of 1024 bytes"]
    with pytest.raises(DispatchError, match="bulk async-groups, not an mbarrier"):
        lower(_kernel(store=True, mbar=True), "sm_90a")


def test_declines_with_the_rule_that_failed():
    with pytest.raises(DispatchError) as e:
        lower(_kernel(src_cols=(0, 12), N=64), "sm_90a")
    text = str(e.value)
    assert "contiguous runs are 24 bytes, not a multiple of 16" in text
    assert "test_bulk_dispatch.py" in text and "# LOAD" in text
    assert "tilewise/" not in text.split("\n", 1)[1]  # no compiler file in the message body


def _reasons(d) -> dict:
    return {n: r for n, _, r in d.tried}


def test_a_misaligned_run_goes_to_the_tensor_copy():
    """A box's global start needs no alignment: TMA takes what bulk declines."""
    d = _decision(_kernel(src_cols=(4, 36), N=64))
    assert d.chosen == "tma"
    assert "runs start only 8-byte aligned; a bulk copy needs 16" in _reasons(d)["bulk"]


def test_a_swizzled_tile_needs_the_tensor_form():
    sw = TileLayout(Sh[(8, 64)]).swizzle(128, 16)
    d = _decision(_kernel(layout=sw))
    assert d.chosen == "tma"
    assert "is swizzled; a bulk copy writes plain bytes" in _reasons(d)["bulk"]


def test_no_tma_before_hopper():
    with pytest.raises(DispatchError, match="target sm_80 has no cp.async.bulk"):
        lower(_kernel(), "sm_80")
