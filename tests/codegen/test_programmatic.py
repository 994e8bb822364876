"""Programmatic dependent launch: ``tw.compile(..., programmatic=True)`` launches a kernel
that may start while the kernel ahead of it on its stream finishes, and the kernel waits
for that one with ``T.ptx.griddepcontrol.wait()``. Checked here without a GPU: the PTX, the
option's rules and their messages, the simulator (where the two instructions are no-ops:
one launch runs at a time), and the GEMM's split through global memory, whose second
kernel is launched this way (tests/gemm/test_gemm_hopper.py runs it on the GPU)."""

import subprocess

import numpy as np
import pytest

import tilewise as tw
from cbuild import c_compiler, cuda_include
from exload import load_example as example
from tilewise import from_source

SRC = '''
@T.prim_func
def k(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (256,), "float32")
    B = T.match_buffer(B_ptr, (256,), "float32")
    T.device_entry()
    bx = T.cta_id([2])
    tid = T.thread_id([128])
    {wait}
    B[bx * 128 + tid] = A[bx * 128 + tid] * 2.0
'''


def _kernel(wait: bool):
    text = SRC.format(wait="T.ptx.griddepcontrol.wait()" if wait else "pass")
    return from_source(text, filename="programmatic.py")


def test_a_programmatic_kernel_waits_and_is_launched_so(tmp_path):
    k = tw.compile(_kernel(True), "sm_90a", programmatic=True)
    assert k.options["programmatic"] is True
    k.save(tmp_path / "k.tw")  # a saved kernel is launched the same way
    assert tw.load(tmp_path / "k.tw").options["programmatic"] is True
    assert "griddepcontrol.wait;" in k.ptx
    assert len(k.cubin) > 0  # ptxas / nvJitLink accept it
    a = np.arange(256, dtype=np.float32)
    b = np.full(256, np.nan, np.float32)
    tw.simulate(_kernel(True), a, b, strict=True)  # a no-op in the simulator
    assert (b == 2 * a).all()


def test_a_programmatic_kernel_that_never_waits_is_refused():
    with pytest.raises(tw.CompileError, match="never calls T.ptx.griddepcontrol.wait") as e:
        tw.compile(_kernel(False), "sm_90a", programmatic=True)
    assert "drop programmatic=True" in e.value.hint
    tw.compile(_kernel(False), "sm_90a")  # without the option: an ordinary kernel


def test_programmatic_launch_needs_sm_90():
    with pytest.raises(tw.CompileError, match="needs sm_90 or newer"):
        tw.compile(_kernel(True), "sm_80")
    with pytest.raises(tw.CompileError, match="option programmatic='yes' is a string"):
        tw.compile(_kernel(True), "sm_90a", programmatic="yes")


def test_the_split_gemms_second_kernel_waits_for_the_first():
    """A split through global memory: the GEMM lets its second kernel be scheduled once
    every CTA has started (``launch_dependents``), and the second kernel waits for it
    before reading the partial sums; both in the simulator still give the exact sum."""
    G = example("gemm_hopper")
    red = G._split_reduce("bfloat16", 128, 64, 4, False, G.GROUP_M)
    r = tw.compile(red, "sm_90a", programmatic=True)
    assert r.ptx.count("griddepcontrol.wait;") == 1
    gemm = tw.compile(G._kernel("bfloat16", 8, "warpgroup", 128, 64, 1, 4, global_splits=4),
                      "sm_90a")
    assert "griddepcontrol.launch_dependents;" in gemm.ptx
    assert G.SPLIT_PROGRAMMATIC


def test_the_c_launcher_launches_a_programmatic_kernel_programmatically(tmp_path):
    """``--emit c`` of a programmatic kernel calls ``cuLaunchKernelEx`` with programmatic
    stream serialization (as the Python launcher does); the generated source compiles
    with <cuda.h> and with the header's own declarations, and those declarations lay the
    launch structures out as <cuda.h> does (the driver reads them by offset)."""
    from tilewise.aot import emit_c
    from tilewise.runtime import saved

    cc = c_compiler()
    if cc is None:
        pytest.skip("no C compiler on this machine")
    k = tw.compile(_kernel(True), "sm_90a", programmatic=True)
    h, c = emit_c(saved.describe(k), k.cubin, "pdl")
    assert "cuLaunchKernelEx(&cfg, tw_k_function, params, 0)" in c
    assert "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION" in c
    assert "cuLaunchKernel(" not in c
    plain_h, plain_c = emit_c(saved.describe(tw.compile(_kernel(True), "sm_90a")), k.cubin,
                              "plain")
    assert "cuLaunchKernelEx" not in plain_c and "cuLaunchKernel(" in plain_c
    (tmp_path / "pdl.h").write_text(h)
    (tmp_path / "pdl.c").write_text(c)
    probe = ('#include <stdio.h>\n#include <stddef.h>\n#include "pdl.h"\n'
             'int main(void) { printf("%zu %zu %zu %zu %zu %zu\\n", sizeof(CUlaunchConfig), '
             'offsetof(CUlaunchConfig, hStream), offsetof(CUlaunchConfig, attrs), '
             'offsetof(CUlaunchConfig, numAttrs), sizeof(CUlaunchAttribute), '
             'offsetof(CUlaunchAttribute, value)); return 0; }\n')
    (tmp_path / "probe.c").write_text(probe)
    layouts = []
    include = cuda_include()
    for flags in ([], include) if include else ([],):
        res = subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", *flags, "-c",
                              "pdl.c", "-o", "pdl.o"], cwd=tmp_path, capture_output=True,
                             text=True)
        assert res.returncode == 0, res.stderr
        res = subprocess.run([cc, "-std=c11", *flags, "probe.c", "-o", "probe"], cwd=tmp_path,
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        layouts.append(subprocess.run([str(tmp_path / "probe")], capture_output=True,
                                      text=True, check=True).stdout.split())
    assert layouts[0] == ["56", "32", "40", "48", "72", "8"]  # <cuda.h>'s, on 64-bit hosts
    assert all(lay == layouts[0] for lay in layouts)
