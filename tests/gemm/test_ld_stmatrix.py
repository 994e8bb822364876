"""copy -> ld_stmatrix: register fragments to and from shared memory through ldmatrix /
stmatrix, bit for bit, in the simulator and (marked gpu) on the H200; its decisions and
declines."""

import numpy as np
import pytest

import kernels_mma as G
from executors import run
from tilewise.ir.dtype import dtype as tw_dtype
from tilewise.layout import S, TileLayout, laneid, ldmatrix_m8n8, mma_fragment, swizzled_tile
from tilewise.pipeline import lower

CASES = [
    # (id, register layout, shape, dtype, shared layout, store, scope, threads, col0, plan)
    ("A-f16-x4", mma_fragment("A", (32, 32), 16), (32, 32), "float16", None, False, "warp", 32,
     0, "ldmatrix: .x4 regs 0..3, .x4 regs 4..7, .x4 regs 8..11, .x4 regs 12..15"),
    ("B-bf16-trans", mma_fragment("B", (16, 16), 16), (16, 16), "bfloat16", None, False,
     "warp", 32, 0, "ldmatrix: .x4.trans regs 0..3"),
    ("B-f16-N-major", mma_fragment("B", (16, 8), 16), (16, 8), "float16",
     TileLayout(S[(16, 8):(1, 16)]), False, "warp", 32, 0, "ldmatrix: .x2 regs 0..1"),
    ("ldmatrix-atom-x2-trans", ldmatrix_m8n8(2, trans=True), (16, 8), "float16", None, False,
     "warp", 32, 0, "ldmatrix: .x2.trans regs 0..1"),
    ("A-int8-swizzle128", mma_fragment("A", (16, 128), 8), (16, 128), "int8",
     swizzled_tile(16, 128, 8, 128), False, "warp", 32, 0,
     "ldmatrix: .x4 regs 0..3, .x4 regs 4..7, .x4 regs 8..11, .x4 regs 12..15"),
    ("B-tf32-K-major", mma_fragment("B", (8, 16), 32), (8, 16), "float32",
     TileLayout(S[(8, 16):(1, 8)]), False, "warp", 32, 0, "ldmatrix: .x4 regs 0..3"),
    ("A-f16-column-offset", mma_fragment("A", (16, 16), 16), (16, 16), "float16",
     swizzled_tile(16, 64, 16, 128), False, "warp", 32, 48, "ldmatrix: .x4 regs 0..3"),
    ("B-f16-wg", mma_fragment("B", (16, 32), 16, (1, 4), "wid_in_wg"), (16, 32),
     "float16", None, False, "wg", 128, 0, "ldmatrix: .x2.trans regs 0..1"),
    ("C-f16-stmatrix", mma_fragment("C", (32, 16)), (32, 16), "float16", None, True, "warp",
     32, 0, "stmatrix: .x4 regs 0..3, .x4 regs 4..7"),
    ("A-f16-stmatrix-swizzle64", mma_fragment("A", (16, 32), 16), (16, 32), "float16",
     swizzled_tile(16, 32, 16, 64), True, "warp", 32, 0,
     "stmatrix: .x4 regs 0..3, .x4 regs 4..7"),
    ("B-f16-stmatrix-trans-cta", mma_fragment("B", (16, 32), 16, (1, 4)), (16, 32), "float16",
     None, True, "cta", 128, 0, "stmatrix: .x2.trans regs 0..1"),
]


def _data(shape, dtype, seed):
    bits = tw_dtype(dtype).bits
    raw = np.random.default_rng(seed).integers(1, 2**bits - 1, shape, dtype=np.uint64)
    return raw.astype({8: np.uint8, 16: np.uint16, 32: np.uint32}[bits]).view(
        tw_dtype(dtype).numpy())


def _func(case):
    _, reg, shape, dtype, smem, store, scope, threads, col0, _ = case
    return G.roundtrip(reg, shape, dtype, smem, store, scope, threads, col0)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_plan_and_bits(executor, case):
    func, shape, dtype, store, scope = _func(case), case[2], case[3], case[5], case[6]
    d = _decision(func, "sm_90a", f"Tx.{scope}.copy({'S' if store else 'R'}[")
    assert (d.chosen, d.info) == ("ld_stmatrix", [case[-1]])
    g = _data(shape, dtype, 5)
    out = np.zeros_like(g)
    run(executor, func, [g, out])
    assert np.array_equal(out.view(np.uint8), g.view(np.uint8))


def _decision(func, target, start):
    (d,) = [x for x in lower(func, target).dispatch_log if x.call.startswith(start)]
    return d


def test_without_stmatrix_a_store_stays_with_reg():
    func = G.roundtrip(mma_fragment("C", (16, 8)), (16, 8), "float16", None, store=True)
    d = _decision(func, "sm_80", "Tx.warp.copy(S[")
    assert d.chosen == "reg"
    assert d.tried[0] == ("ld_stmatrix", 40, "target sm_80 has no stmatrix (shared <- "
                          "registers) (needs sm_90 or newer)")
    assert _decision(G.roundtrip(mma_fragment("A", (16, 16), 16), (16, 16)), "sm_80",
                     "Tx.warp.copy(R[").chosen == "ld_stmatrix"


def test_a_row_per_lane_is_not_a_matrix_and_reg_takes_it():
    func = G.roundtrip(TileLayout(S[(32, 8):(1 @ laneid, 1)]), (32, 8))
    d = _decision(func, "sm_90a", "Tx.warp.copy(R[")
    assert d.chosen == "reg"
    assert "register 0 of the tile is no 8 x 8 .b16 matrix of shared rows: without .trans " \
           "lane 1's elements do not follow lane 0's in one 16-byte row" in d.tried[0][2]


@pytest.mark.parametrize("layout, shape, dtype, smem, col0, reason", [
    (mma_fragment("A", (16, 16), 16), (16, 16), "float16", None, 4,
     "without .trans a row starts at byte 8 of 'S', only 8-byte aligned (rows need 16)"),
    (mma_fragment("A", (16, 32), 8), (16, 32), "int8", TileLayout(S[(16, 32):(1, 16)]), 0,
     "without .trans lane 0's 4 elements are not adjacent in shared memory; with .trans "
     "needs 16-bit elements, not int8"),
    (mma_fragment("B", (8, 8), 32), (8, 8), "float32", None, 0,
     "with .trans needs 16-bit elements, not float32"),
])
def test_declines_name_the_row(layout, shape, dtype, smem, col0, reason):
    func = G.roundtrip(layout, shape, dtype, smem, col0=col0)
    d = _decision(func, "sm_90a", "Tx.warp.copy(R[")
    assert d.chosen == "reg" and reason in d.tried[0][2], d.tried[0]


REPLICATED = """
@T.prim_func
def k(G_ptr: T.handle):
    G = T.match_buffer(G_ptr, (32, 16), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S1 = T.alloc_shared((32, 16), "float16")
    S2 = T.alloc_shared((32, 16), "float16")
    R = T.alloc_local((32, 16), "float16", layout=LA)
    Tx.cta.copy(S1[:, :], G[:, :])
    T.cuda.cta_sync()
    Tx.cta.copy(R[:, :], S1[:, :])
    Tx.cta.copy(S2[:, :], R[:, :])  # <-
"""


def test_registers_replicated_over_warps_load_but_do_not_store():
    """Every warp of a 2 x 2 grid loads its copy of A by ldmatrix; storing them back would
    store each element twice, so no variant takes it."""
    from errcheck import check_error
    from tilewise import from_source
    from tilewise.errors import DispatchError

    func = from_source(REPLICATED, env={"LA": mma_fragment("A", (32, 16), 16, (2, 2))},
                       filename="replicated.py")
    with pytest.raises(DispatchError) as e:
        lower(func, "sm_90a")
    check_error(e.value, "ld_stmatrix (priority 40): the register tile is replicated over "
                "warps; stmatrix from every copy would store each element several times",
                None, REPLICATED, "replicated.py")
