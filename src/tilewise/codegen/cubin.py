"""PTX -> cubin with nvJitLink (the ``nvidia-nvjitlink`` wheel through ``cuda.bindings``), or
with ``ptxas`` for kernels that use ``setmaxnreg``.

Needs no GPU and no driver; works for every target the library knows, sm_100a included.

nvJitLink assembles its PTX input as a separately compiled unit (``ptxas -c``), and ptxas
then ignores ``setmaxnreg`` ("C7504: 'setmaxnreg' ignored to maintain compatibility across
compilation units"): every thread keeps the launch's register budget (65536 / 384 = 168
for a 384-thread CTA), which a warp-specialised kernel whose consumers need 240 cannot
live with. A whole-program ``ptxas`` honours it. So a kernel whose PTX contains
``setmaxnreg`` is assembled by a ``ptxas`` when one is found (:func:`find_ptxas`: the
``TILEWISE_PTXAS`` knob, ``ptxas`` on ``PATH``, ``$CUDA_HOME/bin``, the one Triton ships),
and by nvJitLink otherwise. (A CTA of 288 threads does not help: registers are allocated per
SM sub-partition, 16384 each, so 9 warps put 3 on one and cap a thread at 168 as well.)

The cache keys name the assembler without running or importing it (:func:`assembler`: the
ptxas by its path, size and mtime; nvJitLink's library is in the toolchain fingerprint of
:func:`tilewise.compiler.cache_key`), so that a cached kernel reaches its launch without
loading nvJitLink or starting a process.
"""

from __future__ import annotations

import functools
import os
import re

from ..errors import CompileError


@functools.lru_cache(maxsize=1)
def nvjitlink_version() -> str:
    """``nvJitLink X.Y`` (imports nvJitLink; the cache keys name its library by file
    instead); ``unavailable`` if not installed."""
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


def _executable(path: str | None) -> bool:
    return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def find_ptxas() -> str | None:
    """A ``ptxas`` executable, or None: the ``TILEWISE_PTXAS`` knob (``none``: never use
    one), ``PATH``, ``$CUDA_HOME/bin``, then Triton's own (found without importing Triton;
    and without ``shutil``, whose import costs a cold start ~10 ms)."""
    import importlib.util

    from ..knobs import knobs

    if knobs.ptxas:  # named: used as it is (a wrong path is an error when it runs)
        return None if knobs.ptxas == "none" else knobs.ptxas
    cands = [os.path.join(d, "ptxas") for d in os.get_exec_path()]
    cands.append(os.path.join(knobs.cuda_home, "bin", "ptxas"))
    spec = importlib.util.find_spec("triton")
    for root in (spec.submodule_search_locations or []) if spec else []:
        cands.append(os.path.join(root, "backends", "nvidia", "bin", "ptxas"))
    return next((c for c in cands if _executable(c)), None)


@functools.lru_cache(maxsize=8)
def ptxas_version(path: str) -> str:
    """The last line of ``ptxas --version`` (``tilewise doctor`` shows it)."""
    import subprocess

    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
        return out.stdout.strip().splitlines()[-1]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def ptxas_identity(path: str | None) -> str:
    """``ptxas PATH SIZE:MTIME`` (``PATH missing`` when it cannot be read), or ``nvJitLink``
    when ``path`` is None: the assembler as the cache keys name it."""
    if path is None:
        return "nvJitLink"
    try:
        st = os.stat(path)
        return f"ptxas {path} {st.st_size}:{st.st_mtime_ns}"
    except OSError:
        return f"ptxas {path} missing"


def assembler(ptx: str) -> str:
    """Which assembler :func:`link_cubin` uses for ``ptx``, as text for the cubin key."""
    return ptxas_identity(find_ptxas() if "setmaxnreg" in ptx else None)


def link_cubin(ptx: str, arch: str, name: str = "kernel") -> bytes:
    """Assemble ``ptx`` for ``arch`` (``sm_90a``) into a cubin (a kernel that uses
    ``setmaxnreg`` by a whole-program ``ptxas`` when there is one: the module docstring)."""
    path = find_ptxas() if "setmaxnreg" in ptx else None
    if path is not None:
        return _ptxas(path, ptx, arch)
    return _nvjitlink(ptx, arch, name)


def _ptxas(path: str, ptx: str, arch: str) -> bytes:
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tilewise-") as tmp:
        src, out = os.path.join(tmp, "kernel.ptx"), os.path.join(tmp, "kernel.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        try:
            r = subprocess.run([path, f"-arch={arch}", "-O3", src, "-o", out],
                               capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as exc:
            raise CompileError(f"ptxas ({path}) could not run: {exc}",
                               hint="set TILEWISE_PTXAS to a working ptxas, or to 'none' to "
                                    "assemble with nvJitLink") from exc
        if r.returncode != 0:
            user = _user_limit(r.stderr)
            if user is not None:
                raise CompileError(user[0], hint=user[1])
            raise CompileError(f"ptxas ({path}) could not assemble the PTX for {arch}:\n"
                               f"{r.stderr.strip()}",
                               hint="inspect k.source('ptx'); a ptxas older than the PTX "
                                    "version needs TILEWISE_PTXAS pointed at a newer one")
        with open(out, "rb") as f:
            return f.read()


def _nvjitlink(ptx: str, arch: str, name: str) -> bytes:
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
