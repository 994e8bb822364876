"""The launcher's per-signature fast path, on the CPU: a stand-in driver records what
cuLaunchKernel receives, stand-in tensors carry what the launcher reads of torch tensors.
Checks run once per signature (dtype, shape, strides, device, scalar values); every launch
still gets its own data pointers, a misaligned one is still refused, a launch refused for
the context sets it and launches again."""

import ctypes

import pytest

import tilewise as tw
from tilewise.errors import LaunchError
from tilewise.runtime import device, launch

from .kernels import saxpy



class Dev:
    type, index = "cuda", 0

    def __eq__(self, other):
        return isinstance(other, Dev)

    def __hash__(self):
        return 0


class FakeTensor:
    """What the launcher reads of a torch tensor."""

    def __init__(self, ptr, n):
        self.ptr, self.shape, self.dtype, self.device = ptr, (n,), "torch.float32", Dev()

    def data_ptr(self):
        return self.ptr

    def stride(self):
        return (1,)

    def element_size(self):
        return 4


FakeTensor.__module__ = "torch.fake"


class FakeDriver:
    class CUresult:
        CUDA_SUCCESS = 0

    def __init__(self):
        self.launches, self.refuse = [], 0

    def CUstream(self, raw):  # noqa: N802 - the driver's spelling
        return ("stream", raw)

    def cuGetErrorName(self, err):  # noqa: N802
        return 0, f"CUDA_ERROR_{int(err)}".encode()

    def cuModuleLoadData(self, image):  # noqa: N802
        return 0, "module"

    def cuModuleGetFunction(self, module, name):  # noqa: N802
        return 0, "function"

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):  # noqa: N802
        if self.refuse:
            self.refuse -= 1
            return (201,)
        addrs = (ctypes.c_void_p * 4).from_address(params)
        raw = [ctypes.c_uint64.from_address(addrs[i]).value for i in range(4)]
        a = ctypes.c_float.from_address(addrs[2]).value
        self.launches.append(((gx, gy, gz), bx, stream, raw[0], raw[1], a, raw[3]))
        return (0,)


@pytest.fixture
def rig(monkeypatch):
    drv = FakeDriver()
    made_current = []
    monkeypatch.setattr(device, "_driver", lambda: drv)
    monkeypatch.setattr(device, "device_target", lambda ordinal=0: tw.Target("sm_90a"))
    monkeypatch.setattr(device, "make_current", lambda ordinal=0: made_current.append(ordinal))
    prepared = []
    real = launch.prepare
    monkeypatch.setattr(launch, "prepare", lambda *a: prepared.append(1) or real(*a))
    k = tw.compile(saxpy, target="sm_90a")
    lau = launch.Launcher(k)
    lau._tensor, lau._raw_stream = FakeTensor, lambda ordinal: 77
    return lau, drv, prepared, made_current


def test_one_check_per_signature_and_fresh_pointers_per_launch(rig):
    lau, drv, prepared, _ = rig
    for ptr in (4096, 8192, 4096 + 64):
        lau([FakeTensor(ptr, 300), FakeTensor(ptr + 2048, 300), 0.5], None)
    assert len(prepared) == 1
    assert [(x, y) for _, _, _, x, y, _, _ in drv.launches] == [
        (4096, 6144), (8192, 10240), (4160, 6208)]
    grid, block, stream, _, _, a, n = drv.launches[0]
    assert (grid, block, stream, a, n) == ((3, 1, 1), 128, ("stream", 77), 0.5, 300)


def test_a_new_size_or_scalar_is_a_new_signature(rig):
    lau, drv, prepared, _ = rig
    lau([FakeTensor(4096, 300), FakeTensor(8192, 300), 0.5], None)
    lau([FakeTensor(4096, 1000), FakeTensor(8192, 1000), 0.5], None)
    lau([FakeTensor(4096, 1000), FakeTensor(8192, 1000), 2.0], None)
    assert len(prepared) == 3
    assert [(g, a, n) for g, _, _, _, _, a, n in drv.launches] == [
        ((3, 1, 1), 0.5, 300), ((8, 1, 1), 0.5, 1000), ((8, 1, 1), 2.0, 1000)]


def test_a_misaligned_pointer_is_refused_on_the_fast_path(rig):
    lau, drv, _, _ = rig
    lau([FakeTensor(4096, 300), FakeTensor(8192, 300), 0.5], None)
    with pytest.raises(LaunchError) as info:
        lau([FakeTensor(4096 + 4, 300), FakeTensor(8192, 300), 0.5], None)
    assert "is not 16-byte aligned" in str(info.value) and "parameter 'X_ptr'" in str(info.value)
    assert len(drv.launches) == 1


def test_mismatched_sizes_are_refused_every_time(rig):
    lau, drv, prepared, _ = rig
    for _ in range(2):
        with pytest.raises(LaunchError, match="size saxpy_n"):
            lau([FakeTensor(4096, 300), FakeTensor(8192, 200), 0.5], None)
    assert len(prepared) == 2 and not drv.launches


def test_a_launch_refused_for_the_context_sets_it_and_launches_again(rig):
    lau, drv, _, made_current = rig
    lau([FakeTensor(4096, 300), FakeTensor(8192, 300), 0.5], None)
    before = len(made_current)
    drv.refuse = 1
    lau([FakeTensor(4096, 300), FakeTensor(8192, 300), 0.5], None)
    assert len(drv.launches) == 2 and len(made_current) == before + 1


def test_an_explicit_stream_is_used(rig):
    lau, drv, _, _ = rig
    lau([FakeTensor(4096, 300), FakeTensor(8192, 300), 0.5], 5)
    assert drv.launches[-1][2] == ("stream", 5)
