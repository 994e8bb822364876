"""The registry: priorities, predicates, forced variants, the dispatch log."""

import kernels_ldgsts as K
import pytest

from tilewise.errors import DispatchError
from tilewise.pipeline import lower
from tilewise.tile import candidates, predicate, register_dispatch
from tilewise.tile.registry import _REGISTRY


def test_equal_priority_is_an_error():
    before = [v.name for v in candidates("copy_async")]  # loads the registered variants
    with pytest.raises(DispatchError, match="both have priority 20"):
        register_dispatch("copy_async", variant="other", priority=20)(lambda ctx: None)
    assert [v.name for v in candidates("copy_async")] == before
    assert before == ["bulk", "ldgsts", "tcgen05_cp", "tcgen05_ldst", "dsmem", "tma"]


def test_candidates_by_priority():
    assert [v.name for v in candidates("copy")][:4] == ["ld_stmatrix", "thread_regs", "reg",
                                                        "gmem_smem"]
    assert candidates("copy")[-1].name == "fallback"


def test_predicate_reason_and_kwargs():
    p = predicate("small", lambda ctx, n: True if ctx < n else (False, f"{ctx} >= {n}"), n=4)
    assert p(3) == (True, None)
    assert p(5) == (False, "5 >= 4")


def test_registered_variant_declines_with_reason():
    seen = []

    def impl(ctx):
        from tilewise.tile import DispatchFail

        seen.append(ctx.scope_kind)
        raise DispatchFail("test variant never accepts")

    register_dispatch("copy_async", variant="test_decline", priority=99)(impl)
    try:
        low = lower(K.f32_aligned, "sm_90a")
        (d,) = low.dispatch_log
        assert d.tried[0] == ("test_decline", 99, "test variant never accepts")
        assert d.chosen == "ldgsts" and seen == ["cta"]
    finally:
        _REGISTRY[("copy_async", "cuda")][:] = [
            v for v in _REGISTRY[("copy_async", "cuda")] if v.name != "test_decline"]


def test_uniform_condition_keeps_cta_active():
    (d,) = lower(K.tiled_by_cta, "sm_90a").dispatch_log
    assert d.chosen == "ldgsts"


def test_per_warp_condition_exact():
    (d,) = lower(K.per_warp, "sm_90a").dispatch_log
    assert d.chosen == "ldgsts" and "32 threads, outer 1" in d.info[0]
