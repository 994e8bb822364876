"""The compute examples (softmax, RMSNorm, the GEMM epilogue) in the simulator against
float64 references (random data, outputs poisoned with NaN), for every kind of width, and
what their PTX must hold for the bandwidth targets on the H200: 16-byte vector loads and
stores (scalar ones where the width is odd), reductions by shuffles (and shared memory
across warps), the approximate instructions, packed conversions, no local memory and no
spills (nvJitLink's report, on this CPU machine), up to rows of 262144."""

import numpy as np
import pytest

import tilewise as tw
from ckernels import np_dtype
from exload import load_example as example
from tilewise.pipeline import lower


def close(got, want, rtol, atol) -> bool:
    g, w = got.astype(np.float64), want.astype(np.float64)
    return bool((np.abs(g - w) <= rtol * np.abs(w) + atol).all())


# bfloat16 rounds to 2^-8: its tolerance is 2^-7 relative
RTOL = {"float16": 2.0 ** -9, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -18}


# every kind of row: powers of two, odd widths (vectors of 1 element), partial tiles (3000
# over 128 x 3 x 8), tiny rows (several per thread), one row, one column, and chunked rows
# (forced at small widths with chunk=: the online max/sum and the second pass)
ROWS = [(16, 1024, "float16", {}), (2, 8192, "bfloat16", {}), (6, 96, "float32", {}),
        (3, 1000, "bfloat16", {}), (3, 3000, "float16", {}), (1, 5120, "float16", {}),
        (5, 7, "float16", {}), (1, 1, "bfloat16", {}), (9, 64, "float16", {}),
        (2, 1001, "float16", {}), (2, 1000, "float16", {"chunk": 256}),
        (2, 777, "float32", {"chunk": 100, "threads": 16}),
        (1, 2049, "bfloat16", {"chunk": 512}),
        # rows split over a cluster (forced with ctas=): an even split, a last CTA whose
        # part is partial (3000 over 4 x 32 x 3 x 8), an odd width (scalar loads) over 8 ...
        (3, 4096, "float16", {"ctas": 4}), (2, 3000, "bfloat16", {"ctas": 4, "threads": 32}),
        (2, 8001, "float32", {"ctas": 8}),
        # ... and each CTA walking its part in chunks (the plan for the longest rows)
        (2, 3000, "float16", {"ctas": 2, "chunk": 512}),
        (3, 1001, "bfloat16", {"ctas": 4, "chunk": 64, "threads": 32}),
        # ... over 16 CTAs (a non-portable cluster: the longest rows' tuner candidate)
        (2, 8000, "bfloat16", {"ctas": 16, "chunk": 64, "threads": 32}),
        (2, 8000, "float32", {"ctas": 16, "chunk": 64, "threads": 32})]
IDS = [f"{r}x{c}-{d}" + ("-chunked" if kw.get("chunk") else "")
       + (f"-split{kw['ctas']}" if kw.get("ctas") else "") for r, c, d, kw in ROWS]


@pytest.mark.parametrize("rows,cols,dtype,kw", ROWS, ids=IDS)
def test_softmax(rows, cols, dtype, kw):
    ex = example("softmax")
    x, y = ex.inputs(np.random.default_rng(1), (rows, cols), np_dtype(dtype))
    y[...] = np.nan
    tw.simulate(ex.softmax_kernel(rows, cols, dtype, **kw), x, y, strict=True)
    assert close(y, ex.reference(x, y)[1], RTOL[dtype], ex.ATOL)


@pytest.mark.parametrize("rows,cols,dtype,kw", ROWS, ids=IDS)
def test_rmsnorm(rows, cols, dtype, kw):
    ex = example("rmsnorm")
    x, w, y = ex.inputs(np.random.default_rng(2), (rows, cols), np_dtype(dtype))
    y[...] = np.nan
    tw.simulate(ex.rmsnorm_kernel(rows, cols, dtype, **kw), x, w, y, strict=True)
    assert close(y, ex.reference(x, w, y)[2], RTOL[dtype], ex.ATOL)


@pytest.mark.parametrize("rows,cols,dtype,kw", [
    (2, 3000, "float16", {"ctas": 2, "chunk": 512}),  # 3 chunks a part, the last partial
    (3, 1001, "bfloat16", {"ctas": 4, "chunk": 64, "threads": 32}),
    (2, 8000, "float32", {"ctas": 16, "chunk": 64, "threads": 32}),
    (1, 2049, "bfloat16", {"chunk": 512}),  # one CTA a row: pass 2 from global memory
    (2, 1000, "float16", {"chunk": 512})])  # two chunks: one prefetch
def test_rmsnorm_with_the_weights_prefetched(rows, cols, dtype, kw):
    """prefetch=True (a tuner candidate for the longest rows): pass 2 reads each chunk's
    weights one chunk ahead, the first during the exchange."""
    ex = example("rmsnorm")
    x, w, y = ex.inputs(np.random.default_rng(2), (rows, cols), np_dtype(dtype))
    y[...] = np.nan
    tw.simulate(ex.rmsnorm_kernel(rows, cols, dtype, **kw, prefetch=True), x, w, y,
                strict=True)
    assert close(y, ex.reference(x, w, y)[2], RTOL[dtype], ex.ATOL)


def test_rmsnorm_tunes_the_prefetch_only_on_rows_of_four_chunks_a_part_or_more():
    ex = example("rmsnorm")
    long = ex.configs(256, 262144, "bfloat16")
    assert long[0] == {} and {c.get("ctas") for c in long if c.get("prefetch")} == {8, 16}
    assert all(c.get("chunk") for c in long if c.get("prefetch"))
    for cols in (4096, 65536, 128256):
        assert not any(c.get("prefetch") for c in ex.configs(256, cols, "bfloat16")), cols


@pytest.mark.parametrize("rows,cols,dtype", [
    (3, 130, "float16"), (5, 1000, "bfloat16"), (2, 3000, "float32"), (1, 7, "float16"),
    (3, 5120, "bfloat16"), (1, 9000, "float16")])
def test_the_backward_row_kernels_take_any_width_and_row_count(rows, cols, dtype):
    """softmax / RMSNorm backward (the torch ops' gradients) at widths their threads'
    vectors do not divide and row counts their CTAs do not divide: partial tiles, the
    padding read as 0 (these widths had been script errors inside the examples)."""
    sb, rb = example("softmax_backward"), example("rmsnorm_backward")
    rng = np.random.default_rng(4)
    a = sb.inputs(rng, (rows, cols), np_dtype(dtype))
    tw.simulate(sb.make_softmax_backward(rows, cols, dtype), *a, strict=True)
    assert close(a[2], sb.reference(*a)[2], 2.0 ** -6, 2.0 ** -10)
    b = rb.inputs(rng, (rows, cols), np_dtype(dtype))
    tw.simulate(rb.make_rmsnorm_backward(rows, cols, dtype), *b, strict=True)
    want = rb.reference(*b)
    assert close(b[3], want[3], 2.0 ** -6, 2.0 ** -8)
    assert close(b[4], want[4], 1e-5, 0.0)


@pytest.mark.parametrize("rows,cols,dtype,chunk", [
    (3, 3000, "float16", 1024), (2, 1000, "bfloat16", 256), (3, 77, "float32", 32),
    (2, 17000, "bfloat16", None)])
def test_the_backward_row_kernels_walk_long_rows_in_chunks(rows, cols, dtype, chunk):
    """Rows longer than the registers hold (17000 halves; or forced with ``chunk=``) are
    walked in chunks twice, the last chunk partial (these widths had been refused: "do not
    fit the 48 KB of shared memory")."""
    sb, rb = example("softmax_backward"), example("rmsnorm_backward")
    rng = np.random.default_rng(5)
    k = sb.make_softmax_backward(rows, cols, dtype, chunk=chunk, split=False)
    assert k.name == "softmax_backward_chunked"
    a = sb.inputs(rng, (rows, cols), np_dtype(dtype))
    tw.simulate(k, *a, strict=True)
    assert close(a[2], sb.reference(*a)[2], 2.0 ** -6, 2.0 ** -10)
    k = rb.make_rmsnorm_backward(rows, cols, dtype, chunk=chunk)
    assert k.name == "rmsnorm_backward_chunked"
    b = rb.inputs(rng, (rows, cols), np_dtype(dtype))
    tw.simulate(k, *b, strict=True)
    want = rb.reference(*b)
    assert close(b[3], want[3], 2.0 ** -6, 2.0 ** -8)
    assert close(b[4], want[4], 1e-5, 0.0)


@pytest.mark.parametrize("rows,cols,dtype,ctas", [
    (2, 17000, "bfloat16", 2), (3, 50264, "float16", 4), (1, 128256, "bfloat16", 8),
    (1, 300000, "bfloat16", None), (3, 50257, "float16", None)])
def test_the_softmax_backward_splits_a_long_row_over_a_cluster(rows, cols, dtype, ctas):
    """A row longer than one CTA's registers goes over the fewest CTAs of a cluster that
    hold it in one pass (their sums added through distributed shared memory), the last
    part partial; past 16 CTAs' registers, or at an odd width (2-byte vectors), one CTA
    walks it in chunks."""
    sb = example("softmax_backward")
    k = sb.make_softmax_backward(rows, cols, dtype)
    if ctas:
        assert sb.split_tiling(rows, cols, dtype).ctas == ctas
    assert k.name == ("softmax_backward_split" if ctas else "softmax_backward_chunked")
    a = sb.inputs(np.random.default_rng(9), (rows, cols), np_dtype(dtype))
    tw.simulate(k, *a, strict=True)
    assert close(a[2], sb.reference(*a)[2], 2.0 ** -6, 2.0 ** -10)


@pytest.mark.parametrize("rows,cols,dtype", [
    (16, 2048, "float16"), (300, 1000, "bfloat16"), (37, 300, "bfloat16"), (5, 77, "float32"),
    (1, 4097, "bfloat16")])
def test_the_weight_gradient_adds_slices_of_rows_in_order(rows, cols, dtype):
    """dW = sum over rows of dY * X * r, the rows cut into slices (several at 300 and 37
    rows, the last one partial), each slice's sum in a float32 workspace poisoned with NaN,
    then the slices added; widths whose 256-column tiles are partial, narrower vectors at
    odd widths."""
    rb = example("rmsnorm_backward")
    t, slices, per = rb.weight_grad_plan(rows, cols, np.dtype(np_dtype(dtype)).itemsize)
    assert per % t.rows == 0 and (slices - 1) * per < rows <= slices * per
    if rows >= 300:
        assert slices > 1
    rng = np.random.default_rng(6)
    x, _, dy, _, _ = rb.inputs(rng, (rows, cols), np_dtype(dtype))
    r = rb.rstd(x).astype(np.float32)
    dw = np.full((cols,), np.nan, np_dtype(dtype))
    tw.simulate(rb.make_rmsnorm_weight_grad(rows, cols, dtype), x, dy, r, dw, strict=True)
    want = (dy.astype(np.float64) * x.astype(np.float64) * r).sum(axis=0)
    assert close(dw, want.astype(dw.dtype), RTOL[dtype], 1e-3)


@pytest.mark.parametrize("rows,cols,dtype,sms,prefetch", [
    (64, 2048, "float16", 1, False), (64, 2048, "float16", 1, True),
    (37, 500, "bfloat16", 1, False), (70, 77, "float32", 2, True)])
def test_the_fused_rmsnorm_backward_gives_dx_and_dw_from_one_pass(rows, cols, dtype, sms,
                                                                  prefetch):
    """Each CTA adds dY * X * r of its row blocks (the last one partial) into its row of
    P (its row groups added in shared memory); the sum kernel adds P's rows. With
    ``prefetch`` each block's loads are issued during the block before."""
    rb = example("rmsnorm_backward")
    t, blocks, ctas = rb.fused_plan(rows, cols, dtype, num_sms=sms)
    assert blocks * t.rows >= rb.FUSED_MIN_ROWS and ctas > 1
    rng = np.random.default_rng(7)
    x, w, dy, dx, _ = rb.inputs(rng, (rows, cols), np_dtype(dtype))
    P = np.full((ctas, cols), np.nan, np.float32)
    tw.simulate(rb.make_rmsnorm_backward_fused(rows, cols, dtype, num_sms=sms,
                                               prefetch=prefetch), x, w, dy, dx, P,
                strict=True)
    dw = np.full((cols,), np.nan, np_dtype(dtype))
    tw.simulate(rb.make_rmsnorm_weight_sum(ctas, cols, dtype), P, dw, strict=True)
    want = rb.reference(x, w, dy, dx, None)
    assert close(dx, want[3], 2.0 ** -6, 2.0 ** -8)
    wdw = (dy.astype(np.float64) * x.astype(np.float64) * rb.rstd(x)).sum(axis=0)
    assert close(dw, wdw.astype(dw.dtype), RTOL[dtype], 1e-3)


def test_the_rmsnorm_grads_take_the_fused_form_where_it_pays():
    rb = example("rmsnorm_backward")
    assert rb.make_rmsnorm_grads(16384, 4096, "bfloat16").fused
    assert not rb.make_rmsnorm_grads(256, 4096, "bfloat16").fused  # few rows a CTA
    assert not rb.make_rmsnorm_grads(16384, 50257, "bfloat16").fused  # chunked
    assert not rb.make_rmsnorm_grads(16384, 5120, "bfloat16").fused  # 24 elements a thread
    with pytest.raises(tw.TilewiseError, match="fused RMSNorm backward"):
        rb.make_rmsnorm_backward_fused(16384, 50257, "bfloat16")
    rng = np.random.default_rng(8)
    x, w, dy, dx, _ = rb.inputs(rng, (3, 9000), np.float16)
    dw = np.full((9000,), np.nan, np.float16)
    tw.simulate(rb.make_rmsnorm_grads(3, 9000, "float16"), x, w, dy, dx, dw)
    assert close(dx, rb.reference(x, w, dy, dx, None)[3], 2.0 ** -6, 2.0 ** -8)
    wdw = (dy.astype(np.float64) * x.astype(np.float64) * rb.rstd(x)).sum(axis=0)
    assert close(dw, wdw.astype(dw.dtype), RTOL["float16"], 1e-3)


def test_the_factories_are_tuned_kernels_that_simulate_their_plan():
    """make_softmax / make_rmsnorm return tilewise.autotune kernels; tw.simulate runs the
    planned (first) configuration, and nothing warns of a slow path."""
    import warnings

    ex = example("softmax")
    k = ex.make_softmax(3, 3000, "float16")
    assert k.configs[0] == {} and len(k.configs) > 1
    x, y = ex.inputs(np.random.default_rng(3), (3, 3000), np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tw.TilewisePerformanceWarning)
        tw.simulate(k, x, y, strict=True)
    assert close(y, ex.reference(x, y)[1], RTOL["float16"], ex.ATOL)
    r = example("rmsnorm").make_rmsnorm(3, 3000, "float16")
    assert r.heuristic().name == "rmsnorm"


@pytest.mark.parametrize("n", [64, 96])
def test_gemm_epilogue_on_the_wgmma_fragment(n):
    ex = example("gemm_epilogue")
    acc, b, c = ex.inputs(np.random.default_rng(3), (128, n))
    k = ex.make_epilogue(128, n)
    tw.simulate(k, acc, b, c, strict=True)
    assert close(c, ex.reference(acc, b, c)[2], ex.RTOL, ex.ATOL)
    log = lower(k, "sm_90a").dispatch_log
    assert [d.chosen for d in log] == ["reg"] * 5
    assert f"{n // 4} packed ptx.cvt.bf16x2.f32" in " ".join(log[3].info)


def _ptxas_report(ptx: str, arch: str = "sm_90a") -> str:
    from cuda.bindings import nvjitlink

    h = nvjitlink.create(3, [f"-arch={arch}", "-O3", "-verbose"])
    try:
        data = ptx.encode()
        nvjitlink.add_data(h, nvjitlink.InputType.PTX, data, len(data), "k")
        nvjitlink.complete(h)
        buf = bytearray(nvjitlink.get_info_log_size(h))
        nvjitlink.get_info_log(h, buf)
        return bytes(buf).decode(errors="replace")
    finally:
        nvjitlink.destroy(h)


PTX_CASES = [
    ("softmax", (8192, 8192, "float16"), {"ld.global.v4.b32": 4, "st.global.v4.b32": 4,
                                         "shfl.sync.bfly.b32": 10, "ex2.approx.f32": 32,
                                         "cvt.rn.f16x2.f32": 16, "bar.sync": 2},
     ["smem", "smem"]),
    ("softmax", (32768, 1024, "bfloat16"), {"ld.global.v4.b32": 4, "st.global.v4.b32": 4,
                                           "shfl.sync.bfly.b32": 10, "cvt.rn.bf16x2.f32": 16,
                                           "bar.sync": 0}, ["warp", "warp"]),
    # rows too long for one CTA: split over a cluster, each CTA walking its part in chunks,
    # read from global memory once (kept in shared memory for the second pass), the parts'
    # max and sum handed to the others by st.shared::cluster
    ("softmax", (64, 262144, "bfloat16"), {"ld.global.v4.b32": 4, "st.shared.v4.b32": 4,
                                          "st.global.v4.b32": 4, "st.shared::cluster.b32": 2,
                                          "bar.sync": 2}, ["thread", "thread", "smem", "smem"]),
    ("softmax", (64, 50257, "float16"), {"ld.global.v4.b32": 0, "ld.global.b16": 25,
                                        "ld.shared.b16": 25},
     ["thread", "thread", "smem", "smem"]),
    ("softmax", (64, 32000, "float16", None, None, None, 8), {"ld.global.v4.b32": 4,
                                                              "st.global.v4.b32": 4,
                                                              "st.shared::cluster.b32": 2},
     ["smem", "smem"]),  # one pass over 8 CTAs (a tuner candidate): read once
    ("rmsnorm", (16384, 4096, "float16"), {"ld.global.v4.b32": 8, "st.global.v4.b32": 4,
                                          "rsqrt.approx.f32": 1, "bar.sync": 1}, ["smem"]),
    ("rmsnorm", (64, 128256, "float16"), {"ld.global.v4.b32": 8, "st.shared.v4.b32": 4,
                                         "st.global.v4.b32": 4, "st.shared::cluster.b32": 1,
                                         "bar.sync": 1}, ["thread", "smem"]),  # X, then W
    ("rmsnorm", (64, 131072, "float16", 1e-6, None, None, None, 8),
     {"ld.global.v4.b32": 8, "st.global.v4.b32": 4, "st.shared::cluster.b32": 1},
     ["smem"]),  # one pass over 8 CTAs
]


@pytest.mark.parametrize("name,args,counts,reductions", PTX_CASES,
                         ids=[f"{c[0]}-{c[1][1]}" for c in PTX_CASES])
def test_bandwidth_kernels_compile_to_vectors_and_registers(name, args, counts, reductions):
    ex = example(name)
    func = getattr(ex, f"{name}_kernel")(*args)
    log = lower(func, "sm_90a").dispatch_log
    assert [d.chosen for d in log if d.call.split("(")[0].endswith((".max", ".sum"))] \
        == reductions
    ptx = tw.compile(func, "sm_90a").source("ptx")
    for instr, n in counts.items():
        assert ptx.count(instr + " ") + ptx.count(instr + "\t") == n, instr
    assert ".local" not in ptx
    report = _ptxas_report(ptx)
    assert "0 bytes spill stores" in report and "0 bytes lmem" in report, report
