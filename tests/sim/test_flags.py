"""Flags between the CTAs of a launch (``T.ptx.red.add`` / ``T.ptx.wait_flag``): a wait
that sees a lower-numbered CTA's adds orders that CTA's writes before the waiter's reads
(no race reported); the same read without the wait is a race; a wait for a later CTA is
reported (docs/simulator.md, "Flags between CTAs")."""

import numpy as np
import pytest

import tilewise as tw

from test_races import kernel, run

PRODUCE = ["if bx == 0:", "    B[tid] = A[tid] + 1"]
SIGNAL = ["    T.ptx.red.add(T.address_of(A[100]), T.uint32(1))"]
CONSUME = ["else:", "    B[64 + tid] = B[tid] * 2  # <-"]
WAIT = ["    T.ptx.wait_flag(T.address_of(A[100]), T.uint32(164))"]  # A[100] starts at 100


def test_a_wait_on_an_earlier_cta_orders_its_writes():
    k = kernel(*PRODUCE, *SIGNAL, *CONSUME[:1], *WAIT, *CONSUME[1:], threads=64, ctas=2)
    a, b, report = run(k)
    assert report.ok
    assert (b[:64] == np.arange(64) + 1).all() and (b[64:] == 2 * (np.arange(64) + 1)).all()
    assert a[100] == 164  # every thread's add landed


def test_the_same_read_without_the_wait_is_a_race():
    k = kernel(*PRODUCE, *SIGNAL, *CONSUME, threads=64, ctas=2)
    with pytest.raises(tw.HazardError, match="read-after-write race on global memory") as e:
        run(k)
    assert "T.ptx.wait_flag" in str(e.value)  # the hint names the way to order them


def test_a_flag_that_does_not_publish_the_write_is_a_race():
    # the add comes before the write: the wait sees it, but it does not order the write
    k = kernel("if bx == 0:", *SIGNAL, "    B[tid] = A[tid] + 1",
               *CONSUME[:1], *WAIT, *CONSUME[1:], threads=64, ctas=2)
    with pytest.raises(tw.HazardError, match="read-after-write race on global memory"):
        run(k)


def test_a_wait_for_a_later_cta_is_reported():
    k = kernel("if bx == 1:", *SIGNAL, "else:",
               "    T.ptx.wait_flag(T.address_of(A[100]), T.uint32(164))  # <-",
               threads=64, ctas=2)
    with pytest.raises(tw.HazardError, match="is 100: no CTA that ran before this one "
                       "added the rest") as e:
        run(k)
    assert "race_kernels.py" in str(e.value) and "lower-numbered CTAs" in str(e.value)


def test_a_flag_must_be_in_global_memory():
    with pytest.raises(tw.TilewiseError, match="must be an address in global memory; 'S' is "
                       "in shared memory") as e:
        kernel('S = T.alloc_shared((4,), "uint32")',
               "T.ptx.red.add(T.address_of(S[0]), T.uint32(1))", threads=32)
    assert "race_kernels.py:9" in str(e.value)
