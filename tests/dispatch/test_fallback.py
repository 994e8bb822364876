"""copy/fallback: chosen when nothing better accepts; it is correct, and it says so loudly."""

import numpy as np

from tilewise import T, Tx
from tilewise.ir import script
from tilewise.pipeline import lower
from tilewise.sim import simulate
from tilewise.pipeline import explain


@T.prim_func
def ragged_copy(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (100,), "float32")
    B = T.match_buffer(B_ptr, (100,), "float32")
    T.device_entry()
    tid = T.thread_id([128])
    Tx.cta.copy(B[0:100], A[0:100])  # 100 elements over 128 threads: no partition fits


def test_fallback_is_chosen_with_a_warning():
    low = lower(ragged_copy, "sm_90a")
    (d,) = low.dispatch_log
    assert d.chosen == "fallback"
    reasons = dict((name, reason) for name, _, reason in d.tried)
    assert "100" in reasons["gmem_smem"] and "128" in reasons["gmem_smem"]
    assert any("scalar" in n for n in d.notes)
    text = explain(ragged_copy, "sm_90a")
    assert "fallback (priority 0): chosen" in text and "warning:" in text


def test_fallback_copies_every_element_from_the_first_thread():
    text = script(lower(ragged_copy, "sm_90a").func)
    assert "if tid == 0:" in text and "for " in text
    a = np.random.default_rng(3).standard_normal(100).astype(np.float32)
    b = np.full(100, np.nan, np.float32)
    simulate(ragged_copy, a, b)
    assert a.tobytes() == b.tobytes()
