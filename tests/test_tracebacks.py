"""A TilewiseError raised through the Python API prints the user's frames and the message,
not tilewise's internals (errors.api_boundary); TILEWISE_TRACEBACK_FILTERING=off keeps them.

Each test runs a script in a new interpreter, as a user would (``python file.py``, pytest),
and reads what it printed on stderr."""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = str(ROOT / "src" / "tilewise")

KERNELS = '''import numpy as np
import tilewise as tw
from tilewise import T, Tx


def make_copy(n):
    @T.prim_func
    def shifted(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (n,), "float32")
        B = T.match_buffer(B_ptr, (n,), "float32")
        T.device_entry()
        T.cta_id([1])
        tx = T.thread_id([n])
        B[tx] = A[tx + 1]
    return shifted


def make_typo(n):
    @T.prim_func
    def typo(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (n,), "float32")
        T.device_entry()
        tx = T.thread_id([n])
        A[tx] = A[tx] * scale_factor
    return typo


@T.prim_func
def tcgen05_on_hopper(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (32,), "uint32")
    T.device_entry()
    T.cta_id([1])
    T.warp_id([1])
    T.ptx.tcgen05.relinquish_alloc_permit()


def arrays(n=32):
    return np.ones(n, np.float32), np.zeros(n, np.float32)
'''

CASES = '''
import traceback
from kernels import make_copy, make_typo, tcgen05_on_hopper, arrays, tw

def case(name, fn):
    print(f"=== {name}", file=sys.stderr)
    try:
        fn()
    except tw.TilewiseError:
        traceback.print_exc()

import sys
case("simulate", lambda: tw.simulate(make_copy(32), *arrays()))
case("decorator", lambda: make_typo(32))
case("compile", lambda: tw.compile(tcgen05_on_hopper, target="sm_90a"))
case("target", lambda: tw.compile(make_copy(32), target="sm_91z"))
case("launch", lambda: make_copy(32)(*arrays()))
print("=== uncaught", file=sys.stderr)
tw.simulate(make_copy(32), *arrays())   # the interpreter prints it
'''


def _run(tmp_path, args, env_extra=None):
    (tmp_path / "kernels.py").write_text(KERNELS)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), CUDA_VISIBLE_DEVICES="")
    env.pop("TILEWISE_TRACEBACK_FILTERING", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, text=True,
                          capture_output=True, timeout=120)


def _sections(stderr: str) -> dict:
    out, name = {}, ""
    for line in stderr.splitlines():
        if line.startswith("=== "):
            name = line[4:]
            continue
        out.setdefault(name, []).append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def _internal_frames(text: str) -> list[str]:
    return [line for line in text.splitlines()
            if line.lstrip().startswith("File ") and PACKAGE in line]


def test_api_errors_show_the_users_frames_and_the_message(tmp_path):
    (tmp_path / "main.py").write_text(CASES)
    r = _run(tmp_path, ["main.py"])
    assert r.returncode == 1, r.stderr
    assert _internal_frames(r.stderr) == [], r.stderr
    parts = _sections(r.stderr)
    sim = parts["simulate"]
    assert 'main.py", line 13, in <lambda>' in sim  # the user's call of tw.simulate
    assert "kernels.py:14:16: hazard: out-of-bounds access: A[32]" in sim  # the kernel line
    assert "B[tx] = A[tx + 1]" in sim
    deco = parts["decorator"]  # the decorator in a factory: both user frames, then the line
    assert 'kernels.py", line 19, in make_typo' in deco
    assert "kernels.py:24:24: script error: name 'scale_factor' is not defined" in deco
    comp = parts["compile"]
    assert 'main.py", line 15' in comp and "kernels.py:34:" in comp and "tcgen05" in comp
    target = parts["target"]  # re-worded on its way up: no "direct cause" of ours shown
    assert "sm_91z" in target and "direct cause" not in target and "During handling" \
        not in target
    assert "LaunchError" in parts["launch"] and 'main.py", line 17' in parts["launch"]
    uncaught = parts["uncaught"]
    assert uncaught.startswith("Traceback (most recent call last):")
    assert 'main.py", line 19, in <module>' in uncaught
    assert "hazard: out-of-bounds access" in uncaught
    assert "TILEWISE_TRACEBACK_FILTERING=off" in uncaught  # how to get the full frames


def test_the_knob_keeps_every_frame_for_bug_reports(tmp_path):
    (tmp_path / "main.py").write_text(CASES)
    r = _run(tmp_path, ["main.py"], {"TILEWISE_TRACEBACK_FILTERING": "off"})
    uncaught = _sections(r.stderr)["uncaught"]
    assert any("sim/runner.py" in f for f in _internal_frames(uncaught)), uncaught
    assert "TILEWISE_TRACEBACK_FILTERING=off shows them" not in uncaught


def test_pytest_shows_the_test_and_the_message(tmp_path):
    (tmp_path / "test_user.py").write_text(
        "from kernels import make_copy, arrays, tw\n\n"
        "def test_copy():\n"
        "    tw.simulate(make_copy(32), *arrays())\n")
    r = _run(tmp_path, ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=long",
                        "test_user.py"])
    out = r.stdout + r.stderr
    assert "1 failed" in out, out
    assert "test_user.py:4: HazardError" in out
    assert "hazard: out-of-bounds access" in out
    assert PACKAGE not in out, out
