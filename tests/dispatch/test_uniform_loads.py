"""A load from a global buffer the kernel never writes, at uniform indices, is uniform:
every thread of the CTA reads the same value (an expert's row count, a group's index), so
a loop bound or condition made of it does not split the CTA and the tile calls inside it
keep every thread. A buffer the kernel writes (a store, a tile call's region) is not."""

from tilewise import T, Tx
from tilewise.pipeline import lower


def make(written: bool):
    @T.prim_func
    def counted(X_ptr: T.handle, C_ptr: T.handle, Y_ptr: T.handle):
        X = T.match_buffer(X_ptr, (8, 128), "float32")
        C = T.match_buffer(C_ptr, (4,), "int32")
        Y = T.match_buffer(Y_ptr, (8, 128), "float32")
        T.device_entry()
        bx = T.cta_id([4])
        tid = T.thread_id([128])
        if written and tid == 0:
            C[bx] = 0
        total = 0
        for g in range(4):
            total = total + C[g]
        for r in range(total % 8):
            Tx.cta.copy(Y[r, :], X[r, :])

    return counted


def _copy(written):
    (d,) = [x for x in lower(make(written), "sm_90a").dispatch_log if "copy" in x.call]
    return d


def test_a_loop_bounded_by_read_only_loads_keeps_every_thread():
    assert _copy(False).chosen == "gmem_smem"  # needs all 128 threads active


def test_a_loop_bounded_by_a_buffer_the_kernel_writes_may_split_the_cta():
    d = _copy(True)
    assert d.chosen == "fallback"
    assert "may run with only some threads" in dict((n, r) for n, _, r in d.tried)["gmem_smem"]
