"""copy_async -> tcgen05_cp: every tcgen05.cp shape and multicast, chosen from the
destination layout (its TLane replicas), simulated and compared with the lanes TIRx's
tcgen05.cp table and CUTLASS's UTCCP traits give (written out here), lowered to PTX and
assembled for sm_100a."""

import numpy as np
import pytest

import tilewise as tw
from tilewise import T, Tx
from tilewise.layout import R, S, TCol, TileLayout, TLane, swizzled_tile, tid_in_wg
from tilewise.pipeline import lower

TARGET = "sm_100a"


def make_cp(rows, width, dst_layout, src_layout, dtype="float32"):
    """Global -> shared (rows, width), then one thread's ``Tx.copy_async`` shared -> tensor
    memory and a commit; the warpgroup loads all 128 lanes x 32 columns back into B."""

    @T.prim_func
    def cp_tile(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (rows, width), dtype)
        B = T.match_buffer(B_ptr, (128, 32), "uint32")
        T.device_entry()
        warp_id = T.warp_id([4])
        tid = T.thread_id([128])
        As = T.alloc_shared((rows, width), dtype, layout=src_layout, align=1024)
        bar = T.alloc_shared([1], "uint64")
        tmem_addr = T.alloc_shared([1], "uint32")
        regs = T.alloc_local((32,), "uint32")
        rv = regs.view(128, 32, layout=TileLayout(S[(128, 32) : (1 @ tid_in_wg, 1)]))
        if warp_id == 0:
            T.ptx.tcgen05.alloc(T.address_of(tmem_addr), n_cols=32, cta_group=1)
        if tid == 0:
            T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
        Tx.cta.copy(As[:, :], A[:, :])
        T.ptx.fence.proxy_async()
        T.tvm_storage_sync("shared")
        T.ptx.tcgen05.fence.after_thread_sync()
        dst = T.decl_buffer((rows, width), dtype, scope="tmem", allocated_addr=tmem_addr[0],
                            layout=dst_layout)
        whole = T.decl_buffer((128, 32), "uint32", scope="tmem", allocated_addr=tmem_addr[0],
                              layout=TileLayout(S[(128, 32) : (1 @ TLane, 1 @ TCol)]))
        if tid == 0:
            Tx.copy_async(dst[:, :], As[:, :])
            T.ptx.tcgen05.commit(T.address_of(bar[0]))
        T.ptx.mbarrier.try_wait(T.address_of(bar[0]), 0)
        T.ptx.tcgen05.fence.after_thread_sync()
        Tx.wg.copy_async(rv[:, :], whole[:, :])
        T.ptx.tcgen05.wait.ld()
        Tx.wg.copy(B[:, :], rv[:, :])
        T.ptx.tcgen05.fence.before_thread_sync()
        T.cuda.cta_sync()
        if warp_id == 0:
            T.ptx.tcgen05.dealloc(tmem_addr[0], n_cols=32, cta_group=1)

    return cp_tile


def _d(rows, width):
    return TileLayout(S[(rows, width) : (1 @ TLane, 1 @ TCol)])


# (shape, rows, width (f32), destination layout, source swizzle, lanes of source row r)
CASES = [
    ("128x256b", 128, 8, _d(128, 8), 32, lambda r: [r]),
    ("128x128b", 128, 4, _d(128, 4), 0, lambda r: [r]),
    ("4x256b", 4, 8, TileLayout(S[(4, 8) : (32 @ TLane, 1 @ TCol)]), 0, lambda r: [32 * r]),
    ("64x128b.warpx2::02_13", 64, 4, _d(64, 4) + R[2 : 64 @ TLane], 0,
     lambda r: [r, r + 64]),
    ("64x128b.warpx2::01_23", 64, 4,
     TileLayout(S[(2, 32, 4) : (64 @ TLane, 1 @ TLane, 1 @ TCol)]) + R[2 : 32 @ TLane], 0,
     lambda r: [64 * (r // 32) + r % 32, 64 * (r // 32) + r % 32 + 32]),
    ("32x128b.warpx4", 32, 4, _d(32, 4) + R[4 : 32 @ TLane], 0,
     lambda r: [r, r + 32, r + 64, r + 96]),
]


@pytest.mark.parametrize("shape, rows, width, dst, swz, lanes", CASES, ids=[c[0] for c in CASES])
def test_tcgen05_cp_shape(shape, rows, width, dst, swz, lanes):
    func = make_cp(rows, width, dst, swizzled_tile(rows, width, 32, swz))
    (d,) = [x for x in lower(func, TARGET).dispatch_log if x.chosen == "tcgen05_cp"]
    assert d.info[0].startswith(f"1 x tcgen05.cp.{shape} (lanes +0, column 0")
    a = np.random.default_rng(rows + width).standard_normal((rows, width)).astype(np.float32)
    b = np.zeros((128, 32), np.uint32)
    tw.simulate(func, a, b, target=TARGET)
    want = np.full((128, 32), 0xA5A5A5A5, np.uint32)  # the simulator's tensor-memory fill
    for r in range(rows):
        for lane in lanes(r):
            want[lane, :width] = a[r].view(np.uint32)
    assert np.array_equal(b, want)
    ptx = tw.compile(func, TARGET).ptx
    assert f"tcgen05.cp.cta_group::1.{shape}" in ptx


def test_wide_copy_is_several_steps_at_increasing_columns():
    import ml_dtypes

    func = make_cp(128, 32, _d(128, 32), swizzled_tile(128, 32, 16, 64), "bfloat16")
    (d,) = [x for x in lower(func, TARGET).dispatch_log if x.chosen == "tcgen05_cp"]
    assert d.info == ["2 x tcgen05.cp.128x256b (lanes +0, column 0; source K-major, "
                      "swizzle 64)"]
    a = np.random.default_rng(9).standard_normal((128, 32)).astype(ml_dtypes.bfloat16)
    b = np.zeros((128, 32), np.uint32)
    tw.simulate(func, a, b, target=TARGET)
    assert np.array_equal(b[:, :16], a.view(np.uint32))


def test_tlane_replica_places():
    lay = _d(32, 4) + R[4 : 32 @ TLane]
    assert [p["TLane"] for p in lay.apply_all(5, 2, shape=(32, 4))] == [5, 37, 69, 101]
