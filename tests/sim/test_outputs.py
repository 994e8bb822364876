"""``simulate(..., outputs=)``: the named arrays are unwritten at launch, like a fresh
``cudaMalloc``: filled with 0xFF bytes (NaN for floats), and a read of a byte of them the
launch has not written is a hazard at the user's line."""

import pathlib
import sys

import numpy as np
import pytest

import tilewise as tw

from test_races import FILE, kernel, run

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "tma"))


def test_reading_an_output_before_writing_it_is_reported():
    k = kernel("B[tid] = B[tid] + A[tid]  # <-")
    assert run(k)[2].ok  # without outputs= the caller's zeros count as written
    with pytest.raises(tw.HazardError) as info:
        run(k, outputs=("B",))
    text = str(info.value)
    assert "reads global memory of 'B' that nothing has written in this launch" in text
    assert "[CTA (0, 0, 0), warp 0, lane 0 (thread 0), address global (B)+0x0]" in text
    assert f"{FILE}:8" in text and "drop 'B' from outputs=" in info.value.hint


def test_an_output_written_then_read_back_is_clean_and_the_rest_stays_poisoned():
    k = kernel("if tid < 64:", "    B[tid] = A[tid] * 3", "T.cuda.cta_sync()",
               "if tid < 64:", "    B[tid] = B[tid] + 1")
    a, b, report = run(k, outputs=("B",))
    assert report.ok
    assert (b[:64] == a[:64] * 3 + 1).all()
    assert (b[64:].view(np.uint32) == 0xFFFFFFFF).all()  # never written: the poison


def test_float_outputs_are_nan_where_the_kernel_does_not_write():
    k = kernel("if tid % 2 == 0:", "    B[tid] = A[tid]", dtype="float32")
    a, b, report = run(k, dtype=np.float32, outputs="B")
    assert report.ok and np.isnan(b[1::2]).all() and (b[::2] == a[::2]).all()


def test_outputs_name_a_buffer_or_its_parameter():
    k = kernel("B[tid] = B[tid] + A[tid]  # <-")
    with pytest.raises(tw.HazardError, match="'B' that nothing has written"):
        run(k, outputs=("B_ptr",))
    with pytest.raises(tw.LaunchError) as info:
        run(k, outputs=("C",))
    assert "outputs= names 'C', which is not a global buffer of k" in str(info.value)
    assert info.value.hint == "name buffers among: A, B"


def test_a_cp_async_from_an_unwritten_output_is_reported_when_it_completes():
    k = kernel('S = T.alloc_shared((128,), "int32")',
               "T.ptx.cp_async(T.address_of(S[tid * 4]), T.address_of(B[tid * 4]), 16)",
               "T.ptx.cp_async.wait_all()", threads=32)
    with pytest.raises(tw.HazardError, match="'B' that nothing has written"):
        run(k, outputs=("B",))


@pytest.mark.parametrize("checks", ["races", "none"])
def test_lower_check_levels_keep_the_poison_but_not_the_tracking(checks):
    k = kernel("B[tid] = B[tid] + A[tid]")
    _, b, report = run(k, outputs=("B",), checks=checks)
    assert report.ok and (b == np.arange(128) - 1).all()  # 0xFFFFFFFF is -1


def test_a_tma_reduction_into_an_unwritten_output_is_reported():
    from kernels_tma import make_reduce, reduce_inputs

    a, b = reduce_inputs(np.random.default_rng(5), "float16")
    with pytest.raises(tw.HazardError, match="that nothing has written"):
        tw.simulate(make_reduce("float16", "add"), a, b, outputs=(
            make_reduce("float16", "add").param_buffers()[1].name,))
