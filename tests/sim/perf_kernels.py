"""Kernels whose memory traffic is computed by hand in test_perf.py, shared with
scripts/perf-vs-ncu (which measures the same kernels with Nsight Compute on a GPU)."""

import importlib.util
import pathlib

import numpy as np

from tilewise import T, Tx
from tilewise.layout import S, TileLayout

ROOT = pathlib.Path(__file__).resolve().parents[2]


def tutorial(name: str):
    """``examples/tutorial/<name>.py`` as a module."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / "tutorial" /
                                                  f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


TRANSPOSE = tutorial("02_transpose")


def wide_reads(stride: int):
    @T.prim_func
    def wide(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (64,), "float64")
        B = T.match_buffer(B_ptr, (32,), "float64")
        T.device_entry()
        lane = T.thread_id([32])
        tile = T.alloc_shared((64,), "float64")
        tile[lane] = A[lane]
        tile[lane + 32] = A[lane + 32]
        T.cuda.cta_sync()
        B[lane] = tile[lane * stride]
    return wide


def matrix_rows(swizzled: bool):
    lay = TileLayout(S[(32, 64)]).swizzle(128, dtype_bits=16) if swizzled else None

    @T.prim_func
    def rows(A_ptr: T.handle, W_ptr: T.handle, V_ptr: T.handle):
        A = T.match_buffer(A_ptr, (32, 64), "float16")
        W = T.match_buffer(W_ptr, (4, 32), "uint32")  # lane-minor: no per-lane vector
        V = T.match_buffer(V_ptr, (32, 8), "float16")
        T.device_entry()
        lane = T.thread_id([32])
        tile = T.alloc_shared((32, 64), "float16", layout=lay, align=1024)
        R = T.alloc_local((4,), "uint32")
        Tx.warp.copy(tile[:, :], A[:, :])
        T.cuda.cta_sync()
        T.ptx.ldmatrix(T.address_of(tile[lane, 0]), 4, False, R[0], R[1], R[2], R[3])
        T.ptx.ld_st(T.address_of(V[lane, 0]), T.address_of(tile[lane, 0]), 16)
        for i in T.unroll(4):
            W[i, lane] = R[i]
    return rows



def cases(n: int = 256) -> list:
    """(name, kernel, numpy arguments) of every kernel measured against Nsight Compute."""
    rng = np.random.default_rng(0)
    out = []
    for lanes in ("column", "block"):
        for layout in ("plain", "padded", "swizzled"):
            out.append((f"transpose-{lanes}-{layout}",
                        TRANSPOSE.make_transpose(n, layout, lanes), TRANSPOSE.inputs(rng, n)))
    out.append(("transpose-naive", TRANSPOSE.make_naive_transpose(n), TRANSPOSE.inputs(rng, n)))
    for stride in (1, 2):
        out.append((f"float64-stride{stride}", wide_reads(stride),
                    [np.arange(64, dtype=np.float64), np.zeros(32)]))
    for swz in (False, True):
        a = rng.standard_normal((32, 64)).astype(np.float16)
        out.append((f"rows16-{'swizzled' if swz else 'plain'}", matrix_rows(swz),
                    [a, np.zeros((4, 32), np.uint32), np.zeros((32, 8), np.float16)]))
    return out
