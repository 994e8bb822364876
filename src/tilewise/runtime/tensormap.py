"""TMA tensor maps for a launch, encoded by the driver from the arrays.

A kernel whose copies went to the ``tma`` variant has hidden parameters
(``PrimFunc.attrs["tensor_maps"]``, :class:`tilewise.ptx.tma.TensorMapParam`): one
``CUtensorMap`` per global buffer and box. At launch each is encoded with the driver's
``cuTensorMapEncodeTiled`` from the array bound to that buffer: its address, the extents
and strides the launch's sizes give (so one kernel serves every array size), and the box,
swizzle, fill and L2 promotion the variant chose. The result is passed by value (128
bytes, the ``byval`` ``nvvm.grid_constant`` parameter).

The entry point is asked of the driver through ``cuda.bindings`` (``cuGetProcAddress``)
and called on a buffer this module aligns to 128 bytes: the driver wants the map aligned
(64 bytes before CUDA 13, 128 from 13) and ``cuda.bindings``' own ``CUtensorMap`` objects
live in Python memory aligned to 16 only. Encoded maps are cached per (address, extents,
strides, box, swizzle, fill, promotion, type), so a loop of launches on the same arrays
encodes once.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict

from ..errors import LaunchError
from ..ir import signature as sig
from ..ptx import tma
from . import device

_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 512
_ALIGN = 128
_ENCODE = None

_C = ctypes
_PROTO = _C.CFUNCTYPE(_C.c_int, _C.c_void_p, _C.c_int, _C.c_uint32, _C.c_void_p,
                      _C.POINTER(_C.c_uint64), _C.POINTER(_C.c_uint64),
                      _C.POINTER(_C.c_uint32), _C.POINTER(_C.c_uint32),
                      _C.c_int, _C.c_int, _C.c_int, _C.c_int)


def _encoder():
    """``cuTensorMapEncodeTiled`` of the driver (CUDA 12.0 ABI), resolved once."""
    global _ENCODE
    if _ENCODE is None:
        driver = device._driver()
        flags = driver.CUdriverProcAddress_flags.CU_GET_PROC_ADDRESS_DEFAULT
        found = device.check(driver.cuGetProcAddress(b"cuTensorMapEncodeTiled", 12000, flags),
                             "cuGetProcAddress")
        # (pfn, symbol status) since CUDA 12.5's bindings; pfn alone before
        pfn = found[0] if isinstance(found, tuple) else found
        if not int(pfn):
            raise LaunchError("this CUDA driver has no cuTensorMapEncodeTiled (TMA needs a "
                              "CUDA 12 driver or newer)", hint="update the NVIDIA driver")
        _ENCODE = _PROTO(int(pfn))
    return _ENCODE


def _aligned_bytes(n: int, align: int):
    import numpy as np

    raw = np.zeros(n + align, np.uint8)
    start = -raw.ctypes.data % align
    return raw[start:start + n]


def encode(spec: tma.TensorMapSpec, address: int, dims: list[int], strides: list[int]):
    """The 128 bytes of the tensor map (a numpy array aligned to 128 bytes)."""
    key = (address, tuple(dims), tuple(strides), spec.box, spec.swizzle, spec.oob,
           spec.l2_promotion, spec.dtype)
    out = _CACHE.get(key)
    if out is not None:
        _CACHE.move_to_end(key)
        return out
    out = _aligned_bytes(tma.TENSORMAP_BYTES, _ALIGN)
    rank = spec.rank
    u64, u32 = _C.c_uint64, _C.c_uint32
    err = _encoder()(out.ctypes.data, tma.DATA_TYPES[spec.dtype], rank, _C.c_void_p(address),
                     (u64 * rank)(*dims), (u64 * max(rank - 1, 1))(*strides),
                     (u32 * rank)(*spec.box), (u32 * rank)(*([1] * rank)), 0,
                     tma.SWIZZLE_MODES[spec.swizzle], tma.L2_PROMOTION[spec.l2_promotion],
                     tma.OOB_FILL[spec.oob])
    if err:
        driver = device._driver()
        name = driver.cuGetErrorName(driver.CUresult(err))[1]
        raise LaunchError(f"cuTensorMapEncodeTiled refused the tensor map ({spec.describe()}, "
                          f"extents {dims}, byte strides {strides}): "
                          f"{name.decode() if isinstance(name, bytes) else err}")
    _CACHE[key] = out
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return out


def _geometries(kernel, call):
    """``(map, address, extents, byte strides)`` of every tensor map of a launch, checked."""
    maps = kernel.launch_signature.func.attr("tensor_maps", ())
    params = sig.declared_params(kernel.launch_params)
    for m in maps:
        info = call.values[next(i for i, p in enumerate(params) if p is m.buffer.data)]
        yield (m, info.ptr, *tma.launch_geometry(m, call.binding.value, info.ptr))


def check_tensor_maps(kernel, call) -> None:
    """What the driver would refuse of the launch's tensor maps, as LaunchErrors naming the
    buffer, before the driver is touched."""
    for _ in _geometries(kernel, call):
        pass


def launch_slots(kernel, call) -> list:
    """The bytes of every tensor-map parameter of ``kernel`` for checked launch ``call``."""
    return [encode(m.spec, ptr, dims, strides)
            for m, ptr, dims, strides in _geometries(kernel, call)]
