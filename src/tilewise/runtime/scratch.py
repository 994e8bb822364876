"""Scratch arrays a kernel object keeps between its launches, one set per stream.

Some kernels need arrays of their own beside the caller's: a stream-K GEMM's partial sums
and flags, a padded GEMM's padded operands, split-key attention's partial outputs. Calls on
one stream run in order, so they may share one set; calls on another stream get their own.
:class:`Scratch` keeps the sets, keyed by the stream the launch runs on (its raw
``CUstream``, looked up as the launch looks it up), the device and a key of the caller's.

Each set is allocated *on the stream that uses it* (torch's and CuPy's caching allocators
tie a block to the stream current at its allocation). So the zeros a set is made with are
ordered before the kernel that reads them without a device synchronisation, even inside a
CUDA-graph capture, and a set dropped from the cache (past ``limit`` sets, the least
recently used first) is only handed out again to later work of the same stream, after the
kernels that used it. Allocating on the current stream and launching on another would
allow neither.

    bufs = self._scratch.get(A, stream, (b, rows), lambda lib: (
        lib.empty(A, (b, rows), "float32"), lib.zeros(A, (b,), "int32")))
"""

from __future__ import annotations

import contextlib
import sys
from collections import OrderedDict

from ..errors import LaunchError


class _Torch:
    name = "torch"

    def __init__(self, torch):
        self.t = torch

    def current_stream(self, like) -> int:
        get = getattr(self.t._C, "_cuda_getCurrentRawStream", None)  # no Stream object
        if get is not None:
            return int(get(like.device.index))
        return int(self.t.cuda.current_stream(like.device).cuda_stream)

    def device(self, like):
        return like.device

    def on(self, like, stream, raw):
        if stream is None:
            return contextlib.nullcontext()
        s = stream if isinstance(stream, self.t.cuda.Stream) else \
            self.t.cuda.ExternalStream(raw, device=like.device)
        return self.t.cuda.stream(s)

    def empty(self, like, shape, dtype: str):
        return like.new_empty(shape, dtype=getattr(self.t, dtype))

    def zeros(self, like, shape, dtype: str):
        return like.new_zeros(shape, dtype=getattr(self.t, dtype))


class _CuPy:
    name = "cupy"

    def __init__(self, cupy):
        self.c = cupy

    def current_stream(self, like) -> int:
        with self.c.cuda.Device(like.device.id):
            return int(self.c.cuda.get_current_stream().ptr)

    def device(self, like):
        return ("cupy", like.device.id)

    @contextlib.contextmanager
    def on(self, like, stream, raw):
        with self.c.cuda.Device(like.device.id):
            if stream is None:
                yield
            else:
                with self.c.cuda.ExternalStream(raw):
                    yield

    def empty(self, like, shape, dtype: str):
        return self.c.empty(shape, dtype)

    def zeros(self, like, shape, dtype: str):
        return self.c.zeros(shape, dtype)


def library_of(like):
    """The allocator side of ``like``'s library (torch or CuPy), or None."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(like, torch.Tensor):
        return _Torch(torch)
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(like, cupy.ndarray):
        return _CuPy(cupy)
    return None


def _raw_stream(lib, like, stream) -> int:
    """The raw ``CUstream`` a launch on ``stream`` uses: the given one's handle, else the
    current stream of ``like``'s device in its library."""
    if stream is None:
        return lib.current_stream(like)
    from .launch import stream_handle

    return stream_handle(stream, (like,))


def on_stream(like, stream):
    """The context in which work for a launch on ``stream`` (None: the current one) runs
    in ``like``'s library: padding copies, scratch zeros."""
    lib = library_of(like)
    if lib is None:
        return contextlib.nullcontext()
    return lib.on(like, stream, _raw_stream(lib, like, stream))


class Scratch:
    """Sets of scratch arrays per (stream, device, key); at most ``limit`` kept."""

    def __init__(self, what: str, limit: int = 16):
        self.what = what  # for the error: whose scratch ("a stream-K GEMM's workspace")
        self.limit = limit
        self._sets: OrderedDict = OrderedDict()

    def __len__(self) -> int:
        return len(self._sets)

    def values(self):
        return self._sets.values()

    def get(self, like, stream, key, make):
        """The set for a launch with input ``like`` on ``stream`` (None: the current stream
        of ``like``'s device) and ``key``, made by ``make(lib)`` on that stream the first
        time (``lib.empty(like, shape, dtype)`` / ``lib.zeros(...)``)."""
        lib = library_of(like)
        if lib is None:
            raise LaunchError(f"{self.what} is kept as arrays of the inputs' library; it takes "
                              f"torch tensors or CuPy arrays, not {type(like).__name__}",
                              hint="pass torch tensors or CuPy arrays (tw.simulate takes "
                              "numpy)")
        raw = _raw_stream(lib, like, stream)
        full = (lib.name, raw, lib.device(like), key)
        got = self._sets.get(full)
        if got is not None:
            self._sets.move_to_end(full)
            return got
        with lib.on(like, stream, raw):
            got = make(lib)
        self._sets[full] = got
        while len(self._sets) > self.limit:  # on its own stream: safe to let go
            self._sets.popitem(last=False)
        return got
