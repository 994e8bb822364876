"""Register <-> memory copies (copy -> reg)."""

from tilewise import T, Tx
from tilewise.layout import S, TileLayout, tid_in_wg

reg_layout = TileLayout(S[(128, 8) : (1 @ tid_in_wg, 1)])


@T.prim_func
def reg_roundtrip(a_ptr: T.handle, b_ptr: T.handle):
    A = T.match_buffer(a_ptr, (128, 8), "float16")
    B = T.match_buffer(b_ptr, (128, 8), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    A_reg = T.alloc_local((8,), "float16")
    A_local = A_reg.view(128, 8, layout=reg_layout)
    Tx.wg.copy(A_local[:, :], A[:, :])
    Tx.wg.copy(B[:, :], A_local[:, :])
