"""GPU: host time of one launch of a cached kernel, tilewise against a bare ``cuLaunchKernel``
through cuda-python, a Triton kernel and torch's ``add_``, in one run (issue 22).

The work is the same for all: C = A + B on 1024 float32 elements (four CTAs of 256 threads),
a kernel that runs for a few microseconds, so the host's launch path is what is measured.
Each row times ``LAUNCHES`` back-to-back launches from Python (``time.perf_counter`` around
the loop, the GPU synchronised before and after, outside the timed part) and reports the
median over ``ROUNDS`` rounds, in microseconds of host time per launch. The rounds of the
rows are interleaved (row 1, row 2, ..., row 1, row 2, ...), so a drift of the machine's
speed hits every row alike.

Rows:

* ``tilewise k(A, B, C)``: a compiled kernel of fixed size, launched on torch tensors with
  every argument check on (the per-signature fast path of runtime/launch.py);
* ``tilewise, symbolic n``: the same kernel with ``n = T.int32()`` (sizes bound per launch);
* ``tilewise.torch op``: the kernel as a torch custom op, ``C = op(A, B)`` (torch's custom
  op dispatch and an output allocation added);
* ``bare cuLaunchKernel``: the same cubin loaded by hand, the parameter array built once,
  ``driver.cuLaunchKernel`` called in a loop: the floor any Python launcher stands on;
* ``triton``: a ``@triton.jit`` vector add, ``kernel[grid](a, b, c, n, BLOCK=256)``;
* ``torch add_``: ``C.add_(B)``.

Targets: tilewise ≤ 2 × the bare launch and below Triton.

    PYTHONPATH=src python benchmarks/bench_launch.py [LAUNCHES [ROUNDS]]
"""

import ctypes
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

N = 1024
THREADS = 256


def tilewise_rows(torch, a, b, c):
    import tilewise as tw
    from tilewise import T
    from tilewise.runtime import device_target
    from vector_add import make_vector_add

    k = tw.compile(make_vector_add(N, THREADS), target=device_target())
    n_ = T.int32()

    @T.prim_func
    def vadd_sym(A_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
        A = T.match_buffer(A_ptr, (n_,), "float32")
        B = T.match_buffer(B_ptr, (n_,), "float32")
        C = T.match_buffer(C_ptr, (n_,), "float32")
        T.device_entry()
        bx = T.cta_id([(n_ + THREADS - 1) // THREADS])
        tx = T.thread_id([THREADS])
        i = bx * THREADS + tx
        if i < n_:
            C[i] = A[i] + B[i]

    ks = tw.compile(vadd_sym, target=device_target())
    import tilewise.torch as twt

    op = twt.custom_op("bench_launch::vadd", k, outputs=("C",))
    for kern in (k, ks):
        c.fill_(float("nan"))
        kern(a, b, c)
        torch.cuda.synchronize()
        assert torch.equal(c, a + b), "tilewise vector add is wrong"
    assert torch.equal(op(a, b), a + b), "tilewise.torch op is wrong"
    return k, {"tilewise k(A, B, C)": lambda: k(a, b, c),
               "tilewise, symbolic n": lambda: ks(a, b, c),
               "tilewise.torch op": lambda: op(a, b)}


def bare_row(torch, k, a, b, c):
    """The cubin tilewise built, loaded and launched by hand through cuda.bindings."""
    import numpy as np
    from cuda.bindings import driver

    torch.cuda.synchronize()
    image = np.frombuffer(k.cubin, np.uint8).copy()
    err, module = driver.cuModuleLoadData(image.ctypes.data)
    assert not err, err
    err, fn = driver.cuModuleGetFunction(module, k.name.encode())
    assert not err, err
    values = (ctypes.c_uint64 * 3)(a.data_ptr(), b.data_ptr(), c.data_ptr())
    base = ctypes.addressof(values)
    params = (ctypes.c_void_p * 3)(base, base + 8, base + 16)
    addr = ctypes.addressof(params)
    stream = driver.CUstream(torch.cuda.current_stream().cuda_stream)
    grid = N // THREADS

    def launch():
        driver.cuLaunchKernel(fn, grid, 1, 1, THREADS, 1, 1, 0, stream, addr, 0)

    c.fill_(float("nan"))
    launch()
    torch.cuda.synchronize()
    assert torch.equal(c, a + b), "the bare launch is wrong"
    return {"bare cuLaunchKernel": launch}, (image, module, values, params)


def triton_row(torch, a, b, c):
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return {}

    @triton.jit
    def vadd(x, y, z, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        keep = i < n
        tl.store(z + i, tl.load(x + i, mask=keep) + tl.load(y + i, mask=keep), mask=keep)

    grid = (N // THREADS,)
    c.fill_(float("nan"))
    vadd[grid](a, b, c, N, BLOCK=THREADS)
    torch.cuda.synchronize()
    assert torch.equal(c, a + b), "the Triton kernel is wrong"
    return {"triton": lambda: vadd[grid](a, b, c, N, BLOCK=THREADS)}


def host_time(torch, fn, launches: int) -> float:
    """Seconds of host time per launch over ``launches`` back-to-back launches."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(launches):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / launches


def main():
    import torch

    launches = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    a = torch.randn(N, device="cuda")
    b = torch.randn(N, device="cuda")
    c = torch.empty(N, device="cuda")
    k, rows = tilewise_rows(torch, a, b, c)
    bare, keep = bare_row(torch, k, a, b, c)
    rows.update(bare)
    rows.update(triton_row(torch, a, b, c))
    rows["torch add_"] = lambda: c.add_(b)
    times = {name: [] for name in rows}
    for fn in rows.values():  # warm-up
        host_time(torch, fn, 200)
    for _ in range(rounds):
        for name, fn in rows.items():
            times[name].append(host_time(torch, fn, launches))
    med = {name: statistics.median(t) * 1e6 for name, t in times.items()}
    bare_us, tw_us = med["bare cuLaunchKernel"], med["tilewise k(A, B, C)"]
    print(f"{torch.cuda.get_device_name()}: host time per launch, {launches} back-to-back "
          f"launches of a {N}-element float32 vector add, median of {rounds} rounds")
    print(f"{'row':<24} {'us/launch':>10} {'min':>8} {'max':>8} {'/ bare':>8}")
    for name, t in times.items():
        print(f"{name:<24} {med[name]:10.2f} {min(t) * 1e6:8.2f} {max(t) * 1e6:8.2f} "
              f"{med[name] / bare_us:8.2f}")
    verdict = [f"tilewise / bare = {tw_us / bare_us:.2f} (target <= 2)"]
    if "triton" in med:
        verdict.append(f"tilewise / triton = {tw_us / med['triton']:.2f} (target < 1)")
    print("; ".join(verdict))
    del keep


if __name__ == "__main__":
    main()
