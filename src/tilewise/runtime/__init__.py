"""Running compiled kernels: device detection, argument checks, launch.

``gpu_available()`` works everywhere (False without a driver or GPU); the rest needs a GPU.
Arguments are torch tensors, CuPy arrays, anything with ``__cuda_array_interface__`` or
DLPack; each is checked against the kernel's buffer before launch (:mod:`.args`).
"""

from .args import ArrayInfo, check_arguments, describe
from .device import compute_capability, device_target, gpu_available, sm_count, synchronize

__all__ = ["ArrayInfo", "check_arguments", "compute_capability", "describe", "device_target",
           "gpu_available", "sm_count", "synchronize"]
