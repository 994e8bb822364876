"""Launch a compiled kernel through the CUDA driver (``cuda.bindings.driver``).

Per kernel and device, once: the cubin is loaded with ``cuModuleLoadData``, the entry found
with ``cuModuleGetFunction``, and dynamic shared memory above 48 KB enabled with
``cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)``. Per call: arguments are checked
(:mod:`.args`) and ``cuLaunchKernel`` runs with the kernel's grid and block on ``stream``
(default: torch's current stream when torch tensors are passed, else the legacy default
stream).
"""

from __future__ import annotations

import sys

from ..errors import LaunchError
from . import device
from .args import check_arguments
from .tensormap import check_tensor_maps, launch_slots

_DEFAULT_SMEM_LIMIT = 48 * 1024


def stream_handle(stream, arrays) -> int:
    """The raw ``CUstream`` value of a stream object (torch, CuPy, cuda.core, int)."""
    if stream is None:
        torch = sys.modules.get("torch")
        if torch is not None and any(isinstance(a, torch.Tensor) for a in arrays):
            return int(torch.cuda.current_stream().cuda_stream)
        return 0
    if isinstance(stream, int):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    for attr in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise LaunchError(f"stream= must be a CUDA stream (torch, CuPy, cuda.core or an int), got "
                      f"{type(stream).__name__}")


class Launcher:
    """The loaded form of one :class:`~tilewise.compiler.Kernel` on one device."""

    def __init__(self, kernel, ordinal: int = 0):
        self.kernel = kernel
        self.ordinal = ordinal
        self.function = None
        # the last launch's arguments (see _launch_key), grid and parameter bytes: a loop
        # launching on the same arrays skips the Python checks and the tensor-map encoding
        self._last = None
        self._stream = None  # (raw handle, CUstream) of the last launch

    def _load(self):
        import numpy as np

        driver = device._driver()
        k = self.kernel
        have = device.device_target(self.ordinal)
        if not k.target.runs_on(have):
            raise LaunchError(f"the kernel was compiled for {k.target}, which cannot run on this "
                              f"GPU ({have})", hint=f"compile with target={str(have)!r}")
        device.make_current(self.ordinal)
        self._image = np.frombuffer(k.cubin, dtype=np.uint8).copy()
        self.module = device.check(driver.cuModuleLoadData(self._image.ctypes.data),
                                   "cuModuleLoadData")
        self.function = device.check(
            driver.cuModuleGetFunction(self.module, k.name.encode()), "cuModuleGetFunction")
        if k.dynamic_smem:
            self._allow_dynamic_smem(driver, k)
        if k.options.get("nonportable_cluster"):
            fattr = driver.CUfunction_attribute
            device.check(driver.cuFuncSetAttribute(
                self.function, fattr.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)")

    def _allow_dynamic_smem(self, driver, k):
        """A launch gets 48 KB of shared memory, static and dynamic together, unless the
        function opts in to more; the static part is what ptxas laid out (asked of the
        driver, not estimated). Past the device's opt-in maximum it is a LaunchError."""
        fattr = driver.CUfunction_attribute
        static = device.check(driver.cuFuncGetAttribute(
            fattr.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, self.function), "cuFuncGetAttribute")
        total = static + k.dynamic_smem
        if total <= _DEFAULT_SMEM_LIMIT:
            return
        limit = device.device_attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", self.ordinal)
        if total > limit:
            raise LaunchError(f"{k.name} needs {total} bytes of shared memory per CTA "
                              f"({static} static + {k.dynamic_smem} dynamic); this GPU allows "
                              f"{limit}", hint="use smaller tiles or fewer stages")
        device.check(driver.cuFuncSetAttribute(
            self.function, fattr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            k.dynamic_smem), "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")

    def __call__(self, arrays, stream=None):
        import numpy as np

        k = self.kernel
        key = _launch_key(arrays)
        if key is not None and self._last is not None and self._last[0] == key:
            _, grid, slots, pointers = self._last  # the same arrays again: checked, encoded
        else:
            call, grid = prepare(k, arrays, self.ordinal)
            if self.function is None:
                self._load()
            # kept alive until the launch returns; tensor maps are encoded after the context
            device.make_current(self.ordinal)
            slots = [_slot(v) for v in call.values] + launch_slots(k, call)
            pointers = np.array([a.ctypes.data for a in slots], dtype=np.uint64)
            self._last = None if key is None else (key, grid, slots, pointers)
        device.make_current(self.ordinal)
        driver = device._driver()
        raw = stream_handle(stream, arrays)
        if self._stream is None or self._stream[0] != raw:
            self._stream = (raw, driver.CUstream(raw))
        handle = self._stream[1]
        device.check(driver.cuLaunchKernel(self.function, *grid, k.launch_config.block, 1, 1,
                                           k.dynamic_smem, handle, pointers.ctypes.data, 0),
                     f"cuLaunchKernel({k.name})")


def _launch_key(arrays):
    """What a launch's checks and parameter bytes depend on: every GPU array's pointer,
    shape, strides, dtype and device, every Python or numpy scalar's type and value; None
    when an argument is anything else (then nothing is reused)."""
    import numpy as np

    from .args import describe

    key = []
    for a in arrays:
        if isinstance(a, (bool, int, float, np.generic)):
            key.append((type(a).__name__, repr(a)))
            continue
        if isinstance(a, np.ndarray) or getattr(a, "ndim", 1) == 0:
            return None  # host arrays are refused by prepare(); 0-d arrays are scalars
        if type(a).__module__.startswith("torch"):  # the cheap form of describe()
            dev = a.device
            if dev.type != "cuda":
                return None
            key.append((a.data_ptr(), tuple(a.shape), a.stride(), str(a.dtype), dev.index))
            continue
        try:
            info = describe(a)
        except Exception:  # noqa: BLE001 - not an array: prepare() reports it
            return None
        key.append((info.ptr, tuple(info.shape), info.strides and tuple(info.strides),
                    info.dtype, info.device, info.ordinal))
    return tuple(key)


def prepare(kernel, arrays, ordinal=None):
    """Everything a launch checks before touching the driver: the arguments (and the sizes
    they bind) and the grid they make. Returns ``(Call, grid)``."""
    call = check_arguments(kernel.func, arrays, ordinal)
    grid = call.binding.grid(kernel.lowered.func)
    _check_cluster(kernel, grid)
    check_tensor_maps(kernel, call)
    return call, grid


def _slot(value):
    """The bytes of one kernel parameter: a device pointer (u64) for an array, the scalar in
    its own type otherwise (a bool as one byte, as the kernel declares it)."""
    import numpy as np

    from .args import ArrayInfo

    if isinstance(value, ArrayInfo):
        return np.array([value.ptr], dtype=np.uint64)
    if value.dtype == np.bool_:
        return np.array([int(value)], dtype=np.uint8)
    return np.array([value])


def _check_cluster(kernel, grid) -> None:
    """A grid of symbolic sizes must still be a whole number of clusters."""
    dims = kernel.options.get("cluster_dim")
    if dims is None:
        return
    for axis, (g, c) in enumerate(zip(grid, dims)):
        if g % c:
            raise LaunchError(f"the grid {grid} computed from the sizes is not a whole number "
                              f"of clusters {dims} (dimension {'xyz'[axis]})",
                              hint="pass sizes that make the grid a multiple of the cluster")
