"""PTX -> cubin with nvJitLink (the ``nvidia-nvjitlink`` wheel through ``cuda.bindings``).

Needs no GPU and no driver; works for every target the library knows, sm_100a included.
"""

from __future__ import annotations

import functools
import re

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
        log = _log(nvjitlink, handle)
        user = _user_limit(log)
        if user is not None:
            raise CompileError(user[0], hint=user[1]) from exc
        raise CompileError(f"nvJitLink could not assemble the PTX for {arch}: {exc}\n"
                           f"{log}".rstrip(),
                           hint="inspect k.source('ptx'); this is a code generator defect") from exc
    finally:
        nvjitlink.destroy(handle)


_TOO_FEW_REGS = re.compile(r"C7602\) Insufficient registers \((\d+)\).*?register target of "
                           r"(\d+)", re.S)


def _user_limit(log: str):
    """(message, hint) when ptxas refused the PTX for a limit the user set, not a defect of
    the code: too few registers per thread for one instruction (C7602, e.g. a wgmma whose
    accumulator needs 128 registers under maxnreg=64)."""
    m = _TOO_FEW_REGS.search(log)
    if m is None:
        return None
    have, need = int(m.group(1)), int(m.group(2))
    return (f"the kernel allows {have} registers per thread, but one of its instructions needs "
            f"{need} (ptxas C7602: insufficient registers)",
            f"raise the register limit to {need} or more: maxnreg= of tw.compile, or fewer "
            "threads per CTA (65536 registers are shared by a CTA's threads), or no minctasm=")
