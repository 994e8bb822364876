"""Launch a compiled kernel through the CUDA driver (``cuda.bindings.driver``).

Per kernel and device, once: the cubin is loaded with ``cuModuleLoadData``, the entry found
with ``cuModuleGetFunction``, and dynamic shared memory above 48 KB enabled with
``cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)``. Per call: arguments are checked
(:mod:`.args`) and ``cuLaunchKernel`` runs with the kernel's grid and block on ``stream``
(default: torch's current stream when torch tensors are passed, else the legacy default
stream).

**The per-signature fast path.** What the checks conclude depends on each torch tensor's
dtype, shape, strides and device and on each scalar's type and value, not on the data
pointer (except its 16-byte alignment). The first launch with a new *signature* (those
attributes) runs every check and keeps a :class:`_Prepared`: the grid, one 8-byte slot per
parameter and the array of their addresses that ``cuLaunchKernel`` takes. A later launch
with the same signature reads each tensor's attributes once, writes its data pointers into
the slots (checking their alignment) and launches: no Python object is built per call
beyond the key. Kernels with TMA tensor maps encode the data pointer into the map, so for
them the pointers belong to the signature. The current CUDA context is not set on every
launch: a launch refused for the context (``CUDA_ERROR_INVALID_CONTEXT`` /
``INVALID_HANDLE``: another context or none is current in this thread) makes the kernel's
primary context current and launches again.
"""

from __future__ import annotations

import ctypes
import sys
import threading

from ..errors import LaunchError
from . import device
from .args import check_arguments
from .tensormap import check_tensor_maps, launch_slots

_DEFAULT_SMEM_LIMIT = 48 * 1024
_MAX_SIGNATURES = 256  # prepared signatures kept per kernel (then the cache starts over)
_SCALARS = (int, float, bool)  # Python scalars: keyed by type and value
_RETRY_CONTEXT = (201, 400)  # CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_HANDLE


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


class _Prepared:
    """One checked signature: the grid, the parameter slots and their addresses, which
    slots take which argument's data pointer, and the thread that may reuse them (the slots
    are written in place before each launch)."""

    __slots__ = ("grid", "values", "addresses", "pointer_slots", "keep", "thread")

    def __init__(self, grid, values, addresses, pointer_slots, keep):
        self.grid, self.values, self.addresses = grid, values, addresses
        self.pointer_slots, self.keep = pointer_slots, keep
        self.thread = threading.get_ident()


class Launcher:
    """The loaded form of one :class:`~tilewise.compiler.Kernel` on one device."""

    def __init__(self, kernel, ordinal: int = 0):
        self.kernel = kernel
        self.ordinal = ordinal
        self.function = None
        self._signatures: dict = {}  # signature key -> _Prepared (or None: never fast)
        self._streams: dict = {}  # raw stream handle -> CUstream
        self._raw_stream = None  # torch's current-stream query, once torch is seen
        self._tensor = None  # torch.Tensor, once torch is seen
        self._by_pointer = bool(kernel.launch_signature.func.attr("tensor_maps", ()))
        self._last = None  # the general path's last (key, prepared)

    # -- loading ---------------------------------------------------------------------
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
        device.note_asserts(k.name, k.asserts)
        self._launch = (_programmatic_launch(driver) if k.options.get("programmatic")
                        else driver.cuLaunchKernel)
        self._block = k.launch_config.block
        self._smem = k.dynamic_smem

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

    # -- launching -------------------------------------------------------------------
    def __call__(self, arrays, stream=None):
        tensor = self._tensor
        if tensor is None:
            return self._general(arrays, stream)
        key, pointers = [], []
        for a in arrays:
            if isinstance(a, tensor):
                key += (a.dtype, a.shape, a.stride(), a.device)
                pointers.append(a.data_ptr())
            elif type(a) in _SCALARS:
                key += (type(a), a)
            else:
                return self._general(arrays, stream)
        if self._by_pointer:
            key += pointers
        key = tuple(key)
        prep = self._signatures.get(key, False)
        if prep is False:
            prep = self._prepare_signature(key, arrays)
        if prep is None or prep.thread != threading.get_ident():
            return self._general(arrays, stream)
        values = prep.values
        for slot, p in zip(prep.pointer_slots, pointers):
            if p & 15:
                return self._general(arrays, stream)  # reports the misaligned pointer
            values[slot] = p
        raw = self._raw_stream(self.ordinal) if stream is None else stream
        if type(raw) is not int:
            raw = stream_handle(raw, ())
        self._go(prep, raw)

    def _go(self, prep, raw: int):
        handle = self._streams.get(raw)
        if handle is None:
            handle = self._stream_object(raw)
        g = prep.grid
        err = self._launch(self.function, g[0], g[1], g[2], self._block, 1, 1, self._smem,
                           handle, prep.addresses, 0)[0]
        if err:
            self._failed(err, prep, handle)

    def _failed(self, err, prep, handle):
        """A refused launch: in another (or no) current context, make the kernel's primary
        context current and launch again; any other error is a LaunchError."""
        if int(err) in _RETRY_CONTEXT:
            device.make_current(self.ordinal)
            g = prep.grid
            err = self._launch(self.function, g[0], g[1], g[2], self._block, 1, 1,
                               self._smem, handle, prep.addresses, 0)[0]
        device.check((err,), f"cuLaunchKernel({self.kernel.name})")

    def _stream_object(self, raw: int):
        handle = device._driver().CUstream(raw)
        if len(self._streams) > 64:
            self._streams.clear()
        self._streams[raw] = handle
        return handle

    def _general(self, arrays, stream):
        """Any arguments (CuPy, DLPack, numpy scalars, ...): checked, or reused from the
        last launch when every argument is the same (pointers included)."""
        self._see_torch(arrays)
        key = _launch_key(arrays)
        if key is not None and self._last is not None and self._last[0] == key:
            prep = self._last[1]
        else:
            prep = self._prepare(arrays)
            self._last = None if key is None else (key, prep)
        self._go(prep, stream_handle(stream, arrays))

    def _see_torch(self, arrays):
        """Arm the fast path once torch tensors are seen (torch is never imported here)."""
        torch = sys.modules.get("torch")
        if self._tensor is not None or torch is None:
            return
        if not any(isinstance(a, torch.Tensor) for a in arrays):
            return
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        self._raw_stream = raw or (lambda i: torch.cuda.current_stream(i).cuda_stream)
        self._tensor = torch.Tensor

    def _prepare_signature(self, key, arrays):
        """The first launch of a signature: every check, then the prepared launch (None when
        a scalar parameter is given a 0-d tensor, whose value is not in the key)."""
        self._see_torch(arrays)
        prep = self._prepare(arrays)
        params = self.kernel.launch_params
        from ..ir import signature as sig

        declared = sig.declared_params(params)
        buffers = {id(p) for p, _ in params.buffer_map}
        for p, a in zip(declared, arrays):
            if id(p) not in buffers and isinstance(a, self._tensor):
                prep = None
        if len(self._signatures) >= _MAX_SIGNATURES:
            self._signatures.clear()
        self._signatures[key] = prep
        return prep

    def _prepare(self, arrays) -> _Prepared:
        """Check the arguments, load the module once, build the parameter slots."""
        from .args import ArrayInfo

        k = self.kernel
        call, grid = prepare(k, arrays, self.ordinal)
        if self.function is None:
            self._load()
        device.make_current(self.ordinal)  # tensor maps are encoded in the context
        values = (ctypes.c_uint64 * max(len(call.values), 1))()
        pointer_slots = []
        for i, v in enumerate(call.values):
            if isinstance(v, ArrayInfo):
                values[i] = v.ptr
                pointer_slots.append(i)
            else:
                ctypes.memmove(ctypes.addressof(values) + 8 * i, _scalar_bytes(v), v.nbytes)
        maps = launch_slots(k, call)
        base = ctypes.addressof(values)
        addrs = [base + 8 * i for i in range(len(call.values))]
        addrs += [m.ctypes.data for m in maps]
        addresses = (ctypes.c_void_p * max(len(addrs), 1))(*addrs)
        return _Prepared(tuple(grid), values, ctypes.addressof(addresses),
                         tuple(pointer_slots), (addresses, maps))


def _programmatic_launch(driver):
    """``cuLaunchKernel``'s signature, launching through ``cuLaunchKernelEx`` with
    programmatic stream serialization allowed (a kernel compiled with
    ``programmatic=True``): it may start once every CTA of the kernel ahead of it on the
    stream has called ``griddepcontrol.launch_dependents`` or exited, and waits for that
    kernel's completion with ``griddepcontrol.wait``."""
    attr = driver.CUlaunchAttribute()
    attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    attr.value.programmaticStreamSerializationAllowed = 1
    attrs = [attr]

    def launch(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        cfg = driver.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = gx, gy, gz
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = bx, by, bz
        cfg.sharedMemBytes = smem
        cfg.hStream = stream
        cfg.attrs = attrs
        cfg.numAttrs = 1
        return driver.cuLaunchKernelEx(cfg, f, params, extra)

    return launch


def _scalar_bytes(value) -> bytes:
    """A scalar parameter's bytes in its own type (a bool as one byte)."""
    import numpy as np

    if value.dtype == np.bool_:
        return bytes([int(value)])
    return np.asarray(value).tobytes()


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
    call = check_arguments(kernel.launch_params, arrays, ordinal)
    grid = call.binding.grid(kernel.launch_signature.func)
    _check_cluster(kernel, grid)
    check_tensor_maps(kernel, call)
    return call, grid


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
