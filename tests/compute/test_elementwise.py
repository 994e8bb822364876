"""Elementwise tile primitives on both executors, against independent numpy references.

Exact operations (add, sub, mul, fdiv, maximum, minimum, fma, sqrt, reciprocal, cast,
select, fill, zero) must match bit for bit: IEEE rounding in the destination's type,
numpy's float16 / bfloat16 arithmetic rounds through float32, which is exact for these
operations (float32 has more than 2p+2 bits). The transcendental ops use approximate
instructions; they are checked at the PTX ISA's bound (ptx/packed.py ``APPROX``) plus the
rounding of the result to its type."""

import numpy as np
import pytest

from ckernels import dispatched, kernel, np_dtype, rand, run, same_bits
from tilewise.ir.alu import numpy_fma
from tilewise.pipeline import lower

ROWS, COLS = 4, 256
LAYOUT = "S[(4, 1, 32, 8):(32@tx, 8, 1@tx, 1)]"  # a row per warp, 8 registers per thread


def reg_kernel(dtype, body, extra=(), out_dtype=None, threads=128):
    """X (and B, a row vector, and Y) in global memory; x, y register tiles of X's shape."""
    od = out_dtype or dtype
    params = [("X", (ROWS, COLS), dtype), ("B", (COLS,), dtype), ("Y", (ROWS, COLS), od),
              *extra]
    lines = [f'xr = T.alloc_local((8,), "{dtype}")',
             f"x = xr.view({ROWS}, {COLS}, layout={LAYOUT})",
             f'yr = T.alloc_local((8,), "{od}")',
             f"y = yr.view({ROWS}, {COLS}, layout={LAYOUT})",
             "Tx.cta.copy(x, X)", *body, "Tx.cta.copy(Y, y)"]
    return kernel(params, lines, threads)


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "fdiv": np.divide,
          "maximum": np.fmax, "minimum": np.fmin}


def _binary_ref(name, a, b, dtype):
    with np.errstate(all="ignore"):
        if np.dtype(a.dtype).kind in "iu":
            return BINARY[name](a, b).astype(a.dtype)
        return BINARY[name](a.astype(np.float32), np.asarray(b).astype(np.float32)).astype(
            a.dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("form", ["row", "scalar"])
def test_binary_with_a_row_vector_or_a_scalar(executor, dtype, name, form):
    src2 = "B" if form == "row" else "2.5"
    k = reg_kernel(dtype, [f"Tx.cta.{name}(y, x, {src2})"])
    x, b = rand((ROWS, COLS), dtype), rand((COLS,), dtype, seed=1)
    y = np.zeros((ROWS, COLS), np_dtype(dtype))
    run(executor, k, [x, b, y])
    want = _binary_ref(name, x, b if form == "row" else np.asarray(2.5, np_dtype(dtype)),
                       dtype)
    assert same_bits(y, want)


@pytest.mark.parametrize("dtype,target,packed", [
    ("float16", "sm_90a", "ptx.add.f16x2"), ("bfloat16", "sm_90a", "ptx.add.bf16x2"),
    ("float32", "sm_100a", "ptx.add.f32x2"), ("float32", "sm_90a", None)])
def test_register_pairs_use_the_packed_instructions(dtype, target, packed):
    k = reg_kernel(dtype, ["Tx.cta.add(y, x, x)", "Tx.cta.mul(y, y, 0.5)"])
    log = lower(k, target).dispatch_log
    info = " ".join(log[1].info)
    if packed is None:
        assert "packed" not in info  # no f32x2 before sm_100
    else:
        assert f"4 packed {packed} instructions" in info
    x = rand((ROWS, COLS), dtype)
    y = np.zeros_like(x)
    run("sim", k, [x, rand((COLS,), dtype), y], target)
    f = x.astype(np.float32)
    assert same_bits(y, ((f + f).astype(x.dtype).astype(np.float32) * np.float32(0.5)
                         ).astype(x.dtype))


def test_integer_ops_wrap_as_the_arithmetic_table_says(executor):
    k = reg_kernel("int32", ["Tx.cta.mul(y, x, 1 << 30)", "Tx.cta.add(y, y, B)",
                             "Tx.cta.maximum(y, y, -7)"])
    x, b = rand((ROWS, COLS), "int32"), rand((COLS,), "int32", seed=2)
    y = np.zeros_like(x)
    run(executor, k, [x, b, y])
    with np.errstate(all="ignore"):
        assert same_bits(y, np.maximum((x * np.int32(1 << 30)) + b, -7).astype(np.int32))


def test_run_time_scalar_operand(executor):
    k = reg_kernel("float32", ["s = B[3]", "Tx.cta.fma(y, x, s, B)"])
    x, b = rand((ROWS, COLS), "float32"), rand((COLS,), "float32", seed=3)
    y = np.zeros_like(x)
    run(executor, k, [x, b, y])
    assert same_bits(y, numpy_fma(x, np.broadcast_to(b[3], x.shape), np.broadcast_to(
        b, x.shape), np.dtype(np.float32)))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_fma_rounds_once(executor, dtype):
    from fractions import Fraction

    k = reg_kernel(dtype, ["Tx.cta.fma(y, x, B, 0.75)"])
    x, b = rand((ROWS, COLS), dtype), rand((COLS,), dtype, seed=4)
    y = np.zeros_like(x)
    run(executor, k, [x, b, y])
    for i, j in [(0, 0), (1, 7), (3, 255), (2, 100)]:
        exact = Fraction(float(x[i, j])) * Fraction(float(b[j])) + Fraction(0.75)
        got = Fraction(float(y[i, j]))
        step = abs(float(np.nextafter(np.float32(float(y[i, j])), np.float32(np.inf))
                         ) - float(y[i, j])) if dtype == "float32" else 2.0 ** -7
        assert abs(got - exact) <= step  # within an ulp; bit-exact below
    assert same_bits(y, numpy_fma(x, np.broadcast_to(b, x.shape), np.asarray(0.75, x.dtype),
                                  np.dtype(np_dtype(dtype))))


CASTS = [("float32", "float16"), ("float32", "bfloat16"), ("float16", "float32"),
         ("bfloat16", "float32"), ("float32", "int32"), ("int32", "float32"),
         ("float16", "bfloat16")]


@pytest.mark.parametrize("src,dst", CASTS)
def test_cast(executor, src, dst):
    k = reg_kernel(src, ["Tx.cta.cast(y, x)"], out_dtype=dst)
    x = rand((ROWS, COLS), src, scale=1e4 if dst == "int32" else 3.0)
    if np.dtype(x.dtype).kind == "f":
        x.reshape(-1)[:3] = [np.inf, -np.inf, np.nan]
    y = np.zeros((ROWS, COLS), np_dtype(dst))
    run(executor, k, [x, rand((COLS,), src), y])
    from tilewise.ir import dtype as dt
    from tilewise.ir.alu import numpy_cast

    assert same_bits(y, numpy_cast(x, dt.dtype(src), dt.dtype(dst)))
    if (src, dst) in (("float32", "float16"), ("float32", "bfloat16")):
        assert "packed" in " ".join(lower(k, "sm_90a").dispatch_log[1].info)


def test_select_fill_zero(executor):
    k = reg_kernel("float32", [
        'pr = T.alloc_local((8,), "bool")', f"p = pr.view({ROWS}, {COLS}, layout={LAYOUT})",
        "Tx.cta.copy(p, P)", "Tx.cta.fill(y, 1.5)", "Tx.cta.select(y, x, y, p)",
        'zr = T.alloc_local((8,), "float32")', f"z = zr.view({ROWS}, {COLS}, layout={LAYOUT})",
        "Tx.cta.zero(z)", "Tx.cta.add(y, y, z)"], extra=[("P", (ROWS, COLS), "bool")])
    x = rand((ROWS, COLS), "float32")
    p = rand((ROWS, COLS), "int32") > 0
    y = np.zeros_like(x)
    run(executor, k, [x, rand((COLS,), "float32"), y, p])
    assert same_bits(y, np.where(p, x, np.float32(1.5)) + np.float32(0))


EXACT_UNARY = {"sqrt": np.sqrt, "reciprocal": lambda v: 1 / v}
APPROX_UNARY = {"exp": (np.exp, "rel"), "exp2": (np.exp2, "rel"), "log2": (np.log2, "abs"),
                "rsqrt": (lambda v: 1 / np.sqrt(v), "rel"),
                "silu": (lambda v: v / (1 + np.exp(-v)), "rel")}


@pytest.mark.parametrize("name", sorted(EXACT_UNARY))
def test_exact_unary_math(executor, name):
    k = reg_kernel("float32", [f"Tx.cta.{name}(y, x, scale=2.0, bias=B)"])
    x, b = np.abs(rand((ROWS, COLS), "float32")), np.abs(rand((COLS,), "float32", seed=5))
    y = np.zeros_like(x)
    run(executor, k, [x, b, y])
    assert same_bits(y, EXACT_UNARY[name]((x * np.float32(2.0)) + b).astype(np.float32))


@pytest.mark.parametrize("name", sorted(APPROX_UNARY))
@pytest.mark.parametrize("precise", [False, True])
def test_transcendental_math_within_the_bound(executor, name, precise):
    """Approximate instructions by default (the ISA's bound: ex2 2^-22.5 relative, lg2
    2^-22.6 absolute, rsqrt 2^-22.9 relative; exp and silu first scale by log2(e), whose
    float32 rounding adds up to |x log2(e)| 2^-24 relative), libdevice with precise=True
    (a few ulps). Tolerance: 2^-19 relative (plus 2^-22 absolute for log2)."""
    fn, kind = APPROX_UNARY[name]
    opt = ", precise=True" if precise else ""
    k = reg_kernel("float32", [f"Tx.cta.{name}(y, x{opt})"])
    x = rand((ROWS, COLS), "float32", scale=2.0)
    if name in ("log2", "rsqrt"):
        x = np.abs(x) + np.float32(0.01)
    y = np.zeros_like(x)
    run(executor, k, [x, rand((COLS,), "float32"), y])
    want = fn(x.astype(np.float64))
    err = np.abs(y - want)
    bound = 2.0 ** -19 * np.abs(want) + (2.0 ** -22 if kind == "abs" else 0)
    assert (err <= bound).all(), float((err / np.maximum(bound, 1e-30)).max())
    lowered = lower(k, "sm_90a").func.script()
    approx = {"log2": "lg2", "rsqrt": "rsqrt"}.get(name, "ex2")
    assert (f"T.ptx.{approx}.approx(" in lowered) != precise


@pytest.mark.parametrize("name", ["exp", "exp2"])
def test_ftz_takes_the_flushing_instruction(executor, name):
    """ftz=True: ex2.approx.ftz.f32, within the same bound; results below 2^-126 are 0. (The
    float32 rounding of the scaled argument adds |argument| 2^-24 relative, twice for exp.)"""
    fn = APPROX_UNARY[name][0]
    scale = 20.0 if name == "exp" else 30.0  # arguments -100..50 / -150..75: no overflow
    k = reg_kernel("float32", [f"Tx.cta.{name}(y, x, scale={scale}, ftz=True)"])
    x = np.linspace(-5.0, 2.5, ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS)
    y = np.zeros_like(x)
    run(executor, k, [x, rand((COLS,), "float32"), y])
    arg = (x * np.float32(scale)).astype(np.float64)
    want = fn(arg)
    want = np.where(want < 2.0 ** -126, 0.0, want)
    assert (np.abs(y - want) <= (2.0 ** -21 + 2.0 ** -22 * np.abs(arg)) * np.abs(want)).all()
    assert (want == 0).any()  # some results were flushed
    assert "T.ptx.ex2.approx.ftz(" in lower(k, "sm_90a").func.script()


def test_ftz_is_an_option_of_exp_and_exp2_only():
    from tilewise.errors import ScriptError

    with pytest.raises(ScriptError, match=r"log2 has no option 'ftz'") as e:
        reg_kernel("float32", ["Tx.cta.log2(y, x, ftz=True)"])
    assert "Tx.cta.log2(y, x, ftz=True)" in str(e.value)
    with pytest.raises(ScriptError, match="not of exp2 with precise=True"):
        reg_kernel("float32", ["Tx.cta.exp2(y, x, ftz=True, precise=True)"])


def test_half_precision_math_computes_in_float32(executor):
    k = reg_kernel("float16", ["Tx.cta.exp(y, x, scale=0.5)"])
    x = rand((ROWS, COLS), "float16", scale=2.0)
    y = np.zeros_like(x)
    run(executor, k, [x, rand((COLS,), "float16"), y])
    want = np.exp((x * np.float16(0.5)).astype(np.float64))
    ulp = np.abs(np.spacing(want.astype(np.float16)).astype(np.float64))
    assert (np.abs(y.astype(np.float64) - want) <= ulp).all()  # one rounding, + ex2's bound


def test_in_place_without_a_source():
    k = reg_kernel("float32", ["Tx.cta.exp2(x)", "Tx.cta.copy(Y, x)"])
    assert "Tx.cta.exp2(x[0:4, 0:256], x[0:4, 0:256])" in k.script()


# ---------------------------------------------------------------------------- memory
def test_shared_and_global_tiles_split_over_the_threads(executor):
    k = kernel([("X", (ROWS, COLS), "float16"), ("B", (ROWS, 1), "float32"),
                ("Y", (ROWS, COLS), "float16")], [
        'S = T.alloc_shared((4, 256), "float32")', "Tx.cta.cast(S, X)",
        "Tx.cta.mul(S, S, B)", "Tx.cta.add(S, S, 1.0)", "Tx.cta.cast(Y, S)"], threads=96)
    x, b = rand((ROWS, COLS), "float16"), rand((ROWS, 1), "float32", seed=6)
    y = np.zeros_like(x)
    run(executor, k, [x, b, y])
    assert same_bits(y, (x.astype(np.float32) * b + np.float32(1)).astype(np.float16))
    assert dispatched(k) == ["mem"] * 4


def test_thread_scope_local_arrays(executor):
    k = kernel([("X", (128, 8), "float32"), ("Y", (128, 8), "float32")], [
        'a = T.alloc_local((8,), "float32")',
        "for i in T.static_range(8):", "    a[i] = X[tid, i]",
        "Tx.thread.sqrt(a, a, bias=1.0)", "Tx.thread.maximum(a, a, 1.25)",
        "for i in T.static_range(8):", "    Y[tid, i] = a[i]"])
    x = np.abs(rand((128, 8), "float32"))
    y = np.zeros_like(x)
    run(executor, k, [x, y])
    assert same_bits(y, np.fmax(np.sqrt(x + np.float32(1)), np.float32(1.25)))
    assert ".local" not in __import__("tilewise").compile(k, "sm_90a").source("ptx")
