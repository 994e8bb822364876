"""The CUDA device through ``cuda.bindings.driver``: detection and the primary context.

Everything imports the driver lazily; without a driver or a GPU, :func:`gpu_available` is
False and nothing else here is called.
"""

from __future__ import annotations

import functools

from ..errors import LaunchError


def _driver():
    from cuda.bindings import driver

    return driver


#: ``(kernel, "file:line", message)`` of every T.device_assert of the kernels loaded in this
#: process, for the message of a CUDA_ERROR_ASSERT (the context then fails every call).
ASSERTS: list = []
CUDA_ERROR_ASSERT = 710


def note_asserts(kernel: str, asserts) -> None:
    """Remember the asserts of a kernel being loaded (see :data:`ASSERTS`)."""
    for where, msg in asserts:
        if (kernel, where, msg) not in ASSERTS:
            ASSERTS.append((kernel, where, msg))


def _assert_failed(what: str) -> LaunchError:
    listed = "; ".join(f"{w}: {m or 'T.device_assert'} (in {k})" for k, w, m in ASSERTS)
    return LaunchError(f"{what} failed: a T.device_assert failed on the GPU "
                       f"(CUDA_ERROR_ASSERT); the kernels loaded in this process assert at "
                       f"{listed or 'no known place'}",
                       hint="the device printed the failing assert's file:line and thread "
                       "to stdout; the CUDA context is unusable now: restart the process")


def check(result, what: str):
    """Unpack a ``cuda.bindings`` result tuple, raising LaunchError on an error code (one
    naming the kernels' asserts for CUDA_ERROR_ASSERT)."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    driver = _driver()
    if err != driver.CUresult.CUDA_SUCCESS:
        if int(err) == CUDA_ERROR_ASSERT:
            raise _assert_failed(what)
        _, name = driver.cuGetErrorName(err)
        name = name.decode() if isinstance(name, bytes) else str(err)
        raise LaunchError(f"{what} failed: {name}")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else tuple(rest)


@functools.lru_cache(maxsize=1)
def gpu_available() -> bool:
    """Whether a CUDA driver and at least one GPU are usable (never raises)."""
    try:
        driver = _driver()
        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return False
        err, n = driver.cuDeviceGetCount()
        return err == driver.CUresult.CUDA_SUCCESS and n > 0
    except Exception:  # noqa: BLE001 - no driver, no library, no device: all mean "no GPU"
        return False


def _require_gpu():
    if not gpu_available():
        raise LaunchError("no CUDA GPU is available on this machine",
                          hint="run the kernel in the simulator with tw.simulate(...)")


@functools.lru_cache(maxsize=64)
def device_attribute(name: str, ordinal: int = 0) -> int:
    """``cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_<name>)`` of device ``ordinal``."""
    _require_gpu()
    driver = _driver()
    dev = check(driver.cuDeviceGet(ordinal), "cuDeviceGet")
    attr = getattr(driver.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_" + name)
    return int(check(driver.cuDeviceGetAttribute(attr, dev), "cuDeviceGetAttribute"))


def compute_capability(ordinal: int = 0) -> tuple[int, int]:
    """``(major, minor)`` of device ``ordinal``."""
    return (device_attribute("COMPUTE_CAPABILITY_MAJOR", ordinal),
            device_attribute("COMPUTE_CAPABILITY_MINOR", ordinal))


def sm_count(ordinal: int = 0, default: int | None = None) -> int:
    """The number of SMs of device ``ordinal`` (one CTA each for a persistent kernel). With
    ``default``, that count where no GPU answers (a persistent kernel built for the
    simulator on a machine without one: the examples pass the H200's 132)."""
    if default is None:
        return device_attribute("MULTIPROCESSOR_COUNT", ordinal)
    try:
        if gpu_available():
            return device_attribute("MULTIPROCESSOR_COUNT", ordinal)
    except Exception:  # noqa: BLE001 - no driver, no device: the default
        pass
    return default


def device_target(ordinal: int = 0):
    """The arch-specific :class:`~tilewise.target.Target` of device ``ordinal`` (sm_90a on
    an H100/H200)."""
    from ..target import Target

    return Target.from_device(*compute_capability(ordinal))


@functools.lru_cache(maxsize=8)
def primary_context(ordinal: int = 0):
    """Retain device ``ordinal``'s primary context (the one torch and CuPy use) and make it
    current."""
    _require_gpu()
    driver = _driver()
    dev = check(driver.cuDeviceGet(ordinal), "cuDeviceGet")
    ctx = check(driver.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    check(driver.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return ctx


def make_current(ordinal: int = 0) -> None:
    driver = _driver()
    check(driver.cuCtxSetCurrent(primary_context(ordinal)), "cuCtxSetCurrent")


def synchronize(ordinal: int = 0) -> None:
    """Wait for every launch on device ``ordinal`` (``cuCtxSynchronize``): a kernel's fault
    or failed T.device_assert is a LaunchError here (the assert's file and line named)."""
    make_current(ordinal)
    check(_driver().cuCtxSynchronize(), "cuCtxSynchronize")
