"""T.print and T.device_assert on the CPU: the PTX calls vprintf / __assertfail with the
format and the assert's file and line, the simulator prints every thread's line in thread
order (C's promotions applied) and raises at the assert's line, mistakes are errors at the
user's line, and the host names the kernels' asserts when the driver reports
CUDA_ERROR_ASSERT."""

import numpy as np
import pytest

import tilewise as tw
from errcheck import check_error
from tilewise.errors import DeviceAssertError, LaunchError
from tilewise.ptx import printf

FILE = "user_print.py"
KERNEL = '''
@T.prim_func
def k(A_ptr: T.handle, n: T.int32):
    A = T.match_buffer(A_ptr, (8,), "float32")
    T.device_entry()
    bx = T.cta_id([2])
    tx = T.thread_id([4])
    T.print("cta %d tid %d a=%.2f n=%u neg=%x big=%ld h=%g 100%%\\n", bx, tx, A[bx * 4 + tx], n,
            -1, T.int64(tx) * 1000000000000, T.float16(0.5))
    T.device_assert(A[bx * 4 + tx] < 6.0, "A too large")
'''


def _kernel():
    return tw.from_source(KERNEL, filename=FILE)


def test_the_ptx_calls_vprintf_and_assertfail():
    k = tw.compile(_kernel(), target="sm_90a")
    ptx = k.ptx
    assert "call.uni (retval0), vprintf," in ptx and "call.uni __assertfail," in ptx
    assert "trap;" in ptx
    llvm = k.source("llvm")
    # the format with the length modifiers of the promoted values (64-bit: ll)
    assert 'c"cta %d tid %d a=%.2f n=%u neg=%x big=%lld h=%g 100%%\\0a\\00"' in llvm
    assert f'c"{FILE}\\00"' in llvm and 'c"A too large\\00"' in llvm
    assert "@\"__assertfail\"(ptr" in llvm and ", i32 10, ptr" in llvm  # the assert's line
    assert k.asserts == [(f"{FILE}:10", "A too large")]
    assert k.cubin[:4] == b"\x7fELF"  # ptxas resolves the system calls


def test_the_simulator_prints_in_thread_order_then_raises_at_the_assert(capsys):
    a = np.arange(8, dtype=np.float32)
    with pytest.raises(DeviceAssertError) as info:
        tw.simulate(_kernel(), a, 3)
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["cta 0 tid 0 a=0.00 n=3 neg=ffffffff big=0 h=0.5 100%",
                       "cta 0 tid 1 a=1.00 n=3 neg=ffffffff big=1000000000000 h=0.5 100%"]
    assert [line.split(" a=")[0] for line in out] == [f"cta {c} tid {t}" for c in (0, 1)
                                                      for t in range(4)]
    text = str(info.value)
    assert text.startswith(f"{FILE}:10:4: device assertion failed: A too large [CTA (1, 0, 0),")
    assert "(thread 2) and 1 other thread(s)" in text


def test_a_passing_assert_is_silent(capsys):
    tw.simulate(_kernel(), np.zeros(8, np.float32), 1)
    assert len(capsys.readouterr().out.splitlines()) == 8


def test_formats_follow_c():
    fmt = "%5d|%-4u|%08.3f|%x|%c|%lld|%e"
    kinds = [("int", 32), ("uint", 32), ("float", 32), ("int", 16), ("int", 32), ("int", 64),
             ("float", 16)]
    assert printf.host_format(fmt, [-7, 3, 1.5, -1, 65, -2, 0.25], kinds) == (
        "   -7|3   |0001.500|ffffffff|A|-2|2.500000e-01")
    assert printf.device_format("%ld %d %hhx %f", ["i64", "i32", "i32", "f64"]) == (
        "%lld %d %x %f")
    assert printf.count("100%% of %d") == 1


BODY = '''
@T.prim_func
def k(A_ptr: T.handle, F_ptr: T.handle):
    A = T.match_buffer(A_ptr, (8,), "float32")
    F = T.match_buffer(F_ptr, (8,), "float8_e4m3")
    T.device_entry()
    tx = T.thread_id([8])
'''
ERRORS = [
    ("count", "T.print's format prints 2 value(s); the call passes 1", "one value per",
     'T.print("%d %d\\n", tx)  # <-'),
    ("string", "T.print cannot print strings", None, 'T.print("%s\\n", tx)  # <-'),
    ("float-as-int", "value 0 is a float32 but its conversion %d prints an integer",
     None, 'T.print("%d\\n", A[tx])  # <-'),
    ("int-as-float", "value 0 is a int32 but its conversion %.2f prints a float", None,
     'T.print("%.2f\\n", tx)  # <-'),
    ("star", "a width or precision given as '*'", None, 'T.print("%*d\\n", 3, tx)  # <-'),
    ("fp8", "value 0 of T.print is a float8_e4m3", "by its bits", 'T.print("%f", F[tx])  # <-'),
    ("format-not-text", "operand 'fmt' of T.print must be a string literal", None,
     "T.print(tx)  # <-"),
    ("message-not-text", "operand 'msg' of T.device_assert must be a string literal", None,
     "T.device_assert(tx < 4, 3)  # <-"),
]


@pytest.mark.parametrize("name,message,hint,line", ERRORS, ids=[e[0] for e in ERRORS])
def test_mistakes_are_errors_at_the_line(name, message, hint, line):
    src = BODY + "    " + line + "\n"
    with pytest.raises(tw.TilewiseError) as info:
        tw.from_source(src, filename=FILE)
    check_error(info.value, message, hint, src, FILE)


def test_the_host_names_the_asserts_on_cuda_error_assert(monkeypatch):
    from tilewise.runtime import device

    class Driver:
        class CUresult:
            CUDA_SUCCESS = 0

    monkeypatch.setattr(device, "_driver", lambda: Driver)
    monkeypatch.setattr(device, "ASSERTS", [])
    device.note_asserts("k", [(f"{FILE}:10", "A too large")])
    with pytest.raises(LaunchError) as info:
        device.check((710,), "cuCtxSynchronize")
    text = str(info.value)
    assert "a T.device_assert failed on the GPU (CUDA_ERROR_ASSERT)" in text
    assert f"{FILE}:10: A too large (in k)" in text
    assert "restart the process" in info.value.hint


def test_saved_kernels_keep_their_asserts(tmp_path):
    k = tw.compile(_kernel(), target="sm_90a")
    k.save(tmp_path / "k.twk")
    assert tw.load(tmp_path / "k.twk").asserts == [(f"{FILE}:10", "A too large")]
