"""Planted bugs: one small kernel per mistake, each with the simulator's verdict and the
compute-sanitizer tool that documents the class. The simulator's column of the parity table
in docs/simulator.md comes from tests/sanitizer/test_planted.py; compute-sanitizer's from
``scripts/sanitizer-parity`` on the H200, which launches these same kernels.

Every kernel's faulty line is marked ``# BUG``. ``args`` describes the launch arguments:
``(elements, dtype, fill)`` with fill ``"arange"`` (0, 1, 2, ...), ``"zeros"`` or
``"empty"`` (never written: fresh device memory on the GPU, which initcheck watches).
"""

from __future__ import annotations

from dataclasses import dataclass

from tilewise import T, Tx
from tilewise.layout import swizzled_tile, wgmma_accumulator

TILE = swizzled_tile(64, 64, 16, 128)  # a 64 x 64 fp16 operand, 128-byte swizzle
ACC = wgmma_accumulator(64)


@dataclass(frozen=True)
class Planted:
    name: str
    what: str  # the bug, in words (a row of the table)
    kernel: object
    args: tuple  # ((elements, dtype, fill), ...)
    sim: tuple | None  # parts of the simulator's message; None: the simulator misses it
    tool: str  # the compute-sanitizer tool whose documentation covers the class
    target: str = "sm_90a"
    hangs: bool = False  # on the GPU the kernel never finishes (a deadlock)

    @property
    def shapes(self) -> list[tuple[int, ...]]:
        """The shape of each argument: its buffer's (both executors check it)."""
        return [tuple(int(n) for n in b.shape) for b in self.kernel.param_buffers()]

    @property
    def outputs(self) -> tuple:
        """The buffers a GPU run allocates fresh (fill ``empty``: uninitialised), which the
        simulator is told with ``simulate(..., outputs=)``."""
        names = [b.name for b in self.kernel.param_buffers()]
        return tuple(n for n, (_, _, fill) in zip(names, self.args) if fill == "empty")


N = 128
I32 = ((N, "int32", "arange"), (N, "int32", "zeros"))


@T.prim_func
def oob_global_write(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    B = T.match_buffer(B_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    B[tid + 1] = A[tid]  # BUG


@T.prim_func
def oob_shared_write(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    B = T.match_buffer(B_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((128,), "int32")
    S[tid * 4] = A[tid]  # BUG
    T.cuda.cta_sync()
    B[tid] = S[tid]


@T.prim_func
def misaligned_cp_async(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([64])
    S = T.alloc_shared((1024,), "float16")
    T.ptx.cp_async(T.address_of(S[tid * 8 + 2]), T.address_of(A[tid * 8]), 16)  # BUG
    T.ptx.cp_async.wait_all()


@T.prim_func
def shared_waw_one_statement(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    B = T.match_buffer(B_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1,), "int32")
    S[0] = A[tid]  # BUG
    T.cuda.cta_sync()
    B[tid] = S[0]


@T.prim_func
def shared_raw_no_barrier(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    B = T.match_buffer(B_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((128,), "int32")
    S[tid] = A[tid]
    B[tid] = S[127 - tid]  # BUG


@T.prim_func
def shared_war_no_barrier(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    B = T.match_buffer(B_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((128,), "int32")
    S[tid] = A[tid]
    T.cuda.cta_sync()
    x = S[(tid + 1) % 128]
    S[tid] = x * 2  # BUG
    T.cuda.cta_sync()
    B[tid] = S[tid]


@T.prim_func
def loop_missing_second_barrier(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (512,), "int32")
    B = T.match_buffer(B_ptr, (512,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((128,), "int32")
    for k in range(4):
        S[tid] = A[k * 128 + tid]  # BUG
        T.cuda.cta_sync()
        B[k * 128 + tid] = S[127 - tid]


@T.prim_func
def uninit_shared_read(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    B = T.match_buffer(B_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((128,), "int32")
    B[tid] = S[tid]  # BUG


@T.prim_func
def uninit_register(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    B = T.match_buffer(B_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    r = T.alloc_local((4,), "int32")
    r[0] = A[tid]
    B[tid] = r[0] + r[tid % 4]  # BUG


@T.prim_func
def uninit_global_read(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    B = T.match_buffer(B_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    B[tid] = B[tid] + A[tid]  # BUG


@T.prim_func
def global_waw_threads(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    B = T.match_buffer(B_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    B[0] = A[tid]  # BUG


@T.prim_func
def global_raw_threads(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    B = T.match_buffer(B_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    B[tid] = A[tid]
    A[tid] = B[(tid + 1) % 128]  # BUG


@T.prim_func
def global_cta_overlap(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (256,), "int32")
    B = T.match_buffer(B_ptr, (256,), "int32")
    T.device_entry()
    bx = T.cta_id([2])
    tid = T.thread_id([128])
    B[tid] = A[bx * 128 + tid]  # BUG


@T.prim_func
def global_neighbour_cta(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (256,), "int32")
    B = T.match_buffer(B_ptr, (256,), "int32")
    T.device_entry()
    bx = T.cta_id([2])
    tid = T.thread_id([128])
    if bx == 0:
        B[tid] = A[tid]
    if bx == 1:
        A[128 + tid] = B[tid]  # BUG


@T.prim_func
def divergent_barrier(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    B = T.match_buffer(B_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    if tid < 64:
        T.cuda.cta_sync()  # BUG
    B[tid] = A[tid]


@T.prim_func
def missing_cp_async_wait(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    T.ptx.cp_async(T.address_of(S[tid * 8]), T.address_of(A[tid * 8]), 16)
    T.ptx.cp_async.commit_group()
    T.cuda.cta_sync()
    B[tid] = S[tid]  # BUG
    T.ptx.cp_async.wait_group(0)


@T.prim_func
def missing_commit_group(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    T.ptx.cp_async(T.address_of(S[tid * 8]), T.address_of(A[tid * 8]), 16)
    T.ptx.cp_async.wait_group(0)
    B[tid * 8] = S[tid * 8]  # BUG
    T.ptx.cp_async.wait_all()


@T.prim_func
def mbarrier_count_overflow(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    B = T.match_buffer(B_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    bar = T.alloc_shared((1,), "uint64")
    if tid == 0:
        # a count known only at run time (a constant is refused when compiling)
        T.ptx.mbarrier.init(T.address_of(bar[0]), (1 << 20) + A[0])  # BUG
    T.cuda.cta_sync()
    B[tid] = A[tid]


@T.prim_func
def mbarrier_tx_overflow(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    B = T.match_buffer(B_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    bar = T.alloc_shared((1,), "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.mbarrier.arrive_expect_tx(T.address_of(bar[0]), (1 << 20) + A[0])  # BUG
    B[tid] = A[tid]


@T.prim_func
def mbarrier_never_completes(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    B = T.match_buffer(B_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    bar = T.alloc_shared((1,), "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 128)
    T.cuda.cta_sync()
    if tid < 64:
        T.ptx.mbarrier.arrive(T.address_of(bar[0]))
    T.ptx.mbarrier.try_wait(T.address_of(bar[0]), 0)  # BUG
    B[tid] = A[tid]


@T.prim_func
def mbarrier_uninitialised(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    B = T.match_buffer(B_ptr, (128,), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    bar = T.alloc_shared((1,), "uint64")
    if tid == 0:
        bar[0] = T.uint64(0)
    T.cuda.cta_sync()
    T.ptx.mbarrier.arrive(T.address_of(bar[0]))  # BUG
    B[tid] = A[tid]


@T.prim_func
def missing_fence_proxy_async(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    for i in range(8):
        S[i * 128 + tid] = A[i * 128 + tid]
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.cp_async.bulk.s2g(T.address_of(B[0]), T.address_of(S[0]), 2048)  # BUG
        T.ptx.cp_async.bulk.commit_group()
        T.ptx.cp_async.bulk.wait_group(0)


@T.prim_func
def bulk_read_before_wait(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1024,), "float16")
    B = T.match_buffer(B_ptr, (1024,), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((1024,), "float16")
    bar = T.alloc_shared((1,), "uint64")
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    T.cuda.cta_sync()
    if tid == 0:
        T.ptx.mbarrier.arrive_expect_tx(T.address_of(bar[0]), 2048)
        T.ptx.cp_async.bulk.g2s(T.address_of(S[0]), T.address_of(A[0]), 2048,
                                T.address_of(bar[0]))
    B[tid] = S[tid]  # BUG
    T.ptx.mbarrier.try_wait(T.address_of(bar[0]), 0)


@T.prim_func
def missing_fence_before_wgmma(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64, 64), "float16")
    B = T.match_buffer(B_ptr, (64, 64), "float16")
    C = T.match_buffer(C_ptr, (64, 64), "float32")
    T.device_entry()
    T.thread_id([128])
    As = T.alloc_shared((64, 64), "float16", layout=TILE, align=1024)
    Bs = T.alloc_shared((64, 64), "float16", layout=TILE, align=1024)
    acc = T.alloc_local((64, 64), "float32", layout=ACC)
    Tx.cta.copy(As[:, :], A[:, :])
    Tx.cta.copy(Bs[:, :], B[:, :])
    T.cuda.cta_sync()
    T.ptx.wgmma.fence()
    Tx.wg.gemm_async(acc[:, :], As[:, :], Bs[:, :])  # BUG
    T.ptx.wgmma.commit_group()
    T.ptx.wgmma.wait_group(0)
    Tx.wg.copy(C[:, :], acc[:, :])


@T.prim_func
def wgmma_without_wgmma_fence(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64, 64), "float16")
    B = T.match_buffer(B_ptr, (64, 64), "float16")
    C = T.match_buffer(C_ptr, (64, 64), "float32")
    T.device_entry()
    T.thread_id([128])
    As = T.alloc_shared((64, 64), "float16", layout=TILE, align=1024)
    Bs = T.alloc_shared((64, 64), "float16", layout=TILE, align=1024)
    acc = T.alloc_local((64, 64), "float32", layout=ACC)
    Tx.cta.copy(As[:, :], A[:, :])
    Tx.cta.copy(Bs[:, :], B[:, :])
    T.ptx.fence.proxy_async()
    T.cuda.cta_sync()
    Tx.wg.zero(acc[:, :])
    Tx.wg.gemm_async(acc[:, :], As[:, :], Bs[:, :], accum=True)  # BUG
    T.ptx.wgmma.commit_group()
    T.ptx.wgmma.wait_group(0)
    Tx.wg.copy(C[:, :], acc[:, :])


H16 = ((1024, "float16", "arange"), (1024, "float16", "zeros"))
WG = ((4096, "float16", "arange"), (4096, "float16", "arange"), (4096, "float32", "zeros"))

PLANTED = [
    Planted("oob_global_write", "global store one element past the end",
            oob_global_write, I32, ("out-of-bounds access: B[128]",), "memcheck"),
    Planted("oob_shared_write", "shared store past the buffer (and the CTA's shared memory)",
            oob_shared_write, I32, ("out-of-bounds access: S[128]",), "memcheck"),
    Planted("misaligned_cp_async", "cp.async to a misaligned shared address",
            misaligned_cp_async, H16, ("cp.async destination: misaligned address",),
            "memcheck"),
    Planted("shared_waw_one_statement", "two threads write one shared word (one statement)",
            shared_waw_one_statement, I32,
            ("write-write race on shared memory", "in the same statement"), "racecheck"),
    Planted("shared_raw_no_barrier", "shared read of another thread's write, no barrier",
            shared_raw_no_barrier, I32, ("reads shared memory written by thread",),
            "racecheck"),
    Planted("shared_war_no_barrier", "shared write over another thread's pending read",
            shared_war_no_barrier, I32, ("write-after-read race on shared memory",),
            "racecheck"),
    Planted("loop_missing_second_barrier", "buffer refilled in a loop with no second barrier",
            loop_missing_second_barrier, ((512, "int32", "arange"), (512, "int32", "zeros")),
            ("write-after-read race on shared memory",), "racecheck"),
    Planted("uninit_shared_read", "read of shared memory nothing wrote", uninit_shared_read,
            I32, ("reads shared memory that nothing has written",), "initcheck"),
    Planted("uninit_register", "read of a register (local buffer) never written",
            uninit_register, I32, ("an uninitialised register",), "initcheck"),
    Planted("uninit_global_read", "read of global memory nothing wrote (fresh allocation)",
            uninit_global_read, ((N, "int32", "arange"), (N, "int32", "empty")),
            ("reads global memory of 'B' that nothing has written in this launch",),
            "initcheck"),
    Planted("global_waw_threads", "every thread writes one global word", global_waw_threads,
            I32, ("write-write race on global memory", "in the same statement"), "racecheck"),
    Planted("global_raw_threads", "global read of another thread's write, no barrier",
            global_raw_threads, I32, ("read-after-write race on global memory",
                                      "with no bar.sync in between"), "racecheck"),
    Planted("global_cta_overlap", "two CTAs write the same output (index misses the CTA)",
            global_cta_overlap, ((256, "int32", "arange"), (256, "int32", "zeros")),
            ("write-write race on global memory", "CTA (0, 0, 0)"), "racecheck"),
    Planted("global_neighbour_cta", "a CTA reads what another CTA of the launch writes",
            global_neighbour_cta, ((256, "int32", "arange"), (256, "int32", "zeros")),
            ("read-after-write race on global memory", "in the same launch"), "racecheck"),
    Planted("divergent_barrier", "bar.sync in a branch half the CTA takes", divergent_barrier,
            I32, ("bar.sync (T.cuda.cta_sync) reached by 64 of 128 threads",), "synccheck"),
    Planted("missing_cp_async_wait", "read of cp.async data before wait_group",
            missing_cp_async_wait, H16, ("read before the cp.async completed",
                                         "missing cp.async.wait_group"), "racecheck"),
    Planted("missing_commit_group", "wait_group without commit_group (copy never waited)",
            missing_commit_group, H16, ("missing cp.async.commit_group",), "racecheck"),
    Planted("mbarrier_count_overflow", "mbarrier.init with a count over 2^20 - 1",
            mbarrier_count_overflow, I32, ("mbarrier.init count 1048576 is outside",),
            "synccheck"),
    Planted("mbarrier_tx_overflow", "mbarrier transaction count over 2^20 - 1 bytes",
            mbarrier_tx_overflow, I32, ("mbarrier transaction count 1048576 is outside",),
            "synccheck"),
    Planted("mbarrier_never_completes", "mbarrier wait on a phase that never completes",
            mbarrier_never_completes, I32, ("mbarrier wait can never complete (deadlock)",),
            "synccheck", hangs=True),
    Planted("mbarrier_uninitialised", "mbarrier used without mbarrier.init",
            mbarrier_uninitialised, I32, ("on an mbarrier that was never initialised",),
            "synccheck"),
    Planted("missing_fence_proxy_async", "bulk store of shared data written without "
            "fence.proxy.async", missing_fence_proxy_async, H16,
            ("and no fence.proxy.async since",), "racecheck"),
    Planted("bulk_read_before_wait", "read of a bulk copy's bytes before its mbarrier wait",
            bulk_read_before_wait, H16, ("read before the bulk copy's mbarrier completed",),
            "racecheck"),
    Planted("missing_fence_before_wgmma", "wgmma operand written by ordinary stores, no "
            "fence.proxy.async", missing_fence_before_wgmma, WG,
            ("wgmma.mma_async reads shared memory that thread", "no fence.proxy.async since"),
            "racecheck"),
    Planted("wgmma_without_wgmma_fence", "accumulator zeroed, then wgmma with no wgmma.fence "
            "anywhere", wgmma_without_wgmma_fence, WG,
            ("the warpgroup has executed no wgmma.fence",), "racecheck"),
]
