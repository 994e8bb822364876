"""tw.compile end to end on the CPU: golden excerpts, targets, errors, options, cache."""

import importlib.util
import os
import subprocess
import sys

import pytest

import tilewise as tw
from tilewise.codegen import cache
from tilewise.codegen.backend import check_ptx
from tilewise.errors import CompileError
from tilewise.knobs import Knobs, override

from . import kernels

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _example(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples",
                                                                     name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_vector_add_golden():
    k = tw.compile(_example("vector_add").vector_add, "sm_90a")
    llvm = k.source("llvm")
    assert "define ptx_kernel void @\"vector_add\"(ptr addrspace(1) noundef align 16" in llvm
    assert '"nvvm.reqntid"="256"' in llvm
    ptx = k.source("ptx")
    for line in (".version 8.0", ".target sm_90a", ".visible .entry vector_add(", ".reqntid 256",
                 "mov.u32 \t%r1, %ctaid.x;", "ld.global.b32", "add.rn.f32", "st.global.b32"):
        assert line in ptx, line
    assert "div" not in ptx and "rem" not in ptx  # index math stays shifts/ors
    assert k.launch_config.grid == (256, 1, 1) and k.launch_config.block == 256


def test_seed_demo_golden():
    k = tw.compile(_example("ldgsts_copy").copy_async, "sm_90a")
    assert "addrspace(3) global [8192 x i8] undef, align 16" in k.source("llvm")
    ptx = k.source("ptx")
    assert ptx.count("cp.async.cg.shared.global") == 4
    assert ptx.count("ld.shared.v4.b32") == 4 and ptx.count("st.global.v4.b32") == 4
    order = [ptx.index(s) for s in ("cp.async.commit_group;", "cp.async.wait_group \t0;",
                                    "bar.sync \t0;", "ld.shared.v4.b32")]
    assert order == sorted(order)
    assert ".shared .align 16 .b8 A_smem[8192];" in ptx
    assert k.cubin[:4] == b"\x7fELF"


def test_pow_links_libdevice_only_when_used():
    k = tw.compile(_example("pow").pow_kernel, "sm_90a")
    assert "__nv_powf" in k.source("llvm")
    ptx = k.source("ptx")
    assert ".func" not in ptx and "__nvvm_reflect" not in ptx
    assert "__nv_" not in tw.compile(_example("vector_add").vector_add, "sm_90a").source("llvm")
    ftz = tw.compile(_example("pow").pow_kernel, "sm_90a", ftz=True).source("ptx")
    assert ftz.count(".ftz") > ptx.count(".ftz")


def test_tiled_copy_ragged_and_divisible():
    ex = _example("tiled_copy")
    for shape in ((1000, 1000), (256, 512)):
        k = tw.compile(ex.make_tiled_copy(*shape, "float16"), "sm_90a")
        assert "cp.async.cg.shared.global" in k.source("ptx")
        assert k.cubin[:4] == b"\x7fELF"


def test_floor_division_semantics_in_ir():
    llvm = tw.compile(kernels.floor_math, "sm_90a").source("llvm")
    assert "sdiv i32" in llvm and "srem i32" in llvm  # signed x // 7: correction needed
    assert "ashr i32" in llvm  # x // 8 floors with a shift
    assert "udiv i32" in llvm and "urem i32" in llvm  # tid // 3, tid % 5


@pytest.mark.parametrize("kernel,target,what", [
    (kernels.tcgen05_alloc, "sm_90a", "tcgen05"),
    (kernels.cp_async_kernel, "sm_75", "cp.async"),
])
def test_wrong_target_is_a_compile_error(kernel, target, what):
    with pytest.raises(CompileError) as info:
        tw.compile(kernel, target).source("ptx")
    text = str(info.value)
    assert what in text and target in text
    assert "kernels.py:" in text and "src/tilewise" not in text


def test_target_and_features_come_from_the_pipeline():
    """The target is built once, by the pipeline; the kernel reads it and the features
    the pipeline's one target check found (no second scan)."""
    k = tw.compile(kernels.cp_async_kernel, "sm_90a")
    assert k.target is k.lowered.target and str(k.target) == "sm_90a"
    assert k.lowered.features == {"cp_async"} and not k.lowered.uses_math
    assert k.ptx_version == k.target.ptx_version_for(["cp_async"])


def test_extern_func_in_ptx_is_an_error():
    with pytest.raises(CompileError, match="llvm.nvvm.bogus"):
        check_ptx(".version 8.0\n.extern .func llvm.nvvm.bogus\n(\n);\n")


def test_options():
    k = tw.compile(_example("vector_add").vector_add, "sm_90a", maxnreg=64, minctasm=2,
                   cluster_dim=(2, 1, 1))
    ptx = k.source("ptx")
    assert ".maxnreg 64" in ptx and ".minnctapersm 2" in ptx and ".reqnctapercluster 2, 1, 1" in ptx
    with pytest.raises(CompileError, match="maxnreg"):
        tw.compile(_example("vector_add").vector_add, "sm_90a", maxnregs=64)
    with pytest.raises(CompileError, match="cluster"):
        tw.compile(_example("vector_add").vector_add, "sm_80", cluster_dim=2)
    with pytest.raises(CompileError, match="stage"):
        k.source("sass")


def test_cache_hit_damaged_and_disabled(monkeypatch, _private_cache):
    import tilewise.codegen.backend as backend

    va = _example("vector_add").vector_add
    ptx = tw.compile(va, "sm_90a").source("ptx")
    files = [os.path.join(d, f) for d, _, fs in os.walk(_private_cache.cache_dir) for f in fs
             if f.endswith(".ptx")]
    assert len(files) == 1

    def boom(*a, **k):
        raise AssertionError("cache miss")

    monkeypatch.setattr(backend, "emit_ptx", boom)
    assert tw.compile(va, "sm_90a").source("ptx") == ptx  # hit
    with open(files[0], "r+b") as f:
        f.seek(50)
        f.write(b"garbage")
    monkeypatch.undo()
    assert tw.compile(va, "sm_90a").source("ptx") == ptx  # damaged: rebuilt
    assert cache.load(os.path.basename(files[0])[:-4], "ptx") is not None  # and rewritten
    with override(cache_enabled=False):
        monkeypatch.setattr(backend, "emit_ptx", boom)
        with pytest.raises(AssertionError, match="cache miss"):
            tw.compile(va, "sm_90a").source("ptx")


def test_knobs_from_env():
    k = Knobs.from_env({"TILEWISE_CACHE_DIR": "/x", "TILEWISE_CACHE": "0"})
    assert k.cache_dir == "/x" and not k.cache_enabled
    assert Knobs.from_env({"HOME": "/h"}).cache_enabled


def _loaded_after(code: str, cache: str | None = None) -> set[str]:
    """Which of the heavy modules a fresh process has loaded after running ``code`` (with an
    empty compile cache of its own unless ``cache`` names one)."""
    import tempfile

    heavy = ("numpy", "llvmlite", "llvmlite.ir", "llvmlite.binding", "cuda", "xml.sax",
             "tilewise.sim", "tilewise.codegen.libdevice", "cuda.bindings.nvjitlink")
    probe = f"{code}\nimport sys; print(','.join(m for m in {heavy!r} if m in sys.modules))"
    if cache is None:
        with tempfile.TemporaryDirectory() as fresh:
            return _loaded_after(code, fresh)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"), TILEWISE_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                         text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return set(filter(None, out.stdout.strip().split(",")))


def test_import_stays_light():
    """``import tilewise`` does no work: no numpy, LLVM or CUDA."""
    assert _loaded_after("import tilewise") == set()


def test_llvm_and_cuda_load_only_when_needed():
    seed = ("import runpy, tilewise as tw; ex = runpy.run_path('examples/ldgsts_copy.py'); "
            "k = tw.compile(ex['copy_async'], 'sm_90a')")
    assert _loaded_after(seed + "; k.source('lowered')") == {"numpy"}
    assert _loaded_after(seed + "; k.source('ptx')") == {"numpy", "llvmlite", "llvmlite.ir",
                                                         "llvmlite.binding"}
    assert "cuda" in _loaded_after(seed + "; k.cubin")
    assert "tilewise.codegen.libdevice" not in _loaded_after(seed + "; k.cubin")


def test_a_cached_kernel_reaches_its_launch_without_llvm_or_nvjitlink(tmp_path):
    """The second process of a kernel finds PTX and cubin in the disk cache: its cache key,
    cubin, entry name and the launch's argument checks load neither LLVM nor nvJitLink."""
    seed = ("import runpy, tilewise as tw; ex = runpy.run_path('examples/vector_add.py'); "
            "k = tw.compile(ex['vector_add'], 'sm_90a'); k.cubin; k.name; k.dynamic_smem")
    first = _loaded_after(seed, str(tmp_path))
    assert {"llvmlite.binding", "cuda.bindings.nvjitlink"} <= first
    check = ("\nfrom tilewise.runtime.launch import prepare\n"
             "class D:\n"
             "  def __init__(s, p): s.__cuda_array_interface__ = {'data': (p, False), "
             "'shape': (65536,), 'typestr': '<f4', 'strides': None, 'version': 3}\n"
             "prepare(k, [D(4096), D(8192), D(1 << 20)])")
    again = _loaded_after(seed + check, str(tmp_path))
    assert not again & {"llvmlite", "llvmlite.ir", "llvmlite.binding",
                        "cuda.bindings.nvjitlink"}, again


def test_the_launch_cache_skips_lowering_until_the_lowered_program_is_asked_for(tmp_path):
    """A kernel built before comes from the launch cache: no pipeline, no variants; its
    lowered program, PTX and dispatch log are still there on demand."""
    code = ("import sys, runpy, tilewise as tw; ex = runpy.run_path('examples/vector_add.py'); "
            "k = tw.compile(ex['vector_add'], 'sm_90a', maxnreg=64); c = k.cubin; "
            "print(k.name, k.launch_config.block, 'tilewise.pipeline' in sys.modules, "
            "len(c), k.options.get('maxnreg'))\n"
            "print('vector_add' in k.source('lowered'), len(k.dispatch_log), "
            "k.ptx.count('.maxnreg 64'), 'tilewise.pipeline' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"), TILEWISE_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, cwd=ROOT) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    first, again = (r.stdout.split("\n") for r in runs)
    assert first[0].split()[:3] == ["vector_add", "256", "True"]
    assert again[0].split()[:3] == ["vector_add", "256", "False"]  # no lowering to launch
    assert first[0].split()[3:] == again[0].split()[3:]  # the same cubin and options
    assert again[1] == "True 0 1 True"  # lowered on demand, the PTX rebuilt as before


def test_cubin_from_the_cache_knows_its_entry_name(_private_cache):
    """A kernel whose cubin comes from the cache (PTX never built in this process) still
    knows the entry name the launcher asks the driver for."""
    va = _example("vector_add").vector_add
    first = tw.compile(va, "sm_90a")
    assert first.cubin and first.name
    again = tw.compile(va, "sm_90a")
    blob = again.cubin  # a cache hit: nothing else built yet
    assert blob == first.cubin
    assert again.name == first.name == "vector_add"
