"""Which assembler makes the cubin: nvJitLink, or a whole-program ptxas for kernels that use
setmaxnreg (nvJitLink compiles PTX as a separate unit and then ignores setmaxnreg:
codegen/cubin.py). The knob TILEWISE_PTXAS names one, or "none"."""

import os
import stat
import subprocess

import pytest

import tilewise as tw
from tilewise.codegen import cubin
from tilewise.errors import CompileError
from tilewise.knobs import override

PTX_WITH = ".version 8.0\n.target sm_90a\n.address_size 64\n// setmaxnreg\n"


def test_kernels_without_setmaxnreg_use_nvjitlink():
    assert cubin.assembler(".version 8.0\n.target sm_90a\n") == "nvJitLink"


def test_none_turns_ptxas_off():
    with override(ptxas="none"):
        assert cubin.find_ptxas() is None
        assert cubin.assembler(PTX_WITH) == "nvJitLink"


def _fake(tmp_path, body: str) -> str:
    path = tmp_path / "ptxas"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_a_named_ptxas_is_used_and_its_failure_is_a_compile_error(tmp_path):
    fake = _fake(tmp_path, 'echo "ptxas fatal : Unsupported .version 8.0" >&2\nexit 1\n')
    with override(ptxas=fake):
        assert cubin.find_ptxas() == fake
        assert cubin.assembler(PTX_WITH).startswith(f"ptxas {fake} ")
        with pytest.raises(CompileError, match="could not assemble the PTX for sm_90a:\n"
                           "ptxas fatal : Unsupported .version 8.0") as e:
            cubin.link_cubin(PTX_WITH, "sm_90a")
        assert "TILEWISE_PTXAS" in e.value.hint


def test_the_keys_name_the_ptxas_by_its_file_without_running_it(tmp_path):
    """The cubin key names the assembler by path, size and mtime (no subprocess, no import);
    the launch cache, which has no PTX to look at, names the ptxas a kernel using
    setmaxnreg would get: another ptxas never reuses the old one's cubin."""
    from tilewise.compiler import _launch_cache

    fake = _fake(tmp_path, "exit 1\n")
    va = tw.from_source("""
@T.prim_func
def k(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (32,), "float32")
    T.device_entry()
    tid = T.thread_id([32])
    A[tid] = 1.0
""")
    with override(cache_dir=str(tmp_path / "cache"), cache_enabled=True):
        with override(ptxas=fake):
            first = cubin.assembler(PTX_WITH), _launch_cache(va, "sm_90a", {})[0]
        with open(fake, "a") as f:
            f.write("# another build\n")
        with override(ptxas=fake):
            again = cubin.assembler(PTX_WITH), _launch_cache(va, "sm_90a", {})[0]
        with override(ptxas="none"):
            none = cubin.assembler(PTX_WITH), _launch_cache(va, "sm_90a", {})[0]
    assert first[0] != again[0] and first[1] != again[1]
    assert none[0] == "nvJitLink" and none[1] not in (first[1], again[1])


def test_a_named_ptxas_that_does_not_exist_is_a_compile_error(tmp_path):
    with override(ptxas=str(tmp_path / "missing")):
        with pytest.raises(CompileError, match="could not run"):
            cubin.link_cubin(PTX_WITH, "sm_90a")


@pytest.mark.skipif(cubin.find_ptxas() is None, reason="no ptxas on this machine")
def test_the_warp_specialised_gemm_keeps_its_setmaxnreg(tmp_path):
    import importlib.util

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    spec = importlib.util.spec_from_file_location("gh", os.path.join(root, "examples",
                                                                     "gemm_hopper.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    k = tw.compile(mod.gemm, "sm_90a")
    ptx = k.source("ptx")
    assert cubin.assembler(ptx).startswith("ptxas ")
    with override(cache_enabled=False):
        assert k.cubin[:4] == b"\x7fELF"
    # honoured: no C7504 (separate compilation, nvJitLink's) nor C7508 (unknown entry count)
    ptx_file = tmp_path / "gemm.ptx"
    ptx_file.write_text(ptx)
    r = subprocess.run([cubin.find_ptxas(), "-arch=sm_90a", "-O3", "-v", str(ptx_file), "-o",
                        str(tmp_path / "gemm.cubin")], capture_output=True, text=True)
    assert r.returncode == 0 and "setmaxnreg" not in r.stderr, r.stderr
    assert "C7504" in subprocess.run(
        [cubin.find_ptxas(), "-arch=sm_90a", "-O3", "-v", "-c", str(ptx_file), "-o",
         str(tmp_path / "gemm.o")], capture_output=True, text=True).stderr  # the unit form
