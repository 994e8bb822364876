"""The command line's error corpus: every user mistake is one message on stderr, exit status
2, no traceback; the message names the user's file and line, or the argument at fault.

Each case writes its files into a fresh folder and runs ``tilewise.cli.main`` in-process
(test_cli.py runs the console script itself in a new process)."""

import pathlib

import pytest

from tilewise.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[1]
VECTOR_ADD = ROOT / "examples" / "vector_add.py"

KERNEL = '''import numpy as np
from tilewise import T

@T.prim_func
def k(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64,), "float32")
    B = T.match_buffer(B_ptr, (64,), "float32")
    T.device_entry()
    tid = T.thread_id([64])
    B[tid] = A[tid] * 2.0
'''
GOOD_INPUTS = '''
def inputs(rng):
    return [np.ones(64, np.float32), np.zeros(64, np.float32)]
'''


def with_inputs(body: str) -> str:
    return KERNEL + "\ndef inputs(rng):\n" + body + "\n"


def with_reference(body: str, extra: str = "") -> str:
    return KERNEL + GOOD_INPUTS + extra + "\ndef reference(a, b):\n" + body + "\n"


# (id, file text or None, argv with {f} for the file and {d} for the folder,
#  expected parts of stderr, the line of the file the message must name or None)
CASES = [
    ("syntax-error", "from tilewise import T\ndef k(A_ptr: T.handle)\n    pass\n",
     ["compile", "{f}"], ["is not valid Python: expected ':'", "hint: fix the syntax error"], 2),
    ("null-bytes", "x = 1\n\x00\n", ["compile", "{f}"],
     ["is not valid Python: source code string cannot contain null bytes"], None),
    ("name-error-at-import", "from tilewise import T\n\nundefined_thing\n", ["compile", "{f}"],
     ["raised NameError: name 'undefined_thing' is not defined"], 3),
    ("error-in-a-function-called-at-import",
     "def helper():\n    return 1 // 0\n\nX = helper()\n", ["explain", "{f}"],
     ["raised ZeroDivisionError: integer division or modulo by zero"], 2),
    ("import-of-a-missing-module", "import tilewise_no_such_module\n", ["compile", "{f}"],
     ["raised ModuleNotFoundError: No module named 'tilewise_no_such_module'"], 1),
    ("sys-exit-at-import", "import sys\nsys.exit(3)\n", ["compile", "{f}"],
     ["raised sys.exit()"], 2),
    ("script-error-at-import", KERNEL.replace("A[tid] * 2.0", "A[tidd] * 2.0"),
     ["compile", "{f}"], ["script error: name 'tidd' is not defined", "did you mean 'tid'?"],
     10),
    ("missing-file", None, ["compile", "{d}/nope.py"], ["no such file: ", "nope.py"], None),
    ("missing-file-with-func", None, ["run", "{d}/nope.py:k", "--sim"],
     ["no such file: ", "nope.py"], None),
    ("a-folder", None, ["compile", "{d}"], ["is a folder, not a Python file"], None),
    ("func-not-an-identifier", KERNEL, ["compile", "{f}:not-a-name"],
     ["'not-a-name' after the ':' is not a kernel name"], None),
    ("func-missing", KERNEL, ["compile", "{f}:other"],
     ["has no kernel named 'other'", "kernels in it: k"], None),
    ("two-kernels", KERNEL + "\nk2 = k\n", ["compile", "{f}"],
     ["defines 2 kernels; say which with FILE:FUNC"], None),
    ("no-kernel", "x = 1\n", ["compile", "{f}"],
     ["defines 0 kernels", "kernels in it: none"], None),
    ("output-into-a-missing-folder", KERNEL, ["compile", "{f}", "-o", "{d}/no/such/k.ptx"],
     ["-o ", "the folder ", "does not exist"], None),
    ("output-onto-a-folder", KERNEL, ["compile", "{f}", "-o", "{d}"],
     ["is a folder; -o takes the name of the file to write"], None),
    ("cubin-to-stdout", KERNEL, ["compile", "{f}", "--emit", "cubin"],
     ["a cubin is binary; write it to a file with -o OUT"], None),
    ("unknown-target", KERNEL, ["compile", "{f}", "--target", "sm_91"],
     ["unknown target 'sm_91'", "did you mean 'sm_90'"], None),
    ("unbuildable-target", KERNEL, ["compile", "{f}", "--target", "sm_70"],
     ["target 'sm_70' cannot be built", "use sm_75 or newer"], None),
    ("renamed-target", KERNEL, ["explain", "{f}", "--target", "sm_101a"],
     ["renamed sm_101 to sm_110", "use 'sm_110a'"], None),
    ("inputs-returns-an-array", with_inputs("    return np.ones(64, np.float32)"),
     ["run", "{f}", "--sim"], ["inputs(rng) in ", "returned ndarray; it must return a list"],
     None),
    ("inputs-returns-none", with_inputs("    pass"), ["run", "{f}", "--sim"],
     ["returned NoneType"], None),
    ("inputs-raises", with_inputs("    return [np.ones(3)[5]]"), ["run", "{f}", "--sim"],
     ["inputs() in ", "raised IndexError: index 5 is out of bounds"], 13),
    ("inputs-too-few", with_inputs("    return [np.ones(64, np.float32)]"),
     ["run", "{f}", "--sim"], ["k takes 2 argument(s) (A_ptr, B_ptr), got 1"], 5),
    ("inputs-not-arrays", with_inputs("    return [1, 2]"), ["run", "{f}", "--sim"],
     ["argument for 'A' must be a numpy array, got int"], 5),
    ("inputs-wrong-dtype", with_inputs("    return [np.ones(64), np.ones(64)]"),
     ["run", "{f}", "--sim"], ["argument for 'A' has dtype float64, the kernel expects float32"],
     5),
    ("inputs-wrong-size", with_inputs("    return [np.ones(8, np.float32)] * 2"),
     ["run", "{f}", "--sim"], ["argument for 'A' has shape (8,), the kernel expects (64,)",
                               "hint: pass an array of shape (64,)"], 5),
    ("reference-too-few", with_reference("    return [a]"), ["run", "{f}", "--sim"],
     ["reference() in ", "returned 1 array(s), the kernel takes 2 (A, B)"], None),
    ("reference-wrong-shape", with_reference("    return [a, b[:4]]"), ["run", "{f}", "--sim"],
     ["returned float32[4] for 'B', which is float32[64]"], None),
    ("reference-wrong-dtype", with_reference("    return [a, a.astype(np.float64) * 2]"),
     ["run", "{f}", "--sim"], ["returned float64[64] for 'B'", "convert with .astype"], None),
    ("reference-not-a-list", with_reference("    return None"), ["run", "{f}", "--sim"],
     ["reference() in ", "returned NoneType; it must return a list"], None),
    ("reference-raises", with_reference("    return [a, b.reshape(3, 3)]"),
     ["run", "{f}", "--sim"], ["reference() in ", "raised ValueError: cannot reshape"], 16),
    ("rtol-not-a-number", with_reference("    return [a, a * 2]", "\nRTOL = 'loose'\n"),
     ["run", "{f}", "--sim"], ["RTOL in ", "is 'loose'; it must be a number >= 0"], None),
    ("hazard-in-the-kernel", KERNEL.replace("B[tid] = A[tid] * 2.0", "B[0] = A[tid]"),
     ["run", "{f}", "--sim"], ["hazard: write-write race on global memory", "writes the same bytes in the same statement"], 10),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_cli_user_error(case, tmp_path, capsys):
    _, text, argv, parts, line = case
    f = tmp_path / "user_kernel.py"
    if text is not None:
        f.write_text(text)
    args = [a.replace("{f}", str(f)).replace("{d}", str(tmp_path)) for a in argv]
    assert main(args) == 2
    out = capsys.readouterr()
    for p in parts:
        assert p in out.err, out.err
    assert "Traceback" not in out.err and "tilewise/" not in out.err
    assert len([ln for ln in out.err.splitlines() if "error" in ln and ":" in ln]) >= 1
    if line is not None:
        assert f"{f}:{line}:" in out.err or f"user_kernel.py:{line}:" in out.err, out.err


@pytest.mark.parametrize("argv, message", [
    (["run", str(VECTOR_ADD), "--sim", "--seed", "-1"],
     "argument --seed: -1 is negative; a seed is an integer >= 0"),
    (["run", str(VECTOR_ADD), "--sim", "--seed", "x"], "argument --seed: 'x' is not an integer"),
    (["compile", str(VECTOR_ADD), "--emit", "sass"], "argument --emit: invalid choice: 'sass'"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_bad_command_lines_exit_2_with_usage(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "usage: tilewise" in err and "Traceback" not in err


def test_a_path_holding_a_colon_loads(tmp_path, capsys):
    f = tmp_path / "a:b.py"
    f.write_text(KERNEL)
    assert main(["compile", str(f), "--emit", "ir"]) == 0
    assert main(["compile", f"{f}:k", "--emit", "ir"]) == 0
    assert capsys.readouterr().out.count("def k(") == 2
    d = tmp_path / "x:y"  # a colon in a folder's name, and FUNC
    d.mkdir()
    (d / "k.py").write_text(KERNEL)
    assert main(["compile", f"{d / 'k.py'}:k", "--emit", "ir"]) == 0
    assert "def k(" in capsys.readouterr().out


def test_a_missing_path_holding_a_colon_is_named_whole(tmp_path, capsys):
    missing = f"{tmp_path}/no:such/k.py"
    assert main(["compile", missing]) == 2
    assert f"no such file: {missing}" in capsys.readouterr().err


def test_output_is_written_where_asked(tmp_path, capsys):
    f = tmp_path / "k.py"
    f.write_text(KERNEL)
    assert main(["compile", str(f), "--emit", "ir", "-o", str(tmp_path / "k.ir")]) == 0
    assert "def k(" in (tmp_path / "k.ir").read_text()


def test_a_mismatch_is_exit_1_not_a_user_error(tmp_path, capsys):
    f = tmp_path / "k.py"
    f.write_text(with_reference("    return [a, a * 3]"))
    assert main(["run", str(f), "--sim"]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH (compared bit for bit): argument 1 (B): 64 of 64 elements differ; the " \
           "worst at (0): got 2, want 3; max abs error 1, max rel error 0.3333" in out
