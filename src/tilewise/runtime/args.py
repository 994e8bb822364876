"""Describe array arguments and check them against a kernel's buffers before launch.

Accepted: torch tensors, anything with ``__cuda_array_interface__`` (CuPy, Numba, ...),
anything with ``__dlpack__`` (through ``cuda.core``'s StridedMemoryView). Every mismatch is
a :class:`LaunchError` naming the parameter: wrong count, a CPU array, dtype, shape,
non-contiguous strides, a data pointer not 16-byte aligned (the code generator assumes
``align 16`` parameters to emit vector accesses), another device.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import LaunchError, TilewiseError
from ..ir import signature as sig

ALIGNMENT = 16


@dataclass(frozen=True)
class ArrayInfo:
    """What a launch needs to know about one array argument."""

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None  # bytes; None = C-contiguous
    dtype: str  # a tilewise dtype name when known, else the foreign name
    device: str  # "cuda" or "cpu"
    ordinal: int | None = None  # the CUDA device, when the array says


def _dtype_name(name: str) -> str:
    from ..ir.dtype import dtype

    try:
        return dtype(name.replace("torch.", "")).name
    except TilewiseError:
        return name


def _from_torch(t) -> ArrayInfo:
    item = t.element_size()
    dev = t.device
    return ArrayInfo(int(t.data_ptr()), tuple(t.shape), tuple(s * item for s in t.stride()),
                     _dtype_name(str(t.dtype)), "cuda" if dev.type == "cuda" else dev.type,
                     dev.index)


def _from_cai(obj, cai: dict) -> ArrayInfo:
    import numpy as np

    try:
        name = np.dtype(cai["typestr"]).name
    except TypeError:
        name = cai["typestr"]
    strides = cai.get("strides")
    return ArrayInfo(int(cai["data"][0]), tuple(cai["shape"]),
                     tuple(strides) if strides is not None else None, _dtype_name(name), "cuda")


def _from_dlpack(obj) -> ArrayInfo:
    dev_type, ordinal = obj.__dlpack_device__()
    if int(dev_type) not in (2, 13):  # kDLCUDA, kDLCUDAManaged
        return ArrayInfo(0, (), None, "?", "cpu")
    try:  # cuda.core >= 0.4 / 1.x
        from cuda.core.utils import StridedMemoryView
    except ImportError:  # older releases kept it under experimental
        from cuda.core.experimental.utils import StridedMemoryView

    make = getattr(StridedMemoryView, "from_dlpack", None)  # the constructor form is deprecated
    view = make(obj, stream_ptr=-1) if make is not None else StridedMemoryView(obj, stream_ptr=-1)
    item = view.dtype.itemsize
    strides = tuple(s * item for s in view.strides) if view.strides is not None else None
    return ArrayInfo(int(view.ptr), tuple(view.shape), strides, _dtype_name(view.dtype.name),
                     "cuda", int(ordinal))


def describe(obj) -> ArrayInfo:
    """An :class:`ArrayInfo` for a kernel argument; LaunchError if it is not an array."""
    import numpy as np

    if isinstance(obj, np.ndarray):
        return ArrayInfo(obj.ctypes.data, obj.shape, obj.strides, _dtype_name(obj.dtype.name),
                         "cpu")
    if type(obj).__module__.startswith("torch"):
        return _from_torch(obj)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return _from_cai(obj, cai)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _from_dlpack(obj)
    raise LaunchError(f"cannot pass a {type(obj).__name__} to a GPU kernel",
                      hint="pass torch tensors, CuPy arrays, or objects with "
                      "__cuda_array_interface__ or DLPack")


def _contiguous_strides(shape, itemsize: int) -> tuple[int, ...]:
    out, acc = [], itemsize
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def _is_contiguous(info: ArrayInfo, itemsize: int) -> bool:
    if info.strides is None:
        return True
    want = _contiguous_strides(info.shape, itemsize)
    return all(n <= 1 or s == w for n, s, w in zip(info.shape, info.strides, want))


def check_one(param: str, buf, info: ArrayInfo, ordinal: int | None) -> None:
    """Raise LaunchError unless ``info`` fits kernel buffer ``buf`` (parameter ``param``);
    the shape of a buffer with symbolic sizes is checked once they are bound."""
    what = f"parameter {param!r} (buffer {buf.name}: {sig.describe_shape(buf.shape)} {buf.dtype})"
    if info.device != "cuda":
        raise LaunchError(f"{what} got a CPU array; GPU kernels need device memory",
                          hint="move it to the GPU (torch.as_tensor(a, device='cuda')) or run "
                          "the kernel on the CPU with tw.simulate(kernel, *numpy_arrays)")
    if info.dtype != buf.dtype.name:
        raise LaunchError(f"{what} got an array of {info.dtype}",
                          hint=f"pass a {buf.dtype} array (convert it before the launch)")
    if buf.symbolic:
        if len(info.shape) != len(buf.shape):
            raise LaunchError(f"{what} got an array of shape {tuple(info.shape)}",
                              hint=f"pass a {len(buf.shape)}-dimensional array")
    elif tuple(info.shape) != tuple(buf.shape):
        raise LaunchError(f"{what} got an array of shape {tuple(info.shape)}",
                          hint=f"pass an array of shape {tuple(buf.shape)} or compile the "
                          "kernel for this shape")
    if buf.strides is None and not _is_contiguous(info, buf.dtype.bytes):
        raise LaunchError(f"{what} got a non-contiguous array (strides {info.strides} bytes)",
                          hint="pass a C-contiguous array, e.g. x.contiguous(), or declare "
                          "strides= in T.match_buffer")
    if info.ptr % ALIGNMENT:
        raise LaunchError(f"{what} got a data pointer 0x{info.ptr:x} that is not "
                          f"{ALIGNMENT}-byte aligned",
                          hint="pass an array that starts on a 16-byte boundary (not an "
                          "offset view such as x[1:])")
    if ordinal is not None and info.ordinal is not None and info.ordinal != ordinal:
        raise LaunchError(f"{what} lives on cuda:{info.ordinal}, the kernel runs on "
                          f"cuda:{ordinal}", hint="move every argument to one device")


def _elem_strides(info: ArrayInfo, itemsize: int) -> tuple[int, ...]:
    strides = info.strides or _contiguous_strides(info.shape, itemsize)
    return tuple(s // itemsize for s in strides)


def _check_bound(param: str, buf, info: ArrayInfo, binding) -> None:
    """The shape and strides of a symbolic buffer, once its sizes are bound."""
    shape = sig.expected_shape(buf, binding)
    what = f"parameter {param!r} (buffer {buf.name}: {sig.describe_shape(buf.shape)})"
    if tuple(info.shape) != shape:
        raise LaunchError(f"{what} got an array of shape {tuple(info.shape)}, expected {shape}",
                          hint="pass arrays whose sizes agree")
    want = sig.expected_strides(buf, binding)
    got = _elem_strides(info, buf.dtype.bytes)
    if any(n > 1 and g != w for n, g, w in zip(shape, got, want)):
        raise LaunchError(f"{what} got strides {got} (elements), expected {want}",
                          hint="pass a C-contiguous array, or declare strides= in "
                          "T.match_buffer")


@dataclass(frozen=True)
class Call:
    """One checked launch: a value per kernel parameter (ArrayInfo for arrays, numpy
    scalars for scalar parameters and sizes) and the bound sizes."""

    values: list
    binding: object


def check_arguments(func, args, ordinal: int | None = None) -> Call:
    """Describe and check every argument of a launch of ``func`` (arrays and scalars in
    parameter order); bind its symbolic sizes."""
    params = sig.declared_params(func)
    if len(args) != len(params):
        names = ", ".join(p.name for p in params)
        raise LaunchError(f"the kernel takes {len(params)} argument(s) ({names}), got "
                          f"{len(args)}")
    by_param = {id(p): b for p, b in func.buffer_map}
    values, bound = [], []
    for p, a in zip(params, args):
        buf = by_param.get(id(p))
        if buf is None:
            values.append(sig.check_scalar(p, a))
            continue
        info = describe(a)
        check_one(p.name, buf, info, ordinal)
        values.append(info)
        bound.append((p, buf, info))
    binding = sig.bind_sizes(func, [(b, i.shape, _elem_strides(i, b.dtype.bytes))
                                    for _, b, i in bound])
    for p, buf, info in bound:
        if buf.symbolic:
            _check_bound(p.name, buf, info, binding)
    for v in func.attr("size_vars", ()):
        values.append(v.dtype.numpy().type(binding.sizes[id(v)]))
    return Call(values, binding)
