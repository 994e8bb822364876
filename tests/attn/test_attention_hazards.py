"""The mistakes a user makes writing a FlashAttention-style pipeline, reported by the
simulator at the user's line: reading or rewriting P (the A operand of the P V wgmma)
before the wgmma has been waited on, releasing a K/V stage (arriving on its 'empty'
mbarrier) before the wgmma that reads it is retired, and a ping-pong named barrier whose
count does not match the threads that use it.

The kernels are a small pipeline of the example's shape: a producer warp streams V blocks
by TMA into a one-stage ring, a consumer warpgroup multiplies P (registers) by each."""

import numpy as np
import pytest

import tilewise as tw
from tilewise import from_source
from tilewise.errors import HazardError
from tilewise.layout import swizzled_tile, wgmma_a_fragment, wgmma_accumulator

PIPELINE = '''
@T.prim_func
def k(P_ptr: T.handle, V_ptr: T.handle, O_ptr: T.handle):
    Pg = T.match_buffer(P_ptr, (64, 64), "bfloat16")
    V = T.match_buffer(V_ptr, (192, 64), "bfloat16")
    O = T.match_buffer(O_ptr, (64, 64), "float32")
    T.device_entry()
    tid = T.thread_id([160])
    Vs = T.alloc_buffer((1, 64, 64), "bfloat16", scope="shared.dyn", layout=VL, align=1024)
    full = T.alloc_shared((1,), "uint64")
    empty = T.alloc_shared((1,), "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(full[0]), 1)
        T.ptx.mbarrier.init(T.address_of(empty[0]), 1)
    T.cuda.cta_sync()
    if tid >= 128:
        if tid == 128:
            for j in range(3):
                T.ptx.mbarrier.try_wait(T.address_of(empty[0]), (j + 1) % 2)
                T.ptx.mbarrier.arrive.expect_tx(T.address_of(full[0]), 8192)
                Tx.thread.copy_async(Vs[0, :, :], V[j * 64:j * 64 + 64, :], dispatch="tma",
                                     mbar=T.address_of(full[0]))
    else:
        p = T.alloc_local((64, 64), "bfloat16", layout=FRAG)
        acc = T.alloc_local((64, 64), "float32", layout=ACC)
        Tx.wg.copy(p[:, :], Pg[:, :])
        Tx.wg.zero(acc[:, :])
        for j in range(3):
            T.ptx.mbarrier.try_wait(T.address_of(full[0]), j % 2)
            T.ptx.wgmma.fence()
            Tx.wg.gemm_async(acc[:, :], p[:, :], Vs[0, :, :], accum=True)
            T.ptx.wgmma.commit_group()
{consume}
        Tx.wg.copy(O[:, :], acc[:, :])
'''

GOOD = ["T.ptx.wgmma.wait_group(0)", "if tid == 0:",
        "    T.ptx.mbarrier.arrive(T.address_of(empty[0]))"]


def _pipeline(consume):
    body = "".join(" " * 12 + ln + "\n" for ln in consume)
    src = PIPELINE.replace("{consume}\n", body)
    env = {"VL": swizzled_tile(64, 64, 16, 128, stages=1), "FRAG": wgmma_a_fragment(64),
           "ACC": wgmma_accumulator(64)}
    return from_source(src, env=env, filename="pipe.py"), src


def _data():
    import ml_dtypes

    rng = np.random.default_rng(0)
    p = rng.standard_normal((64, 64)).astype(ml_dtypes.bfloat16)
    v = rng.standard_normal((192, 64)).astype(ml_dtypes.bfloat16)
    return p, v, np.full((64, 64), np.nan, np.float32)


def _line(src):
    return next(i for i, ln in enumerate(src.splitlines(), 1) if "# BUG" in ln)


def test_the_correct_pipeline_runs_clean():
    func, _ = _pipeline(GOOD)
    p, v, o = _data()
    assert tw.simulate(func, p, v, o).ok
    vf = v.astype(np.float64).reshape(3, 64, 64).sum(0)
    assert np.abs(o - p.astype(np.float64) @ vf).max() < 1e-3


@pytest.mark.parametrize("consume,message", [
    (["Tx.wg.copy(Pg[:, :], p[:, :])  # BUG", *GOOD],
     "reads the A operand registers of a wgmma.mma_async"),
    (["Tx.wg.copy(p[:, :], Pg[:, :])  # BUG", *GOOD],
     "writes the A operand registers of a wgmma.mma_async"),
], ids=["read-p-before-wait", "next-p-before-wait"])
def test_p_is_the_wgmmas_until_it_is_waited_on(consume, message):
    func, src = _pipeline(consume)
    with pytest.raises(HazardError, match=message) as e:
        tw.simulate(func, *_data())
    assert e.value.span.line == _line(src), str(e.value)
    assert "before a wgmma.wait_group retires it" in str(e.value)


def test_releasing_a_stage_before_its_wgmma_is_retired_is_reported_at_the_arrive():
    func, src = _pipeline(["if tid == 0:",
                           "    T.ptx.mbarrier.arrive(T.address_of(empty[0]))  # BUG",
                           "T.ptx.wgmma.wait_group(0)"])
    with pytest.raises(HazardError, match=r"releases shared memory that a wgmma.mma_async "
                       r"\(issued at pipe.py:\d+:\d+\) still reads: this mbarrier arrive comes "
                       r"before the wgmma.wait_group") as e:
        tw.simulate(func, *_data())
    assert e.value.span.line == _line(src), str(e.value)
    assert "only after T.ptx.wgmma.wait_group(N)" in e.value.hint


PINGPONG = '''
@T.prim_func
def k(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (256,), "float32")
    T.device_entry()
    tid = T.thread_id([256])
    cw = tid // 128
    if cw == 1:
        T.ptx.bar.arrive(1, 256)
    for j in range(2):
        for slot in T.static_range(2):
            if cw == slot:
                T.ptx.bar.sync(1 + slot, {count})  # BUG
                A[tid] = A[tid] + 1.0
                T.ptx.bar.arrive(2 - slot, 256)
'''


@pytest.mark.parametrize("count", [128, 96])
def test_a_ping_pong_barrier_count_that_is_not_both_warpgroups(count):
    """Warpgroup 0 waits with the count of one warpgroup where warpgroup 1 arrived for two:
    the barrier's phase mixes two counts."""
    message = f"bar.sync 1 with count {count} while threads already waiting there expect 256"
    src = PINGPONG.replace("{count}", str(count))
    func = from_source(src, filename="pp.py")
    with pytest.raises(HazardError, match=message) as e:
        tw.simulate(func, np.zeros(256, np.float32))
    assert e.value.span.line == _line(src), str(e.value)


def test_the_ping_pong_with_the_right_counts_alternates_the_warpgroups():
    func = from_source(PINGPONG.replace("{count}", "256"), filename="pp.py")
    a = np.zeros(256, np.float32)
    assert tw.simulate(func, a).ok
    assert (a == 2).all()
