"""``tilewise doctor``: what this machine offers, each line measured, never assumed."""

from __future__ import annotations

import platform


def _try(fn):
    try:
        return fn()
    except Exception as e:  # a missing library is an answer here, not an error
        return f"unavailable ({type(e).__name__}: {e})"


def _llvm():
    import llvmlite
    import llvmlite.binding as llvm

    return f"llvmlite {llvmlite.__version__}, LLVM {'.'.join(map(str, llvm.llvm_version_info))}"


def _nvjitlink():
    from cuda.bindings import nvjitlink

    major, minor = nvjitlink.version()
    return f"nvJitLink {major}.{minor} (cubin for any target, no toolkit needed)"


def _gpu():
    from cuda.bindings import driver

    from .runtime import device_target, gpu_available

    if not gpu_available():
        return "none"
    err, dev = driver.cuDeviceGet(0)
    err, raw = driver.cuDeviceGetName(128, dev)
    name = raw.split(b"\0", 1)[0].decode() if int(err) == 0 else "GPU 0"
    return f"{name} -> target {device_target()}"


def _driver():
    from cuda.bindings import driver

    try:
        err, v = driver.cuDriverGetVersion()
    except Exception:
        return "none (no NVIDIA driver library on this machine)"
    return f"CUDA driver {v // 1000}.{v % 1000 // 10}" if int(err) == 0 else "no driver"


def _libdevice():
    from .codegen.libdevice import libdevice_path

    return str(libdevice_path())


def _ptxas():
    from .codegen.cubin import find_ptxas, ptxas_version

    path = find_ptxas()
    if path is None:
        return ("none found (nvJitLink assembles everything; kernels using setmaxnreg keep "
                "the launch's register budget)")
    return f"{path} ({ptxas_version(path)}; assembles kernels that use setmaxnreg)"


def report() -> str:
    from .knobs import knobs

    rows = [
        ("python", f"{platform.python_version()} ({platform.machine()})"),
        ("llvm", _try(_llvm)),
        ("nvjitlink", _try(_nvjitlink)),
        ("libdevice", _try(_libdevice)),
        ("driver", _try(_driver)),
        ("gpu", _try(_gpu)),
        ("ptxas", _try(_ptxas)),
        ("cache", _try(lambda: f"{knobs.cache_dir} ({'on' if knobs.cache_enabled else 'off'})")),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)
