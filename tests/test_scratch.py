"""tilewise.runtime.scratch: a kernel object's scratch arrays, one set per (library, stream,
device, key), made on the stream that uses them, the least recently used let go past the
limit. Checked with a stand-in CuPy module (no GPU here): which stream each set was
allocated under is recorded by the stand-in's allocator."""

import contextlib
import sys
import types

import numpy as np
import pytest

import tilewise
from tilewise.runtime.scratch import Scratch, on_stream


@pytest.fixture
def fake_cupy(monkeypatch):
    state = {"current": 7, "stack": []}

    class ndarray:
        def __init__(self, shape, dtype, stream):
            self.shape, self.dtype, self.stream = shape, dtype, stream
            self.device = types.SimpleNamespace(id=0)

    def alloc(shape, dtype):
        where = state["stack"][-1] if state["stack"] else state["current"]
        return ndarray(shape, dtype, where)

    @contextlib.contextmanager
    def external(ptr):
        state["stack"].append(ptr)
        try:
            yield
        finally:
            state["stack"].pop()

    cuda = types.SimpleNamespace(
        Device=lambda i: contextlib.nullcontext(),
        get_current_stream=lambda: types.SimpleNamespace(ptr=state["current"]),
        ExternalStream=external)
    mod = types.SimpleNamespace(ndarray=ndarray, cuda=cuda, empty=alloc,
                                zeros=alloc)
    monkeypatch.setitem(sys.modules, "cupy", mod)
    return mod, state


def test_one_set_per_stream_made_on_that_stream(fake_cupy):
    cp, state = fake_cupy
    like = cp.ndarray((4,), "float32", 7)
    s = Scratch("a test's workspace")
    made = []

    def make(lib):
        made.append(1)
        return (lib.empty(like, (2, 3), "float32"), lib.zeros(like, (2,), "int32"))

    a = s.get(like, None, (), make)  # the current stream (7)
    assert a[0].stream == 7 and a[1].stream == 7
    assert s.get(like, 7, (), make) is a  # the same stream named: the same set
    b = s.get(like, 99, (), make)  # another stream: its own set, allocated on it
    assert b is not a and b[0].stream == 99 and b[1].stream == 99
    c = s.get(like, 99, ("other",), make)  # another key
    assert c is not b and len(s) == 3 and len(made) == 3
    with on_stream(like, 99):  # work for a launch on 99 runs there
        assert cp.empty((1,), "float32").stream == 99
    assert cp.empty((1,), "float32").stream == 7


def test_past_the_limit_the_least_recently_used_set_goes(fake_cupy):
    cp, _ = fake_cupy
    like = cp.ndarray((4,), "float32", 7)
    s = Scratch("a test's workspace", limit=2)
    first = s.get(like, 1, (), lambda lib: (lib.empty(like, (1,), "float32"),))
    s.get(like, 2, (), lambda lib: (lib.empty(like, (1,), "float32"),))
    assert s.get(like, 1, (), lambda lib: pytest.fail("made again")) is first  # now recent
    s.get(like, 3, (), lambda lib: (lib.empty(like, (1,), "float32"),))  # 2 goes
    assert len(s) == 2
    assert s.get(like, 1, (), lambda lib: pytest.fail("made again")) is first
    again = []
    s.get(like, 2, (), lambda lib: again.append(1) or (lib.empty(like, (1,), "float32"),))
    assert again == [1]


def test_arrays_of_another_library_are_refused_by_name():
    s = Scratch("a stream-K GEMM's workspace")
    with pytest.raises(tilewise.LaunchError, match="a stream-K GEMM's workspace .* not "
                                                   "ndarray"):
        s.get(np.zeros(3), None, (), lambda lib: ())
    assert isinstance(on_stream(np.zeros(3), None), contextlib.nullcontext)
