"""copy/fallback: chosen when nothing better accepts (a converting copy); it is correct, and
it says so loudly: a TilewisePerformanceWarning at the user's line from tw.compile and
tw.simulate. A tile whose element count does not divide the threads is no longer one of
those cases (gmem_smem guards its last step)."""

import warnings

import numpy as np
import pytest

import tilewise as tw
from tilewise import T, Tx
from tilewise.ir import script
from tilewise.pipeline import explain, lower
from tilewise.sim import simulate


@T.prim_func
def converting_copy(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (100,), "float16")
    B = T.match_buffer(B_ptr, (100,), "float32")
    T.device_entry()
    tid = T.thread_id([128])
    Tx.cta.copy(B[0:100], A[0:100])  # a conversion: only the scalar fallback converts


@T.prim_func
def ragged_copy(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (100,), "float32")
    B = T.match_buffer(B_ptr, (100,), "float32")
    T.device_entry()
    tid = T.thread_id([128])
    Tx.cta.copy(B[0:100], A[0:100])  # 100 elements over 128 threads: the last step guarded


def test_fallback_is_chosen_with_a_warning():
    with pytest.warns(tw.TilewisePerformanceWarning) as rec:
        low = lower(converting_copy, "sm_90a")
    (d,) = low.dispatch_log
    assert d.chosen == "fallback"
    reasons = dict((name, reason) for name, _, reason in d.tried)
    assert "float32" in reasons["gmem_smem"] and "does not convert" in reasons["gmem_smem"]
    assert any("scalar" in n for n in d.notes)
    text = explain(converting_copy, "sm_90a")
    assert "fallback (priority 0): chosen" in text and "warning:" in text
    w = rec[0]
    assert w.filename == __file__ and w.lineno == d.span.line
    assert "one thread" in str(w.message) and "Tx.cta.copy(B[0:100], A[0:100])" in str(w.message)


def test_compile_and_simulate_warn_at_the_users_line():
    a = np.random.default_rng(3).standard_normal(100).astype(np.float16)
    b = np.full(100, np.nan, np.float32)
    for run in (lambda: tw.compile(converting_copy, "sm_90a"),
                lambda: simulate(converting_copy, a, b)):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            run()
        slow = [w for w in rec if issubclass(w.category, tw.TilewisePerformanceWarning)]
        assert len(slow) == 1 and slow[0].filename == __file__
    assert np.array_equal(b, a.astype(np.float32))


def test_fallback_copies_every_element_from_the_first_thread():
    with pytest.warns(tw.TilewisePerformanceWarning):
        text = script(lower(converting_copy, "sm_90a").func)
    assert "if tid == 0:" in text and "for " in text


def test_a_ragged_copy_is_parallel_and_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error", tw.TilewisePerformanceWarning)
        low = lower(ragged_copy, "sm_90a")
    (d,) = low.dispatch_log
    assert d.chosen == "gmem_smem" and "last step guarded" in " ".join(d.info)
    a = np.random.default_rng(4).standard_normal(100).astype(np.float32)
    b = np.full(100, np.nan, np.float32)
    simulate(ragged_copy, a, b)
    assert a.tobytes() == b.tobytes()


def test_a_kernel_lowered_again_is_not_lowered_again_but_warns_again():
    """lower() keeps a kernel's lowering per target: the second call returns it without
    running the passes, and still warns at the user's line (a second tw.simulate of the
    kernel says what the first said); until= and another target lower afresh."""
    import tilewise.pipeline as pipeline

    first = lower(converting_copy, "sm_90a")
    calls = []
    real = pipeline.PASSES

    def counting(name, run):
        return name, lambda f, out: (calls.append(name), run(f, out))[1]

    pipeline.PASSES = [counting(n, r) for n, r in real]
    try:
        with pytest.warns(tw.TilewisePerformanceWarning, match="falls back") as rec:
            again = lower(converting_copy, "sm_90a")
        assert again is first and calls == []
        assert rec[0].lineno == first.dispatch_log[0].span.line
        lower(converting_copy, "sm_90a", until="dispatch")
        assert calls == ["verify-input", "dispatch"]
        with pytest.warns(tw.TilewisePerformanceWarning):
            other = lower(converting_copy, "sm_80")
        assert other is not first and other.target.name == "sm_80"
    finally:
        pipeline.PASSES = real
