"""The `tilewise` command, run as a user runs it (a new process, the console entry point)."""

import os
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
EX = ROOT / "examples"


def tilewise(*args, check=True):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-m", "tilewise.cli", *map(str, args)],
                         capture_output=True, text=True, env=env, timeout=300)
    if check and out.returncode != 0:
        raise AssertionError(f"tilewise {args} failed:\n{out.stdout}\n{out.stderr}")
    return out


def test_compile_emits_every_stage(tmp_path):
    seed = EX / "ldgsts_copy.py"
    assert "Tx.cta.copy_async(A_smem[0:128, 0:32]" in tilewise("compile", seed, "--emit",
                                                               "ir").stdout
    lowered = tilewise("compile", seed, "--emit", "lowered").stdout
    assert "for f in range(4):" in lowered and lowered.count("T.ptx.cp_async(") == 1
    assert "define ptx_kernel" in tilewise("compile", seed, "--emit", "llvm").stdout
    ptx = tilewise("compile", seed, "--emit", "ptx").stdout
    assert ptx.count("cp.async.cg.shared.global") == 4 and ".target sm_90a" in ptx
    cubin = tmp_path / "k.cubin"
    tilewise("compile", seed, "--emit", "cubin", "-o", cubin)
    assert cubin.read_bytes()[:4] == b"\x7fELF"


def test_compile_tcgen05_for_its_target_and_refuses_hopper():
    seed = EX / "tcgen05_roundtrip.py"
    ptx = tilewise("compile", seed, "--emit", "ptx").stdout  # TARGET = sm_100a in the file
    assert ptx.count("tcgen05.st.sync.aligned.32x32b.x4.b32") == 1
    assert ptx.count("tcgen05.ld.sync.aligned.32x32b.x4.b32") == 1
    bad = tilewise("compile", seed, "--target", "sm_90a", "--emit", "ptx", check=False)
    assert bad.returncode == 2
    assert "tcgen05_roundtrip.py:" in bad.stderr and "target is sm_90a" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_explain_lists_every_decision():
    out = tilewise("explain", EX / "ldgsts_copy.py").stdout
    assert "ldgsts (priority 20): chosen" in out
    assert "reg (priority 30): declined: copies shared -> global" in out


@pytest.mark.parametrize("name", ["ldgsts_copy", *(
    pytest.param(n, marks=pytest.mark.slow)  # each example runs in-process elsewhere too
    for n in ("vector_add", "pow", "tcgen05_roundtrip", "softmax", "rmsnorm", "gemm_epilogue"))])
def test_run_in_the_simulator(name):
    out = tilewise("run", EX / f"{name}.py", "--sim").stdout
    assert "simulator" in out and "OK, matches the reference" in out


def test_layout_picture_and_svg(tmp_path):
    out = tilewise("layout", "S[(128, 8):(1@tid_in_wg, 1)]").stdout
    assert "T0:r0" in out and "T127:r7" in out
    svg = tmp_path / "l.svg"
    tilewise("layout", "S[(8, 8):(8@laneid, 1)]", "--svg", svg)
    cells = [e for e in ET.parse(svg).iter() if e.get("class") == "cell"]
    assert len(cells) == 64


def test_doctor_reports_each_component():
    out = tilewise("doctor").stdout
    for key in ("python", "llvm", "nvjitlink", "libdevice", "driver", "gpu", "cache"):
        assert any(line.startswith(key) for line in out.splitlines()), key
    assert "LLVM 22" in out


def test_user_errors_are_one_clear_message(tmp_path):
    missing = tilewise("compile", tmp_path / "nope.py", check=False)
    assert missing.returncode == 2 and "no such file" in missing.stderr
    two = tmp_path / "two.py"
    two.write_text((EX / "ldgsts_copy.py").read_text() + "\nother = copy_async\n")
    amb = tilewise("compile", two, check=False)
    assert "say which with FILE:FUNC" in amb.stderr and "Traceback" not in amb.stderr
    bad = tilewise("compile", f"{EX / 'ldgsts_copy.py'}:nothing", check=False)
    assert "has no kernel named 'nothing'" in bad.stderr


def test_run_a_kernel_without_inputs_or_reference(tmp_path):
    src = tmp_path / "plain.py"
    src.write_text(
        "from tilewise import T\n\n"
        "@T.prim_func\n"
        "def double(A_ptr: T.handle):\n"
        "    A = T.match_buffer(A_ptr, (64,), \"float32\")\n"
        "    T.device_entry()\n"
        "    tid = T.thread_id([64])\n"
        "    A[tid] = A[tid] * 2.0\n")
    out = tilewise("run", src, "--sim").stdout
    assert "double on simulator" in out and "no reference() in the file" in out
