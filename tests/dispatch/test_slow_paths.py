"""No silent slow path (issue 19): a tile call whose only variant is a scalar loop on one
thread (or every thread repeating one fold) raises a TilewisePerformanceWarning at the
user's line from tw.compile and tw.simulate; the fast paths raise none."""

import warnings

import numpy as np
import pytest

import tilewise as tw
from exload import load_example
from tilewise import T, Tx


@T.prim_func
def shared_row_max(X_ptr: T.handle, M_ptr: T.handle):
    X = T.match_buffer(X_ptr, (1, 3000), "float32")
    M = T.match_buffer(M_ptr, (1, 1), "float32")
    T.device_entry()
    tid = T.thread_id([128])  # noqa: F841
    S_ = T.alloc_shared((1, 3000), "float32")
    Tx.cta.copy(S_, X)
    T.cuda.cta_sync()
    Tx.cta.max(M, S_, axes=-1)  # one thread folds 3000 elements, 127 wait


def _slow(run):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        run()
    return [w for w in rec if issubclass(w.category, tw.TilewisePerformanceWarning)]


def test_a_reduction_folded_by_one_thread_warns_at_its_line():
    x = np.random.default_rng(0).standard_normal((1, 3000)).astype(np.float32)
    m = np.full((1, 1), np.nan, np.float32)
    for run in (lambda: tw.compile(shared_row_max, "sm_90a"),
                lambda: tw.simulate(shared_row_max, x, m)):
        (w,) = _slow(run)
        assert w.filename == __file__
        assert "Tx.cta.max(M" in str(w.message) and "1 of the 128 threads fold 3000" in \
            str(w.message) and "register tile" in str(w.message)
    assert m[0, 0] == x.max()


@pytest.mark.parametrize("name,args", [("softmax", (3, 3000, "float16")),
                                       ("rmsnorm", (1, 50257, "bfloat16")),
                                       ("softmax", (100, 1000, "float32"))])
def test_the_row_kernels_take_no_slow_path(name, args):
    ex = load_example(name)
    assert _slow(lambda: tw.compile(getattr(ex, f"make_{name}")(*args), "sm_90a")) == []
