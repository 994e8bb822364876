"""The compile cache verifies every entry and rebuilds a damaged one (kernels and libdevice
slices alike); a cache folder that cannot be written warns once and compiles without it."""

import os
import warnings

import pytest

import tilewise as tw
from tilewise.codegen import cache, libdevice
from tilewise.knobs import override
from tilewise.script import from_source

POW = '''
@T.prim_func
def pow_kernel(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64,), "float32")
    T.device_entry()
    tid = T.thread_id([64])
    A[tid] = T.pow(A[tid], A[tid])
'''


def _entries(folder, kind):
    return [os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs
            if f.endswith("." + kind)]


def _fresh_pow():
    libdevice._slice.cache_clear()  # the in-process copy would hide the disk
    return tw.compile(from_source(POW, filename="pow.py"), "sm_90a").source("ptx")


@pytest.mark.parametrize("damage", ["truncate", "flip", "magic", "empty"])
def test_a_damaged_libdevice_slice_is_rebuilt(damage, _private_cache):
    ptx = _fresh_pow()
    (entry,) = _entries(_private_cache.cache_dir, "bc")
    good = open(entry, "rb").read()
    bad = {"truncate": good[:100], "flip": good[:60] + bytes([good[60] ^ 1]) + good[61:],
           "magic": b"XXXX" + good[4:], "empty": b""}[damage]
    open(entry, "wb").write(bad)
    for f in _entries(_private_cache.cache_dir, "ptx"):
        os.unlink(f)  # make the kernel link libdevice again
    assert _fresh_pow() == ptx
    assert cache.load(os.path.basename(entry)[:-3], "bc")[:4] == b"BC\xc0\xde"  # rewritten


def test_a_damaged_kernel_entry_is_rebuilt(_private_cache):
    ptx = _fresh_pow()
    (entry,) = _entries(_private_cache.cache_dir, "ptx")
    open(entry, "wb").write(b"TWC1" + b"\0" * 32 + b"{}")
    assert _fresh_pow() == ptx
    assert cache.load(os.path.basename(entry)[:-4], "ptx") is not None


def test_an_unwritable_cache_warns_once_and_compiles(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    cache._warned.discard(str(blocker))
    with override(cache_dir=str(blocker), cache_enabled=True):
        with pytest.warns(RuntimeWarning, match="cannot write the compile cache in .*"
                          "not-a-folder .*compiling without it") as rec:
            ptx = _fresh_pow()
        assert "TILEWISE_CACHE_DIR" in str(rec[0].message) and ".target sm_90a" in ptx
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _fresh_pow()  # no second warning


def test_an_unwritable_dump_folder_is_a_clear_error(tmp_path):
    blocker = tmp_path / "dump"
    blocker.write_text("")
    with override(dump_dir=str(blocker)):
        with pytest.raises(tw.CompileError, match="cannot write the ptx dump to "
                           "TILEWISE_DUMP_DIR=") as info:
            _fresh_pow()
    assert "writable folder" in info.value.hint
