"""A kernel's source is the text its function was compiled from. A function ``exec`` made
from another text under a real file's name used to be parsed from the file's text (silently
another kernel): now the text is checked against the function's code; the kernel's own
text is read when it is registered with linecache (IPython's way), and otherwise the
mismatch is a ScriptError saying what to do."""

import linecache
import pathlib

import pytest

import tilewise as tw

KERNEL = '''
from tilewise import T


@T.prim_func
def k(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64,), "float32")
    T.device_entry()
    tid = T.thread_id([64])
    A[tid] = A[tid] * 2.0
'''


def _exec(text: str, path: pathlib.Path, register: bool = False) -> dict:
    if register:
        linecache.cache[str(path)] = (len(text), None, text.splitlines(True), str(path))
    ns: dict = {"__name__": "user_module"}
    try:
        exec(compile(text, str(path), "exec"), ns)  # noqa: S102 - what the user does
    finally:
        linecache.cache.pop(str(path), None)
    return ns


def test_the_file_s_own_text_is_used_when_it_is_what_ran(tmp_path):
    f = tmp_path / "k.py"
    f.write_text(KERNEL)
    assert "A[tid] * 2.0" in _exec(KERNEL, f)["k"].script()


def test_another_text_under_the_file_s_name_is_refused_not_mistaken(tmp_path):
    f = tmp_path / "k.py"
    f.write_text(KERNEL)
    other = KERNEL.replace("* 2.0", "* 3.0")
    with pytest.raises(tw.ScriptError) as e:
        _exec(other, f)
    text = str(e.value)
    assert f"the text at {f}:5 is not the source of 'k'" in text
    assert "tilewise.from_source" in e.value.hint and "linecache" in e.value.hint


def test_a_registered_text_is_the_kernel_s_source(tmp_path):
    f = tmp_path / "k.py"
    f.write_text(KERNEL)
    other = KERNEL.replace("* 2.0", "* 3.0")
    assert "A[tid] * 3.0" in _exec(other, f, register=True)["k"].script()


def test_a_file_edited_after_loading_is_refused(tmp_path):
    f = tmp_path / "k.py"
    f.write_text(KERNEL.replace("@T.prim_func\n", ""))
    ns = _exec(KERNEL.replace("@T.prim_func\n", ""), f)
    f.write_text(KERNEL.replace("* 2.0", "* 5.0"))
    linecache.checkcache(str(f))
    with pytest.raises(tw.ScriptError, match="is not the source of 'k'"):
        tw.T.prim_func(ns["k"])
