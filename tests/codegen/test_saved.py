"""Saved kernels (k.save / tw.load), `tilewise compile --save` and `--emit c`, on the CPU:
a loaded kernel checks and binds arguments, computes its grid and its tensor maps exactly as
the compiled one; loading imports no LLVM; files of another format, damaged files and
kernels for another GPU are refused with what to do."""

import functools
import json
import os
import pathlib
import struct
import subprocess
import sys

import numpy as np
import pytest

import tilewise as tw
from cbuild import c_compiler
from tilewise.errors import LaunchError
from tilewise.runtime import device, saved
from tilewise.runtime.launch import prepare

from .kernels import saxpy

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))



class Dev:
    """A device array as __cuda_array_interface__ describes it."""

    def __init__(self, ptr, shape, typestr="<f4"):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": shape,
                                         "typestr": typestr, "strides": None, "version": 3}


@functools.lru_cache(maxsize=1)
def _gemm():
    from gemm_hopper import make_gemm

    return tw.compile(make_gemm(dtype="float16", num_sms=132), target="sm_90a")


def _same_launch(k, loaded, arrays):
    call_k, grid_k = prepare(k, arrays)
    call_l, grid_l = prepare(loaded, arrays)
    assert grid_k == grid_l
    assert [repr(v) for v in call_k.values] == [repr(v) for v in call_l.values]
    from tilewise.runtime.tensormap import _geometries

    def geometry(kernel, call):
        return [(m.buffer.name, m.spec.describe(), m.spec.dtype, p, d, s)
                for m, p, d, s in _geometries(kernel, call)]

    assert geometry(k, call_k) == geometry(loaded, call_l)


def test_a_loaded_kernel_launches_as_the_compiled_one(tmp_path):
    k = tw.compile(saxpy, target="sm_90a")
    k.save(tmp_path / "saxpy.twk")
    loaded = tw.load(tmp_path / "saxpy.twk")
    assert loaded.cubin == k.cubin and loaded.name == k.name
    assert str(loaded.launch_config) == str(k.launch_config)
    _same_launch(k, loaded, [Dev(4096, (300,)), Dev(8192, (300,)), 0.5])
    with pytest.raises(LaunchError, match="size saxpy_n is 300 from X's dimension 0 but 200"):
        prepare(loaded, [Dev(4096, (300,)), Dev(8192, (200,)), 0.5])
    with pytest.raises(LaunchError, match="parameter 'a' \\(float32\\) got the bool"):
        prepare(loaded, [Dev(4096, (300,)), Dev(8192, (300,)), True])


def test_a_tma_gemm_keeps_its_tensor_maps_and_shared_memory(tmp_path):
    k = _gemm()
    k.save(tmp_path / "gemm.twk")
    loaded = tw.load(tmp_path / "gemm.twk")
    assert loaded.dynamic_smem == k.dynamic_smem > 48 * 1024
    assert len(loaded.launch_signature.func.attr("tensor_maps")) == 3
    _same_launch(k, loaded, [Dev(1 << 20, (256, 128), "<f2"), Dev(1 << 21, (128, 64), "<f2"),
                             Dev(1 << 22, (256, 64), "<f2")])


def test_loading_imports_no_llvm_and_parses_no_python(tmp_path):
    tw.compile(saxpy, target="sm_90a").save(tmp_path / "k.twk")
    code = ("import sys, tilewise as tw; k = tw.load(sys.argv[1]); "
            "from tilewise.runtime.launch import prepare\n"
            "class D:\n"
            "  def __init__(s, p): s.__cuda_array_interface__ = {'data': (p, False), "
            "'shape': (64,), 'typestr': '<f4', 'strides': None, 'version': 3}\n"
            "prepare(k, [D(4096), D(8192), 1.0])\n"
            "bad = [m for m in sys.modules if m.startswith(('llvmlite', 'tilewise.script.parser', 'tilewise.pipeline', 'tilewise.variants', "
            "'tilewise.codegen.machine', 'cuda.bindings.nvjitlink'))]\n"
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "k.twk")],
                         capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def _rewrite(path, change):
    blob = path.read_bytes()
    (n,) = struct.unpack_from("<I", blob, 8)
    header = json.loads(blob[12:12 + n])
    cubin = blob[12 + n:]
    header, cubin = change(header, cubin)
    text = json.dumps(header).encode()
    path.write_bytes(b"TWKERNEL" + struct.pack("<I", len(text)) + text + cubin)


def test_another_format_version_is_refused(tmp_path):
    p = tmp_path / "k.twk"
    tw.compile(saxpy, target="sm_90a").save(p)
    _rewrite(p, lambda h, c: ({**h, "format": 99, "tilewise": "9.0"}, c))
    with pytest.raises(LaunchError) as info:
        tw.load(p)
    assert "was saved by tilewise 9.0 in format 99" in str(info.value)
    assert "compile and save the kernel again" in info.value.hint


def test_a_damaged_cubin_and_a_foreign_file_are_refused(tmp_path):
    p = tmp_path / "k.twk"
    tw.compile(saxpy, target="sm_90a").save(p)
    _rewrite(p, lambda h, c: (h, c[:-10]))
    with pytest.raises(LaunchError, match="the cubin does not match its checksum"):
        tw.load(p)
    other = tmp_path / "x.cubin"
    other.write_bytes(b"\x7fELF....")
    with pytest.raises(LaunchError, match="is not a saved tilewise kernel"):
        tw.load(other)


def test_a_kernel_for_another_gpu_is_refused_at_load(tmp_path, monkeypatch):
    p = tmp_path / "k.twk"
    tw.compile(saxpy, target="sm_100a").save(p)
    monkeypatch.setattr(device, "gpu_available", lambda: True)
    monkeypatch.setattr(device, "device_target", lambda ordinal=0: tw.Target("sm_90a"))
    with pytest.raises(LaunchError) as info:
        tw.load(p)
    assert "holds a kernel for sm_100a, which cannot run on this GPU (sm_90a)" in str(info.value)
    assert "target='sm_90a'" in info.value.hint


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run([sys.executable, "-m", "tilewise.cli", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=300)


def test_the_command_line_saves_and_emits_c(tmp_path):
    out = _cli("compile", ROOT / "examples" / "vector_add.py", "--save", tmp_path / "v.twk",
               "--emit", "c", "-o", tmp_path / "vadd.c")
    assert out.returncode == 0, out.stderr
    assert tw.load(tmp_path / "v.twk").name == "vector_add"
    h = (tmp_path / "vadd.h").read_text()
    assert ("CUresult tw_vector_add_launch(CUstream stream, CUdeviceptr A, CUdeviceptr B, "
            "CUdeviceptr C);") in h
    c = (tmp_path / "vadd.c").read_text()
    assert '#include "vadd.h"' in c and "cuLaunchKernel(tw_vector_add_function" in c
    bad = _cli("compile", ROOT / "examples" / "vector_add.py", "--emit", "c")
    assert bad.returncode == 2 and "name the source with -o" in bad.stderr


def test_the_c_launcher_compiles_with_and_without_cuda_h(tmp_path):
    gcc = c_compiler()
    if gcc is None:
        pytest.skip("no C compiler on this machine")
    from gemm_hopper import make_gemm

    from tilewise.aot import emit_c

    for name, k in (("gemm", _gemm()), ("saxpy", tw.compile(saxpy, target="sm_90a"))):
        h, c = emit_c(saved.describe(k), k.cubin, name)
        (tmp_path / f"{name}.h").write_text(h)
        (tmp_path / f"{name}.c").write_text(c)
        # without <cuda.h>: the header's own declarations (an include path without it)
        res = subprocess.run([gcc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-c",
                              f"{name}.c", "-o", f"{name}.o"], cwd=tmp_path,
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
    assert "int32_t saxpy_n" in (tmp_path / "saxpy.h").read_text()
    assert "cuTensorMapEncodeTiled(&map2" in (tmp_path / "gemm.c").read_text()
    assert make_gemm  # the example the GEMM comes from


def test_saved_kernels_keep_scalar_bytes(tmp_path):
    k = tw.compile(saxpy, target="sm_90a")
    k.save(tmp_path / "k.twk")
    loaded = tw.load(tmp_path / "k.twk")
    call, _ = prepare(loaded, [Dev(4096, (64,)), Dev(8192, (64,)), np.float32(0.25)])
    assert call.values[2] == np.float32(0.25) and call.values[3] == 64


def test_a_launch_cache_hit_launches_as_the_compiled_kernel(tmp_path):
    """The second compile of a TMA GEMM comes from the launch cache (not lowered): its
    argument checks, sizes, grid and tensor maps are the first one's."""
    from gemm_hopper import make_gemm

    from tilewise.knobs import override

    func = make_gemm(dtype="float16", num_sms=132)
    with override(cache_dir=str(tmp_path), cache_enabled=True):
        first = tw.compile(func, target="sm_90a")
        first.cubin  # noqa: B018 - stores the launch entry
        again = tw.compile(func, target="sm_90a")
        assert again._lowered is None and again.cubin == first.cubin
        arrays = [Dev(1 << 20, (200, 72), "<f2"), Dev(1 << 21, (72, 136), "<f2"),
                  Dev(1 << 22, (200, 136), "<f2")]
        _same_launch(first, again, arrays)
        with pytest.raises(LaunchError, match="size K is 72 from A's dimension 1 but 64"):
            prepare(again, [arrays[0], Dev(1 << 21, (64, 136), "<f2"), arrays[2]])
        assert again.dispatch_log and again._lowered is not None  # lowered on demand
