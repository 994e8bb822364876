"""tcgen05 tensor memory: ld/st round trips for every shape, num and packing, with the
cells the ptx-semantics.md §3 formulas predict (written again here, independently), and
the allocation / lane-slice rules of §1-§2."""

import numpy as np
import pytest

import tilewise as tw
from tilewise import T
from simhelpers import line_of, poison, rand

REGS = {"32x32b": 1, "16x64b": 1, "16x32bx2": 1, "16x128b": 2, "16x256b": 4}
MAX_NUM = {"16x128b": 64, "16x256b": 32}
NUMS = (1, 2, 4, 8, 16, 32, 64, 128)
# each shape and packing at its smallest and largest num always, the nums between sampled
CASES = [pytest.param(s, n, p, marks=() if n in (1, MAX_NUM.get(s, 128)) else pytest.mark.slow)
         for s in REGS for n in NUMS if n <= MAX_NUM.get(s, 128) for p in (False, True)]


def expected_cell(shape, num, packed, t, r):
    """(lane offset, column) of register r of lane t: a plain transcription of the
    per-shape tables, one shape at a time."""
    if shape == "32x32b":
        lane, col = t, r
    elif shape == "16x64b":
        lane, col = t // 4 + (8 if t % 2 else 0), 2 * r + (t // 2) % 2
    elif shape == "16x128b":
        lane, col = t // 4 + (8 if r % 2 else 0), 4 * (r // 2) + t % 4
    elif shape == "16x256b":
        lane, col = t // 4 + (8 if (r // 2) % 2 else 0), 8 * (r // 4) + 2 * (t % 4) + r % 2
    else:
        lane, col = t % 16, r
    split = (2 * num if packed else num) if shape == "16x32bx2" and t >= 16 else 0
    return lane, split + (2 * col if packed else col)


def roundtrip_kernel(shape, num, packed):
    nr = REGS[shape] * num

    @T.prim_func
    def roundtrip(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, (128 * nr,), "uint32")
        B = T.match_buffer(B_ptr, (128 * nr,), "uint32")
        C = T.match_buffer(C_ptr, (128 * 512,), "uint32")
        T.device_entry()
        warp = T.warp_id([4])
        tid = T.thread_id([128])
        addr = T.alloc_shared((1,), "uint32")
        R = T.alloc_local((nr,), "uint32")
        D = T.alloc_local((32,), "uint32")
        if warp == 0:
            T.ptx.tcgen05.alloc(T.address_of(addr[0]), 512)
        T.cuda.cta_sync()
        base = addr[0] + T.cast(warp * 32 * 65536, "uint32")
        for i in range(nr):
            R[i] = A[tid * nr + i]
        T.ptx.tcgen05.st(base, 0, 0, shape, num, packed, *[R[i] for i in range(nr)])
        T.ptx.tcgen05.wait.st()
        for i in range(nr):
            R[i] = T.uint32(0)
        T.ptx.tcgen05.ld(base, 0, 0, shape, num, packed, *[R[i] for i in range(nr)])
        T.ptx.tcgen05.wait.ld()
        for i in range(nr):
            B[tid * nr + i] = R[i]
        for j in range(16):  # dump the warp's 32 lanes x 512 columns
            T.ptx.tcgen05.ld(base + T.cast(j * 32, "uint32"), 0, 0, "32x32b", 32, False,
                             *[D[i] for i in range(32)])
            T.ptx.tcgen05.wait.ld()
            for i in range(32):
                C[tid * 512 + j * 32 + i] = D[i]
        T.cuda.cta_sync()
        if warp == 0:
            T.ptx.tcgen05.dealloc(addr[0], 512)

    return roundtrip


@pytest.mark.parametrize("shape,num,packed", CASES)
def test_ld_st_roundtrip_and_cells(shape, num, packed):
    nr = REGS[shape] * num
    a = rand((128, nr), np.uint32, seed=num)
    b, c = poison((128, nr), np.uint32), poison((128, 512), np.uint32)
    tw.simulate(roundtrip_kernel(shape, num, packed), a.reshape(-1), b.reshape(-1),
                c.reshape(-1), target="sm_100a")  # 1-D buffers: views of the 2-D arrays
    np.testing.assert_array_equal(b, a)  # ld.pack reassembles the halves unpack wrote
    for tid in range(128):
        w, t = divmod(tid, 32)
        for r in range(nr):
            lane, col = expected_cell(shape, num, packed, t, r)
            got = c[32 * w + lane]
            if packed:
                assert got[col] == a[tid, r] & 0xFFFF and got[col + 1] == a[tid, r] >> 16
            else:
                assert got[col] == a[tid, r], (tid, r, lane, col)


def test_seed_tcgen05_roundtrip():
    import runpy

    from tilewise.pipeline import lower

    seed = runpy.run_path("examples/tcgen05_roundtrip.py")
    a, b = seed["inputs"](np.random.default_rng(1))
    lowered = lower(seed["copy_async_test"], seed["TARGET"])
    tw.simulate(lowered, a, b, target=seed["TARGET"])
    np.testing.assert_array_equal(b.view(np.uint16), a.view(np.uint16))


def test_simulate_lowered_runs_for_the_target_it_was_lowered_for():
    """``simulate(lowered)`` reads ``lowered.target`` (sm_100a here): it used to run for
    the default sm_90a and refuse the tcgen05 instructions."""
    import runpy

    from tilewise.pipeline import lower

    seed = runpy.run_path("examples/tcgen05_roundtrip.py")
    a, b = seed["inputs"](np.random.default_rng(2))
    lowered = lower(seed["copy_async_test"], "sm_100a")
    tw.simulate(lowered, a, b)
    np.testing.assert_array_equal(b.view(np.uint16), a.view(np.uint16))
    with pytest.raises(tw.SimulationError, match="lowered for sm_100a and target='sm_90a'"):
        tw.simulate(lowered, a, b, target="sm_90a")


# ------------------------------------------------------------------ planted bugs
def caught(kernel, marker, *patterns):
    with pytest.raises(tw.HazardError) as info:
        tw.simulate(kernel, rand(4096, np.uint32), poison(4096, np.uint32), target="sm_100a")
    err = info.value
    assert err.span is not None and err.span.line == line_of(__file__, marker), str(err)
    for p in patterns:
        assert p in str(err), str(err)


@T.prim_func
def wrong_warp(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (4096,), "uint32")
    B = T.match_buffer(B_ptr, (4096,), "uint32")
    T.device_entry()
    warp = T.warp_id([4])
    tid = T.thread_id([128])
    addr = T.alloc_shared((1,), "uint32")
    R = T.alloc_local((1,), "uint32")
    if warp == 0:
        T.ptx.tcgen05.alloc(T.address_of(addr[0]), 32)
    T.cuda.cta_sync()
    R[0] = A[tid]
    T.ptx.tcgen05.st(addr[0], 0, 0, "32x32b", 1, False, R[0])  # BUG: lane base 0 for all
    T.cuda.cta_sync()
    if warp == 0:
        T.ptx.tcgen05.dealloc(addr[0], 32)


def test_wrong_warp_on_tensor_memory_lanes():
    caught(wrong_warp, "# BUG: lane base 0", "warp 1 (warp 1 of its warpgroup) may access "
           "tensor-memory lanes [32, 64) only", "warp 1, lane 0")


@T.prim_func
def leak(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (4096,), "uint32")
    B = T.match_buffer(B_ptr, (4096,), "uint32")
    T.device_entry()
    warp = T.warp_id([4])
    addr = T.alloc_shared((1,), "uint32")
    if warp == 0:
        T.ptx.tcgen05.alloc(T.address_of(addr[0]), 64)  # BUG: never freed


def test_tensor_memory_leak():
    caught(leak, "# BUG: never freed", "tensor memory leak: 64 columns")


@T.prim_func
def double_free(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (4096,), "uint32")
    B = T.match_buffer(B_ptr, (4096,), "uint32")
    T.device_entry()
    warp = T.warp_id([4])
    addr = T.alloc_shared((1,), "uint32")
    if warp == 0:
        T.ptx.tcgen05.alloc(T.address_of(addr[0]), 32)
        T.ptx.tcgen05.dealloc(addr[0], 32)
        T.ptx.tcgen05.dealloc(addr[0], 32)  # BUG: twice


def test_tensor_memory_freed_twice():
    caught(double_free, "# BUG: twice", "tensor memory freed twice")


@T.prim_func
def before_alloc(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (4096,), "uint32")
    B = T.match_buffer(B_ptr, (4096,), "uint32")
    T.device_entry()
    T.warp_id([1])
    R = T.alloc_local((1,), "uint32")
    T.ptx.tcgen05.ld(T.uint32(0), 0, 0, "32x32b", 1, False, R[0])  # BUG: no alloc


def test_tensor_memory_used_before_alloc():
    caught(before_alloc, "# BUG: no alloc", "not allocated")


@T.prim_func
def alloc_rules(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (4096,), "uint32")
    B = T.match_buffer(B_ptr, (4096,), "uint32")
    T.device_entry()
    T.warp_id([1])
    addr = T.alloc_shared((2,), "uint32")
    T.ptx.tcgen05.alloc(T.address_of(addr[0]), 32)
    T.ptx.tcgen05.alloc(T.address_of(addr[1]), 64)  # BUG: growing
    T.ptx.tcgen05.dealloc(addr[0], 32)


def test_allocation_sizes_must_not_grow():
    caught(alloc_rules, "# BUG: growing", "sizes must not increase")


@T.prim_func
def after_relinquish(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (4096,), "uint32")
    B = T.match_buffer(B_ptr, (4096,), "uint32")
    T.device_entry()
    T.warp_id([1])
    addr = T.alloc_shared((1,), "uint32")
    T.ptx.tcgen05.relinquish_alloc_permit()
    T.ptx.tcgen05.alloc(T.address_of(addr[0]), 32)  # BUG: relinquished


def test_alloc_after_relinquish():
    caught(after_relinquish, "# BUG: relinquished", "after tcgen05.relinquish_alloc_permit")


def test_keep_tmem_returns_the_cells_at_exit():
    import runpy

    seed = runpy.run_path("examples/tcgen05_roundtrip.py")
    a, b = seed["inputs"](np.random.default_rng(4))
    report = tw.simulate(seed["copy_async_test"], a, b, target="sm_100a", keep_tmem=True)
    cells = report.ctas[0].tmem
    # .32x32b, datapath D: row r -> lane r; two float16 per 32-bit cell, low half first
    want = a.view(np.uint16).astype(np.uint32)
    packed = want[:, 0::2] | (want[:, 1::2] << 16)
    np.testing.assert_array_equal(cells[:, :4], packed)
    assert tw.simulate(seed["copy_async_test"], a, b, target="sm_100a").ctas[0].tmem is None
