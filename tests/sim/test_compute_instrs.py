"""Simulator semantics of the compute instructions the tile primitives emit: shfl.sync,
vote.sync, the
packed two-lane arithmetic, the packing conversions and the approximate math.

Packed arithmetic and conversions are exact instructions (each lane rounded once), so the
simulator must equal an independent computation bit for bit. Approximate math returns the
correctly rounded value; the test checks that against float64 at the PTX ISA's bound."""

import numpy as np
import pytest

import tilewise as tw
from simhelpers import bits, poison
from tilewise.ir.alu import numpy_fma
from tilewise.ptx.packed import APPROX

FILE = "compute_kernels.py"


def io_kernel(a, b, threads: int, *body: str):
    """Buffers A and B ((n, dtype) each), ``threads`` threads, then ``body``."""
    lines = [f'A = T.match_buffer(A_ptr, ({a[0]},), "{a[1]}")',
             f'B = T.match_buffer(B_ptr, ({b[0]},), "{b[1]}")', "T.device_entry()",
             f"tid = T.thread_id([{threads}])", *body]
    src = "@T.prim_func\ndef k(A_ptr: T.handle, B_ptr: T.handle):\n" + "".join(
        f"    {ln}\n" for ln in lines)
    return tw.from_source(src, filename=FILE)


@pytest.mark.parametrize("mode,b,want", [
    ("bfly", 5, lambda lane: lane ^ 5),
    ("up", 3, lambda lane: np.where(lane >= 3, lane - 3, lane)),
    ("down", 4, lambda lane: np.where(lane + 4 <= 31, lane + 4, lane)),
    ("idx", 7, lambda lane: np.full_like(lane, 7)),
])
def test_shfl_sync_reads_the_lane_the_isa_names(mode, b, want):
    k = io_kernel((64, "float32"), (64, "float32"), 64,
                  f'B[tid] = T.ptx.shfl_sync("{mode}", A[tid], {b})')
    a = np.arange(64, dtype=np.float32) * 1.5
    out = poison(64, np.float32)
    tw.simulate(k, a, out)
    tid = np.arange(64)
    assert (out == a[(tid // 32) * 32 + want(tid % 32)]).all()


def test_shfl_sync_segments_and_integer_values():
    k = io_kernel((32, "int32"), (32, "int32"), 32,
                  'B[tid] = T.ptx.shfl_sync("down", A[tid], 1, 0x1807)')
    a = np.arange(32, dtype=np.int32) * 7
    out = poison(32, np.int32)
    tw.simulate(k, a, out)
    lane = np.arange(32)
    # c = 0x1807: segments of 8 lanes (segmask 0x18), clamp 7: no lane reads past its segment
    src = np.where((lane % 8) < 7, lane + 1, lane)
    assert (out == a[src]).all()


@pytest.mark.parametrize("what,call", [
    ("shfl.sync", 'T.ptx.shfl_sync("bfly", A[tid], 16)'),
    ("vote.sync", 'T.cast(T.ptx.vote_sync("any", A[tid] > 0), "uint32")'),
])
def test_a_warp_collective_from_part_of_a_warp_is_a_hazard(what, call):
    k = io_kernel((32, "uint32"), (32, "uint32"), 32, "if tid < 16:",
                  f"    B[tid] = {call}  # <-")
    with pytest.raises(tw.HazardError) as info:
        tw.simulate(k, np.zeros(32, np.uint32), np.zeros(32, np.uint32), strict=True)
    assert what in str(info.value) and "# <-" in info.value.span.source_line


def test_shfl_sync_takes_32_bit_values_only():
    with pytest.raises(tw.TilewiseError, match="shuffles move 32-bit values"):
        io_kernel((32, "float16"), (32, "float16"), 32,
                  'B[tid] = T.ptx.shfl_sync("bfly", A[tid], 1)')


@pytest.mark.parametrize("mode,want", [
    ("any", lambda p: p.any()), ("all", lambda p: p.all()),
    ("uni", lambda p: p.all() or not p.any()),
    ("ballot", lambda p: int((p.astype(np.int64) << np.arange(32)).sum())),
])
def test_vote_sync_combines_the_lanes_of_each_warp(mode, want):
    """Warp 0: a predicate true in some lanes; warp 1: in none; warp 2: in all."""
    k = io_kernel((96, "int32"), (96, "uint32"), 96,
                  f'B[tid] = T.cast(T.ptx.vote_sync("{mode}", A[tid] > 0), "uint32")')
    a = np.zeros(96, np.int32)
    a[[1, 5, 30]] = 1
    a[64:] = 1
    out = np.full(96, 0xDEAD, np.uint32)
    tw.simulate(k, a, out)
    for w in range(3):
        p = a[32 * w:32 * w + 32] > 0
        assert (out[32 * w:32 * w + 32] == np.uint32(want(p))).all(), (w, out[32 * w])
    ptx = tw.compile(k, "sm_90a").source("ptx")
    assert f"vote.sync.{mode}" in ptx


def _words(rng, elem, n, lanes=2):
    vals = (rng.standard_normal(n * lanes) * 4).astype(elem)
    vals[:3] = [np.inf, -0.0, np.nan]
    word = np.uint64 if np.dtype(elem).itemsize == 4 else np.uint32
    return vals.view(word), vals.reshape(n, lanes)


PACKED_CASES = [(lanes, elem, op)
                for lanes, elem in [("f16x2", "float16"), ("bf16x2", "bfloat16"),
                                    ("f32x2", "float32")]
                for op in ["add", "sub", "mul", "fma", "min", "max"]
                if not (lanes == "f32x2" and op in ("min", "max"))]  # PTX has no min.f32x2


@pytest.mark.parametrize("lanes,elem,op", PACKED_CASES)
def test_packed_arithmetic_is_two_scalar_operations(lanes, elem, op):
    import ml_dtypes  # noqa: F401  (bfloat16 numpy dtype)

    d = np.dtype(elem if elem != "bfloat16" else ml_dtypes.bfloat16)
    word = "uint64" if lanes == "f32x2" else "uint32"
    rng = np.random.default_rng(1)
    (wa, la), (wb, lb), (wc, lc) = (_words(rng, d, 64) for _ in range(3))
    args = "A[tid], B[tid], C[tid]" if op == "fma" else "A[tid], B[tid]"
    k = tw.from_source(f"""@T.prim_func
def k(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle, D_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64,), "{word}")
    B = T.match_buffer(B_ptr, (64,), "{word}")
    C = T.match_buffer(C_ptr, (64,), "{word}")
    D = T.match_buffer(D_ptr, (64,), "{word}")
    T.device_entry()
    tid = T.thread_id([64])
    D[tid] = T.ptx.{op}.{lanes}({args})
""", filename=FILE)
    out = poison(64, wa.dtype)
    tw.simulate(k, wa, wb, wc, out, target="sm_100a")
    f32 = [x.astype(np.float32) for x in (la, lb, lc)]
    with np.errstate(all="ignore"):
        want = {"add": lambda: f32[0] + f32[1], "sub": lambda: f32[0] - f32[1],
                "mul": lambda: f32[0] * f32[1], "min": lambda: np.fmin(f32[0], f32[1]),
                "max": lambda: np.fmax(f32[0], f32[1]),
                "fma": lambda: numpy_fma(la, lb, lc, d)}[op]()
    want = np.asarray(want).astype(d)
    got = out.view(d).reshape(64, 2)
    nan = np.isnan(want.astype(np.float32))
    assert (np.isnan(got.astype(np.float32)) == nan).all()
    assert (bits(got[~nan]) == bits(want[~nan])).all()


def test_cvt_pack_puts_a_in_the_upper_half():
    k = io_kernel((64, "float32"), (32, "uint32"), 32,
                  "B[tid] = T.ptx.cvt.f16x2.f32(A[2 * tid], A[2 * tid + 1])")
    a = (np.random.default_rng(2).standard_normal(64) * 100).astype(np.float32)
    out = poison(32, np.uint32)
    tw.simulate(k, a, out)
    halves = out.view(np.float16).reshape(32, 2)
    assert (bits(halves[:, 1]) == bits(a[0::2].astype(np.float16))).all()
    assert (bits(halves[:, 0]) == bits(a[1::2].astype(np.float16))).all()


@pytest.mark.parametrize("name,fn,lo,hi", [
    ("ex2", np.exp2, -30.0, 30.0), ("lg2", np.log2, 1e-3, 1e6),
    ("rsqrt", lambda x: 1 / np.sqrt(x), 1e-6, 1e6)])
def test_approx_math_is_within_the_isa_bound(name, fn, lo, hi):
    k = io_kernel((256, "float32"), (256, "float32"), 256,
                  f"B[tid] = T.ptx.{name}.approx(A[tid])")
    a = np.random.default_rng(3).uniform(lo, hi, 256).astype(np.float32)
    out = poison(256, np.float32)
    tw.simulate(k, a, out)
    exact = fn(a.astype(np.float64))
    bound = APPROX[f"ptx.{name}.approx"]
    err = np.abs(out - exact)
    if bound.kind == "rel":
        assert (err <= bound.tol * np.abs(exact)).all()
    else:  # the mantissa's log within the bound, plus the rounding of the whole result
        assert (err <= bound.tol + 2.0 ** -24 * np.abs(exact)).all()


def test_ex2_ftz_flushes_subnormal_inputs_and_results():
    k = io_kernel((8, "float32"), (16, "float32"), 8, "B[tid] = T.ptx.ex2.approx.ftz(A[tid])",
                  "B[8 + tid] = T.ptx.ex2.approx(A[tid])")
    tiny = np.float32(1e-40)  # subnormal
    a = np.array([tiny, -tiny, -130.0, -126.0, -np.inf, 3.0, 0.0, -149.0], np.float32)
    out = poison(16, np.float32)
    tw.simulate(k, a, out)
    np.testing.assert_array_equal(out[:8], [1, 1, 0, 2.0 ** -126, 0, 8, 1, 0])
    assert out[10] == np.float32(2.0 ** -130) and out[15] == np.float32(2.0 ** -149)


def test_approx_math_special_values():
    k = io_kernel((8, "float32"), (24, "float32"), 8, "B[tid] = T.ptx.ex2.approx(A[tid])",
                  "B[8 + tid] = T.ptx.lg2.approx(A[tid])",
                  "B[16 + tid] = T.ptx.rsqrt.approx(A[tid])")
    a = np.array([-np.inf, np.inf, 0.0, -0.0, np.nan, -1.0, 1.0, 4.0], np.float32)
    out = poison(24, np.float32)
    tw.simulate(k, a, out)
    ex2, lg2, rsq = out[:8], out[8:16], out[16:]
    np.testing.assert_array_equal(ex2, [0, np.inf, 1, 1, np.nan, 0.5, 2, 16])
    np.testing.assert_array_equal(lg2, [np.nan, np.inf, -np.inf, -np.inf, np.nan, np.nan, 0, 2])
    np.testing.assert_array_equal(rsq, [np.nan, 0, np.inf, -np.inf, np.nan, np.nan, 1, 0.5])
    assert (out.view(np.uint32)[np.isnan(out)] == 0x7FFFFFFF).all()  # the canonical NaN
