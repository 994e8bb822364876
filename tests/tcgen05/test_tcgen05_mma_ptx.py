"""tcgen05.mma / tcgen05.cp / tcgen05.commit as instructions: the descriptor encodings against
values worked out by hand from the PTX ISA tables, the simulator executing hand-built
descriptors (test-side canonical layout, not the compiler's), and the hazards at the
user's line."""

from __future__ import annotations

import re

import numpy as np
import pytest
from errcheck import marked_line

import tilewise as tw
from tilewise import from_source
from tilewise.errors import HazardError, SimulationError
from tilewise.ptx import tcgen05

TARGET = "sm_100a"


# ---- encodings (PTX ISA Table 40 / Table 42), values worked out by hand ----
def test_smem_descriptor_bits():
    # start 0x2A40 >> 4 = 0x2A4; LBO 16 >> 4 = 1 at bit 16; SBO 1024 >> 4 = 64 at bit 32;
    # version 0b001 at bit 46; 128-byte swizzle = 2 at bit 61.
    want = 0x2A4 | 1 << 16 | 64 << 32 | 1 << 46 | 2 << 61
    assert tcgen05.smem_desc(0x2A40, 16, 1024, 128) == want
    assert tcgen05.smem_desc(0, 128, 256, 0) == 8 << 16 | 16 << 32 | 1 << 46
    assert tcgen05.smem_desc(0, 16, 512, 64) >> 61 == 4
    assert tcgen05.smem_desc(0, 16, 256, 32) >> 61 == 6
    d, problem = tcgen05.decode_smem_desc(want)
    assert problem is None and (d.start, d.lbo, d.sbo, d.swizzle) == (0x2A40, 16, 1024, 128)
    assert "0b001" in tcgen05.decode_smem_desc(want & ~(1 << 46))[1]
    assert "swizzle code 1" in tcgen05.decode_smem_desc(want & ~(7 << 61) | 1 << 61)[1]


def test_instruction_descriptor_bits():
    # bf16 x bf16 -> f32, M 128, N 64, A K-major, B MN-major:
    # D f32 = 1 << 4; A, B bf16 = 1 << 7, 1 << 10; transpose B 1 << 16; N >> 3 = 8 at 17;
    # M >> 4 = 8 at 24.
    want = 1 << 4 | 1 << 7 | 1 << 10 | 1 << 16 | 8 << 17 | 8 << 24
    assert tcgen05.instr_desc("f16", "bfloat16", "bfloat16", "float32", 128, 64, False,
                              True) == want
    # tf32 (code 2), M 64, N 8, both K-major
    assert tcgen05.instr_desc("tf32", "float32", "float32", "float32", 64, 8, False,
                              False) == 1 << 4 | 2 << 7 | 2 << 10 | 1 << 17 | 4 << 24
    # e4m3 (0) x e5m2 (1), M 256, N 256
    assert tcgen05.instr_desc("f8f6f4", "float8_e4m3", "float8_e5m2", "float32", 256, 256,
                              True, False) == 1 << 4 | 1 << 10 | 1 << 15 | 32 << 17 | 16 << 24
    d = tcgen05.decode_instr_desc("f16", want)
    assert (d.d, d.a, d.b, d.m, d.n, d.trans_a, d.trans_b, d.reserved) == (
        "float32", "bfloat16", "bfloat16", 128, 64, False, True, 0)


def test_mma_shapes():
    assert tcgen05.mma_shape_problem(128, 256, 1) is None
    assert tcgen05.mma_shape_problem(64, 8, 1) is None
    assert tcgen05.mma_shape_problem(256, 16, 2) is None
    assert "not 64 or 128" in tcgen05.mma_shape_problem(32, 64, 1)
    assert "multiple of 16" in tcgen05.mma_shape_problem(256, 24, 2)
    assert "multiple of 8" in tcgen05.mma_shape_problem(128, 12, 1)


# ---- hand-built descriptors in the simulator ----
def _canonical_k_major_no_swizzle(x: np.ndarray, lbo: int, sbo: int) -> np.ndarray:
    """Bytes of (rows, K) 16-bit ``x`` in the K-major, no-swizzle canonical layout
    (PTX §9.7.16.3.3: ((8, m), (T, 2k)) : ((1T, SBO), (1, LBO)), T = 8 elements): element
    (r, k) at byte (r % 8) * 16 + (r // 8) * SBO + (k // 8) * LBO + (k % 8) * 2."""
    rows, k = x.shape
    out = np.zeros(max((rows // 8 - 1) * sbo + (k // 8 - 1) * lbo + 128, 0), np.uint8)
    words = x.view(np.uint16)
    for r in range(rows):
        for c in range(k):
            off = (r % 8) * 16 + (r // 8) * sbo + (c // 8) * lbo + (c % 8) * 2
            out[off:off + 2] = np.frombuffer(words[r, c].tobytes(), np.uint8)
    return out


RAW = '''
@T.prim_func
def raw(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
    A = T.match_buffer(A_ptr, (NA,), "uint8")
    B = T.match_buffer(B_ptr, (NB,), "uint8")
    C = T.match_buffer(C_ptr, (128, 16), "float32")
    T.device_entry()
    warp_id = T.warp_id([4])
    tid = T.thread_id([128])
    As = T.alloc_shared((NA,), "uint8", align=1024)
    Bs = T.alloc_shared((NB,), "uint8", align=1024)
    bar = T.alloc_shared([1], "uint64")
    tmem_addr = T.alloc_shared([1], "uint32")
    acc = T.alloc_local((16,), "float32")
    if warp_id == 0:
        T.ptx.tcgen05.alloc(T.address_of(tmem_addr), n_cols=32, cta_group=1)
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
        for i in range(NA):
            As[i] = A[i]
        for i in range(NB):
            Bs[i] = B[i]
    T.ptx.fence.proxy_async()
    T.cuda.cta_sync()
    T.ptx.tcgen05.fence.after_thread_sync()
    if tid == 0:
        a_desc = T.uint64((T.ptx.smem_addr(T.address_of(As[0])) >> 4) & 0x3FFF) | T.uint64(FA)
        b_desc = T.uint64((T.ptx.smem_addr(T.address_of(Bs[0])) >> 4) & 0x3FFF) | T.uint64(FB)
        T.ptx.tcgen05.mma(tmem_addr[0], a_desc, b_desc, T.uint32(ID), False, "f16")
        T.ptx.tcgen05.commit(T.address_of(bar[0]))
    T.ptx.mbarrier.try_wait(T.address_of(bar[0]), 0)
    T.ptx.tcgen05.fence.after_thread_sync()
    T.ptx.tcgen05.ld(tmem_addr[0] + T.cast(warp_id * 32 << 16, "uint32"), 0, 0, "32x32b", 16,
                     False, *[acc[i] for i in range(16)])
    T.ptx.tcgen05.wait.ld()
    for i in range(16):
        C[tid, i] = acc[i]
    T.ptx.tcgen05.fence.before_thread_sync()
    T.cuda.cta_sync()
    if warp_id == 0:
        T.ptx.tcgen05.dealloc(tmem_addr[0], n_cols=32, cta_group=1)
'''


def test_hand_built_descriptors_read_the_canonical_layout():
    """A (128 x 16) and B^T (16 x 16, i.e. B K-major) bf16, both K-major without swizzle,
    LBO 128 (the second 8-element chunk), SBO 256 (the next 8 rows); one
    tcgen05.mma.kind::f16 M128 N16 K16; C = A @ B exactly as numpy computes it."""
    import ml_dtypes

    rng = np.random.default_rng(7)
    a = rng.standard_normal((128, 16)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((16, 16)).astype(ml_dtypes.bfloat16)  # (K, N)
    abytes = _canonical_k_major_no_swizzle(a, 128, 256)
    bbytes = _canonical_k_major_no_swizzle(np.ascontiguousarray(b.T), 128, 256)
    fields = 8 << 16 | 16 << 32 | 1 << 46  # LBO 128, SBO 256, version 1, no swizzle
    idesc = 1 << 4 | 1 << 7 | 1 << 10 | 2 << 17 | 8 << 24  # bf16, f32, N 16, M 128
    func = from_source(RAW, env={"NA": abytes.size, "NB": bbytes.size, "FA": fields,
                                 "FB": fields, "ID": idesc}, filename="raw.py")
    c = np.full((128, 16), np.nan, np.float32)
    tw.simulate(func, abytes, bbytes, c, target=TARGET)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(c - ref).max() <= 1e-6 * np.abs(ref).max()
    # a swizzled descriptor over the same bytes reads other elements: the result differs
    func2 = from_source(RAW, env={"NA": abytes.size, "NB": bbytes.size,
                                  "FA": fields | 6 << 61, "FB": fields, "ID": idesc},
                        filename="raw.py")
    c2 = np.full((128, 16), np.nan, np.float32)
    tw.simulate(func2, abytes, bbytes, c2, target=TARGET)
    assert np.abs(c2 - ref).max() > 1e-2


def test_invalid_instruction_descriptor_is_reported_at_the_line():
    a = np.zeros(4096, np.uint8)
    src = RAW.replace('"f16")', '"f16")  # <-')
    func = from_source(src, env={"NA": 4096, "NB": 4096, "FA": 1 << 46, "FB": 1 << 46,
                                 "ID": 1 << 4 | 1 << 2 | 2 << 17 | 8 << 24}, filename="raw.py")
    with pytest.raises(HazardError, match="instruction descriptor .* is not valid: bits") as e:
        tw.simulate(func, a, a.copy(), np.zeros((128, 16), np.float32), target=TARGET)
    assert e.value.span.line == marked_line(src)


def test_cta_group_2_is_not_simulated_but_assembles():
    src = RAW.replace('"f16")', '"f16", 2)').replace(
        "T.ptx.tcgen05.commit(T.address_of(bar[0]))",
        "T.ptx.tcgen05.commit(T.address_of(bar[0]), 2)").replace(
        "n_cols=32, cta_group=1", "n_cols=32, cta_group=2")
    func = from_source(src, env={"NA": 4096, "NB": 4096, "FA": 1 << 46, "FB": 1 << 46,
                                 "ID": 1 << 4 | 2 << 17 | 16 << 24}, filename="raw.py")
    k = tw.compile(func, TARGET)
    assert "tcgen05.mma.cta_group::2.kind::f16" in k.ptx and k.cubin[:4] == b"\x7fELF"
    a = np.zeros(4096, np.uint8)
    with pytest.raises(SimulationError, match="cta_group=2 needs a CTA pair"):
        tw.simulate(func, a, a.copy(), np.zeros((128, 16), np.float32), target=TARGET)


# ---- hazards of the asynchronous MMA, at the user's line ----
HAZARD = """
@T.prim_func
def k(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128, 64), "bfloat16")
    B = T.match_buffer(B_ptr, (64, 64), "bfloat16")
    C = T.match_buffer(C_ptr, (128, 64), "float32")
    T.device_entry()
    warp_id = T.warp_id([4])
    tid = T.thread_id([128])
    As = T.alloc_shared((128, 64), "bfloat16", layout=LA, align=1024)
    Bs = T.alloc_shared((64, 64), "bfloat16", layout=LB, align=1024)
    bar = T.alloc_shared([1], "uint64")
    tmem_addr = T.alloc_shared([1], "uint32")
    acc_reg = T.alloc_local((64,), "float32")
    acc = acc_reg.view(128, 64, layout=REGS)
    if warp_id == 0:
        T.ptx.tcgen05.alloc(T.address_of(tmem_addr), n_cols=NCOLS, cta_group=1)
    if tid == 0:
        T.ptx.mbarrier.init(T.address_of(bar[0]), 1)
    Tx.cta.copy(As[:, :], A[:, :])
    Tx.cta.copy(Bs[:, :], B[:, :])
    T.ptx.fence.proxy_async()
    T.cuda.cta_sync()
    T.ptx.tcgen05.fence.after_thread_sync()
    tmem = T.decl_buffer((128, 64), "float32", scope="tmem", allocated_addr=tmem_addr[0],
                         layout=TileLayout(S[(128, 64) : (1 @ TLane, 1 @ TCol)]))
    if warp_id == 1:
        if T.ptx.elect_sync():
            Tx.gemm_async(tmem[:, :], As[:, :], Bs[:, :])  # MMA
            COMMIT
    BODY
    T.ptx.tcgen05.fence.before_thread_sync()
    T.cuda.cta_sync()
    if warp_id == DEALLOC_WARP:
        T.ptx.tcgen05.dealloc(tmem_addr[0], n_cols=NCOLS, cta_group=1)  # DEALLOC
"""
WAIT = "T.ptx.mbarrier.try_wait(T.address_of(bar[0]), 0)"
LOAD = ("T.ptx.tcgen05.fence.after_thread_sync()\n    "
        "Tx.wg.copy_async(acc[:, :], tmem[:, :])  # LOAD\n    T.ptx.tcgen05.wait.ld()\n    "
        "Tx.wg.copy(C[:, :], acc[:, :])")
COMMIT = "T.ptx.tcgen05.commit(T.address_of(bar[0]))"
HAZARDS = [
    # (id, message, marker, replacements)
    ("ld-before-wait", "tcgen05.ld reads tensor memory that a tcgen05.mma of thread 32",
     "# LOAD", {"BODY": LOAD}),
    ("never-committed", "it was never committed (missing tcgen05.commit)", "# LOAD",
     {"COMMIT": "pass", "BODY": LOAD}),
    ("not-waited-by-this-thread", "but thread 32 has not waited on it", "# LOAD",
     {"BODY": "if warp_id == 0:\n        " + WAIT + "\n    " + LOAD}),
    ("operand-overwritten", "overwrites shared memory that a tcgen05.mma", "# OVERWRITE",
     {"BODY": "Tx.cta.copy(As[:, :], A[:, :])  # OVERWRITE\n    " + WAIT + "\n    " + LOAD}),
    ("operand-overwritten-by-tma", "overwrites shared memory that a tcgen05.mma", "# TMA",
     {"BODY": "if tid == 0:\n        T.ptx.mbarrier.init(T.address_of(bar[1]), 1)\n        "
      "T.ptx.mbarrier.arrive.expect_tx(T.address_of(bar[1]), 16384)\n        "
      "Tx.thread.copy_async(As[:, :], A[:, :], dispatch='tma', mbar=T.address_of(bar[1]))"
      "  # TMA\n    " + WAIT + "\n    " + LOAD,
      "bar = T.alloc_shared([1]": "bar = T.alloc_shared([2]"}),
    ("columns-beyond-the-allocation", "tcgen05.mma D uses tensor-memory column 32, which is "
     "not allocated", "# MMA", {"NCOLS": "32", "BODY": WAIT + "\n    " + LOAD}),
    ("exit-pending", "the CTA exits while a tcgen05.mma is pending", "# MMA",
     {"COMMIT": "pass", "BODY": "pass"}),
    ("dealloc-by-another-warp", "tcgen05.dealloc by warp 1 of tensor memory allocated by "
     "warp 0", "# DEALLOC", {"DEALLOC_WARP": "1", "BODY": WAIT + "\n    " + LOAD}),
    # the operands written by ordinary stores and no fence.proxy.async: the MMA reads them
    # through the async proxy
    ("missing-proxy-fence", "tcgen05.mma reads shared memory that thread 0 wrote with ordinary "
     "stores and no fence.proxy.async since", "# MMA",
     {"T.ptx.fence.proxy_async()": "pass", "BODY": WAIT + "\n    " + LOAD}),
]


@pytest.mark.parametrize("hid, message, marker, subs", HAZARDS, ids=[h[0] for h in HAZARDS])
def test_mma_hazards_name_the_line(hid, message, marker, subs):
    from kernels_tcgen05_mma import inputs, smem_layout

    from tilewise import Tx
    from tilewise.layout import S, TCol, TileLayout, TLane, tid_in_wg

    src = HAZARD
    for key, val in {"NCOLS": "64", "DEALLOC_WARP": "0", "COMMIT": COMMIT, **subs}.items():
        src = src.replace(key, val)
    env = {"LA": smem_layout(128, 64, 128), "LB": smem_layout(64, 64, 128),
           "REGS": TileLayout(S[(128, 64) : (1 @ tid_in_wg, 1)]), "Tx": Tx, "S": S,
           "TLane": TLane, "TCol": TCol, "TileLayout": TileLayout}
    func = from_source(src, env=env, filename="hz.py")
    a, b, c = inputs(np.random.default_rng(0))
    with pytest.raises(HazardError, match=re.escape(message)) as e:
        tw.simulate(func, a, b, c, target=TARGET)
    want = next(i for i, ln in enumerate(src.splitlines(), 1) if marker in ln)
    assert e.value.span.line == want, str(e.value)
    assert e.value.span.file == "hz.py"


OK_BODIES = [
    # one thread waits, then bar.sync: every thread has observed the commit
    ("one-waits-then-barrier", {"BODY": "if tid == 0:\n        " + WAIT +
                                "\n    T.cuda.cta_sync()\n    " + LOAD}),
    # a later commit (on another barrier) tracks the same MMAs: waiting on it suffices
    ("second-commit", {"COMMIT": COMMIT + "\n            T.ptx.tcgen05.commit(T.address_of("
                       "bar[1]))", "bar = T.alloc_shared([1]": "bar = T.alloc_shared([2]",
                       "T.ptx.mbarrier.init(T.address_of(bar[0]), 1)":
                       "T.ptx.mbarrier.init(T.address_of(bar[0]), 1)\n        "
                       "T.ptx.mbarrier.init(T.address_of(bar[1]), 1)",
                       "BODY": WAIT.replace("bar[0]", "bar[1]") + "\n    " + LOAD}),
]


@pytest.mark.parametrize("oid, subs", OK_BODIES, ids=[o[0] for o in OK_BODIES])
def test_mma_results_seen_after_a_legal_synchronisation(oid, subs):
    from kernels_tcgen05_mma import inputs, reference, smem_layout

    from tilewise import Tx
    from tilewise.layout import S, TCol, TileLayout, TLane, tid_in_wg

    src = HAZARD
    for key, val in {"NCOLS": "64", "DEALLOC_WARP": "0", "COMMIT": COMMIT, **subs}.items():
        src = src.replace(key, val)
    env = {"LA": smem_layout(128, 64, 128), "LB": smem_layout(64, 64, 128),
           "REGS": TileLayout(S[(128, 64) : (1 @ tid_in_wg, 1)]), "Tx": Tx, "S": S,
           "TLane": TLane, "TCol": TCol, "TileLayout": TileLayout}
    func = from_source(src, env=env, filename="ok.py")
    a, b, c = inputs(np.random.default_rng(1))
    c[:] = np.nan
    tw.simulate(func, a, b, c, target=TARGET)
    ref = reference(a, b, c)
    assert np.abs(c - ref).max() <= 1e-5 * np.abs(ref).max()
