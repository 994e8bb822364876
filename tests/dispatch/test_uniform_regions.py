"""Locals uniform inside a static thread branch (tile/uniform.py): in a warp-specialised
kernel, a consumer's loop variable or counter has one value for every consumer thread, so
a condition on it does not split them and their warpgroup tile calls dispatch; values that
differ between threads still make the active set unknown."""

import pytest

from tilewise import from_source
from tilewise.errors import DispatchError
from tilewise.layout import wgmma_accumulator
from tilewise.pipeline import lower

HEAD = '''
@T.prim_func
def k(A_ptr: T.handle, N_ptr: T.handle):
    A = T.match_buffer(A_ptr, (256, 64), "float32")
    N = T.match_buffer(N_ptr, (256,), "int32")
    T.device_entry()
    tid = T.thread_id([256])
    wg = tid // 128
    acc = T.alloc_local((64, 64), "float32", layout=FRAG)
'''


def _lower(lines):
    src = HEAD + "".join("    " + ln + "\n" for ln in lines)
    return lower(from_source(src, env={"FRAG": wgmma_accumulator(64)}, filename="u.py"),
                 "sm_90a")


def _chosen(low):
    return [d.chosen for d in low.dispatch_log]


def test_a_consumer_loop_variable_does_not_split_the_consumers():
    low = _lower(["if wg == 1:", "    N[tid] = 0", "else:", "    n = 3",
                  "    for j in range(n):", "        if j > 0:",
                  "            Tx.wg.fill(acc[:, :], 1.0)", "        else:",
                  "            Tx.wg.fill(acc[:, :], 0.0)",
                  "    Tx.wg.copy(A[0:64, :], acc[:, :])"])
    assert _chosen(low) == ["reg", "reg", "reg"]


def test_a_loop_bound_computed_inside_the_branch_keeps_the_loop_whole():
    low = _lower(["if wg == 0:", "    for i in range(2):", "        m = i + 1",
                  "        for j in range(m):", "            Tx.wg.fill(acc[:, :], 1.0)",
                  "    Tx.wg.copy(A[0:64, :], acc[:, :])"])
    assert _chosen(low) == ["reg", "reg"]


@pytest.mark.parametrize("lines,why", [
    (["x = 0", "if wg == 0:", "    x = 1", "if x == 1:", "    Tx.wg.fill(acc[:, :], 1.0)"],
     "(condition 'x == 1')"),  # x differs between the warpgroups after the branch
    (["z = 0", "if N[tid] > 0:", "    z = 1", "if wg == 0:", "    if z == 1:",
      "        Tx.wg.fill(acc[:, :], 1.0)"], "(condition 'z == 1')"),  # not a static branch
])
def test_values_that_differ_between_threads_still_split_them(lines, why):
    with pytest.raises(DispatchError, match=r"active threads are unknown at compile time "
                       + why.replace("(", r"\(").replace(")", r"\)")):
        _lower(lines)
