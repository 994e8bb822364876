"""The seed's copy_async -> tcgen05_ldst demonstration (tirx-copy_async-tcgen05_ldst.rst),
with only its imports changed and the parts the seed elides ("load A into A_reg, zero B_reg",
"write B_reg out; tcgen05.dealloc") written out: a warpgroup round-trips a 128xWIDTH float16
tile registers -> tensor memory -> registers."""

import numpy as np

from tilewise import T, Tx
from tilewise.layout import S, TCol, TileLayout, TLane
from tilewise.layout import tid_in_wg as axis_tid_in_wg

WIDTH = 8
local_view = TileLayout(S[(128, WIDTH) : (1 @ axis_tid_in_wg, 1)])


@T.prim_func
def copy_async_test(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128, WIDTH), "float16")
    B = T.match_buffer(B_ptr, (128, WIDTH), "float16")
    T.device_entry()
    warp_id = T.warp_id([4])
    wg_id = T.warpgroup_id([1])
    tid = T.thread_id([128])
    tmem_addr = T.alloc_shared([1], "uint32")
    if wg_id == 0:
        if warp_id == 0:
            T.ptx.tcgen05.alloc(T.address_of(tmem_addr), n_cols=32, cta_group=1)
        T.tvm_storage_sync("shared")
        tmem = T.decl_buffer((128, WIDTH), "float16", scope="tmem", allocated_addr=tmem_addr[0],
                             layout=TileLayout(S[(128, WIDTH) : (1 @ TLane, 1 @ TCol)]))
        A_reg = T.alloc_local((WIDTH,), "float16")
        B_reg = T.alloc_local((WIDTH,), "float16")
        A_local = A_reg.view(128, WIDTH, layout=local_view)
        B_local = B_reg.view(128, WIDTH, layout=local_view)
        for i in range(WIDTH):
            A_reg[i] = A[tid, i]
            B_reg[i] = T.float16(0)
        T.cuda.cta_sync()
        Tx.wg.copy_async(tmem[:, :], A_local[:, :])  # store (local -> tmem)
        T.ptx.tcgen05.wait.st()
        T.cuda.cta_sync()
        Tx.wg.copy_async(B_local[:, :], tmem[:, :])  # load  (tmem -> local)
        T.ptx.tcgen05.wait.ld()
        for i in range(WIDTH):
            B[tid, i] = B_reg[i]
        T.cuda.cta_sync()
        if warp_id == 0:
            T.ptx.tcgen05.relinquish_alloc_permit(cta_group=1)
            T.ptx.tcgen05.dealloc(tmem_addr[0], n_cols=32, cta_group=1)


TARGET = "sm_100a"


def inputs(rng):
    a = rng.standard_normal((128, WIDTH)).astype(np.float16)
    b = np.full((128, WIDTH), np.nan, dtype=np.float16)
    return [a, b]


def reference(a, b):
    return [a, a.copy()]
