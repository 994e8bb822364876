"""Races, precisely: two CTAs writing *identical* bytes to one place is a warning in the
report (an error with ``strict_races=True``); differing values, read-write races and races
inside a CTA stay hazards whatever the values (docs/simulator.md, "Races")."""

import warnings

import pytest

import tilewise as tw
from tilewise.knobs import override

from test_races import kernel, run


def quiet_run(k, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tw.SimulationWarning)
        return run(k, **kw)


def test_two_ctas_writing_the_same_values_is_a_warning_not_a_hazard():
    k = kernel("B[tid] = A[tid] * 2  # <-", threads=64, ctas=2)
    with pytest.warns(tw.SimulationWarning, match="1 benign race"):
        a, b, report = run(k)
    assert report.ok and (b[:64] == a[:64] * 2).all()
    (w,) = report.warnings
    text = str(w)
    assert "write-write race on global memory with identical bytes" in text
    assert "bytes CTA (0, 0, 0) wrote in the same launch, the same values" in text
    assert "[CTA (1, 0, 0), warp 0, lane 0 (thread 0), address global (B)+0x0]" in text
    assert "race_kernels.py:8" in text and "1 warning(s)" in str(report)


def test_one_warning_per_line_however_many_ctas_repeat_it():
    k = kernel("B[tid] = A[tid]", "B[64 + tid] = A[tid]", threads=64, ctas=4)
    _, _, report = quiet_run(k)
    assert report.ok and len(report.warnings) == 2


@pytest.mark.parametrize("how", ["keyword", "knob"])
def test_strict_races_makes_identical_writes_a_hazard(how):
    k = kernel("B[tid] = A[tid]  # <-", threads=64, ctas=2)
    with pytest.raises(tw.HazardError, match="with identical bytes") as info:
        if how == "keyword":
            run(k, strict_races=True)
        else:
            with override(sim_strict_races=True):
                run(k)
    assert "race_kernels.py:8" in str(info.value)


def test_differing_values_stay_a_hazard():
    k = kernel("B[tid] = A[tid] + bx  # <-", threads=64, ctas=2)
    with pytest.raises(tw.HazardError, match="write-write race on global memory: this "
                       "thread writes bytes CTA \\(0, 0, 0\\) wrote"):
        run(k)


def test_one_differing_byte_among_equal_ones_is_a_hazard():
    k = kernel("if bx == 1 and tid == 9:", "    B[tid] = 5", "else:", "    B[tid] = A[tid]",
               threads=64, ctas=2)
    with pytest.raises(tw.HazardError, match="write-write race on global memory"):
        run(k)


def test_a_read_of_what_another_cta_wrote_stays_a_hazard_even_when_equal():
    k = kernel("B[tid] = A[tid]", "A[tid] = B[tid]  # <-", threads=64, ctas=2)
    with pytest.raises(tw.HazardError, match="read-after-write race on global memory"):
        quiet_run(k)


def test_a_write_over_what_another_cta_read_stays_a_hazard_even_when_equal():
    k = kernel("B[tid] = A[tid]", "A[tid] = B[tid]  # <-", threads=64, ctas=1)
    a, b, report = run(k)  # one CTA: ordered by program order per thread
    assert report.ok
    k = kernel("B[64 + tid] = A[tid]", "if bx == 1:", "    A[tid] = A[tid]  # <-",
               threads=64, ctas=2)
    with pytest.raises(tw.HazardError, match="write-after-read race on global memory"):
        run(k)


def test_threads_of_one_cta_writing_equal_values_to_global_stay_a_hazard():
    k = kernel("B[tid // 2] = A[tid // 2]  # <-", threads=64)
    with pytest.raises(tw.HazardError, match="write-write race on global memory: thread"):
        run(k)


def test_equal_values_racing_in_shared_memory_stay_a_hazard():
    # an in-place read-modify-write can hide behind equal values
    k = kernel('S = T.alloc_shared((64,), "int32")', "S[tid] = A[tid]",
               "S[(tid + 1) % 64] = A[(tid + 1) % 64]  # <-", threads=64)
    with pytest.raises(tw.HazardError, match="write-write race on shared memory"):
        run(k)
    k = kernel('S = T.alloc_shared((1,), "int32")', "S[0] = 7  # <-", threads=64)
    with pytest.raises(tw.HazardError, match="writes the same bytes in the same statement"):
        run(k)


def test_a_bulk_store_of_identical_bytes_by_two_ctas_is_a_warning():
    body = ('S = T.alloc_shared((128,), "int32")', "S[tid] = A[tid]",
            "T.ptx.fence.proxy_async()", "T.cuda.cta_sync()", "if tid == 0:",
            "    T.ptx.cp_async.bulk.s2g(T.address_of(B[0]), T.address_of(S[0]), 512)",
            "    T.ptx.cp_async.bulk.commit_group()", "    T.ptx.cp_async.bulk.wait_group(0)")
    a, b, report = quiet_run(kernel(*body, ctas=2))
    assert report.ok and (a == b).all() and len(report.warnings) == 1
    assert "cp_async.bulk.s2g" in report.warnings[0].span.text()
