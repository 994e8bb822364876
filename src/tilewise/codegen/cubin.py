"""PTX -> cubin with nvJitLink (the ``nvidia-nvjitlink`` wheel through ``cuda.bindings``).

Needs no GPU and no driver; works for every target the library knows, sm_100a included.
"""

from __future__ import annotations

import functools

from ..errors import CompileError


@functools.lru_cache(maxsize=1)
def nvjitlink_version() -> str:
    """``nvJitLink X.Y`` (part of the cubin cache key); ``unavailable`` if not installed."""
    try:
        from cuda.bindings import nvjitlink
    except ImportError:
        return "unavailable"
    return "nvJitLink " + ".".join(map(str, nvjitlink.version()))


def _log(nvjitlink, handle) -> str:
    try:
        size = nvjitlink.get_error_log_size(handle)
        buf = bytearray(size)
        nvjitlink.get_error_log(handle, buf)
        return bytes(buf).rstrip(b"\0").decode(errors="replace")
    except Exception:  # noqa: BLE001 - the log is best effort, the failure is reported anyway
        return ""


def link_cubin(ptx: str, arch: str, name: str = "kernel") -> bytes:
    """Assemble ``ptx`` for ``arch`` (``sm_90a``) into a cubin."""
    try:
        from cuda.bindings import nvjitlink
    except ImportError as exc:
        raise CompileError("making a cubin needs nvJitLink",
                           hint="pip install nvidia-nvjitlink cuda-bindings") from exc
    try:
        handle = nvjitlink.create(2, [f"-arch={arch}", "-O3"])
    except nvjitlink.nvJitLinkError as exc:  # Target() refuses what nvJitLink cannot build
        raise CompileError(f"internal error: nvJitLink refused -arch={arch}: {exc}",
                           hint="please report this with the target name") from exc
    try:
        data = ptx.encode()
        nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), name)
        nvjitlink.complete(handle)
        size = nvjitlink.get_linked_cubin_size(handle)
        out = bytearray(size)
        nvjitlink.get_linked_cubin(handle, out)
        return bytes(out)
    except nvjitlink.nvJitLinkError as exc:
        raise CompileError(f"nvJitLink could not assemble the PTX for {arch}: {exc}\n"
                           f"{_log(nvjitlink, handle)}".rstrip(),
                           hint="inspect k.source('ptx'); this is a code generator defect") from exc
    finally:
        nvjitlink.destroy(handle)
