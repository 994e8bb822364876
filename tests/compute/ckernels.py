"""Kernels of the compute-primitive tests, built from source text: parameters, a body of
lines, the thread count; ``run`` (tests/executors.py) executes one on the simulator or the
GPU (the same arrays, written in place)."""

from __future__ import annotations

import numpy as np

import tilewise as tw
from executors import run  # noqa: F401  (the compute tests import it from here)

FILE = "compute_kernels.py"


def kernel(params, body, threads: int = 128, env: dict | None = None, head=()):
    """``params``: (name, shape, dtype) of each global buffer (parameter ``<name>_ptr``)."""
    sig = ", ".join(f"{n}_ptr: T.handle" for n, _, _ in params)
    lines = [f'{n} = T.match_buffer({n}_ptr, {tuple(s)}, "{d}")' for n, s, d in params]
    lines += ["T.device_entry()", *head, f"tid = T.thread_id([{threads}])", *body]
    src = f"@T.prim_func\ndef k({sig}):\n" + "".join(f"    {ln}\n" for ln in lines)
    return tw.from_source(src, env=env, filename=FILE)


def rand(shape, dtype, seed=0, scale=3.0):
    rng = np.random.default_rng(seed)
    d = np.dtype(dtype) if dtype != "bfloat16" else np.dtype(_bf16())
    if d.kind in "iu":
        return rng.integers(-100 if d.kind == "i" else 0, 100, size=shape).astype(d)
    return (rng.standard_normal(shape) * scale + 0.25).astype(d)


def np_dtype(name: str):
    return _bf16() if name == "bfloat16" else np.dtype(name)


def _bf16():
    import ml_dtypes

    return ml_dtypes.bfloat16


def same_bits(a, b) -> bool:
    """Bit for bit, every NaN the same canonical NaN."""
    return np.array_equal(np.ascontiguousarray(a).view(np.uint8),
                          np.ascontiguousarray(b).view(np.uint8))


def dispatched(func, target: str = "sm_90a") -> list[str]:
    """The variant chosen for each tile call, in program order."""
    from tilewise.pipeline import lower

    return [d.chosen for d in lower(func, target).dispatch_log]
