"""Timing one launch of a kernel on the GPU, as ``tilewise.autotune`` does it.

:class:`CudaTimer`: ``warmup`` launches and more until ``heat_s`` seconds have passed
(:meth:`~CudaTimer.prepare`), then ``reps`` times
(:meth:`~CudaTimer.sample`): write a buffer larger than any L2 (256 MB, ``cuMemsetD8Async``)
so every run starts with a cold L2, record an event, launch, record an event; the result is
the median of the event intervals (``cuEventElapsedTime``). ``tilewise.autotune`` calls the
two steps itself, to interleave the candidates' samples.

Why heat: a tensor-bound kernel running for more than a few tens of milliseconds holds an
H200 at its 700 W limit, where the SM clock drops from 1.98 GHz to 1.3-1.8 GHz
(nvidia-smi during a benchmark, 2026-12-02). A model runs its GEMMs in that state, and the
kernel shapes do not rank the same in it: an fp8 GEMM's 128 x 256 tile won in a few cold
launches while the 128 x 128 overlapped one ran 7-10 % faster sustained
(benchmarks/RESULTS.md). Launching each candidate for ``heat_s`` first puts the samples in
the state the kernel will run in.

Everything runs on the stream the launch would use (torch's current stream for torch
tensors, else the legacy default stream), so nothing else interleaves. CUDA driver calls
through ``cuda.bindings``, imported when first timed.
"""

from __future__ import annotations

import statistics
import time

from . import device
from .launch import stream_handle

FLUSH_BYTES = 256 << 20  # larger than the L2 of every GPU so far (H200: 60 MB)
HEAT_S = 0.05  # seconds each candidate runs back to back before its samples


class CudaTimer:
    """``timer(kernel, args) -> seconds``: the median of ``reps`` cold-L2 launches."""

    needs_gpu = True  # a factory may pass one to tilewise.autotune: no GPU, no tuning

    def __init__(self, warmup: int = 3, reps: int = 10, flush_bytes: int = FLUSH_BYTES,
                 heat_s: float = HEAT_S):
        self.warmup, self.reps, self.flush_bytes = warmup, reps, flush_bytes
        self.heat_s = heat_s
        self._flush = None
        self._events = None

    def _setup(self):
        driver = device._driver()
        device.make_current(0)
        if self._flush is None:
            self._flush = device.check(driver.cuMemAlloc(self.flush_bytes), "cuMemAlloc")
            self._events = [device.check(driver.cuEventCreate(0), "cuEventCreate")
                            for _ in range(2)]  # 0: CU_EVENT_DEFAULT (timing enabled)
        return driver

    def __call__(self, kernel, args, stream=None) -> float:
        self.prepare(kernel, args, stream)
        return statistics.median(self.sample(kernel, args, stream) for _ in range(self.reps))

    def prepare(self, kernel, args, stream=None) -> None:
        """The ``warmup`` launches, and more back to back until ``heat_s`` seconds have
        passed (``tilewise.autotune`` warms every candidate, then takes their samples in
        turn: :meth:`sample`)."""
        driver = self._setup()
        raw = stream_handle(stream, args)
        t0 = time.perf_counter()
        for _ in range(self.warmup):
            kernel(*args, stream=raw)
        s = driver.CUstream(raw)
        device.check(driver.cuStreamSynchronize(s), "cuStreamSynchronize")
        while time.perf_counter() - t0 < self.heat_s:
            for _ in range(4):  # a few queued at a time: the GPU never waits on the host
                kernel(*args, stream=raw)
            device.check(driver.cuStreamSynchronize(s), "cuStreamSynchronize")

    def sample(self, kernel, args, stream=None) -> float:
        """Seconds of one launch after the L2 flush."""
        driver = self._setup()
        raw = stream_handle(stream, args)
        s = driver.CUstream(raw)
        start, end = self._events
        device.check(driver.cuMemsetD8Async(self._flush, 0, self.flush_bytes, s),
                     "cuMemsetD8Async")
        device.check(driver.cuEventRecord(start, s), "cuEventRecord")
        kernel(*args, stream=raw)
        device.check(driver.cuEventRecord(end, s), "cuEventRecord")
        device.check(driver.cuEventSynchronize(end), "cuEventSynchronize")
        return device.check(driver.cuEventElapsedTime(start, end), "cuEventElapsedTime") / 1e3

    def __del__(self):
        try:
            if self._flush is not None:
                driver = device._driver()
                driver.cuMemFree(self._flush)
                for e in self._events:
                    driver.cuEventDestroy(e)
        except Exception:  # noqa: BLE001 - at interpreter exit the driver may be gone
            pass


def device_name(ordinal: int = 0) -> str:
    """``"<name> sm_XY"`` of device ``ordinal`` (what a tuning result is valid for)."""
    driver = device._driver()
    dev = device.check(driver.cuDeviceGet(ordinal), "cuDeviceGet")
    raw = device.check(driver.cuDeviceGetName(256, dev), "cuDeviceGetName")
    name = raw.split(b"\0", 1)[0].decode(errors="replace")
    major, minor = device.compute_capability(ordinal)
    return f"{name} sm_{major}{minor}"
