"""The launch-time argument checks, with fake device arrays (no GPU needed)."""

import numpy as np
import pytest

import tilewise as tw
from tilewise.errors import LaunchError
from tilewise.runtime import check_arguments, describe, gpu_available

from .test_compile import _example


class FakeDeviceArray:
    def __init__(self, shape, typestr="<f4", ptr=0x10000, strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                         "data": (ptr, False), "strides": strides, "version": 3}


@pytest.fixture(scope="module")
def kernel():
    return tw.compile(_example("vector_add").make_vector_add(1024), "sm_90a")


def _check(k, *arrays):
    return check_arguments(k.func, arrays)


def test_good_arguments_pass(kernel):
    call = _check(kernel, *(FakeDeviceArray((1024,)) for _ in range(3)))
    assert [i.ptr for i in call.values] == [0x10000] * 3


@pytest.mark.parametrize("bad,message", [
    (FakeDeviceArray((1024,), "<f2"), "float16"),
    (FakeDeviceArray((1023,)), "shape (1023,)"),
    (FakeDeviceArray((1024,), ptr=0x10004), "16-byte aligned"),
    (FakeDeviceArray((1024,), strides=(8,)), "non-contiguous"),
    (np.zeros(1024, np.float32), "tw.simulate"),
    ("not an array", "cannot pass a str"),
])
def test_bad_argument_names_the_parameter(kernel, bad, message):
    good = FakeDeviceArray((1024,))
    with pytest.raises(LaunchError) as info:
        _check(kernel, good, bad, good)
    assert message in str(info.value)
    if not isinstance(bad, str):
        assert "'B_ptr'" in str(info.value)


def test_argument_count(kernel):
    with pytest.raises(LaunchError, match="takes 3 argument"):
        _check(kernel, FakeDeviceArray((1024,)))


def test_describe_2d_strides():
    info = describe(FakeDeviceArray((4, 8), "<i1", strides=(8, 1)))
    assert info.shape == (4, 8) and info.dtype == "int8"


def test_launch_without_gpu_is_a_launch_error(kernel):
    if gpu_available():
        pytest.skip("a GPU is present")
    with pytest.raises(LaunchError):
        kernel(*(FakeDeviceArray((1024,)) for _ in range(3)))


def test_a_symbolic_grid_is_computed_and_checked_before_the_driver():
    """Sizes bound from the arrays give the grid; a grid that is not a whole number of
    clusters is a LaunchError before anything reaches the driver."""
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1] / "core"))
    import kernels_core as K
    from tilewise.runtime.launch import prepare

    k = tw.compile(K.axpy, "sm_90a")
    call, grid = prepare(k, [FakeDeviceArray((1000,)), FakeDeviceArray((1000,)), 0.5])
    assert grid == (8, 1, 1) and [int(v) for v in call.values[3:]] == [1000]
    kc = tw.compile(K.axpy, "sm_90a", cluster_dim=2)
    prepare(kc, [FakeDeviceArray((1000,)), FakeDeviceArray((1000,)), 0.5])
    with pytest.raises(LaunchError, match="not a whole number of clusters"):
        prepare(kc, [FakeDeviceArray((300,)), FakeDeviceArray((300,)), 0.5])


def test_sm_count_with_a_default_answers_without_a_gpu(monkeypatch):
    """sm_count(default=n): the device's SM count, or n where no GPU answers (what the
    persistent examples build for on a machine without one)."""
    from tilewise.runtime import device

    monkeypatch.setattr(device, "gpu_available", lambda: False)
    assert device.sm_count(default=132) == 132
    monkeypatch.setattr(device, "gpu_available", lambda: True)
    monkeypatch.setattr(device, "device_attribute", lambda name, ordinal=0: 78)
    assert device.sm_count(default=132) == 78 and device.sm_count() == 78
