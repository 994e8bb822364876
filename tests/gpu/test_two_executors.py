"""Same test, two executors: every example runs in the simulator (always) and on the GPU
(marked `gpu`, skipped without one), and on a GPU machine both must leave identical bytes.
The ``executor`` fixture and ``run`` are tests/conftest.py's and tests/executors.py's."""

import importlib.util
import os

import numpy as np
import pytest

from executors import run
from tilewise.runner import compare

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load_file(path):
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _example(name):
    return _load_file(os.path.join(ROOT, "examples", name + ".py"))


def _cases():
    """(id, kernel factory, inputs, reference, rtol) — small enough for the simulator."""
    ld, va, pw, tc, big = (_example(n) for n in ("ldgsts_copy", "vector_add", "pow",
                                                 "tiled_copy", "big_smem_copy"))
    out = [("seed-ldgsts", lambda: ld.copy_async, ld.inputs, ld.reference, None),
           ("dynamic-smem-64KB", lambda: big.big_smem_copy, big.inputs, big.reference, None)]
    n = 4099
    out.append(("vector-add", lambda: va.make_vector_add(n), lambda r: va.inputs(r, n),
                va.reference, None))
    out.append(("pow", lambda: pw.make_pow(n), lambda r: pw.inputs(r, n), pw.reference,
                4 * np.finfo(np.float32).eps))
    for dtype in ("float16", "bfloat16", "float32", "int8"):
        for shape in ((128, 256), (100, 130)):
            out.append((f"tiled-copy-{dtype}-{shape[0]}x{shape[1]}",
                        lambda s=shape, d=dtype: tc.make_tiled_copy(*s, d),
                        lambda r, s=shape, d=dtype: tc.inputs(r, s, d), tc.reference, None))
    for dtype in ("float16", "int8"):  # the barrier-free chunked pipeline of bench_copy.py
        out.append((f"tiled-copy-chunked-{dtype}",
                    lambda d=dtype: tc.make_tiled_copy(64, 4096, d, (4, 2048), 256, chunks=4),
                    lambda r, d=dtype: tc.inputs(r, (64, 4096), d), tc.reference, None))
    out.append(("pipelined-copy", lambda: tc.make_pipelined_copy(64, 2048, "float16",
                                                                (8, 1024), 256, 5),
                lambda r: tc.inputs(r, (64, 2048), "float16"), tc.reference, None))
    bc = _example("bulk_copy")
    for dtype, stages in (("float16", 1), ("int8", 2), ("float32", 4)):
        out.append((f"bulk-copy-{dtype}-{stages}-stages",
                    lambda d=dtype, s=stages: bc.make_bulk_copy(64, 2048, d, (8, 512), 32, s),
                    lambda r, d=dtype: bc.inputs(r, (64, 2048), d), bc.reference, None))
    out.append(("bulk-stream-ring", lambda: bc.make_bulk_stream(256, 2048, "float16", (8, 512),
                                                                  4, 5),
                lambda r: bc.inputs(r, (256, 2048), "float16"), bc.reference, None))
    tm = _example("tma_copy")
    for dtype, box, stages in (("float16", (64, 128), 4), ("int8", (32, 256), 2),
                               ("float32", (16, 64), 3)):
        out.append((f"tma-copy-{dtype}-{box[0]}x{box[1]}-{stages}-stages",
                    lambda d=dtype, b=box, s=stages: tm.make_tma_copy(d, b, s),
                    lambda r, d=dtype: tm.inputs(r, (300, 528), d), tm.reference, None))
    sem = _load_file(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                  "semantics_kernels.py"))
    out.append(("int-floor-divmod-wrap", lambda: sem.int_divmod, sem.int_divmod_inputs,
                sem.int_divmod_reference, None))
    out.append(("conversions", lambda: sem.conversions, sem.conversions_inputs,
                sem.conversions_reference, None))
    return out


CASES = _cases()
SLOW = ("bulk-stream-ring", "bulk-copy-float32-4-stages", "tma-copy-float32-16x64-3-stages")


@pytest.mark.parametrize("case", [pytest.param(c, id=c[0], marks=pytest.mark.slow)
                                  if c[0] in SLOW else pytest.param(c, id=c[0]) for c in CASES])
def test_example_matches_reference(executor, case):
    _, make, inputs, reference, rtol = case
    arrays = inputs(np.random.default_rng(1))
    want = reference(*[a.copy() for a in arrays])
    run(executor, make(), arrays)
    assert compare(arrays, want, rtol) == []


@pytest.mark.gpu
@pytest.mark.parametrize("case", [c for c in CASES if c[4] is None], ids=lambda c: c[0])
def test_sim_and_gpu_leave_identical_bytes(case):
    _, make, inputs, _, _ = case
    func = make()
    a = inputs(np.random.default_rng(2))
    b = [x.copy() for x in a]
    run("sim", func, a)
    run("gpu", func, b)
    for x, y in zip(a, b):
        assert x.tobytes() == y.tobytes()
