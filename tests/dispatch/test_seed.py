"""The seed demo (tirx-copy_async-ldgsts.rst) and its "how inputs change" table."""

import re

import ldgsts_copy
import kernels_basic
import kernels_ldgsts as K
import kernels_reg
import pytest

from tilewise.errors import DispatchError
from tilewise.ir import script
from tilewise.pipeline import lower
from tilewise.pipeline import explain

SEED_GOLDEN = '''\
@T.prim_func
def copy_async(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (4096,), "float16")
    B = T.match_buffer(B_ptr, (4096,), "float16")
    T.device_entry()
    cta_id = T.cta_id([1])
    warp_id = T.warp_id([4])
    lane_id = T.lane_id([32])
    tid = T.thread_id([128])
    A_smem = T.alloc_buffer((4096,), "float16", scope="shared")
    for f in range(4):
        T.ptx.cp_async(T.address_of(A_smem[f * 1024 + tid * 8]), T.address_of(A[f * 1024 + tid * 8]), 16)
    T.ptx.cp_async.commit_group()
    T.ptx.cp_async.wait_group(0)
    T.cuda.cta_sync()
    for f_1 in range(4):
        T.ptx.ld_st(T.address_of(B[f_1 * 1024 + tid * 8]), T.address_of(A_smem[f_1 * 1024 + tid * 8]), 16)
'''


def test_seed_golden():
    low = lower(ldgsts_copy.copy_async, "sm_90a")
    assert script(low.func) == SEED_GOLDEN
    assert low.kernel is ldgsts_copy.copy_async
    assert [d.chosen for d in low.dispatch_log] == ["ldgsts", "gmem_smem"]


def test_seed_emits_no_completion():
    text = script(lower(ldgsts_copy.copy_async, "sm_90a", until="dispatch").func)
    # the caller's commit / wait / barrier appear once each: the variant added none
    assert text.count("commit_group") == 1 and text.count("wait_group") == 1
    assert text.count("cta_sync") == 1


def _plan(func):
    (d,) = lower(func, "sm_90a").dispatch_log
    assert d.chosen == "ldgsts"
    m = re.search(r"vec (\d+) .* outer (\d+), cp_size (\d+)", d.info[0])
    return tuple(int(x) for x in m.groups())


@pytest.mark.parametrize("func, vec, outer, cp", [
    (K.f32_aligned, 4, 8, 16),
    (K.f16_align8, 4, 8, 8),
    (K.f16_align4, 2, 16, 4),
])
def test_seed_table(func, vec, outer, cp):
    assert _plan(func) == (vec, outer, cp)


def test_seed_table_fp16_aligned():
    d = lower(ldgsts_copy.copy_async, "sm_90a").dispatch_log[0]
    assert "vec 8 (128 bits), 128 threads, outer 4, cp_size 16" in d.info[0]


def test_shared_to_global_is_never_ldgsts():
    """The seed: "a shared -> global copy_async is never ldgsts". On sm_90a the TMA unit's
    bulk store takes it; before Hopper nothing can."""
    (d,) = lower(K.smem_to_gmem, "sm_90a").dispatch_log
    assert d.chosen == "bulk"
    with pytest.raises(DispatchError, match="ldgsts \\(priority 20\\): copies shared -> global"):
        lower(K.smem_to_gmem, "sm_80")


@pytest.mark.parametrize("func, text", [
    (K.f16_align2, "only 2-byte aligned"),
    (K.partial_warp, "only 16 of the 32 threads"),
    (K.not_divisible, "100 elements, not a multiple of the 128 threads"),
])
def test_seed_declines(func, text):
    with pytest.raises(DispatchError, match=re.escape(text)):
        lower(func, "sm_90a")


def test_flat_examples_lower():
    for f in (K.per_warp, K.swizzled, K.tiled_by_cta, kernels_reg.reg_roundtrip):
        lower(f, "sm_90a")


def test_tiled_by_cta_offsets():
    text = script(lower(K.tiled_by_cta, "sm_90a").func)
    assert "T.address_of(A[bx * 8192 + f * 2048 + tid * 8])" in text


def test_vector_add_passes_through():
    low = lower(kernels_basic.vector_add, "sm_80")
    assert "C[bx * 128 + tid] = A[bx * 128 + tid] + B[bx * 128 + tid]" in script(low.func)
    assert low.dispatch_log == []


def test_explain_lists_candidates():
    text = explain(K.smem_to_gmem, "sm_80")
    assert "ldgsts (priority 20): declined: copies shared -> global" in text
    assert "bulk (priority 25): declined: target sm_80 has no cp.async.bulk" in text
    text = explain(K.smem_to_gmem, "sm_90a")
    assert "bulk (priority 25): chosen (1 bulk store(s) of 8192 bytes)" in text
    text = explain(ldgsts_copy.copy_async, "sm_90a")
    assert "gmem_smem (priority 20): chosen" in text


def test_tile_origin_kept_in_locals_keeps_alignment():
    """`r0 = by * 64` then `A[r0:r0 + 64, ...]`: the single-assignment local is seen
    through, so the 16-byte cp.async is still chosen."""
    import kernels_basic

    low = lower(kernels_basic.tile_origin_in_locals, "sm_90a")
    text = script(low.func)
    assert text.count("T.ptx.cp_async(") == 1 and ", 16)" in text
    assert "by * 16384" in text  # the launch variable keeps the name the kernel gave it
