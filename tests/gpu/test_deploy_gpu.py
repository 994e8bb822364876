"""GPU: kernels in deployment. A saved kernel loads and launches in a fresh process without
LLVM; so does a kernel whose cubin is in the disk cache; the C launcher (--emit c) compiles
with the machine's C compiler and launches through the driver API; T.print prints through
vprintf and a failing T.device_assert is reported at its file and line."""

import ctypes
import os
import pathlib
import subprocess
import sys

import pytest

import tilewise as tw
from cbuild import c_compiler, cuda_include
from tilewise.errors import LaunchError

pytestmark = pytest.mark.gpu
ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _run(code: str, *args, cache=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + str(EXAMPLES))
    if cache is not None:
        env["TILEWISE_CACHE_DIR"] = str(cache)
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=300)


def _target():
    from tilewise.runtime import device_target

    return str(device_target())


LAUNCH_GEMM = """
import sys, torch, tilewise as tw
k = {make}
a = torch.randn(300, 256, device="cuda").to(torch.bfloat16)
b = torch.randn(256, 136, device="cuda").to(torch.bfloat16)
c = torch.full((300, 136), float("nan"), device="cuda").to(torch.bfloat16)
k(a, b, c)
torch.cuda.synchronize()
ref = (a.float() @ b.float())
err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
heavy = [m for m in {heavy!r} if m in sys.modules]
print("err", err, "heavy", heavy)
"""


NO_LLVM = ("llvmlite", "llvmlite.binding", "cuda.bindings.nvjitlink")
NO_PARSER = NO_LLVM + ("tilewise.script.parser",)


def _check(out):
    assert out.returncode == 0, out.stderr
    words = out.stdout.split()
    assert float(words[1]) < 2 ** -7, out.stdout
    assert out.stdout.strip().endswith("heavy []"), out.stdout


def test_a_saved_tma_gemm_launches_in_a_fresh_process_without_llvm(tmp_path):
    sys.path.insert(0, str(EXAMPLES))
    from gemm_hopper import make_gemm
    tw.compile(make_gemm(dtype="bfloat16"), _target()).save(tmp_path / "gemm.twk")
    _check(_run(LAUNCH_GEMM.format(make="tw.load(sys.argv[1])", heavy=NO_PARSER),
                tmp_path / "gemm.twk"))


def test_a_cached_kernel_reaches_its_first_launch_without_llvm(tmp_path):
    make = ("tw.compile(__import__('gemm_hopper').make_gemm(dtype='bfloat16'), "
            "str(__import__('tilewise.runtime').runtime.device_target()))")
    # the script defines the kernel with @T.prim_func, so it parses; it need not build LLVM
    first = _run(LAUNCH_GEMM.format(make=make, heavy=NO_LLVM), cache=tmp_path)
    assert first.returncode == 0 and "llvmlite" in first.stdout, first.stderr
    _check(_run(LAUNCH_GEMM.format(make=make, heavy=NO_LLVM), cache=tmp_path))


def test_a_kernel_for_another_gpu_is_refused_at_load(tmp_path, example):
    other = "sm_100a" if _target() != "sm_100a" else "sm_90a"
    tw.compile(example("vector_add").make_vector_add(1024), other).save(tmp_path / "k.twk")
    with pytest.raises(LaunchError, match=f"holds a kernel for {other}, which cannot run"):
        tw.load(tmp_path / "k.twk")


def _libcuda() -> str:
    """The path of the driver library this process loaded (torch loads it)."""
    for line in open("/proc/self/maps"):
        if "libcuda.so" in line:
            return line.split()[-1]
    raise AssertionError("libcuda is not loaded")


def _build(tmp_path, name, kernel):
    from tilewise.aot import emit_c
    from tilewise.runtime import saved

    cc = c_compiler()
    assert cc, "the C launcher test needs a C compiler (gcc, cc or clang) on PATH"
    h, c = emit_c(saved.describe(kernel), kernel.cubin, name)
    (tmp_path / f"{name}.h").write_text(h)
    (tmp_path / f"{name}.c").write_text(c)
    lib = tmp_path / f"lib{name}.so"
    res = subprocess.run([cc, "-std=c11", "-O2", "-shared", "-fPIC", *cuda_include(),
                          str(tmp_path / f"{name}.c"), "-o", str(lib), _libcuda()],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return ctypes.CDLL(str(lib))


def test_the_c_launcher_runs_a_symbolic_kernel_and_a_tma_gemm(tmp_path, example):
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(EXAMPLES))
    from gemm_hopper import make_gemm

    a = torch.randn(300, 256, device="cuda").to(torch.bfloat16)
    b = torch.randn(256, 136, device="cuda").to(torch.bfloat16)
    c = torch.full((300, 136), float("nan"), device="cuda").to(torch.bfloat16)
    lib = _build(tmp_path, "gemm", tw.compile(make_gemm(dtype="bfloat16"), _target()))
    lib.tw_gemm_launch.restype = ctypes.c_int
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    u64, i32 = ctypes.c_uint64, ctypes.c_int32
    err = lib.tw_gemm_launch(stream, u64(a.data_ptr()), u64(b.data_ptr()), u64(c.data_ptr()),
                             i32(300), i32(256), i32(136))
    assert err == 0
    torch.cuda.synchronize()
    ref = a.float() @ b.float()
    assert ((c.float() - ref).abs().max() / ref.abs().max()).item() < 2 ** -7

    va = example("vector_add").make_vector_add(5000)
    lib2 = _build(tmp_path, "vadd", tw.compile(va, _target()))
    x, y = torch.randn(5000, device="cuda"), torch.randn(5000, device="cuda")
    z = torch.full((5000,), float("nan"), device="cuda")
    assert lib2.tw_vector_add_launch(stream, u64(x.data_ptr()), u64(y.data_ptr()),
                                     u64(z.data_ptr())) == 0
    torch.cuda.synchronize()
    torch.testing.assert_close(z, x + y, rtol=0, atol=0)



PDL = """
@T.prim_func
def twice(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (n,), "float32")
    B = T.match_buffer(B_ptr, (n,), "float32")
    T.device_entry()
    bx = T.cta_id([T.ceildiv(n, 128)])
    tid = T.thread_id([128])
    T.ptx.griddepcontrol.wait()
    if bx * 128 + tid < n:
        B[bx * 128 + tid] = A[bx * 128 + tid] * 2.0
"""


def test_the_c_launcher_launches_a_programmatic_kernel(tmp_path):
    """A kernel compiled with programmatic=True, launched by its C launcher
    (cuLaunchKernelEx, programmatic stream serialization) right behind a torch kernel that
    writes its input on the same stream: it waits for that kernel and reads what it wrote."""
    torch = pytest.importorskip("torch")
    from tilewise import T

    k = tw.compile(tw.from_source(PDL, env={"n": T.int32()}, filename="pdl.py"), _target(),
                   programmatic=True)
    lib = _build(tmp_path, "pdl", k)
    lib.tw_twice_launch.restype = ctypes.c_int
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    n = 1 << 22
    a = torch.zeros(n, device="cuda")
    b = torch.full((n,), float("nan"), device="cuda")
    for r in range(3):
        a.copy_(torch.arange(n, device="cuda", dtype=torch.float32) + r)  # the kernel ahead
        assert lib.tw_twice_launch(stream, ctypes.c_uint64(a.data_ptr()),
                                   ctypes.c_uint64(b.data_ptr()), ctypes.c_int32(n)) == 0
        torch.cuda.synchronize()
        ref = 2 * (torch.arange(n, device="cuda", dtype=torch.float32) + r)
        torch.testing.assert_close(b, ref, rtol=0, atol=0)

PRINT = """
import sys, numpy as np, torch, tilewise as tw
from tilewise import T
src = '''
@T.prim_func
def k(A_ptr: T.handle, n: T.int32):
    A = T.match_buffer(A_ptr, (8,), "float32")
    T.device_entry()
    bx = T.cta_id([2])
    tx = T.thread_id([4])
    T.print("cta %d tid %d a=%.2f n=%u neg=%x big=%ld\\\\n", bx, tx, A[bx * 4 + tx], n, -1,
            T.int64(tx) * 1000000000000)
    T.device_assert(A[bx * 4 + tx] < LIMIT, "A too large")
'''.replace("LIMIT", sys.argv[1])
k = tw.from_source(src, filename="user_kernel.py")
a = torch.arange(8, device="cuda", dtype=torch.float32)
if sys.argv[2] == "sim":
    tw.simulate(k, a.cpu().numpy(), 3)
    sys.exit(0)
tw.compile(k, str(__import__("tilewise.runtime").runtime.device_target()))(a, 3)
try:
    tw.runtime.synchronize()
except tw.LaunchError as e:
    print("LAUNCH ERROR:", e)
sys.stdout.flush()
"""


def test_t_print_on_the_gpu_prints_what_the_simulator_prints():
    gpu = _run(PRINT, "100.0", "gpu")
    sim = _run(PRINT, "100.0", "sim")
    assert gpu.returncode == 0 and sim.returncode == 0, gpu.stderr + sim.stderr
    lines = sorted(line for line in gpu.stdout.splitlines() if line.startswith("cta "))
    assert len(lines) == 8 and lines == sorted(sim.stdout.splitlines())
    assert "cta 1 tid 3 a=7.00 n=3 neg=ffffffff big=3000000000000" in lines


def test_a_failing_device_assert_names_its_file_and_line():
    out = _run(PRINT, "6.0", "gpu")
    both = out.stdout + out.stderr
    assert "LAUNCH ERROR:" in out.stdout, both
    assert "a T.device_assert failed on the GPU (CUDA_ERROR_ASSERT)" in out.stdout
    assert "user_kernel.py:10: A too large (in k)" in out.stdout
    # the device's own message (through __assertfail) names the same place
    assert "user_kernel.py:10" in both and "A too large" in both
