"""copy -> thread_regs: a per-thread register array (``T.alloc_local`` without thread axes)
<-> global / shared memory, each thread its own elements, vectorised where alignment
allows, at any scope where each thread names its own region."""

import numpy as np
import pytest

import tilewise as tw
from tilewise import from_source
from tilewise.pipeline import lower

HEAD = '''
@T.prim_func
def k(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128, 16), "DT")
    B = T.match_buffer(B_ptr, (128, 16), "DT")
    T.device_entry()
    tid = T.thread_id([128])
    row = T.alloc_local((16,), "DT")
'''


def kernel(*lines: str, dtype="float16"):
    return from_source(HEAD.replace("DT", dtype) + "".join(f"    {ln}\n" for ln in lines),
                       filename="tr.py")


def run(k, dtype=np.float16):
    a = np.random.default_rng(0).standard_normal((128, 16)).astype(dtype)
    b = np.zeros_like(a)
    assert tw.simulate(k, a, b).ok
    return a, b


@pytest.mark.parametrize("scope", ["thread", "warp", "wg", "cta"])
def test_each_thread_copies_its_own_row_at_any_scope(scope):
    k = kernel(f"Tx.{scope}.copy(row[:], A[tid, :])", f"Tx.{scope}.copy(B[tid, :], row[:])")
    a, b = run(k)
    assert (a == b).all()
    info = [d.info[0] for d in lower(k, "sm_90a").dispatch_log]
    assert info == ["16 element(s) per thread, vectors of 16 bytes"] * 2


def test_a_sub_region_of_the_array_and_odd_alignment_fall_back_to_narrower_moves():
    k = kernel("row[0] = A[tid, 0]", "Tx.thread.copy(row[1:8], A[tid, 1:8])",
               "Tx.thread.copy(B[tid, 0:8], row[0:8])")
    a, b = run(k)
    assert (b[:, :8] == a[:, :8]).all() and (b[:, 8:] == 0).all()
    info = [d.info[0] for d in lower(k, "sm_90a").dispatch_log]
    assert info == ["7 element(s) per thread, vectors of 2 bytes",
                    "8 element(s) per thread, vectors of 16 bytes"]


def test_a_copy_between_two_per_thread_arrays():
    k = kernel('t = T.alloc_local((4,), "float32")', 'u = T.alloc_local((8,), "float32")',
               "for i in range(4):", "    t[i] = A[tid, i]", "Tx.thread.copy(u[2:6], t[:])",
               "for i in range(4):", "    B[tid, i] = u[2 + i]", dtype="float32")
    a, b = run(k, np.float32)
    assert (b[:, :4] == a[:, :4]).all()


def test_a_store_of_one_region_by_every_thread_of_the_cta_is_declined():
    k = kernel("Tx.cta.copy(row[:], A[0, :])", "Tx.cta.copy(B[0, :], row[:])")
    with pytest.raises(tw.DispatchError, match="every thread of the cta would store its "
                       "registers to the same elements of 'B' \\(a race\\)"):
        lower(k, "sm_90a")


def test_registers_at_a_run_time_offset_are_declined_with_the_reason():
    k = kernel("j = tid % 2", "Tx.thread.copy(row[j:j + 8], A[tid, 0:8])")
    with pytest.raises(tw.DispatchError, match="the register region of 'row' starts at a "
                       "run-time offset"):
        lower(k, "sm_90a")


def test_the_registers_stay_registers_and_the_moves_are_vectors():
    ptx = tw.compile(kernel("Tx.thread.copy(row[:], A[tid, :])",
                            "Tx.thread.copy(B[tid, :], row[:])"), "sm_90a").source("ptx")
    assert ptx.count("ld.global.v4.b32") == 2 and ptx.count("st.global.v4.b32") == 2
    assert "local" not in ptx.split(".entry")[1]
