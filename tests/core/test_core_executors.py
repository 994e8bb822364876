"""The language core on both executors: every kernel runs in the simulator and (marked
``gpu``) on the GPU, on random data, against an independent numpy/Python reference; where
the GPU runs, both executors must leave identical bytes."""

import numpy as np
import pytest

import kernels_core as K
from executors import run
from tilewise.runner import compare


CASES = [
    ("row-sum-f32", lambda: K.make_row_sum("float32"), lambda r: K.row_sum_inputs(r, "float32"),
     K.row_sum_reference),
    ("row-sum-f16", lambda: K.make_row_sum("float16"), lambda r: K.row_sum_inputs(r, "float16"),
     K.row_sum_reference),
    ("branch-assign", lambda: K.branch_assign, K.branch_assign_inputs, K.branch_assign_reference),
    ("collatz-while-break", lambda: K.collatz, K.collatz_inputs, K.collatz_reference),
    ("skip-and-stop", lambda: K.skip_and_stop, K.skip_and_stop_inputs,
     K.skip_and_stop_reference),
    ("carried-pair", lambda: K.carried_pair, K.carried_pair_inputs, K.carried_pair_reference),
    ("range-step", lambda: K.stepped, K.stepped_inputs, K.stepped_reference),
    ("scalars", lambda: K.scalars, K.scalars_args, K.scalars_reference),
    ("scalars-flag-off", lambda: K.scalars, lambda r: K.scalars_args(r, flag=False),
     K.scalars_reference),
    ("int-edges", lambda: K.int_edges, K.int_edges_inputs, K.int_edges_reference),
    ("float-edges", lambda: K.float_edges, K.float_edges_inputs, K.float_edges_reference),
]
for m in (1, 127, 128, 1000, 4099):
    CASES.append((f"axpy-symbolic-{m}", lambda: K.axpy, lambda r, m=m: K.axpy_args(r, m),
                  K.axpy_reference))
for rows, cols, ld in ((3, 5, 8), (17, 40, 64), (64, 100, 100)):
    CASES.append((f"strided-{rows}x{cols}-ld{ld}", lambda: K.strided_transpose,
                  lambda r, a=(rows, cols, ld): K.strided_args(r, *a), K.strided_reference))
for m, dtype in ((32, "float16"), (45, "float16"), (100, "bfloat16"), (7, "float32")):
    CASES.append((f"tile-copy-symbolic-{dtype}-{m}", lambda d=dtype: K.make_tile_copy(d),
                  lambda r, m=m, d=dtype: K.tile_copy_args(r, m, d), K.tile_copy_reference))


def _arrays(args):
    return [a for a in args if isinstance(a, np.ndarray)]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_the_reference(executor, case):
    _, make, inputs, reference = case
    args = inputs(np.random.default_rng(7))
    want = reference(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    run(executor, make(), args)
    assert compare(_arrays(args), _arrays(want)) == []


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_sim_and_gpu_leave_identical_bytes(case):
    _, make, inputs, _ = case
    a = inputs(np.random.default_rng(3))
    b = [x.copy() if isinstance(x, np.ndarray) else x for x in a]
    run("sim", make(), a)
    run("gpu", make(), b)
    for x, y in zip(_arrays(a), _arrays(b)):
        assert x.tobytes() == y.tobytes()


@pytest.mark.gpu
def test_one_compiled_kernel_serves_every_size(torch):
    import tilewise as tw

    k = tw.compile(K.axpy, target="sm_90a")
    cubin = k.cubin
    for m in (5, 300, 70000):
        a = torch.randn(m, device="cuda")
        b = torch.randn(m, device="cuda")
        want = 0.5 * a + b
        k(a, b, 0.5)
        torch.cuda.synchronize()
        assert torch.equal(b, want)
    assert k.cubin is cubin
