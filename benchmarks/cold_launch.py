"""The cached cold-start program: a fresh process whose kernel is already in the disk cache
imports tilewise, parses the seed (examples/ldgsts_copy.py), compiles it (PTX and cubin are
cache hits) and reaches its first launch: on a GPU it launches on two device arrays of its
own (cuMemAlloc, no torch) and synchronises; without one it stops after the launch's
argument checks. Prints whether LLVM or nvJitLink were imported (they must not be).
benchmarks/bench_cold_start.py times it; run it once first to fill TILEWISE_CACHE_DIR."""

import importlib.util
import os
import sys

SEED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                    "ldgsts_copy.py")
spec = importlib.util.spec_from_file_location("seed", SEED)
seed = importlib.util.module_from_spec(spec)
spec.loader.exec_module(seed)

import tilewise as tw  # noqa: E402 - the seed imports it first; this is the public name
from tilewise.runtime import device, gpu_available  # noqa: E402


class DeviceArray:
    """128 x 32 float16 of device memory, described by __cuda_array_interface__."""

    def __init__(self, ptr: int, shape=(128, 32)):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": shape,
                                         "typestr": "<f2", "strides": None, "version": 3}


k = tw.compile(seed.copy_async, target=seed.TARGET)
if gpu_available():
    driver = device._driver()
    device.make_current()
    a, b = (device.check(driver.cuMemAlloc(128 * 32 * 2), "cuMemAlloc") for _ in range(2))
    k(DeviceArray(int(a)), DeviceArray(int(b)))
    device.synchronize()
else:
    from tilewise.runtime.launch import prepare

    prepare(k, [DeviceArray(4096), DeviceArray(8192)])
    k.cubin, k.name  # noqa: B018 - what the launch reads
heavy = [m for m in ("llvmlite", "cuda.bindings.nvjitlink") if m in sys.modules]
sys.stdout.write(f"launched={gpu_available()} heavy={heavy}\n")
