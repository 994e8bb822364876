"""Error corpus of gemm_async -> tcgen05 and copy_async -> tcgen05_cp: every mistake is a
TilewiseError at the user's line (marked ``# <-``) that says what is wrong and names no
tilewise source file (tests/errcheck.py)."""

import pytest
from errcheck import check_error

from tilewise import from_source
from tilewise.errors import TilewiseError
from tilewise.layout import R, S, TCol, TileLayout, TLane, swizzled_tile
from tilewise.pipeline import lower

HEAD = """
@T.prim_func
def k(X_ptr: T.handle):
    X = T.match_buffer(X_ptr, (1,), "uint32")
    T.device_entry()
    warp_id = T.warp_id([4])
    tid = T.thread_id([128])
    As = T.alloc_shared((128, 64), "bfloat16", layout=LA, align=1024)
    Ah = T.alloc_shared((128, 64), "float16", layout=LA, align=1024)
    Af = T.alloc_shared((128, 32), "float32", layout=LF, align=1024)
    Bs = T.alloc_shared((64, 64), "bfloat16", layout=LB, align=1024)
    B12 = T.alloc_shared((64, 12), "bfloat16")
    Bf = T.alloc_shared((32, 64), "float32")
    Cs = T.alloc_shared((128, 64), "float32")
    tm = T.decl_buffer((128, 128), "float32", scope="tmem", allocated_addr=X[0],
                       layout=TileLayout(S[(128, 128) : (1 @ TLane, 1 @ TCol)]))
    th = T.decl_buffer((128, 128), "float16", scope="tmem", allocated_addr=X[0],
                       layout=TileLayout(S[(128, 128) : (1 @ TLane, 1 @ TCol)]))
    ta = T.decl_buffer((128, 256), "bfloat16", scope="tmem", allocated_addr=X[0],
                       layout=TileLayout(S[(128, 256) : (1 @ TLane, 1 @ TCol)]))
    t32 = T.decl_buffer((32, 4), "float32", scope="tmem", allocated_addr=X[0],
                        layout=TileLayout(S[(32, 4) : (1 @ TLane, 1 @ TCol)]))
    tw4 = T.decl_buffer((32, 4), "float32", scope="tmem", allocated_addr=X[0],
                        layout=TileLayout(S[(32, 4) : (1 @ TLane, 1 @ TCol)] + R[4 : 32 @ TLane]))
    S32 = T.alloc_shared((32, 4), "float32")
    S2 = T.alloc_shared((128, 2), "float32")
    t2 = T.decl_buffer((128, 2), "float32", scope="tmem", allocated_addr=X[0],
                       layout=TileLayout(S[(128, 2) : (1 @ TLane, 1 @ TCol)]))
"""
ENV = {"LA": swizzled_tile(128, 64, 16, 128), "LB": swizzled_tile(64, 64, 16, 128),
       "LF": TileLayout(S[(128, 32) : (1, 128)]).swizzle(128, 32), "TileLayout": TileLayout,
       "S": S, "R": R, "TLane": TLane, "TCol": TCol}

CASES = [
    # (id, body, message, target)
    ("every-thread-issues", "if warp_id == 1:\n        Tx.gemm_async(tm[:, 0:64], As[:, :], "
     "Bs[:, :])  # <-", "32 threads reach this call and each would issue its own tcgen05.mma",
     "sm_100a"),
    ("issuers-unknown", "if X[tid // 128] > 0:\n        Tx.gemm_async(tm[:, 0:64], As[:, :], Bs[:, :])"
     "  # <-", "up to 128 threads may reach this call (condition", "sm_100a"),
    ("n-not-multiple-of-8", "if tid == 0:\n        Tx.gemm_async(tm[:, 0:12], As[:, :], "
     "B12[:, :])  # <-", "N = 12 is not a multiple of 8 in 8..256", "sm_100a"),
    ("k-not-multiple-of-16", "if tid == 0:\n        Tx.gemm_async(tm[:, 0:64], As[:, 0:24], "
     "Bs[0:24, :])  # <-", "K = 24 is not a multiple of 16", "sm_100a"),
    ("c-in-shared-memory", "if tid == 0:\n        Tx.gemm_async(Cs[:, :], As[:, :], Bs[:, :])"
     "  # <-", "C ('Cs') is in shared memory; tcgen05.mma accumulates in tensor memory",
     "sm_100a"),
    ("c-float16", "if tid == 0:\n        Tx.gemm_async(th[:, 0:64], As[:, :], Bs[:, :])  # <-",
     "C is float16; the accumulator of this variant is float32", "sm_100a"),
    ("mixed-16-bit-inputs", "if tid == 0:\n        Tx.gemm_async(tm[:, 0:64], Ah[:, :], "
     "Bs[:, :])  # <-", "A is float16 but B is bfloat16", "sm_100a"),
    ("tf32-mn-major", "if tid == 0:\n        Tx.gemm_async(tm[:, 0:64], Af[:, :], "
     "Bf[:, :])  # <-", "A Af[0:128, 0:32] (shared) is not a canonical tcgen05 layout: "
     "K-major (swizzle 128", "sm_100a"),
    ("cta-group-2-layout-b", "if tid == 0:\n        Tx.gemm_async(tm[0:64, 0:64], As[0:64, :], "
     "Bs[:, 0:32], cta_group=2)  # <-", "M = 128, datapath Layout B (2x2), which tilewise "
     "does not model", "sm_100a"),
    ("rows-not-a-datapath", "if tid == 0:\n        Tx.gemm_async(tm[0:96, 0:64], As[0:96, :], "
     "Bs[:, :])  # <-", "M = 96 is not 64 or 128", "sm_100a"),
    ("a-tmem-other-datapath", "if tid == 0:\n        Tx.gemm_async(tm[0:64, 0:64], "
     "ta[64:128, 0:64], Bs[:, :])  # <-", "A in tensor memory is on datapath F (lanes +16) but "
     "C on F (lanes +0)", "sm_100a"),
    ("no-tcgen05-on-sm90a", "if tid == 0:\n        Tx.gemm_async(tm[:, 0:64], As[:, :], "
     "Bs[:, :], dispatch='tcgen05')  # <-", "target sm_90a has no tcgen05.mma", "sm_90a"),
    ("cp-every-thread", "if warp_id == 0:\n        Tx.copy_async(tw4[:, :], S32[:, :])  # <-",
     "32 threads reach this call and each would issue its own tcgen05.cp", "sm_100a"),
    ("cp-multicast-not-stated", "if tid == 0:\n        Tx.copy_async(t32[:, :], S32[:, :])  # <-",
     "the destination layout fits no tcgen05.cp shape", "sm_100a"),
    ("cp-width-below-128-bits", "if tid == 0:\n        Tx.copy_async(t2[:, :], S2[:, :])  # <-",
     "the width, 2 32-bit columns, is not a multiple of 4", "sm_100a"),
    ("cp-option", "if tid == 0:\n        Tx.copy_async(tw4[:, :], S32[:, :], "
     "cache_hint='normal')  # <-", "option cache_hint= does not apply to tcgen05.cp", "sm_100a"),
]


@pytest.mark.parametrize("cid, body, message, target", CASES, ids=[c[0] for c in CASES])
def test_error_names_the_line(cid, body, message, target):
    from tilewise import Tx

    src = HEAD + "    " + body + "\n"
    func = from_source(src, env={**ENV, "Tx": Tx}, filename="user_kernel.py")
    with pytest.raises(TilewiseError) as e:
        lower(func, target)
    check_error(e.value, message, None, src, "user_kernel.py")
