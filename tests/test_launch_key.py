"""The launcher reuses the last launch's checked arguments and tensor maps only when every
argument is the same: GPU arrays by pointer, shape, strides, dtype and device; scalars by
type and value. Checked with __cuda_array_interface__ stand-ins (no GPU needed)."""

import numpy as np

from tilewise.runtime.launch import _launch_key


class Dev:
    def __init__(self, ptr, shape, typestr="<f4", strides=None):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": shape,
                                         "typestr": typestr, "strides": strides, "version": 3}


def test_the_same_arguments_give_the_same_key():
    assert _launch_key([Dev(4096, (8, 8)), 3, 0.5]) == _launch_key([Dev(4096, (8, 8)), 3, 0.5])


def test_any_difference_gives_another_key():
    base = _launch_key([Dev(4096, (8, 8)), 3])
    for other in ([Dev(8192, (8, 8)), 3], [Dev(4096, (8, 4)), 3], [Dev(4096, (8, 8), "<f2"), 3],
                  [Dev(4096, (8, 8), strides=(4, 32)), 3], [Dev(4096, (8, 8)), 4],
                  [Dev(4096, (8, 8)), 3.0], [Dev(4096, (8, 8)), np.int64(3)]):
        assert _launch_key(other) != base, other


def test_host_arrays_and_unknown_objects_are_never_reused():
    assert _launch_key([np.zeros(4)]) is None
    assert _launch_key([object()]) is None


class FakeTorch:
    """The attributes the launcher reads of a torch tensor (module name included)."""

    def __init__(self, ptr, shape, stride, dtype="torch.float16", dev="cuda"):
        self._p, self.shape, self._s, self.dtype = ptr, shape, stride, dtype
        self.device = type("Dev", (), {"type": dev, "index": 0})()
        self.ndim = len(shape)

    def data_ptr(self):
        return self._p

    def stride(self):
        return self._s


FakeTorch.__module__ = "torch.fake"


def test_torch_tensors_are_keyed_by_pointer_shape_strides_dtype_and_device():
    a = _launch_key([FakeTorch(256, (4, 8), (8, 1))])
    assert a == _launch_key([FakeTorch(256, (4, 8), (8, 1))])
    for other in (FakeTorch(512, (4, 8), (8, 1)), FakeTorch(256, (8, 4), (4, 1)),
                  FakeTorch(256, (4, 8), (1, 4)), FakeTorch(256, (4, 8), (8, 1), "torch.bfloat16")):
        assert _launch_key([other]) != a
    assert _launch_key([FakeTorch(256, (4, 8), (8, 1), dev="cpu")]) is None
