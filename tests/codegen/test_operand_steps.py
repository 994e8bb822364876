"""A constant operand the hardware takes only in steps (a named barrier's thread count:
whole warps) is a CompileError at the user's line when the kernel is compiled -- not an
nvJitLink failure worded as a code generator defect (the fuzzer found ``bar.sync(0, 48)``).
The simulator reports the same call as a hazard when it runs (tests/sim/test_fibers.py)."""

import pytest

import tilewise as tw
from tilewise import T
from tilewise.errors import CompileError


@T.prim_func
def odd_count(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64,), "float32")
    T.device_entry()
    tid = T.thread_id([64])
    T.ptx.bar.sync(0, 48)
    A[tid] = 1.0


def test_a_barrier_count_that_is_not_whole_warps_is_a_compile_error_at_the_line():
    with pytest.raises(CompileError, match=r"operand 'count' is 48: it must be a multiple of "
                       r"32") as e:
        tw.compile(odd_count, "sm_90a").cubin  # noqa: B018
    assert "test_operand_steps.py" in str(e.value) and "T.ptx.bar.sync(0, 48)" in str(e.value)
