"""Issue 23: a ``.view()`` of an ``align=1024`` shared buffer (a byte buffer viewed as a
swizzled tile, a view of a view) keeps its root's alignment, so wgmma takes it with the
128-byte swizzle instead of declining it as possibly unaligned."""

from tilewise import T, Tx
from tilewise.layout import swizzled_tile, wgmma_accumulator
from tilewise.pipeline import lower

TILE = swizzled_tile(64, 64, 16, 128)


@T.prim_func
def viewed(C_ptr: T.handle):
    C = T.match_buffer(C_ptr, (64, 64), "float32")
    T.device_entry()
    T.thread_id([128])
    raw = T.alloc_shared((2 * 64 * 64 * 2,), "uint8", align=1024)
    As = raw.view(64, 64, dtype="float16", layout=TILE)
    big = T.alloc_shared((2, 64, 64), "float16", layout=swizzled_tile(64, 64, 16, 128, stages=2),
                         align=1024)
    flat = big.view(2 * 64 * 64)
    Bs = flat.view(64, 64, layout=TILE)
    acc = T.alloc_local((64, 64), "float32", layout=wgmma_accumulator(64))
    T.ptx.wgmma.fence()
    Tx.wg.gemm_async(acc[:, :], As[:, :], Bs[:, :])
    T.ptx.wgmma.commit_group()
    T.ptx.wgmma.wait_group(0)
    Tx.wg.copy(C[:, :], acc[:, :])


def test_views_of_an_aligned_buffer_keep_the_alignment_wgmma_needs():
    log = [d for d in lower(viewed, "sm_90a").dispatch_log if d.chosen == "wgmma"]
    assert len(log) == 1 and "swizzle 128" in log[0].info[0]


@T.prim_func
def fenced(C_ptr: T.handle):
    C = T.match_buffer(C_ptr, (64, 64), "float32")
    T.device_entry()
    tid = T.thread_id([128])
    As = T.alloc_shared((64, 64), "float16", layout=TILE, align=1024)
    Bs = T.alloc_shared((64, 64), "float16", layout=TILE, align=1024)
    for i in range(32):  # A = 1, B = 1: every entry of A @ B is 64
        As[tid // 2, (tid % 2) * 32 + i] = T.float16(1)
        Bs[tid // 2, (tid % 2) * 32 + i] = T.float16(1)
    T.ptx.fence.proxy_async()
    T.cuda.cta_sync()
    accr = T.alloc_local((32,), "float32")
    acc = accr.view(64, 64, layout=wgmma_accumulator(64))
    T.ptx.wgmma.fence()
    Tx.wg.gemm_async(acc[:, :], As[:, :], Bs[:, :])
    T.ptx.wgmma.commit_group()
    T.ptx.wgmma.wait_group(0)
    T.ptx.wgmma.fence_operand(4, accr[0], accr[1], accr[2], accr[3])
    Tx.wg.copy(C[:, :], acc[:, :])


def test_fence_operand_keeps_the_registers_and_emits_no_instruction():
    """T.ptx.wgmma.fence_operand (a row of the PTX table): in the simulator the registers
    keep their values; in PTX it is an empty inline asm, no instruction."""
    import numpy as np

    import tilewise as tw

    c = np.full((64, 64), np.nan, np.float32)
    assert tw.simulate(fenced, c).ok
    assert (c == 64).all()
    ptx = tw.compile(fenced, "sm_90a").source("ptx")
    body = ptx[ptx.index("wgmma.wait_group.sync.aligned"):]
    empty = "// begin inline asm\n\t// end inline asm"
    assert empty in body.replace("\t// begin", "// begin")
