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
