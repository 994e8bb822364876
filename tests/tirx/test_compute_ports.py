"""TIRx's per-thread register-array tests (compute_ports.py) in the simulator, against
numpy at TIRx's tolerances (GPU runs: marked ``gpu``). They needed copies between memory
and a plain ``T.alloc_local`` array (the thread_regs copy variant), unary ops from one
float dtype into another (sqrt from float32 into float16), ``Tx.zero(dst, src)`` and the
positional ``bias, scale`` of the unary math ops."""

import warnings

import numpy as np
import pytest

import tilewise as tw
import compute_ports as C
from copy_ports import copy_g2l_l2g

CASES = {
    **{f"local-thread-wise-{op}": (C.unary_local_thread_wise, (op,))
       for op in ("zero", "sqrt", "reciprocal", "exp", "silu")},
    **{f"vectorized-{st}-{'x'.join(map(str, sh))}": (C.unary_vectorized, (sh, st))
       for sh in ((128, 8), (128, 4, 16), (128, 5, 5)) for st in ("local", "shared")},
    **{f"shared-{case}-{op}-{s}-{d}": (C.unary_shared, (case, op, s, d))
       for case in ("basic", "offset") for op in ("zero", "sqrt")
       for s, d in (("float16", "float16"), ("float32", "float16"), ("float32", "bfloat16"))},
    **{f"shared-bias-{b}-{op}-{s}-{d}": (C.unary_shared, ("offset", op, s, d, b))
       for b in ("const", "region") for op in ("sqrt", "exp")
       for s, d in (("float16", "float16"), ("float32", "float16"))},
    "per-thread-swizzled-shared": (C.copy_per_thread_swizzled_shared, ()),
    "local-scalar-regions": (C.copy_local_scalar_regions, ()),
    "per-thread-shared-roundtrip": (C.copy_per_thread_shared_roundtrip, ()),
}


def _check(make, args, run):
    kernel, arrays, reference, atol = make(*args)
    got = arrays(np.random.default_rng(0))
    want = reference(*[a.copy() for a in got])
    run(kernel, got)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), atol=atol,
                                   rtol=1e-2 if atol else 0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_port_in_the_simulator(name):
    make, args = CASES[name]
    _check(make, args, lambda k, arrays: tw.simulate(k, *arrays).ok or pytest.fail("hazards"))


@pytest.mark.parametrize("dtype", ["int8", "float8_e4m3fn", "float8_e5m2", "float16",
                                   "bfloat16", "float32"])
def test_copy_g2l_l2g_through_a_per_thread_array(dtype):
    kernel, arrays, reference = copy_g2l_l2g(dtype)
    got = arrays(np.random.default_rng(0))
    want = reference(*[a.copy() for a in got])
    with warnings.catch_warnings():  # two CTAs store the same bytes: a benign race
        warnings.simplefilter("ignore", tw.SimulationWarning)
        assert tw.simulate(kernel, *got).ok
    assert all(g.tobytes() == w.tobytes() for g, w in zip(got, want))


def test_a_per_thread_row_is_moved_in_16_byte_vectors():
    from tilewise.pipeline import lower

    kernel, *_ = C.unary_local_thread_wise("sqrt")
    log = lower(kernel, "sm_90a").dispatch_log
    copies = [d for d in log if d.chosen == "thread_regs"]
    assert len(copies) == 2 and all("vectors of 16 bytes" in d.info[0] for d in copies)
    ptx = tw.compile(kernel, "sm_90a").source("ptx")
    assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["local-thread-wise-exp", "vectorized-local-128x4x16",
                                  "shared-offset-sqrt-float32-float16",
                                  "shared-bias-region-exp-float32-float16",
                                  "per-thread-swizzled-shared"])
def test_port_on_the_gpu(name):
    from tilewise.runner import _run_gpu
    from tilewise.runtime import device_target

    make, args = CASES[name]
    _check(make, args, lambda k, arrays: _run_gpu(k, arrays, str(device_target())))
