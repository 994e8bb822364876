"""``tw.compile``: the pipeline driver.

``compile(func, target, **options)`` lowers the kernel at once (dispatch and target errors
surface here, at the user's line) and returns a :class:`Kernel` whose later stages are
lazy: LLVM IR, PTX and the cubin are built when first asked for (``k.source("ptx")``,
``k.cubin``, or the first launch) and kept in the on-disk cache
(:mod:`tilewise.codegen.cache`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os

from .errors import CompileError, TargetError

STAGES = ("ir", "lowered", "llvm", "ptx")


def _lower(func, target):
    """The pipeline's result for ``target``; its target errors are compile errors."""
    from .pipeline import lower

    try:
        return lower(func, target)
    except TargetError as e:
        raise CompileError(e.message, e.span, e.hint) from e


@functools.lru_cache(maxsize=1)
def _source_fingerprint() -> str:
    """Changes whenever a tilewise source file changes (sizes and mtimes)."""
    root = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for folder, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                h.update(f"{folder}/{name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()


def cache_key(kernel_ir: str, target, options: dict) -> str:
    """The PTX cache key: printed kernel IR, target, options, tilewise version and sources,
    llvmlite/LLVM version. (The cubin key adds the nvJitLink version.)"""
    from ._version import __version__
    from .codegen.machine import llvm_version

    parts = [kernel_ir, str(target), repr(sorted(options.items())), __version__,
             _source_fingerprint(), llvm_version()]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


class Kernel:
    """A compiled kernel: ``k.source(stage)``, ``k.cubin``, ``k.dispatch_log``, ``k.target``,
    ``k.launch_config``; ``k(*arrays, stream=None)`` launches it on the GPU. ``k.lowered`` is
    the pipeline's :class:`~tilewise.pipeline.Lowered` (flat IR, target, features)."""

    def __init__(self, func, options: dict, lowered):
        self.func, self.options, self.lowered = func, options, lowered
        self.ptx_version = lowered.target.ptx_version_for(sorted(lowered.features))
        self._llvm = self._ptx = self._cubin = self._meta = self._key = None
        self._launcher = None

    @property
    def key(self) -> str:
        """The PTX cache key (:func:`cache_key`), made when PTX is first asked for: it
        names the LLVM version, and loading LLVM waits until LLVM is needed."""
        if self._key is None:
            self._key = cache_key(self.func.script(), self.target, self.options)
        return self._key

    @property
    def target(self):
        """The :class:`~tilewise.target.Target` the kernel was lowered for."""
        return self.lowered.target

    @property
    def dispatch_log(self) -> list:
        return self.lowered.dispatch_log

    @property
    def launch_config(self):
        """Grid (CTAs in x, y, z) and threads per CTA."""
        return self.lowered.func.launch_config

    @property
    def params(self):
        """The kernel's global buffers in parameter order."""
        by_param = {id(p): b for p, b in self.func.buffer_map}
        return [by_param.get(id(p)) for p in self.func.params]

    @property
    def name(self) -> str:
        """The kernel's PTX entry name (sanitised)."""
        return self._metadata()["name"]

    @property
    def dynamic_smem(self) -> int:
        """Bytes of dynamic shared memory the launch must provide."""
        return self._metadata()["dynamic_smem"]

    def source(self, stage: str = "ptx") -> str:
        """The kernel at ``stage``: ``"ir"`` (as written), ``"lowered"`` (flat IR after
        dispatch), ``"llvm"`` (LLVM IR before optimisation) or ``"ptx"``."""
        if stage == "ir":
            return self.func.script()
        if stage == "lowered":
            return self.lowered.func.script()
        if stage == "llvm":
            return self._llvm_ir()
        if stage == "ptx":
            return self.ptx
        raise CompileError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)} (and the "
                           f"bytes in k.cubin)")

    def _llvm_ir(self) -> str:
        if self._llvm is None:
            from .codegen import generate

            em = generate(self.lowered.func, self.options)
            self._llvm = str(em.module)
            self._meta = {"name": em.name, "dynamic_smem": em.dynamic_smem,
                          "static_smem": em.static_smem, "libdevice": sorted(em.libdevice)}
        return self._llvm

    def _metadata(self) -> dict:
        if self._meta is None:
            self.ptx  # noqa: B018 - fills _meta from the cache or the build
        return self._meta

    @property
    def ptx(self) -> str:
        """The PTX text (built on first use, then cached in memory and on disk)."""
        if self._ptx is None:
            from .codegen import cache

            hit = cache.load(self.key, "ptx")
            entry = _decode(hit) if hit is not None else None
            if entry is None:
                entry = self._build_ptx()
                cache.store(self.key, "ptx", json.dumps(entry).encode())
            self._ptx, self._meta = entry["ptx"], entry["meta"]
        return self._ptx

    def _build_ptx(self) -> dict:
        from .codegen.backend import emit_ptx
        from .target import ptx_feature

        text = self._llvm_ir()
        ptx = emit_ptx(text, self._meta["name"], self.target.llvm_cpu,
                       ptx_feature(self.ptx_version), set(self._meta["libdevice"]))
        _dump(self, "ptx", ptx)
        return {"ptx": ptx, "meta": self._meta}

    @property
    def cubin(self) -> bytes:
        """The cubin for the kernel's target, assembled by nvJitLink (by ptxas when it uses
        setmaxnreg and one is found: codegen/cubin.py), cached."""
        if self._cubin is None:
            from .codegen import cache
            from .codegen.cubin import assembler, link_cubin

            key = hashlib.sha256((self.key + assembler(self.ptx)).encode()).hexdigest()
            data = cache.load(key, "cubin")
            if data is None:
                data = link_cubin(self.ptx, self.target.llvm_cpu, self.name)
                cache.store(key, "cubin", data)
            self._cubin = data
        return self._cubin

    def __call__(self, *arrays, stream=None):
        """Launch on the GPU with torch / CuPy / ``__cuda_array_interface__`` / DLPack arrays,
        checked against the kernel's buffers first (:class:`LaunchError`)."""
        if self._launcher is None:
            from .runtime.launch import Launcher

            self._launcher = Launcher(self)
        return self._launcher(arrays, stream)

    def __repr__(self) -> str:
        return f"<tilewise.Kernel {self.func.name} for {self.target}>"


def _decode(blob: bytes) -> dict | None:
    try:
        entry = json.loads(blob)
        if isinstance(entry.get("ptx"), str) and {"name", "dynamic_smem"} <= set(entry["meta"]):
            return entry
    except (ValueError, TypeError, AttributeError, KeyError):
        pass
    return None


def _dump(kernel: Kernel, stage: str, text: str) -> None:
    from .knobs import knobs

    if knobs.dump_dir:
        try:
            os.makedirs(knobs.dump_dir, exist_ok=True)
            with open(os.path.join(knobs.dump_dir, f"{kernel.func.name}.{stage}"), "w") as f:
                f.write(text)
        except OSError as e:
            raise CompileError(f"cannot write the {stage} dump to TILEWISE_DUMP_DIR="
                               f"{knobs.dump_dir}: {e.strerror or e}",
                               hint="point TILEWISE_DUMP_DIR at a writable folder, or unset "
                               "it") from None


def compile(func, target="sm_90a", **options) -> Kernel:  # noqa: A001 - the public name
    """Compile ``func`` (a ``@T.prim_func``) for ``target`` (``"sm_90a"`` or a Target; None
    means the default, sm_90a, as in :func:`tilewise.simulate`).

    Options: ``maxntid``, ``minctasm``, ``maxnreg``, ``cluster_dim`` (the ``nvvm.*`` kernel
    attributes), ``nonportable_cluster`` (clusters of up to 16 CTAs) and ``ftz`` (flush
    denormals in libdevice math). Raises ScriptError,
    DispatchError or CompileError at the user's line."""
    from .codegen import check_options
    from .codegen.check import check_launch, declared_cluster
    from .ir.stmt import PrimFunc

    if not isinstance(func, PrimFunc):
        raise CompileError(f"tw.compile needs a @T.prim_func kernel, got {type(func).__name__}",
                           hint="decorate the kernel function with @T.prim_func")
    lowered = _lower(func, "sm_90a" if target is None else target)
    options = declared_cluster(check_options(options, lowered.target), lowered.func)
    check_launch(options, lowered.func)
    return Kernel(func, options, lowered)
